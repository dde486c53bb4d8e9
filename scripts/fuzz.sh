#!/usr/bin/env bash
# Runs every fuzz target (fuzz/, cargo-fuzz with libFuzzer, nightly) for
# FUZZ_SECONDS each (default 60), at the lowest CPU priority, growing its
# corpus in fuzz/corpus/<target>/; a crash lands in fuzz/artifacts/<target>/
# (keep it in fuzz/regressions/<target>/ once fixed: make test replays both).
# Logs go to tmp/fuzz/<target>.log; the summary prints executions, coverage
# (cov: edges, ft: features) and findings per target.
#
#   scripts/fuzz.sh [target ...]     (make fuzz FUZZ_SECONDS=120)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
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
failed=0
printf '%-16s %12s %8s %8s %s\n' target executions cov ft findings
for t in "${targets[@]}"; do
    log=tmp/fuzz/$t.log
    mkdir -p "fuzz/corpus/$t"
    nice -n 19 cargo +nightly fuzz run -O --fuzz-dir fuzz "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
        >"$log" 2>&1
    status=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1)
    line=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' <<<"$line" | grep -o '[0-9]*')
    ft=$(grep -o 'ft: [0-9]*' <<<"$line" | grep -o '[0-9]*')
    finding=none
    if [ $status -ne 0 ]; then
        finding="CRASH (see $log and fuzz/artifacts/$t/)"
        failed=1
    fi
    printf '%-16s %12s %8s %8s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$finding"
done
exit $failed
