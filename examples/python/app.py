"""A small FastAPI application rate limited by redis-ratelimit-client.

    pip install -r requirements.txt
    uvicorn app:app --port 8080          # or: python3 app.py

Every request costs one unit of every limit of the policy, decided by one
RL.ALLOW (one per hash slot on a cluster); the responses carry the
RateLimit header fields (examples/README.md). Configuration (environment):

    REDIS_URL        redis://127.0.0.1:6379 (with REDIS_CLUSTER=yes: any node)
    REDIS_CLUSTER    no
    RL_LIMITS        `name key ALGORITHM numbers...; ...` (keys may name
                     $client, $ip, $path, $method); default
                     `default rl:http:$client THROTTLE 9 10 60`
    RL_TRUSTED_PROXIES    none: $client and $ip are the peer address;
                     `127.0.0.1,10.0.0.0/8` (or `*`): from those peers the
                     X-Forwarded-For address counts (docs/middleware.md)
    RL_CLIENT_HEADER none; `X-Client-Id`: $client is that header, from a
                     trusted proxy only
    RL_TIMEOUT_MS    250   the longest the limiter may take, from the request's start
    RL_FAIL_OPEN     no    yes: let requests through when Redis cannot answer
    RL_REFUND_5XX    no    yes: give the units back on a 5xx answer
"""

from __future__ import annotations

import asyncio
import os

import redis.asyncio
from fastapi import FastAPI, Response
from redis_ratelimit_client import AsyncRateLimiter, Policy, bounded_client_options
from redis_ratelimit_client.asgi import RateLimitMiddleware


def flag(name: str) -> bool:
    value = os.environ.get(name, "no").lower()
    if value not in ("yes", "no"):
        raise SystemExit(f"{name} must be yes or no, not {value!r}")
    return value == "yes"


def create_app() -> FastAPI:
    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")
    timeout = int(os.environ.get("RL_TIMEOUT_MS", "250")) / 1000
    options = bounded_client_options(timeout, asyncio=True)
    if flag("REDIS_CLUSTER"):
        client = redis.asyncio.RedisCluster.from_url(url, **options)
    else:
        client = redis.asyncio.Redis.from_url(url, **options)
    policy = Policy.parse(os.environ.get("RL_LIMITS", "default rl:http:$client THROTTLE 9 10 60"))

    app = FastAPI()
    app.add_middleware(
        RateLimitMiddleware,
        limiter=AsyncRateLimiter(client),
        policy=policy,
        trusted_proxies=os.environ.get("RL_TRUSTED_PROXIES", ""),
        client_header=os.environ.get("RL_CLIENT_HEADER") or None,
        skip=lambda request: request.path == "/health",
        timeout=timeout,
        fail_open=flag("RL_FAIL_OPEN"),
        refund_5xx=flag("RL_REFUND_5XX"),
    )

    @app.get("/")
    async def root() -> Response:
        return Response("ok\n", media_type="text/plain")

    @app.get("/health")
    async def health() -> Response:
        return Response("ok\n", media_type="text/plain")

    @app.get("/status/{code}")
    async def status(code: int) -> Response:
        return Response(f"status {code}\n", status_code=code, media_type="text/plain")

    @app.get("/slow/{ms}")
    async def slow(ms: int) -> Response:
        await asyncio.sleep(min(ms, 60000) / 1000)
        return Response(f"waited {ms} ms\n", media_type="text/plain")

    return app


app = create_app()

if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host=os.environ.get("HOST", "127.0.0.1"),
                port=int(os.environ.get("PORT", "8080")))
