"""The report on standard output, from the dictionary
aggregate.build_report returns: a header (machine, date, server, how to
reproduce), one table of every command (instructions and throughput
ratios), the targets with PASS / FAIL and the measured value, then the
details (report_details.py) and the workloads' sections."""

from __future__ import annotations

import sys
import time

from .regimes import (
    CHURN_DB,
    CLIENTS,
    KEPT_LIMIT,
    KEPT_WINDOW_S,
    MEMORY_LIMIT,
    MEMORY_WINDOW_S,
    REGIMES,
    THROUGHPUT_LIMIT,
    THROUGHPUT_WINDOW_S,
    median,
)
from .report_details import print_details
from .report_fmt import fmt_num, fmt_ratio, fmt_rps, markdown_table
from .instructions import limit_floor
from .workloads import WORKLOADS

# The instruction counts' reference: each command's interface keeping
# state (bench/floor.rs).
INSTR_FLOOR = {"RL.ALLOW": "FLOOR.ALLOW", "RL.PEEK": "FLOOR.ALLOW"}


def header_lines(report: dict, run: dict) -> list:
    m = report["machine_info"]
    cores = "%s cores" % m["cores"]
    if m["usable_cores"] and m["usable_cores"] != m["cores"]:
        cores += " (%s usable)" % m["usable_cores"]
    load = m["loadavg_at_start"]
    lines = [
        "- machine: %s, %s, %s; load average at the start %s; %s"
        % (
            m["cpu_model"],
            cores,
            m["arch"],
            " ".join("%.2f" % x for x in load) if load else "-",
            "the server pinned to one core and the client (redis-benchmark) to another (taskset)"
            if m.get("pinned")
            else "the client (redis-benchmark) and the server share the cores",
        ),
        "- date: %s" % report["date"],
        "- server: redis %s (%s), module %s, floor %s%s"
        % (
            report["redis_version"],
            report["server_binary"],
            run["module"],
            run["floor"],
            ", redis-cell " + run["cell"] if run["cell"] else "",
        ),
        "- reproduce, from the repository root: `%s`" % report["reproduce"],
        "- %d repetitions, rows interleaved, %d clients; every ratio is the median of the ratios of the "
        "repetitions (each row against the reference measured in the same repetition and regime)"
        % (report["reps"], CLIENTS),
    ]
    for name, why in report["skipped"].items():
        lines.append("- %s: not measured, %s" % (name, why))
    return lines


def print_report(report: dict, run: dict) -> None:
    """Prints `report`; `run`: module, floor, cell, keys, unit_sizes,
    t_start. Sets report["total_seconds"]."""
    p = print
    quick = report["quick"]
    p("# redis-ratelimit: benchmark%s" % (" (QUICK smoke run: figures not meaningful)" if quick else ""))
    p()
    for line in header_lines(report, run):
        p(line)
    p()
    if report["lua_only"]:
        print_lua_backend(report, p)
        p()
        print_table(report, run, p)
        p()
    else:
        print_table(report, run, p)
        p()
        print_lua_backend(report, p)
        p()
        print_targets(report, p)
        p()
        p("## Details")
        p()
        print_details(report, run, p)
    for name, w in report["workloads"].items():
        p("### %s" % w["title"])
        p()
        for line in run_workload_report(report, name):
            p(line)
        p()
    total = time.monotonic() - run["t_start"]
    report["total_seconds"] = total
    p("Total time: %.0f s (%.1f min)" % (total, total / 60))
    sys.stdout.flush()


def run_workload_report(report, name):
    w = next(w for w in WORKLOADS if w.name == name)
    return w.report(report["workloads"][name]["figures"])


