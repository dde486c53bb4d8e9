"""RL.CHARGE and settle, BLOCK, UNITS, SHADOW, MAXWAIT (acquire) and RL.TOP
through the synchronous and the asyncio client, on both backends (the
module, and the Lua scripts on the same server); and the command lines the
client builds for them."""

from __future__ import annotations

import time
from typing import Any, Iterator, List, Sequence, Tuple

import pytest
import redis
import redis.asyncio
from conftest import Server

from redis_ratelimit_client import (
    AllowResult,
    ArgumentError,
    AsyncRateLimiter,
    Lease,
    Quota,
    RateLimited,
    RateLimiter,
    Result,
    Slice,
    Slide,
    Throttle,
    TopEntry,
)
from redis_ratelimit_client._errors import name_argument


class Recorder:
    """A backend of the test's own: the command lines, and each round trip."""

    kind = "recorder"

    def __init__(self, reply: Any = None, many: bool = True) -> None:
        self.calls: List[Tuple[str, List[Any]]] = []
        self.trips = 0
        self.reply = reply if reply is not None else [0, 5, 4, -1, 1]
        if not many:
            self.call_many = None  # type: ignore[assignment]

    def call(self, name: str, args: Sequence[Any]) -> Any:
        self.trips += 1
        self.calls.append((name, list(args)))
        return self.reply

    def call_many(self, calls: Sequence[Tuple[str, Sequence[Any]]]) -> List[Any]:
        self.trips += 1
        self.calls += [(name, list(args)) for name, args in calls]
        return [self.reply for _ in calls]


def recorder(**options: Any) -> Tuple[RateLimiter, Recorder]:
    backend = Recorder(**options)
    return RateLimiter(redis.Redis(port=1), backend=backend), backend


def test_spec_words_in_their_order() -> None:
    t = Throttle(1, 2, 3, block=5, units=7, shadow=True)
    assert t.spec() == ["THROTTLE", 1, 2, 3, "BLOCK", 5, "UNITS", 7, "SHADOW"]
    assert t.base_spec() == ["THROTTLE", 1, 2, 3]
    assert Slide(5, 60, precision=6, block=9).spec() == ["SLIDE", 5, 60, "PRECISION", 6,
                                                         "BLOCK", 9]
    assert Slice(5, 60, 6, units=0).spec() == ["SLICE", 5, 60, 6, "UNITS", 0]
    assert Quota(5, "DAY", tz="UTC", block=1, shadow=True).spec() == [
        "QUOTA", 5, "DAY", "TZ", "UTC", "BLOCK", 1, "SHADOW"]
    assert Lease(2, 30, units=1, shadow=True).spec() == ["LEASE", 2, 30, "UNITS", 1, "SHADOW"]
    assert Throttle(1, 2, 3).spec() == ["THROTTLE", 1, 2, 3]


def test_command_lines() -> None:
    limiter, b = recorder()
    limiter.throttle("k", 1, 2, 3, max_wait=4, block=5)
    limiter.take("k", Slide(5, 60, block=30))
    limiter.take("k", Throttle(1, 2, 3, units=4, shadow=True))  # passed through
    limiter.slice("k", 5, 60, 6, block=7)
    limiter.quota("k", 5, "DAY", tz="UTC", block=8)
    limiter.charge("k", Slide(5, 60, precision=6, block=9, units=1, shadow=True), 3, ms=True)
    limiter.refund("k", Throttle(1, 2, 3, block=9), 2)
    b.reply = [0, 5, 4, -1, 1, 1, [[0, 5, 4, -1, 1]]]
    limiter.allow({"k": Throttle(1, 2, 3, block=4, units=5, shadow=True)}, max_wait=6,
                  lease_id="x")
    assert b.calls == [
        ("THROTTLE", ["k", 1, 2, 3, 1, "MAXWAIT", 4, "BLOCK", 5]),
        ("SLIDE", ["k", 5, 60, 1, "BLOCK", 30]),
        ("THROTTLE", ["k", 1, 2, 3, 1, "UNITS", 4, "SHADOW"]),
        ("SLICE", ["k", 5, 60, 6, 1, "BLOCK", 7]),
        ("QUOTA", ["k", 5, "DAY", 1, "TZ", "UTC", "BLOCK", 8]),
        ("CHARGE", ["k", "SLIDE", 5, 60, "PRECISION", 6, 3, "MS"]),
        ("REFUND", ["k", "THROTTLE", 1, 2, 3, 2]),
        ("ALLOW", [1, "k", "THROTTLE", 1, 2, 3, "BLOCK", 4, "UNITS", 5, "SHADOW",
                   "MAXWAIT", 6, "ID", "x"]),
    ]


