"""The clients: one method per command, synchronous and asyncio."""

from __future__ import annotations

import threading
from typing import Any, Optional, TypeVar

from redis.exceptions import ResponseError

from . import _commands as c
from ._backend import (
    AsyncBackend,
    AsyncBackendChoice,
    AsyncClient,
    Backend,
    BackendChoice,
    SyncClient,
    choose_backend,
    choose_backend_async,
)
from ._commands import Command, Entries
from ._errors import translate
from ._lease import AsyncHeldLease, HeldLease, LeaseId
from ._limits import Lease, Limit
from ._results import AllowResult, Inspection, Result

T = TypeVar("T")



class RateLimiter:
    """The RL.* commands on a synchronous redis-py client (``redis.Redis`` or
    ``redis.cluster.RedisCluster``).

    ``backend``: ``"auto"`` (the module when the server has it loaded,
    detected once per connection pool), ``"module"``, ``"lua"``, or a
    Backend object. ``prefix``: the module's command prefix, to skip the
    detection (``"RL"`` unless the module was loaded with ``PREFIX``).

    Arguments are not checked here: the module refuses a bad one with an
    ``ERR`` reply, raised as ArgumentError naming it."""

    def __init__(self, client: SyncClient, *, backend: BackendChoice = "auto",
                 prefix: Optional[str] = None) -> None:
        self.client = client
        self._choice = backend
        self._prefix = prefix
        self._backend: Optional[Backend] = None
        self._lock = threading.Lock()

    @property
    def backend(self) -> Backend:
        """The backend in use, chosen at the first call."""
        if self._backend is None:
            with self._lock:
                if self._backend is None:
                    self._backend = choose_backend(self.client, self._choice, self._prefix)
        return self._backend

    def execute(self, command: Command[T]) -> T:
        try:
            reply = self.backend.call(command.name, command.args)
        except ResponseError as e:
            raise translate(e) from None
        return command.parse(reply)

    def throttle(self, key: str, max_burst: int, count: int, period: int, quantity: int = 1,
                 *, ms: bool = False) -> Result:
        """RL.THROTTLE key max_burst count period [quantity] [MS]"""
        return self.execute(c.throttle(key, max_burst, count, period, quantity, ms))

    def slide(self, key: str, limit: int, window: int, quantity: int = 1, *, ms: bool = False,
              precision: Optional[int] = None) -> Result:
        """RL.SLIDE key limit window [quantity] [MS] [PRECISION d]"""
        return self.execute(c.slide(key, limit, window, quantity, ms, precision))

    def slice(self, key: str, limit: int, window: int, slices: int, quantity: int = 1,
              *, ms: bool = False) -> Result:
        """RL.SLICE key limit window slices [quantity] [MS]"""
        return self.execute(c.slice_(key, limit, window, slices, quantity, ms))

    def lease(self, key: str, limit: int, ttl: int, lease_id: LeaseId, quantity: int = 1,
              *, ms: bool = False) -> Result:
        """RL.LEASE key limit ttl lease_id [quantity] [MS]"""
        return self.execute(c.lease(key, limit, ttl, lease_id, quantity, ms))

    def release(self, key: str, lease_id: LeaseId) -> bool:
        """RL.RELEASE key lease_id: True when a lease was given back."""
        return self.execute(c.release(key, lease_id))

    def quota(self, key: str, limit: int, unit: str, quantity: int = 1, *,
              tz: Optional[str] = None, ms: bool = False) -> Result:
        """RL.QUOTA key limit unit [quantity] [TZ zone] [MS]"""
        return self.execute(c.quota(key, limit, unit, quantity, ms, tz))

    def take(self, key: str, limit: Limit, quantity: int = 1, *, ms: bool = False,
             lease_id: Optional[LeaseId] = None) -> Result:
        """The command of ``limit``'s kind on ``key`` (a Lease needs ``lease_id``)."""
        return self.execute(c.take(key, limit, quantity, ms, lease_id))

    def allow(self, limits: Entries, *, quantity: int = 1, ms: bool = False,
              lease_id: Optional[LeaseId] = None) -> AllowResult:
        """RL.ALLOW numkeys key... spec... [QUANTITY q] [MS] [ID lease_id]:
        ``limits`` maps each key to its limit, in order."""
        return self.execute(c.several("ALLOW", limits, quantity, ms, lease_id))

    def peek(self, limits: Entries, *, quantity: int = 1, ms: bool = False,
             lease_id: Optional[LeaseId] = None) -> AllowResult:
        """RL.PEEK: what RL.ALLOW would answer now; changes nothing."""
        return self.execute(c.several("PEEK", limits, quantity, ms, lease_id))

    def inspect(self, key: str) -> Optional[Inspection]:
        """RL.INSPECT key: the key's state by kind, None when it does not exist."""
        return self.execute(c.inspect(key))

    def refund(self, key: str, limit: Limit, quantity: int, *, ms: bool = False) -> Result:
        """RL.REFUND key spec quantity [MS]"""
        return self.execute(c.refund(key, limit, quantity, ms))

    def hold(self, key: str, limit: Lease, *, quantity: int = 1, ms: bool = False,
             lease_id: Optional[LeaseId] = None, renew_every: Optional[float] = None
             ) -> HeldLease:
        """A lease as a context manager: takes the slot on entry (LeaseRefused
        when full), renews it every ``renew_every`` seconds (a third of its
        ttl by default) on a thread while the block runs, and releases it
        once on exit."""
        return HeldLease(self, key, limit, quantity, ms, lease_id, renew_every)


