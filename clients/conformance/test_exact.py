"""RL.THROTTLE's arithmetic in the Lua scripts against exact integers.

The module's GCRA computes in units of 1/count ns, far beyond 2^53; the
scripts do it with their big integers. This runs RL.THROTTLE's decision
of the scripts inside the server on random cases over the whole range of
the parameters (burst to 10^12, count to 2^32 - 1, periods to ten years,
seconds and milliseconds, TATs stored under another count, quantities
past the capacity) and compares every reply and stored TAT with the
module's formulas (src/core/throttle.rs) in Python's integers.
RL_EXACT_CASES sets the number of cases (default 200,000), RL_EXACT_SEED
the seed."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import lua_test_variant, server

MAX_TOLERANCE_NS = 10 * 315_360_000 * 10**9


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def reference(
    now_us: int, st: tuple[int, int, int] | None, burst: int, count: int, period: int, unit: int, q: int
) -> str:
    cap, c = burst + 1, count
    period_ns = period * unit
    tol = cap * period_ns
    now_s = now_us * 1000 * c
    if st is None:
        tat_s = 0
    else:
        whole, frac, den = st
        tat_s = whole * c + (frac if den == c else ceil_div(frac * c, den))
    ttl_before = max(tat_s - now_s, 0)
    fits = q <= cap
    ttl_after = max(tat_s, now_s) + min(q, cap) * period_ns - now_s
    limited = not fits or ttl_after > tol
    ttl = ttl_before if limited else ttl_after
    remaining = min(max(tol - ttl, 0) // period_ns, cap)
    retry = -1
    if fits and limited:
        retry = ceil_div(ceil_div(ttl_after - tol, c), unit)
    reset = ceil_div(ceil_div(ttl, c), unit)
    stored = ""
    if not limited and q > 0:
        frac = ttl_after % c
        stored = f"G|{now_us * 1000 + ttl_after // c}" + (f"|{frac}|{c}" if frac else "")
    return f"{int(limited)} {cap} {remaining} {retry} {reset} {stored}".rstrip(" ")


def case(rng: random.Random) -> tuple[int, tuple[int, int, int] | None, int, int, int, int, int]:
    while True:
        burst = int(10 ** rng.uniform(0, 12)) if rng.random() < 0.9 else rng.choice([0, 10**12])
        count = int(10 ** rng.uniform(0, 9.63)) if rng.random() < 0.9 else rng.choice([1, 2**32 - 1])
        unit = rng.choice([10**9, 10**6])
        top = 315_360_000 * (10**9 // unit)
        period = int(10 ** rng.uniform(0, len(str(top)) - 1)) if rng.random() < 0.9 else rng.choice([1, top])
        period = max(1, min(period, top))
        if rng.random() < 0.4:
            # A count dividing the period in whole ns or µs (the scripts'
            # shorter units).
            count = rng.choice(
                [d for d in (1, 2, 3, 4, 5, 8, 10, 16, 100, 1000, 10**4, 10**6) if period * unit % d == 0]
            )
        if (burst + 1) * period * unit <= MAX_TOLERANCE_NS * count:
            break
    now_us = rng.randrange(1_700_000_000_000_000, 1_900_000_000_000_000)
    cap = burst + 1
    tol_ns = cap * period * unit // count
    st: tuple[int, int, int] | None = None
    if rng.random() < 0.85:
        den = count if rng.random() < 0.7 else rng.randrange(1, 2**32)
        ahead = rng.randrange(0, tol_ns + 2) if rng.random() < 0.8 else rng.randrange(0, 10**12)
        whole = now_us * 1000 + ahead - (rng.randrange(0, 10**9) if rng.random() < 0.2 else 0)
        frac = rng.randrange(0, den)
        if rng.random() < 0.4:
            # No fraction, and now and then whole µs: a TAT the shorter
            # units hold.
            frac = 0
            if rng.random() < 0.5:
                whole -= whole % 1000
        st = (max(whole, 0), frac, den)
    q = rng.choice([0, 1, 1, 2, cap, cap + 1, rng.randrange(0, 10**12 + 1), rng.randrange(0, cap + 2)])
    return now_us, st, burst, count, period, unit, q


def test_throttle_arithmetic_is_exact() -> None:
    total = int(os.environ.get("RL_EXACT_CASES", "200000"))
    seed = int(os.environ.get("RL_EXACT_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    # The test variant of the script (lib()'s names exported, the `lib`
    # entry), which the packages do not ship: built from clients/lua/src.
    source = (Path(__file__).resolve().parent / "exact_throttle.lua").read_bytes() + b"\n"
    source += lua_test_variant().encode()
    diffs: list[str] = []
    done = 0
    with server("redis-server", faked=False) as srv:
        run: Callable[..., Any] = srv.client.execute_command
        while done < total:
            cases = [case(rng) for _ in range(min(5000, total - done))]
            lines = []
            for now_us, st, burst, count, period, unit, q in cases:
                state = f"{st[0]} {st[1]} {st[2]}" if st else "- 0 1"
                lines.append(f"{now_us} {state} {burst} {count} {period} {unit} {q}")
            got = run("EVAL", source, 0, "", "\n".join(lines)).decode().split("\n")
            for c, line, g in zip(cases, lines, got, strict=True):
                want = reference(*c)
                if g.rstrip(" ") != want:
                    diffs.append(f"{line}: lua {g!r}, exact {want!r}")
            done += len(cases)
    print(f"RL.THROTTLE arithmetic: seed {seed}, {done} cases, {len(diffs)} differences")
    assert not diffs, f"seed {seed}: {len(diffs)} of {done} differ:\n" + "\n".join(diffs[:10])
