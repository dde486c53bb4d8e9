"""The memory measurements: per key, per recorded unit, with PRECISION, at
60 slices."""

from __future__ import annotations

import time

from .regimes import MEMORY_LIMIT, MEMORY_WINDOW_S, SLICES, UNIT_LIMIT, BenchError
from .resp import Client, ReplyError
from .rows import Row
from .runner import Bench, allowed_count, fill_keys

def used_memory(con: Client) -> int:
    return int(con.info("memory")["used_memory"])


def memory_per_key(b: Bench, row: Row, keys: int) -> dict:
    con = b.con
    con.call("FLUSHALL", "SYNC")
    time.sleep(0.05)
    before = used_memory(con)
    cmds = [row.args("rl:%012d" % i, MEMORY_LIMIT, MEMORY_WINDOW_S) for i in range(keys)]
    replies = fill_keys(b.server.port, cmds)
    errors = [r for r in replies if isinstance(r, ReplyError)]
    time.sleep(0.05)
    after = used_memory(con)
    dbsize = con.call("DBSIZE")
    expiring = int(con.info("keyspace").get("db0", "expires=0").split("expires=")[1].split(",")[0]) if dbsize else 0
    # MEMORY USAGE of the first key (SAMPLES 0: every element counted).
    usage = con.call("MEMORY", "USAGE", "rl:%012d" % 0, "SAMPLES", "0") if dbsize else None
    result = {
        "keys": keys,
        "memory_usage": usage,
        "dbsize": dbsize,
        "with_expiry": expiring,
        "bytes_per_key": (after - before) / keys,
        "errors": len(errors),
    }
    if errors:
        result["first_error"] = str(errors[0])
    return result


def memory_per_unit(b: Bench, rows: dict, sizes) -> dict:
    con = b.con
    limit = UNIT_LIMIT
    out = {"limit": limit, "window_s": 3600, "sizes": {}}
    for n in sizes:
        con.call("FLUSHALL", "SYNC")
        entry = {}
        for name in ("RL.SLIDE", "lua:zset_log"):
            row = rows[name]
            key = "u:%s" % row.id
            replies = fill_keys(b.server.port, [row.args(key, limit, 3600) for _ in range(n)])
            admitted = allowed_count(replies)
            usage = con.call("MEMORY", "USAGE", key, "SAMPLES", "0")
            entry[name] = {
                "units": admitted,
                "memory_usage": usage,
                "bytes_per_unit": usage / admitted if usage and admitted else None,
            }
            if name == "lua:zset_log":
                entry[name]["zcard"] = con.call("ZCARD", key)
        out["sizes"][str(n)] = entry
    lo, hi = str(min(sizes)), str(max(sizes))
    for name in ("RL.SLIDE", "lua:zset_log"):
        a, z = out["sizes"][lo][name], out["sizes"][hi][name]
        if a["memory_usage"] and z["memory_usage"] and z["units"] > a["units"]:
            out.setdefault("marginal_bytes_per_unit", {})[name] = (z["memory_usage"] - a["memory_usage"]) / (
                z["units"] - a["units"]
            )
    return out


def inspect_field(con: Client, key: str, name: str):
    fields = con.call("RL.INSPECT", key)
    for i in range(0, len(fields) - 1, 2):
        if fields[i] in (name, name.encode()):
            return fields[i + 1]
    return None


def memory_precision(b: Bench, units: int) -> dict:
    """RL.SLIDE with and without PRECISION on a high-limit key (see the
    module doc of this script)."""
    con = b.con
    con.call("FLUSHALL", "SYNC")
    out = {"limit": UNIT_LIMIT, "window_s": 3600, "precision_s": 36, "units": units}
    for key, option in (("p:prec", ["PRECISION", 36]), ("p:exact", [])):
        replies = fill_keys(b.server.port, [["RL.SLIDE", key, UNIT_LIMIT, 3600] + option for _ in range(units)])
        out[key] = {
            "admitted": allowed_count(replies),
            "entries": inspect_field(con, key, "entries"),
            "memory_usage": con.call("MEMORY", "USAGE", key, "SAMPLES", "0"),
        }
    start = time.monotonic()
    calls = 100
    for _ in range(calls):
        r = con.call("RL.SLIDE", "p:minute", UNIT_LIMIT, 36000, 1000, "MS", "PRECISION", 360)
        if isinstance(r, ReplyError) or r[0] != 0:
            raise BenchError("precision minute: %s" % r)
        time.sleep(0.006)
    out["scaled_minute"] = {
        "window_ms": 36000,
        "precision_ms": 360,
        "calls": calls,
        "units_per_call": 1000,
        "span_ms": (time.monotonic() - start) * 1000,
        "units": inspect_field(con, "p:minute", "units"),
        "entries": inspect_field(con, "p:minute", "entries"),
        "memory_usage": con.call("MEMORY", "USAGE", "p:minute", "SAMPLES", "0"),
    }
    return out


def memory_slices(b: Bench, rows: dict) -> dict:
    """Fills every slice of a 60-slice window of 1,200 ms (20 ms slices) by
    calling both limiters every ~4 ms for 1.3 s, then reads MEMORY USAGE."""
    con = b.con
    con.call("FLUSHALL", "SYNC")
    window_ms, limit = 1200, 1_000_000
    rl = ["RL.SLICE", "s:rl", limit, window_ms, SLICES, 1, "MS"]
    lua = rows["lua:hash_slices"].args("s:lua", limit, 1)  # window 1 s; fixed below
    lua[-2] = str(window_ms)  # EVALSHA sha 1 key limit window_ms slices
    calls = 0
    start = time.monotonic()
    while time.monotonic() - start < (window_ms + 100) / 1000:
        for r in con.pipeline([rl, lua]):
            if isinstance(r, ReplyError):
                raise BenchError("error while filling slices: %s" % r)
        calls += 1
        time.sleep(0.004)
    return {
        "window_ms": window_ms,
        "slices": SLICES,
        "calls_each": calls,
        "RL.SLICE": {"memory_usage": con.call("MEMORY", "USAGE", "s:rl", "SAMPLES", "0")},
        "lua:hash_slices": {
            "memory_usage": con.call("MEMORY", "USAGE", "s:lua", "SAMPLES", "0"),
            "fields": con.call("HLEN", "s:lua"),
        },
    }


