"""Each command as a command line and a reply parser, with no I/O, shared by
the synchronous and the asyncio client."""

from __future__ import annotations

from typing import Any, Callable, Generic, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from ._limits import Arg, Lease, Limit, Quota, Slice, Slide, Throttle, single_options
from ._results import (
    AllowResult,
    Inspection,
    Result,
    TopEntry,
    parse_allow,
    parse_inspect,
    parse_result,
    parse_top,
)

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


def _extra(max_wait: Optional[int], block: Optional[int]) -> List[Arg]:
    extra: List[Arg] = []
    if max_wait is not None:
        extra += ["MAXWAIT", max_wait]
    if block is not None:
        extra += ["BLOCK", block]
    return extra


def throttle(key: str, max_burst: int, count: int, period: int, quantity: int, ms: bool,
             max_wait: Optional[int] = None, block: Optional[int] = None) -> Command[Result]:
    args: List[Arg] = [key, max_burst, count, period, *_tail(quantity, ms),
                       *_extra(max_wait, block)]
    return Command("THROTTLE", args, _five(ms))


def slide(key: str, limit: int, window: int, quantity: int, ms: bool, precision: Optional[int],
          block: Optional[int] = None) -> Command[Result]:
    args: List[Arg] = [key, limit, window, *_tail(quantity, ms)]
    if precision is not None:
        args += ["PRECISION", precision]
    return Command("SLIDE", [*args, *_extra(None, block)], _five(ms))


def slice_(key: str, limit: int, window: int, slices: int, quantity: int, ms: bool,
           block: Optional[int] = None) -> Command[Result]:
    args: List[Arg] = [key, limit, window, slices, *_tail(quantity, ms), *_extra(None, block)]
    return Command("SLICE", args, _five(ms))


def lease(key: str, limit: int, ttl: int, lease_id: Union[str, bytes], quantity: int, ms: bool
          ) -> Command[Result]:
    return Command("LEASE", [key, limit, ttl, lease_id, *_tail(quantity, ms)], _five(ms))


def release(key: str, lease_id: Union[str, bytes]) -> Command[bool]:
    return Command("RELEASE", [key, lease_id], lambda reply: int(reply) == 1)


def quota(key: str, limit: int, unit: str, quantity: int, ms: bool, tz: Optional[str],
          block: Optional[int] = None) -> Command[Result]:
    args: List[Arg] = [key, limit, unit, quantity]
    if tz is not None:
        args += ["TZ", tz]
    if ms:
        args.append("MS")
    return Command("QUOTA", [*args, *_extra(None, block)], _five(ms))


def take(key: str, limit: Limit, quantity: int, ms: bool, lease_id: Union[str, bytes, None]
         ) -> Command[Result]:
    """The limiter command of ``limit``'s kind for one key: its BLOCK as the
    command's option, its UNITS and SHADOW passed through (refused there)."""
    command: Command[Result]
    if isinstance(limit, Throttle):
        command = throttle(key, limit.max_burst, limit.count, limit.period, quantity, ms)
    elif isinstance(limit, Slide):
        command = slide(key, limit.limit, limit.window, quantity, ms, limit.precision)
    elif isinstance(limit, Slice):
        command = slice_(key, limit.limit, limit.window, limit.slices, quantity, ms)
    elif isinstance(limit, Lease):
        if lease_id is None:
            raise TypeError("a Lease limit needs a lease_id")
        command = lease(key, limit.limit, limit.ttl, lease_id, quantity, ms)
    elif isinstance(limit, Quota):
        command = quota(key, limit.limit, limit.unit, quantity, ms, limit.tz)
    else:
        raise TypeError(f"not a limit: {limit!r}")
    command.args += single_options(limit)
    return command


def pairs(entries: Entries) -> List[Tuple[str, Limit]]:
    if isinstance(entries, Mapping):
        return list(entries.items())
    return list(entries)


def several(name: str, entries: Entries, quantity: int, ms: bool,
            lease_id: Union[str, bytes, None], max_wait: Optional[int] = None
            ) -> Command[AllowResult]:
    """RL.ALLOW or RL.PEEK of ``entries``."""
    items = pairs(entries)
    args: List[Arg] = [len(items), *(key for key, _ in items)]
    for _, limit in items:
        args += limit.spec()
    if quantity != 1:
        args += ["QUANTITY", quantity]
    if ms:
        args.append("MS")
    if max_wait is not None:
        args += ["MAXWAIT", max_wait]
    if lease_id is not None:
        args += ["ID", lease_id]
    return Command(name, args, lambda reply: parse_allow(reply, ms))


def refund(key: str, limit: Limit, quantity: int, ms: bool) -> Command[Result]:
    args: List[Arg] = [key, *limit.base_spec(), *_tail(quantity, ms)]
    return Command("REFUND", args, _five(ms))


def charge(key: str, limit: Limit, quantity: int, ms: bool) -> Command[Result]:
    args: List[Arg] = [key, *limit.base_spec(), *_tail(quantity, ms)]
    return Command("CHARGE", args, _five(ms))


def settle(entries: Entries, taken: Union[int, Sequence[int]], actual: Union[int, Sequence[int]],
           ms: bool) -> List[Optional[Command[Result]]]:
    """Per (key, limit): RL.REFUND of ``taken - actual``, RL.CHARGE of
    ``actual - taken``, None when they are equal."""
    items = pairs(entries)
    took = _per_limit("taken", taken, len(items))
    used = _per_limit("actual", actual, len(items))
    out: List[Optional[Command[Result]]] = []
    for (key, limit), t, a in zip(items, took, used):
        if a < t:
            out.append(refund(key, limit, t - a, ms))
        elif a > t:
            out.append(charge(key, limit, a - t, ms))
        else:
            out.append(None)
    return out


def _per_limit(name: str, value: Union[int, Sequence[int]], n: int) -> List[int]:
    if isinstance(value, int):
        return [value] * n
    values = list(value)
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} values for {n} limits")
    return values


def top(count: Optional[int]) -> Command[List[TopEntry]]:
    args: List[Arg] = [] if count is None else ["COUNT", count]
    return Command("TOP", args, lambda reply: parse_top(reply, 10 if count is None else count))


def inspect(key: str) -> Command[Optional[Inspection]]:
    return Command("INSPECT", [key], parse_inspect)
