"""Typed replies: the five fields, RL.ALLOW's and RL.PEEK's seven elements,
RL.INSPECT's fields per kind."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union


class Result(NamedTuple):
    """The five fields every limiter (and RL.REFUND) replies, named as
    redis_rate names them. ``retry_after`` and ``reset_after`` are seconds,
    or milliseconds when ``ms`` (the call was made with MS). A named tuple:
    immutable, and as cheap to make as the reply's own list."""

    limited: bool
    limit: int
    remaining: int
    retry_after: int
    reset_after: int
    ms: bool = False

    @property
    def allowed(self) -> bool:
        return not self.limited


class AllowResult(NamedTuple):
    """RL.ALLOW's and RL.PEEK's reply: the five fields of the binding limit,
    its ``index`` (1-based, as the module answers it: 1 is the first limit),
    and each limit's own result, in the order given."""

    limited: bool
    limit: int
    remaining: int
    retry_after: int
    reset_after: int
    ms: bool
    index: int  # type: ignore[assignment]  # shadows tuple.index on purpose
    results: Tuple[Result, ...]

    @property
    def allowed(self) -> bool:
        return not self.limited

    @property
    def binding(self) -> Result:
        """The binding limit's own result (``results[index - 1]``)."""
        return self.results[self.index - 1]


def parse_result(reply: Any, ms: bool) -> Result:
    return Result(reply[0] == 1, reply[1], reply[2], reply[3], reply[4], ms)


def parse_allow(reply: Any, ms: bool) -> AllowResult:
    return AllowResult(
        reply[0] == 1,
        reply[1],
        reply[2],
        reply[3],
        reply[4],
        ms,
        reply[5],
        tuple([Result(r[0] == 1, r[1], r[2], r[3], r[4], ms) for r in reply[6]]),
    )


def _int(value: Any) -> int:
    return int(value)


@dataclass(frozen=True)
class ThrottleState:
    """RL.INSPECT of an RL.THROTTLE key. Every state's ``blocked_until``
    (Unix ms) is there while the key is blocked (BLOCK), else None."""

    ttl: int
    memory: int
    tat_ahead_ms: int
    tat_unix_ms: int
    blocked_until: Optional[int] = None
    type: str = "throttle"


@dataclass(frozen=True)
class SlideState:
    """RL.INSPECT of an RL.SLIDE key."""

    ttl: int
    memory: int
    units: int
    entries: int
    oldest_age_ms: int
    newest_age_ms: int
    blocked_until: Optional[int] = None
    type: str = "slide"


@dataclass(frozen=True)
class SliceState:
    """RL.INSPECT of an RL.SLICE key; ``counts`` newest slice first."""

    ttl: int
    memory: int
    window_ms: int
    slices: int
    units: int
    head_age_ms: int
    counts: Tuple[int, ...]
    blocked_until: Optional[int] = None
    type: str = "slice"


@dataclass(frozen=True)
class Holder:
    """One lease of an RL.LEASE key: its id (a string, as in every language:
    bytes that are not UTF-8 decoded with ``surrogateescape``), weight and
    milliseconds left."""

    lease_id: str
    weight: int
    ttl_ms: int


@dataclass(frozen=True)
class LeaseState:
    """RL.INSPECT of an RL.LEASE key; ``holders`` soonest to expire first."""

    ttl: int
    memory: int
    held: int
    leases: int
    holders: Tuple[Holder, ...]
    blocked_until: Optional[int] = None
    type: str = "lease"


@dataclass(frozen=True)
class QuotaState:
    """RL.INSPECT of an RL.QUOTA key; ``start`` and ``end`` Unix milliseconds."""

    ttl: int
    memory: int
    unit: str
    zone: str
    used: int
    start: int
    end: int
    blocked_until: Optional[int] = None
    type: str = "quota"


Inspection = Union[ThrottleState, SlideState, SliceState, LeaseState, QuotaState]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _id(value: Any) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def parse_inspect(reply: Any) -> Optional[Inspection]:
    if reply is None:
        return None
    fields: Dict[str, Any]
    if isinstance(reply, dict):
        fields = {_text(k): v for k, v in reply.items()}
    else:
        items: Sequence[Any] = reply
        fields = {_text(items[i]): items[i + 1] for i in range(0, len(items), 2)}
    kind = _text(fields["type"])
    ttl, memory = _int(fields["ttl"]), _int(fields["memory"])
    found = fields.get("blocked_until")
    blocked = None if found is None else _int(found)
    state = _state(kind, ttl, memory, fields)
    return state if blocked is None else replace(state, blocked_until=blocked)


def _state(kind: str, ttl: int, memory: int, fields: Dict[str, Any]) -> Inspection:
    if kind == "throttle":
        return ThrottleState(ttl, memory, _int(fields["tat_ahead_ms"]), _int(fields["tat_unix_ms"]))
    if kind == "slide":
        return SlideState(
            ttl,
            memory,
            _int(fields["units"]),
            _int(fields["entries"]),
            _int(fields["oldest_age_ms"]),
            _int(fields["newest_age_ms"]),
        )
    if kind == "slice":
        return SliceState(
            ttl,
            memory,
            _int(fields["window_ms"]),
            _int(fields["slices"]),
            _int(fields["units"]),
            _int(fields["head_age_ms"]),
            tuple(_int(c) for c in fields["counts"]),
        )
    if kind == "lease":
        holders = tuple(Holder(_id(h[0]), _int(h[1]), _int(h[2])) for h in fields["holders"])
        return LeaseState(ttl, memory, _int(fields["held"]), _int(fields["leases"]), holders)
    if kind == "quota":
        return QuotaState(
            ttl,
            memory,
            _text(fields["unit"]),
            _text(fields["zone"]),
            _int(fields["used"]),
            _int(fields["start"]),
            _int(fields["end"]),
        )
    raise ValueError(f"RL.INSPECT answered an unknown type {kind!r}")


class TopEntry(NamedTuple):
    """One key of RL.TOP: refused ``refusals`` times recently (decayed,
    rounded down), last at ``last_refusal_ms`` (Unix ms). ``key`` is a
    string (bytes that are not UTF-8 decoded with ``surrogateescape``)."""

    key: str
    refusals: int
    last_refusal_ms: int


def parse_top(reply: Any, count: int) -> List[TopEntry]:
    """RL.TOP's entries; from a cluster client, every master's answer
    (a dict by node) merged in the module's order and cut to ``count``:
    a key lives on one master, so the merge is exact."""
    if not isinstance(reply, dict):
        return [TopEntry(_id(e[0]), int(e[1]), int(e[2])) for e in reply]
    every = [TopEntry(_id(e[0]), int(e[1]), int(e[2])) for part in reply.values() for e in part]
    every.sort(key=lambda e: (-e.refusals, -e.last_refusal_ms, e.key.encode(
        "utf-8", "surrogateescape")))
    return every[:count]


AnyResult = Union[Result, AllowResult]
__all__ = [
    "AllowResult",
    "AnyResult",
    "Holder",
    "Inspection",
    "LeaseState",
    "QuotaState",
    "Result",
    "SliceState",
    "SlideState",
    "ThrottleState",
    "TopEntry",
]