def print_table(report: dict, run: dict, p) -> None:
    out_rows = report["rows"]
    kept_bounds = [(e["kept_state"] or {}).get("bound_calls_per_key") or 0 for e in out_rows]
    instr = report["instructions"]
    per_call = instr.get("per_call", {}) if instr.get("available") else {}
    p("## Every command")
    p()
    p(
        "Instructions: per call, counted by callgrind inside a server of its own on one hot key, "
        "`redis-benchmark -c 10 -P 16`, %s calls (bench/harness/instructions.py), and as a share of the same "
        "count for the command's interface keeping state and deciding nothing: FLOOR.KEEP (bench/floor.rs), "
        "for RL.ALLOW and RL.PEEK FLOOR.ALLOW (three keys); and as a share of the count of that interface "
        "reading, parsing and propagating the command's own arguments, deciding nothing: FLOOR.LIMIT (FLOOR.ALLOWLIMIT "
        "for RL.ALLOW), what no command with these arguments can go below. Two parts of the server's work are left "
        "out of every count: the lookup of the command's name%s (the command table is seeded at random when the "
        "server starts, and a name that drew a shared bucket costs about 200 instructions more) and the server's "
        "timer, serverCron (its share of a call grows as valgrind's pace slows on a loaded machine). Repeatable "
        "whatever the machine's load to a few tenths of a percent for a single key (how often an expiry moves "
        "depends on the pace of the calls under valgrind)%s."
        % (
            fmt_rps(instr.get("calls")),
            "" if instr.get("lookup_left_out", True) else " (**not here: this server runs it inlined, counted in**)",
            "" if per_call else " (**not counted here: %s**)" % instr.get("reason"),
        )
    )
    p()
    p(
        "Throughput, per regime: requests per second / FLOOR.KEEP's and / INCR's in the same repetition "
        "(the reference's own req/s in its cell). Hot key: `b:<row>:hot`, every limiter **%s units per %d s, "
        "quantity 1**, so practically every call is allowed and takes its full write path. "
        "100k keys, kept state: `b:<row>:__rand_int__` with `-r %s`, every limiter **%s units per %s s**, "
        "each row's keys in a database of their own, each key created before the calibration and keeping its "
        "state between its calls (as INCR's counters do), every call allowed (at most %s calls on a key, bound "
        "computed from the request counts; "
        "checked after the repetitions: every key there, every key with units left). "
        "100k keys, state emptied between calls: the hot-key limit on the same key names in database %d, "
        "emptied before and after each run; a GCRA key is empty 1 us after a call and expires before the "
        "key's next call, so a call may delete an expired key and create a new one; expired/call = keys "
        "expired during the run (INFO stats expired_keys) / calls. "
        "Kept state, -P 16, also the server's figures: CPU per call (INFO cpu) and the command's own time "
        "per call (INFO commandstats usec_per_call, without reading the request and writing the reply). "
        "bytes/key: **limit %d per %d s**, %s keys `rl:<12 digits>`, (used_memory delta) / keys, expiry "
        "entries included where the row sets one."
        % (
            "{:,}".format(THROUGHPUT_LIMIT),
            THROUGHPUT_WINDOW_S,
            run["rand_keys"],
            "{:,}".format(KEPT_LIMIT),
            "{:,}".format(KEPT_WINDOW_S),
            "{:,.0f}".format(max(kept_bounds or [0])),
            CHURN_DB,
            MEMORY_LIMIT,
            MEMORY_WINDOW_S,
            "{:,}".format(run["keys"]),
        )
    )
    p()
    header = ["command", "instructions/call", "x its floor's", "x FLOOR.LIMIT"]
    for _, title, _, kind in REGIMES:
        header += [title + ": x FLOOR.KEEP", "x INCR"]
        if kind == "churn":
            header.append("expired/call")
    header += ["kept, -P 16: server CPU us/call", "usec_per_call", "bytes/key"]
    body = []
    allow_out = report["allow_vs_singles"]
    for e in out_rows:
        if e["name"] == "RL.ALLOW" and "RL.LEASE" in per_call:
            title = "RL.LEASE, renewing one of 10 leases held (its throughput: the RL.LEASE section)"
            body.append(instructions_only_cells(title, "RL.LEASE", per_call))
        body.append(row_cells(e, per_call))
        if e["name"] == "FLOOR.KEEP":
            body.append(floor_allow_cells(allow_out, per_call))
        if e["name"] == "RL.ALLOW" and "RL.PEEK" in per_call:
            body.append(instructions_only_cells("RL.PEEK (RL.ALLOW's limits, peeked)", "RL.PEEK", per_call))
    p(markdown_table(header, body))
    p()
    kept = report["kept_state"]
    p(
        "Kept state: %s keys expired during the %s calls of the kept-state runs (keys other steps left: "
        "hot keys, limit checks), against about one a call for a GCRA row in the churn regime."
        % ("{:,}".format(kept["expired_during_runs"]), "{:,}".format(kept["calls"]))
    )
    p()
    p("Commands (KEY as above; hot key and state emptied / kept state):")
    p()
    for e in out_rows:
        check = "" if e["limit_check"] in ("ok", "n/a") else "  **limit check wrong: %s**" % e["limit_check"]
        if e["kept_check"] not in ("ok", "n/a"):
            check += "  **kept-state check wrong: %s**" % e["kept_check"]
        kept = e["kept_state"] or {}
        if "max_used" in kept:
            check += " (kept state: at most %s of %s units used on a key)" % (
                "{:,}".format(kept["max_used"]),
                "{:,}".format(kept["limit"]),
            )
        p("- %s: `%s` / `%s`%s" % (e["title"], e["command"], e["command_kept"], check))


