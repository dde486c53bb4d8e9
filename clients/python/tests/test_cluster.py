"""A 3-master cluster on loopback, with the module and without it (the Lua
backend's scripts): the clients route each command to its key's master;
the middlewares group a policy's keys by hash slot, one RL.ALLOW per slot,
and give back the earlier groups' units when a later group refuses."""

from __future__ import annotations

from typing import Any, Dict

import pytest
import redis
import redis.asyncio
from apps import Driver
from conftest import Cluster

from redis_ratelimit_client import (
    ArgumentError,
    AsyncRateLimiter,
    Policy,
    RateLimiter,
    Rule,
    Slide,
    SlideState,
    Throttle,
    lua_backend,
)
from redis_ratelimit_client.policy import slot_groups


def key_on_each_master(cluster: Cluster, base: str) -> Dict[int, str]:
    """A key per master, found with CLUSTER KEYSLOT (the node that answers
    for it)."""
    found: Dict[int, str] = {}
    nodes = [n.client() for n in cluster.nodes]
    ranges = [(0, 5460), (5461, 10922), (10923, 16383)]
    i = 0
    while len(found) < 3:
        key = f"{base}{i}"
        slot = int(nodes[0].execute_command("CLUSTER", "KEYSLOT", key))
        owner = next(n for n, (a, b) in enumerate(ranges) if a <= slot <= b)
        found.setdefault(owner, key)
        i += 1
    return found


def test_slot_groups_match_cluster_keyslot(cluster: Cluster) -> None:
    node = cluster.nodes[0].client()
    keys = ["rl:{user:42}:s", "rl:{user:42}:m", "rl:ip:1", "foo", "{}x", "a{b}c", "a{}{b}"]
    slots = [int(node.execute_command("CLUSTER", "KEYSLOT", k)) for k in keys]
    groups = slot_groups(keys)
    for group in groups:
        assert len({slots[i] for i in group}) == 1
    assert len(groups) == len(set(slots))
    assert groups[0] == [0, 1]


def backend_kind(cluster: Cluster) -> str:
    return "module" if cluster.module else "lua"


def test_commands_on_a_cluster(cluster: Cluster) -> None:
    rc = redis.RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    limiter = RateLimiter(rc)
    keys = key_on_each_master(cluster, "rl:c:")
    for owner, key in keys.items():
        assert limiter.slide(key, 5, 60).remaining == 4
        state = limiter.inspect(key)
        assert isinstance(state, SlideState) and state.units == 1
        # The key lives on the master that owns its slot, and only there.
        slot = rc.keyslot(key)
        held = [n.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
                for n in cluster.nodes]
        assert held == [1 if i == owner else 0 for i in range(3)], (key, held)
    assert limiter.backend.kind == backend_kind(cluster)
    # RESP3: RL.INSPECT's map (the Lua backend builds it from the script's array).
    rc3 = redis.RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port, protocol=3)
    state3 = RateLimiter(rc3).inspect(keys[0])
    assert isinstance(state3, SlideState) and state3.units == 1
    rc3.close()
    got = limiter.allow([("rl:{u1}:a", Slide(2, 60)), ("rl:{u1}:b", Throttle(4, 5, 60))])
    assert not got.limited and got.index == 1
    rc.close()


def test_keys_of_two_slots_in_one_call_are_refused(cluster: Cluster) -> None:
    """RL.ALLOW over keys of different slots: a cluster cannot run it on one
    node, whichever backend answers; nothing is recorded."""
    keys = key_on_each_master(cluster, "rl:x:")
    node = cluster.nodes[0].client()
    args = [2, keys[0], keys[1], "SLIDE", 5, 60, "SLIDE", 5, 60]
    if cluster.module:
        with pytest.raises(redis.ResponseError, match="same slot"):
            node.execute_command("RL.ALLOW", *args)
    else:
        with pytest.raises(redis.ResponseError, match="same slot"):
            lua_backend.execute(node, "RL.ALLOW", *args)
    for key in (keys[0], keys[1]):
        slot = int(node.execute_command("CLUSTER", "KEYSLOT", key))
        assert [n.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
                for n in cluster.nodes] == [0, 0, 0]


async def test_async_commands_on_a_cluster(cluster: Cluster) -> None:
    rc = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    limiter = AsyncRateLimiter(rc)
    for key in key_on_each_master(cluster, "rl:ac:").values():
        assert (await limiter.throttle(key, 1, 1, 60)).remaining == 1
    assert (await limiter.peek([("rl:{u2}:a", Slide(2, 60))])).remaining == 1
    assert (await limiter.get_backend()).kind == backend_kind(cluster)
    await rc.aclose()


@pytest.mark.parametrize("kind", ["asgi", "wsgi"])
def test_middleware_groups_by_slot_and_gives_back(cluster: Cluster, kind: str) -> None:
    keys = key_on_each_master(cluster, f"rl:{kind}:")
    first, second, third = keys[0], keys[1], keys[2]
    policy = Policy([Rule("a", first, Slide(10, 60)), Rule("b", second, Slide(10, 60)),
                     Rule("c", third, Slide(1, 60))])
    rc = redis.RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    limiter = RateLimiter(rc)
    d = Driver(kind, policy, cluster.nodes[0].port, cluster=True, timeout=2.0)
    try:
        ok = d.get("/")
        refused = d.get("/")
    finally:
        d.close()
    assert ok[0] == 200, ok
    assert refused[0] == 429
    assert refused[1]["ratelimit"] == '"c";r=0;t=60'
    units: Any = [getattr(limiter.inspect(k), "units", None) for k in (first, second, third)]
    assert units == [1, 1, 1]  # the refused request's units were given back
    rc.close()


def test_settle_and_top_on_a_cluster(cluster: Cluster) -> None:
    """settle's pipeline over keys of every master (a cluster pipeline);
    RL.TOP asks every master and merges their answers."""
    rc = redis.RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    limiter = RateLimiter(rc)
    keys = key_on_each_master(cluster, "rl:settle:")
    minute = Slide(100, 60)
    entries = [(key, minute) for key in keys.values()]
    for key, _ in entries:
        limiter.allow({key: minute}, quantity=10)
    got = limiter.settle(entries, 10, [4, 10, 30])
    assert [g.remaining if g else None for g in got] == [96, None, 70]
    for key in keys.values():
        for _ in range(3):
            limiter.slide(key + ":t", 1, 60)
    if cluster.module:
        top = limiter.top(128)
        assert {key + ":t" for key in keys.values()} <= {e.key for e in top}
        counts = [e.refusals for e in top]
        assert counts == sorted(counts, reverse=True)
    else:
        with pytest.raises(ArgumentError, match="needs the module"):
            limiter.top()
    rc.close()
