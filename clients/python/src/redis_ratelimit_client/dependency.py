"""A FastAPI dependency: a policy for the routes that name it.

    limit_login = RateLimit(limiter=AsyncRateLimiter(redis), policy=login_policy)

    @app.post("/login", dependencies=[Depends(limit_login)])
    async def login() -> ...

It decides as the middleware does (docs/middleware.md) for the requests of
those routes only. With a global RateLimitMiddleware as well, a request is
decided twice (a refusal here has spent a unit of the global limits): to
decide once, give the middleware ``routes=[Route("/login", login_policy)]``
instead. A refusal raises FastAPI's HTTPException (429, or 503/500 when
the limiter cannot decide), answered by FastAPI's handler (a JSON body)
with the header fields; an allowed request's fields are set on the
``Response`` FastAPI hands the dependency, which FastAPI sends unless the
endpoint returns a Response of its own.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import AsyncIterator, Callable, Optional, Sequence, Union

from fastapi import HTTPException
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from starlette.requests import Request
from starlette.responses import Response

from ._limits import Lease
from ._metrics import DecisionMetrics
from .asgi import FAILURES, _within, request_info
from .client import AsyncRateLimiter
from .policy import (
    Health,
    Identity,
    Plan,
    Policy,
    RequestInfo,
    Steps,
    decide,
    decision_headers,
    failure_answer,
    leases,
    outcomes,
    release,
    run_steps_async,
)


class RateLimit:
    """The options of ``asgi.RateLimitMiddleware`` but ``routes`` and
    ``refund_5xx``, as a FastAPI dependency (``Depends(RateLimit(...))``)."""

    def __init__(self, *, limiter: AsyncRateLimiter, policy: Policy,
                 skip: Optional[Callable[[RequestInfo], bool]] = None,
                 trusted_proxies: Union[str, Sequence[str]] = (),
                 proxy_header: str = "X-Forwarded-For", client_header: Optional[str] = None,
                 client_id: Optional[Callable[[RequestInfo], Optional[str]]] = None,
                 quantity: int = 1, timeout: float = 0.25, fail_open: bool = False,
                 group_by_slot: Optional[bool] = None,
                 logger: Optional[logging.Logger] = None,
                 metrics: Optional[DecisionMetrics] = None) -> None:
        self.limiter = limiter
        self.metrics = metrics
        self.plan = Plan(policy, (), skip)
        self.identity = Identity(trusted_proxies, proxy_header, client_header, client_id)
        self.quantity = quantity
        self.timeout = timeout
        self.fail_open = fail_open
        self.group_by_slot = (isinstance(limiter.client, AsyncRedisCluster)
                              if group_by_slot is None else group_by_slot)
        self.health = Health(logger or logging.getLogger("redis_ratelimit_client"), fail_open)
        self._background: set[asyncio.Task[None]] = set()

    async def __call__(self, request: Request, response: Response) -> AsyncIterator[None]:
        started = time.monotonic()
        deadline = started + self.timeout
        planned = self.plan.rules(request_info(request.scope, self.identity))
        if planned is None:
            yield
            return
        rules, keys = planned
        lease_id = (secrets.token_hex(16) if any(isinstance(r.limit, Lease) for r in rules)
                    else None)
        try:
            steps = decide(rules, keys, self.group_by_slot, lease_id, self.quantity)
            decision = await _within(run_steps_async(self.limiter, steps, deadline), deadline)
        except FAILURES as e:
            self.health.failed(e)
            if self.metrics is not None:
                self.metrics.record([r.name for r in rules], ["error"] * len(rules), "error",
                                    time.monotonic() - started)
            if lease_id is not None:
                self._later(release(rules, keys, leases(rules), lease_id), report=False)
            if not self.fail_open:
                status, body = failure_answer(e)
                raise HTTPException(status, body.strip()) from None
            yield
            return
        self.health.succeeded()
        if self.metrics is not None:
            self.metrics.record([r.name for r in rules], outcomes(rules, decision),
                                "limited" if decision.limited else "allowed",
                                time.monotonic() - started)
        headers = decision_headers(rules, decision)
        if decision.limited:
            retry = headers.get("Retry-After")
            body = (f"rate limited: retry in {retry} s" if retry is not None
                    else "rate limited: this request exceeds the capacity")
            raise HTTPException(429, body, headers=headers)
        for name, value in headers.items():
            if name not in response.headers:
                response.headers[name] = value
        held = [i for i in decision.taken if i in leases(rules)]
        try:
            yield
        finally:
            if held:
                self._later(release(rules, keys, held, lease_id))

    def _later(self, steps: Steps, report: bool = True) -> None:
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