def instr_cells(name, per_call):
    """Instructions per call, their ratio to the interface keeping state
    (FLOOR.KEEP or FLOOR.ALLOW) and to the interface deciding nothing
    with the command's own arguments (FLOOR.LIMIT or FLOOR.ALLOWLIMIT)."""
    count = per_call.get(name)
    floor = per_call.get(INSTR_FLOOR.get(name, "FLOOR.KEEP"))
    limit = per_call.get(limit_floor(name))
    if count is None:
        return ["-", "-", "-"]
    ratio = "-" if not floor or name.startswith("FLOOR.") else "%.3fx" % (count / floor)
    return [fmt_num(count, 0), ratio, "%.3fx" % (count / limit) if limit else "-"]


def row_cells(e, per_call) -> list:
    cells = [e["title"]] + instr_cells(e["name"], per_call)
    if e["name"] == "FLOOR.LIMIT":
        # Counted with RL.THROTTLE's arguments, which this row takes.
        counted = per_call.get(limit_floor("RL.THROTTLE"))
        keep = per_call.get("FLOOR.KEEP")
        if counted:
            cells[1:4] = [fmt_num(counted, 0), "%.3fx" % (counted / keep) if keep else "-", "-"]
    for rg_id, _, _, kind in REGIMES:
        t = e["throughput"][rg_id]
        mark = " (%d errors!)" % t["errors"] if t["errors"] else ""
        keep = fmt_ratio(t["ratio_to_keep_median"])
        incr = fmt_ratio(t["ratio_to_incr_median"])
        if e["name"] == "FLOOR.KEEP":
            keep += " (%s/s)" % fmt_rps(t["rps_median"])
        if e["name"] == "INCR":
            incr += " (%s/s)" % fmt_rps(t["rps_median"])
        cells += [keep + mark, incr]
        if kind == "churn":
            cells.append(fmt_num(t["expired_per_call_median"], 3))
    kept = e["throughput"]["rand_P16"]
    cells += [fmt_num(kept["server_cpu_us_per_cmd_median"], 2), fmt_num(kept["usec_per_call_median"], 2)]
    bpk, m = e["bytes_per_key"], e["memory"]
    note = " (DBSIZE %d!)" % m["dbsize"] if m and m["dbsize"] != m["keys"] else ""
    cells.append(fmt_num(bpk) + note if bpk is not None else "n/a")
    return cells


