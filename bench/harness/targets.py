"""The targets the report judges, each with its measured value (the
judged figure to three decimals, so that a 0.897 is not shown as the 0.90
it fails) and PASS, FAIL or "not measured" (and why):

1. hot key, every single command: instructions per call <= 1.05x
   FLOOR.KEEP's (callgrind), with the bound its interface sets beside it
   (FLOOR.LIMIT with the command's arguments: read, parse and propagate,
   deciding nothing; when that alone is over 1.05, the target is out of
   reach on this API) and what is left, the decision and its glue;
2. RL.ALLOW of three limits: instructions <= FLOOR.ALLOW's + 1.25 x the
   sum of the three single commands' own work (each one's instructions
   minus FLOOR.KEEP's); the same rule on the interface floors (RL.ALLOW
   minus FLOOR.ALLOWLIMIT against the singles minus their FLOOR.LIMIT);
   RL.PEEK of the same limits below RL.ALLOW;
3. 100k random keys, state kept (-P 16): every single command >= 0.9x
   FLOOR.KEEP's throughput in the same run, judged on server CPU per call
   (FLOOR.KEEP's / the command's, per repetition, median: the steadier
   figure), the throughput ratio and INFO commandstats' usec_per_call
   beside it, and the floors that bound it: FLOOR.LIMIT, and for a state
   of more than 16 bytes FLOOR.LIMIT64 (Row.state_floor);
4. scale (hot key, -P 16, server CPU per call, per repetition, median):
   RL.SLIDE at its largest limit against its smallest (full run: 1,000,000
   and 10), RL.SLICE at its most slices against its fewest (1,000 and 2),
   RL.ALLOW per key at 16 keys against 1: within 1.3x;

then each row's own targets (Row.targets: a least ratio to FLOOR.KEEP per
regime, judged as in 3) and each workload's (workloads.py)."""

from __future__ import annotations

from .instructions import limit_floor
from .regimes import ALLOW_PARTS


def verdict(passed, why=None):
    if passed is None:
        return "not measured" + (": " + why if why else "")
    return "PASS" if passed else "FAIL"


def target(group, text, measured, passed, why=None):
    return {"group": group, "target": text, "measured": measured, "verdict": verdict(passed, why)}


