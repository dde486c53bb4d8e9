"""Every command through the synchronous and the asyncio client, against a
real server with the module; the typed results and errors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, List, Sequence

import pytest
import redis
import redis.asyncio
from conftest import ROOT, Server

import redis_ratelimit_client as rl
from redis_ratelimit_client import (
    AllowResult,
    ArgumentError,
    AsyncRateLimiter,
    Lease,
    ModuleNotLoadedError,
    Quota,
    RateLimiter,
    Result,
    Slice,
    Slide,
    Throttle,
    WrongTypeError,
)
from redis_ratelimit_client._errors import name_argument


def test_the_installed_package_is_tested_not_the_source_tree() -> None:
    source = ROOT / "clients" / "python" / "src"
    assert source not in Path(rl.__file__).resolve().parents, rl.__file__
    assert "site-packages" in rl.__file__


def test_version_is_the_modules() -> None:
    cargo = (ROOT / "Cargo.toml").read_text()
    m = re.search(r'^version = "([^"]+)"', cargo, re.M)
    assert m is not None
    assert rl.__version__ == m.group(1)
    from importlib.metadata import version

    assert version("redis-ratelimit-client") == m.group(1)


def test_throttle(r: redis.Redis) -> None:
    limiter = RateLimiter(r)
    got = [limiter.throttle("rl:alice", 2, 1, 60) for _ in range(4)]
    assert got[0] == Result(False, 3, 2, -1, 60)
    assert got[0].allowed and not got[0].limited
    assert got[3] == Result(True, 3, 0, 60, 180)
    ms = limiter.throttle("rl:ms", 0, 3, 1000, ms=True)
    assert ms == Result(False, 1, 0, -1, 334, ms=True)
    assert limiter.throttle("rl:t", 15, 30, 60, 20) == Result(True, 16, 16, -1, 0)


def test_slide_slice_quota(r: redis.Redis) -> None:
    limiter = RateLimiter(r)
    assert limiter.slide("rl:s", 10, 60) == Result(False, 10, 9, -1, 60)
    assert limiter.slide("rl:p", 100000, 3600, precision=36) == Result(False, 100000, 99999, -1,
                                                                        3600)
    got = limiter.slice("rl:x", 100, 60, 12)
    assert (got.limited, got.limit, got.remaining, got.retry_after) == (False, 100, 99, -1)
    assert 61 <= got.reset_after <= 65
    q = limiter.quota("rl:q", 1000, "DAY", tz="America/Sao_Paulo")
    assert (q.limited, q.limit, q.remaining) == (False, 1000, 999)
    assert 1 <= q.reset_after <= 86400
    assert limiter.quota("rl:q", 1000, "DAY", 999, tz="America/Sao_Paulo").remaining == 0
    assert limiter.quota("rl:q", 1000, "DAY", tz="America/Sao_Paulo").limited


def test_take_dispatches_by_kind(r: redis.Redis) -> None:
    limiter = RateLimiter(r)
    assert limiter.take("a", Throttle(2, 1, 60)).remaining == 2
    assert limiter.take("b", Slide(10, 60)).remaining == 9
    assert limiter.take("c", Slice(10, 60, 6), 3).remaining == 7
    assert limiter.take("d", Lease(2, 30), lease_id="x").remaining == 1
    assert limiter.take("e", Quota(5, "MONTH", tz="+05:30")).remaining == 4
    with pytest.raises(TypeError):
        limiter.take("d", Lease(2, 30))
    types = {k: r.type(k).decode() for k in "abcde"}
    assert types == {"a": "rl-gcra--", "b": "rl-slide-", "c": "rl-slice-", "d": "rl-lease-",
                     "e": "rl-quota-"}


def test_lease_release(r: redis.Redis) -> None:
    limiter = RateLimiter(r)
    assert limiter.lease("rl:pool", 3, 60, "a", 2) == Result(False, 3, 1, -1, 60)
    refused = limiter.lease("rl:pool", 3, 60, "b", 2)
    assert refused.limited and 59 <= refused.retry_after <= 60
    assert limiter.release("rl:pool", "a") is True
    assert limiter.release("rl:pool", "a") is False
    assert limiter.release("rl:pool", b"never") is False


def test_allow_peek_refund_inspect(r: redis.Redis) -> None:
    limiter = RateLimiter(r)
    policy = [("rl:user:7", Throttle(9, 10, 60)), ("rl:ip", Slide(2, 60)),
              ("rl:endpoint", Slice(1000, 60, 6))]
    limiter.allow(policy)
    limiter.allow([("rl:user:8", Throttle(9, 10, 60)), *policy[1:]])
    got = limiter.allow([("rl:user:42", Throttle(9, 10, 60)), *policy[1:]])
    assert isinstance(got, AllowResult)
    assert (got.limited, got.limit, got.remaining, got.retry_after, got.reset_after) == (
        True, 2, 0, 60, 60)
    assert got.index == 2
    assert got.binding == got.results[1] == Result(True, 2, 0, 60, 60)
    assert got.results[0] == Result(False, 10, 9, -1, 6)
    assert r.exists("rl:user:42") == 0
    peeked = limiter.peek([("rl:user:42", Throttle(9, 10, 60)), *policy[1:]])
    assert peeked.index == 2 and peeked.limited
    mapping = limiter.allow({"rl:{u}:s": Slide(10, 1), "rl:{u}:m": Slice(100, 60, 12)},
                            quantity=2)
    assert mapping.index == 1 and mapping.remaining == 8 and len(mapping.results) == 2

    state = limiter.inspect("rl:ip")
    assert isinstance(state, rl.SlideState)
    assert (state.type, state.units, state.entries) == ("slide", 2, 2)
    assert 59000 <= state.ttl <= 60000 and state.memory > 0
    assert limiter.inspect("rl:nothing") is None
    back = limiter.refund("rl:ip", Slide(2, 60), 5)
    assert back == Result(False, 2, 2, -1, 0)
    assert r.exists("rl:ip") == 0
    t = limiter.throttle("rl:alice", 2, 1, 60)
    assert limiter.refund("rl:alice", Throttle(2, 1, 60), 1).remaining == t.remaining + 1

    limiter.lease("rl:slots", 1, 60, "job-1")
    lease_peek = limiter.peek([("rl:slots", Lease(1, 60))])
    assert lease_peek.limited
    assert not limiter.peek([("rl:slots", Lease(1, 60))], lease_id="job-1").limited
    granted = limiter.allow([("rl:{t}:starts", Slide(10, 60)), ("rl:{t}:jobs", Lease(2, 30))],
                            lease_id="job-20", ms=False)
    assert not granted.limited


def test_inspect_every_kind(r: redis.Redis) -> None:
    limiter = RateLimiter(r)
    limiter.throttle("t", 1, 1, 1)
    limiter.slice("s", 10, 10, 2)
    limiter.lease("l", 2, 30, "a")
    limiter.quota("q", 10, "DAY", tz="Europe/Berlin")
    t = limiter.inspect("t")
    assert isinstance(t, rl.ThrottleState) and t.tat_ahead_ms > 0 and t.tat_unix_ms > 0
    s = limiter.inspect("s")
    assert isinstance(s, rl.SliceState)
    assert (s.window_ms, s.slices, s.units, len(s.counts)) == (10000, 2, 1, 3)
    lease = limiter.inspect("l")
    assert isinstance(lease, rl.LeaseState) and (lease.held, lease.leases) == (1, 1)
    assert lease.holders[0].lease_id == "a" and lease.holders[0].weight == 1
    q = limiter.inspect("q")
    assert isinstance(q, rl.QuotaState)
    assert (q.unit, q.zone, q.used) == ("day", "Europe/Berlin", 1) and q.end > q.start


def test_inspect_under_resp3(server: Server) -> None:
    client = redis.Redis(port=server.port, protocol=3)
    limiter = RateLimiter(client)
    limiter.slide("rl:resp3", 5, 60)
    state = limiter.inspect("rl:resp3")
    assert isinstance(state, rl.SlideState) and state.units == 1


ERRORS: List[Any] = [
    (lambda lim: lim.throttle("e", 9, 10, -60), "period", None),
    (lambda lim: lim.throttle("e", 10, 1, 315360000), "period", None),
    (lambda lim: lim.slide("e", 10, 60, 1, precision=3601), "PRECISION", None),
    (lambda lim: lim.slice("e", 100, 60, 0), "slices", None),
    (lambda lim: lim.quota("e", 10, "DAY", tz="Moon/Base"), "TZ", None),
    (lambda lim: lim.quota("e", 10, "FORTNIGHT"), "unit", None),
    (lambda lim: lim.lease("e", 2, 30, ""), "lease_id", None),
    (lambda lim: lim.throttle("e", 1, 1, 1, -1), "quantity", None),
    (lambda lim: lim.allow([("a", Throttle(1, 1, 1)), ("b", Slide(1, 0))]), "window", 2),
    (lambda lim: lim.allow([("a", Slide(1, 1)), ("a", Slide(1, 1))]), "key", None),
    (lambda lim: lim.allow([("a", Slide(1, 1)), ("b", Lease(5, 30))]), "ID", None),
    (lambda lim: lim.allow([("a", Slide(1, 1))], lease_id="x"), "ID", None),
    (lambda lim: lim.allow([("a", Slide(1, 1)), ("b", Quota(5, "DAY", "Moon/Base"))]), "TZ", 2),
    (lambda lim: lim.allow([]), None, None),  # the arity error
    (lambda lim: lim.refund("e", Lease(1, 60), 1), "spec", None),
    (lambda lim: lim.allow([(f"k{i}", Slide(1, 1)) for i in range(17)]), "numkeys", None),
]


@pytest.mark.parametrize("call,argument,spec", ERRORS)
def test_errors_name_the_argument(r: redis.Redis, call: Any, argument: str, spec: Any) -> None:
    with pytest.raises(ArgumentError) as info:
        call(RateLimiter(r))
    assert info.value.argument == argument, info.value.message
    assert str(info.value) == info.value.message
    assert info.value.spec == spec, info.value.message
    assert isinstance(info.value, redis.ResponseError) and isinstance(info.value, ValueError)


def test_error_texts() -> None:
    cases = {
        "unknown argument 'SOON'": ("SOON", None),
        "spec 2: unknown algorithm 'LEAKY' (expected THROTTLE, SLIDE)": ("spec", 2),
        "spec 2 is missing: 2 keys need 2 specs": ("spec", 2),
        "spec 2 (QUOTA): expects limit unit [TZ value]": ("spec", 2),
        "QUANTITY is given more than once": ("QUANTITY", None),
        "MS is given more than once": ("MS", None),
        "wrong number of arguments for 'RL.SLIDE' command": (None, None),
        "RL.REFUND does not take a LEASE spec": ("spec", None),
        "max_burst must be an integer from 0 to 1000000000000": ("max_burst", None),
    }
    for text, want in cases.items():
        assert name_argument(text) == want, text


def test_wrongtype(r: redis.Redis) -> None:
    r.set("rl:string", "hello")
    limiter = RateLimiter(r)
    with pytest.raises(WrongTypeError):
        limiter.slide("rl:string", 10, 60)
    limiter.throttle("rl:t", 1, 1, 1)
    with pytest.raises(WrongTypeError):
        limiter.refund("rl:t", Slide(10, 60), 1)
    with pytest.raises(WrongTypeError):
        limiter.inspect("rl:string")


class Recorder:
    """A backend of the test's own: what the seam hands a backend."""

    kind = "recorder"

    def __init__(self) -> None:
        self.calls: List[Sequence[Any]] = []

    def call(self, name: str, args: Sequence[Any]) -> Any:
        self.calls.append((name, list(args)))
        return [0, 5, 4, -1, 1]


