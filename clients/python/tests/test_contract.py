"""The middleware contract of docs/middleware.md, through both middlewares
and a real server: the identity (the peer address unless a proxy is
trusted), a server restarted under a running application, a handler's own
header fields, skipping, per-route rules in one RL.ALLOW, the FastAPI
dependency, and the module's detection where an ACL refuses COMMAND LIST."""

from __future__ import annotations

import asyncio
import secrets
import threading
from typing import TYPE_CHECKING, Any, List

import httpx
import pytest
import redis
import redis.asyncio
from apps import Driver, asgi_app, wsgi_app
from conftest import Server

from redis_ratelimit_client import AsyncRateLimiter, Policy, RateLimiter, RequestInfo, Rule, Slide

if TYPE_CHECKING:
    from redis_ratelimit_client import Identity

KINDS = ["asgi", "wsgi"]


@pytest.fixture(params=KINDS)
def kind(request: Any) -> str:
    return str(request.param)


def per_client(limit: int, prefix: str) -> Policy:
    return Policy([Rule("default", f"rl:{prefix}:$client", Slide(limit, 60))])


# --- identity -----------------------------------------------------------


def test_a_caller_cannot_pick_its_bucket(r: redis.Redis, server: Server, kind: str) -> None:
    """By default $client is the peer address: a random X-Client-Id on every
    request still spends the one bucket of the peer."""
    d = Driver(kind, per_client(5, f"id-{kind}"), server.port, trust=False)
    try:
        statuses = [d.get("/", client_id=secrets.token_hex(8))[0] for _ in range(12)]
    finally:
        d.close()
    assert statuses == [200] * 5 + [429] * 7


def test_forwarded_for_counts_only_from_a_trusted_proxy(r: redis.Redis, server: Server,
                                                        kind: str) -> None:
    peer = "testclient" if kind == "asgi" else "127.0.0.1"
    policy = Policy([Rule("default", f"rl:xff-{kind}:$ip", Slide(2, 60))])
    trusted = Driver(kind, policy, server.port, trust=False, trusted_proxies=[peer]
                     if kind == "wsgi" else "*")
    untrusted = Driver(kind, policy, server.port, trust=False, trusted_proxies=["10.0.0.0/8"])
    try:
        fwd = {"X-Forwarded-For": "198.51.100.7"}
        assert [trusted.get("/", None, fwd)[0] for _ in range(3)] == [200, 200, 429]
        # Another forwarded address is another bucket, from the trusted proxy.
        assert trusted.get("/", None, {"X-Forwarded-For": "198.51.100.8"})[0] == 200
        # From an untrusted peer the header is ignored: the peer's own bucket.
        assert [untrusted.get("/", None, fwd)[0] for _ in range(3)] == [200, 200, 429]
        assert untrusted.get("/", None, {"X-Forwarded-For": "198.51.100.9"})[0] == 429
    finally:
        trusted.close()
        untrusted.close()
    assert r.exists(f"rl:xff-{kind}:198.51.100.7") and r.exists(f"rl:xff-{kind}:{peer}")


def resolve(identity: Identity, peer: str, **headers: str) -> RequestInfo:
    return identity.resolve("GET", "/", peer, {k.replace("_", "-"): v for k, v in headers.items()})


