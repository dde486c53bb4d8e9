#!/usr/bin/env bash
# Instructions per command, counted by callgrind inside redis-server: the
# floor module (FLOOR.THROTTLE: RL.THROTTLE's interface, deciding nothing;
# FLOOR.KEEP: the same, keeping state with an expiry; FLOOR.ALLOW: RL.ALLOW's
# interface keeping state on three keys), INCR and every RL command, each on
# one hot key at -P 16. "x keep" compares a command with the FLOOR row of
# its interface that keeps state: what remains is the module's own work.
# Counts are repeatable (they do not depend on the machine's load), so they
# show where the cost of a command goes and whether a change moved it.
#
#   scripts/profile.sh            # builds the release module and the floor
#   scripts/profile.sh --top N    # also the N costliest functions per command
#   MODULE=path/to.so scripts/profile.sh   # count that build (e.g. one copied
#                                 # aside before a change), build nothing of it
#
# Needs valgrind, redis-server and redis-benchmark (scripts/deps.sh --test
# installs the last two; valgrind: apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=0
[ "${1:-}" = "--top" ] && TOP=${2:-15}
N=20000
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 1; }
if [ -z "${MODULE:-}" ]; then
  CARGO_PROFILE_RELEASE_DEBUG=${PROFILE_DEBUG:-0} cargo build --release --quiet
  MODULE=$PWD/target/release/libredis_ratelimit.so
fi
MODULE=$(realpath "$MODULE")
cargo build --release --example floor --quiet
FLOOR=$PWD/target/release/examples/libfloor.so
OUT=$(mktemp -d)
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.%p" \
    redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
    --loadmodule "$MODULE" --loadmodule "$FLOOR" >"$OUT/server.log" 2>&1 &
# callgrind_control talks to every callgrind process on the machine unless
# given one: name ours, so that other runs' counters are left alone.
VG=$!
for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.2; done
bench() { redis-benchmark -p "$PORT" -c 10 -n "$1" -P 16 -q "${@:2}" >/dev/null; }
declare -A CMD=(
  [floor]="FLOOR.THROTTLE b:f 999999 1000000 1"
  [keep]="FLOOR.KEEP b:k 999999 1000000 1"
  [keep3]="FLOOR.ALLOW 3 {f}:t {f}:l {f}:s THROTTLE 999999 1000000 1 SLIDE 1000000 1 SLICE 1000000 1 60"
  [incr]="INCR b:i"
  [throttle]="RL.THROTTLE b:t 999999 1000000 1"
  [slide]="RL.SLIDE b:l 1000000 1"
  [slice]="RL.SLICE b:s 1000000 1 60"
  [allow]="RL.ALLOW 3 {b}:t {b}:l {b}:s THROTTLE 999999 1000000 1 SLIDE 1000000 1 SLICE 1000000 1 60"
  [peek]="RL.PEEK 3 {b}:t {b}:l {b}:s THROTTLE 999999 1000000 1 SLIDE 1000000 1 SLICE 1000000 1 60"
)
ORDER="floor keep keep3 incr throttle slide slice allow peek"
for name in $ORDER; do bench 2000 ${CMD[$name]}; done   # warm up: keys exist
callgrind_control -z "$VG" >/dev/null
for name in $ORDER; do
  bench $N ${CMD[$name]}
  callgrind_control -d "$name" "$VG" >/dev/null
done
PID=$(ls "$OUT" | sed -n 's/^cg\.\([0-9]*\)$/\1/p' | head -1)
floor=0
keep=0
keep3=0
printf '%-10s %12s %10s %10s\n' command instr/cmd "x floor" "x keep"
for name in $ORDER; do
  f=$(grep -l "Trigger: dump $name\$" "$OUT"/cg."$PID".* | head -1)
  per=$(awk '/^summary:/ {printf "%d", $2 / '"$N"'}' "$f")
  [ "$name" = floor ] && floor=$per
  [ "$name" = keep ] && keep=$per
  [ "$name" = keep3 ] && keep3=$per
  # A single command against FLOOR.KEEP; RL.ALLOW and RL.PEEK (three
  # keys) against FLOOR.ALLOW.
  ref=$keep
  case $name in allow|peek) ref=$keep3;; esac
  vs_keep=-
  [ "$ref" -gt 0 ] && case $name in floor|keep|keep3) ;; *) vs_keep=$(awk "BEGIN {printf \"%.2f\", $ref / $per}");; esac
  printf '%-10s %12s %10s %10s\n' "$name" "$per" "$(awk "BEGIN {printf \"%.2f\", $floor / $per}")" "$vs_keep"
  if [ "$TOP" -gt 0 ]; then
    callgrind_annotate --threshold=100 "$f" 2>/dev/null | sed -n '/file:function/,$p' \
      | sed -n "7,$((6 + TOP))p" | N=$N python3 -c '
import os, re, sys
n = int(os.environ["N"])
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)", line)
    if m:
        print("    %8d  %s" % (int(m.group(1).replace(",", "")) // n, m.group(2)[:110]))
'
  fi
done