def test_a_backend_gets_the_module_command_line() -> None:
    backend = Recorder()
    limiter = RateLimiter(redis.Redis(port=1), backend=backend)
    assert limiter.slide("k", 5, 1, 2, ms=True, precision=3) == Result(False, 5, 4, -1, 1, True)
    limiter.quota("q", 5, "DAY", tz="UTC")
    assert backend.calls == [("SLIDE", ["k", 5, 1, 2, "MS", "PRECISION", 3]),
                             ("QUOTA", ["q", 5, "DAY", 1, "TZ", "UTC"])]


def test_detection_and_missing_module(server: Server) -> None:
    assert rl.detect_prefix(server.client()) == "RL"
    plain = Server(module=False)
    try:
        with pytest.raises(ModuleNotLoadedError, match="not loaded"):
            RateLimiter(plain.client(), backend="module").throttle("k", 1, 1, 1)
        with pytest.raises(ValueError, match="unknown backend"):
            RateLimiter(plain.client(), backend="lau").throttle("k", 1, 1, 1)
        # Without the module, "auto" runs the commands as Lua scripts, with
        # the module's replies; "lua" does so on any server.
        auto = RateLimiter(plain.client())
        assert auto.backend.kind == "lua"
        assert auto.throttle("k", 2, 1, 60) == Result(False, 3, 2, -1, 60)
        with pytest.raises(ArgumentError) as info:
            auto.slice("c", 10, 60, 0)
        assert info.value.argument == "slices"
        lua = RateLimiter(server.client(), backend="lua")
        assert lua.backend.kind == "lua"
        assert lua.slide("rl:lua", 10, 60) == Result(False, 10, 9, -1, 60)
        with pytest.raises(WrongTypeError):
            RateLimiter(server.client()).slide("rl:lua", 10, 60)
    finally:
        plain.close()


