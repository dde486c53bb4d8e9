"""A WSGI middleware (Flask, any WSGI app): every request is decided by a
Policy with a RateLimiter.

    app.wsgi_app = RateLimitMiddleware(app.wsgi_app, limiter=RateLimiter(redis), policy=policy)
"""

from __future__ import annotations

import logging
import secrets
import time
from concurrent import futures
from types import TracebackType
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Type,
    Union,
)

from redis.cluster import RedisCluster

from ._limits import Lease
from ._metrics import DecisionMetrics
from .client import RateLimiter
from .policy import (
    OUTAGES,
    DeadlinePassed,
    Decision,
    Health,
    Identity,
    Plan,
    Policy,
    RequestInfo,
    Route,
    decide,
    decision_headers,
    failure_answer,
    give_back,
    leases,
    merge_fields,
    outcomes,
    release,
    run_steps,
)

Environ = Dict[str, Any]
ExcInfo = Tuple[Type[BaseException], BaseException, Optional[TracebackType]]
StartResponse = Callable[..., Callable[[bytes], Any]]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]


def request_info(environ: Environ, identity: Optional[Identity] = None) -> RequestInfo:
    """The request of ``environ``, its client found by ``identity``
    (default: the peer address, no header believed)."""
    headers = {k[5:].replace("_", "-").lower(): str(v)
               for k, v in environ.items() if k.startswith("HTTP_")}
    return (identity or _PEER).resolve(str(environ.get("REQUEST_METHOD", "GET")),
                                       str(environ.get("PATH_INFO", "/")) or "/",
                                       str(environ.get("REMOTE_ADDR", "")), headers)


_PEER = Identity()


