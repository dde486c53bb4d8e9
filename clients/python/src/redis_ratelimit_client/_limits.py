"""The limits, one small frozen value type per kind, as the module's specs.

Every kind but LEASE takes ``block`` (BLOCK: after a refusal, the key refuses
everything for that long, in the call's unit); every kind takes ``units``
(UNITS: this limit decides and records ``units`` instead of the call's
quantity) and ``shadow`` (SHADOW: decided and shown, never refusing). In
RL.ALLOW and RL.PEEK the spec carries them as ``... [BLOCK b] [UNITS n]
[SHADOW]``; a single command (``take``) sends ``BLOCK b`` as its option and
passes ``units`` and ``shadow`` through as words the module refuses there;
RL.REFUND and RL.CHARGE get the spec without them (``base_spec``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Union

Arg = Union[str, int, bytes]

UNITS = ("MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR")


def _options(block: Optional[int], units: Optional[int], shadow: bool) -> List[Arg]:
    tail: List[Arg] = []
    if block is not None:
        tail += ["BLOCK", block]
    if units is not None:
        tail += ["UNITS", units]
    if shadow:
        tail.append("SHADOW")
    return tail


@dataclass(frozen=True)
class Throttle:
    """GCRA: ``count`` per ``period``, bursts of ``max_burst + 1`` (RL.THROTTLE)."""

    max_burst: int
    count: int
    period: int
    block: Optional[int] = None
    units: Optional[int] = None
    shadow: bool = False

    kind = "THROTTLE"

    def base_spec(self) -> List[Arg]:
        """The spec as RL.REFUND and RL.CHARGE take it (no BLOCK/UNITS/SHADOW)."""
        return ["THROTTLE", self.max_burst, self.count, self.period]

    def spec(self) -> List[Arg]:
        """The spec as RL.ALLOW and RL.PEEK take it."""
        return [*self.base_spec(), *_options(self.block, self.units, self.shadow)]


@dataclass(frozen=True)
class Slide:
    """An exact sliding log: ``limit`` units in any ``window`` (RL.SLIDE)."""

    limit: int
    window: int
    precision: Optional[int] = None
    block: Optional[int] = None
    units: Optional[int] = None
    shadow: bool = False

    kind = "SLIDE"

    def base_spec(self) -> List[Arg]:
        tail: List[Arg] = [] if self.precision is None else ["PRECISION", self.precision]
        return ["SLIDE", self.limit, self.window, *tail]

    def spec(self) -> List[Arg]:
        return [*self.base_spec(), *_options(self.block, self.units, self.shadow)]


@dataclass(frozen=True)
class Slice:
    """A window of ``slices`` clock-aligned slices (RL.SLICE)."""

    limit: int
    window: int
    slices: int
    block: Optional[int] = None
    units: Optional[int] = None
    shadow: bool = False

    kind = "SLICE"

    def base_spec(self) -> List[Arg]:
        return ["SLICE", self.limit, self.window, self.slices]

    def spec(self) -> List[Arg]:
        return [*self.base_spec(), *_options(self.block, self.units, self.shadow)]


@dataclass(frozen=True)
class Lease:
    """At most ``limit`` held at once, in leases that expire ``ttl`` after
    their last renewal (RL.LEASE). A lease takes no BLOCK."""

    limit: int
    ttl: int
    units: Optional[int] = None
    shadow: bool = False

    kind = "LEASE"
    block = None

    def base_spec(self) -> List[Arg]:
        return ["LEASE", self.limit, self.ttl]

    def spec(self) -> List[Arg]:
        return [*self.base_spec(), *_options(None, self.units, self.shadow)]


@dataclass(frozen=True)
class Quota:
    """``limit`` per calendar ``unit`` in time zone ``tz`` (RL.QUOTA)."""

    limit: int
    unit: str
    tz: Optional[str] = None
    block: Optional[int] = None
    units: Optional[int] = None
    shadow: bool = False

    kind = "QUOTA"

    def base_spec(self) -> List[Arg]:
        tail: List[Arg] = [] if self.tz is None else ["TZ", self.tz]
        return ["QUOTA", self.limit, self.unit, *tail]

    def spec(self) -> List[Arg]:
        return [*self.base_spec(), *_options(self.block, self.units, self.shadow)]


Limit = Union[Throttle, Slide, Slice, Lease, Quota]
"""Any of the five kinds."""


def single_options(limit: Limit) -> List[Arg]:
    """What a single command (RL.THROTTLE ...) of ``limit`` adds after its
    own arguments: ``BLOCK b``, and ``UNITS``/``SHADOW`` passed through (the
    module refuses them there, naming the word)."""
    return _options(limit.block, limit.units, limit.shadow)
