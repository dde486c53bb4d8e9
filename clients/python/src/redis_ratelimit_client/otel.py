"""The middlewares' metrics through the OpenTelemetry metrics API (the
``otel`` extra: ``pip install 'redis-ratelimit-client[otel]'``).

    from redis_ratelimit_client.otel import OpenTelemetryMetrics
    app.add_middleware(RateLimitMiddleware, ..., metrics=OpenTelemetryMetrics())

Meter ``redis-ratelimit``; instruments (docs/metrics.md):

- counter ``ratelimit.decisions`` (``{decision}``), one per matched rule per
  request, attributes ``ratelimit.rule`` and ``ratelimit.result``
  (``allowed``, ``limited``, ``shadow_limited``, ``error``);
- histogram ``ratelimit.decision.duration`` (``s``), one per request that
  called Redis, attribute ``ratelimit.result`` (``allowed``, ``limited``,
  ``error``).

No key is ever an attribute (keys are unbounded; rule names are not)."""

from __future__ import annotations

from typing import Optional, Sequence

try:
    from opentelemetry import metrics
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError(
        "redis_ratelimit_client.otel needs the OpenTelemetry API: "
        "pip install 'redis-ratelimit-client[otel]' (or opentelemetry-api)"
    ) from e

METER = "redis-ratelimit"
DECISIONS = "ratelimit.decisions"
DURATION = "ratelimit.decision.duration"
RULE = "ratelimit.rule"
RESULT = "ratelimit.result"
#: The duration histogram's bucket bounds in seconds (a decision is a
#: round trip to Redis: tenths of a millisecond to the middleware's timeout).
BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
           1.0)


class OpenTelemetryMetrics:
    """A middleware's ``metrics=``: records on a meter of ``meter_provider``
    (default: the global one, ``opentelemetry.metrics.get_meter_provider()``)."""

    def __init__(self, meter_provider: Optional[metrics.MeterProvider] = None) -> None:
        from . import __version__

        meter = metrics.get_meter(METER, __version__, meter_provider=meter_provider)
        self.decisions = meter.create_counter(
            DECISIONS, unit="{decision}",
            description="Rate limit decisions, one per matched rule per request")
        self.duration = meter.create_histogram(
            DURATION, unit="s", description="How long a request's rate limit decision took",
            explicit_bucket_boundaries_advisory=BUCKETS)

    def record(self, rules: Sequence[str], outcomes: Sequence[str], result: str,
               seconds: Optional[float]) -> None:
        for rule, outcome in zip(rules, outcomes):
            self.decisions.add(1, {RULE: rule, RESULT: outcome})
        if seconds is not None:
            self.duration.record(seconds, {RESULT: result})