def test_detection_is_once_per_pool(server: Server) -> None:
    client = server.client()
    before = client.info("commandstats").get("cmdstat_command|list", {}).get("calls", 0)
    for _ in range(3):
        RateLimiter(client).slide("rl:once", 10, 60)
    after = client.info("commandstats").get("cmdstat_command|list", {}).get("calls", 0)
    assert after - before == 1


async def test_async_commands(server: Server) -> None:
    client = redis.asyncio.Redis(port=server.port)
    await client.flushall()
    limiter = AsyncRateLimiter(client)
    assert await limiter.throttle("a", 2, 1, 60) == Result(False, 3, 2, -1, 60)
    assert (await limiter.slide("b", 10, 60)).remaining == 9
    assert (await limiter.slice("c", 10, 60, 6)).remaining == 9
    assert (await limiter.lease("d", 2, 30, "x")).remaining == 1
    assert await limiter.release("d", "x") is True
    assert (await limiter.quota("e", 5, "WEEK")).remaining == 4
    assert (await limiter.take("f", Slide(3, 60))).remaining == 2
    got = await limiter.allow([("g", Slide(1, 60)), ("h", Throttle(0, 1, 60))])
    assert not got.limited and got.index in (1, 2)
    assert (await limiter.peek([("g", Slide(1, 60))])).limited
    assert isinstance(await limiter.inspect("g"), rl.SlideState)
    assert (await limiter.refund("g", Slide(1, 60), 1)).remaining == 1
    await client.set("s", "x")
    with pytest.raises(WrongTypeError):
        await limiter.slide("s", 1, 1)
    with pytest.raises(ArgumentError) as info:
        await limiter.slice("c", 10, 60, 0)
    assert info.value.argument == "slices"
    await client.aclose()


def test_the_prefix_is_taken_from_the_detected_names() -> None:
    from redis_ratelimit_client._backend import _prefix_from

    assert _prefix_from([b"RL.RELEASE", b"RL.THROTTLE"]) == "RL"
    assert _prefix_from(["lim.ALLOW", "lim.THROTTLE"]) == "lim"
    assert _prefix_from({"node": [b"x.THROTTLE"]}) == "x"
    assert _prefix_from([]) is None


def test_a_registered_backend_replaces_the_lua_backend(server: Server) -> None:
    from redis_ratelimit_client import _backend

    made: List[Any] = []

    def factory(client: Any) -> Recorder:
        made.append(client)
        return Recorder()

    plain = Server(module=False)
    saved = dict(_backend._factories)
    try:
        rl.register_backend("lua", factory, factory)  # type: ignore[arg-type]
        limiter = RateLimiter(plain.client())
        assert limiter.slide("k", 5, 1) == Result(False, 5, 4, -1, 1)
        assert limiter.backend.kind == "recorder" and len(made) == 1
        # With the module loaded, "auto" takes the module all the same.
        assert RateLimiter(server.client()).backend.kind == "module"
    finally:
        _backend._factories.clear()
        _backend._factories.update(saved)
        plain.close()