def test_identity_rules() -> None:
    from redis_ratelimit_client import Identity

    none = Identity()
    got = resolve(none, "203.0.113.5", x_forwarded_for="1.2.3.4", x_client_id="x")
    assert (got.client_ip, got.client) == ("203.0.113.5", "")
    assert resolve(none, "::ffff:203.0.113.5").client_ip == "203.0.113.5"
    proxies = Identity(["10.0.0.0/8", "::1"], client_header="X-Client-Id")
    # The rightmost entry that is not a trusted proxy; a spoofed left part is ignored.
    got = resolve(proxies, "10.1.1.1", x_forwarded_for="6.6.6.6, 198.51.100.7, 10.2.2.2",
                  x_client_id="acme")
    assert (got.client_ip, got.client) == ("198.51.100.7", "acme")
    assert resolve(proxies, "::1", x_forwarded_for="10.0.0.9, 10.0.0.8").client_ip == "10.0.0.9"
    assert resolve(proxies, "10.1.1.1").client_ip == "10.1.1.1"
    assert resolve(proxies, "192.0.2.1", x_client_id="acme").client == ""
    fwd = Identity("10.0.0.0/8", proxy_header="Forwarded")
    got = resolve(fwd, "10.0.0.1", forwarded='for="[2001:db8::1]:4711";proto=https, for=10.0.0.3',
                  x_forwarded_for="6.6.6.6")
    assert got.client_ip == "2001:db8::1"
    assert resolve(fwd, "10.0.0.1", forwarded="for=192.0.2.60:80").client_ip == "192.0.2.60"
    chosen = Identity(client_id=lambda r: "user-7" if r.path == "/" else None)
    assert resolve(chosen, "192.0.2.1").client == "user-7"
    with pytest.raises(ValueError, match="trusted_proxies"):
        Identity(["not-an-address"])
    with pytest.raises(ValueError, match="proxy_header"):
        Identity(proxy_header="X-Real-IP")
    with pytest.raises(ValueError, match=r"unknown \$user"):
        Policy([Rule("a", "rl:$user", Slide(1, 1))])


# --- a server restarted under a running application ---------------------


async def asgi_batch(client: httpx.AsyncClient, n: int) -> List[int]:
    got = await asyncio.gather(*(client.get("/", headers={"X-Client-Id": f"c{i}"})
                                 for i in range(n)))
    return [g.status_code for g in got]


async def test_asgi_restart_is_not_an_outage(caplog: Any) -> None:
    s = Server()
    app = asgi_app(per_client(1000, "restart"), s.port, timeout=2.0)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            assert await asgi_batch(client, 8) == [200] * 8  # several pooled connections
            s.kill()
            s.start(port=s.port)  # answers PING again
            for _ in range(3):
                assert await asgi_batch(client, 8) == [200] * 8
    finally:
        s.close()
    assert not [r for r in caplog.records if r.name == "redis_ratelimit_client"]


def test_wsgi_restart_is_not_an_outage(caplog: Any) -> None:
    s = Server()
    app = wsgi_app(per_client(1000, "restart"), s.port, timeout=2.0)

    def batch(n: int) -> List[int]:
        statuses: List[int] = []
        barrier = threading.Barrier(n)

        def one(i: int) -> None:
            client = app.test_client()
            barrier.wait()
            statuses.append(client.get("/", headers={"X-Client-Id": f"c{i}"}).status_code)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        return statuses

    try:
        assert batch(8) == [200] * 8
        s.kill()
        s.start(port=s.port)
        for _ in range(3):
            assert batch(8) == [200] * 8
    finally:
        s.close()
    assert not [r for r in caplog.records if r.name == "redis_ratelimit_client"]


# --- header fields, skip, routes ---------------------------------------


def test_a_handlers_own_fields_win(r: redis.Redis, server: Server, kind: str) -> None:
    d = Driver(kind, per_client(10, f"own-{kind}"), server.port, trust=False)
    try:
        resp = d.raw("/own")
        if kind == "asgi":
            lines = resp.headers.multi_items()
        else:
            lines = list(resp.headers.items())
            resp.close()
    finally:
        d.close()
    names = [k.lower() for k, _ in lines]
    assert names.count("ratelimit") == 1 and names.count("retry-after") == 1, lines
    fields = {k.lower(): v for k, v in lines}
    assert fields["ratelimit"] == '"own";r=0;t=9' and fields["retry-after"] == "9"
    assert fields["x-ratelimit-limit"] == "10"  # the middleware's, where the handler set none


def test_skip_spends_nothing(r: redis.Redis, server: Server, kind: str) -> None:
    d = Driver(kind, per_client(1, f"skip-{kind}"), server.port,
               skip=lambda req: req.path == "/health" or req.path.startswith("/assets/"))
    try:
        for path in ["/health", "/health", "/assets/app.js"]:
            status, fields, _ = d.get(path)
            assert (status, fields) == (200, {})
        assert d.get("/")[0] == 200
        assert d.get("/")[0] == 429
    finally:
        d.close()


