"""From the raw results of session.measure to the report's figures: medians
of the runs and of the ratios, per row and regime, the scaling ratios,
RL.ALLOW against the three single calls, each command against its script.
The dictionary it returns is the JSON report."""

from __future__ import annotations

import os
import platform

from .regimes import (
    ALLOW_PARTS,
    BACKEND_KINDS,
    CHURN_DB,
    CLIENTS,
    KEPT_DB,
    KEPT_LIMIT,
    KEPT_MARGIN,
    KEPT_WINDOW_S,
    MEMORY_LIMIT,
    MEMORY_WINDOW_S,
    REGIMES,
    SAME_JOB,
    THROUGHPUT_LIMIT,
    THROUGHPUT_WINDOW_S,
    median,
)
from .rows import display_args
from .targets import judge


def build_report(raw: dict, run: dict) -> dict:
    """`raw`: session.measure's results; `run`: started_at, server_bin,
    benchmark, reproduce, quick, reps, keys, slide_levels, slice_levels."""
    rows, checks, results = raw["rows"], raw["checks"], raw["results"]
    kept_checks, kept_bounds, mem = raw["kept_checks"], raw["kept_bounds"], raw["mem"]
    scaling, scale_results = raw["scaling"], raw["scale_results"]
    floor_allow_results = raw["floor_allow_results"]
    slide_levels, slice_levels, allow_levels = run["slide_levels"], run["slice_levels"], run["allow_levels"]
    keys = run["keys"]

    out_rows = []
    for row in rows:
        entry = {
            "name": row.name,
            "title": row.title,
            "command": display_args(row, THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S),
            "command_kept": display_args(row, KEPT_LIMIT, KEPT_WINDOW_S),
            "limit_check": checks.get(row.name, "n/a"),
            "kept_check": kept_checks[row.name]["check"] if row.name in kept_checks else "n/a",
            "kept_state": dict(kept_checks.get(row.name, {}), **kept_bounds.get(row.name, {})) or None,
            "throughput": {},
            "memory": mem.get(row.name),
            "bytes_per_key": mem[row.name]["bytes_per_key"] if row.name in mem else None,
        }
        for rg_id, _, _, _ in REGIMES:
            runs = results[(rg_id, row.name)]
            base = results[(rg_id, "INCR")]
            ratios = [r["rps"] / i["rps"] for r, i in zip(runs, base)]
            floor_ratios = [r["rps"] / f["rps"] for r, f in zip(runs, results[(rg_id, "FLOOR.THROTTLE")])]
            keep = results[(rg_id, "FLOOR.KEEP")]
            keep_ratios = [r["rps"] / k["rps"] for r, k in zip(runs, keep)]
            # FLOOR.KEEP's server CPU per call / the row's: the throughput
            # ratio the server alone would give, steadier than the client's.
            keep_cpu_ratios = [k["server_cpu_us_per_cmd"] / r["server_cpu_us_per_cmd"] for r, k in zip(runs, keep)]
            entry["throughput"][rg_id] = {
                "rps_median": median([r["rps"] for r in runs]),
                "ratio_to_incr_median": median(ratios),
                "ratio_to_floor_median": median(floor_ratios),
                "floor_ratios": floor_ratios,
                "ratio_to_keep_median": median(keep_ratios),
                "keep_ratios": keep_ratios,
                "cpu_ratio_to_keep_median": median(keep_cpu_ratios),
                "keep_cpu_ratios": keep_cpu_ratios,
                "usec_per_call_median": median([r["usec_per_call"] for r in runs]),
                "server_cpu_us_per_cmd_median": median([r["server_cpu_us_per_cmd"] for r in runs]),
                "errors": sum(r["errors"] for r in runs),
                "expired": sum(r["expired"] for r in runs),
                "expired_per_call_median": median([r["expired_per_call"] for r in runs]),
                "runs": runs,
                "ratios": ratios,
            }
        out_rows.append(entry)
    # Expirations during the runs on kept-state keys: a handful, of keys
    # other steps left (hot keys, limit checks), where churn had one a call.
    kept_runs = [r for rg in REGIMES if rg[3] == "kept" for row in rows for r in results[(rg[0], row.name)]]
    kept_expired = {"expired": sum(r["expired"] for r in kept_runs), "calls": sum(r["n"] for r in kept_runs)}

    scale_out = {}
    for family, levels in (("RL.SLIDE", slide_levels), ("RL.SLICE", slice_levels), ("RL.ALLOW", allow_levels)):
        if run.get("lua_only"):
            continue
        lo, hi = scale_results[(family, min(levels))], scale_results[(family, max(levels))]
        # Per key (RL.ALLOW's levels are its keys; the others have one).
        k_lo, k_hi = (min(levels), max(levels)) if family == "RL.ALLOW" else (1, 1)
        ratios = [h["rps"] * k_hi / (l["rps"] * k_lo) for h, l in zip(hi, lo)]
        cost_ratios = [
            (h["server_cpu_us_per_cmd"] / k_hi) / (l["server_cpu_us_per_cmd"] / k_lo) for h, l in zip(hi, lo)
        ]
        scale_out[family] = {
            "levels": {
                str(lv): {
                    "rps_median": median([r["rps"] for r in scale_results[(family, lv)]]),
                    "server_cpu_us_per_cmd_median": median(
                        [r["server_cpu_us_per_cmd"] for r in scale_results[(family, lv)]]
                    ),
                    "errors": sum(r["errors"] for r in scale_results[(family, lv)]),
                    "runs": scale_results[(family, lv)],
                    "setup": next(s for s in scaling if s["family"] == family and s["level"] == lv),
                }
                for lv in levels
            },
            "largest_over_smallest_ratios": ratios,
            "largest_over_smallest_median": median(ratios),
            "per_key": family == "RL.ALLOW",
            "cost_largest_over_smallest_ratios": cost_ratios,
            "cost_largest_over_smallest_median": median(cost_ratios),
        }

    # ---- RL.ALLOW of three limits against the three single calls: server
    # CPU per call, hot keys, -P 16, per repetition.
    allow_cpu = [r["server_cpu_us_per_cmd"] for r in results[("hot_P16", "RL.ALLOW")]]
    parts_cpu = [
        sum(x)
        for x in zip(*[[r["server_cpu_us_per_cmd"] for r in results[("hot_P16", name)]] for name in ALLOW_PARTS])
    ]
    allow_ratios = [a / p for a, p in zip(allow_cpu, parts_cpu) if p]
    # The least any RL.ALLOW of these three limits can cost: FLOOR.ALLOW
    # (its interface, three keys kept, the reply) plus what each single
    # command costs beyond FLOOR.KEEP (its interface, one key kept): parsing
    # its numbers, deciding, recording, the values of its reply. RL.ALLOW
    # must do all of that for each of its limits.
    floor_allow_cpu = [r["server_cpu_us_per_cmd"] for r in floor_allow_results]
    keep_cpu = [r["server_cpu_us_per_cmd"] for r in results[("hot_P16", "FLOOR.KEEP")]]
    bound_cpu = [f + p - len(ALLOW_PARTS) * k for f, p, k in zip(floor_allow_cpu, parts_cpu, keep_cpu)]
    allow_out = {
        "allow_cpu_us_per_call": allow_cpu,
        "singles_cpu_us_sum": parts_cpu,
        "ratios": allow_ratios,
        "ratio_median": median(allow_ratios),
        "floor_allow_cpu_us_per_call": floor_allow_cpu,
        "floor_allow_ratios": [f / p for f, p in zip(floor_allow_cpu, parts_cpu) if p],
        "floor_allow_runs": floor_allow_results,
        "floor_allow_keep_ratios": [
            f["rps"] / k["rps"] for f, k in zip(floor_allow_results, results[("hot_P16", "FLOOR.KEEP")])
        ],
        "bound_cpu_us_per_call": bound_cpu,
        "bound_ratios": [b_ / p for b_, p in zip(bound_cpu, parts_cpu) if p],
    }

    # ---- The module against the script doing the same job.
    row_by = {e["name"]: e for e in out_rows}
    same_job = []
    for command, script in SAME_JOB:
        pair = {"command": command, "script": script, "ratio_median": {}, "ratios": {}}
        for rg_id, _, _, _ in REGIMES:
            ours = row_by[command]["throughput"][rg_id]["runs"]
            theirs = row_by[script]["throughput"][rg_id]["runs"]
            ratios = [o["rps"] / t["rps"] for o, t in zip(ours, theirs)]
            pair["ratios"][rg_id] = ratios
            pair["ratio_median"][rg_id] = median(ratios)
        same_job.append(pair)

    report_lua = lua_backend(row_by)

    report = {
        "date": run["started_at"].isoformat(timespec="seconds"),
        "redis_version": raw["version"],
        "server_binary": run["server_bin"],
        "redis_benchmark": run["benchmark"],
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "reproduce": run["reproduce"],
        "quick": run["quick"],
        "reps": run["reps"],
        "clients": CLIENTS,
        "random_keys": run["rand_keys"],
        "regimes": [
            {
                "id": rg_id,
                "title": title,
                "pipeline": pipe,
                "keys": keys,
                "random_keys": run["rand_keys"] if keys != "hot" else 1,
                "db": {"hot": 0, "churn": CHURN_DB, "kept": "%d + the row's index" % KEPT_DB}[keys],
                "limit": KEPT_LIMIT if keys == "kept" else THROUGHPUT_LIMIT,
                "window_s": KEPT_WINDOW_S if keys == "kept" else THROUGHPUT_WINDOW_S,
            }
            for rg_id, title, pipe, keys in REGIMES
        ],
        "throughput_params": {
            "limit": THROUGHPUT_LIMIT,
            "window_s": THROUGHPUT_WINDOW_S,
            "kept_limit": KEPT_LIMIT,
            "kept_window_s": KEPT_WINDOW_S,
            "quantity": 1,
        },
        "kept_state": {
            "limit": KEPT_LIMIT,
            "window_s": KEPT_WINDOW_S,
            "margin": KEPT_MARGIN,
            "expired_during_runs": kept_expired["expired"],
            "calls": kept_expired["calls"],
        },
        "memory_params": {"limit": MEMORY_LIMIT, "window_s": MEMORY_WINDOW_S, "keys": keys},
        "rows": out_rows,
        "memory_per_unit": raw["per_unit"],
        "memory_slices60": raw["slices60"],
        "memory_precision": raw["precision"],
        "scaling": scale_out,
        "same_job": same_job,
        "lua_backend": report_lua,
        "lua_only": bool(run.get("lua_only")),
        "allow_vs_singles": allow_out,
        "total_seconds": None,
        "machine_info": run["machine_info"],
        "skipped": raw["skipped"],
        "instructions": run["instructions"],
        "workloads": {
            w.name: {"title": w.title, "raw": raw["workloads"][w.name], "figures": w.figures(raw["workloads"][w.name])}
            for w in raw["workload_objects"]
        },
    }
    if run.get("lua_only"):
        report["targets"] = []
    else:
        report["targets"] = judge(
            report, rows, raw["workload_objects"], raw["skipped_rows"], raw["skipped_workloads"]
        )
    return report


