"""An ASGI middleware (Starlette, FastAPI, any ASGI app): every HTTP request
is decided by a Policy with an AsyncRateLimiter.

    app.add_middleware(RateLimitMiddleware, limiter=AsyncRateLimiter(redis), policy=policy)
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import sys
import time
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    List,
    MutableMapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from ._limits import Lease
from ._metrics import DecisionMetrics
from .client import AsyncRateLimiter
from .policy import (
    OUTAGES,
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
    run_steps_async,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

FAILURES: Tuple[type[BaseException], ...] = (*OUTAGES, asyncio.TimeoutError)


def request_info(scope: Scope, identity: Optional[Identity] = None) -> RequestInfo:
    """The request of ``scope``, its client found by ``identity`` (default:
    the peer address, no header believed)."""
    headers: Dict[str, str] = {}
    for k, v in scope.get("headers", []):
        name, value = k.decode("latin-1").lower(), v.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    client = scope.get("client") or ("", 0)
    return (identity or _PEER).resolve(scope.get("method", "GET"), scope.get("path", "/"),
                                       str(client[0]), headers)


_PEER = Identity()


class RateLimitMiddleware:
    """Options (docs/middleware.md is the contract):

    - ``limiter``: an AsyncRateLimiter; its client should have a connect
      and a read timeout (``bounded_client_options``).
    - ``policy``: the Policy (rules and how a request maps to keys).
    - ``routes`` (none): Route rules for chosen paths, decided with the
      policy's in one RL.ALLOW.
    - ``skip`` (none): a function of the RequestInfo; True lets the request
      through untouched (``/health``, static files).
    - ``trusted_proxies`` (none), ``proxy_header`` (``X-Forwarded-For``),
      ``client_header`` (none), ``client_id`` (none): the request's identity,
      ``$ip`` the peer address unless the peer is a trusted proxy (an
      ``Identity``).
    - ``quantity`` (1): what a request costs.
    - ``timeout`` (seconds, 0.25): the longest the limiter may take to
      decide, counted from the request's arrival at the middleware.
    - ``fail_open`` (False): when the limiter cannot decide, let the request
      through unlimited; otherwise answer 503 (an outage) or 500 (a
      configuration error).
    - ``refund_5xx`` (False): give the units back (RL.REFUND) when the
      application answers 5xx.
    - ``group_by_slot`` (None: when the client is a RedisCluster): one
      RL.ALLOW per hash slot, giving back what earlier slots took when one
      refuses.
    - ``logger``: where the outage lines go (``redis_ratelimit_client``).
    - ``metrics`` (none): told each decision (``otel.OpenTelemetryMetrics``;
      docs/metrics.md).

    A rule whose limit has ``shadow`` never refuses (docs/middleware.md,
    Shadow rules); one with ``block`` refuses while its key is blocked,
    answered as any refusal (429, Retry-After)."""

    def __init__(self, app: ASGIApp, *, limiter: AsyncRateLimiter, policy: Policy,
                 routes: Sequence[Route] = (),
                 skip: Optional[Callable[[RequestInfo], bool]] = None,
                 trusted_proxies: Union[str, Sequence[str]] = (),
                 proxy_header: str = "X-Forwarded-For", client_header: Optional[str] = None,
                 client_id: Optional[Callable[[RequestInfo], Optional[str]]] = None,
                 quantity: int = 1,
                 timeout: float = 0.25, fail_open: bool = False, refund_5xx: bool = False,
                 group_by_slot: Optional[bool] = None,
                 logger: Optional[logging.Logger] = None,
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
        self.group_by_slot = (isinstance(limiter.client, AsyncRedisCluster)
                              if group_by_slot is None else group_by_slot)
        self.health = Health(logger or logging.getLogger("redis_ratelimit_client"), fail_open)
        self._background: Set[asyncio.Task[None]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        deadline = started + self.timeout
        lease_id: Optional[str] = None
        rules: Tuple[Any, ...] = ()
        try:
            planned = self.plan.rules(request_info(scope, self.identity))
            if planned is None:
                await self.app(scope, receive, send)
                return
            rules, keys = planned
            if any(isinstance(r.limit, Lease) for r in rules):
                lease_id = secrets.token_hex(16)
            steps = decide(rules, keys, self.group_by_slot, lease_id, self.quantity)
            decision: Decision = await _within(run_steps_async(self.limiter, steps, deadline),
                                               deadline)
        except FAILURES as e:
            self.health.failed(e)
            if self.metrics is not None and rules:
                self.metrics.record([r.name for r in rules], ["error"] * len(rules), "error",
                                    time.monotonic() - started)
            if lease_id is not None:
                # A late RL.ALLOW may still have taken the lease.
                self._later(release(rules, keys, leases(rules), lease_id), report=False)
            if self.fail_open:
                await self.app(scope, receive, send)
            else:
                code, text = failure_answer(e)
                await _plain(send, code, {}, text)
            return
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
            await _plain(send, 429, headers, body)
            return
        held = [i for i in decision.taken if i in leases(rules)]
        status: List[int] = []
        released = False

        def release_once() -> None:
            nonlocal released
            if held and not released:
                released = True
                self._later(release(rules, keys, held, lease_id))

        async def receive_watching() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                release_once()
            return message

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
                message = dict(message)
                own = list(message.get("headers", []))
                message["headers"] = [*own, *((k.encode(), v.encode())
                                              for k, v in merge_fields(own, headers))]
            await send(message)

        try:
            await self.app(scope, receive_watching if held else receive, send_with_headers)
        except Exception:
            if not status:
                status.append(500)  # what the server answers for an application that raised
            raise
        finally:
            release_once()
            if self.refund_5xx and status and status[0] >= 500:
                self._later(give_back(rules, keys, decision.taken, self.quantity))

    def _later(self, steps: Any, report: bool = True) -> None:
        """Runs ``steps`` in the background with a deadline of its own: the
        response never waits for a release or a give-back."""

        async def run() -> None:
            try:
                await asyncio.wait_for(run_steps_async(self.limiter, steps), self.timeout)
            except FAILURES as e:
                if report:
                    self.health.failed(e)
            else:
                if report:
                    self.health.succeeded()

        task = asyncio.ensure_future(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)


if sys.version_info >= (3, 11):

    async def _within(call: Awaitable[Any], deadline: float) -> Any:
        """``call``'s result by ``deadline`` (loop time = time.monotonic()),
        or TimeoutError; without a task of its own."""
        loop = asyncio.get_running_loop()
        async with asyncio.timeout_at(loop.time() + deadline - time.monotonic()):
            return await call
else:

    async def _within(call: Awaitable[Any], deadline: float) -> Any:
        return await asyncio.wait_for(call, max(0.0, deadline - time.monotonic()))


async def _plain(send: Send, status: int, headers: Dict[str, str], body: str) -> None:
    data = body.encode()
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    raw += [(b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})