class RateLimitMiddleware:
    """The options of the ASGI middleware (``asgi.RateLimitMiddleware``),
    for a RateLimiter; the limiter's calls run on a pool of ``workers``
    threads so that a request waits at most ``timeout``."""

    def __init__(self, app: WSGIApp, *, limiter: RateLimiter, policy: Policy,
                 routes: Sequence[Route] = (),
                 skip: Optional[Callable[[RequestInfo], bool]] = None,
                 trusted_proxies: Union[str, Sequence[str]] = (),
                 proxy_header: str = "X-Forwarded-For", client_header: Optional[str] = None,
                 client_id: Optional[Callable[[RequestInfo], Optional[str]]] = None,
                 quantity: int = 1,
                 timeout: float = 0.25, fail_open: bool = False, refund_5xx: bool = False,
                 group_by_slot: Optional[bool] = None,
                 logger: Optional[logging.Logger] = None, workers: int = 32,
                 metrics: Optional[DecisionMetrics] = None) -> None:
        self.app = app
        self.metrics = metrics
        self.limiter = limiter
        self.policy = policy
        self.plan = Plan(policy, routes, skip)
        self.identity = Identity(trusted_proxies, proxy_header, client_header, client_id)
        self.quantity = quantity
        self.timeout = timeout
        self.fail_open = fail_open
        self.refund_5xx = refund_5xx
        self.group_by_slot = (isinstance(limiter.client, RedisCluster)
                              if group_by_slot is None else group_by_slot)
        self.health = Health(logger or logging.getLogger("redis_ratelimit_client"), fail_open)
        self.pool = futures.ThreadPoolExecutor(max_workers=workers,
                                               thread_name_prefix="ratelimit")

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        started = time.monotonic()
        deadline = started + self.timeout
        try:
            planned = self.plan.rules(request_info(environ, self.identity))
        except (ValueError, TypeError) as e:
            self.health.failed(e)
            return self._unavailable(environ, start_response, e)
        if planned is None:
            return self.app(environ, start_response)
        rules, keys = planned
        leased = any(isinstance(r.limit, Lease) for r in rules)
        lease_id = secrets.token_hex(16) if leased else None
        future = self.pool.submit(run_steps, self.limiter,
                                  decide(rules, keys, self.group_by_slot, lease_id,
                                         self.quantity), deadline)
        try:
            decision: Decision = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except futures.TimeoutError:
            future.cancel()
            late = DeadlinePassed(f"no answer within {self.timeout * 1000:.0f} ms")
            self._failed(late, rules, keys, lease_id, started)
            return self._unavailable(environ, start_response, late)
        except OUTAGES as e:
            self._failed(e, rules, keys, lease_id, started)
            return self._unavailable(environ, start_response, e)
        self.health.succeeded()
        if self.metrics is not None:
            self.metrics.record([r.name for r in rules], outcomes(rules, decision),
                                "limited" if decision.limited else "allowed",
                                time.monotonic() - started)
        headers = decision_headers(rules, decision)
        if decision.limited:
            retry = headers.get("Retry-After")
            body = (f"rate limited: retry in {retry} s\n" if retry is not None
                    else "rate limited: this request exceeds the capacity\n")
            return _plain(start_response, "429 Too Many Requests", headers, body)
        status: List[int] = []

        def start_with_headers(status_line: str, response_headers: List[Tuple[str, str]],
                               exc_info: Optional[ExcInfo] = None) -> Callable[[bytes], Any]:
            status[:] = [int(status_line.split(" ", 1)[0])]
            return start_response(status_line,
                                  [*response_headers, *merge_fields(response_headers, headers)],
                                  *([exc_info] if exc_info is not None else []))

        held = [i for i in decision.taken if i in leases(rules)]

        def done() -> None:
            if held:
                self._later(release(rules, keys, held, lease_id))
            if self.refund_5xx and status and status[0] >= 500:
                self._later(give_back(rules, keys, decision.taken, self.quantity))

        try:
            result = self.app(environ, start_with_headers)
        except Exception:
            if not status:
                status.append(500)  # what the server answers for an application that raised
            done()
            raise
        return _Closing(result, done)

    def _failed(self, error: BaseException, rules: Any, keys: List[str],
                lease_id: Optional[str], started: float) -> None:
        self.health.failed(error)
        if self.metrics is not None:
            self.metrics.record([r.name for r in rules], ["error"] * len(rules), "error",
                                time.monotonic() - started)
        if lease_id is not None:
            # A late RL.ALLOW may still have taken the lease.
            self._later(release(rules, keys, leases(rules), lease_id), report=False)

    def _unavailable(self, environ: Environ, start_response: StartResponse,
                     error: BaseException) -> Iterable[bytes]:
        if self.fail_open:
            return self.app(environ, start_response)
        status, body = failure_answer(error)
        line = "500 Internal Server Error" if status == 500 else "503 Service Unavailable"
        return _plain(start_response, line, {}, body)

    def _later(self, steps: Any, report: bool = True) -> None:
        """Runs ``steps`` on the pool with a deadline of its own; nobody waits."""
        deadline = time.monotonic() + self.timeout

        def run() -> None:
            try:
                run_steps(self.limiter, steps, deadline)
            except OUTAGES as e:
                if report:
                    self.health.failed(e)
            else:
                if report:
                    self.health.succeeded()

        self.pool.submit(run)


class _Closing:
    """The application's response iterable; ``close()`` (which the server
    calls when the request is over, however it ended) also runs ``done``
    once."""

    def __init__(self, inner: Iterable[bytes], done: Callable[[], None]) -> None:
        self.inner = inner
        self.done = done
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.inner)

    def close(self) -> None:
        try:
            close = getattr(self.inner, "close", None)
            if close is not None:
                close()
        finally:
            if not self.closed:
                self.closed = True
                self.done()


def _plain(start_response: StartResponse, status: str, headers: Dict[str, str],
           body: str) -> List[bytes]:
    data = body.encode()
    start_response(status, [*headers.items(), ("Content-Type", "text/plain; charset=utf-8"),
                            ("Content-Length", str(len(data)))])
    return [data]
