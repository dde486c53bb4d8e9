"""The ASGI (Starlette) and WSGI (Flask) middlewares through their test
clients against a real server: the header fields, 429, several limits, the
give-back on 5xx, leases released at the response's end; and when Redis
fails (killed, hung, not accepting): every answer within the timeout, one
log line per outage, and a configuration error logged as such."""

from __future__ import annotations

import logging
import signal
import socket
import threading
import time
from typing import Any, Iterator, List

import pytest
import redis
from apps import Driver, Gate
from conftest import Server, release_calls

from redis_ratelimit_client import Lease, LeaseState, Policy, RateLimiter, Rule, Slice, Slide
from redis_ratelimit_client import Throttle as T

KINDS = ["asgi", "wsgi"]
LOGGER = "redis_ratelimit_client"


@pytest.fixture(params=KINDS)
def kind(request: Any) -> str:
    return str(request.param)


def one_limit() -> Policy:
    return Policy([Rule("default", "rl:http:$client", T(2, 1, 60))])


def test_headers_of_one_limit(r: redis.Redis, server: Server, kind: str) -> None:
    d = Driver(kind, one_limit(), server.port)
    try:
        answers = [d.get("/") for _ in range(4)]
    finally:
        d.close()
    assert [a[0] for a in answers] == [200, 200, 200, 429]
    assert answers[0][1] == {
        "ratelimit-policy": '"default";q=3;w=180',
        "ratelimit": '"default";r=2;t=60',
        "x-ratelimit-limit": "3",
        "x-ratelimit-remaining": "2",
        "x-ratelimit-reset": "60",
    }
    assert answers[3][1] == {
        "ratelimit-policy": '"default";q=3;w=180',
        "ratelimit": '"default";r=0;t=60',
        "x-ratelimit-limit": "3",
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": "180",
        "retry-after": "60",
    }
    assert answers[3][2] == "rate limited: retry in 60 s\n"
    state = RateLimiter(r).inspect("rl:http:alice")
    assert state is not None and state.type == "throttle"


def several() -> Policy:
    return Policy([Rule("second", "rl:{user:$client}:s", Slide(2, 1)),
                   Rule("minute", "rl:{user:$client}:m", Slice(5, 60, 12)),
                   Rule("ip", "rl:ip:$ip", T(9, 10, 60))])


def test_several_limits_and_refund(r: redis.Redis, server: Server, kind: str) -> None:
    d = Driver(kind, several(), server.port, refund_5xx=True)
    try:
        first = d.get("/")
        second = d.get("/")
        third = d.get("/")
        failed = d.get("/status/500", client_id="bob")
        raised = d.get("/raise", client_id="carol")
    finally:
        d.close()
    assert first[1]["ratelimit-policy"] == '"second";q=2;w=1, "minute";q=5;w=60, "ip";q=10;w=60'
    assert first[1]["ratelimit"] == '"second";r=1;t=1'
    assert (second[0], third[0]) == (200, 429)
    assert third[1]["ratelimit"] == '"second";r=0;t=1' and third[1]["retry-after"] == "1"
    limiter = RateLimiter(r)
    minute = limiter.inspect("rl:{user:alice}:m")
    assert minute is not None and getattr(minute, "units", None) == 2  # the 429 took nothing
    assert failed[0] == 500 and failed[1]["ratelimit"].startswith('"second"')
    deadline = time.monotonic() + 5
    while limiter.inspect("rl:{user:bob}:s") is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert limiter.inspect("rl:{user:bob}:s") is None  # given back
    assert limiter.inspect("rl:{user:bob}:m") is None
    assert raised[0] == 500  # an application that raised gives its units back too
    deadline = time.monotonic() + 5
    while limiter.inspect("rl:{user:carol}:s") is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert limiter.inspect("rl:{user:carol}:s") is None


def concurrency() -> Policy:
    return Policy([Rule("minute", "rl:{user:$client}:m", Slide(100, 60)),
                   Rule("inflight", "rl:{user:$client}:c", Lease(2, 60))])


def lease_held(r: redis.Redis, key: str) -> int:
    state = RateLimiter(r).inspect(key)
    assert state is None or isinstance(state, LeaseState)
    return 0 if state is None else state.held


