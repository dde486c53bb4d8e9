"""lua_backend's own promises: what it sends, EVALSHA with EVAL once on
NOSCRIPT, the asyncio twin, errors as ResponseError with the module's
text, RL.INSPECT as a map under RESP3, and the head argument."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
import redis
import redis.asyncio
from harness import FAKED_SERVER, LUA_DIR, NO_TIME, ROOT, server
from redis_ratelimit_client.lua_backend import execute, execute_async, head, script_source


def test_the_head() -> None:
    at = 1774744200.0  # 2026-03-29 00:30 UTC
    lo = 1774744200 - 400 * 86400
    assert head([b"100", b"DAY"], None, at) == b""
    assert head([b"100", b"DAY"], 1774744200123456, at) == b"1774744200123456"
    # Europe/Berlin: off0 at lo (2025-02-22), then each change of the last
    # Sundays of March and October at 01:00 UTC up to now + 400 days.
    berlin = (
        f";europe/berlin|Europe/Berlin|{lo}|3600|1743296400|7200|1761440400|3600|1774746000|7200"
        "|1792890000|3600|1806195600|7200"
    )
    assert head([b"100", b"DAY", b"TZ", b"europe/berlin"], None, at).decode() == berlin
    # Once per distinct value, any TZ word; none for what the database does
    # not know (the script reads UTC and fixed offsets itself).
    line = [b"2", b"QUOTA", b"1", b"DAY", b"TZ", b"europe/berlin", b"QUOTA", b"1", b"HOUR", b"tz", b"europe/berlin"]
    assert head(line, None, at).decode() == berlin
    for value in (b"UTC", b"utc", b"+05:30", b"Moon/Base", b"\xff"):
        assert head([b"1", b"DAY", b"TZ", value], 5, at) == b"5"
    assert head([b"1", b"DAY", b"TZ"], None, at) == b""
    assert head([b"TZ", b"Asia/Kolkata"], None, at).decode() == f";Asia/Kolkata|Asia/Kolkata|{lo}|19800"


def test_what_is_sent_keys_once_and_the_head_first() -> None:
    sent: list[tuple[Any, ...]] = []

    class Recording(redis.Redis):
        def execute_command(self, *args: Any, **options: Any) -> Any:
            sent.append(args)
            run: Callable[..., Any] = super().execute_command
            return run(*args, **options)

    with server("redis-server", faked=False) as srv:
        r = Recording(port=srv.port)
        line: list[str | int] = [
            "RL.ALLOW",
            2,
            "{u}a",
            "{u}b",
            "SLIDE",
            1,
            60,
            "QUOTA",
            1,
            "DAY",
            "TZ",
            "Europe/Berlin",
        ]
        reply = execute(r, *line, lua_dir=LUA_DIR)
        assert reply[:4] == [0, 1, 0, -1] and reply[5] == 2  # the day's quota binds: the latest reset
        assert execute(r, "RL.INSPECT", "x", lua_dir=LUA_DIR) is None  # no key: nil, as the module
        with pytest.raises(redis.ResponseError) as e:
            execute(r, "RL.ALLOW", "many", "a", "SLIDE", 1, 1, lua_dir=LUA_DIR)
        assert str(e.value) == "numkeys must be an integer from 1 to 16"
        # The last three (with RL_LUA_NO_TIME=1, the first is refused TIME and
        # sent again with the clock, which then leads every head).
        allow, inspect, bad = [c[2:] for c in sent if c[0] == "EVALSHA"][-3:]
        clocks = [c[1 + c[0]].split(b";")[0] for c in (allow, inspect, bad)]
        assert all(k.isdigit() for k in clocks) if NO_TIME else clocks == [b"", b"", b""]

        def unclocked(c: tuple[Any, ...], k: bytes) -> tuple[Any, ...]:
            return (*c[: 1 + c[0]], c[1 + c[0]][len(k) :], *c[2 + c[0] :])

        allow, inspect, bad = (unclocked(c, k) for c, k in zip((allow, inspect, bad), clocks))
        assert allow[:3] == (2, b"{u}a", b"{u}b")
        assert allow[3].startswith(b";Europe/Berlin|Europe/Berlin|")
        assert allow[4:] == (b"2", b"SLIDE", b"1", b"60", b"QUOTA", b"1", b"DAY", b"TZ", b"Europe/Berlin")
        assert inspect == (1, b"x", b"")
        assert bad == (0, b"", b"many", b"a", b"SLIDE", b"1", b"1")


def test_noscript_falls_back_to_eval_once_and_errors_carry_the_modules_text() -> None:
    with server("redis-server", faked=False) as srv:
        r = srv.client
        r.script_flush()
        assert execute(r, "RL.SLIDE", "k", 10, 3600, lua_dir=LUA_DIR) == [0, 10, 9, -1, 3600]
        import hashlib

        sha = hashlib.sha1(script_source("RL.SLIDE", lua_dir=LUA_DIR)).hexdigest()
        assert r.script_exists(sha) == [True]
        with pytest.raises(redis.ResponseError) as e:
            execute(r, "RL.SLIDE", "k", 10, -1, lua_dir=LUA_DIR)
        assert str(e.value) == "window must be an integer from 1 to 315360000 (seconds)"
        run: Callable[..., Any] = r.execute_command
        r.set("s", "x")
        with pytest.raises(redis.ResponseError) as e:
            execute(r, "RL.SLIDE", "s", 10, 60, lua_dir=LUA_DIR)
        with pytest.raises(redis.ResponseError) as m:
            run("RL.SLIDE", "s", 10, 60)
        assert str(e.value) == str(m.value)


def test_a_refund_keeps_a_throttle_keys_later_expiry_until_its_tat_passes_it() -> None:
    # The scripts move a G| key's expiry to its TAT's ms without asking the
    # key; a refund that keeps a later expiry writes the state as g|...,
    # which the full code handles until a new TAT passes that expiry.
    with server(FAKED_SERVER, faked=True) as srv:
        r = srv.client
        run: Callable[..., Any] = r.execute_command

        def both(second: int, *line: Any) -> Any:
            srv.set_clock(f"2026-05-01 12:00:{second:02d}.000000")
            module = run(line[0], "m", *line[1:])
            lua = execute(r, line[0], "l", *line[1:], lua_dir=LUA_DIR)
            assert lua == module
            assert r.pexpiretime("l") == r.pexpiretime("m")
            return r.get("l")

        for second in range(5):
            assert both(second, "RL.THROTTLE", 9, 1, 60).startswith(b"G|")
        assert both(5, "RL.REFUND", "THROTTLE", 9, 1, 60, 4).startswith(b"g|")
        assert both(6, "RL.THROTTLE", 9, 1, 60).startswith(b"g|")
        assert both(7, "RL.THROTTLE", 9, 1, 60, 0).startswith(b"g|")
        for second in range(8, 11):
            both(second, "RL.THROTTLE", 9, 1, 60)
        assert both(11, "RL.THROTTLE", 9, 1, 60, 2).startswith(b"G|")
        assert both(12, "RL.THROTTLE", 9, 1, 60, 20) is not None  # limited: more than the burst
        assert both(13, "RL.INSPECT")


def test_the_asyncio_twin_and_resp3_maps() -> None:
    with server(FAKED_SERVER, faked=True) as srv:
        srv.set_clock("2026-05-01 12:00:00.000000")
        r3 = redis.Redis(port=srv.port, protocol=3)
        run: Callable[..., Any] = r3.execute_command
        run("RL.LEASE", "m", 5, 3600, "a", 2)
        execute(r3, "RL.LEASE", "l", 5, 3600, "a", 2, lua_dir=LUA_DIR)
        module = run("RL.INSPECT", "m")
        lua = execute(r3, "RL.INSPECT", "l", lua_dir=LUA_DIR)
        assert isinstance(module, dict) and isinstance(lua, dict)
        module.pop(b"memory")
        lua.pop(b"memory")
        assert lua == module
        # The command's name as bytes, too.
        named = execute(r3, b"rl.inspect", "l", lua_dir=LUA_DIR)
        assert isinstance(named, dict) and named.pop(b"memory") is not None and named == module

        async def main() -> list[Any]:
            client = redis.asyncio.Redis(port=srv.port, protocol=3)
            try:
                out = [await execute_async(client, "RL.LEASE", "l", 5, 3600, "b", 2, lua_dir=LUA_DIR)]
                out.append(await execute_async(client, "RL.INSPECT", "l", lua_dir=LUA_DIR))
                with pytest.raises(redis.ResponseError):
                    await execute_async(client, "RL.LEASE", "l", 5, 3600, "", lua_dir=LUA_DIR)
                return out
            finally:
                await client.aclose()

        granted, inspected = asyncio.run(main())
        assert granted == [0, 5, 1, -1, 3600]
        assert isinstance(inspected, dict) and inspected[b"held"] == 4
        r3.close()


def test_large_states_answer_alike() -> None:
    # Keys with thousands of units, slices and leases, rebucketed, expired
    # at once and refunded: both backends, the same replies throughout.
    from datetime import datetime, timedelta

    t0 = datetime(2026, 5, 1, 12, 0, 0)
    with server(FAKED_SERVER, faked=True) as srv:
        run: Callable[..., Any] = srv.client.execute_command
        seen = 0

        def both(at: float, *cmd: Any) -> Any:
            nonlocal seen
            when = t0 + timedelta(seconds=at)
            srv.set_clock(when.strftime("%Y-%m-%d %H:%M:%S.%f"))
            module = run(cmd[0], "m" + str(cmd[1]), *cmd[2:])
            lua = execute(srv.client, cmd[0], "l" + str(cmd[1]), *cmd[2:], lua_dir=LUA_DIR, now=when.timestamp())
            if cmd[0] == "RL.INSPECT":
                module[5] = lua[5] = "*"
            assert lua == module, (at, cmd)
            seen += 1
            return module

        for i in range(1500):
            both(i * 0.01, "RL.SLICE", "c", 100000, 1500, 1500)
        both(60.5, "RL.INSPECT", "c")
        both(61, "RL.SLICE", "c", 100000, 6000, 7, 1)
        both(61, "RL.INSPECT", "c")
        for i in range(1500):
            both(100 + i * 0.0001, "RL.LEASE", "l", 100000, 1, f"lease-{i}")
        both(102, "RL.LEASE", "l", 100000, 1, "late")
        both(102, "RL.INSPECT", "l")
        for i in range(1500):
            both(200 + i * 0.0001, "RL.SLIDE", "s", 100000, 1, 1 + i % 4)
        both(200.95, "RL.REFUND", "s", "SLIDE", 100000, 1, 2000)
        both(200.95, "RL.INSPECT", "s")
        both(202, "RL.SLIDE", "s", 100000, 1)
        both(202, "RL.INSPECT", "s")
        assert seen > 4500


def hfield(r: redis.Redis, field: str) -> bytes:
    value = r.hget("l", field)
    assert isinstance(value, bytes), (field, value)
    return value


def test_a_lease_key_of_the_older_layout_keeps_working_and_gains_its_header() -> None:
    # Keys written before field H (the leases' units, earliest and latest
    # expiry) are read whole, as before, and get H at their next write.
    with server("redis-server", faked=False) as srv:
        r = srv.client
        now = int(r.info("server")["server_time_usec"])
        a, b = now + 30_000_000, now + 50_000_000
        r.hset("l", mapping={"L": "1", "#a": f"{a}|2", "#b": f"{b}|1"})
        r.pexpireat("l", b // 1000 + 1)
        reply = execute(r, "RL.LEASE", "l", 5, 60, "c", lua_dir=LUA_DIR)
        assert reply[:4] == [0, 5, 1, -1] and reply[4] in (59, 60)
        held, lo, hi = (int(x) for x in hfield(r, "H").split(b"|"))
        c = int(hfield(r, "#c").split(b"|")[0])
        assert (held, lo, hi) == (4, a, c)
        # Now decided from H: the units add up, the reset is the latest expiry.
        assert execute(r, "RL.LEASE", "l", 5, 60, "d", lua_dir=LUA_DIR)[:4] == [0, 5, 0, -1]
        assert execute(r, "RL.LEASE", "l", 5, 60, "e", lua_dir=LUA_DIR)[:3] == [1, 5, 0]
        assert hfield(r, "H").split(b"|")[0] == b"5"
        # A release drops H; the next write makes it again from every lease.
        assert execute(r, "RL.RELEASE", "l", "a", lua_dir=LUA_DIR) == 1
        assert r.hexists("l", "H") == 0
        assert execute(r, "RL.LEASE", "l", 5, 60, "e", 2, lua_dir=LUA_DIR)[:4] == [0, 5, 0, -1]
        assert hfield(r, "H").split(b"|")[0] == b"5"
        inspect = execute(r, "RL.INSPECT", "l", lua_dir=LUA_DIR)
        assert inspect[inspect.index(b"held") + 1] == 5 and inspect[inspect.index(b"leases") + 1] == 4


def test_a_slice_key_of_the_older_layout_keeps_working_and_gains_its_total() -> None:
    # Keys written before the header's total and field count
    # (window|slices|head only) are read whole, as before, and get both at
    # their next write; the calls after it read the header and the slices
    # that leave, and answer the same.
    with server("redis-server", faked=False) as srv:
        r = srv.client
        # 60 s in 60 slices: slice j is Unix second j (INFO's clock: TIME may
        # be refused, RL_LUA_NO_TIME=1)
        idx = int(r.info("server")["server_time_usec"]) // 1_000_000
        r.hset("s", mapping={"S": f"60000000|60|{idx}", str(idx - 5): "2", str(idx): "3"})
        r.pexpireat("s", (idx + 56) * 1000)
        reply = execute(r, "RL.SLICE", "s", 10, 60, 60, lua_dir=LUA_DIR)
        assert reply[:4] == [0, 10, 4, -1]
        header = r.hget("s", "S")
        assert isinstance(header, bytes)
        w, n, head, total, fields = (int(x) for x in header.split(b"|"))
        assert (w, n, total) == (60_000_000, 60, 6) and head >= idx
        assert fields == (2 if head == idx else 3) == r.hlen("s") - 1
        # Decided from the header now: the units add up.
        assert execute(r, "RL.SLICE", "s", 10, 60, 60, lua_dir=LUA_DIR)[:4] == [0, 10, 3, -1]
        assert execute(r, "RL.SLICE", "s", 10, 60, 60, 5, lua_dir=LUA_DIR)[:3] == [1, 10, 3]
        header = r.hget("s", "S")
        assert isinstance(header, bytes) and header.split(b"|")[3] == b"7"
        inspect = execute(r, "RL.INSPECT", "s", lua_dir=LUA_DIR)
        assert inspect[inspect.index(b"units") + 1] == 7


def test_rl_top_answers_that_it_needs_the_module() -> None:
    # RL.TOP's manifest entry ("keys": "none": no keys, ARGV the head and
    # every argument) runs the script, which keeps no summary of refusals
    # and says so, whatever the arguments; read-only, it runs in EVAL_RO.
    dist = ROOT / "clients" / "lua" / "dist"
    entry = json.loads((dist / "manifest.json").read_text())["commands"]["RL.TOP"]
    assert entry["keys"] == "none" and entry["readonly"] is True
    source = entry["prefix"].encode() + (dist / "ratelimit.lua").read_bytes()
    with server("redis-server", faked=False, module=False) as srv:
        run: Callable[..., Any] = srv.client.execute_command
        for args in ([], ["COUNT", "5"], ["COUNT", "0"], ["x"]):
            for command in ("EVAL", "EVAL_RO"):
                with pytest.raises(redis.ResponseError) as e:
                    run(command, source, 0, "", *args)
                assert str(e.value) == "RL.TOP needs the module: the Lua backend keeps no summary of refusals"
        assert run("DBSIZE") == 0
