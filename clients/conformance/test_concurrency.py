"""The Lua backend under concurrency, and its replication.

50 clients on one key never admit more than the limit, for every kind and
for RL.ALLOW (each script runs atomically); with MAXWAIT the turns handed
out stay within the rate and the burst, and with BLOCK the first refusal
blocks the key, for as long as BLOCK says. A replica fed by the scripts
(effects replication) holds the master's data, expiries included."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, cast

import pytest
import redis
from harness import LUA_DIR, server
from redis_ratelimit_client.lua_backend import execute

CLIENTS = 50
CALLS = 4

CASES: dict[str, Callable[[int, int], list[Any]]] = {
    "throttle": lambda i, j: ["RL.THROTTLE", "k", 9, 1, 3600],
    "slide": lambda i, j: ["RL.SLIDE", "k", 10, 3600],
    "slide-precision": lambda i, j: ["RL.SLIDE", "k", 10, 3600, 1, "PRECISION", 60],
    "slice": lambda i, j: ["RL.SLICE", "k", 10, 3600, 4],
    "lease": lambda i, j: ["RL.LEASE", "k", 10, 3600, f"c{i}-{j}"],
    "quota": lambda i, j: ["RL.QUOTA", "k", 10, "YEAR", 1, "TZ", "Europe/Berlin"],
    "allow": lambda i, j: [
        "RL.ALLOW",
        3,
        "{k}1",
        "{k}2",
        "{k}3",
        "SLIDE",
        10,
        3600,
        "THROTTLE",
        29,
        1,
        3600,
        "LEASE",
        40,
        3600,
        "ID",
        f"c{i}-{j}",
    ],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fifty_clients_never_admit_more_than_the_limit(case: str) -> None:
    make = CASES[case]
    with server("redis-server", faked=False) as srv:
        allowed = []
        errors: list[Exception] = []
        start = threading.Barrier(CLIENTS)

        def client(i: int) -> None:
            r = redis.Redis(port=srv.port, protocol=2)
            try:
                start.wait()
                for j in range(CALLS):
                    reply = execute(r, *make(i, j), lua_dir=LUA_DIR)
                    if reply[0] == 0:
                        allowed.append(1)
            except Exception as e:  # noqa: BLE001 (reported by the test)
                errors.append(e)
            finally:
                r.close()

        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[:3]
        assert len(allowed) == 10, f"{case}: {len(allowed)} of {CLIENTS * CALLS} calls allowed, limit 10"


def fifty_clients(port: int, line: Callable[[int, int], list[Any]]) -> list[Any]:
    """Every reply of CLIENTS clients sending CALLS lines each at once."""
    replies: list[Any] = []
    errors: list[Exception] = []
    start = threading.Barrier(CLIENTS)

    def client(i: int) -> None:
        r = redis.Redis(port=port, protocol=2)
        try:
            start.wait()
            for j in range(CALLS):
                replies.append(execute(r, *line(i, j), lua_dir=LUA_DIR))
        except Exception as e:  # noqa: BLE001 (reported by the test)
            errors.append(e)
        finally:
            r.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert len(replies) == CLIENTS * CALLS
    return replies


@pytest.mark.parametrize("several", [False, True])
def test_fifty_clients_waiting_get_turns_within_rate_and_burst(several: bool) -> None:
    # One unit an hour, a burst of 10, MAXWAIT two hours: 10 turns at once,
    # then one at each of the next two hours (the waits, rounded up to the
    # second, of calls made within the same second), and every other call
    # refused with its own wait, past two hours.
    if several:
        line: Callable[[int, int], list[Any]] = lambda i, j: [
            "RL.ALLOW",
            2,
            "{k}1",
            "{k}2",
            "THROTTLE",
            9,
            1,
            3600,
            "THROTTLE",
            99,
            1,
            1,
            "MAXWAIT",
            7200,
        ]
    else:
        line = lambda i, j: ["RL.THROTTLE", "k", 9, 1, 3600, 1, "MAXWAIT", 7200]
    with server("redis-server", faked=False) as srv:
        replies = fifty_clients(srv.port, line)
        granted = sorted(r[3] for r in replies if r[0] == 0)
        refused = [r[3] for r in replies if r[0] == 1]
        assert granted == [0] * 10 + [3600, 7200], granted
        assert len(refused) == CLIENTS * CALLS - 12
        assert all(7200 < w <= 10800 for w in refused), sorted(set(refused))
        key = "{k}1" if several else "k"
        tat_ahead = dict(zip(*[iter(execute(srv.client, "RL.INSPECT", key, lua_dir=LUA_DIR))] * 2))[b"tat_ahead_ms"]
        assert 12 * 3600_000 - 1000 < tat_ahead <= 12 * 3600_000


@pytest.mark.parametrize("several", [False, True])
def test_fifty_clients_on_a_blocking_limit_admit_the_limit_then_are_blocked(several: bool) -> None:
    # SLIDE 10 per hour, BLOCK 2 hours (in ms): 10 allowed; the first refusal
    # blocks the key until two hours on, and every refusal answers that
    # (the limiter's own retry, an hour, is shorter): refusals during the
    # block do not extend it.
    if several:
        line: Callable[[int, int], list[Any]] = lambda i, j: [
            "RL.ALLOW",
            2,
            "{k}1",
            "{k}2",
            "SLIDE",
            10,
            3600_000,
            "BLOCK",
            7200_000,
            "THROTTLE",
            999,
            1,
            1000,
            "MS",
        ]
    else:
        line = lambda i, j: ["RL.SLIDE", "k", 10, 3600_000, 1, "MS", "BLOCK", 7200_000]
    with server("redis-server", faked=False) as srv:
        replies = fifty_clients(srv.port, line)
        allowed = [r for r in replies if r[0] == 0]
        refused = [r[3] for r in replies if r[0] == 1]
        assert len(allowed) == 10
        assert all(7200_000 - 2000 < w <= 7200_000 for w in refused), (min(refused), max(refused))
        key = "{k}1" if several else "k"
        fields = dict(zip(*[iter(execute(srv.client, "RL.INSPECT", key, lua_dir=LUA_DIR))] * 2))
        assert fields[b"units"] == 10
        ends = fields[b"blocked_until"] - int(time.time() * 1000)
        assert 7200_000 - 5000 < ends <= 7200_000
        if several:
            # The other limit allowed every call it saw and recorded only
            # the allowed ones.
            other = dict(zip(*[iter(execute(srv.client, "RL.INSPECT", "{k}2", lua_dir=LUA_DIR))] * 2))
            assert b"blocked_until" not in other and other[b"tat_ahead_ms"] <= 10_000


def snapshot(r: redis.Redis) -> dict[bytes, Any]:
    out: dict[bytes, Any] = {}
    run: Callable[..., Any] = r.execute_command
    for key in sorted(cast(list[bytes], r.keys("*"))):
        kind = r.type(key)
        if kind == b"string":
            value: Any = r.get(key)
        elif kind == b"list":
            value = r.lrange(key, 0, -1)
        elif kind == b"hash":
            value = sorted(r.hgetall(key).items())
        else:
            value = kind
        out[key] = (kind, value, run("PEXPIRETIME", key))
    return out


def test_a_replica_fed_by_the_scripts_holds_the_masters_data() -> None:
    with server("redis-server", faked=False) as master, server("redis-server", faked=False) as replica:
        replica.client.replicaof("127.0.0.1", master.port)
        deadline = time.monotonic() + 10
        while replica.client.info("replication")["master_link_status"] != "up":
            assert time.monotonic() < deadline, "the replica did not connect"
            time.sleep(0.05)
        r = master.client
        for i in range(30):
            execute(r, "RL.THROTTLE", "t", 4, 3, 1, lua_dir=LUA_DIR)
            execute(r, "RL.SLIDE", "s", 20, 60, 1 + i % 3, lua_dir=LUA_DIR)
            execute(r, "RL.SLIDE", "p", 20, 60, 1, "PRECISION", 1, lua_dir=LUA_DIR)
            execute(r, "RL.SLICE", "c", 20, 60, 6, lua_dir=LUA_DIR)
            execute(r, "RL.LEASE", "l", 5, 60, f"id{i % 7}", lua_dir=LUA_DIR)
            execute(r, "RL.QUOTA", "q", 20, "DAY", "TZ", "Asia/Kolkata", lua_dir=LUA_DIR)
            if i % 5 == 0:
                execute(r, "RL.REFUND", "s", "SLIDE", 20, 60, 2, lua_dir=LUA_DIR)
                execute(r, "RL.RELEASE", "l", f"id{i % 7}", lua_dir=LUA_DIR)
            execute(r, "RL.ALLOW", 2, "{a}1", "{a}2", "SLIDE", 10, 60, "QUOTA", 15, "HOUR", lua_dir=LUA_DIR)
        assert r.wait(1, 5000) == 1
        want = snapshot(r)
        assert len(want) == 8
        assert snapshot(replica.client) == want
        # RL.PEEK and RL.INSPECT are read-only scripts: they answer on the
        # replica what they answer on the master.
        # (Replies whose figures do not move within the second the calls
        # take; the ttl of RL.INSPECT is masked.)
        for line in (
            ["RL.PEEK", 1, "{a}1", "SLIDE", 10, 3600],
            ["RL.INSPECT", "q"],
        ):
            on_master = execute(r, *line, lua_dir=LUA_DIR)
            on_replica = execute(replica.client, *line, lua_dir=LUA_DIR)
            if line[0] == "RL.INSPECT":
                on_master[3] = on_replica[3] = on_master[5] = on_replica[5] = "*"
            assert on_replica == on_master
        with pytest.raises(redis.ResponseError):
            execute(replica.client, "RL.SLIDE", "s", 20, 60, lua_dir=LUA_DIR)