def test_leases_in_flight_and_released(r: redis.Redis, server: Server, kind: str) -> None:
    gate = Gate()
    before = release_calls(r)
    d = Driver(kind, concurrency(), server.port, gate=gate)
    try:
        slow: List[Any] = []
        threads = [threading.Thread(target=lambda: slow.append(d.get("/slow"))) for _ in range(2)]
        for t in threads:
            t.start()
        for _ in range(2):
            assert gate.arrived.acquire(timeout=10)
        assert lease_held(r, "rl:{user:alice}:c") == 2
        status, headers, _ = d.get("/")
        assert status == 429
        assert headers["ratelimit"] == '"inflight";r=0;t=60'
        assert headers["ratelimit-policy"] == (
            '"minute";q=100;w=60, "inflight";q=2;qu="concurrent-requests"')
        gate.event.set()
        for t in threads:
            t.join(10)
        assert [a[0] for a in slow] == [200, 200]
        deadline = time.monotonic() + 5
        while lease_held(r, "rl:{user:alice}:c") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lease_held(r, "rl:{user:alice}:c") == 0
        assert d.get("/")[1]["ratelimit"] == '"inflight";r=1;t=60'
        minute = RateLimiter(r).inspect("rl:{user:alice}:m")
        assert getattr(minute, "units", None) == 3  # the 429 took no unit
    finally:
        gate.event.set()
        d.close()
    deadline = time.monotonic() + 5
    while release_calls(r) - before < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert release_calls(r) - before == 3  # each allowed request released once


