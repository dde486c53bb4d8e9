"""The clients: one method per command, synchronous and asyncio."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from dataclasses import replace
from typing import Any, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

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
from ._errors import RateLimited, translate
from ._lease import AsyncHeldLease, HeldLease, LeaseId
from ._limits import Lease, Limit, Throttle, single_options
from ._results import AllowResult, Inspection, Result, TopEntry

T = TypeVar("T")

Throttles = Union[Mapping[str, Throttle], Sequence[Tuple[str, Throttle]]]
"""acquire_all's limits: keys with their THROTTLE limits, in order."""
Amount = Union[int, Sequence[int]]
"""settle's taken and actual: one for every limit, or one per limit."""


def _first_error(replies: Sequence[Any]) -> None:
    for reply in replies:
        if isinstance(reply, ResponseError):
            raise translate(reply) from None
        if isinstance(reply, Exception):
            raise reply


def _wait_ms(max_wait: float, deadline: Optional[float]) -> int:
    """MAXWAIT in ms: ``max_wait`` seconds, cut to what is left before
    ``deadline`` (a time.monotonic() instant), rounded down so that a turn
    granted within it never ends past either."""
    w = math.floor(max_wait * 1000)
    if deadline is not None:
        w = min(w, max(0, math.floor((deadline - time.monotonic()) * 1000)))
    return w


def _in_ms(limit: Throttle) -> Throttle:
    """The limit with its period and block in ms (for a call with MS)."""
    if not isinstance(limit, Throttle):
        raise TypeError(f"acquire takes THROTTLE limits only, not {limit!r}")
    block = None if limit.block is None else limit.block * 1000
    return replace(limit, period=limit.period * 1000, block=block)


def _acquire(key: str, limit: Throttle, max_wait: float, deadline: Optional[float],
             quantity: int) -> Command[Result]:
    ms = _in_ms(limit)
    command = c.throttle(key, ms.max_burst, ms.count, ms.period, quantity, True,
                         _wait_ms(max_wait, deadline), ms.block)
    command.args += single_options(replace(ms, block=None))
    return command


def _acquire_all(limits: Throttles, max_wait: float, deadline: Optional[float],
                 quantity: int) -> Command[AllowResult]:
    items = [(key, _in_ms(limit)) for key, limit in _throttles(limits)]
    return c.several("ALLOW", items, quantity, True, None, _wait_ms(max_wait, deadline))


def _throttles(limits: Throttles) -> List[Tuple[str, Throttle]]:
    return list(limits.items()) if isinstance(limits, Mapping) else list(limits)


