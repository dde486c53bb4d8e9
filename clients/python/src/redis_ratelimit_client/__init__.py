"""Typed client for the redis-ratelimit module (the RL.* commands) on
redis-py: synchronous and asyncio, standalone and cluster."""

from __future__ import annotations

from typing import Any, Dict

from ._backend import (
    AsyncBackend,
    AsyncModuleBackend,
    Backend,
    ModuleBackend,
    detect_prefix,
    detect_prefix_async,
    register_backend,
)
from ._errors import (
    ArgumentError,
    CommandError,
    LeaseRefused,
    ModuleNotLoadedError,
    RateLimited,
    RateLimitError,
    WrongTypeError,
)
from ._lease import AsyncHeldLease, HeldLease
from ._limits import Lease, Limit, Quota, Slice, Slide, Throttle
from ._metrics import DecisionMetrics
from ._results import (
    AllowResult,
    Holder,
    Inspection,
    LeaseState,
    QuotaState,
    Result,
    SliceState,
    SlideState,
    ThrottleState,
    TopEntry,
)
from .client import AsyncRateLimiter, RateLimiter
from .headers import rate_limit_headers
from .policy import Decision, Identity, Policy, RequestInfo, Route, Rule

__version__ = "0.4.0"


def bounded_client_options(timeout: float, *, asyncio: bool = False) -> Dict[str, Any]:
    """redis-py client options for a limiter in a request path: connect and
    read within ``timeout`` seconds, and one retry, at once, on a fresh
    connection when the one taken from the pool was closed under us (a
    server restart, an idle timeout): that is not an outage. No retry after
    a timeout (a middleware's deadline covers the whole decision).
    ``redis.Redis(**bounded_client_options(0.25))``."""
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError

    if asyncio:
        from redis.asyncio.retry import Retry as AsyncRetry

        return {"socket_connect_timeout": timeout, "socket_timeout": timeout,
                "retry": AsyncRetry(NoBackoff(), 1, supported_errors=(RedisConnectionError,))}
    from redis.retry import Retry

    return {"socket_connect_timeout": timeout, "socket_timeout": timeout,
            "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,))}


__all__ = [
    "AllowResult",
    "ArgumentError",
    "AsyncBackend",
    "AsyncHeldLease",
    "AsyncModuleBackend",
    "AsyncRateLimiter",
    "Backend",
    "CommandError",
    "Decision",
    "DecisionMetrics",
    "HeldLease",
    "Holder",
    "Identity",
    "Inspection",
    "Lease",
    "LeaseRefused",
    "LeaseState",
    "Limit",
    "ModuleBackend",
    "ModuleNotLoadedError",
    "Policy",
    "Quota",
    "QuotaState",
    "RateLimitError",
    "RateLimited",
    "RateLimiter",
    "RequestInfo",
    "Result",
    "Route",
    "Rule",
    "Slice",
    "SliceState",
    "Slide",
    "SlideState",
    "Throttle",
    "ThrottleState",
    "TopEntry",
    "WrongTypeError",
    "bounded_client_options",
    "detect_prefix",
    "detect_prefix_async",
    "rate_limit_headers",
    "register_backend",
]
