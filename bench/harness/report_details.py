"""The report's details, after the main table and the targets: RL.ALLOW
against the three single calls, memory per recorded unit, with PRECISION
and at 60 slices, scaling, each command against its Lua script."""

from __future__ import annotations

from .regimes import REGIMES, SLICES, median
from .report_fmt import fmt_num, fmt_ratio, fmt_rps, markdown_table


def print_details(report: dict, run: dict, p=print) -> None:
    unit_sizes = run["unit_sizes"]
    allow_out, same_job = report["allow_vs_singles"], report["same_job"]
    per_unit, precision = report["memory_per_unit"], report["memory_precision"]
    slices60, scale_out = report["memory_slices60"], report["scaling"]
    titles = {e["name"]: e["title"] for e in report["rows"]}
    rs = allow_out["ratios"]
    p(
        "### RL.ALLOW of three limits against three single calls\n\n"
        "Server CPU per call, hot keys, -P 16: RL.ALLOW deciding THROTTLE + SLIDE + SLICE on three keys, "
        "divided by the sum of the three single commands' CPU per call, same repetition (median; range). "
        "Below 1, one RL.ALLOW is cheaper than the three calls it replaces. Next to it, FLOOR.ALLOW "
        "(bench/floor.rs: RL.ALLOW's arguments and reply, its three keys kept with an expiry, nothing "
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
        "### Memory per recorded unit: exact sliding logs\n\n"
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
        "### Memory with PRECISION: entries drawn by the traffic\n\n"
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
        "### Memory per key at 60 slices\n\n"
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
        "### Scaling (hot key, -P 16)\n\n"
        "RL.SLIDE: limit L per 3,600 s, log pre-filled with L units, then quantity 1 (every call limited, log stays full). "
        "RL.SLICE: limit 1,000,000,000 per 1 s in S slices, every call allowed, slices rolling over. "
        "RL.ALLOW: K limits, each RL.THROTTLE's of the hot-key regimes on a key of its own, every call allowed; "
        "its figures per key (req/s x K, CPU / K). Ratio: largest setting / smallest, per repetition, median: "
        "throughput, and cost (server CPU per call, the figure the scale targets judge)."
    )
    p()
    body = []
    for family in ("RL.SLIDE", "RL.SLICE", "RL.ALLOW"):
        s = scale_out[family]
        for lv, d in s["levels"].items():
            setup = d["setup"]
            extra = ""
            if family == "RL.SLIDE":
                extra = " (pre-filled %s, remaining %s)" % ("{:,}".format(setup["prefilled"]), setup["remaining_after_fill"])
            k = setup["keys"]
            body.append(
                [
                    "`%s`%s" % (scale_display(setup["cmd"]), extra),
                    fmt_rps(d["rps_median"] * k if d["rps_median"] else None),
                    fmt_num(d["server_cpu_us_per_cmd_median"] / k if d["server_cpu_us_per_cmd_median"] else None, 2),
                    "",
                ]
            )
        rs, cs = s["largest_over_smallest_ratios"], s["cost_largest_over_smallest_ratios"]
        body[-1][3] = "largest/smallest: throughput %s%s, cost %s%s" % (
            fmt_ratio(s["largest_over_smallest_median"]),
            " (%.2f-%.2f)" % (min(rs), max(rs)) if len(rs) > 1 else "",
            fmt_ratio(s["cost_largest_over_smallest_median"]),
            " (%.2f-%.2f)" % (min(cs), max(cs)) if len(cs) > 1 else "",
        )
    p(markdown_table(["command", "req/s (per key)", "server us/cmd (per key)", "ratio"], body))
    p()
    p(
        "### The module against the Lua script doing the same job\n\n"
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


def scale_display(cmd) -> str:
    """A scaling command line; RL.ALLOW's limits after the first as "..."."""
    if cmd[0] == "RL.ALLOW" and int(cmd[1]) > 2:
        k = int(cmd[1])
        keys, spec = cmd[2 : 2 + k], cmd[2 + k : 2 + k + 4]
        return " ".join(cmd[:2] + [keys[0], "...", keys[-1]] + spec + ["... (%d limits)" % k])
    return " ".join(cmd)
