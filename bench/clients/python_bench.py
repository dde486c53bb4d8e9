"""The Python client's costs, side by side in one run (make bench):

1. a client call's wall time against the same redis-py client's raw
   execute_command of the same command line, on loopback, sync and asyncio
   (goal: at most 1.10x);
2. an ASGI application's requests per second bare, with one raw
   RL.THROTTLE call per request in the handler (one round trip), and with
   the package's middleware (goal: the middleware costs that round trip and
   nothing more);
3. the lease context manager against two raw calls (RL.LEASE, RL.RELEASE).

It starts its own server (``$REDIS_SERVER``, default redis-server) with the
module (``$RL_MODULE``) on a free 127.0.0.1 port. Each pair is measured in
alternating rounds; the figures are the medians of the rounds.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import redis
import redis.asyncio
from redis_ratelimit_client import (
    AsyncRateLimiter,
    Lease,
    Policy,
    RateLimiter,
    Rule,
    Slide,
    Throttle,
)
from redis_ratelimit_client.asgi import RateLimitMiddleware
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

ROUNDS = int(os.environ.get("ROUNDS", "7"))
CALLS = int(os.environ.get("CALLS", "3000"))
REQUESTS = int(os.environ.get("REQUESTS", "1000"))


def start_server() -> tuple[subprocess.Popen[bytes], int]:
    module = os.environ.get("RL_MODULE")
    if not module or not os.path.exists(module):
        sys.exit(f"RL_MODULE must name the built module (got {module!r}): make build")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen(
        [os.environ.get("REDIS_SERVER", "redis-server"), "--port", str(port), "--bind",
         "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tempfile.gettempdir(),
         "--loadmodule", module], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            redis.Redis(port=port).ping()
            return proc, port
        except redis.ConnectionError:
            time.sleep(0.02)
    proc.kill()
    sys.exit("the server did not start")


def paired(fa: Callable[[], Any], fb: Callable[[], Any], n: int) -> tuple[float, float]:
    """Seconds per call of ``fa`` and of ``fb``, called alternately so that
    both see the same moments of a shared machine."""
    clock = time.perf_counter
    ta = tb = 0.0
    for _ in range(n):
        t0 = clock()
        fa()
        t1 = clock()
        fb()
        t2 = clock()
        ta += t1 - t0
        tb += t2 - t1
    return ta / n, tb / n


async def paired_async(fa: Callable[[], Awaitable[Any]], fb: Callable[[], Awaitable[Any]],
                       n: int) -> tuple[float, float]:
    clock = time.perf_counter
    ta = tb = 0.0
    for _ in range(n):
        t0 = clock()
        await fa()
        t1 = clock()
        await fb()
        t2 = clock()
        ta += t1 - t0
        tb += t2 - t1
    return ta / n, tb / n


def per_call(fn: Callable[[], Any], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


async def per_call_async(fn: Callable[[], Awaitable[Any]], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await fn()
    return (time.perf_counter() - start) / n


def row(name: str, a: list[float], b: list[float], unit: str = "us/call") -> None:
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{name:<52} {ma * 1e6:9.1f} {mb * 1e6:9.1f} {unit}   ratio {ma / mb:.3f}")


class Canned:
    """A backend that answers at once: what is left is the client's own work."""

    kind = "canned"
    reply = (0, 1000001, 1000000, -1, 1)

    def call(self, name: str, args: Any) -> Any:
        return self.reply


def overhead_row() -> None:
    rl = RateLimiter(redis.Redis(), backend=Canned())
    n = 50000
    runs = []
    for _ in range(ROUNDS):
        runs.append(per_call(lambda: rl.throttle("b:t", 1000000, 1000000, 1), n))
    print(f"{'sync rl.throttle, its own work (no I/O: a canned reply)':<52} "
          f"{statistics.median(runs) * 1e6:9.2f} us/call")


