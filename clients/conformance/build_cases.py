"""The conformance suite's cases, before their replies are recorded.

`record.py` runs these against the module on a server whose clock is set
per step, and writes cases.json with every reply. Each sequence starts on
an empty database. A step is a command line; `at` (faked-clock sequences)
is the server's instant, UTC, to the microsecond; `via: other` sends it to
the other backend than the run's (a key of the other backend); `raw` sends it to
the server as a plain command (PTTL, EXISTS, SET).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

Step = dict[str, Any]
Seq = dict[str, Any]


def instant(base: str, seconds: float = 0.0) -> str:
    t = datetime.strptime(base, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
    t += timedelta(microseconds=round(seconds * 1_000_000))
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")


class Builder:
    def __init__(self) -> None:
        self.seqs: list[Seq] = []

    def seq(self, name: str, faked: bool = True, base: str = "2026-03-29 00:30:00.000000") -> SeqBuilder:
        s = SeqBuilder(name, faked, base)
        self.seqs.append(s.data)
        return s


class SeqBuilder:
    def __init__(self, name: str, faked: bool, base: str) -> None:
        self.base = base
        self.faked = faked
        self.data: Seq = {"name": name, "clock": "faked" if faked else "real", "steps": []}

    def __call__(
        self, at: float, *cmd: Any, via: str | None = None, raw: bool = False, timed: bool = False
    ) -> SeqBuilder:
        step: Step = {"cmd": [str(c) for c in cmd]}
        if self.faked:
            step["at"] = instant(self.base, at)
        if via:
            step["via"] = via
        if raw:
            step["raw"] = True
        if timed:
            step["timed"] = True
        self.data["steps"].append(step)
        return self

    def real(self, *cmd: Any, via: str | None = None, raw: bool = False, timed: bool = False) -> SeqBuilder:
        return self(0, *cmd, via=via, raw=raw, timed=timed)


def build() -> list[Seq]:
    b = Builder()

    # RL.THROTTLE ---------------------------------------------------------
    s = b.seq("throttle: bursts, limits, never-fits, peeks, MS")
    s(0, "RL.THROTTLE", "t", 15, 30, 60)
    for i in range(1, 18):
        s(i * 0.1, "RL.THROTTLE", "t", 15, 30, 60)
    s(2.0, "RL.THROTTLE", "t", 15, 30, 60, 20)
    s(2.0, "RL.THROTTLE", "t", 15, 30, 60, 0)
    s(2.0, "PTTL", "t", raw=True)
    s(3.999999, "RL.THROTTLE", "t", 15, 30, 60)
    s(4.0, "RL.THROTTLE", "t", 15, 30, 60)
    s(4.0, "RL.THROTTLE", "t", 15, 30, 60, 1, "MS")
    s(4.000001, "RL.THROTTLE", "t", 15, 30, 60, 2, "ms")
    s(4.5, "RL.INSPECT", "t")
    s(100, "RL.THROTTLE", "t", 15, 30, 60, 0)
    s(100, "RL.INSPECT", "t")

    s = b.seq("throttle: fractions of a nanosecond, rate changes")
    for i in range(6):
        s(i * 0.1111, "RL.THROTTLE", "f", 0, 3, 1000, 1, "MS")
    for i in range(5):
        s(1 + i * 0.000001, "RL.THROTTLE", "f", 4, 7, 1)
    s(1.2, "RL.THROTTLE", "f", 4, 11, 1, 0)
    s(1.2, "RL.THROTTLE", "f", 4, 11, 1)
    s(1.3, "RL.THROTTLE", "f", 2, 4294967295, 315360000, 1)
    s(1.3, "RL.THROTTLE", "f", 2, 4294967295, 315360000, 1, "MS")
    s(1.4, "RL.INSPECT", "f")
    for i in range(4):
        s(2 + i * 0.0000005, "RL.THROTTLE", "fast", 999999, 1000000, 1, 3)
    s(2.5, "RL.THROTTLE", "big", 1000000000000, 1, 315360000, 1000000000000)
    s(2.5, "RL.THROTTLE", "big", 1000000000000, 1, 315360000, 1000000000000)
    s(2.5, "RL.INSPECT", "big")
    s(2.6, "RL.THROTTLE", "huge", 9, 1, 315360000)
    s(2.6, "RL.THROTTLE", "huge", 0, 4294967295, 1, 5)

    s = b.seq("throttle: refunds")
    s(0, "RL.THROTTLE", "r", 2, 1, 60)
    s(0.5, "RL.THROTTLE", "r", 2, 1, 60)
    s(1, "RL.REFUND", "r", "THROTTLE", 2, 1, 60, 1)
    s(1, "PTTL", "r", raw=True)
    s(1, "RL.REFUND", "r", "THROTTLE", 2, 3, 60, 1, "MS")
    s(1, "RL.REFUND", "r", "THROTTLE", 2, 1, 60, 0)
    s(1, "RL.REFUND", "r", "THROTTLE", 2, 1, 60, 5)
    s(1, "EXISTS", "r", raw=True)
    s(1, "RL.REFUND", "nothing", "THROTTLE", 2, 1, 60, 5)

    # RL.SLIDE ------------------------------------------------------------
    s = b.seq("slide: the exact log, retry and reset")
    s(0, "RL.SLIDE", "s", 5, 10)
    s(1, "RL.SLIDE", "s", 5, 10, 2)
    s(1, "RL.SLIDE", "s", 5, 10, 1)
    s(2.5, "RL.SLIDE", "s", 5, 10)
    s(3, "RL.SLIDE", "s", 5, 10)
    s(3, "RL.SLIDE", "s", 5, 10, 6)
    s(3, "RL.SLIDE", "s", 5, 10, 2, "MS")
    s(3, "PTTL", "s", raw=True)
    s(3.5, "RL.INSPECT", "s")
    s(10, "RL.SLIDE", "s", 5, 10)
    s(10.000001, "RL.SLIDE", "s", 5, 10, 0)
    s(11, "RL.SLIDE", "s", 5, 10, 3)
    s(11, "RL.SLIDE", "s", 2, 10, 0)
    s(11, "RL.SLIDE", "s", 5, 20, 1)
    s(11, "PTTL", "s", raw=True)
    s(11, "RL.SLIDE", "s", 5, 20, 3)
    s(11.2, "RL.INSPECT", "s")
    s(40, "RL.SLIDE", "s", 5, 10, 0)
    s(40, "EXISTS", "s", raw=True)

    s = b.seq("slide: many units at one instant, counted entries")
    for q in (1, 1, 1, 2, 4, 1):
        s(0.000003, "RL.SLIDE", "c", 100, 1, q)
    s(0.5, "RL.SLIDE", "c", 100, 1, 2)
    s(0.5, "RL.SLIDE", "c", 100, 1, 1)
    s(0.6, "RL.INSPECT", "c")
    s(0.7, "RL.REFUND", "c", "SLIDE", 100, 1, 4)
    s(0.7, "RL.INSPECT", "c")
    s(0.8, "RL.SLIDE", "c", 12, 1000, 3, "MS")
    s(1.0000031, "RL.SLIDE", "c", 12, 1000, 0, "MS")
    s(1.2, "RL.REFUND", "c", "SLIDE", 12, 1000, 100, "MS")
    s(1.2, "EXISTS", "c", raw=True)

    s = b.seq("slide: PRECISION joins units, sparse traffic stays exact")
    for i in range(12):
        s(i * 0.25, "RL.SLIDE", "p", 10, 60, 1, "PRECISION", 1)
    s(3.1, "RL.INSPECT", "p")
    s(3.2, "RL.SLIDE", "p", 10, 60, 1, "PRECISION", 1)
    for i in range(4):
        s(70 + i * 0.4, "RL.SLIDE", "p", 10, 60000, 2, "MS", "PRECISION", 1000)
    s(72, "RL.SLIDE", "p", 10, 60, 3, "PRECISION", 60)
    s(72, "RL.INSPECT", "p")
    s(72.5, "RL.REFUND", "p", "SLIDE", 10, 60, "PRECISION", 1, 3)
    s(72.5, "RL.INSPECT", "p")
    s(72.7, "RL.SLIDE", "p", 10, 60, 1, "PRECISION", 1)
    s(72.8, "RL.SLIDE", "p", 10, 60, 1, "PRECISION", 1)
    s(73, "RL.INSPECT", "p")
    s(200, "RL.SLIDE", "p", 10, 60, 1, "PRECISION", 0)

    # RL.SLICE ------------------------------------------------------------
    s = b.seq("slice: slices, the oldest slice, retry")
    s(0, "RL.SLICE", "c", 10, 60, 12)
    s(4.9, "RL.SLICE", "c", 10, 60, 12, 4)
    s(5, "RL.SLICE", "c", 10, 60, 12, 5)
    s(30, "RL.SLICE", "c", 10, 60, 12)
    s(30, "RL.SLICE", "c", 10, 60, 12, 11)
    s(30, "RL.SLICE", "c", 10, 60, 12, 0)
    s(31, "PTTL", "c", raw=True)
    s(31, "RL.INSPECT", "c")
    s(61, "RL.SLICE", "c", 10, 60, 12, 2)
    s(65.000001, "RL.SLICE", "c", 10, 60, 12, 2)
    s(66, "RL.SLICE", "c", 10, 60000, 7, 1, "MS")
    s(66, "RL.INSPECT", "c")
    s(66, "RL.SLICE", "c", 10, 90, 5, 1)
    s(66, "RL.INSPECT", "c")
    s(67, "RL.REFUND", "c", "SLICE", 10, 90, 5, 3)
    s(67, "RL.INSPECT", "c")
    s(68, "RL.REFUND", "c", "SLICE", 10, 60, 12, 3)
    s(68, "RL.INSPECT", "c")
    s(69, "RL.REFUND", "c", "SLICE", 10, 60, 12, 30)
    s(69, "EXISTS", "c", raw=True)
    s(70, "RL.SLICE", "u", 4294967295, 7, 3, 1000000000000)
    s(70, "RL.SLICE", "u", 4294967295, 7, 3, 4294967295)
    s(70.3, "RL.SLICE", "u", 4294967295, 7, 3, 0)
    s(71, "RL.SLICE", "w", 5, 1, 1)
    s(71.3, "RL.SLICE", "w", 5, 1, 1, 5)
    s(72, "RL.SLICE", "w", 5, 1, 1, 5)

    s = b.seq("slice: uneven, fine and long geometries", base="2026-03-29 00:30:00.000123")
    for i in range(6):
        s(i * 0.0021, "RL.SLICE", "g", 5, 7, 3, 1, "MS")
    s(0.0125, "RL.INSPECT", "g")
    for i in range(5):
        s(0.1 + i * 0.0000004, "RL.SLICE", "h", 3, 1000, 3000, 1, "MS")
    s(0.1000021, "RL.SLICE", "h", 3, 1000, 3000, 0, "MS")
    s(0.2, "RL.SLICE", "h", 3, 1000, 7, 0, "MS")
    s(0.2, "RL.SLICE", "h", 3, 1000, 7, 1, "MS")
    s(0.2, "RL.INSPECT", "h")
    s(1, "RL.SLICE", "y", 100, 315360000, 86400, 40)
    s(5000, "RL.SLICE", "y", 100, 315360000, 86400, 70)
    s(5000, "RL.SLICE", "y", 100, 315360000, 86399, 0)
    s(5000, "RL.REFUND", "y", "SLICE", 100, 315360000, 997, 50)
    s(5000, "RL.INSPECT", "y")

    # RL.LEASE / RL.RELEASE -----------------------------------------------
    s = b.seq("lease: weights, renewals, expiry, release")
    s(0, "RL.LEASE", "pool", 3, 60, "a", 2)
    s(1, "RL.LEASE", "pool", 3, 60, "b", 2)
    s(2, "RL.LEASE", "pool", 3, 60, "b", 1)
    s(3, "RL.LEASE", "pool", 3, 60, "a", 3)
    s(4, "RL.LEASE", "pool", 3, 60, "a", 1)
    s(4, "RL.LEASE", "pool", 3, 60, "c", 4)
    s(4, "RL.LEASE", "pool", 3, 60, "c", 0)
    s(5, "RL.INSPECT", "pool")
    s(5, "PTTL", "pool", raw=True)
    s(6, "RL.LEASE", "pool", 3, 10, "c", 1)
    s(6, "RL.LEASE", "pool", 3, 10, "d", 1)
    s(7, "RL.RELEASE", "pool", "a")
    s(7, "RL.RELEASE", "pool", "a")
    s(7, "RL.LEASE", "pool", 3, 10, "d", 2)
    s(7, "PTTL", "pool", raw=True)
    s(16, "RL.LEASE", "pool", 3, 10, "d", 3)
    s(16, "RL.LEASE", "pool", 3, 10000, "e", 1, "MS")
    s(16.5, "RL.INSPECT", "pool")
    s(17, "RL.RELEASE", "pool", "b")
    s(17, "RL.RELEASE", "pool", "e")
    s(17, "EXISTS", "pool", raw=True)
    s(30, "RL.LEASE", "tie", 2, 10, "y", 1)
    s(30, "RL.LEASE", "tie", 2, 10, "x", 1)
    s(31, "RL.LEASE", "tie", 2, 10, "z", 2)
    s(31, "RL.LEASE", "tie", 2, 10, "y", 2)
    s(31, "RL.LEASE", "tie", 2, 10, "x", 2)
    s(31, "RL.INSPECT", "tie")
    s(40, "RL.RELEASE", "tie", "x")
    s(40, "EXISTS", "tie", raw=True)

    # RL.QUOTA: the README's daylight-saving table, and more -------------------
    s = b.seq("quota: Europe/Berlin, 23-hour day (2026-03-29)", base="2026-03-28 22:30:00.000000")
    s(0, "RL.QUOTA", "q", 3, "DAY", "TZ", "Europe/Berlin")
    s(1, "RL.INSPECT", "q")
    s(3600, "RL.QUOTA", "q", 3, "DAY", 2, "TZ", "europe/berlin")
    s(3600, "RL.QUOTA", "q", 3, "DAY", "TZ", "Europe/Berlin")
    s(3600, "PTTL", "q", raw=True)
    s(3600 * 23.5 - 0.000001, "RL.QUOTA", "q", 3, "DAY", 0, "TZ", "Europe/Berlin", "MS")
    s(3600 * 23.5, "RL.QUOTA", "q", 3, "DAY", "TZ", "Europe/Berlin")
    s(3600 * 23.5, "RL.INSPECT", "q")

    s = b.seq("quota: Europe/Berlin, 25-hour day (2026-10-25)", base="2026-10-24 22:00:00.000000")
    s(0, "RL.QUOTA", "q", 5, "DAY", "TZ", "Europe/Berlin")
    s(0, "RL.INSPECT", "q")
    s(3600 * 25 - 1, "RL.QUOTA", "q", 5, "DAY", 0, "TZ", "Europe/Berlin")
    s(3600 * 25, "RL.QUOTA", "q", 5, "DAY", 0, "TZ", "Europe/Berlin")

    s = b.seq("quota: America/Sao_Paulo skips midnight (2018-11-04)", base="2018-11-04 02:30:00.000000")
    s(0, "RL.QUOTA", "q", 5, "DAY", "TZ", "America/Sao_Paulo")
    s(1800, "RL.QUOTA", "q", 5, "DAY", "TZ", "America/Sao_Paulo")
    s(1800, "RL.INSPECT", "q")
    s(3600 * 23.5, "RL.QUOTA", "q", 5, "DAY", 5, "TZ", "America/Sao_Paulo")

    s = b.seq("quota: Asia/Kolkata hours start at :30 UTC; fixed offsets", base="2026-06-01 09:45:00.000000")
    s(0, "RL.QUOTA", "q", 2, "HOUR", "TZ", "Asia/Kolkata")
    s(0, "RL.INSPECT", "q")
    s(1, "RL.QUOTA", "q", 2, "HOUR", 2, "TZ", "Asia/Kolkata")
    s(1, "RL.QUOTA", "o", 2, "HOUR", "TZ", "+05:30")
    s(1, "RL.QUOTA", "o", 2, "MINUTE", "TZ", "-03:30")
    s(1, "RL.INSPECT", "o")
    s(1, "RL.QUOTA", "z", 2, "WEEK", "TZ", "-00:00")
    s(1, "RL.INSPECT", "z")

    s = b.seq("quota: Europe/Berlin repeats 02:00-03:00 (2026-10-25)", base="2026-10-25 00:10:00.000000")
    s(0, "RL.QUOTA", "q", 1, "HOUR", "TZ", "Europe/Berlin")
    s(0, "RL.QUOTA", "q", 1, "HOUR", "TZ", "Europe/Berlin")
    s(3600, "RL.QUOTA", "q", 1, "HOUR", "TZ", "Europe/Berlin")
    s(3600, "RL.INSPECT", "q")

    s = b.seq("quota: months, years, a change of unit or zone, refunds", base="2026-01-31 23:59:59.500000")
    s(0, "RL.QUOTA", "m", 10, "MONTH")
    s(0, "RL.QUOTA", "m", 10, "MONTH", 8, "MS")
    s(0.4, "RL.QUOTA", "m", 10, "MONTH", 2)
    s(0.6, "RL.QUOTA", "m", 10, "MONTH", 2)
    s(0.6, "RL.QUOTA", "y", 1000000000000000, "YEAR", 999999999999999, "TZ", "Pacific/Kiritimati")
    s(0.6, "RL.QUOTA", "y", 1000000000000000, "YEAR", 2, "TZ", "Pacific/Kiritimati")
    s(0.6, "RL.INSPECT", "y")
    s(1, "RL.QUOTA", "u", 5, "YEAR", 2)
    s(2, "RL.QUOTA", "u", 5, "MINUTE", 2)
    s(2, "RL.INSPECT", "u")
    s(70, "RL.QUOTA", "u", 5, "MINUTE", 0)
    s(70, "RL.QUOTA", "u", 5, "MINUTE", 1, "TZ", "Asia/Tokyo")
    s(70, "RL.INSPECT", "u")
    s(71, "RL.REFUND", "u", "QUOTA", 5, "DAY", "TZ", "Asia/Tokyo", 1)
    s(71, "RL.REFUND", "u", "QUOTA", 5, "YEAR", 3)
    s(71, "RL.INSPECT", "u")
    s(72, "RL.REFUND", "u", "QUOTA", 5, "YEAR", 30)
    s(72, "EXISTS", "u", raw=True)

    # RL.ALLOW / RL.PEEK ----------------------------------------------------
    s = b.seq("allow and peek: all or nothing, the binding limit")
    k = ("{u}:t", "{u}:s", "{u}:c", "{u}:l", "{u}:q")
    specs = (
        "THROTTLE",
        4,
        5,
        1,
        "SLIDE",
        3,
        10,
        "SLICE",
        10,
        60,
        6,
        "LEASE",
        4,
        30,
        "QUOTA",
        6,
        "DAY",
        "TZ",
        "Asia/Shanghai",
    )
    s(0, "RL.ALLOW", 5, *k, *specs, "ID", "job")
    s(0.1, "RL.ALLOW", 5, *k, *specs, "ID", "job2", "QUANTITY", 2)
    s(0.2, "RL.PEEK", 5, *k, *specs)
    s(0.2, "RL.PEEK", 5, *k, *specs, "ID", "job", "QUANTITY", 0, "MS")
    s(0.3, "RL.ALLOW", 5, *k, *specs, "ID", "job3")
    s(0.3, "PTTL", "{u}:s", raw=True)
    s(0.4, "RL.ALLOW", 2, "{u}:s", "{u}:x", "SLIDE", 3, 100, "SLIDE", 3, 10)
    s(0.4, "PTTL", "{u}:s", raw=True)
    s(0.4, "EXISTS", "{u}:x", raw=True)
    s(0.5, "RL.ALLOW", 3, "a", "b", "c", "SLIDE", 5, 10, "SLIDE", 3, 10, "SLIDE", 3, 20)
    s(0.6, "RL.ALLOW", 3, "a", "b", "c", "SLIDE", 5, 10, "SLIDE", 3, 10, "SLIDE", 3, 20, "QUANTITY", 3)
    s(0.7, "RL.ALLOW", 3, "a", "b", "c", "SLIDE", 5, 10, "SLIDE", 1, 10, "SLIDE", 2, 20, "QUANTITY", 2)
    s(0.7, "RL.PEEK", 3, "a", "b", "c", "SLIDE", 5, 10, "SLIDE", 3, 10, "SLIDE", 3, 20, "QUANTITY", 1000000000000)
    s(0.8, "RL.PEEK", 1, "a", "LEASE", 1, 1)
    s(0.8, "RL.ALLOW", 2, "a", "n", "SLIDE", 5, 10, "THROTTLE", 0, 1, 1, "QUANTITY", 0)
    s(0.8, "EXISTS", "n", raw=True)

    # Errors, arity, unknown arguments: every ERR text, in the module's order.
    s = b.seq("errors", faked=False)
    for cmd in (
        ("RL.THROTTLE", "e", 9, 10, -60),
        ("RL.THROTTLE", "e", 9, 10),
        ("RL.THROTTLE", "e", "x", 10, 60),
        ("RL.THROTTLE", "e", 1000000000001, 10, 60),
        ("RL.THROTTLE", "e", 9, 0, 60),
        ("RL.THROTTLE", "e", 9, 4294967296, 60),
        ("RL.THROTTLE", "e", 9, 10, 315360001),
        ("RL.THROTTLE", "e", 9, 10, 315360000001, "MS"),
        ("RL.THROTTLE", "e", 9, 10, 0, "MS"),
        ("RL.THROTTLE", "e", 10, 1, 315360000),
        ("RL.THROTTLE", "e", 9, 10, 60, -1),
        ("RL.THROTTLE", "e", 9, 10, 60, 1000000000001),
        ("RL.THROTTLE", "e", 9, 10, 60, "1.5"),
        ("RL.THROTTLE", "e", 9, 10, 60, 1, 2),
        ("RL.THROTTLE", "e", 9, 10, 60, "MS", 5),
        ("RL.THROTTLE", "e", 9, 10, 60, "MS", "ms"),
        ("RL.THROTTLE", "e", 9, 10, 60, "AT", 5),
        ("RL.THROTTLE", "e", 9, 10, 60, "PRECISION", 5),
        ("RL.THROTTLE", "e", " 9", 10, 60),
        ("RL.THROTTLE", "e", "+9", 10, 60),
        ("RL.THROTTLE", "e", "00000000000000000000009", 10, 60),
        ("RL.THROTTLE", "e", "18446744073709551616", 10, 60),
        ("RL.THROTTLE", "e", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12),
        ("RL.THROTTLE", "e", 1, 2, 3, "a b\tc\x01" + "x" * 40),
        ("RL.SLIDE", "e"),
        ("RL.SLIDE", "e", 10),
        ("RL.SLIDE", "e", 0, 60),
        ("RL.SLIDE", "e", 1000001, 60),
        ("RL.SLIDE", "e", 10, 60, 1, "SOON"),
        ("RL.SLIDE", "e", 10, 3600, "PRECISION", 3601),
        ("RL.SLIDE", "e", 10, 3600000, "MS", "PRECISION", -1),
        ("RL.SLIDE", "e", 10, 3600, "PRECISION"),
        ("RL.SLIDE", "e", 10, 3600, "MS", "PRECISION"),
        ("RL.SLIDE", "e", 10, 3600, "PRECISION", 1, "precision", 2),
        ("RL.SLIDE", "e", 10, 3600, "PRECISION", 5, 3),
        ("RL.SLIDE", "e", 0, 3600, "PRECISION", 5000),
        ("RL.SLICE", "e", 100, 60, 0),
        ("RL.SLICE", "e", 100, 60, 86401),
        ("RL.SLICE", "e", 0, 60, 1),
        ("RL.SLICE", "e", 4294967296, 60, 1),
        ("RL.SLICE", "e", 100, 60),
        ("RL.LEASE", "e", 3, 60),
        ("RL.LEASE", "e", 3, 60, ""),
        ("RL.LEASE", "e", 3, 60, "x" * 129),
        ("RL.LEASE", "e", 0, 60, "a"),
        ("RL.LEASE", "e", 1000001, 60, "a"),
        ("RL.LEASE", "e", 3, 0, "a"),
        ("RL.LEASE", "e", 3, 60, "a", "b"),
        ("RL.LEASE", "e", 0, 60, "", 1),
        ("RL.RELEASE", "e"),
        ("RL.RELEASE", "e", "a", "b"),
        ("RL.RELEASE", "e", "a", "b", "c"),
        ("RL.RELEASE", "e", "a", "AT", "5"),
        ("RL.RELEASE", "e", ""),
        ("RL.RELEASE", "e", "a", "b", "c", "d"),
        ("RL.QUOTA", "e", 5, "FORTNIGHT"),
        ("RL.QUOTA", "e", 0, "DAY"),
        ("RL.QUOTA", "e", 1000000000000001, "DAY"),
        ("RL.QUOTA", "e", 5, "DAY", "TZ", "Moon/Base"),
        ("RL.QUOTA", "e", 5, "DAY", "TZ", "+19:00"),
        ("RL.QUOTA", "e", 5, "DAY", "TZ", "+1:00"),
        ("RL.QUOTA", "e", 5, "DAY", "TZ", "+01:60"),
        ("RL.QUOTA", "e", 5, "DAY", "TZ", "Europe/Berlin\\x\x7f" + "y" * 60),
        ("RL.QUOTA", "e", 5, "DAY", "TZ", "z" * 65),
        ("RL.QUOTA", "e", 5, "DAY", "TZ"),
        ("RL.QUOTA", "e", 5, "DAY", "TZ", "UTC", "TZ", "UTC"),
        ("RL.QUOTA", "e", 0, "DAY", "TZ", "Moon/Base"),
        ("RL.QUOTA", "e", 5, "YEARS", "TZ", "Moon/Base"),
        ("RL.INSPECT",),
        ("RL.INSPECT", "e", "f"),
        ("RL.REFUND", "e", "SLIDE", 10, 60),
        ("RL.REFUND", "e", "SLIDE", 10, 60, "PRECISION"),
        ("RL.REFUND", "e", "SLIDE", 10, 60, "PRECISION", 1),
        ("RL.REFUND", "e", "LEASE", 1, 2, 3),
        ("RL.REFUND", "e", "LEASE", 1, 2),
        ("RL.REFUND", "e", "FOO", 1, 2, 3),
        ("RL.REFUND", "e", "SLIDE", 1, 2, 3, "MS", "MS"),
        ("RL.REFUND", "e", "SLIDE", 1, 2, 3, "QUANTITY", 1),
        ("RL.REFUND", "e", "SLIDE", 1, 2, -3),
        ("RL.REFUND", "e", "SLIDE", 0, 2, 3),
        ("RL.REFUND", "e", "QUOTA", 10, "MONTH", 1, "TZ", "Asia/Shanghai"),
        ("RL.REFUND", "e", "QUOTA", 10, "MONTH", "TZ", "Moon/Base", 1),
        ("RL.REFUND", "e", "THROTTLE", 1, 2, 3, 4, "AT", 5),
        ("RL.REFUND", "e", "SLIDE", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14),
        ("RL.ALLOW", 1, "a", "SLIDE"),
        ("RL.ALLOW", 2, "a", "b", "THROTTLE", 1, 1, 1, "LEAKY", 1, 1),
        ("RL.ALLOW", 2, "a", "b", "THROTTLE", 1, 1, 1),
        ("RL.ALLOW", 2, "a", "a", "SLIDE", 1, 1, "SLIDE", 1, 1),
        ("RL.ALLOW", 17, "a", "SLIDE", 1, 1),
        ("RL.ALLOW", 0, "a", "SLIDE", 1, 1),
        ("RL.ALLOW", "x", "a", "SLIDE", 1, 1),
        ("RL.ALLOW", 5, "a", "b", "c", "d"),
        ("RL.ALLOW", 1, "a", "SLIDE", 1, 1, "QUANTITY", 1, "QUANTITY", 2),
        ("RL.ALLOW", 1, "a", "SLIDE", 1, 1, "QUANTITY"),
        ("RL.ALLOW", 1, "a", "SLIDE", 1, 1, "QUANTITY", -1),
        ("RL.ALLOW", 2, "a", "b", "SLIDE", 1, 1, "QUOTA", 5),
        ("RL.ALLOW", 2, "a", "b", "SLIDE", 1, 1, "QUOTA", 5, "DAY", "TZ", "Moon/Base"),
        ("RL.ALLOW", 2, "a", "b", "SLIDE", 1, 1, "LEASE", 5, 30),
        ("RL.PEEK", 2, "a", "b", "SLIDE", 0, 1, "LEASE", 5, 30),
        ("RL.ALLOW", 1, "a", "SLIDE", 1, 1, "ID", "job-1"),
        ("RL.PEEK", 1, "a", "SLIDE", 1, 1, "ID", "job-1"),
        ("RL.ALLOW", 1, "a", "LEASE", 5, 30, "ID", "job-1", "ID", "job-2"),
        ("RL.ALLOW", 1, "a", "LEASE", 5, 30, "ID", ""),
        ("RL.ALLOW", 1, "a", "LEASE", 5, 30, "ID"),
        ("RL.ALLOW", 2, "a", "b", "SLIDE", 1, 60, "PRECISION", 61, "SLICE", 1, 1, 1),
        ("RL.ALLOW", 2, "a", "b", "SLIDE", 1, 60, "PRECISION"),
        ("RL.ALLOW", 2, "a", "b", "SLIDE", 1, 60, "PRECISION", 1, "PRECISION", 2, "SLICE", 1, 1, 1),
        ("RL.ALLOW", 2, "a", "b", "SLIDE", 1, 60, "SLICE", 1, 0, 1, "MS"),
        ("RL.ALLOW", 2, "a", "b", "SLIDE", 1, 60, "THROTTLE", 10, 1, 315360000),
        ("RL.ALLOW", 2, "a", "b", "SLIDE", 0, 60, "SLICE", 1, 0, 1, "BOGUS"),
        ("RL.ALLOW", 1, "a", "SLIDE", 1, 60, "AT", 5),
        ("RL.ALLOW", 1, "a", "SLIDE", 1, 60, "MS", "MS"),
        ("RL.ALLOW", 1, "a", "QUOTA", 5, "DAY", "TZ", "Moon/Base", "QUANTITY", "x"),
        ("RL.ALLOW", 2, "a", "b", "QUOTA", 5, "DAY", "TZ", "Europe/Berlin", "QUOTA", 1, "WEEK", "TZ", "Moon/Base"),
        ("RL.PEEK", 1, "a"),
        ("RL.PEEK", 1, "a", "SLIDE", 1, 1, "QUANTITY", 1000000000001),
    ):
        s.real(*cmd)

    # WRONGTYPE: a plain value, and a key of the other backend, both ways.
    s = b.seq("wrongtype", faked=False)
    s.real("SET", "str", "hello", raw=True)
    s.real("HSET", "hash", "S", "1", raw=True)
    s.real("RPUSH", "list", "S|x", raw=True)
    s.real("SADD", "set", "x", raw=True)
    for key in ("str", "hash", "list", "set"):
        s.real("RL.THROTTLE", key, 1, 1, 60)
        s.real("RL.SLIDE", key, 10, 60)
        s.real("RL.SLICE", key, 10, 60, 6)
        s.real("RL.LEASE", key, 10, 60, "a")
        s.real("RL.QUOTA", key, 10, "DAY")
        s.real("RL.INSPECT", key)
        s.real("RL.RELEASE", key, "a")
    s.real("RL.REFUND", "str", "SLIDE", 10, 60, 1)
    s.real("RL.REFUND", "str", "QUOTA", 10, "DAY", 1)
    s.real("RL.ALLOW", 2, "x", "str", "SLIDE", 10, 60, "THROTTLE", 1, 1, 60)
    s.real("EXISTS", "x", raw=True)
    s.real("RL.PEEK", 1, "str", "SLIDE", 10, 60)
    # `via: other` writes the key with the other backend than the run's.
    for via in ("other",):
        writes: tuple[tuple[str, tuple[Any, ...]], ...] = (
            ("t", ("RL.THROTTLE", 5, 1, 3600)),
            ("s", ("RL.SLIDE", 10, 3600)),
            ("c", ("RL.SLICE", 10, 3600, 1)),
            ("l", ("RL.LEASE", 10, 3600, "a")),
            ("q", ("RL.QUOTA", 10, "YEAR")),
        )
        for kind, write in writes:
            key = f"{via}:{kind}"
            s.real(write[0], key, *write[1:], via=via, timed=kind in "cq")
            s.real(write[0], key, *write[1:], 0)
            s.real("RL.INSPECT", key)
            s.real("RL.REFUND", key, "SLIDE", 10, 60, 1)
            s.real("RL.RELEASE", key, "a")
            s.real("RL.ALLOW", 1, key, "THROTTLE" if kind != "t" else "SLIDE", 1, 1, 1) if kind != "t" else s.real(
                "RL.ALLOW", 1, key, "SLIDE", 1, 1
            )
            s.real("RL.PEEK", 1, key, "LEASE" if kind != "l" else "SLIDE", 1, 1)

    # Replies that do not depend on the exact instant: on every server.
    s = b.seq("long windows, any server", faked=False)
    for _ in range(4):
        s.real("RL.SLIDE", "s", 3, 3600)
    s.real("RL.SLIDE", "s", 3, 3600, 4)
    s.real("RL.SLIDE", "s", 10, 3600, 0, "PRECISION", 60)
    s.real("RL.REFUND", "s", "SLIDE", 3, 3600, 2)
    s.real("RL.SLIDE", "s", 3, 3600, 0)
    for _ in range(3):
        s.real("RL.THROTTLE", "t", 1, 1, 3600)
    s.real("RL.THROTTLE", "t", 1, 1, 3600, 0)
    s.real("RL.THROTTLE", "t", 1, 1, 3600, 5)
    s.real("RL.REFUND", "t", "THROTTLE", 1, 1, 3600, 1)
    s.real("RL.LEASE", "l", 2, 3600, "a")
    s.real("RL.LEASE", "l", 2, 3600, "b")
    s.real("RL.LEASE", "l", 2, 3600, "c")
    s.real("RL.LEASE", "l", 2, 3600, "a", 2)
    s.real("RL.RELEASE", "l", "a")
    s.real("RL.LEASE", "l", 2, 3600, "a", 2)
    s.real("RL.RELEASE", "l", "b")
    s.real("RL.RELEASE", "l", "b")
    s.real("EXISTS", "l", raw=True)
    s.real("RL.ALLOW", 2, "{x}a", "{x}b", "SLIDE", 2, 3600, "LEASE", 1, 3600, "ID", "j")
    s.real("RL.ALLOW", 2, "{x}a", "{x}b", "SLIDE", 2, 3600, "LEASE", 1, 3600, "ID", "k")
    s.real("RL.ALLOW", 2, "{x}a", "{x}b", "SLIDE", 2, 3600, "LEASE", 1, 3600, "ID", "j")
    s.real("RL.PEEK", 2, "{x}a", "{x}b", "SLIDE", 2, 3600, "LEASE", 1, 3600, timed=True)
    s.real("RL.SLICE", "c", 5, 3600, 1, 0)
    s.real("RL.QUOTA", "q", 5, "YEAR", 0)
    s.real("RL.INSPECT", "nothing")
    charge_cases(b)
    block_cases(b)
    wait_cases(b)
    return b.seqs


def wait_cases(b: Builder) -> None:
    """MAXWAIT grants and refusals (single and several limits), SHADOW
    (element 7, recording, the binding limit), UNITS, their errors, and
    RL.TOP."""
    s = b.seq("maxwait: turns within rate and burst, refusals past the wait")
    for i in range(6):
        s(0, "RL.THROTTLE", "w", 2, 1, 10, 1, "MAXWAIT", 25)
    s(0, "RL.INSPECT", "w")
    s(0, "RL.THROTTLE", "w", 2, 1, 10, 1, "MAXWAIT", 40)
    s(0, "RL.THROTTLE", "w", 2, 1, 10, 0, "MAXWAIT", 40)
    s(0, "RL.THROTTLE", "w", 2, 1, 10, 0, "MAXWAIT", 0)
    s(0, "RL.THROTTLE", "w", 2, 1, 10, 4, "MAXWAIT", 1000)
    s(0.5, "RL.THROTTLE", "w", 2, 1, 10, 1, "MS", "MAXWAIT", 39500)
    s(0.5, "RL.THROTTLE", "w", 2, 1, 10, 1, "MS", "MAXWAIT", 39499)
    s(0.5, "RL.THROTTLE", "w", 2, 1, 10, "MAXWAIT", 0)
    s(1, "RL.THROTTLE", "fresh", 2, 1, 10, "MAXWAIT", 5)
    s(1, "RL.THROTTLE", "fresh", 2, 1, 10, 3, "maxwait", 5)
    s(1, "RL.THROTTLE", "fresh", 2, 1, 10, 1, "MAXWAIT", 10)
    s(1, "RL.THROTTLE", "fresh", 2, 1, 10, 2, "MAXWAIT", 20)
    s(1, "PTTL", "fresh", raw=True)
    # A third of a second per unit: waits rounded up, fractions kept.
    for i in range(5):
        s(2 + i * 0.01, "RL.THROTTLE", "f", 1, 3, 1, 1, "MS", "MAXWAIT", 1000)
    s(2.05, "RL.INSPECT", "f")
    # Blocked keys refuse whatever MAXWAIT says; a refusal past the wait
    # starts the block.
    s(3, "RL.THROTTLE", "b", 0, 1, 10, "MAXWAIT", 5, "BLOCK", 100)
    s(3, "RL.THROTTLE", "b", 0, 1, 10, "MAXWAIT", 5, "BLOCK", 100)
    s(3, "RL.THROTTLE", "b", 0, 1, 10, "BLOCK", 100, "MAXWAIT", 100)
    s(3, "RL.THROTTLE", "b", 0, 1, 10, "MAXWAIT", 1000)
    s(3, "RL.THROTTLE", "b", 0, 1, 10, 0, "MAXWAIT", 1000)
    s(3, "RL.INSPECT", "b")
    # A debt: the wait counts it.
    s(4, "RL.CHARGE", "d", "THROTTLE", 1, 1, 10, 5)
    s(4, "RL.THROTTLE", "d", 1, 1, 10, "MAXWAIT", 39)
    s(4, "RL.THROTTLE", "d", 1, 1, 10, "MAXWAIT", 40)
    s(4, "RL.THROTTLE", "d", 1, 1, 10, "MAXWAIT", 50)

    s = b.seq("maxwait: several limits wait for the latest turn")
    k2 = ("{w}a", "{w}b")
    sp = ("THROTTLE", 1, 1, 10, "THROTTLE", 4, 1, 2)
    for i in range(7):
        s(0, "RL.ALLOW", 2, *k2, *sp, "MAXWAIT", 30)
    s(0, "RL.INSPECT", "{w}a")
    s(0, "RL.INSPECT", "{w}b")
    s(0, "RL.PEEK", 2, *k2, *sp, "MAXWAIT", 60)
    s(0, "RL.PEEK", 2, *k2, *sp, "MAXWAIT", 60, "QUANTITY", 0)
    s(0, "RL.ALLOW", 2, *k2, *sp, "MAXWAIT", 5)
    s(0, "RL.ALLOW", 2, *k2, *sp, "QUANTITY", 2, "MAXWAIT", 100)
    s(0, "RL.ALLOW", 2, *k2, *sp, "QUANTITY", 3, "MAXWAIT", 100)
    s(0, "RL.ALLOW", 2, *k2, *sp, "MAXWAIT", 45000, "MS")
    s(0, "RL.ALLOW", 2, *k2, *sp, "MS", "MAXWAIT", 70000)
    s(1, "RL.ALLOW", 2, "{w}c", "{w}d", "THROTTLE", 0, 1, 10, "THROTTLE", 0, 1, 5, "MAXWAIT", 20)
    s(1, "RL.ALLOW", 2, "{w}c", "{w}d", "THROTTLE", 0, 1, 10, "THROTTLE", 0, 1, 5, "MAXWAIT", 20)
    s(1, "RL.INSPECT", "{w}d")
    s(1, "RL.ALLOW", 2, "{w}c", "{w}d", "THROTTLE", 0, 1, 10, "THROTTLE", 0, 1, 5, "MAXWAIT", 0)
    # Blocked: the call refuses; the other limit records nothing.
    s(2, "RL.ALLOW", 2, "{w}e", "{w}f", "THROTTLE", 0, 1, 10, "BLOCK", 50, "THROTTLE", 5, 1, 1, "MAXWAIT", 3)
    s(2, "RL.ALLOW", 2, "{w}e", "{w}f", "THROTTLE", 0, 1, 10, "BLOCK", 50, "THROTTLE", 5, 1, 1, "MAXWAIT", 3)
    s(2, "RL.ALLOW", 2, "{w}e", "{w}f", "THROTTLE", 0, 1, 10, "BLOCK", 50, "THROTTLE", 5, 1, 1, "MAXWAIT", 100)
    s(2, "RL.INSPECT", "{w}f")

    s = b.seq("shadow: element 7, recording, the binding limit; units")
    k3 = ("{s}a", "{s}b", "{s}c")
    sh = ("THROTTLE", 4, 1, 10, "SLIDE", 2, 10, "SHADOW", "QUOTA", 3, "HOUR", "shadow")
    for i in range(5):
        s(i * 0.1, "RL.ALLOW", 3, *k3, *sh)
    s(1, "RL.INSPECT", "{s}b")
    s(1, "RL.INSPECT", "{s}c")
    s(1, "RL.PEEK", 3, *k3, *sh)
    s(1, "RL.ALLOW", 3, *k3, *sh, "QUANTITY", 0)
    s(1, "RL.ALLOW", 3, *k3, *sh, "QUANTITY", 7)
    s(1, "RL.ALLOW", 3, *k3, "THROTTLE", 4, 1, 10, "SHADOW", "SLIDE", 2, 10, "QUOTA", 3, "HOUR", "SHADOW")
    s(1, "RL.ALLOW", 2, "{s}a", "{s}d", "THROTTLE", 4, 1, 10, "SHADOW", "THROTTLE", 1, 1, 10, "MAXWAIT", 15)
    s(1, "RL.ALLOW", 2, "{s}a", "{s}d", "THROTTLE", 4, 1, 10, "SHADOW", "THROTTLE", 1, 1, 10, "MAXWAIT", 15)
    s(1, "RL.ALLOW", 2, "{s}a", "{s}d", "THROTTLE", 4, 1, 10, "SHADOW", "THROTTLE", 1, 1, 10, "MAXWAIT", 15)
    s(1, "RL.INSPECT", "{s}a")
    s(2, "RL.ALLOW", 2, "{s}e", "{s}f", "LEASE", 2, 60, "SHADOW", "SLICE", 5, 10, 2, "ID", "x")
    s(2, "RL.ALLOW", 2, "{s}e", "{s}f", "LEASE", 1, 60, "SHADOW", "SLICE", 5, 10, 2, "ID", "y")
    s(2, "RL.INSPECT", "{s}e")
    # UNITS: each limit's own quantity.
    u = ("{u}l", "{u}r", "{u}t")
    llm = ("LEASE", 4, 120, "THROTTLE", 60, 60, 60, "THROTTLE", 100000, 100000, 60, "UNITS", 1500)
    for i in range(3):
        s(3, "RL.ALLOW", 3, *u, *llm, "ID", f"req-{i}")
    s(3, "RL.INSPECT", "{u}t")
    lower = ("LEASE", 4, 120, "THROTTLE", 60, 60, 60, "THROTTLE", 4000, 4000, 60, "UNITS")
    s(3, "RL.ALLOW", 3, *u, *lower, 9000, "ID", "r")
    s(3, "RL.ALLOW", 3, *u, *lower, 600, "ID", "r")
    rt = ("{u}r", "{u}t", "THROTTLE", 60, 60, 60, "UNITS", 0, "THROTTLE", 100000, 100000, 60)
    s(3, "RL.ALLOW", 2, *rt, "UNITS", 0)
    s(3, "RL.ALLOW", 2, *rt, "QUANTITY", 0)
    s(3, "RL.ALLOW", 2, *rt, "UNITS", 7, "QUANTITY", 0)
    s(3, "RL.ALLOW", 2, "{u}x", "{u}y", "SLIDE", 5, 10, "UNITS", 3, "SHADOW", "QUOTA", 9, "DAY", "UNITS", 9)
    s(3, "RL.ALLOW", 2, "{u}x", "{u}y", "SLIDE", 5, 10, "UNITS", 3, "SHADOW", "QUOTA", 9, "DAY", "UNITS", 1)
    s(3, "RL.ALLOW", 2, "{u}x", "{u}y", "SLIDE", 5, 10, "SHADOW", "UNITS", 1, "QUOTA", 9, "DAY", "UNITS", 10)
    s(3, "RL.PEEK", 2, "{u}x", "{u}y", "SLIDE", 5, 10, "UNITS", 2, "QUOTA", 9, "DAY", "UNITS", 0, "MS")
    s(3, "RL.INSPECT", "{u}x")
    gh = ("{u}g", "{u}h", "THROTTLE", 0, 1, 10, "UNITS", 1, "THROTTLE", 9, 1, 1, "UNITS", 5)
    s(3, "RL.ALLOW", 2, *gh, "MAXWAIT", 20, "QUANTITY", 2)
    s(3, "RL.ALLOW", 2, *gh, "MAXWAIT", 20, "QUANTITY", 2)

    s = b.seq("maxwait, shadow, units, top: errors", faked=False)
    for cmd in (
        ("RL.THROTTLE", "k", 1, 1, 1, "MAXWAIT"),
        ("RL.THROTTLE", "k", 1, 1, 1, "MAXWAIT", -1),
        ("RL.THROTTLE", "k", 1, 1, 1, "MAXWAIT", 315360001),
        ("RL.THROTTLE", "k", 1, 1, 1, "MAXWAIT", 315360000001, "MS"),
        ("RL.THROTTLE", "k", 1, 1, 1, "MAXWAIT", 1, "MAXWAIT", 1),
        ("RL.THROTTLE", "k", 1, 1, 0, "MAXWAIT", "x"),
        ("RL.THROTTLE", "k", 1, 1, 1, "MAXWAIT", "x", "y"),
        ("RL.THROTTLE", "k", 1, 1, 1, "UNITS", 1),
        ("RL.THROTTLE", "k", 1, 1, 1, "SHADOW"),
        ("RL.SLIDE", "k", 1, 1, "MAXWAIT", 1),
        ("RL.SLICE", "k", 1, 1, 1, 1, "MAXWAIT", 1),
        ("RL.QUOTA", "k", 1, "DAY", "MAXWAIT", 1),
        ("RL.LEASE", "k", 1, 1, "a", "MAXWAIT", 1),
        ("RL.SLIDE", "k", 0, 1, "MAXWAIT", 1),
        ("RL.ALLOW", 2, "k", "j", "THROTTLE", 1, 1, 1, "SLIDE", 1, 1, "MAXWAIT", 1),
        ("RL.PEEK", 2, "k", "j", "THROTTLE", 1, 1, 1, "LEASE", 1, 1, "MAXWAIT", 1),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "MAXWAIT", 1, "MAXWAIT", 2),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "MAXWAIT"),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "MAXWAIT", "x", "QUANTITY", "y"),
        ("RL.ALLOW", 1, "k", "THROTTLE", 0, 1, 1, "MAXWAIT", "x"),
        ("RL.ALLOW", 1, "k", "SLIDE", 0, 1, "MAXWAIT", 1),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "SHADOW"),
        ("RL.ALLOW", 2, "k", "j", "THROTTLE", 1, 1, 1, "SHADOW", "SLIDE", 1, 1, "shadow"),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "SHADOW", "SHADOW"),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "SHADOW", "BLOCK", 1),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "BLOCK", 1, "SHADOW"),
        ("RL.ALLOW", 2, "k", "j", "SLIDE", 1, 1, "THROTTLE", 1, 1, 1, "BLOCK", 1, "SHADOW"),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "UNITS"),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "UNITS", -1),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "UNITS", 1000000000001),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "UNITS", 1, "UNITS", 1),
        ("RL.ALLOW", 2, "k", "j", "SLIDE", 1, 1, "SLIDE", 1, 1, "PRECISION", 1, "UNITS", "x"),
        ("RL.ALLOW", 1, "k", "THROTTLE", 0, 1, 1, "UNITS", "x"),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "UNITS", 2, "QUANTITY", "x"),
        ("RL.ALLOW", 1, "k", "LEASE", 1, 1, "UNITS", 1, "SHADOW"),
        ("RL.ALLOW", 2, "k", "j", "LEASE", 1, 1, "SHADOW", "THROTTLE", 1, 1, 1, "ID", "a", "MAXWAIT", 1),
        ("RL.REFUND", "k", "THROTTLE", 1, 1, 1, "UNITS", 1, 1),
        ("RL.REFUND", "k", "THROTTLE", 1, 1, 1, "SHADOW", 1),
        ("RL.REFUND", "k", "THROTTLE", 1, 1, 1, 1, "SHADOW"),
        ("RL.CHARGE", "k", "SLIDE", 1, 1, "shadow", 1),
        ("RL.CHARGE", "k", "SLIDE", 1, 1, "UNITS", 1, 1),
        ("RL.CHARGE", "k", "LEASE", 1, 1, "UNITS", 1, 1),
    ):
        s.real(*cmd)


def block_cases(b: Builder) -> None:
    """BLOCK: a refusal starts a block, which holds (not extended), then
    ends and the limiter goes on; peeks, never-fits, RL.ALLOW and RL.PEEK,
    refunds and charges keep it, RL.INSPECT shows it, errors."""
    s = b.seq("block: throttle and slide, starting, holding, ending")
    s(0, "RL.THROTTLE", "t", 0, 1, 60, "BLOCK", 600)
    s(10, "RL.THROTTLE", "t", 0, 1, 60, "BLOCK", 600)
    s(10, "PTTL", "t", raw=True)
    s(10, "RL.INSPECT", "t")
    s(20, "RL.THROTTLE", "t", 0, 1, 60)
    s(20, "RL.THROTTLE", "t", 0, 1, 60, "BLOCK", 900)
    s(20, "RL.THROTTLE", "t", 0, 1, 60, 0)
    s(20, "RL.THROTTLE", "t", 0, 1, 60, 5)
    s(20, "RL.THROTTLE", "t", 0, 1, 60, 1, "MS")
    s(30, "RL.REFUND", "t", "THROTTLE", 0, 1, 60, 1)
    s(30, "RL.CHARGE", "t", "THROTTLE", 0, 1, 60, 2)
    s(30, "RL.INSPECT", "t")
    s(609.999999, "RL.THROTTLE", "t", 0, 1, 60)
    s(610, "RL.INSPECT", "t")
    s(610, "RL.THROTTLE", "t", 0, 1, 60, 0)
    s(610, "RL.THROTTLE", "t", 0, 1, 60)
    s(610, "PTTL", "t", raw=True)
    s(650, "RL.THROTTLE", "t", 0, 1, 60)
    # A debt longer than the block: retry is the limiter's own.
    s(700, "RL.CHARGE", "d", "THROTTLE", 0, 1, 60, 10)
    s(700, "RL.THROTTLE", "d", 0, 1, 60, "BLOCK", 5)
    s(700, "RL.INSPECT", "d")
    s(706, "RL.THROTTLE", "d", 0, 1, 60, 1, "BLOCK", 5000, "MS")
    s(706, "RL.THROTTLE", "d", 0, 1, 60, 1, "MS", "BLOCK", 5000)
    # Never fits: no block, no key.
    s(710, "RL.THROTTLE", "n", 1, 1, 60, 3, "BLOCK", 600)
    s(710, "EXISTS", "n", raw=True)
    s(711, "RL.SLIDE", "s", 2, 10, "block", 100)
    s(711, "RL.SLIDE", "s", 2, 10, 2, "BLOCK", 100)
    s(711.5, "RL.SLIDE", "s", 2, 10, "BLOCK", 100, "PRECISION", 1)
    s(711.5, "RL.INSPECT", "s")
    s(712, "RL.SLIDE", "s", 2, 10, 3, "BLOCK", 100)
    s(712, "RL.SLIDE", "s", 2, 10, 0)
    s(712, "RL.SLIDE", "s", 5, 10)
    s(720, "RL.REFUND", "s", "SLIDE", 2, 10, 2)
    s(720, "RL.INSPECT", "s")
    s(720, "PTTL", "s", raw=True)
    s(811.5, "RL.SLIDE", "s", 2, 10, 0)
    s(811.5, "RL.SLIDE", "s", 2, 10)
    s(811.5, "RL.INSPECT", "s")

    s = b.seq("block: slice and quota, and RL.ALLOW / RL.PEEK")
    s(0, "RL.SLICE", "c", 2, 10, 2, 2, "BLOCK", 30)
    s(1, "RL.SLICE", "c", 2, 10, 2, "BLOCK", 30)
    s(1, "RL.INSPECT", "c")
    s(1, "PTTL", "c", raw=True)
    s(20, "RL.SLICE", "c", 2, 10, 2)
    s(20, "RL.CHARGE", "c", "SLICE", 2, 10, 2, 1)
    s(31, "RL.SLICE", "c", 2, 10, 2, "BLOCK", 30)
    s(31, "RL.SLICE", "c", 2, 10, 2, "BLOCK", 30)
    s(31, "RL.SLICE", "c", 2, 10, 2, "BLOCK", 30)
    s(0, "RL.QUOTA", "q", 1, "HOUR", "BLOCK", 7200)
    s(1, "RL.QUOTA", "q", 1, "HOUR", "BLOCK", 7200)
    s(1, "RL.INSPECT", "q")
    s(1, "PTTL", "q", raw=True)
    s(1800, "RL.QUOTA", "q", 1, "HOUR")
    s(7201, "RL.QUOTA", "q", 1, "HOUR")
    s(7201, "RL.QUOTA", "q", 1, "HOUR", 0, "TZ", "UTC", "BLOCK", 5)
    s(7202, "RL.QUOTA", "z", 1, "DAY", "BLOCK", 60, "TZ", "Europe/Berlin")
    s(7202, "RL.QUOTA", "z", 1, "DAY", "TZ", "Europe/Berlin", "BLOCK", 60)
    s(7202, "RL.INSPECT", "z")
    # RL.ALLOW: the refusing limit with BLOCK blocks its own key; the
    # others record nothing and are not blocked.
    a = ("{u}a", "{u}b", "{u}c")
    specs = ("THROTTLE", 0, 1, 60, "BLOCK", 100, "SLIDE", 5, 60, "BLOCK", 100, "SLICE", 1, 60, 1)
    s(8000, "RL.ALLOW", 3, *a, *specs)
    s(8001, "RL.PEEK", 3, *a, *specs)
    s(8001, "RL.ALLOW", 3, *a, *specs)
    s(8001, "RL.INSPECT", "{u}a")
    s(8001, "RL.INSPECT", "{u}b")
    s(8001, "RL.INSPECT", "{u}c")
    s(8002, "RL.ALLOW", 3, *a, *specs, "QUANTITY", 0)
    s(8061, "RL.ALLOW", 3, *a, "THROTTLE", 0, 1, 60, "SLIDE", 5, 60, "SLICE", 3, 60, 1)
    s(8101, "RL.ALLOW", 3, *a, "THROTTLE", 0, 1, 60, "SLIDE", 5, 60, "SLICE", 3, 60, 1)
    ad = ("{u}a", "{u}d", "THROTTLE", 0, 1, 60, "BLOCK", 10, "QUOTA", 5, "DAY", "BLOCK")
    s(8101, "RL.ALLOW", 2, *ad, 10)
    s(8101, "RL.ALLOW", 2, *ad, 10, "QUANTITY", 6)
    s(8101, "RL.ALLOW", 2, *ad, 10000, "MS")
    s(8101, "RL.INSPECT", "{u}a")
    s(8101, "RL.PEEK", 2, "{u}a", "{u}d", "THROTTLE", 0, 1, 60, "QUOTA", 5, "DAY")
    s(8112, "RL.ALLOW", 2, "{u}a", "{u}d", "THROTTLE", 0, 1, 60, "QUOTA", 5, "DAY")
    s(8112, "RL.ALLOW", 2, "{u}a", "{u}e", "THROTTLE", 0, 1, 60, "LEASE", 2, 60, "ID", "x")

    s = b.seq("block: errors", faked=False)
    for cmd in (
        ("RL.THROTTLE", "k", 1, 1, 1, "BLOCK"),
        ("RL.THROTTLE", "k", 1, 1, 1, "BLOCK", 0),
        ("RL.THROTTLE", "k", 1, 1, 1, "BLOCK", 315360001),
        ("RL.THROTTLE", "k", 1, 1, 1, "BLOCK", 315360000001, "MS"),
        ("RL.THROTTLE", "k", 1, 1, 1, "BLOCK", "x"),
        ("RL.THROTTLE", "k", 1, 1, 1, "BLOCK", 1, "BLOCK", 1),
        ("RL.THROTTLE", "k", 1, 1, 1, 1, "MS", "BLOCK", 1, "x"),
        ("RL.THROTTLE", "k", 1, 1, 1, "BLOCK", 1, 1),
        ("RL.SLIDE", "k", 1, 1, "BLOCK", 1, "PRECISION", 2),
        ("RL.SLIDE", "k", 0, 1, "BLOCK", 0),
        ("RL.SLICE", "k", 1, 1, 1, "BLOCK", -1),
        ("RL.QUOTA", "k", 1, "DAY", "BLOCK", 1, "TZ", "Nowhere/City"),
        ("RL.LEASE", "k", 1, 1, "a", "BLOCK", 1),
        ("RL.LEASE", "k", 1, 1, "a", 1, "BLOCK", 1),
        ("RL.ALLOW", 1, "k", "LEASE", 1, 1, "BLOCK", 1, "ID", "a"),
        ("RL.ALLOW", 2, "k", "j", "SLIDE", 1, 1, "LEASE", 1, 1, "BLOCK", 1),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "BLOCK", 0),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "BLOCK"),
        ("RL.ALLOW", 2, "k", "j", "SLIDE", 1, 1, "SLICE", 1, 1, 1, "BLOCK", 1, "BLOCK", 2),
        ("RL.PEEK", 1, "k", "QUOTA", 1, "DAY", "BLOCK", 1, "TZ", "UTC", "BLOCK", 1),
        ("RL.ALLOW", 1, "k", "THROTTLE", 1, 1, 1, "QUANTITY", 1, "BLOCK", 1),
        ("RL.REFUND", "k", "THROTTLE", 1, 1, 1, "BLOCK", 1, 1),
        ("RL.REFUND", "k", "THROTTLE", 1, 1, 1, 1, "BLOCK", 1),
        ("RL.CHARGE", "k", "SLIDE", 1, 1, "BLOCK", 1, 1),
        ("RL.THROTTLE", "k"),
        ("RL.SLIDE", "k", 1),
        ("RL.ALLOW", 1, "k", "SLIDE", 1),
        ("RL.REFUND", "k", "SLIDE", 1, 1),
    ):
        s.real(*cmd)


def charge_cases(b: Builder) -> None:
    """RL.CHARGE: within the limit, debts past it and the requests after,
    each kind's bound and maximum, errors."""
    s = b.seq("charge: throttle debts, paid back exactly")
    s(0, "RL.THROTTLE", "t", 4, 1, 10)
    s(0, "RL.CHARGE", "t", "THROTTLE", 4, 1, 10, 3)
    s(1, "RL.CHARGE", "t", "THROTTLE", 4, 1, 10, 20)
    s(1, "RL.THROTTLE", "t", 4, 1, 10)
    s(1, "RL.THROTTLE", "t", 4, 1, 10, 0)
    s(1, "RL.THROTTLE", "t", 4, 1, 10, 6)
    s(1, "PTTL", "t", raw=True)
    s(1, "RL.INSPECT", "t")
    s(200, "RL.THROTTLE", "t", 4, 1, 10, 1, "MS")
    s(200.000001, "RL.THROTTLE", "t", 4, 1, 10)
    s(201, "RL.THROTTLE", "t", 4, 1, 10)
    s(201, "RL.THROTTLE", "t", 4, 1, 10)
    s(201, "RL.REFUND", "t", "THROTTLE", 4, 1, 10, 1)
    s(202, "RL.CHARGE", "ms", "THROTTLE", 4, 1, 10000, 5, "MS")
    s(202, "RL.CHARGE", "ms", "THROTTLE", 4, 1, 10000, 1, "ms")
    s(202.5, "RL.THROTTLE", "ms", 4, 1, 10000, 1, "MS")
    # A third of a second per unit: fractions of a nanosecond.
    s(203, "RL.CHARGE", "f", "THROTTLE", 2, 3, 1, 7)
    s(203.1, "RL.THROTTLE", "f", 2, 3, 1)
    s(205.4, "RL.THROTTLE", "f", 2, 3, 1)
    s(205.4, "RL.CHARGE", "f", "THROTTLE", 2, 7, 1, 1)
    s(205.4, "RL.INSPECT", "f")
    # Ten years ahead at most: 31,536,000 units of 10 s.
    s(206, "RL.CHARGE", "y", "THROTTLE", 0, 1, 10, 31536001)
    s(206, "EXISTS", "y", raw=True)
    s(206, "RL.CHARGE", "y", "THROTTLE", 0, 1, 10, 31536000)
    s(206, "RL.CHARGE", "y", "THROTTLE", 0, 1, 10, 1)
    s(216, "RL.CHARGE", "y", "THROTTLE", 0, 1, 10, 1)
    s(216, "PTTL", "y", raw=True)
    s(216, "RL.THROTTLE", "y", 0, 1, 10)
    s(217, "RL.CHARGE", "big", "THROTTLE", 0, 1, 315360000, 1)
    s(217, "RL.CHARGE", "big", "THROTTLE", 0, 1, 315360000, 1)
    s(217, "RL.CHARGE", "big", "THROTTLE", 0, 1, 315360000000, 1, "MS")

    s = b.seq("charge: slide debts, the bound of entries, PRECISION")
    s(0, "RL.SLIDE", "s", 3, 10)
    s(1, "RL.CHARGE", "s", "SLIDE", 3, 10, 5)
    s(2, "RL.SLIDE", "s", 3, 10)
    s(2, "RL.SLIDE", "s", 3, 10, 0)
    s(2, "RL.INSPECT", "s")
    s(10.5, "RL.SLIDE", "s", 3, 10)
    s(11, "RL.SLIDE", "s", 3, 10)
    s(11, "RL.SLIDE", "s", 3, 10)
    s(11, "PTTL", "s", raw=True)
    for i in range(5):
        s(20 + i, "RL.CHARGE", "b", "SLIDE", 2, 10, 1)
    s(24.5, "RL.INSPECT", "b")
    s(24.5, "RL.SLIDE", "b", 2, 10, 0)
    s(30.5, "RL.SLIDE", "b", 2, 10, 0)
    s(34, "RL.SLIDE", "b", 2, 10)
    s(34, "RL.SLIDE", "b", 5, 10)
    for i in range(6):
        s(40 + i * 0.7, "RL.CHARGE", "p", "SLIDE", 5, 10, "PRECISION", 2, 2)
    s(45, "RL.INSPECT", "p")
    s(45, "RL.SLIDE", "p", 5, 10, 0, "PRECISION", 2)
    s(50.1, "RL.SLIDE", "p", 5, 10, 0)
    s(60, "RL.SLIDE", "p", 5, 10, 0)
    # Two units of one instant, then a charge there: one counted entry.
    s(61, "RL.SLIDE", "c", 100, 10)
    s(61, "RL.SLIDE", "c", 100, 10)
    s(61, "RL.CHARGE", "c", "SLIDE", 100, 10, 1)
    s(61, "RL.CHARGE", "c", "SLIDE", 100, 10, 2)
    s(61.5, "RL.CHARGE", "c", "SLIDE", 100, 10, 2)
    s(62, "RL.INSPECT", "c")
    s(62, "RL.REFUND", "c", "SLIDE", 100, 10, 3)
    s(62, "RL.INSPECT", "c")
    s(63, "RL.CHARGE", "one", "SLIDE", 1, 10, 1)
    s(63.5, "RL.CHARGE", "one", "SLIDE", 1, 10, 4)
    s(64, "RL.INSPECT", "one")
    s(73.5, "RL.SLIDE", "one", 1, 10)
    s(74, "RL.SLIDE", "one", 1, 10)
    # 2^32 - 1 units at most.
    s(80, "RL.CHARGE", "m", "SLIDE", 5, 10, 4294967296)
    s(80, "EXISTS", "m", raw=True)
    s(80, "RL.CHARGE", "m", "SLIDE", 5, 10, 4294967294)
    s(80, "RL.CHARGE", "m", "SLIDE", 5, 10, 2)
    s(80, "RL.CHARGE", "m", "SLIDE", 5, 10, 1)
    s(80, "RL.INSPECT", "m")
    s(90.5, "RL.CHARGE", "m", "SLIDE", 5, 10, 7, "MS")

    s = b.seq("charge: slice and quota debts, until the window or period ends")
    s(0, "RL.SLICE", "c", 5, 10, 2)
    s(1, "RL.CHARGE", "c", "SLICE", 5, 10, 2, 8)
    s(2, "RL.SLICE", "c", 5, 10, 2)
    s(2, "RL.SLICE", "c", 5, 10, 2, 0)
    s(2, "RL.INSPECT", "c")
    s(10, "RL.SLICE", "c", 5, 10, 2)
    s(15, "RL.SLICE", "c", 5, 10, 2)
    s(15, "RL.CHARGE", "c", "SLICE", 5, 20, 4, 1)
    s(15, "RL.INSPECT", "c")
    s(16, "RL.CHARGE", "m", "SLICE", 5, 10, 2, 4294967295)
    s(16, "RL.CHARGE", "m", "SLICE", 5, 10, 2, 1)
    s(16, "RL.CHARGE", "m2", "SLICE", 5, 10, 2, 4294967296)
    s(16, "EXISTS", "m2", raw=True)
    s(0, "RL.QUOTA", "q", 5, "HOUR")
    s(1, "RL.CHARGE", "q", "QUOTA", 5, "HOUR", 10)
    s(2, "RL.QUOTA", "q", 5, "HOUR")
    s(2, "RL.QUOTA", "q", 5, "HOUR", 0)
    s(2, "RL.INSPECT", "q")
    s(2, "PTTL", "q", raw=True)
    s(3, "RL.REFUND", "q", "QUOTA", 5, "HOUR", 8)
    s(3, "RL.QUOTA", "q", 5, "HOUR")
    s(1800, "RL.QUOTA", "q", 5, "HOUR")
    s(1800, "RL.CHARGE", "q", "QUOTA", 5, "DAY", 3)
    s(1800, "RL.INSPECT", "q")
    s(1801, "RL.CHARGE", "z", "QUOTA", 5, "DAY", "TZ", "Europe/Berlin", 3)
    s(1801, "RL.CHARGE", "z", "QUOTA", 5, "DAY", "TZ", "Europe/Berlin", 3)
    s(1801, "RL.INSPECT", "z")
    s(1801, "RL.CHARGE", "u", "QUOTA", 1000000000000000, "YEAR", 1000000000000)
    for _ in range(3):
        s(1801, "RL.CHARGE", "u", "QUOTA", 5, "YEAR", 1000000000000)
    s(1801, "RL.REFUND", "u", "QUOTA", 5, "YEAR", 999999999999)
    s(1801, "RL.INSPECT", "u")
    # RL.ALLOW over charged keys: the debt binds.
    s(1802, "RL.CHARGE", "{a}x", "THROTTLE", 4, 1, 10, 9)
    s(1802, "RL.CHARGE", "{a}y", "SLIDE", 3, 10, 4)
    s(1803, "RL.ALLOW", 2, "{a}x", "{a}y", "THROTTLE", 4, 1, 10, "SLIDE", 3, 10)
    s(1803, "RL.PEEK", 2, "{a}x", "{a}y", "THROTTLE", 4, 1, 10, "SLIDE", 3, 10, "QUANTITY", 0)
    s(1813, "RL.ALLOW", 2, "{a}x", "{a}y", "THROTTLE", 4, 1, 10, "SLIDE", 3, 10)
    s(1850, "RL.ALLOW", 2, "{a}x", "{a}y", "THROTTLE", 4, 1, 10, "SLIDE", 3, 10)

    s = b.seq("charge: errors and wrongtype", faked=False)
    for cmd in (
        ("RL.CHARGE",),
        ("RL.CHARGE", "k"),
        ("RL.CHARGE", "k", "THROTTLE", 1, 1),
        ("RL.CHARGE", "k", "THROTTLE", 1, 1, 1),
        ("RL.CHARGE", "k", "THROTTLE", 1, 1, 1, 0),
        ("RL.CHARGE", "k", "THROTTLE", 1, 1, 1, "x"),
        ("RL.CHARGE", "k", "THROTTLE", 1, 1, 1, -1),
        ("RL.CHARGE", "k", "THROTTLE", 1, 1, 1, 1000000000001),
        ("RL.CHARGE", "k", "LEASE", 1, 1, 1),
        ("RL.CHARGE", "k", "lease", 1, 1, "a", 1),
        ("RL.CHARGE", "k", "FOO", 1, 1, 1),
        ("RL.CHARGE", "k", "SLIDE", 1, 1, 1, "MS", "MS"),
        ("RL.CHARGE", "k", "SLIDE", 1, 1, 1, "AT", 5),
        ("RL.CHARGE", "k", "SLIDE", 1, 1, 1, "SHADOW"),
        ("RL.CHARGE", "k", "SLIDE", 1, 1, 1, "BLOCK", 5),
        ("RL.CHARGE", "k", "SLIDE", 1, 1, 1, "UNITS", 5),
        ("RL.CHARGE", "k", "SLIDE", 1, 1, 1, 1),
        ("RL.CHARGE", "k", "SLIDE", 0, 1, 1),
        ("RL.CHARGE", "k", "SLIDE", 1, 0, 1),
        ("RL.CHARGE", "k", "SLIDE", 1, 1, "PRECISION", 2, 1),
        ("RL.CHARGE", "k", "SLIDE", 1, 1, "PRECISION", 1, "PRECISION", 1, 1),
        ("RL.CHARGE", "k", "SLICE", 1, 1, 0, 1),
        ("RL.CHARGE", "k", "QUOTA", 1, "DECADE", 1),
        ("RL.CHARGE", "k", "QUOTA", 1, "DAY", "TZ", "Nowhere/City", 1),
        ("RL.CHARGE", "k", "THROTTLE", 1, 1, 1, 1, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"),
        ("RL.CHARGE", "k", "THROTTLE", 1, 1, 1, 1, "MS", "x"),
        ("RL.CHARGE", "k", "THROTTLE", 0, 1, 315360000, 2),
    ):
        s.real(*cmd)
    s.real("EXISTS", "k", raw=True)
    s.real("SET", "str", "hello", raw=True)
    s.real("RL.CHARGE", "str", "THROTTLE", 1, 1, 60, 1)
    s.real("RL.CHARGE", "str", "QUOTA", 1, "DAY", 1)
    s.real("RL.CHARGE", "str", "THROTTLE", 1, 1, 60, 0)
    for kind, spec in (("t", ("THROTTLE", 5, 1, 3600)), ("s", ("SLIDE", 10, 3600)), ("q", ("QUOTA", 10, "YEAR"))):
        s.real("RL.CHARGE", f"o:{kind}", *spec, 1, via="other", timed=kind == "q")
        s.real("RL.CHARGE", f"o:{kind}", "SLICE", 10, 3600, 2, 1)
    s.real("RL.LEASE", "o:l", 10, 3600, "a", via="other")
    s.real("RL.CHARGE", "o:l", "SLIDE", 10, 3600, 1)
    s.real("RL.CHARGE", "o:l", "LEASE", 10, 3600, 1)
