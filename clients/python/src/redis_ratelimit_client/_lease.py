"""A lease held for the time of a ``with`` block, renewed in the background."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Optional, Type, Union

from ._errors import LeaseRefused
from ._limits import Lease
from ._results import Result

if TYPE_CHECKING:
    from .client import AsyncRateLimiter, RateLimiter

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


class HeldLease(_Held):
    """``with limiter.hold(key, Lease(limit, ttl)) as held:`` (RateLimiter.hold)."""

    def __init__(self, limiter: RateLimiter, key: str, limit: Lease, quantity: int, ms: bool,
                 lease_id: Union[str, bytes, None], renew_every: Optional[float]) -> None:
        super().__init__(key, limit, quantity, ms, lease_id, renew_every)
        self._limiter = limiter
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._done = False

    def _take(self) -> Result:
        return self._limiter.lease(self.key, self.limit.limit, self.limit.ttl, self.lease_id,
                                   self.quantity, ms=self.ms)

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                if not self._renewed(self._take()):
                    return
            except Exception as e:  # tried again at the next interval
                self.error = e

    def __enter__(self) -> HeldLease:
        self._granted(self._take())
        self._thread = threading.Thread(
            target=self._renew_loop, name=f"lease-renewal:{self.key}", daemon=True
        )
        self._thread.start()
        return self

    def release(self) -> Optional[bool]:
        """Stops renewing and releases the lease; only the first call sends
        RL.RELEASE (exit calls it too)."""
        if self._done:
            return self.released
        self._done = True
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self.released = self._limiter.release(self.key, self.lease_id)
        return self.released

    def __exit__(self, kind: Optional[Type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self.release()


class AsyncHeldLease(_Held):
    """``async with limiter.hold(key, Lease(limit, ttl)) as held:``"""

    def __init__(self, limiter: AsyncRateLimiter, key: str, limit: Lease, quantity: int,
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
