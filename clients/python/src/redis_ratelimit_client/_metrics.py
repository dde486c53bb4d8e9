"""What a middleware reports of its decisions, to any metrics library: the
package itself imports none (``redis_ratelimit_client.otel`` is the
OpenTelemetry one, with the ``otel`` extra). docs/metrics.md names them."""

from __future__ import annotations

from typing import Optional, Protocol, Sequence

RESULTS = ("allowed", "limited", "shadow_limited", "error")
"""The values of ``ratelimit.result``."""


class DecisionMetrics(Protocol):
    """Told once per request a middleware decided (or failed to)."""

    def record(self, rules: Sequence[str], outcomes: Sequence[str], result: str,
               seconds: Optional[float]) -> None:
        """``rules``: the names of the rules the request matched, ``outcomes``
        each one's own (``allowed``, ``limited``, ``shadow_limited``,
        ``error``); ``result`` the request's (``allowed``, ``limited``,
        ``error``); ``seconds`` how long the decision took, None when no
        command was sent."""