def floor_allow_cells(allow_out, per_call) -> list:
    """FLOOR.ALLOW: measured on hot keys at -P 16 only (next to RL.ALLOW)."""
    cells = ["floor of RL.ALLOW's interface, three keys kept (FLOOR.ALLOW)"] + instr_cells("FLOOR.ALLOW", per_call)
    for rg_id, _, _, kind in REGIMES:
        if rg_id == "hot_P16":
            rs = allow_out["floor_allow_keep_ratios"]
            cells += [fmt_ratio(median(rs)), "-"]
        else:
            cells += ["-", "-"]
        if kind == "churn":
            cells.append("-")
    return cells + ["-", "-", "n/a"]


def instructions_only_cells(title, name, per_call) -> list:
    cells = [title] + instr_cells(name, per_call)
    for _, _, _, kind in REGIMES:
        cells += ["-", "-"] + (["-"] if kind == "churn" else [])
    return cells + ["-", "-", "n/a"]


def print_targets(report: dict, p) -> None:
    p("## Targets")
    p()
    if report["quick"]:
        p("(A QUICK run: its figures, and so these verdicts, mean nothing; only the full run's count.)")
        p()
    counts = {}
    for t in report["targets"]:
        v = t["verdict"].split(":")[0]
        counts[v] = counts.get(v, 0) + 1
    p("%s." % ", ".join("%d %s" % (n, v) for v, n in counts.items()))
    p()
    p(
        markdown_table(
            ["#", "target", "measured", "verdict"],
            [[t["group"], t["target"], t["measured"], t["verdict"]] for t in report["targets"]],
        )
    )


def print_instructions(counts: dict, machine: dict, reproduce: str) -> None:
    """--instructions-only (bench/profile.sh): the counts, as a share of
    FLOOR.THROTTLE's (x floor), of the interface keeping state (x keep, >
    1: the command costs more) and of the interface's floor with the
    command's own arguments (x limit: FLOOR.LIMIT, read and parse and
    propagate; what is left is the decision and its glue), and how many of
    them run in the modules' own code (in module; the rest are the
    server's and the C library's)."""
    if not counts["available"]:
        print("instructions not counted: %s" % counts["reason"], file=sys.stderr)
        return
    per_call = counts["per_call"]
    print("# %s (%s cores); `%s`" % (machine["cpu_model"], machine["cores"], reproduce))
    print(
        "%-22s %10s %8s %8s %8s %10s %8s %6s"
        % ("command", "instr/cmd", "x floor", "x keep", "x limit", "in module", "lookup", "cron")
    )
    in_modules = counts.get("in_modules_per_call", {})
    lookups = counts.get("lookup_per_call", {})
    crons = counts.get("cron_per_call", {})
    floor = per_call.get("FLOOR.THROTTLE")
    for name, count in per_call.items():
        # "FLOOR.LIMIT RL.ALLOW" by its last word, "RL.ALLOW SHADOW" by its first.
        words = name.split()
        keep = per_call.get(INSTR_FLOOR.get(words[-1], INSTR_FLOOR.get(words[0], "FLOOR.KEEP")))
        limit = per_call.get(limit_floor(name))
        x_keep = "%.3f" % (count / keep) if keep and name.startswith(("RL.", "FLOOR.LIMIT")) else "-"
        x_limit = "%.3f" % (count / limit) if limit else "-"
        own = "%.0f" % in_modules[name] if name in in_modules else "-"
        lookup = "%.0f" % lookups[name] if name in lookups else "-"
        cron = "%.0f" % crons[name] if name in crons else "-"
        print(
            "%-22s %10.0f %8s %8s %8s %10s %8s %6s"
            % (name, count, "%.2f" % (count / floor) if floor else "-", x_keep, x_limit, own, lookup, cron)
        )
        for cost, function in counts.get("top", {}).get(name, []):
            print("    %8d  %s" % (cost, function))
    for name in counts.get("skipped", []):
        print("%-22s not in the loaded module" % name)


