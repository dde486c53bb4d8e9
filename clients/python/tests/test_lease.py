"""The lease context manager: taken, renewed while the block runs,
released exactly once on exit, exception or cancellation; refused, it
raises with retry_after. The interval is a unit test; the renewal itself is
an integration test with a bounded real wait (a ttl of 300 ms)."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
import redis.asyncio
from conftest import Server, release_calls

from redis_ratelimit_client import AsyncRateLimiter, Lease, LeaseRefused, LeaseState, RateLimiter
from redis_ratelimit_client._lease import renew_interval


def test_renew_interval() -> None:
    assert renew_interval(30, False, None) == 10
    assert renew_interval(300, True, None) == pytest.approx(0.1)
    assert renew_interval(30, False, 2.5) == 2.5
    with pytest.raises(ValueError):
        renew_interval(30, False, 0)


def held(r: redis.Redis, key: str) -> int:
    state = RateLimiter(r).inspect(key)
    assert state is None or isinstance(state, LeaseState)
    return 0 if state is None else state.held


def test_hold_renews_and_releases_once(r: redis.Redis) -> None:
    limiter = RateLimiter(r)
    before = release_calls(r)
    with limiter.hold("rl:job", Lease(2, 300), ms=True, renew_every=0.1) as lease:
        assert lease.result is not None and lease.result.remaining == 1
        time.sleep(0.8)  # well past the ttl: only the renewals keep it
        assert held(r, "rl:job") == 1
        assert lease.renewals >= 1 and not lease.lost
    assert lease.released is True
    assert held(r, "rl:job") == 0
    assert lease.release() is True  # a second release sends nothing
    assert release_calls(r) - before == 1


def test_hold_releases_on_exception_and_refuses_when_full(r: redis.Redis) -> None:
    limiter = RateLimiter(r)
    with pytest.raises(RuntimeError), limiter.hold("rl:one", Lease(1, 60)):
        assert held(r, "rl:one") == 1
        raise RuntimeError("the job failed")
    assert held(r, "rl:one") == 0
    limiter.lease("rl:one", 1, 60, "other")
    with pytest.raises(LeaseRefused) as info, limiter.hold("rl:one", Lease(1, 60)):
        pytest.fail("the block must not run")
    assert 59 <= info.value.retry_after <= 60
    assert info.value.result.limited


async def test_async_hold_renews_releases_and_survives_cancellation(server: Server) -> None:
    client = redis.asyncio.Redis(port=server.port)
    sync = server.client()
    sync.flushall()
    limiter = AsyncRateLimiter(client)
    before = release_calls(sync)
    async with limiter.hold("rl:a", Lease(2, 300), ms=True, renew_every=0.1) as lease:
        await asyncio.sleep(0.8)
        assert held(sync, "rl:a") == 1
        assert lease.renewals >= 1
    assert held(sync, "rl:a") == 0
    assert release_calls(sync) - before == 1

    entered = asyncio.Event()

    async def job() -> None:
        async with limiter.hold("rl:c", Lease(1, 60)):
            entered.set()
            await asyncio.sleep(60)

    task = asyncio.ensure_future(job())
    await entered.wait()
    assert held(sync, "rl:c") == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert held(sync, "rl:c") == 0
    assert release_calls(sync) - before == 2

    await limiter.lease("rl:c", 1, 60, "other")
    with pytest.raises(LeaseRefused):
        async with limiter.hold("rl:c", Lease(1, 60)):
            pytest.fail("the block must not run")
    await client.aclose()
