"""The limits, one small frozen value type per kind, as the module's specs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Union

Arg = Union[str, int, bytes]

UNITS = ("MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR")


@dataclass(frozen=True)
class Throttle:
    """GCRA: ``count`` per ``period``, bursts of ``max_burst + 1`` (RL.THROTTLE)."""

    max_burst: int
    count: int
    period: int

    kind = "THROTTLE"

    def spec(self) -> List[Arg]:
        """The spec as RL.ALLOW, RL.PEEK and RL.REFUND take it."""
        return ["THROTTLE", self.max_burst, self.count, self.period]



@dataclass(frozen=True)
class Slide:
    """An exact sliding log: ``limit`` units in any ``window`` (RL.SLIDE)."""

    limit: int
    window: int
    precision: Optional[int] = None

    kind = "SLIDE"

    def spec(self) -> List[Arg]:
        tail: List[Arg] = [] if self.precision is None else ["PRECISION", self.precision]
        return ["SLIDE", self.limit, self.window, *tail]



@dataclass(frozen=True)
class Slice:
    """A window of ``slices`` clock-aligned slices (RL.SLICE)."""

    limit: int
    window: int
    slices: int

    kind = "SLICE"

    def spec(self) -> List[Arg]:
        return ["SLICE", self.limit, self.window, self.slices]



@dataclass(frozen=True)
class Lease:
    """At most ``limit`` held at once, in leases that expire ``ttl`` after
    their last renewal (RL.LEASE)."""

    limit: int
    ttl: int

    kind = "LEASE"

    def spec(self) -> List[Arg]:
        return ["LEASE", self.limit, self.ttl]



@dataclass(frozen=True)
class Quota:
    """``limit`` per calendar ``unit`` in time zone ``tz`` (RL.QUOTA)."""

    limit: int
    unit: str
    tz: Optional[str] = None

    kind = "QUOTA"

    def spec(self) -> List[Arg]:
        tail: List[Arg] = [] if self.tz is None else ["TZ", self.tz]
        return ["QUOTA", self.limit, self.unit, *tail]



Limit = Union[Throttle, Slide, Slice, Lease, Quota]
"""Any of the five kinds."""