@pytest.mark.parametrize("many", [True, False])
def test_settle_is_one_round_trip(many: bool) -> None:
    limiter, b = recorder(many=many)
    limits = [("a", Slide(100, 60)), ("b", Throttle(9, 10, 60)), ("c", Quota(5, "DAY"))]
    got = limiter.settle(limits, [10, 10, 3], [4, 30, 3])
    assert got == [Result(False, 5, 4, -1, 1), Result(False, 5, 4, -1, 1), None]
    assert b.calls == [("REFUND", ["a", "SLIDE", 100, 60, 6]),
                       ("CHARGE", ["b", "THROTTLE", 9, 10, 60, 20])]
    assert b.trips == (1 if many else 2)
    assert limiter.settle(limits, 5, 5) == [None, None, None]
    assert b.trips == (1 if many else 2)  # nothing to send: nothing sent
    with pytest.raises(ValueError, match="taken has 2 values for 3 limits"):
        limiter.settle(limits, [1, 2], 3)


def test_acquire_command_lines_and_the_deadline() -> None:
    limiter, b = recorder(reply=[0, 2, 1, 0, 1000])
    limiter.acquire("k", Throttle(1, 10, 60, block=30), 2.5)
    limiter.acquire("k", Throttle(1, 10, 60), 2.5, deadline=time.monotonic() + 0.5)
    limiter.acquire("k", Throttle(1, 10, 60), 2.5, deadline=time.monotonic() - 1, quantity=2)
    b.reply = [0, 2, 1, 0, 1000, 1, [[0, 2, 1, 0, 1000]]]
    limiter.acquire_all({"k": Throttle(1, 10, 1)}, 0.25)
    (_, first), (_, second), (_, third), (_, every) = b.calls
    assert first == ["k", 1, 10, 60000, 1, "MS", "MAXWAIT", 2500, "BLOCK", 30000]
    assert second[:6] == ["k", 1, 10, 60000, 1, "MS"] and second[6] == "MAXWAIT"
    assert 400 <= second[7] <= 500  # cut to the deadline, rounded down
    assert third == ["k", 1, 10, 60000, 2, "MS", "MAXWAIT", 0]  # past: no wait at all
    assert every == [1, "k", "THROTTLE", 1, 10, 1000, "MS", "MAXWAIT", 250]
    with pytest.raises(TypeError, match="THROTTLE limits only"):
        limiter.acquire_all({"k": Slide(1, 1)}, 1)  # type: ignore[dict-item]


def test_a_refused_turn_raises_with_retry_after_in_seconds() -> None:
    limiter, b = recorder(reply=[1, 2, 0, 1500, 3000])
    with pytest.raises(RateLimited) as refused:
        limiter.acquire("k", Throttle(1, 10, 60), 1)
    assert refused.value.retry_after == 1.5 and refused.value.keys == ("k",)
    assert refused.value.result == Result(True, 2, 0, 1500, 3000, True)
    b.reply = [1, 2, 0, -1, 0]
    with pytest.raises(RateLimited, match="can never fit") as never:
        limiter.acquire("k", Throttle(1, 10, 60), 1, quantity=5)
    assert never.value.retry_after == -1.0


def test_a_granted_wait_never_sleeps_past_the_deadline() -> None:
    # The server granted 5 s (as a server whose clock ran ahead could); the
    # caller's deadline is 0.2 s away: acquire returns by then.
    limiter, _ = recorder(reply=[0, 2, 0, 5000, 6000])
    started = time.monotonic()
    got = limiter.acquire("k", Throttle(1, 10, 60), 10, deadline=started + 0.2)
    assert got.retry_after == 5000
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("text, argument, spec", [
    ("BLOCK must be an integer from 1 to 315360000 (seconds)", "BLOCK", None),
    ("MAXWAIT must be an integer from 0 to 315360000 (seconds)", "MAXWAIT", None),
    ("spec 2 (SLIDE): UNITS must be an integer from 0 to 1000000000000", "UNITS", 2),
    ("COUNT must be an integer from 1 to 128", "COUNT", None),
    ("spec 1 (THROTTLE): SHADOW is given more than once", "SHADOW", 1),
    ("LEASE takes no BLOCK", "BLOCK", None),
    ("spec 1 (LEASE): LEASE takes no BLOCK", "BLOCK", 1),
    ("MAXWAIT takes THROTTLE limits only: spec 2 is SLIDE", "MAXWAIT", None),
    ("spec 1 (THROTTLE): SHADOW takes no BLOCK", "SHADOW", 1),
    ("at least one spec must be enforced: every spec is SHADOW", "SHADOW", None),
    ("RL.CHARGE does not take a LEASE spec", "spec", None),
    ("unknown argument 'SHADOW'", "SHADOW", None),
])
def test_the_new_errors_name_their_argument(text: str, argument: str, spec: Any) -> None:
    assert name_argument(text) == (argument, spec)


