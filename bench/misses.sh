#!/usr/bin/env bash
# Cache misses per command on random keys, simulated by callgrind inside
# redis-server (a 2 MiB last-level cache, like this machine's L2; no
# prefetcher is simulated): instructions, data reads and data read misses
# (first level and last level) per call, for each module given, on the
# same command. The keys are created and warmed up first (-r KEYS, WARM
# calls), then CALLS calls are counted. Counts are repeatable: they do not
# depend on the machine's load.
#
#   bench/misses.sh 'RL.SLIDE b:s:__rand_int__ 10000 10000000' before.so after.so
#
# KEYS (100000), WARM (400000) and CALLS (50000) may be set in the
# environment; TOP=N also lists the N functions that miss most in the last
# level (callgrind_annotate). The floor module (bench/floor.rs) is loaded beside each,
# so FLOOR.KEEP can be counted too. Needs valgrind, redis-server and
# redis-benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,16p' "$0"; exit 2; }
CMD=$1
shift
KEYS=${KEYS:-100000}
WARM=${WARM:-400000}
CALLS=${CALLS:-50000}
cargo build --release --example floor --quiet
FLOOR=$PWD/target/release/examples/libfloor.so
printf '%-40s %10s %10s %10s %10s\n' module instr/call reads/call D1miss/call LLmiss/call
for so in "$@"; do
  so=$(realpath "$so")
  OUT=$(mktemp -d)
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --cache-sim=yes --LL=2097152,16,64 --callgrind-out-file="$OUT/cg.%p" \
      redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
      --loadmodule "$so" --loadmodule "$FLOOR" >"$OUT/server.log" 2>&1 &
  VG=$!
  for _ in $(seq 150); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.2; done
  # shellcheck disable=SC2086
  redis-benchmark -p "$PORT" -c 10 -P 16 -r "$KEYS" -n "$WARM" -q $CMD >/dev/null
  callgrind_control -z "$VG" >/dev/null
  # shellcheck disable=SC2086
  redis-benchmark -p "$PORT" -c 10 -P 16 -r "$KEYS" -n "$CALLS" -q $CMD >/dev/null
  callgrind_control -d counted "$VG" >/dev/null
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  wait "$VG" 2>/dev/null || true
  f=$(grep -l 'Trigger: dump counted$' "$OUT"/cg.* | head -1)
  # summary: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
  awk -v n="$CALLS" -v so="$(basename "$so")" '/^events:/ {for (i = 2; i <= NF; i++) ev[$i] = i}
      /^summary:/ {printf "%-40s %10.0f %10.0f %10.2f %10.2f\n", so, $ev["Ir"] / n, $ev["Dr"] / n,
                   $ev["D1mr"] / n, $ev["DLmr"] / n}' "$f"
  if [ "${TOP:-0}" -gt 0 ]; then
    # The functions that miss most, every function listed; the frames that
    # hold the whole run (main and what calls it: all the instructions,
    # 100 %) left out.
    callgrind_annotate --show=DLmr,D1mr,Ir --sort=DLmr --auto=no --threshold=100 "$f" 2>/dev/null \
      | grep -E '^ *[0-9,]+ +\(' | grep -v '(100.0%)  ' | sed -n "1,${TOP}p"
  fi
  rm -rf "$OUT"
done
