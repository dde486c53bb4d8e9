#!/usr/bin/env bash
# Instructions per command, counted by callgrind inside redis-server: the
# floor module (FLOOR.THROTTLE: RL.THROTTLE's interface, deciding nothing;
# FLOOR.KEEP: the same, keeping state with an expiry; FLOOR.ALLOW: RL.ALLOW's
# interface keeping state on three keys), INCR and every RL command, each on
# one hot key at -P 16, each followed by FLOOR.LIMIT with its own arguments
# (FLOOR.ALLOWLIMIT for RL.ALLOW: the interface reading, parsing, keeping a
# module value and propagating, deciding nothing). "x floor" is a count over
# FLOOR.THROTTLE's, "x keep" over the FLOOR row of its interface that keeps
# state (above 1: the command's own work), "x limit" over its FLOOR.LIMIT
# (above 1: its decision and glue), "in module" how many of the count run in
# the loaded modules' own code (the rest: the server's and the C library's;
# every command, INCR too, passes the module's command filter, which watches
# for CONFIG RESETSTAT). Two parts of the server's work are left out of
# every count and shown apart: "lookup", the lookup of the command's name
# (the command table is seeded at random when the server starts: a name in a
# shared bucket costs about 200 more), and "cron", the server's timer (its
# share of a call grows as valgrind's pace slows on a loaded machine).
# Counts do not depend on the machine's load (a single key's move by a few
# tenths of a percent between runs), so they show where the cost of a
# command goes and whether a change moved it. The
# counting is the benchmark's (bench/harness/instructions.py), which `make
# bench` runs too and reports next to the throughput; this script runs only
# that part.
#
#   bench/profile.sh            # builds the release module and the floor
#   bench/profile.sh --top N    # also the N costliest functions per command
#   MODULE=path bench/profile.sh  # counts that build of the module instead
#
# Needs valgrind, redis-server and redis-benchmark (scripts/deps.sh --test
# installs the last two; valgrind: apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=0
[ "${1:-}" = "--top" ] && TOP=${2:-15}
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 1; }
CARGO_PROFILE_RELEASE_DEBUG=${PROFILE_DEBUG:-0} cargo build --release --quiet
cargo build --release --example floor --quiet
exec python3 bench --no-build --module "${MODULE:-target/release/libredis_ratelimit.so}" --instructions-only --top "$TOP"