class AsyncRateLimiter:
    """The RL.* commands on a ``redis.asyncio`` client (``Redis`` or
    ``RedisCluster``); the same methods as RateLimiter, awaited."""

    def __init__(self, client: AsyncClient, *, backend: AsyncBackendChoice = "auto",
                 prefix: Optional[str] = None) -> None:
        self.client = client
        self._choice = backend
        self._prefix = prefix
        self._backend: Optional[AsyncBackend] = None

    async def get_backend(self) -> AsyncBackend:
        """The backend in use, chosen at the first call."""
        if self._backend is None:
            self._backend = await choose_backend_async(self.client, self._choice, self._prefix)
        return self._backend

    async def execute(self, command: Command[T]) -> T:
        backend = self._backend or await self.get_backend()
        try:
            reply: Any = await backend.call(command.name, command.args)
        except ResponseError as e:
            raise translate(e) from None
        return command.parse(reply)

    async def throttle(self, key: str, max_burst: int, count: int, period: int,
                       quantity: int = 1, *, ms: bool = False) -> Result:
        return await self.execute(c.throttle(key, max_burst, count, period, quantity, ms))

    async def slide(self, key: str, limit: int, window: int, quantity: int = 1, *,
                    ms: bool = False, precision: Optional[int] = None) -> Result:
        return await self.execute(c.slide(key, limit, window, quantity, ms, precision))

    async def slice(self, key: str, limit: int, window: int, slices: int, quantity: int = 1,
                    *, ms: bool = False) -> Result:
        return await self.execute(c.slice_(key, limit, window, slices, quantity, ms))

    async def lease(self, key: str, limit: int, ttl: int, lease_id: LeaseId, quantity: int = 1,
                    *, ms: bool = False) -> Result:
        return await self.execute(c.lease(key, limit, ttl, lease_id, quantity, ms))

    async def release(self, key: str, lease_id: LeaseId) -> bool:
        return await self.execute(c.release(key, lease_id))

    async def quota(self, key: str, limit: int, unit: str, quantity: int = 1, *,
                    tz: Optional[str] = None, ms: bool = False) -> Result:
        return await self.execute(c.quota(key, limit, unit, quantity, ms, tz))

    async def take(self, key: str, limit: Limit, quantity: int = 1, *, ms: bool = False,
                   lease_id: Optional[LeaseId] = None) -> Result:
        return await self.execute(c.take(key, limit, quantity, ms, lease_id))

    async def allow(self, limits: Entries, *, quantity: int = 1, ms: bool = False,
                    lease_id: Optional[LeaseId] = None) -> AllowResult:
        return await self.execute(c.several("ALLOW", limits, quantity, ms, lease_id))

    async def peek(self, limits: Entries, *, quantity: int = 1, ms: bool = False,
                   lease_id: Optional[LeaseId] = None) -> AllowResult:
        return await self.execute(c.several("PEEK", limits, quantity, ms, lease_id))

    async def inspect(self, key: str) -> Optional[Inspection]:
        return await self.execute(c.inspect(key))

    async def refund(self, key: str, limit: Limit, quantity: int, *, ms: bool = False
                     ) -> Result:
        return await self.execute(c.refund(key, limit, quantity, ms))

    def hold(self, key: str, limit: Lease, *, quantity: int = 1, ms: bool = False,
             lease_id: Optional[LeaseId] = None, renew_every: Optional[float] = None
             ) -> AsyncHeldLease:
        """``async with limiter.hold(...)``: RateLimiter.hold, renewing on an
        asyncio task."""
        return AsyncHeldLease(self, key, limit, quantity, ms, lease_id, renew_every)
