"""Each command as a command line and a reply parser, with no I/O, shared by
the synchronous and the asyncio client."""

from __future__ import annotations

from typing import Any, Callable, Generic, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from ._limits import Arg, Lease, Limit, Quota, Slice, Slide, Throttle
from ._results import AllowResult, Inspection, Result, parse_allow, parse_inspect, parse_result

T = TypeVar("T")

Entries = Union[Mapping[str, Limit], Sequence[Tuple[str, Limit]]]
"""RL.ALLOW's and RL.PEEK's limits: keys with their limits, in order."""


class Command(Generic[T]):
    """A command line for a backend (its NAME without prefix and exactly the
    module's arguments) and the parser of its reply."""

    __slots__ = ("args", "name", "parse")

    def __init__(self, name: str, args: List[Arg], parse: Callable[[Any], T]) -> None:
        self.name = name
        self.args = args
        self.parse = parse


def _five(ms: bool) -> Callable[[Any], Result]:
    return lambda reply: parse_result(reply, ms)


def _tail(quantity: int, ms: bool) -> List[Arg]:
    tail: List[Arg] = [quantity]
    if ms:
        tail.append("MS")
    return tail


def throttle(key: str, max_burst: int, count: int, period: int, quantity: int, ms: bool
             ) -> Command[Result]:
    return Command("THROTTLE", [key, max_burst, count, period, *_tail(quantity, ms)], _five(ms))


def slide(key: str, limit: int, window: int, quantity: int, ms: bool, precision: Optional[int]
          ) -> Command[Result]:
    args: List[Arg] = [key, limit, window, *_tail(quantity, ms)]
    if precision is not None:
        args += ["PRECISION", precision]
    return Command("SLIDE", args, _five(ms))


def slice_(key: str, limit: int, window: int, slices: int, quantity: int, ms: bool
           ) -> Command[Result]:
    return Command("SLICE", [key, limit, window, slices, *_tail(quantity, ms)], _five(ms))


def lease(key: str, limit: int, ttl: int, lease_id: Union[str, bytes], quantity: int, ms: bool
          ) -> Command[Result]:
    return Command("LEASE", [key, limit, ttl, lease_id, *_tail(quantity, ms)], _five(ms))


def release(key: str, lease_id: Union[str, bytes]) -> Command[bool]:
    return Command("RELEASE", [key, lease_id], lambda reply: int(reply) == 1)


def quota(key: str, limit: int, unit: str, quantity: int, ms: bool, tz: Optional[str]
          ) -> Command[Result]:
    args: List[Arg] = [key, limit, unit, quantity]
    if tz is not None:
        args += ["TZ", tz]
    if ms:
        args.append("MS")
    return Command("QUOTA", args, _five(ms))


def take(key: str, limit: Limit, quantity: int, ms: bool, lease_id: Union[str, bytes, None]
         ) -> Command[Result]:
    """The limiter command of ``limit``'s kind for one key."""
    if isinstance(limit, Throttle):
        return throttle(key, limit.max_burst, limit.count, limit.period, quantity, ms)
    if isinstance(limit, Slide):
        return slide(key, limit.limit, limit.window, quantity, ms, limit.precision)
    if isinstance(limit, Slice):
        return slice_(key, limit.limit, limit.window, limit.slices, quantity, ms)
    if isinstance(limit, Lease):
        if lease_id is None:
            raise TypeError("a Lease limit needs a lease_id")
        return lease(key, limit.limit, limit.ttl, lease_id, quantity, ms)
    if isinstance(limit, Quota):
        return quota(key, limit.limit, limit.unit, quantity, ms, limit.tz)
    raise TypeError(f"not a limit: {limit!r}")


def pairs(entries: Entries) -> List[Tuple[str, Limit]]:
    if isinstance(entries, Mapping):
        return list(entries.items())
    return list(entries)


def several(name: str, entries: Entries, quantity: int, ms: bool,
            lease_id: Union[str, bytes, None]) -> Command[AllowResult]:
    """RL.ALLOW or RL.PEEK of ``entries``."""
    items = pairs(entries)
    args: List[Arg] = [len(items), *(key for key, _ in items)]
    for _, limit in items:
        args += limit.spec()
    if quantity != 1:
        args += ["QUANTITY", quantity]
    if ms:
        args.append("MS")
    if lease_id is not None:
        args += ["ID", lease_id]
    return Command(name, args, lambda reply: parse_allow(reply, ms))


def refund(key: str, limit: Limit, quantity: int, ms: bool) -> Command[Result]:
    args: List[Arg] = [key, *limit.spec(), *_tail(quantity, ms)]
    return Command("REFUND", args, _five(ms))


def inspect(key: str) -> Command[Optional[Inspection]]:
    return Command("INSPECT", [key], parse_inspect)
