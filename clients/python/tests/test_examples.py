"""examples/python, run for real: commands.py against a test server, and the
FastAPI application (app.py) through Starlette's TestClient."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from types import ModuleType
from typing import Any, List

import pytest
import redis
from conftest import ROOT, Server
from starlette.testclient import TestClient

from redis_ratelimit_client import RateLimiter

EXAMPLES = ROOT / "examples" / "python"


def test_commands(r: redis.Redis, server: Server) -> None:
    env = {**os.environ, "REDIS_URL": server.url()}
    out = subprocess.run([sys.executable, str(EXAMPLES / "commands.py")], env=env,
                         capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "RL.THROTTLE rl:example:throttle 15 30 60"
    assert lines[1] == "  limited=0 limit=16 remaining=15 retry_after=-1 reset_after=2"
    assert lines[3] == "  limited=0 limit=10 remaining=9 retry_after=-1 reset_after=60"
    assert lines[7].startswith("  limited=0 limit=10 remaining=9 retry_after=-1 reset_after=1 "
                               "binding=1")
    assert lines[8] == "  limit 1: limited=0 limit=10 remaining=9 retry_after=-1 reset_after=1"
    assert lines[12].startswith("  limited=0 limit=10 remaining=8")
    assert lines[16] == "RL.INSPECT rl:example:slide"
    assert lines[17].startswith("  type=slide ttl=")
    assert " units=1 entries=1 " in lines[17]
    assert lines[19] == "  limited=0 limit=10 remaining=10 retry_after=-1 reset_after=0"
    assert len(lines) == 20


def load_app(monkeypatch: Any, **env: str) -> ModuleType:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    spec = importlib.util.spec_from_file_location("example_app", EXAMPLES / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fastapi_app(r: redis.Redis, server: Server, monkeypatch: Any) -> None:
    module = load_app(monkeypatch, REDIS_URL=server.url(),
                      RL_LIMITS="default rl:http:$client THROTTLE 2 1 60", RL_REFUND_5XX="yes",
                      RL_TRUSTED_PROXIES="*", RL_CLIENT_HEADER="X-Client-Id")
    with TestClient(module.app) as client:
        got = [client.get("/", headers={"X-Client-Id": "alice"}) for _ in range(4)]
        assert [g.status_code for g in got] == [200, 200, 200, 429]
        assert got[0].text == "ok\n"
        assert got[0].headers["RateLimit-Policy"] == '"default";q=3;w=180'
        assert got[3].headers["Retry-After"] == "60"
        failed = client.get("/status/503", headers={"X-Client-Id": "bob"})
        assert failed.status_code == 503 and failed.headers["RateLimit"] == '"default";r=2;t=60'
    for _ in range(100):
        if not r.exists("rl:http:bob"):
            break
        import time

        time.sleep(0.02)
    assert not r.exists("rl:http:bob")


def test_fastapi_app_default_identity(r: redis.Redis, server: Server, monkeypatch: Any) -> None:
    """Without RL_TRUSTED_PROXIES no header picks the bucket; /health is
    skipped."""
    module = load_app(monkeypatch, REDIS_URL=server.url(),
                      RL_LIMITS="default rl:http:$client THROTTLE 2 1 60")
    with TestClient(module.app) as client:
        got = [client.get("/", headers={"X-Client-Id": f"c{i}"}).status_code for i in range(4)]
        health = client.get("/health")
    assert got == [200, 200, 200, 429]
    assert health.status_code == 200 and "RateLimit" not in health.headers


def test_fastapi_app_fails_closed(monkeypatch: Any, unused_port: int) -> None:
    module = load_app(monkeypatch, REDIS_URL=f"redis://127.0.0.1:{unused_port}",
                      RL_TIMEOUT_MS="200")
    with TestClient(module.app) as client:
        got = client.get("/")
    assert (got.status_code, got.text) == (503, "rate limiter unavailable\n")
    assert "RateLimit" not in got.headers


@pytest.fixture
def unused_port() -> int:
    from conftest import free_port

    return free_port()


# --- the README's recipes (examples/python/recipes.py) ------------------

README = (ROOT / "clients" / "python" / "README.md").read_text()


def recipes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("recipes", EXAMPLES / "recipes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_shows_the_recipes_as_tested() -> None:
    import re
    import textwrap

    text = (EXAMPLES / "recipes.py").read_text()
    found = re.findall(r"# \[([a-z0-9-]+)\]\n(.*?)\n *# \[/\1\]", text, re.S)
    assert [name for name, _ in found] == ["named", "one-route", "exempt", "proxy", "lease-429"]
    for name, body in found:
        assert textwrap.dedent(body) in README, f"the README's {name} recipe differs"


@pytest.fixture
def aclient(server: Server) -> Any:
    import redis.asyncio

    return redis.asyncio.Redis(port=server.port)


def test_recipe_named_limits(r: redis.Redis, aclient: Any) -> None:
    with TestClient(recipes().named_limits(aclient)) as http:
        got = http.get("/")
    assert got.headers["RateLimit-Policy"] == '"per-second";q=10;w=1, "per-hour";q=1000;w=3600'
    assert got.headers["RateLimit"] == '"per-second";r=9;t=1'


def test_recipe_one_route(r: redis.Redis, aclient: Any) -> None:
    with TestClient(recipes().one_route(aclient)) as http:
        logins = [http.post("/login").status_code for _ in range(6)]
        assert logins == [200] * 5 + [429]
        # The refused login spent none of "default" (100 a minute): 5 spent.
        assert http.get("/export").headers["X-RateLimit-Remaining"] == "0"  # the export limit binds
        assert http.get("/export").status_code == 429
    assert RateLimiter(r).inspect("rl:testclient").units == 7  # type: ignore[union-attr]


def test_recipe_exempt(r: redis.Redis, aclient: Any) -> None:
    with TestClient(recipes().exempt(aclient)) as http:
        got = [http.get(p) for p in ("/health", "/docs", "/openapi.json")]
    assert [g.status_code for g in got] == [200, 200, 200]
    assert all("RateLimit" not in g.headers for g in got)
    assert not r.exists("rl:testclient")


def test_recipe_behind_a_proxy(r: redis.Redis, aclient: Any) -> None:
    app = recipes().behind_a_proxy(aclient)
    import httpx

    async def run() -> None:
        # The peer of ASGITransport is 127.0.0.1 (a trusted proxy here).
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            await http.get("/", headers={"X-Forwarded-For": "6.6.6.6, 198.51.100.7"})
            await http.get("/", headers={"X-Client-Id": "acme"})
        untrusted = httpx.ASGITransport(app=app, client=("192.0.2.1", 5000))
        async with httpx.AsyncClient(transport=untrusted, base_url="http://t") as http:
            await http.get("/", headers={"X-Forwarded-For": "198.51.100.9", "X-Client-Id": "x"})

    import asyncio

    asyncio.run(run())
    assert sorted(k.decode() for k in r.keys("rl:*")) == [
        "rl:192.0.2.1", "rl:198.51.100.7", "rl:acme"]


def test_recipe_refused_lease(r: redis.Redis, aclient: Any) -> None:
    limiter = RateLimiter(r)
    key = "rl:{tenant:acme}:exports"
    with TestClient(recipes().refused_lease(aclient)) as http:
        ok = http.post("/tenants/acme/export")
        assert (ok.status_code, ok.text) == (200, "export of acme\n")
        assert not r.exists(key)  # released at the block's end
        limiter.lease(key, 2, 300, "job-1")
        limiter.lease(key, 2, 300, "job-2")
        refused = http.post("/tenants/acme/export")
    assert refused.status_code == 429
    assert refused.headers["RateLimit-Policy"] == '"exports";q=2;qu="concurrent-requests"'
    retry = int(refused.headers["Retry-After"])
    assert 295 <= retry <= 300  # the leases' own expiry: nobody released them
    assert refused.headers["RateLimit"] == f'"exports";r=0;t={retry}'


def run_example(name: str, server: Server, **env: str) -> List[str]:
    out = subprocess.run([sys.executable, str(EXAMPLES / name)],
                         env={**os.environ, "REDIS_URL": server.url(), **env},
                         capture_output=True, text=True, timeout=120, cwd="/")
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_llm(r: redis.Redis, server: Server) -> None:
    lines = run_example("llm.py", server)
    # Allowed, the binding limit is the lease (the least remaining); refused,
    # the token limit, which 80,150 more would take over 100,000.
    assert lines == [
        "ask u1 estimate=2150: limited=0 binding=1 retry_after=-1 remaining=[3, 59, 97850]",
        "  used=1150: settled, tokens remaining=98850",
        "ask u1 estimate=40200: limited=0 binding=1 retry_after=-1 remaining=[3, 58, 58650]",
        "  used=20200: settled, tokens remaining=78650",
        lines[4],
    ]
    assert re.match(r"^ask u1 estimate=80150: limited=1 binding=3 retry_after=(59|60) "
                    r"remaining=\[3, 57, 78650\]$", lines[4]), lines[4]
    # Every lease was given back (the refused call took none).
    state = RateLimiter(r).inspect("rl:llm:{u1}:inflight")
    assert state is None or getattr(state, "held", None) == 0


@pytest.mark.parametrize("mode", ["threads", "asyncio"])
def test_pacing(r: redis.Redis, server: Server, mode: str) -> None:
    started = time.monotonic()
    lines = run_example("pacing.py", server, MODE=mode, WORKERS="4", CALLS="12")
    elapsed = time.monotonic() - started
    assert lines[0].startswith(f"mode={mode} workers=4 calls=12 ")
    # 12 turns, 120 ms apart on the server's clock: 11 gaps, however many workers.
    assert elapsed >= 11 * 0.12 * 0.95
    m = re.match(r"^gap between calls: min=(\d+) ms mean=(\d+) ms", lines[1])
    assert m is not None, lines
    assert int(m.group(1)) >= 60 and 110 <= int(m.group(2)) <= 200
