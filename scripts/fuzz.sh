#!/usr/bin/env bash
# Runs every fuzz target (fuzz/, cargo-fuzz with libFuzzer, nightly) for
# FUZZ_SECONDS each (default 60), at the lowest CPU priority, growing its
# corpus in fuzz/corpus/<target>/; a crash lands in fuzz/artifacts/<target>/
# (keep it in fuzz/regressions/<target>/ once fixed: make test replays both).
# Logs go to tmp/fuzz/<target>.log; the summary prints executions, coverage
# (cov: edges, ft: features), CPU seconds and findings per target.
#
#   scripts/fuzz.sh [target ...]     (make fuzz FUZZ_SECONDS=120)
#
# FUZZ_CPU=1 counts FUZZ_SECONDS as CPU time of the fuzzing process rather
# than wall-clock time (a run sharing the machine still gets its full
# budget): the target gets SIGINT once /proc says it has used that much,
# and libFuzzer stops with its final statistics. FUZZ_JOBS=N runs N
# targets at once (default 1).
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
cpu=${FUZZ_CPU:-0}
jobs=${FUZZ_JOBS:-1}
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz or the nightly toolchain is missing: run scripts/deps.sh --fuzz" >&2
    exit 1
fi
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cd fuzz && cargo +nightly fuzz list)
fi
mkdir -p tmp/fuzz
nice -n 19 cargo +nightly fuzz build -O --fuzz-dir fuzz || exit 1
triple=$(rustc +nightly -vV | sed -n 's/^host: //p')
bin_dir=fuzz/target/$triple/release

# CPU seconds (user + system) a process has used, from /proc/<pid>/stat.
cpu_seconds() {
    local stat rest
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    rest=${stat##*) }
    read -r -a f <<<"$rest"
    # After "pid (comm) ", field 14 (utime) and 15 (stime) are at 11 and 12.
    echo $(((f[11] + f[12]) / $(getconf CLK_TCK)))
}

# One target: writes its log and a one-line summary in tmp/fuzz/.
run_one() {
    local t=$1 log=tmp/fuzz/$1.log pid status used=0 limit=()
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    if [ "$cpu" = 0 ]; then
        limit=(-max_total_time="$seconds")
    fi
    nice -n 19 "$bin_dir/$t" -artifact_prefix="fuzz/artifacts/$t/" "${limit[@]}" \
        -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 "fuzz/corpus/$t" \
        >"$log" 2>&1 &
    pid=$!
    # The last reading before the process ends is its CPU time (to 5 s).
    while kill -0 "$pid" 2>/dev/null; do
        sleep 5
        used=$(cpu_seconds "$pid") || break
        if [ "$cpu" != 0 ] && [ "$used" -ge "$seconds" ]; then
            kill -INT "$pid"
            break
        fi
    done
    wait "$pid"
    status=$?
    local execs line cov ft finding=none
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1)
    line=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' <<<"$line" | grep -o '[0-9]*')
    ft=$(grep -o 'ft: [0-9]*' <<<"$line" | grep -o '[0-9]*')
    # libFuzzer exits 0 at its time limit, 72 after SIGINT (its -interrupted_exitcode).
    if [ $status -ne 0 ] && ! { [ "$cpu" != 0 ] && [ $status -eq 72 ]; }; then
        finding="CRASH (exit $status; see $log and fuzz/artifacts/$t/)"
    fi
    printf '%-16s %12s %8s %8s %10s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$used" "$finding" \
        >"tmp/fuzz/$t.summary"
}

running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
    run_one "$t" &
    running=$((running + 1))
done
wait
failed=0
printf '%-16s %12s %8s %8s %10s %s\n' target executions cov ft cpu_s findings
for t in "${targets[@]}"; do
    cat "tmp/fuzz/$t.summary"
    grep -q CRASH "tmp/fuzz/$t.summary" && failed=1
done
exit $failed