def lua_backend(row_by: dict) -> list:
    """Each kind: the module's command, its Lua backend's script and the
    fastest peer script doing the same job, per regime (the peer of the
    highest median throughput there; RL.ALLOW's: the three single calls of
    its limits' fastest peers, one after the other, whose throughput per
    repetition is 1 / the sum of their 1 / throughput), with the medians
    of the per-repetition ratios Lua / peer and module / Lua, and the
    memory per key of each."""
    out = []
    fastest = {}
    for command, lua, peers in BACKEND_KINDS:
        entry = {"command": command, "lua": lua, "peers": peers, "regimes": {}, "memory": {}}
        mod, mine = row_by.get(command), row_by.get(lua)
        for rg_id, _, _, _ in REGIMES:
            cell = {}
            if peers is None:
                parts = [fastest.get((c, rg_id)) for c in ALLOW_PARTS]
                if all(parts):
                    runs = [row_by[p]["throughput"][rg_id]["runs"] for p in parts]
                    peer_rps = [1 / sum(1 / r["rps"] for r in rs) for rs in zip(*runs)]
                    cell["peer"] = " + ".join(parts)
                    cell["peer_rps"] = peer_rps
            else:
                present = [p for p in peers if p in row_by]
                if present:
                    best = max(present, key=lambda p: row_by[p]["throughput"][rg_id]["rps_median"])
                    fastest[(command, rg_id)] = best
                    cell["peer"] = best
                    cell["peer_rps"] = [r["rps"] for r in row_by[best]["throughput"][rg_id]["runs"]]
            lua_rps = [r["rps"] for r in mine["throughput"][rg_id]["runs"]] if mine else None
            mod_rps = [r["rps"] for r in mod["throughput"][rg_id]["runs"]] if mod else None
            cell["lua_rps_median"] = median(lua_rps) if lua_rps else None
            cell["module_rps_median"] = median(mod_rps) if mod_rps else None
            cell["peer_rps_median"] = median(cell["peer_rps"]) if cell.get("peer_rps") else None
            if lua_rps and cell.get("peer_rps"):
                ratios = [a / b for a, b in zip(lua_rps, cell["peer_rps"])]
                cell["lua_over_peer"], cell["lua_over_peer_median"] = ratios, median(ratios)
            if lua_rps and mod_rps:
                ratios = [a / b for a, b in zip(mod_rps, lua_rps)]
                cell["module_over_lua"], cell["module_over_lua_median"] = ratios, median(ratios)
            for who, name in (("module", command), ("lua", lua), ("peer", cell.get("peer"))):
                t = row_by[name]["throughput"][rg_id] if name in row_by else None
                cell[who + "_x_keep"] = t["ratio_to_keep_median"] if t else None
                cell[who + "_x_incr"] = t["ratio_to_incr_median"] if t else None
                cell[who + "_cpu_us"] = t["server_cpu_us_per_cmd_median"] if t else None
            entry["regimes"][rg_id] = cell
        for who, name in (("module", command), ("lua", lua)):
            m = row_by[name]["memory"] if name in row_by else None
            entry["memory"][who] = {"bytes_per_key": m["bytes_per_key"], "memory_usage": m.get("memory_usage")} if m else None
        for p in peers or []:
            m = row_by[p]["memory"] if p in row_by else None
            entry["memory"][p] = {"bytes_per_key": m["bytes_per_key"], "memory_usage": m.get("memory_usage")} if m else None
        out.append(entry)
    return out