def test_top_command_line() -> None:
    limiter, b = recorder(reply=[[b"k1", 5, 1700000000000], [b"\xff", 1, 1]])
    assert limiter.top() == [TopEntry("k1", 5, 1700000000000),
                             TopEntry("\udcff", 1, 1)]
    limiter.top(3)
    assert [args for _, args in b.calls] == [[], ["COUNT", 3]]


# Against a real server, on both backends ----------------------------------


@pytest.fixture(params=["module", "lua"])
def backend(request: Any) -> str:
    return str(request.param)


@pytest.fixture
def limiter(r: redis.Redis, backend: str) -> Iterator[RateLimiter]:
    yield RateLimiter(r, backend=backend)


@pytest.fixture
async def alimiter(server: Server, backend: str) -> Any:
    client = redis.asyncio.Redis(port=server.port)
    await client.flushall()
    yield AsyncRateLimiter(client, backend=backend)
    await client.aclose()


def test_charge_and_settle(limiter: RateLimiter) -> None:
    minute = Slide(100, 60)
    assert limiter.allow({"rl:tok": minute}, quantity=10).remaining == 90
    refunded, = limiter.settle({"rl:tok": minute}, 10, 4)
    assert refunded is not None and refunded.remaining == 96
    charged, = limiter.settle({"rl:tok": minute}, 10, 30)
    assert charged is not None and charged.remaining == 76
    assert limiter.settle({"rl:tok": minute}, 7, 7) == [None]
    # A charge records whatever the limit says: the key goes into debt.
    debt = limiter.charge("rl:tok", minute, 200)
    assert debt.remaining == 0
    assert limiter.slide("rl:tok", 100, 60).limited
    # Several limits, one amount each; a LEASE cannot be settled.
    two = [("rl:a", Throttle(99, 100, 60)), ("rl:b", Quota(50, "DAY"))]
    got = limiter.settle(two, [1, 1], [3, 5])
    assert [g.remaining if g else None for g in got] == [98, 46]  # charged 2 and 4
    with pytest.raises(ArgumentError) as e:
        limiter.settle({"rl:l": Lease(2, 60)}, 1, 3)
    assert e.value.argument == "spec"


async def test_async_charge_settle(alimiter: AsyncRateLimiter) -> None:
    minute = Slide(100, 60)
    await alimiter.allow({"rl:tok": minute}, quantity=10)
    got = await alimiter.settle({"rl:tok": minute}, 10, 25)
    assert got[0] is not None and got[0].remaining == 75
    assert (await alimiter.charge("rl:tok", minute, 5)).remaining == 70


def test_block(limiter: RateLimiter) -> None:
    login = Slide(1, 1, block=30)
    assert limiter.take("rl:login", login).allowed
    refused = limiter.take("rl:login", login)
    assert refused.limited and refused.retry_after == 30
    state = limiter.inspect("rl:login")
    assert state is not None and state.blocked_until is not None
    assert state.blocked_until > time.time() * 1000 + 25_000
    # Blocked whatever the arguments: a call without BLOCK is refused too.
    assert limiter.slide("rl:login", 1000, 1).limited
    got = limiter.allow({"rl:login": Slide(1000, 1), "rl:other": Slide(5, 1)})
    assert got.limited and got.index == 1 and got.retry_after == 30
    assert limiter.slide("rl:login", 1, 1, block=5).retry_after == 30  # not extended


def test_units(limiter: RateLimiter) -> None:
    tpm = Slide(100_000, 60)
    got = limiter.allow([("rl:rpm", Throttle(59, 60, 60)),
                         ("rl:tpm", Slide(100_000, 60, units=1500))])
    assert [r.remaining for r in got.results] == [59, 98_500]
    limiter.settle({"rl:tpm": tpm}, 1500, 900)
    assert limiter.peek({"rl:tpm": tpm}, quantity=0).remaining == 99_400 - 300
    with pytest.raises(ArgumentError) as e:
        limiter.allow({"rl:tpm": Throttle(1, 1, 1, units=-1)})
    assert e.value.argument == "UNITS" and e.value.spec == 1


