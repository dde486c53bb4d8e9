"""The header fields of a result, as the README and examples/README.md
document them (unit tests: no server)."""

from __future__ import annotations

import pytest

from redis_ratelimit_client import (
    AllowResult,
    Lease,
    Quota,
    Result,
    Slice,
    Slide,
    Throttle,
    rate_limit_headers,
)


def test_a_throttle_allowed_and_refused() -> None:
    limit = Throttle(2, 1, 60)
    assert rate_limit_headers(Result(False, 3, 2, -1, 60), limit) == {
        "RateLimit-Policy": '"default";q=3;w=180',
        "RateLimit": '"default";r=2;t=60',
        "X-RateLimit-Limit": "3",
        "X-RateLimit-Remaining": "2",
        "X-RateLimit-Reset": "60",
    }
    assert rate_limit_headers(Result(True, 3, 0, 60, 180), limit) == {
        "RateLimit-Policy": '"default";q=3;w=180',
        "RateLimit": '"default";r=0;t=60',
        "X-RateLimit-Limit": "3",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": "180",
        "Retry-After": "60",
    }
    assert rate_limit_headers(Result(False, 10, 9, -1, 6), Throttle(9, 10, 60))[
        "RateLimit-Policy"] == '"default";q=10;w=60'


def test_never_fits_has_no_retry_after() -> None:
    h = rate_limit_headers(Result(True, 16, 16, -1, 0), Throttle(15, 30, 60), "api")
    assert "Retry-After" not in h
    assert h["RateLimit"] == '"api";r=16;t=0'


def test_several_limits_name_the_binding_one() -> None:
    limits = [Slide(2, 1), Slice(5, 60, 12), Throttle(9, 10, 60), Lease(2, 60),
              Quota(1000, "DAY")]
    results = (Result(False, 2, 1, -1, 1), Result(False, 5, 4, -1, 63),
               Result(False, 10, 9, -1, 6), Result(True, 2, 0, 60, 60),
               Result(False, 1000, 999, -1, 5000))
    got = AllowResult(True, 2, 0, 60, 60, False, 4, results)
    h = rate_limit_headers(got, limits, ["second", "minute", "ip", "inflight", "daily"])
    assert h == {
        "RateLimit-Policy": '"second";q=2;w=1, "minute";q=5;w=60, "ip";q=10;w=60, '
                            '"inflight";q=2;qu="concurrent-requests", "daily";q=1000',
        "RateLimit": '"inflight";r=0;t=60',
        "X-RateLimit-Limit": "2",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": "60",
        "Retry-After": "60",
    }


def test_milliseconds_round_up_to_seconds() -> None:
    h = rate_limit_headers(Result(True, 1, 0, 334, 334, ms=True), Throttle(0, 3, 1000))
    assert h["Retry-After"] == "1" and h["X-RateLimit-Reset"] == "1"
    assert h["RateLimit-Policy"] == '"default";q=1;w=1'
    h = rate_limit_headers(Result(False, 5, 4, -1, 1500, ms=True), Slide(5, 2500))
    assert h["RateLimit-Policy"] == '"default";q=5;w=3' and h["X-RateLimit-Reset"] == "2"


def test_mismatched_lengths_and_bad_names_are_refused() -> None:
    with pytest.raises(ValueError):
        rate_limit_headers(Result(False, 1, 0, -1, 1), [Slide(1, 1), Slide(1, 1)])
    with pytest.raises(ValueError):
        rate_limit_headers(Result(False, 1, 0, -1, 1), Slide(1, 1), "caf\u00e9")
    assert rate_limit_headers(Result(False, 1, 0, -1, 1), Slide(1, 1), 'a"b')[
        "RateLimit"].startswith('"a\\"b"')