def judge(report: dict, rows, workloads, skipped_rows, skipped_workloads) -> list:
    """`rows` and `workloads`: the Row and Workload objects measured; the
    skipped ones (their commands not in the module) are listed with their
    targets, not measured."""
    out = []
    instr = report["instructions"] or {}
    per_call = instr.get("per_call", {}) if instr.get("available") else {}
    no_instr = instr.get("reason") or "instruction counts not taken (--no-instructions)"
    by_name = {e["name"]: e for e in report["rows"]}
    skipped = report["skipped"]
    singles = [r.name for r in list(rows) + list(skipped_rows) if r.single]
    state_floors = {r.name: r.state_floor for r in list(rows) + list(skipped_rows)}

    # 1. Instructions of the single commands against FLOOR.KEEP's, with
    # the bound the interface sets: FLOOR.LIMIT with the command's own
    # arguments reads, parses and propagates as the command must, so
    # nothing with this interface costs less.
    keep = per_call.get("FLOOR.KEEP")
    lease = ["RL.LEASE"] if "RL.LEASE" in per_call or "RL.LEASE" in skipped else []
    for name in singles + lease:
        text = "hot key: %s instructions per call <= 1.05x FLOOR.KEEP's" % name
        if name == "RL.LEASE":
            text += " (renewing one of 10 leases held)"
        if name in skipped:
            out.append(target(1, text, "-", None, skipped[name]))
        elif name not in per_call or not keep:
            out.append(target(1, text, "-", None, no_instr))
        else:
            x = per_call[name] / keep
            measured = "%.3fx (%s against %s)" % (x, n(per_call[name]), n(keep))
            floor = per_call.get(limit_floor(name))
            if floor:
                measured += "; its interface deciding nothing (FLOOR.LIMIT, its arguments): %.3fx, so %s" % (
                    floor / keep,
                    "the decision and its glue are %s instructions (%.1f%% of FLOOR.KEEP)"
                    % (n(per_call[name] - floor), 100 * (per_call[name] - floor) / keep),
                )
                if floor / keep > 1.05:
                    measured += "; the interface alone is over 1.05: out of reach on this API"
            out.append(target(1, text, measured, x <= 1.05))

    # 2. RL.ALLOW and RL.PEEK against the floor and the singles' own work.
    text = "RL.ALLOW of 3 limits: instructions <= FLOOR.ALLOW's + 1.25 x the singles' own work (single - FLOOR.KEEP)"
    names = ["RL.ALLOW", "FLOOR.ALLOW"] + ALLOW_PARTS
    if keep and all(x in per_call for x in names):
        own = sum(per_call[p] - keep for p in ALLOW_PARTS)
        bound = per_call["FLOOR.ALLOW"] + 1.25 * own
        allow = per_call["RL.ALLOW"]
        measured = "%s against at most %s (%s + 1.25 x %s): %.3fx the bound" % (
            n(allow),
            n(bound),
            n(per_call["FLOOR.ALLOW"]),
            n(own),
            allow / bound,
        )
        measured += allow_split(instr.get("in_modules_per_call") or {}, per_call, own)
        out.append(target(2, text, measured, allow <= bound))
    else:
        out.append(target(2, text, "-", None, no_instr))
    # The same rule on the interface floors: what RL.ALLOW does beyond
    # reading, parsing and propagating its arguments (FLOOR.ALLOWLIMIT)
    # against what the three singles do beyond theirs (FLOOR.LIMIT).
    text = (
        "the same, each against its interface's floor: RL.ALLOW - FLOOR.ALLOWLIMIT <= 1.25 x the singles' "
        "(single - FLOOR.LIMIT with its arguments)"
    )
    floors = [limit_floor(x) for x in ["RL.ALLOW"] + ALLOW_PARTS]
    if all(x in per_call for x in names + floors):
        own_allow = per_call["RL.ALLOW"] - per_call[limit_floor("RL.ALLOW")]
        own = sum(per_call[p] - per_call[limit_floor(p)] for p in ALLOW_PARTS)
        measured = "%s against at most %s (1.25 x %s): %.3fx the bound; FLOOR.ALLOWLIMIT %s, %.3fx FLOOR.ALLOW" % (
            n(own_allow),
            n(1.25 * own),
            n(own),
            own_allow / (1.25 * own) if own > 0 else float("inf"),
            n(per_call[limit_floor("RL.ALLOW")]),
            per_call[limit_floor("RL.ALLOW")] / per_call["FLOOR.ALLOW"],
        )
        out.append(target(2, text, measured, own_allow <= 1.25 * own))
    else:
        out.append(target(2, text, "-", None, no_instr))
    text = "RL.PEEK of the same 3 limits: instructions below RL.ALLOW's"
    if "RL.PEEK" in per_call and "RL.ALLOW" in per_call:
        peek, allow = per_call["RL.PEEK"], per_call["RL.ALLOW"]
        out.append(target(2, text, "%s against %s (%.2fx)" % (n(peek), n(allow), peek / allow), peek < allow))
    else:
        out.append(target(2, text, "-", None, no_instr))

    # 3. Kept state, 100k random keys, -P 16.
    for name in singles:
        text = "100k random keys, state kept, -P 16: %s >= 0.9x FLOOR.KEEP's throughput" % name
        if name in skipped:
            out.append(target(3, text, "-", None, skipped[name]))
        else:
            out.append(keep_ratio_target(3, text, by_name, name, "rand_P16", 0.9, state_floors[name]))

    # 4. Scale.
    for family, what in (("RL.SLIDE", "limit %s against limit %s"), ("RL.SLICE", "%s slices against %s"), ("RL.ALLOW", "%s keys against %s, per key")):
        s = report["scaling"].get(family)
        if not s:
            continue
        levels = sorted(int(lv) for lv in s["levels"])
        text = "scale: %s at %s: cost within 1.3x" % (family, what % (n(levels[-1]), n(levels[0])))
        x = s["cost_largest_over_smallest_median"]
        measured = "%.3fx server CPU per call%s (throughput %.2fx)" % (
            x,
            " per key" if s["per_key"] else "",
            s["largest_over_smallest_median"],
        )
        out.append(target(4, text, measured, x <= 1.3))

    # The rows' own targets.
    for row in list(rows) + list(skipped_rows):
        for rg_id, least in row.targets.items():
            text = "%s, %s: >= %sx FLOOR.KEEP's throughput" % (row.name, regime_title(report, rg_id), least)
            if row.name in skipped:
                out.append(target(row.name, text, "-", None, skipped[row.name]))
            else:
                out.append(keep_ratio_target(row.name, text, by_name, row.name, rg_id, least, row.state_floor))

    # The workloads' targets.
    for w in list(workloads) + list(skipped_workloads):
        fig = report["workloads"][w.name]["figures"] if w.name in report["workloads"] else None
        for text, measured, passed in w.targets(fig):
            out.append(target(w.name, text, measured, passed, skipped.get(w.name)))
    return out