async def test_asgi_releases_on_disconnect(r: redis.Redis, server: Server) -> None:
    import asyncio

    import redis.asyncio

    from redis_ratelimit_client import AsyncRateLimiter
    from redis_ratelimit_client.asgi import RateLimitMiddleware

    before = release_calls(r)
    seen: List[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(lease_held(r, "rl:{user:alice}:c"))  # held while the app works
        seen.append((await receive())["type"])  # the client goes away, no answer sent
        for _ in range(200):  # the release runs in the background, at once
            if lease_held(r, "rl:{user:alice}:c") == 0:
                break
            await asyncio.sleep(0.01)
        seen.append(lease_held(r, "rl:{user:alice}:c"))
        await asyncio.sleep(0.1)  # the app goes on a little after the disconnect

    client = redis.asyncio.Redis(port=server.port)
    mw = RateLimitMiddleware(app, limiter=AsyncRateLimiter(client), policy=concurrency(),
                             trusted_proxies="127.0.0.1", client_header="X-Client-Id")

    async def receive() -> Any:
        await asyncio.sleep(0.05)
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        pass

    scope = {"type": "http", "method": "GET", "path": "/", "client": ("127.0.0.1", 1),
             "headers": [(b"x-client-id", b"alice")]}
    await mw(scope, receive, send)
    assert seen == [1, "http.disconnect", 0]
    await asyncio.sleep(0.2)
    assert release_calls(r) - before == 1  # once, not again when the app ended
    await client.aclose()


# --- when Redis fails ---------------------------------------------------

BOUND = 2.0  # seconds: every answer within it, with a timeout of 200 ms


def burst(d: Driver, fail_open: bool) -> None:
    for _ in range(5):
        started = time.monotonic()
        status, headers, body = d.get("/")
        took = time.monotonic() - started
        assert took < BOUND, f"answered in {took:.2f} s"
        if fail_open:
            assert (status, headers) == (200, {})
        else:
            assert (status, headers, body) == (503, {}, "rate limiter unavailable\n")


def outage_lines(caplog: Any) -> List[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


@pytest.mark.parametrize("fail_open,leased", [(False, False), (True, False), (False, True)])
def test_redis_killed(kind: str, fail_open: bool, leased: bool, caplog: Any) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    s = Server()
    d = Driver(kind, concurrency() if leased else one_limit(), s.port, timeout=0.2,
               fail_open=fail_open)
    try:
        assert d.get("/")[0] == 200
        s.kill()
        burst(d, fail_open)
        lines = outage_lines(caplog)
        assert len(lines) == 1, lines
        assert lines[0].startswith("rate limiter unavailable (")
        assert ("letting requests through" in lines[0]) == fail_open
    finally:
        d.close()
        s.close()


def test_redis_hung_then_back(kind: str, caplog: Any) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    s = Server()
    d = Driver(kind, one_limit(), s.port, timeout=0.2)
    try:
        assert d.get("/")[0] == 200
        s.signal(signal.SIGSTOP)
        burst(d, False)
        s.signal(signal.SIGCONT)
        deadline = time.monotonic() + 10
        # Decided again: 200, or 429 when the RL.ALLOWs that Redis received
        # while stopped (and ran after SIGCONT) used the limit up.
        while d.get("/")[0] not in (200, 429):
            assert time.monotonic() < deadline, "no decision after SIGCONT"
            time.sleep(0.05)
        lines = outage_lines(caplog)
        assert len(lines) == 2, lines
        assert lines[0].startswith("rate limiter unavailable (")
        assert lines[1].startswith("rate limiter available again, after ")
    finally:
        s.signal(signal.SIGCONT)
        d.close()
        s.close()


@pytest.fixture
def unaccepting() -> Iterator[int]:
    """A port whose accept queue is full: connection attempts get no answer."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = int(listener.getsockname()[1])
    fillers = []
    for _ in range(8):
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(("127.0.0.1", port))
        fillers.append(c)
    yield port
    for c in fillers:
        c.close()
    listener.close()


def test_nothing_accepts(kind: str, unaccepting: int, caplog: Any) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    d = Driver(kind, one_limit(), unaccepting, timeout=0.2)
    try:
        burst(d, False)
    finally:
        d.close()
    lines = outage_lines(caplog)
    assert len(lines) == 1 and lines[0].startswith("rate limiter unavailable ("), lines


def test_a_wrongtype_key_is_a_configuration_error(r: redis.Redis, server: Server, kind: str,
                                                  caplog: Any) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    peer = "testclient" if kind == "asgi" else "127.0.0.1"
    r.set(f"rl:http:{peer}:/", "a string")
    d = Driver(kind, Policy([Rule("default", "rl:http:$client:$path", T(2, 1, 60))]),
               server.port, trust=False)
    try:
        # One status for every language (docs/middleware.md): 500, not 503.
        assert d.get("/", None)[:3:2] == (500, "rate limiter misconfigured\n")
        assert d.get("/", None)[0] == 500
        assert d.get("/other", None)[0] == 200
    finally:
        d.close()
    records = [rec for rec in caplog.records if rec.name == LOGGER]
    assert len(records) == 1, [rec.getMessage() for rec in records]
    assert records[0].levelno == logging.ERROR
    assert records[0].getMessage().startswith("rate limiter configuration error (WrongTypeError")
    assert "not an outage" in records[0].getMessage()
    assert records[0].getMessage().endswith("answering 500 meanwhile")


def test_releases_never_hold_up_answers_when_redis_hangs(kind: str, caplog: Any) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    s = Server()
    gate = Gate()
    d = Driver(kind, concurrency(), s.port, gate=gate, timeout=0.2)
    try:
        answers: List[Any] = []

        def slow() -> None:
            started = time.monotonic()
            status = d.get("/slow")[0]
            answers.append((status, time.monotonic() - started))

        threads = [threading.Thread(target=slow) for _ in range(2)]
        for t in threads:
            t.start()
        for _ in range(2):
            assert gate.arrived.acquire(timeout=10)
        s.signal(signal.SIGSTOP)
        opened = time.monotonic()
        gate.event.set()
        for t in threads:
            t.join(10)
        assert [a[0] for a in answers] == [200, 200]
        assert time.monotonic() - opened < BOUND  # the failing releases ran in the background
        deadline = time.monotonic() + 5
        while not outage_lines(caplog) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # both releases have failed by now (their timeout is 0.2 s)
        lines = outage_lines(caplog)
        assert len(lines) == 1 and lines[0].startswith("rate limiter unavailable ("), lines
    finally:
        gate.event.set()
        s.signal(signal.SIGCONT)
        d.close()
        s.close()
