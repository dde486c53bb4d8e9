"""The middlewares' rules with BLOCK and SHADOW, and their metrics through
the OpenTelemetry SDK's InMemoryMetricReader, against a real server: a
refusal counts ``limited`` on the binding rule, a shadow rule that would
refuse ``shadow_limited`` while the request succeeds, an outage ``error``;
and the Grafana dashboard's queries, checked against the Prometheus names
the SDK's exporter renders of what the package emits."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from typing import Any, Dict, Iterator, Set, Tuple

import pytest
import redis
from apps import Driver
from conftest import ROOT, Server, free_port

try:
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from prometheus_client import REGISTRY, generate_latest
except ImportError as e:  # the tests fail loudly, saying what to run
    pytest.fail(f"the otel extra's test packages are missing ({e}): run scripts/deps.sh --test "
                "(it installs clients/python/requirements-test.txt into tmp/python-client/venv)",
                pytrace=False)

from redis_ratelimit_client import Policy, RateLimiter, Rule, Slide, Throttle
from redis_ratelimit_client.otel import OpenTelemetryMetrics

KINDS = ["asgi", "wsgi"]
DASHBOARD = ROOT / "docs" / "grafana" / "ratelimit-dashboard.json"


@pytest.fixture(params=KINDS)
def kind(request: Any) -> str:
    return str(request.param)


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


def metrics_of(reader: InMemoryMetricReader) -> OpenTelemetryMetrics:
    return OpenTelemetryMetrics(MeterProvider(metric_readers=[reader]))


def seen(reader: InMemoryMetricReader) -> Tuple[Counter[Tuple[str, str]], Counter[str]]:
    """(decisions per (rule, result), duration records per result); checks
    the scope, the units and that no other attribute is set."""
    decisions: Counter[Tuple[str, str]] = Counter()
    durations: Counter[str] = Counter()
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            assert sm.scope.name == "redis-ratelimit"
            for m in sm.metrics:
                for p in m.data.data_points:
                    a = dict(p.attributes or {})
                    if m.name == "ratelimit.decisions":
                        assert m.unit == "{decision}" and set(a) == {"ratelimit.rule",
                                                                   "ratelimit.result"}
                        decisions[(str(a["ratelimit.rule"]), str(a["ratelimit.result"]))] += int(
                            p.value)
                    else:
                        assert m.name == "ratelimit.decision.duration" and m.unit == "s"
                        assert set(a) == {"ratelimit.result"}
                        durations[str(a["ratelimit.result"])] += int(p.count)
                        assert 0 < p.sum < 5
    return decisions, durations


def test_the_package_works_without_opentelemetry() -> None:
    # redis-py (and FastAPI, for .dependency) import opentelemetry themselves
    # where it is installed: the check is that the package and its ASGI and
    # WSGI middlewares import with every opentelemetry module made
    # unimportable, and that .otel then says what to install.
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'opentelemetry':\n"
            "            raise ImportError('blocked: ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import redis_ratelimit_client, redis_ratelimit_client.asgi\n"
            "import redis_ratelimit_client.wsgi\n"
            "try:\n"
            "    import redis_ratelimit_client.otel\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr
    assert "pip install 'redis-ratelimit-client[otel]'" in out.stdout


def test_refused_counts_limited_on_the_binding_rule(r: redis.Redis, server: Server, kind: str,
                                                    reader: InMemoryMetricReader) -> None:
    policy = Policy([Rule("burst", "rl:m:b:$client", Throttle(0, 1, 60)),
                     Rule("minute", "rl:m:m:$client", Slide(100, 60))])
    d = Driver(kind, policy, server.port, metrics=metrics_of(reader))
    try:
        assert [d.get("/")[0] for _ in range(2)] == [200, 429]
    finally:
        d.close()
    decisions, durations = seen(reader)
    assert decisions == {("burst", "allowed"): 1, ("burst", "limited"): 1,
                         ("minute", "allowed"): 2}
    assert durations == {"allowed": 1, "limited": 1}


def test_a_shadow_rule_never_refuses(r: redis.Redis, server: Server, kind: str,
                                     reader: InMemoryMetricReader) -> None:
    policy = Policy.parse("enforced rl:s:e:$client SLIDE 100 60; "
                          "new rl:s:n:$client SLIDE 1 60 SHADOW")
    assert policy.rules[1].shadow and not policy.rules[0].shadow
    d = Driver(kind, policy, server.port, metrics=metrics_of(reader))
    try:
        answers = [d.get("/") for _ in range(2)]
    finally:
        d.close()
    assert [a[0] for a in answers] == [200, 200]
    # The client sees the enforced rules only.
    assert answers[1][1]["ratelimit-policy"] == '"enforced";q=100;w=60'
    assert answers[1][1]["ratelimit"] == '"enforced";r=98;t=60'
    decisions, durations = seen(reader)
    assert decisions == {("enforced", "allowed"): 2, ("new", "allowed"): 1,
                         ("new", "shadow_limited"): 1}
    assert durations == {"allowed": 2}
    state = RateLimiter(r).inspect("rl:s:n:alice")
    assert state is not None and getattr(state, "units", None) == 1


def test_every_rule_shadow(r: redis.Redis, server: Server, kind: str,
                           reader: InMemoryMetricReader) -> None:
    # The module refuses an all-SHADOW RL.ALLOW: each rule goes alone,
    # unshadowed, in one pipeline, its refusal ignored.
    r.config_resetstat()
    policy = Policy([Rule("a", "rl:as:a:$client", Slide(1, 60, shadow=True)),
                     Rule("b", "rl:as:b:$client", Slide(5, 60, shadow=True))])
    d = Driver(kind, policy, server.port, metrics=metrics_of(reader))
    try:
        answers = [d.get("/") for _ in range(3)]
    finally:
        d.close()
    assert [a[0] for a in answers] == [200, 200, 200]
    assert answers[2][1] == {}  # no enforced rule: no header field
    decisions, durations = seen(reader)
    assert decisions == {("a", "allowed"): 1, ("a", "shadow_limited"): 2, ("b", "allowed"): 3}
    assert durations == {"allowed": 3}
    limiter = RateLimiter(r)
    a, b = limiter.inspect("rl:as:a:alice"), limiter.inspect("rl:as:b:alice")
    assert getattr(a, "units", None) == 1 and getattr(b, "units", None) == 3
    stats = r.info("commandstats")
    assert sum(int(v["calls"]) for k, v in stats.items() if k.lower() == "cmdstat_rl.allow") == 6


def test_a_blocked_request_is_refused(r: redis.Redis, server: Server, kind: str,
                                      reader: InMemoryMetricReader) -> None:
    policy = Policy.parse("login rl:blk:$client SLIDE 1 1 BLOCK 30")
    assert policy.rules[0].limit == Slide(1, 1, block=30)
    d = Driver(kind, policy, server.port, metrics=metrics_of(reader))
    try:
        answers = [d.get("/") for _ in range(3)]
        other = d.get("/", client_id="bob")
    finally:
        d.close()
    assert [a[0] for a in answers] == [200, 429, 429]
    assert answers[1][1]["retry-after"] == "30" and answers[2][1]["retry-after"] == "30"
    assert other[0] == 200
    decisions, _ = seen(reader)
    assert decisions == {("login", "allowed"): 2, ("login", "limited"): 2}


def test_an_outage_counts_error_for_every_rule(kind: str, reader: InMemoryMetricReader
                                               ) -> None:
    policy = Policy([Rule("burst", "rl:o:b:$client", Throttle(0, 1, 60)),
                     Rule("minute", "rl:o:m:$client", Slide(100, 60))])
    d = Driver(kind, policy, free_port(), metrics=metrics_of(reader))
    try:
        status = d.get("/")[0]
    finally:
        d.close()
    assert status == 503
    decisions, durations = seen(reader)
    assert decisions == {("burst", "error"): 1, ("minute", "error"): 1}
    assert durations == {"error": 1}


def test_fastapi_dependency_metrics(r: redis.Redis, server: Server,
                                    reader: InMemoryMetricReader) -> None:
    import redis.asyncio
    from fastapi import Depends, FastAPI
    from starlette.testclient import TestClient

    from redis_ratelimit_client import AsyncRateLimiter
    from redis_ratelimit_client.dependency import RateLimit

    limiter = AsyncRateLimiter(redis.asyncio.Redis(port=server.port))
    limit = RateLimit(limiter=limiter, metrics=metrics_of(reader),
                      policy=Policy.parse("login rl:fa:$ip SLIDE 1 60; "
                                          "trial rl:fa:t:$ip SLIDE 1 60 SHADOW"))
    app = FastAPI()

    @app.get("/login", dependencies=[Depends(limit)])
    async def login() -> Dict[str, str]:
        return {"ok": "yes"}

    with TestClient(app) as client:
        got = [client.get("/login") for _ in range(2)]
    assert [g.status_code for g in got] == [200, 429]
    decisions, durations = seen(reader)
    assert decisions == {("login", "allowed"): 1, ("login", "limited"): 1,
                         ("trial", "allowed"): 1, ("trial", "shadow_limited"): 1}
    assert durations == {"allowed": 1, "limited": 1}


# The Grafana dashboard ------------------------------------------------------


def prometheus_names(server: Server) -> Tuple[Set[str], Set[str]]:
    """The metric and label names the OTel Prometheus exporter renders of
    every outcome the package emits (allowed, limited, shadow_limited,
    error), with the names the in-memory reader saw."""
    memory = InMemoryMetricReader()
    prometheus = PrometheusMetricReader()
    provider = MeterProvider(metric_readers=[memory, prometheus])
    metrics = OpenTelemetryMetrics(provider)
    policy = Policy.parse("burst rl:g:b:$client THROTTLE 0 1 60; "
                          "trial rl:g:t:$client SLIDE 1 60 SHADOW")
    try:
        d = Driver("asgi", policy, server.port, metrics=metrics)
        try:
            assert [d.get("/")[0] for _ in range(2)] == [200, 429]
        finally:
            d.close()
        d = Driver("asgi", policy, free_port(), metrics=metrics)
        try:
            assert d.get("/")[0] == 503
        finally:
            d.close()
        text = generate_latest(REGISTRY).decode()
    finally:
        provider.shutdown()  # takes the exporter's collector out of REGISTRY
    names = {m.name for rm in memory.get_metrics_data().resource_metrics
             for sm in rm.scope_metrics for m in sm.metrics}
    assert names == {"ratelimit.decisions", "ratelimit.decision.duration"}
    metric_names: Set[str] = set()
    labels: Set[str] = set()
    for line in text.splitlines():
        m = re.match(r"^(ratelimit_\w+)(?:\{(.*)\})? ", line)
        if m:
            metric_names.add(m.group(1))
            labels |= set(re.findall(r'(\w+)="', m.group(2) or ""))
    return metric_names, labels


def dashboard_queries() -> Iterator[str]:
    board = json.loads(DASHBOARD.read_text())
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            yield target["expr"]
    for variable in board.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable["query"]
            yield query if isinstance(query, str) else query["query"]


def test_the_dashboard_queries_only_emitted_names(r: redis.Redis, server: Server) -> None:
    metric_names, labels = prometheus_names(server)
    # What ROUND5.md fixes for every language (docs/metrics.md).
    assert {"ratelimit_decisions_total", "ratelimit_decision_duration_seconds_bucket"} <= \
        metric_names
    assert {"ratelimit_rule", "ratelimit_result"} <= labels
    queries = list(dashboard_queries())
    assert len(queries) >= 5
    used: Set[str] = set()
    for expr in queries:
        for word in re.findall(r"\bratelimit_\w+", expr):
            used.add(word)
            where = labels if word in ("ratelimit_rule", "ratelimit_result") else metric_names
            assert word in where, f"{word} in {expr!r} is not a name the package emits"
        for value in re.findall(r'ratelimit_result\s*=~?\s*"([^"]+)"', expr):
            assert set(value.split("|")) <= {"allowed", "limited", "shadow_limited", "error"}
    # Every panel the brief asks for is there.
    assert "ratelimit_decision_duration_seconds_bucket" in used
    joined = "\n".join(queries)
    for result in ("limited", "shadow_limited", "error"):
        assert f'ratelimit_result="{result}"' in joined
    assert "histogram_quantile(0.99" in joined
