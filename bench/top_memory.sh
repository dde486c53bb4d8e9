#!/usr/bin/env bash
# The memory RL.TOP's summary takes in a server, measured. On a fresh
# server with the summary off (CONFIG SET ratelimit.top-size 0), make KEYS
# distinct limiter keys of LEN bytes and refuse each once; read INFO's
# used_memory; set the size (128, then, on a second fresh server, 0 again
# as the control) and refuse each key once more (a refusal changes no
# key); read used_memory again. The summary is the first server's growth
# less the control's (what the calls themselves leave: client buffers),
# allocator rounding included: the module allocates through the server's
# allocator.
#
#   bench/top_memory.sh [KEYS [LEN]]   # defaults: 128 keys of 16 bytes
#   MODULE=path SERVER=redis-server bench/top_memory.sh 128 600
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${1:-128}
LEN=${2:-16}
MODULE=${MODULE:-$PWD/target/release/libredis_ratelimit.so}
SERVER=${SERVER:-redis-server}

# growth SIZE: used_memory's growth over the second round of refusals,
# with the summary's size set to SIZE before it; "growth held".
growth() {
  local port dir pid off on held
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  dir=$(mktemp -d)
  "$SERVER" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
    --loadmodule "$MODULE" >"$dir/log" 2>&1 &
  pid=$!
  for _ in $(seq 50); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
  used() { redis-cli -p "$port" INFO memory | tr -d '\r' | sed -n 's/^used_memory://p'; }
  # calls N: each key's call N times (the first one a day is allowed).
  calls() {
    python3 - "$KEYS" "$LEN" "$1" <<'PY' | redis-cli -p "$port" --pipe >/dev/null
import sys
keys, length, times = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for i in range(keys):
    key = ("rl:%d:" % i).ljust(length, "x")
    args = ["RL.THROTTLE", key, "0", "1", "86400"]
    cmd = "*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args)
    sys.stdout.write(cmd * times)
PY
    sleep 0.5
  }
  redis-cli -p "$port" CONFIG SET ratelimit.top-size 0 >/dev/null
  calls 2
  off=$(used)
  redis-cli -p "$port" CONFIG SET ratelimit.top-size "$1" >/dev/null
  calls 1
  on=$(used)
  held=$(redis-cli -p "$port" INFO ratelimit | tr -d '\r' | sed -n 's/^ratelimit_top_keys://p')
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
  echo "$((on - off)) $held"
}

read -r with held < <(growth 128)
read -r control _ < <(growth 0)
echo "server: $("$SERVER" --version | head -1)"
echo "keys: $KEYS of $LEN bytes; held: $held"
echo "used_memory growth: $with bytes with the summary, $control without (control)"
echo "summary: $((with - control)) bytes, $(( (with - control) / (held > 0 ? held : 1) )) per key"