def allow_split(in_modules, per_call, own):
    """Where RL.ALLOW's extra over the rule goes: its own work beyond
    FLOOR.ALLOW against the singles' beyond FLOOR.KEEP, in the modules'
    code and in the server's (and the C library's); empty without the
    split. When the server's part alone is more than the quarter of the
    singles' own work the rule allows, no module code can meet it."""
    names = ["RL.ALLOW", "FLOOR.ALLOW", "FLOOR.KEEP"] + ALLOW_PARTS
    if not all(x in in_modules for x in names):
        return ""

    def beyond(count):
        """RL.ALLOW's part of `count` beyond FLOOR.ALLOW's, and the
        singles' beyond FLOOR.KEEP's."""
        return (
            count("RL.ALLOW") - count("FLOOR.ALLOW"),
            sum(count(p) - count("FLOOR.KEEP") for p in ALLOW_PARTS),
        )

    module_allow, module_singles = beyond(in_modules.get)
    server_allow, server_singles = beyond(lambda x: per_call[x] - in_modules[x])
    server_extra = server_allow - server_singles
    text = (
        "; beyond the floors, in the modules' code RL.ALLOW %s against the singles' %s (%s more), "
        "in the server's %s against %s (%s more), where the rule allows %s more in all"
        % (
            n(module_allow),
            n(module_singles),
            n(module_allow - module_singles),
            n(server_allow),
            n(server_singles),
            n(server_extra),
            n(0.25 * own),
        )
    )
    if server_extra > 0.25 * own:
        text += ": the server's part alone is over it, so no module code meets the rule in this count"
    return text


def keep_ratio_target(group, text, by_name, name, rg_id, least, state_floor):
    t = by_name[name]["throughput"][rg_id]
    x, rs = t["cpu_ratio_to_keep_median"], t["keep_cpu_ratios"]
    keep = by_name["FLOOR.KEEP"]["throughput"][rg_id]
    measured = "%.3fx server CPU per call%s; throughput %.2fx; usec_per_call %s against FLOOR.KEEP's %s" % (
        x,
        " (%.2f-%.2f)" % (min(rs), max(rs)) if len(rs) > 1 else "",
        t["ratio_to_keep_median"],
        f2(t["usec_per_call_median"]),
        f2(keep["usec_per_call_median"]),
    )
    # The bounds the interface sets: FLOOR.LIMIT keeps a 16-byte module
    # value as a limiter does, reads, parses and propagates, and decides
    # nothing; FLOOR.LIMIT64 the same with a value of 64 bytes, the
    # allocation of the larger states, which on a key out of the cache is
    # one more line to fetch (the 16-byte one sits beside the server's own
    # 16-byte record of the value).
    for floor_name in dict.fromkeys(["FLOOR.LIMIT", state_floor]):
        floor = by_name.get(floor_name)
        if floor and name != floor_name and rg_id in floor["throughput"]:
            f = floor["throughput"][rg_id]
            measured += "; %s%s %.3fx, usec_per_call %s" % (
                floor_name,
                " (the interface deciding nothing)" if floor_name == "FLOOR.LIMIT" else " (with this state's size)",
                f["cpu_ratio_to_keep_median"],
                f2(f["usec_per_call_median"]),
            )
            if x < least and floor_name == state_floor and f["cpu_ratio_to_keep_median"] < least:
                # Not even the floor with this interface and this state's
                # size reaches the target in this run.
                measured += ", itself under %s: out of reach on this API" % least
    return target(group, text, measured, x >= least)


def regime_title(report, rg_id):
    return next(r["title"] for r in report["regimes"] if r["id"] == rg_id)


def n(x):
    return "{:,.0f}".format(x)


def f2(x):
    return "-" if x is None else "%.2f" % x
