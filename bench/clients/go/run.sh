#!/usr/bin/env bash
# The Go package's benchmark, side by side in one run (bench/README.md):
# each typed call against a raw go-redis Do (EvalSha on the Lua backend)
# of the same command line, and httplimit's requests per second beside a
# bare RL.ALLOW per request and no limiter. Needs the Go modules (make
# go-setup) and the module (target/release, or RL_MODULE).
#   bench/clients/go/run.sh [redis-server]
set -euo pipefail
cd "$(dirname "$0")/../../.."
server=${1:-redis-server}
module=${RL_MODULE:-$PWD/target/release/libredis_ratelimit.so}
mkdir -p tmp/go/bin
(cd bench/clients/go && go build -o "$PWD/../../../tmp/go/bin/client-bench" .)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
"$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --loadmodule "$module" >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.05; done
echo "== $("$server" --version | head -c 60), $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg)"
tmp/go/bin/client-bench -port "$port" -rounds "${ROUNDS:-100}" -calls "${CALLS:-1000}" \
    -http-rounds "${HTTP_ROUNDS:-6}" -seconds "${HTTP_SECONDS:-3}" -clients "${CLIENTS:-8}"
