"""Minimal applications behind the middlewares, driven through their test
clients with one synchronous interface: ``get(path, client_id)``."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Dict, Iterator, Optional, Tuple

import redis
import redis.asyncio
from flask import Flask
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from redis_ratelimit_client import (
    AsyncRateLimiter,
    Policy,
    RateLimiter,
    bounded_client_options,
)
from redis_ratelimit_client.asgi import RateLimitMiddleware as AsgiMiddleware
from redis_ratelimit_client.wsgi import RateLimitMiddleware as WsgiMiddleware

Answer = Tuple[int, Dict[str, str], str]
RATE_FIELDS = ("ratelimit-policy", "ratelimit", "x-ratelimit-limit", "x-ratelimit-remaining",
               "x-ratelimit-reset", "retry-after")


# The fields an application sets itself (/own): they win over the middleware's.
OWN_FIELDS = {"RateLimit": '"own";r=0;t=9', "Retry-After": "9"}


def rate_fields(headers: Any) -> Dict[str, str]:
    return {k.lower(): v for k, v in headers.items() if k.lower() in RATE_FIELDS}


class Gate:
    """Holds /slow requests until opened (threads and asyncio alike)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.arrived = threading.Semaphore(0)


def asgi_app(policy: Policy, port: int, gate: Optional[Gate] = None, cluster: bool = False,
             **options: Any) -> Starlette:
    async def endpoint(request: Request) -> PlainTextResponse:
        parts = request.url.path.split("/")
        if len(parts) == 3 and parts[1] == "status":
            return PlainTextResponse(f"status {parts[2]}\n", status_code=int(parts[2]))
        if parts[1:2] == ["raise"]:
            raise RuntimeError("the application failed")
        if parts[1:2] == ["own"]:
            return PlainTextResponse("own fields\n", status_code=429, headers=OWN_FIELDS)
        if parts[1:2] == ["slow"] and gate is not None:
            gate.arrived.release()
            while not gate.event.is_set():
                await asyncio.sleep(0.01)
        return PlainTextResponse("ok\n")

    client: Any
    if cluster:
        client = redis.asyncio.RedisCluster(host="127.0.0.1", port=port,
                                            **bounded_client_options(0.5, asyncio=True))
    else:
        client = redis.asyncio.Redis(port=port, **bounded_client_options(0.2, asyncio=True))
    app = Starlette(routes=[Route("/{path:path}", endpoint, methods=["GET", "POST"])])
    app.add_middleware(AsgiMiddleware, limiter=AsyncRateLimiter(client), policy=policy,
                       **options)
    return app


def wsgi_app(policy: Policy, port: int, gate: Optional[Gate] = None, cluster: bool = False,
             **options: Any) -> Flask:
    app = Flask("rl-test")

    @app.route("/", defaults={"path": ""})
    @app.route("/<path:path>", methods=["GET", "POST"])
    def endpoint(path: str) -> Any:
        parts = path.split("/")
        if len(parts) == 2 and parts[0] == "status":
            return f"status {parts[1]}\n", int(parts[1])
        if parts[0] == "raise":
            raise RuntimeError("the application failed")
        if parts[0] == "own":
            return "own fields\n", 429, OWN_FIELDS
        if parts[0] == "slow" and gate is not None:
            gate.arrived.release()
            gate.event.wait(10)
        return "ok\n"

    client: Any
    if cluster:
        client = redis.RedisCluster(host="127.0.0.1", port=port, **bounded_client_options(0.5))
    else:
        client = redis.Redis(port=port, **bounded_client_options(0.2))
    app.wsgi_app = WsgiMiddleware(  # type: ignore[method-assign]
        app.wsgi_app, limiter=RateLimiter(client), policy=policy, **options)
    return app


class Driver:
    """One interface over Starlette's TestClient and Flask's test client."""

    def __init__(self, kind: str, policy: Policy, port: int, gate: Optional[Gate] = None,
                 cluster: bool = False, trust: bool = True, **options: Any) -> None:
        # trust: the test client is a trusted proxy whose X-Client-Id names
        # the client (the tests' clients alice, bob ...); False: the
        # middleware's defaults (the peer address, no header believed).
        if trust:
            options.setdefault("trusted_proxies", "*")
            options.setdefault("client_header", "X-Client-Id")
        self.kind = kind
        if kind == "asgi":
            self.asgi = TestClient(asgi_app(policy, port, gate, cluster, **options),
                                   raise_server_exceptions=False)
            self.asgi.__enter__()
        else:
            self.flask = wsgi_app(policy, port, gate, cluster, **options).test_client()

    def get(self, path: str = "/", client_id: Optional[str] = "alice",
            headers: Optional[Dict[str, str]] = None) -> Answer:
        headers = {**({"X-Client-Id": client_id} if client_id else {}), **(headers or {})}
        if self.kind == "asgi":
            r = self.asgi.get(path, headers=headers)
            return r.status_code, rate_fields(r.headers), r.text
        with self.flask.get(path, headers=headers) as resp:
            answer = resp.status_code, rate_fields(resp.headers), resp.get_data(as_text=True)
        return answer

    def raw(self, path: str) -> Any:
        """The response itself (every field line)."""
        if self.kind == "asgi":
            return self.asgi.get(path, headers={"X-Client-Id": "alice"})
        return self.flask.get(path, headers={"X-Client-Id": "alice"})

    def close(self) -> None:
        if self.kind == "asgi":
            self.asgi.__exit__(None, None, None)


def drivers(kind: str, *args: Any, **kwargs: Any) -> Iterator[Driver]:
    d = Driver(kind, *args, **kwargs)
    try:
        yield d
    finally:
        d.close()
