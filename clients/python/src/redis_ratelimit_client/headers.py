"""The HTTP header fields of a result: the IETF RateLimit fields
(draft-ietf-httpapi-ratelimit-headers-11), the ``X-RateLimit-*`` trio and
``Retry-After``, exactly as the module's README documents them."""

from __future__ import annotations

import functools
from typing import Dict, List, Optional, Sequence, Union

from ._limits import Lease, Limit, Quota, Slice, Slide, Throttle
from ._results import AllowResult, Result


def _seconds(value: int, ms: bool) -> int:
    """A reply's time in whole seconds, rounded up (-1 stays -1)."""
    if not ms or value < 0:
        return value
    return -(-value // 1000)


def policy_window(limit: Limit, ms: bool = False) -> Optional[int]:
    """The ``w`` of RateLimit-Policy in seconds: the window of SLIDE and
    SLICE; for THROTTLE the time its capacity takes to refill, capacity x
    period / count rounded up (so that q / w is its rate); None for LEASE
    and QUOTA, which have no fixed window."""
    scale = 1000 if ms else 1
    if isinstance(limit, Throttle):
        return max(1, -(-(limit.max_burst + 1) * limit.period // (limit.count * scale)))
    if isinstance(limit, (Slide, Slice)):
        return -(-limit.window // scale)
    return None


@functools.lru_cache(maxsize=1024)
def sf_string(value: str) -> str:
    """A Structured Field String (RFC 9651): quoted, \\ and " escaped."""
    if any(ord(ch) < 0x20 or ord(ch) > 0x7E for ch in value):
        raise ValueError(f"a policy name must be printable ASCII: {value!r}")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def policy_item(name: str, limit: Limit, result: Result) -> str:
    """One item of RateLimit-Policy."""
    if isinstance(limit, Lease):
        return f'{sf_string(name)};q={result.limit};qu="concurrent-requests"'
    window = policy_window(limit, result.ms)
    if window is None or isinstance(limit, Quota):
        return f"{sf_string(name)};q={result.limit}"
    return f"{sf_string(name)};q={result.limit};w={window}"


def rate_limit_headers(
    result: Union[Result, AllowResult],
    limits: Union[Limit, Sequence[Limit]],
    names: Union[str, Sequence[str]] = "default",
) -> Dict[str, str]:
    """The header fields for ``result``: for a limiter's Result one limit
    and one name; for an AllowResult the limits and names in the order of
    the call (RateLimit-Policy lists them all, the others carry the binding
    one's numbers). Times are seconds, rounded up from a call made with MS.

    RateLimit-Policy, RateLimit, X-RateLimit-Limit, X-RateLimit-Remaining,
    X-RateLimit-Reset, and Retry-After when limited and retry_after is not
    -1 (a request that can never fit)."""
    limit_list: List[Limit] = (
        [limits] if isinstance(limits, (Throttle, Slide, Slice, Lease, Quota)) else list(limits)
    )
    name_list = [names] if isinstance(names, str) else list(names)
    if isinstance(result, AllowResult):
        results = list(result.results)
        binding = result.index - 1
    else:
        results = [result]
        binding = 0
    if not (len(limit_list) == len(name_list) == len(results)):
        raise ValueError(
            f"{len(results)} results need as many limits and names "
            f"({len(limit_list)} limits, {len(name_list)} names given)"
        )
    head = results[binding]
    retry_after = _seconds(head.retry_after, head.ms)
    reset_after = _seconds(head.reset_after, head.ms)
    t = retry_after if head.limited and retry_after >= 0 else reset_after
    headers = {
        "RateLimit-Policy": ", ".join(
            policy_item(n, lim, r) for n, lim, r in zip(name_list, limit_list, results)
        ),
        "RateLimit": f"{sf_string(name_list[binding])};r={head.remaining};t={t}",
        "X-RateLimit-Limit": str(head.limit),
        "X-RateLimit-Remaining": str(head.remaining),
        "X-RateLimit-Reset": str(reset_after),
    }
    if head.limited and retry_after >= 0:
        headers["Retry-After"] = str(retry_after)
    return headers
