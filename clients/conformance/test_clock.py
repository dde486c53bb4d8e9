"""Servers that refuse TIME in scripts (clients/lua/README.md): an ACL that
refuses TIME to the client's user refuses it inside its scripts too (Redis
7 and later run a script with its caller's ACL; measured on Redis 7.0.15,
8.2, Valkey 8.1 and 9.1: `redis.pcall('TIME')` returns the error), and the
scripts answer `ERR ratelimit: TIME refused in scripts: ...`; the
backend then passes the server's clock (INFO server's server_time_usec
when TIME is refused outside scripts too), for the pool, for good. Forced
clocks. Two clients whose clocks are 2 s ahead and 2 s behind, on one
key, never admit more than the limit, every kind."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
import redis.asyncio
from harness import LUA_DIR, NO_TIME, NodeLua, server
from redis_ratelimit_client import lua_backend
from redis_ratelimit_client.lua_backend import TIME_REFUSED, execute, execute_async


class Recording(redis.Redis):
    """Records what it sends; TIME answered `skew_us` off the server's."""

    skew_us = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[Any, ...]] = []

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent.append(args)
        run: Callable[..., Any] = super().execute_command
        reply = run(*args, **options)
        if args[0] == "TIME" and self.skew_us:
            us = int(reply[0]) * 1_000_000 + int(reply[1]) + self.skew_us
            return (us // 1_000_000, us % 1_000_000)
        return reply

    def heads(self) -> list[bytes]:
        return [a[3 + a[2]] for a in self.sent if a[0] in ("EVALSHA", "EVAL")]


def test_an_acl_that_refuses_time_sends_the_backend_to_info_servers_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lua_backend, "CLOCK_REREAD_SECONDS", 60.0)
    with server("redis-server", faked=False, module=False) as srv:
        acl: Callable[..., Any] = srv.client.execute_command
        acl("ACL", "SETUSER", "default", "-time")
        r = Recording(port=srv.port)
        assert execute(r, "RL.SLIDE", "s", 10, 60, lua_dir=LUA_DIR) == [0, 10, 9, -1, 60]
        # The refusal, then INFO (TIME is refused outside scripts too), then the retry.
        names = [a[0] for a in r.sent]
        assert names == ["EVALSHA", "EVAL", "TIME", "INFO", "EVALSHA"], names
        first, retry = r.heads()[0], r.heads()[-1]
        assert first == b"" and retry.isdigit() and abs(int(retry) / 1e6 - time.time()) < 5
        # For good: the next calls pass the clock, read again only after 60 s.
        r.sent.clear()
        assert execute(r, "RL.THROTTLE", "t", 9, 10, 60, lua_dir=LUA_DIR)[:4] == [0, 10, 9, -1]
        assert execute(r, "RL.QUOTA", "q", 5, "DAY", "TZ", "Europe/Berlin", lua_dir=LUA_DIR)[:4] == [0, 5, 4, -1]
        assert [a[0] for a in r.sent] == ["EVALSHA", "EVAL", "EVALSHA", "EVAL"]
        assert all(h.split(b";")[0].isdigit() for h in r.heads())
        # Forced to the server's clock: the scripts' answer, as it is.
        with pytest.raises(redis.ResponseError) as e:
            execute(redis.Redis(port=srv.port), "RL.SLIDE", "s", 10, 60, lua_dir=LUA_DIR, clock="server")
        assert ("ERR " + str(e.value)).startswith(TIME_REFUSED + " ")

        async def main() -> Any:
            client = redis.asyncio.Redis(port=srv.port)
            try:
                return await execute_async(client, "RL.LEASE", "l", 2, 60, "a", lua_dir=LUA_DIR)
            finally:
                await client.aclose()

        assert asyncio.run(main()) == [0, 2, 1, -1, 60]
        node = NodeLua(srv.port)
        try:
            assert node.execute("RL.SLICE", "c", 10, 60, 6)[:4] == [0, 10, 9, -1]
            assert node.execute("RL.SLICE", "c", 10, 60, 6, clock="client")[:4] == [0, 10, 8, -1]
            with pytest.raises(redis.ResponseError) as e:
                node.execute("RL.SLICE", "c", 10, 60, 6, clock="server")
            assert str(e.value).startswith(TIME_REFUSED[4:])
        finally:
            node.close()


def test_clock_client_passes_the_servers_time_where_time_is_allowed() -> None:
    with server("redis-server", faked=False, module=False) as srv:
        r = Recording(port=srv.port)
        assert execute(r, "RL.SLIDE", "s", 10, 60, lua_dir=LUA_DIR, clock="client")[:3] == [0, 10, 9]
        # (INFO too when RL_LUA_NO_TIME=1 refuses TIME to every server's default user.)
        assert [a[0] for a in r.sent] == ["TIME", *(["INFO"] if NO_TIME else []), "EVALSHA", "EVAL"]
        assert r.heads()[0].isdigit()


# (command line with the key at [1], the limit no call may pass): each kind,
# and RL.ALLOW with two.
KINDS: list[tuple[list[Any], int]] = [
    (["RL.THROTTLE", "k", 9, 10, 3600], 10),
    (["RL.SLIDE", "k", 10, 3600], 10),
    (["RL.SLIDE", "k", 10, 3600, 1, "PRECISION", 60], 10),
    (["RL.SLICE", "k", 10, 3600, 60], 10),
    (["RL.QUOTA", "k", 10, "DAY"], 10),
    (["RL.QUOTA", "k", 10, "WEEK", "TZ", "Europe/Berlin"], 10),
    (["RL.ALLOW", 2, "{a}k", "{a}k2", "SLIDE", 10, 3600, "THROTTLE", 19, 20, 3600], 10),
]


def test_two_clients_2_s_apart_never_admit_more_than_the_limit() -> None:
    with server("redis-server", faked=False, module=False) as srv:
        ahead, behind = Recording(port=srv.port), Recording(port=srv.port)
        ahead.skew_us, behind.skew_us = 2_000_000, -2_000_000
        for line, limit in KINDS:
            srv.client.flushall()
            admitted = 0
            for i in range(3 * limit):
                who = ahead if i % 2 else behind
                reply = execute(who, *line, lua_dir=LUA_DIR, clock="client")
                admitted += reply[0] == 0
            assert admitted == limit, (line, admitted)
        # Leases: at most `limit` held, whoever asks, under distinct ids.
        srv.client.flushall()
        held = 0
        for i in range(30):
            who = ahead if i % 2 else behind
            held += execute(who, "RL.LEASE", "k", 10, 3600, f"id{i}", lua_dir=LUA_DIR, clock="client")[0] == 0
        assert held == 10
        assert len([h for h in ahead.heads() + behind.heads() if not h.split(b";")[0].isdigit()]) == 0
