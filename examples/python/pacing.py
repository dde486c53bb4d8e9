"""Workers sharing a provider's 500 calls a minute: each waits for its turn
with ``acquire`` (RL.THROTTLE with MAXWAIT) instead of being refused, so
that together they never exceed the rate, whichever worker asks.

    python3 pacing.py                  # against redis://127.0.0.1:6379
    WORKERS=8 CALLS=40 MODE=asyncio python3 pacing.py

``MODE``: ``threads`` (RateLimiter, time.sleep) or ``asyncio``
(AsyncRateLimiter, asyncio.sleep). Each worker gives up a call whose turn
is more than ``MAX_WAIT`` seconds away (RateLimited, with retry_after).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import time

import redis
import redis.asyncio
from redis_ratelimit_client import AsyncRateLimiter, RateLimited, RateLimiter, Throttle

PROVIDER = Throttle(0, 500, 60)  # 500 a minute: a turn every 120 ms, no burst
KEY = os.environ.get("KEY", "rl:pacing:provider")
URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")
WORKERS = int(os.environ.get("WORKERS", "4"))
CALLS = int(os.environ.get("CALLS", "20"))  # in all, shared by the workers
MAX_WAIT = float(os.environ.get("MAX_WAIT", "30"))


def with_threads(times: list[float]) -> None:
    rl = RateLimiter(redis.Redis.from_url(URL))
    lock = threading.Lock()
    left = [CALLS]

    def worker() -> None:
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            try:
                rl.acquire(KEY, PROVIDER, MAX_WAIT)
            except RateLimited as refused:
                print(f"gave up: retry after {refused.retry_after:.3f} s")
                continue
            times.append(time.monotonic())  # the call to the provider goes here

    threads = [threading.Thread(target=worker) for _ in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


async def with_asyncio(times: list[float]) -> None:
    client = redis.asyncio.Redis.from_url(URL)
    rl = AsyncRateLimiter(client)
    left = [CALLS]

    async def worker() -> None:
        while left[0] > 0:
            left[0] -= 1
            try:
                await rl.acquire(KEY, PROVIDER, MAX_WAIT)
            except RateLimited as refused:
                print(f"gave up: retry after {refused.retry_after:.3f} s")
                continue
            times.append(time.monotonic())

    await asyncio.gather(*(worker() for _ in range(WORKERS)))
    await client.aclose()


def main() -> None:
    mode = os.environ.get("MODE", "threads")
    times: list[float] = []
    started = time.monotonic()
    if mode == "asyncio":
        asyncio.run(with_asyncio(times))
    else:
        with_threads(times)
    times.sort()
    gaps = [b - a for a, b in itertools.pairwise(times)]
    print(f"mode={mode} workers={WORKERS} calls={len(times)} "
          f"elapsed={time.monotonic() - started:.2f}s")
    if gaps:
        print(f"gap between calls: min={min(gaps) * 1000:.0f} ms "
              f"mean={sum(gaps) / len(gaps) * 1000:.0f} ms (a turn every 120 ms)")


if __name__ == "__main__":
    main()
