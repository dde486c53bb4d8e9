"""The recipes of clients/python/README.md, each one a FastAPI application
made on a ``redis.asyncio`` client, run by clients/python/tests/test_examples.py.
The README shows the text between each ``# [name]`` and ``# [/name]``
marker, as it is here."""

from __future__ import annotations

import redis.asyncio
from fastapi import Depends, FastAPI
from fastapi.responses import PlainTextResponse
from redis_ratelimit_client import (
    AsyncRateLimiter,
    Lease,
    LeaseRefused,
    Policy,
    RequestInfo,
    Route,
    Rule,
    Slide,
    rate_limit_headers,
)
from redis_ratelimit_client.asgi import RateLimitMiddleware
from redis_ratelimit_client.dependency import RateLimit


def named_limits(redis_client: redis.asyncio.Redis) -> FastAPI:
    app = FastAPI()
    # [named]
    policy = Policy([
        Rule("per-second", "rl:{user:$client}:s", Slide(10, 1)),
        Rule("per-hour", "rl:{user:$client}:h", Slide(1000, 3600)),
    ])
    # RateLimit-Policy: "per-second";q=10;w=1, "per-hour";q=1000;w=3600
    # RateLimit: "per-second";r=9;t=1   (the binding limit, by its name)
    app.add_middleware(RateLimitMiddleware, limiter=AsyncRateLimiter(redis_client),
                       policy=policy)
    # [/named]

    @app.get("/")
    async def root() -> PlainTextResponse:
        return PlainTextResponse("ok\n")

    return app


def one_route(redis_client: redis.asyncio.Redis) -> FastAPI:
    app = FastAPI()
    limiter = AsyncRateLimiter(redis_client)
    policy = Policy([Rule("default", "rl:$client", Slide(100, 60))])
    # [one-route]
    login = Policy([Rule("login", "rl:login:$client", Slide(5, 60))])
    # One RL.ALLOW per request: a refused POST /login spends nothing of "default".
    app.add_middleware(RateLimitMiddleware, limiter=limiter, policy=policy,
                       routes=[Route("/login", login, methods=["POST"])])

    # Or, without a global middleware, a dependency on the route alone:
    limit_export = RateLimit(limiter=limiter,
                             policy=Policy([Rule("export", "rl:export:$client", Slide(1, 60))]))

    @app.get("/export", dependencies=[Depends(limit_export)])
    async def export() -> dict[str, str]:  # not a Response: FastAPI adds the fields
        return {"export": "done"}
    # [/one-route]

    @app.post("/login")
    async def do_login() -> PlainTextResponse:
        return PlainTextResponse("welcome\n")

    return app


def exempt(redis_client: redis.asyncio.Redis) -> FastAPI:
    app = FastAPI()
    policy = Policy([Rule("default", "rl:$client", Slide(100, 60))])
    # [exempt]
    def exempt_paths(request: RequestInfo) -> bool:
        return request.path in ("/health", "/docs", "/openapi.json") or \
            request.path.startswith("/static/")

    app.add_middleware(RateLimitMiddleware, limiter=AsyncRateLimiter(redis_client),
                       policy=policy, skip=exempt_paths)
    # [/exempt]

    @app.get("/health")
    async def health() -> PlainTextResponse:
        return PlainTextResponse("ok\n")

    return app


def behind_a_proxy(redis_client: redis.asyncio.Redis) -> FastAPI:
    app = FastAPI()
    policy = Policy([Rule("default", "rl:$client", Slide(100, 60))])
    # [proxy]
    # $client and $ip are the peer address unless the peer is a trusted proxy:
    # then $ip is the rightmost X-Forwarded-For address that is not one, and
    # $client the X-Client-Id header the proxy sets (or else $ip).
    app.add_middleware(RateLimitMiddleware, limiter=AsyncRateLimiter(redis_client),
                       policy=policy, trusted_proxies=["10.0.0.0/8", "127.0.0.1"],
                       client_header="X-Client-Id")
    # [/proxy]

    @app.get("/")
    async def root() -> PlainTextResponse:
        return PlainTextResponse("ok\n")

    return app


def refused_lease(redis_client: redis.asyncio.Redis) -> FastAPI:
    app = FastAPI()
    limiter = AsyncRateLimiter(redis_client)
    # [lease-429]
    exports = Lease(2, 300)  # 2 exports at once per tenant, leases of 300 s

    @app.post("/tenants/{tenant}/export")
    async def export(tenant: str) -> PlainTextResponse:
        key = f"rl:{{tenant:{tenant}}}:exports"
        try:
            # The async lease: renewed on a task while the block runs,
            # released once at its end, however it ends.
            async with limiter.hold(key, exports):
                return PlainTextResponse(await run_export(tenant))
        except LeaseRefused as refused:
            # Retry-After is the lease's retry_after (when enough leases
            # expire if none is released), from the refusal's own result.
            headers = rate_limit_headers(refused.result, exports, "exports")
            return PlainTextResponse("2 exports already running\n", 429, headers)
    # [/lease-429]

    return app


async def run_export(tenant: str) -> str:
    return f"export of {tenant}\n"