def _turn(keys: Sequence[str], result: Union[Result, AllowResult], deadline: Optional[float]
          ) -> float:
    """The seconds to sleep for a granted turn (never past ``deadline``);
    RateLimited when refused."""
    if result.limited:
        raise RateLimited(keys, result)
    wait = max(0, result.retry_after) / 1000
    if deadline is not None:
        wait = min(wait, max(0.0, deadline - time.monotonic()))
    return wait



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

    def execute_many(self, commands: Sequence[Command[Any]]) -> List[Any]:
        """The commands' parsed replies, sent in one round trip (a pipeline;
        one by one on a backend without ``call_many``); the first error
        reply is raised once every reply is in."""
        backend = self.backend
        calls = [(command.name, command.args) for command in commands]
        many = getattr(backend, "call_many", None)
        if many is not None:
            replies = list(many(calls))
        else:
            replies = []
            for name, args in calls:
                try:
                    replies.append(backend.call(name, args))
                except ResponseError as e:
                    replies.append(e)
        _first_error(replies)
        return [command.parse(reply) for command, reply in zip(commands, replies)]

    def throttle(self, key: str, max_burst: int, count: int, period: int, quantity: int = 1,
                 *, ms: bool = False, max_wait: Optional[int] = None,
                 block: Optional[int] = None) -> Result:
        """RL.THROTTLE key max_burst count period [quantity] [MS] [MAXWAIT w] [BLOCK b]"""
        return self.execute(c.throttle(key, max_burst, count, period, quantity, ms, max_wait,
                                       block))

    def slide(self, key: str, limit: int, window: int, quantity: int = 1, *, ms: bool = False,
              precision: Optional[int] = None, block: Optional[int] = None) -> Result:
        """RL.SLIDE key limit window [quantity] [MS] [PRECISION d] [BLOCK b]"""
        return self.execute(c.slide(key, limit, window, quantity, ms, precision, block))

    def slice(self, key: str, limit: int, window: int, slices: int, quantity: int = 1,
              *, ms: bool = False, block: Optional[int] = None) -> Result:
        """RL.SLICE key limit window slices [quantity] [MS] [BLOCK b]"""
        return self.execute(c.slice_(key, limit, window, slices, quantity, ms, block))

    def lease(self, key: str, limit: int, ttl: int, lease_id: LeaseId, quantity: int = 1,
              *, ms: bool = False) -> Result:
        """RL.LEASE key limit ttl lease_id [quantity] [MS]"""
        return self.execute(c.lease(key, limit, ttl, lease_id, quantity, ms))

    def release(self, key: str, lease_id: LeaseId) -> bool:
        """RL.RELEASE key lease_id: True when a lease was given back."""
        return self.execute(c.release(key, lease_id))

    def quota(self, key: str, limit: int, unit: str, quantity: int = 1, *,
              tz: Optional[str] = None, ms: bool = False, block: Optional[int] = None) -> Result:
        """RL.QUOTA key limit unit [quantity] [TZ zone] [MS] [BLOCK b]"""
        return self.execute(c.quota(key, limit, unit, quantity, ms, tz, block))

    def take(self, key: str, limit: Limit, quantity: int = 1, *, ms: bool = False,
             lease_id: Optional[LeaseId] = None) -> Result:
        """The command of ``limit``'s kind on ``key`` (a Lease needs
        ``lease_id``); the limit's ``block`` as its BLOCK option."""
        return self.execute(c.take(key, limit, quantity, ms, lease_id))

    def allow(self, limits: Entries, *, quantity: int = 1, ms: bool = False,
              lease_id: Optional[LeaseId] = None, max_wait: Optional[int] = None
              ) -> AllowResult:
        """RL.ALLOW numkeys key... spec... [QUANTITY q] [MS] [MAXWAIT w] [ID lease_id]:
        ``limits`` maps each key to its limit, in order."""
        return self.execute(c.several("ALLOW", limits, quantity, ms, lease_id, max_wait))

    def peek(self, limits: Entries, *, quantity: int = 1, ms: bool = False,
             lease_id: Optional[LeaseId] = None, max_wait: Optional[int] = None
             ) -> AllowResult:
        """RL.PEEK: what RL.ALLOW would answer now; changes nothing."""
        return self.execute(c.several("PEEK", limits, quantity, ms, lease_id, max_wait))

    def charge(self, key: str, limit: Limit, quantity: int, *, ms: bool = False) -> Result:
        """RL.CHARGE key spec quantity [MS]: records ``quantity`` whatever
        the limit says (the cost of work already done); the key may go into
        debt. The limit's block, units and shadow are not sent."""
        return self.execute(c.charge(key, limit, quantity, ms))

    def settle(self, limits: Entries, taken: Amount, actual: Amount, *, ms: bool = False
               ) -> List[Optional[Result]]:
        """Puts right what was taken on an estimate: per (key, limit),
        RL.REFUND of ``taken - actual`` or RL.CHARGE of ``actual - taken``,
        all in one round trip (a pipeline). ``taken`` and ``actual``: one
        amount for every limit, or one per limit. A result per limit, None
        where ``taken == actual`` (nothing sent)."""
        commands = c.settle(limits, taken, actual, ms)
        sent = [command for command in commands if command is not None]
        done = iter(self.execute_many(sent) if sent else [])
        return [None if command is None else next(done) for command in commands]

    def acquire(self, key: str, limit: Throttle, max_wait: float,
                deadline: Optional[float] = None, *, quantity: int = 1) -> Result:
        """Waits for a turn: RL.THROTTLE in ms with ``MAXWAIT`` of
        ``max_wait`` seconds (less when ``deadline``, a time.monotonic()
        instant, comes sooner); when granted, sleeps the turn's wait
        (time.sleep, never past the deadline) and returns the Result (its
        retry_after the wait in ms); when refused, raises RateLimited with
        ``retry_after`` in seconds."""
        result = self.execute(_acquire(key, limit, max_wait, deadline, quantity))
        wait = _turn([key], result, deadline)
        if wait > 0:
            time.sleep(wait)
        return result

    def acquire_all(self, limits: Throttles, max_wait: float, deadline: Optional[float] = None,
                    *, quantity: int = 1) -> AllowResult:
        """``acquire`` over several THROTTLE limits in one RL.ALLOW: a turn
        that every limit grants within the wait."""
        result = self.execute(_acquire_all(limits, max_wait, deadline, quantity))
        wait = _turn([key for key, _ in _throttles(limits)], result, deadline)
        if wait > 0:
            time.sleep(wait)
        return result

    def top(self, count: Optional[int] = None) -> List[TopEntry]:
        """RL.TOP [COUNT n]: the keys refused most often recently on this
        server, most first. The Lua backend answers an error (it keeps no
        summary), raised as ArgumentError."""
        return self.execute(c.top(count))

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

    async def execute_many(self, commands: Sequence[Command[Any]]) -> List[Any]:
        """RateLimiter.execute_many, awaited."""
        backend = self._backend or await self.get_backend()
        calls = [(command.name, command.args) for command in commands]
        many = getattr(backend, "call_many", None)
        if many is not None:
            replies = list(await many(calls))
        else:
            replies = []
            for name, args in calls:
                try:
                    replies.append(await backend.call(name, args))
                except ResponseError as e:
                    replies.append(e)
        _first_error(replies)
        return [command.parse(reply) for command, reply in zip(commands, replies)]

    async def throttle(self, key: str, max_burst: int, count: int, period: int,
                       quantity: int = 1, *, ms: bool = False, max_wait: Optional[int] = None,
                       block: Optional[int] = None) -> Result:
        return await self.execute(c.throttle(key, max_burst, count, period, quantity, ms,
                                             max_wait, block))

    async def slide(self, key: str, limit: int, window: int, quantity: int = 1, *,
                    ms: bool = False, precision: Optional[int] = None,
                    block: Optional[int] = None) -> Result:
        return await self.execute(c.slide(key, limit, window, quantity, ms, precision, block))

    async def slice(self, key: str, limit: int, window: int, slices: int, quantity: int = 1,
                    *, ms: bool = False, block: Optional[int] = None) -> Result:
        return await self.execute(c.slice_(key, limit, window, slices, quantity, ms, block))

    async def lease(self, key: str, limit: int, ttl: int, lease_id: LeaseId, quantity: int = 1,
                    *, ms: bool = False) -> Result:
        return await self.execute(c.lease(key, limit, ttl, lease_id, quantity, ms))

    async def release(self, key: str, lease_id: LeaseId) -> bool:
        return await self.execute(c.release(key, lease_id))

    async def quota(self, key: str, limit: int, unit: str, quantity: int = 1, *,
                    tz: Optional[str] = None, ms: bool = False, block: Optional[int] = None
                    ) -> Result:
        return await self.execute(c.quota(key, limit, unit, quantity, ms, tz, block))

    async def take(self, key: str, limit: Limit, quantity: int = 1, *, ms: bool = False,
                   lease_id: Optional[LeaseId] = None) -> Result:
        return await self.execute(c.take(key, limit, quantity, ms, lease_id))

    async def allow(self, limits: Entries, *, quantity: int = 1, ms: bool = False,
                    lease_id: Optional[LeaseId] = None, max_wait: Optional[int] = None
                    ) -> AllowResult:
        return await self.execute(c.several("ALLOW", limits, quantity, ms, lease_id, max_wait))

    async def peek(self, limits: Entries, *, quantity: int = 1, ms: bool = False,
                   lease_id: Optional[LeaseId] = None, max_wait: Optional[int] = None
                   ) -> AllowResult:
        return await self.execute(c.several("PEEK", limits, quantity, ms, lease_id, max_wait))

    async def charge(self, key: str, limit: Limit, quantity: int, *, ms: bool = False
                     ) -> Result:
        return await self.execute(c.charge(key, limit, quantity, ms))

    async def settle(self, limits: Entries, taken: Amount, actual: Amount, *, ms: bool = False
                     ) -> List[Optional[Result]]:
        """RateLimiter.settle: one pipeline, awaited."""
        commands = c.settle(limits, taken, actual, ms)
        sent = [command for command in commands if command is not None]
        done = iter(await self.execute_many(sent) if sent else [])
        return [None if command is None else next(done) for command in commands]

    async def acquire(self, key: str, limit: Throttle, max_wait: float,
                      deadline: Optional[float] = None, *, quantity: int = 1) -> Result:
        """RateLimiter.acquire, waiting with asyncio.sleep."""
        result = await self.execute(_acquire(key, limit, max_wait, deadline, quantity))
        wait = _turn([key], result, deadline)
        if wait > 0:
            await asyncio.sleep(wait)
        return result

    async def acquire_all(self, limits: Throttles, max_wait: float,
                          deadline: Optional[float] = None, *, quantity: int = 1
                          ) -> AllowResult:
        result = await self.execute(_acquire_all(limits, max_wait, deadline, quantity))
        wait = _turn([key for key, _ in _throttles(limits)], result, deadline)
        if wait > 0:
            await asyncio.sleep(wait)
        return result

    async def top(self, count: Optional[int] = None) -> List[TopEntry]:
        return await self.execute(c.top(count))

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