def print_lua_backend(report: dict, p) -> None:
    """The module, its Lua backend (clients/lua) and the fastest peer
    script doing the same job, side by side."""
    kinds = report["lua_backend"]
    p("## The module, its Lua backend and the peer scripts")
    p()
    p(
        "Each command of the module next to its own Lua backend's script (clients/lua: the command's file and "
        "prelude.lua, `EVALSHA sha numkeys keys... [calendar] args...`, the calendar computed once for RL.QUOTA "
        "in UTC) and the fastest peer script doing the same job in that regime (bench/lua: RL.THROTTLE: GCRA "
        "or token bucket; RL.SLIDE: sorted-set log; RL.SLICE: hash of slices; RL.QUOTA: fixed window; RL.LEASE: "
        "sorted-set semaphore; RL.ALLOW: the three single calls of its limits' fastest peers one after the "
        "other, 1 / the sum of their 1 / throughput), all driven by redis-benchmark on the same server, rows "
        "interleaved, as the table above. Cells: requests per second (median) and / FLOOR.KEEP's in the same "
        "repetition; Lua/peer and module/Lua: medians of the per-repetition ratios of throughput (above 1: "
        "the first is faster). Memory: MEMORY USAGE of one key (SAMPLES 0) made by one call, limit %d per %d s "
        "(bytes per key by used_memory in the table above)." % (MEMORY_LIMIT, MEMORY_WINDOW_S)
    )
    p()
    shown = [rg for rg in REGIMES if rg[0] in ("hot_P16", "rand_P16")]
    header = ["command"]
    for _, title, _, _ in shown:
        header += [title + ": module", "its Lua script", "fastest peer", "Lua/peer", "module/Lua"]
    header += ["MEMORY USAGE: module", "Lua", "peer"]
    body = []

    def cell(rps, keep):
        if rps is None:
            return "-"
        return "%s/s (%s)" % (fmt_rps(rps), fmt_ratio(keep))

    for k in kinds:
        line = [k["command"]]
        for rg_id, _, _, _ in shown:
            c = k["regimes"][rg_id]
            peer = c.get("peer")
            line += [
                cell(c["module_rps_median"], c["module_x_keep"]),
                cell(c["lua_rps_median"], c["lua_x_keep"]),
                ("%s: %s" % (peer.replace("lua:", ""), cell(c["peer_rps_median"], c["peer_x_keep"]))) if peer else "none",
                fmt_ratio(c.get("lua_over_peer_median")),
                fmt_ratio(c.get("module_over_lua_median")),
            ]
        mem = k["memory"]

        def usage(m):
            return fmt_num(m["memory_usage"]) if m and m.get("memory_usage") is not None else "n/a"

        peers = k["peers"] or []
        line += [
            usage(mem.get("module")),
            usage(mem.get("lua")),
            ", ".join("%s %s" % (q.replace("lua:", ""), usage(mem.get(q))) for q in peers) or "n/a (three keys)",
        ]
        body.append(line)
    p(markdown_table(header, body))
    p()
    p("Every regime: Lua/peer and module/Lua (medians of the per-repetition throughput ratios), and the "
      "server's CPU per call (INFO cpu, us) of the module, its Lua script and the peer.")
    p()
    header = ["command"]
    for _, title, _, _ in REGIMES:
        header += [title + ": Lua/peer", "module/Lua", "CPU us/call module, Lua, peer"]
    body = []
    for k in kinds:
        line = [k["command"]]
        for rg_id, _, _, _ in REGIMES:
            c = k["regimes"][rg_id]
            line += [
                fmt_ratio(c.get("lua_over_peer_median")),
                fmt_ratio(c.get("module_over_lua_median")),
                ", ".join(fmt_num(c[w + "_cpu_us"], 2) for w in ("module", "lua", "peer")),
            ]
        body.append(line)
    p(markdown_table(header, body))