def sync_rows(port: int) -> None:
    client = redis.Redis(port=port)
    rl = RateLimiter(client)
    raw = lambda: client.execute_command("RL.THROTTLE", "b:t", 1000000, 1000000, 1)
    typed = lambda: rl.throttle("b:t", 1000000, 1000000, 1)
    typed()
    a, b = [], []
    for _ in range(ROUNDS):
        x, y = paired(typed, raw, CALLS)
        a.append(x)
        b.append(y)
    row("sync RL.THROTTLE: rl.throttle vs execute_command", a, b)

    spec = ["SLIDE", 1000000, 60, "THROTTLE", 1000000, 1000000, 1]
    raw2 = lambda: client.execute_command("RL.ALLOW", 2, "b:{u}:a", "b:{u}:b", *spec)
    limits = [("b:{u}:a", Slide(1000000, 60)), ("b:{u}:b", Throttle(1000000, 1000000, 1))]
    typed2 = lambda: rl.allow(limits)
    typed2()
    a, b = [], []
    for _ in range(ROUNDS):
        client.delete("b:{u}:a")
        x, y = paired(typed2, raw2, CALLS)
        a.append(x)
        b.append(y)
    row("sync RL.ALLOW (2 limits): rl.allow vs execute_command", a, b)

    def held() -> None:
        with rl.hold("b:l", Lease(1000, 60)):
            pass

    def raw_lease() -> None:
        client.execute_command("RL.LEASE", "b:l", 1000, 60, "id-1")
        client.execute_command("RL.RELEASE", "b:l", "id-1")

    a, b = [], []
    for _ in range(ROUNDS):
        x, y = paired(held, raw_lease, CALLS // 3)
        a.append(x)
        b.append(y)
    row("sync lease: with rl.hold() vs RL.LEASE + RL.RELEASE", a, b)
    client.close()




async def async_rows(port: int) -> None:
    client = redis.asyncio.Redis(port=port)
    rl = AsyncRateLimiter(client)

    async def raw() -> Any:
        return await client.execute_command("RL.THROTTLE", "b:t", 1000000, 1000000, 1)

    async def typed() -> Any:
        return await rl.throttle("b:t", 1000000, 1000000, 1)

    await typed()
    a, b = [], []
    for _ in range(ROUNDS):
        x, y = await paired_async(typed, raw, CALLS)
        a.append(x)
        b.append(y)
    row("async RL.THROTTLE: rl.throttle vs execute_command", a, b)

    async def held() -> None:
        async with rl.hold("b:l", Lease(1000, 60)):
            pass

    async def raw_lease() -> None:
        await client.execute_command("RL.LEASE", "b:l", 1000, 60, "id-1")
        await client.execute_command("RL.RELEASE", "b:l", "id-1")

    a, b = [], []
    for _ in range(ROUNDS):
        x, y = await paired_async(held, raw_lease, CALLS // 3)
        a.append(x)
        b.append(y)
    row("async lease: async with rl.hold() vs RL.LEASE + RL.RELEASE", a, b)

    # Requests per second of a minimal Starlette app, driven in-process
    # through httpx's ASGI transport (the same driver for every variant).
    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok\n")

    async def hello_one_call(request: Request) -> PlainTextResponse:
        await client.execute_command("RL.THROTTLE", "b:h", 1000000, 1000000, 1)
        return PlainTextResponse("ok\n")

    bare = Starlette(routes=[Route("/", hello)])
    one_call = Starlette(routes=[Route("/", hello_one_call)])
    limited = Starlette(routes=[Route("/", hello)])
    policy = Policy([Rule("default", "b:mw:$client", Throttle(1000000, 1000000, 1))])
    limited.add_middleware(RateLimitMiddleware, limiter=AsyncRateLimiter(client), policy=policy,
                           timeout=5.0)

    async def per_request(apps: list[Any]) -> list[float]:
        """Seconds per request of each app, one request of each in turn."""
        clients = [httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://b")
                   for app in apps]
        totals = [0.0] * len(apps)
        clock = time.perf_counter
        try:
            for http in clients:
                await http.get("/")
            for _ in range(REQUESTS):
                for i, http in enumerate(clients):
                    t0 = clock()
                    r = await http.get("/")
                    totals[i] += clock() - t0
                    assert r.status_code == 200
        finally:
            for http in clients:
                await http.aclose()
        return [t / REQUESTS for t in totals]

    t_bare, t_one, t_mw = [], [], []
    for _ in range(ROUNDS):
        b_, o_, m_ = await per_request([bare, one_call, limited])
        t_bare.append(b_)
        t_one.append(o_)
        t_mw.append(m_)
    mb, mo, mm = (statistics.median(x) for x in (t_bare, t_one, t_mw))
    print(f"{'ASGI requests/s: bare, one raw RL.THROTTLE, middleware':<52} "
          f"{1 / mb:9.0f} {1 / mo:9.0f} {1 / mm:9.0f} req/s")
    print(f"{'  middleware vs bare (req/s ratio)':<52} {mm / mb:.3f}x the time per request "
          f"({(1 / mm) / (1 / mb):.3f} of the throughput)")
    print(f"{'  middleware vs one raw call in the handler':<52} {mm / mo:.3f}x the time per "
          f"request (+{(mm - mo) * 1e6:.0f} us)")
    await client.aclose()


def main() -> None:
    proc, port = start_server()
    try:
        print(f"Python client (redis-py {redis.__version__}, Python {sys.version.split()[0]}), "
              f"loopback, {ROUNDS} rounds, medians")
        print(f"{'':<52} {'client':>9} {'raw':>9}")
        overhead_row()
        sync_rows(port)
        asyncio.run(async_rows(port))
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
