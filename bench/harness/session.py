"""The measurements, with the server running: the limit checks, the
kept-state keys, the calibration, the repetitions, the kept-state checks
and the memory figures. Returns the raw results; aggregate.py reads them."""

from __future__ import annotations

import math

from .memory import memory_per_key, memory_per_unit, memory_precision, memory_slices
from .regimes import (
    BACKEND_DIR,
    BACKEND_KINDS,
    BACKEND_SCRIPTS,
    LUA_ONLY_REFERENCES,
    LUA_DIR,
    CHURN_DB,
    DATABASES,
    FLOOR_ALLOW,
    KEPT_DB,
    KEPT_LIMIT,
    KEPT_MARGIN,
    KEPT_WINDOW_S,
    RAND,
    REGIMES,
    SCRIPTS,
    THROUGHPUT_LIMIT,
    THROUGHPUT_WINDOW_S,
    BenchError,
)
from .resp import Client, encode
from .servers import has_command
from .workloads import WORKLOADS
from .rows import make_rows
from .runner import (
    Bench,
    allowed_count,
    check_limits,
    create_rand_keys,
    fill_keys,
    kept_state_check,
)


def measure(opts, server, benchmark, settings, progress) -> dict:
    """Every measurement on the started `server`. `settings`: quick, reps,
    keys, rand_keys, unit_sizes, slide_levels, slice_levels, cell (bool)."""
    quick, reps, keys = settings["quick"], settings["reps"], settings["keys"]
    unit_sizes = settings["unit_sizes"]
    slide_levels, slice_levels = settings["slide_levels"], settings["slice_levels"]
    allow_levels = settings["allow_levels"]
    rand_keys = settings["rand_keys"]
    b = Bench(opts, server, benchmark, rand_keys)
    version = b.con.info("server")["redis_version"]
    shas = {}
    for name in SCRIPTS:
        shas[name] = b.con.call("SCRIPT", "LOAD", (LUA_DIR / (name + ".lua")).read_bytes()).decode()
    backend = {name: b.con.call("SCRIPT", "LOAD", backend_source(name)).decode() for name in BACKEND_SCRIPTS}
    rows = make_rows(shas, settings["cell"], backend)
    lua_only = settings.get("lua_only")
    if lua_only:
        # The kinds' rows and the references of their ratios.
        keep = set(LUA_ONLY_REFERENCES)
        for command, lua, peers in BACKEND_KINDS:
            keep |= {command, lua} | set(peers or [])
        keep |= {"RL.THROTTLE", "RL.SLIDE", "RL.SLICE"} | {p for _, _, ps in BACKEND_KINDS for p in ps or []}
        rows = [r for r in rows if r.name in keep]
    # Rows and workloads of commands the loaded module does not have yet.
    skipped = {}
    for row in rows:
        if row.requires and not has_command(b.con, row.requires):
            skipped[row.name] = "%s is not in the loaded module" % row.requires
    skipped_rows = [r for r in rows if r.name in skipped]
    rows = [r for r in rows if r.name not in skipped]
    workloads, skipped_workloads = [], []
    for w in WORKLOADS:
        missing = [c for c in w.requires if not has_command(b.con, c)]
        if missing:
            skipped[w.name] = "%s not in the loaded module" % " and ".join(missing)
            skipped_workloads.append(w)
        else:
            workloads.append(w)
    for name, why in skipped.items():
        progress("%s: not measured (%s)" % (name, why))
    by_name = {r.name: r for r in rows}

    checks = {r.name: check_limits(b.con, r) for r in rows if r.limiter}
    for name, res in checks.items():
        if res != "ok":
            progress("WARNING: %s does not limit as expected: %s" % (name, res))

    def row_cmd(row, keys):
        if keys == "hot":
            return row.args("b:%s:hot" % row.id, THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S)
        if keys == "kept":
            return row.args("b:%s:%s" % (row.id, RAND), KEPT_LIMIT, KEPT_WINDOW_S)
        return row.args("b:%s:%s" % (row.id, RAND), THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S)

    # Each row's database in the kept-state regimes.
    kept_db = {row.name: KEPT_DB + i for i, row in enumerate(rows)}
    if KEPT_DB + len(rows) > DATABASES:
        raise BenchError("%d rows need %d databases, the server has %d" % (len(rows), KEPT_DB + len(rows), DATABASES))

    # The churn regime's database, emptied before and after each run.
    churn = Client(server.port)
    churn.call("SELECT", str(CHURN_DB))

    def measure(regime, row, n):
        """One run of `row` in `regime`, with what the regime's keys
        need before and after it (outside the measurement)."""
        _, _, pipe, keys = regime
        args = row_cmd(row, keys)
        if keys == "churn":
            churn.call("FLUSHDB", "SYNC")
        db = {"hot": 0, "churn": CHURN_DB, "kept": kept_db[row.name]}[keys]
        res = b.run(args, n, pipe, keys != "hot", db)
        if keys == "churn":
            churn.call("FLUSHDB", "SYNC")
        return res

    # Scaling setups: SLIDE logs pre-filled to their limit.
    scaling = []
    if lua_only:
        slide_levels, slice_levels, allow_levels, workloads = [], [], [], []
    for level in slide_levels:
        key = "b:scale:slide:%d" % level
        cmd = ["RL.SLIDE", key, str(level), "3600"]
        admitted = allowed_count(fill_keys(server.port, [encode(cmd)] * level, encoded=True))
        peek = b.con.call("RL.SLIDE", key, str(level), "3600", "0")
        scaling.append(
            {
                "family": "RL.SLIDE",
                "level": level,
                "keys": 1,
                "cmd": cmd,
                "prefilled": admitted,
                "remaining_after_fill": peek[2],
            }
        )
    for level in slice_levels:
        key = "b:scale:slice:%d" % level
        cmd = ["RL.SLICE", key, "1000000000", "1", str(level)]
        scaling.append({"family": "RL.SLICE", "level": level, "keys": 1, "cmd": cmd})
    # RL.ALLOW of `level` limits, each a hot key's RL.THROTTLE limit of the
    # hot-key regimes (every call allowed): its cost per key.
    for level in allow_levels:
        keys_ = ["{b:scale:allow:%d}:%d" % (level, i) for i in range(level)]
        spec = ["THROTTLE", str(THROUGHPUT_LIMIT - 1), str(THROUGHPUT_LIMIT), str(THROUGHPUT_WINDOW_S)]
        cmd = ["RL.ALLOW", str(level)] + keys_ + spec * level
        scaling.append({"family": "RL.ALLOW", "level": level, "keys": level, "cmd": cmd})

    # The kept-state regimes' keys, created once (see the docstring).
    progress("creating %s random keys per row for the kept-state regimes" % "{:,}".format(rand_keys))
    for row in rows:
        if row.keeps:
            create_rand_keys(server.port, row, row_cmd(row, "kept"), kept_db[row.name], rand_keys)
    for w in workloads:
        progress("%s: set-up" % w.name)
        w.setup(b, quick)

    # Request counts: fixed in quick mode, else from a calibration run.
    def calibration_n(pipe):
        return 0 if quick else (40_000 if pipe > 1 else 5_000)

    n_for = {}
    if quick:
        for rg in REGIMES:
            for row in rows:
                n_for[(rg[0], row.name)] = 2_000
        for s in scaling:
            n_for[("scale", s["family"], s["level"])] = 2_000
        n_for["floor_allow"] = 2_000
    else:
        progress("calibrating request counts for %.1f s per measurement" % opts.seconds)
        for regime in REGIMES:
            for row in rows:
                res = measure(regime, row, calibration_n(regime[2]))
                n = int(res["rps"] * opts.seconds) // 1000 * 1000
                n_for[(regime[0], row.name)] = min(max(n, 20_000), 10_000_000)
        for s in scaling:
            res = b.run(s["cmd"], 40_000, 16, False)
            n = int(res["rps"] * opts.seconds) // 1000 * 1000
            n_for[("scale", s["family"], s["level"])] = min(max(n, 20_000), 10_000_000)
        if not lua_only:
            res = b.run(FLOOR_ALLOW, 40_000, 16, False)
            n = int(res["rps"] * opts.seconds) // 1000 * 1000
            n_for["floor_allow"] = min(max(n, 20_000), 10_000_000)

    # The most calls a kept-state key can get, creation, calibration
    # and repetitions together: each call of a run draws its key
    # uniformly from the rand_keys keys, so a key's calls are Poisson with
    # the mean below; the bound is 10 standard deviations above.
    kept_bounds = {}
    for row in rows:
        if not row.limiter:
            continue
        calls = rand_keys + sum(
            calibration_n(pipe) + reps * n_for[(rg_id, row.name)]
            for rg_id, _, pipe, keys in REGIMES
            if keys == "kept"
        )
        mean = calls / rand_keys
        bound = mean + 10 * math.sqrt(mean) + 10
        kept_bounds[row.name] = {"calls": calls, "mean_calls_per_key": mean, "bound_calls_per_key": bound}
        if bound > KEPT_MARGIN * KEPT_LIMIT:
            raise BenchError(
                "%s: a kept-state key could get %.0f calls, more than %.0f%% of the limit %d: "
                "lower --seconds or --reps" % (row.name, bound, KEPT_MARGIN * 100, KEPT_LIMIT)
            )

    results = {(rg[0], r.name): [] for rg in REGIMES for r in rows}
    scale_results = {(s["family"], s["level"]): [] for s in scaling}
    floor_allow_results = []
    for rep in range(reps):
        progress("repetition %d of %d" % (rep + 1, reps))
        for regime in REGIMES:
            for row in rows:
                res = measure(regime, row, n_for[(regime[0], row.name)])
                res["rep"] = rep
                results[(regime[0], row.name)].append(res)
        for s in scaling:
            res = b.run(s["cmd"], n_for[("scale", s["family"], s["level"])], 16, False)
            res["rep"] = rep
            scale_results[(s["family"], s["level"])].append(res)
        if not lua_only:
            res = b.run(FLOOR_ALLOW, n_for["floor_allow"], 16, False)
            res["rep"] = rep
            floor_allow_results.append(res)
        for w in workloads:
            w.repetition(b, rep)

    # Every kept-state key still there, every call allowed.
    progress("checking the kept-state keys")
    kept_checks = {}
    for row in rows:
        if not row.keeps:
            continue
        args = row_cmd(row, "kept")
        peek = row.peek_args("b:%s:%s" % (row.id, RAND), KEPT_LIMIT, KEPT_WINDOW_S) if row.limiter else None
        kept_checks[row.name] = kept_state_check(b, row, args, peek, kept_db[row.name])
        if kept_checks[row.name]["check"] != "ok":
            progress("WARNING: %s kept-state keys: %s" % (row.name, kept_checks[row.name]["check"]))
    churn.close()

    progress("memory: %d keys per row" % keys)
    mem = {}
    for row in rows:
        if row.keys_per_call != 1:
            continue
        mem[row.name] = memory_per_key(b, row, keys)
    per_unit = precision = slices60 = None
    if not lua_only:
        progress("memory: per recorded unit at %s units" % unit_sizes)
        per_unit = memory_per_unit(b, by_name, unit_sizes)
        progress("memory: RL.SLIDE with PRECISION")
        precision = memory_precision(b, max(unit_sizes))
        progress("memory: 60 slices")
        slices60 = memory_slices(b, by_name)
    workloads_raw = {w.name: w.finish(b) for w in workloads}
    b.con.close()
    return {
        "skipped": skipped,
        "workloads": workloads_raw,
        "workload_objects": workloads,
        "skipped_rows": skipped_rows,
        "skipped_workloads": skipped_workloads,
        "version": version,
        "rows": rows,
        "by_name": by_name,
        "checks": checks,
        "results": results,
        "scaling": scaling,
        "scale_results": scale_results,
        "floor_allow_results": floor_allow_results,
        "kept_checks": kept_checks,
        "kept_bounds": kept_bounds,
        "mem": mem,
        "per_unit": per_unit,
        "precision": precision,
        "slices60": slices60,
    }


def backend_source(name: str) -> bytes:
    """The Lua backend's script of a command (clients/lua/README.md): its
    manifest prefix, then dist/ratelimit.lua."""
    import json

    manifest = json.loads((BACKEND_DIR / "dist" / "manifest.json").read_text())["commands"]
    return manifest["RL." + name.upper()]["prefix"].encode() + (BACKEND_DIR / "dist" / "ratelimit.lua").read_bytes()
