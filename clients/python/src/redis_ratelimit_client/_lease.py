"""A lease held for the time of a ``with`` block, renewed in the background."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import secrets
import threading
import time
from types import TracebackType
from typing import List, Optional, Protocol, Tuple, Type, Union

from ._errors import LeaseRefused
from ._limits import Lease
from ._results import Result

LeaseId = Union[str, bytes]


class LeaseCalls(Protocol):
    """What a held lease needs of a RateLimiter (no import of client.py,
    which imports this module)."""

    def lease(self, key: str, limit: int, ttl: int, lease_id: LeaseId, quantity: int = 1,
              *, ms: bool = False) -> Result: ...

    def release(self, key: str, lease_id: LeaseId) -> bool: ...


class AsyncLeaseCalls(Protocol):
    """What an async held lease needs of an AsyncRateLimiter."""

    async def lease(self, key: str, limit: int, ttl: int, lease_id: LeaseId,
                    quantity: int = 1, *, ms: bool = False) -> Result: ...

    async def release(self, key: str, lease_id: LeaseId) -> bool: ...

RENEW_FRACTION = 1 / 3


def renew_interval(ttl: int, ms: bool, renew_every: Optional[float]) -> float:
    """Seconds between renewals: ``renew_every``, or a third of the ttl."""
    if renew_every is not None:
        if renew_every <= 0:
            raise ValueError("renew_every must be positive")
        return renew_every
    return (ttl / 1000 if ms else ttl) * RENEW_FRACTION


class _Held:
    """What the sync and async holders share: the state of one lease."""

    def __init__(self, key: str, limit: Lease, quantity: int, ms: bool,
                 lease_id: Union[str, bytes, None], renew_every: Optional[float]) -> None:
        self.key = key
        self.limit = limit
        self.quantity = quantity
        self.ms = ms
        self.lease_id: Union[str, bytes] = (
            lease_id if lease_id is not None else secrets.token_hex(16)
        )
        self.interval = renew_interval(limit.ttl, ms, renew_every)
        self.result: Optional[Result] = None
        """The last reply of RL.LEASE (the grant, then each renewal)."""
        self.renewals = 0
        self.lost = False
        """True once a renewal was refused: the lease had expired and its
        slot was taken by another holder."""
        self.error: Optional[BaseException] = None
        """The last error of a renewal (it is tried again at the next one)."""
        self.released: Optional[bool] = None
        """After exit: what RL.RELEASE said (True: a lease was given back)."""

    def _granted(self, result: Result) -> None:
        self.result = result
        if result.limited:
            raise LeaseRefused(self.key, result)

    def _renewed(self, result: Result) -> bool:
        """Records a renewal; False when the lease is lost (stop renewing)."""
        self.result = result
        self.error = None
        if result.limited:
            self.lost = True
            return False
        self.renewals += 1
        return True


class _Renewer:
    """One daemon thread that renews every held lease of the process when
    it is due (a thread per lease would cost its start and join on every
    ``with``). Renewals run one at a time, each bounded by its client's
    timeouts."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.due: List[Tuple[float, int, HeldLease]] = []
        self.seq = 0
        self.thread: Optional[threading.Thread] = None

    def add(self, lease: HeldLease, when: float) -> None:
        with self.cond:
            self.seq += 1
            earliest = not self.due or when < self.due[0][0]
            heapq.heappush(self.due, (when, self.seq, lease))
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="lease-renewer",
                                               daemon=True)
                self.thread.start()
            if earliest:  # otherwise the renewer wakes up earlier anyway
                self.cond.notify()

    def _run(self) -> None:
        while True:
            with self.cond:
                while not self.due or self.due[0][0] > time.monotonic():
                    wait = self.due[0][0] - time.monotonic() if self.due else None
                    self.cond.wait(wait)
                _, _, lease = heapq.heappop(self.due)
            if lease._renew_now():
                self.add(lease, time.monotonic() + lease.interval)


_renewer = _Renewer()


class HeldLease(_Held):
    """``with limiter.hold(key, Lease(limit, ttl)) as held:`` (RateLimiter.hold)."""

    def __init__(self, limiter: LeaseCalls, key: str, limit: Lease, quantity: int, ms: bool,
                 lease_id: Union[str, bytes, None], renew_every: Optional[float]) -> None:
        super().__init__(key, limit, quantity, ms, lease_id, renew_every)
        self._limiter = limiter
        self._lock = threading.Lock()  # held by a renewal in flight
        self._stopped = False
        self._done = False

    def _take(self) -> Result:
        return self._limiter.lease(self.key, self.limit.limit, self.limit.ttl, self.lease_id,
                                   self.quantity, ms=self.ms)

    def _renew_now(self) -> bool:
        """One renewal (on the renewer's thread); False: stop renewing."""
        with self._lock:
            if self._stopped:
                return False
            try:
                return self._renewed(self._take())
            except Exception as e:  # tried again at the next interval
                self.error = e
                return True

    def __enter__(self) -> HeldLease:
        self._granted(self._take())
        _renewer.add(self, time.monotonic() + self.interval)
        return self

    def release(self) -> Optional[bool]:
        """Stops renewing and releases the lease; only the first call sends
        RL.RELEASE (exit calls it too). A renewal in flight ends first, so
        none can follow the release."""
        if self._done:
            return self.released
        self._done = True
        with self._lock:
            self._stopped = True
        self.released = self._limiter.release(self.key, self.lease_id)
        return self.released

    def __exit__(self, kind: Optional[Type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self.release()


class AsyncHeldLease(_Held):
    """``async with limiter.hold(key, Lease(limit, ttl)) as held:``"""

    def __init__(self, limiter: AsyncLeaseCalls, key: str, limit: Lease, quantity: int,
                 ms: bool, lease_id: Union[str, bytes, None],
                 renew_every: Optional[float]) -> None:
        super().__init__(key, limit, quantity, ms, lease_id, renew_every)
        self._limiter = limiter
        self._task: Optional[asyncio.Task[None]] = None
        self._done = False

    async def _take(self) -> Result:
        return await self._limiter.lease(self.key, self.limit.limit, self.limit.ttl,
                                         self.lease_id, self.quantity, ms=self.ms)

    async def _renew_loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                if not self._renewed(await self._take()):
                    return
            except asyncio.CancelledError:
                raise
            except Exception as e:  # tried again at the next interval
                self.error = e

    async def __aenter__(self) -> AsyncHeldLease:
        self._granted(await self._take())
        self._task = asyncio.ensure_future(self._renew_loop())
        return self

    async def release(self) -> Optional[bool]:
        """Stops renewing and releases the lease; only the first call sends
        RL.RELEASE. It runs to its end even when the caller is cancelled."""
        if self._done:
            return self.released
        self._done = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)

        async def send() -> None:
            self.released = await self._limiter.release(self.key, self.lease_id)

        # Shielded: a cancellation of the block (a client gone, a timeout)
        # must not stop the release on its way.
        await asyncio.shield(asyncio.ensure_future(send()))
        return self.released

    async def __aexit__(self, kind: Optional[Type[BaseException]],
                        value: Optional[BaseException],
                        traceback: Optional[TracebackType]) -> None:
        await self.release()