def test_shadow(limiter: RateLimiter) -> None:
    entries = [("rl:old", Slide(10, 60)), ("rl:new", Slide(1, 60, shadow=True))]
    first = limiter.allow(entries)
    second = limiter.allow(entries)
    assert not first.limited and not second.limited
    assert second.index == 1 and second.remaining == 8
    assert [r.limited for r in second.results] == [False, True]
    state = limiter.inspect("rl:new")
    assert state is not None and getattr(state, "units", None) == 1  # the refusal recorded none
    with pytest.raises(ArgumentError, match="every spec is SHADOW"):
        limiter.allow({"rl:new": Slide(1, 60, shadow=True)})


def test_shadow_takes_no_block(limiter: RateLimiter) -> None:
    with pytest.raises(ArgumentError, match="SHADOW takes no BLOCK") as e:
        limiter.allow([("rl:old", Slide(10, 60)), ("rl:new", Slide(1, 60, block=5, shadow=True))])
    assert (e.value.argument, e.value.spec) == ("SHADOW", 2)


def test_acquire_paces_callers(limiter: RateLimiter) -> None:
    ten_a_second = Throttle(0, 10, 1)
    started = time.monotonic()
    waits = [limiter.acquire("rl:pace", ten_a_second, 1).retry_after for _ in range(4)]
    elapsed = time.monotonic() - started
    assert waits[0] == 0
    assert all(0 < w <= 100 for w in waits[1:]), waits  # each waited its own turn
    assert elapsed >= 0.25  # three turns of 100 ms after the first, less the round trips
    with pytest.raises(RateLimited) as refused:
        limiter.acquire("rl:pace", ten_a_second, 0.01)
    assert refused.value.retry_after > 0.01
    # A deadline sooner than max_wait asks for less: refused, at once.
    for _ in range(5):
        limiter.acquire("rl:pace2", ten_a_second, 1)
    at = time.monotonic()
    with pytest.raises(RateLimited):
        limiter.acquire("rl:pace2", ten_a_second, 10, deadline=at + 0.05)
    assert time.monotonic() - at < 0.05


def test_acquire_all(limiter: RateLimiter) -> None:
    limits = {"rl:x": Throttle(0, 20, 1), "rl:y": Throttle(0, 10, 1)}
    first = limiter.acquire_all(limits, 1)
    second = limiter.acquire_all(limits, 1)
    assert isinstance(second, AllowResult)
    assert first.retry_after == 0 and 50 < second.retry_after <= 100
    assert second.index == 2  # the slower limit sets the wait
    with pytest.raises(RateLimited) as refused:
        limiter.acquire_all(limits, 0)
    assert refused.value.keys == ("rl:x", "rl:y")


async def test_async_acquire(alimiter: AsyncRateLimiter) -> None:
    ten_a_second = Throttle(0, 10, 1)
    started = time.monotonic()
    for _ in range(3):
        await alimiter.acquire("rl:apace", ten_a_second, 1)
    assert time.monotonic() - started >= 0.15
    with pytest.raises(RateLimited):
        await alimiter.acquire("rl:apace", ten_a_second, 0)
    got = await alimiter.acquire_all({"rl:apace2": ten_a_second}, 1)
    assert got.allowed


def test_top(limiter: RateLimiter, backend: str) -> None:
    one = Slide(1, 60)
    for key, n in (("rl:top:a", 4), ("rl:top:b", 2)):
        for _ in range(n + 1):
            limiter.take(key, one)
    if backend == "lua":
        with pytest.raises(ArgumentError, match=r"^RL\.TOP needs the module: the Lua backend "
                                                r"keeps no summary of refusals$"):
            limiter.top()
        return
    # The summary is the server's (other tests' refusals are in it too);
    # counts decay (floored), so 4 refusals may read 3 a moment later.
    top = limiter.top(128)
    keys = [e.key for e in top]
    a, b = top[keys.index("rl:top:a")], top[keys.index("rl:top:b")]
    assert 3 <= a.refusals <= 4 and 1 <= b.refusals <= 2
    assert keys.index("rl:top:a") < keys.index("rl:top:b")
    assert a.last_refusal_ms > (time.time() - 60) * 1000
    assert len(limiter.top(1)) == 1
    with pytest.raises(ArgumentError) as e:
        limiter.top(0)
    assert e.value.argument == "COUNT"


async def test_async_top(alimiter: AsyncRateLimiter, backend: str) -> None:
    if backend == "lua":
        with pytest.raises(ArgumentError, match="needs the module"):
            await alimiter.top()
        return
    for _ in range(3):
        await alimiter.slide("rl:top:c", 1, 60)
    assert "rl:top:c" in [e.key for e in await alimiter.top(128)]
