"""The report: Markdown tables on standard output, from the dictionary
aggregate.build_report returns."""

from __future__ import annotations

import os
import platform
import sys
import time

from .regimes import CHURN_DB, CLIENTS, MEMORY_LIMIT, MEMORY_WINDOW_S, RAND_KEYS, REGIMES, SLICES, THROUGHPUT_LIMIT
from .regimes import KEPT_LIMIT, KEPT_WINDOW_S, THROUGHPUT_WINDOW_S, median


def fmt_rps(x):
    return "-" if x is None else "{:,.0f}".format(x)


def fmt_ratio(x):
    return "-" if x is None else "%.2fx" % x


def fmt_num(x, digits=1):
    return "-" if x is None else "{:,.{d}f}".format(x, d=digits)


def markdown_table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)



def print_report(report: dict, run: dict) -> None:
    """Prints `report`; `run`: module, floor, cell, keys, unit_sizes,
    t_start. Sets report["total_seconds"]."""
    quick, reps, version = report["quick"], report["reps"], report["redis_version"]
    server_bin, reproduce = report["server_binary"], report["reproduce"]
    module, floor, cell, keys, t_start = run["module"], run["floor"], run["cell"], run["keys"], run["t_start"]
    unit_sizes = run["unit_sizes"]
    out_rows, allow_out, same_job = report["rows"], report["allow_vs_singles"], report["same_job"]
    per_unit, precision = report["memory_per_unit"], report["memory_precision"]
    slices60, scale_out = report["memory_slices60"], report["scaling"]
    kept_expired = {"expired": report["kept_state"]["expired_during_runs"], "calls": report["kept_state"]["calls"]}
    kept_bounds = {e["name"]: e["kept_state"] for e in out_rows if e["kept_state"] and "bound_calls_per_key" in e["kept_state"]}
    titles = {e["name"]: e["title"] for e in out_rows}

    # ---- Print.
    p = print
    p("# redis-ratelimit: side-by-side benchmark%s" % (" (QUICK smoke run: figures not meaningful)" if quick else ""))
    p()
    p("- date: %s" % report["date"])
    p(
        "- server: redis %s (%s), module %s, floor %s%s"
        % (version, server_bin, module, floor, ", redis-cell " + cell if cell else "")
    )
    p("- CPUs: %s (%s); the client (redis-benchmark) and the server share them" % (os.cpu_count(), platform.machine()))
    p("- reproduce, from the repository root: `%s`" % reproduce)
    p(
        "- %d repetitions, rows interleaved; medians; ratio = row / INCR in the same repetition, "
        "median of the ratios (the figures that count on a shared machine; the range over the repetitions "
        "follows in parentheses); %d clients" % (reps, CLIENTS)
    )
    p()
    p(
        "## Throughput: requests per second, ratio to INCR and to the floor\n\n"
        "The floor is FLOOR.THROTTLE (examples/floor.rs): RL.THROTTLE's arguments and reply, opens its key, "
        "decides nothing. Hot key: `b:<row>:hot`, every limiter **%s units per %d s, quantity 1**, so "
        "practically every call is allowed and takes its full write path. "
        "100k keys, kept state: `b:<row>:__rand_int__` with `-r %s`, every limiter **%s units per %s s**, "
        "each key created before the calibration and keeping its state between its calls (as INCR's counters "
        "do), every call allowed (at most %s calls on a key, bound computed from the request counts; "
        "checked after the repetitions: every key there, every key with units left). "
        "100k keys, state emptied between calls: the hot-key limit on the same key names in database %d, "
        "emptied before and after each run; a GCRA key is empty 1 us after a call and expires before the "
        "key's next call, so a call may delete an expired key and create a new one; expired/call = keys "
        "expired during the run (INFO stats expired_keys) / calls, median over the repetitions. "
        "Memory column: **limit %d per %d s**, %s keys `rl:<12 digits>`, (used_memory delta) / keys, expiry "
        "entries included where the row sets one."
        % (
            "{:,}".format(THROUGHPUT_LIMIT),
            THROUGHPUT_WINDOW_S,
            RAND_KEYS,
            "{:,}".format(KEPT_LIMIT),
            "{:,}".format(KEPT_WINDOW_S),
            "{:,.0f}".format(max([v["bound_calls_per_key"] for v in kept_bounds.values()] or [0])),
            CHURN_DB,
            MEMORY_LIMIT,
            MEMORY_WINDOW_S,
            "{:,}".format(keys),
        )
    )
    p()
    header = ["command"]
    for _, title, _, kind in REGIMES:
        header += [title + " req/s", "x INCR", "x floor"]
        if kind == "churn":
            header.append("expired/call")
    header += ["server us/cmd (hot, -P 16)", "bytes/key"]
    body = []
    for e in out_rows:
        cells = [e["title"]]
        for rg_id, _, _, kind in REGIMES:
            t = e["throughput"][rg_id]
            mark = " (%d errors!)" % t["errors"] if t["errors"] else ""
            ratio = fmt_ratio(t["ratio_to_incr_median"])
            if len(t["ratios"]) > 1 and e["name"] != "INCR":
                ratio += " (%.2f-%.2f)" % (min(t["ratios"]), max(t["ratios"]))
            cells += [fmt_rps(t["rps_median"]) + mark, ratio, fmt_ratio(t["ratio_to_floor_median"])]
            if kind == "churn":
                cells.append(fmt_num(t["expired_per_call_median"], 3))
        cells.append(fmt_num(e["throughput"]["hot_P16"]["server_cpu_us_per_cmd_median"], 2))
        bpk = e["bytes_per_key"]
        m = e["memory"]
        note = ""
        if m and m["dbsize"] != m["keys"]:
            note = " (DBSIZE %d!)" % m["dbsize"]
        cells.append(fmt_num(bpk) + note if bpk is not None else "n/a")
        body.append(cells)
    p(markdown_table(header, body))
    p()
    p(
        "Kept state: %s keys expired during the %s calls of the kept-state runs (keys other steps left: "
        "hot keys, limit checks), against about one a call for a GCRA row in the churn regime."
        % ("{:,}".format(kept_expired["expired"]), "{:,}".format(kept_expired["calls"]))
    )
    p()
    p("Commands (KEY as above; hot key and state emptied / kept state):")
    p()
    for e in out_rows:
        check = "" if e["limit_check"] in ("ok", "n/a") else "  **limit check FAILED: %s**" % e["limit_check"]
        if e["kept_check"] not in ("ok", "n/a"):
            check += "  **kept-state check FAILED: %s**" % e["kept_check"]
        kept = e["kept_state"] or {}
        if "max_used" in kept:
            check += " (kept state: at most %s of %s units used on a key)" % (
                "{:,}".format(kept["max_used"]),
                "{:,}".format(kept["limit"]),
            )
        p("- %s: `%s` / `%s`%s" % (e["title"], e["command"], e["command_kept"], check))
    p()
    rs = allow_out["ratios"]
    p(
        "## RL.ALLOW of three limits against three single calls\n\n"
        "Server CPU per call, hot keys, -P 16: RL.ALLOW deciding THROTTLE + SLIDE + SLICE on three keys, "
        "divided by the sum of the three single commands' CPU per call, same repetition (median; range). "
        "Below 1, one RL.ALLOW is cheaper than the three calls it replaces. Next to it, FLOOR.ALLOW "
        "(examples/floor.rs: RL.ALLOW's arguments and reply, its three keys kept with an expiry, nothing "
        "decided), and the least any RL.ALLOW of these limits can cost: FLOOR.ALLOW plus what each single "
        "command costs beyond FLOOR.KEEP (parsing its numbers, deciding, recording), all of which RL.ALLOW "
        "does for each of its limits."
    )
    p()
    def ratio_cell(ratios):
        if not ratios:
            return "-"
        return fmt_ratio(median(ratios)) + (" (%.2f-%.2f)" % (min(ratios), max(ratios)) if len(ratios) > 1 else "")

    p(
        markdown_table(
            ["command", "us/call", "x the three singles"],
            [
                ["sum of RL.THROTTLE, RL.SLIDE, RL.SLICE", fmt_num(median(allow_out["singles_cpu_us_sum"]), 2), "1"],
                ["RL.ALLOW", fmt_num(median(allow_out["allow_cpu_us_per_call"]), 2), ratio_cell(rs)],
                [
                    "FLOOR.ALLOW (the interface, deciding nothing)",
                    fmt_num(median(allow_out["floor_allow_cpu_us_per_call"]), 2),
                    ratio_cell(allow_out["floor_allow_ratios"]),
                ],
                [
                    "least possible: FLOOR.ALLOW + each single's cost beyond FLOOR.KEEP",
                    fmt_num(median(allow_out["bound_cpu_us_per_call"]), 2),
                    ratio_cell(allow_out["bound_ratios"]),
                ],
            ],
        )
    )
    p()
    p(
        "## Memory per recorded unit: exact sliding logs\n\n"
        "One key, limit %s per 3,600 s, filled with N admitted units (one call per unit); "
        "MEMORY USAGE key SAMPLES 0 / N. Marginal = usage difference / unit difference."
        % "{:,}".format(per_unit["limit"])
    )
    p()
    header = ["command"] + ["%s units: bytes/unit" % "{:,}".format(n) for n in unit_sizes] + ["marginal bytes/unit"]
    body = []
    for name in ("RL.SLIDE", "lua:zset_log"):
        cells = [titles[name]]
        for n in unit_sizes:
            d = per_unit["sizes"][str(n)][name]
            cells.append("%s (%s B, %s units)" % (fmt_num(d["bytes_per_unit"], 2), "{:,}".format(d["memory_usage"] or 0), "{:,}".format(d["units"])))
        cells.append(fmt_num(per_unit.get("marginal_bytes_per_unit", {}).get(name), 2))
        body.append(cells)
    p(markdown_table(header, body))
    p()
    p(
        "## Memory with PRECISION: entries drawn by the traffic\n\n"
        "RL.SLIDE, limit %s per 3,600 s. With PRECISION 36 s (1%%), units arriving less than 36 s after an "
        "entry's first unit join it; without the option a call is an entry (calls in one microsecond share one). MEMORY USAGE key SAMPLES 0; "
        "entries from RL.INSPECT. The last row is the issue's \"100,000 units over a minute\" scaled down 100 "
        "times (window 36,000 ms, PRECISION 360 ms, %d calls of 1,000 units every 6 ms, %.0f ms in all)."
        % ("{:,}".format(precision["limit"]), precision["scaled_minute"]["calls"], precision["scaled_minute"]["span_ms"])
    )
    p()
    minute = precision["scaled_minute"]
    p(
        markdown_table(
            ["key", "units", "entries", "MEMORY USAGE (bytes)"],
            [
                ["PRECISION 36, %s calls pipelined" % "{:,}".format(precision["units"]), precision["p:prec"]["admitted"], precision["p:prec"]["entries"], "{:,}".format(precision["p:prec"]["memory_usage"] or 0)],
                ["no PRECISION, the same calls", precision["p:exact"]["admitted"], precision["p:exact"]["entries"], "{:,}".format(precision["p:exact"]["memory_usage"] or 0)],
                ["PRECISION 1%, traffic over the window's sixtieth (scaled)", minute["units"], minute["entries"], "{:,}".format(minute["memory_usage"] or 0)],
            ],
        )
    )
    p()
    p(
        "## Memory per key at 60 slices\n\n"
        "Limit 1,000,000 per %d ms in %d slices (%d ms each); both keys called every ~4 ms for %.1f s "
        "(%d calls each), so every slice of the window holds units; MEMORY USAGE key SAMPLES 0."
        % (slices60["window_ms"], SLICES, slices60["window_ms"] // SLICES, (slices60["window_ms"] + 100) / 1000, slices60["calls_each"])
    )
    p()
    p(
        markdown_table(
            ["command", "bytes per key", "bytes per slice"],
            [
                [titles["RL.SLICE"], slices60["RL.SLICE"]["memory_usage"], fmt_num(slices60["RL.SLICE"]["memory_usage"] / SLICES)],
                [
                    titles["lua:hash_slices"] + " (%d fields)" % slices60["lua:hash_slices"]["fields"],
                    slices60["lua:hash_slices"]["memory_usage"],
                    fmt_num(slices60["lua:hash_slices"]["memory_usage"] / SLICES),
                ],
            ],
        )
    )
    p()
    p(
        "## Scaling (hot key, -P 16)\n\n"
        "RL.SLIDE: limit L per 3,600 s, log pre-filled with L units, then quantity 1 (every call limited, log stays full). "
        "RL.SLICE: limit 1,000,000,000 per 1 s in S slices, every call allowed, slices rolling over."
    )
    p()
    body = []
    for family in ("RL.SLIDE", "RL.SLICE"):
        s = scale_out[family]
        for lv, d in s["levels"].items():
            setup = d["setup"]
            extra = ""
            if family == "RL.SLIDE":
                extra = " (pre-filled %s, remaining %s)" % ("{:,}".format(setup["prefilled"]), setup["remaining_after_fill"])
            body.append(
                [
                    "`%s`%s" % (" ".join(setup["cmd"]), extra),
                    fmt_rps(d["rps_median"]),
                    fmt_num(d["server_cpu_us_per_cmd_median"], 2),
                    "",
                ]
            )
        rs = s["largest_over_smallest_ratios"]
        body[-1][3] = "largest/smallest: %s%s" % (
            fmt_ratio(s["largest_over_smallest_median"]),
            " (%.2f-%.2f)" % (min(rs), max(rs)) if len(rs) > 1 else "",
        )
    p(markdown_table(["command", "req/s", "server us/cmd", "ratio"], body))
    p()
    p(
        "## The module against the Lua script doing the same job\n\n"
        "Throughput of the command / throughput of the script, in the same repetition and regime "
        "(median; range over the repetitions in parentheses). Above 1 the module is faster."
    )
    p()
    body = []
    for pair in same_job:
        cells = [pair["command"], titles[pair["script"]]]
        for rg_id, _, _, _ in REGIMES:
            rs = pair["ratios"][rg_id]
            cell = fmt_ratio(pair["ratio_median"][rg_id])
            if len(rs) > 1:
                cell += " (%.2f-%.2f)" % (min(rs), max(rs))
            cells.append(cell)
        body.append(cells)
    p(markdown_table(["command", "script"] + [title for _, title, _, _ in REGIMES], body))
    p()
    total = time.monotonic() - t_start
    report["total_seconds"] = total
    p("Total time: %.0f s (%.1f min)" % (total, total / 60))
    sys.stdout.flush()