def test_route_rules_are_decided_with_the_global_ones(r: redis.Redis, server: Server,
                                                      kind: str) -> None:
    from redis_ratelimit_client import Route

    login = Policy([Rule("login", f"rl:login-{kind}:$client", Slide(1, 60))])
    d = Driver(kind, per_client(3, f"global-{kind}"), server.port,
               routes=[Route("/login", login, methods=["GET"]), Route("/api/*", login)])
    try:
        status, fields, _ = d.get("/login")
        assert status == 200
        assert fields["ratelimit-policy"] == '"default";q=3;w=60, "login";q=1;w=60'
        status, fields, _ = d.get("/login")
        assert status == 429 and fields["ratelimit"].startswith('"login";r=0;')
        # The refused /login spent nothing of the global limit: 2 left.
        assert d.get("/")[1]["x-ratelimit-remaining"] == "1"
        assert d.get("/")[1]["x-ratelimit-remaining"] == "0"
        assert d.get("/")[0] == 429
    finally:
        d.close()
    assert RateLimiter(r).inspect(f"rl:global-{kind}:alice").units == 3  # type: ignore[union-attr]


def test_route_rules_must_fit_one_call() -> None:
    from redis_ratelimit_client import Route
    from redis_ratelimit_client.asgi import RateLimitMiddleware

    both = Policy([Rule("default", "rl:a:$client", Slide(1, 1))])
    with pytest.raises(ValueError, match="must differ"):
        RateLimitMiddleware(None, limiter=None, policy=both,  # type: ignore[arg-type]
                            routes=[Route("/x", both)], group_by_slot=False)


def test_fastapi_dependency(r: redis.Redis, server: Server) -> None:
    from fastapi import Depends, FastAPI
    from starlette.testclient import TestClient

    from redis_ratelimit_client.dependency import RateLimit

    client = redis.asyncio.Redis(port=server.port)
    limit_login = RateLimit(limiter=AsyncRateLimiter(client),
                            policy=Policy([Rule("login", "rl:dep:$ip", Slide(1, 60))]))
    app = FastAPI()

    @app.post("/login", dependencies=[Depends(limit_login)])
    async def login() -> dict[str, bool]:
        return {"ok": True}

    @app.get("/")
    async def root() -> dict[str, bool]:
        return {"ok": True}

    with TestClient(app) as http:
        first = http.post("/login")
        assert first.status_code == 200 and first.json() == {"ok": True}
        assert first.headers["RateLimit"] == '"login";r=0;t=60'
        second = http.post("/login")
        assert second.status_code == 429 and second.headers["Retry-After"] == "60"
        free = http.get("/")
        assert free.status_code == 200 and "RateLimit" not in free.headers
    assert r.exists("rl:dep:testclient")


# --- the module's detection under an ACL ---------------------------------


def test_detection_where_command_list_is_refused(r: redis.Redis, server: Server) -> None:
    r.execute_command("ACL", "SETUSER", "nolist", "on", ">pw", "~*", "&*", "+@all",
                      "-command|list")
    try:
        limited = redis.Redis(port=server.port, username="nolist", password="pw")
        with pytest.raises(redis.exceptions.NoPermissionError):
            limited.execute_command("COMMAND", "LIST")
        rl = RateLimiter(limited)
        assert rl.slide("rl:acl", 2, 60).remaining == 1
        assert rl.backend.kind == "module"

        async def run() -> str:
            alimited = redis.asyncio.Redis(port=server.port, username="nolist", password="pw")
            arl = AsyncRateLimiter(alimited)
            assert (await arl.slide("rl:acl", 2, 60)).remaining == 0
            kind = (await arl.get_backend()).kind
            await alimited.aclose()
            return kind

        assert asyncio.run(run()) == "module"
    finally:
        r.execute_command("ACL", "DELUSER", "nolist")
