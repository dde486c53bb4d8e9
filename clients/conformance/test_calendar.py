"""RL.QUOTA's calendar argument (the scripts' ARGV[1]) of the Node package
(calendarArgument, its zones' offsets from Intl) against the Python
package's (calendar_argument, zoneinfo): the same text for the same command
line and instant, around every offset change of 2025 to 2027 of zones with
daylight saving time (whole, half-hour, 2-hour, negative), at unit starts,
at random instants, in every unit, and for every shape of command line
that carries QUOTA specs."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from harness import NodeLua
from redis_ratelimit_client.lua_backend import MARGIN_SECONDS, calendar_argument

UNITS = ["MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR"]
DST_ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",  # 30-minute daylight saving time
    "Pacific/Chatham",  # +12:45 / +13:45
    "America/Havana",  # changes at local midnight
    "Europe/Dublin",  # negative daylight saving time in the database
    "Antarctica/Troll",  # a 2-hour jump
    "America/Santiago",
    "America/St_Johns",
    "Africa/Casablanca",  # changes around Ramadan
]
# Zones without changes near now, fixed offsets, other spellings, and
# values the client does not know ("!").
OTHER_ZONES = [
    "Asia/Kolkata",
    "America/Sao_Paulo",
    "Asia/Kathmandu",
    "Pacific/Kiritimati",
    "UTC",
    "utc",
    "+05:45",
    "-03:30",
    "-00:00",
    "+18:00",
    "europe/berlin",
    "US/Eastern",
    "ASIA/CALCUTTA",
    "Europe/Kyiv",
    "Etc/GMT+5",
    "Moon/Base",
    "+18:01",
    "+1:00",
    "+05:60",
    "",
]


def changes(zone: str, start: datetime, end: datetime) -> Iterator[int]:
    """The instants (Unix seconds) at which the zone's offset changes, by zoneinfo."""
    tz = ZoneInfo(zone)
    t = int(start.timestamp())
    stop = int(end.timestamp())
    prev = datetime.fromtimestamp(t, tz).utcoffset()
    while t < stop:
        nxt = t + 3600
        cur = datetime.fromtimestamp(nxt, tz).utcoffset()
        if cur != prev:
            a, b = t, nxt
            while b - a > 1:
                mid = (a + b) // 2
                if datetime.fromtimestamp(mid, tz).utcoffset() == prev:
                    a = mid
                else:
                    b = mid
            yield b
            prev = cur
        t = nxt


def instants(rng: random.Random) -> dict[str, list[float]]:
    """Per zone, the instants to compare at."""
    near = [0, 1, -1, 59, 3599, -3599, 3600, -3600, 3601, -3601, 86400, -86400]
    out: dict[str, list[float]] = {}
    y2025 = datetime(2025, 1, 1, tzinfo=UTC)
    y2028 = datetime(2028, 1, 1, tzinfo=UTC)
    for zone in DST_ZONES:
        found = list(changes(zone, y2025, y2028))
        assert len(found) >= 2, zone
        ts: list[float] = [c + d for c in found for d in near]
        # Local unit starts: midnights, a Monday, first of month and year.
        tz = ZoneInfo(zone)
        for local in (datetime(2026, 1, 1), datetime(2026, 3, 1), datetime(2026, 3, 30), datetime(2026, 10, 26)):
            t = local.replace(tzinfo=tz).timestamp()
            ts += [t, t - 1, t + MARGIN_SECONDS, t - MARGIN_SECONDS - 1]
        out[zone] = ts
    for zone in OTHER_ZONES:
        out[zone] = [datetime(2026, 1, 1, tzinfo=UTC).timestamp() + d for d in (0, -1, 1800, 5400, -19800)]
    # Random instants from 2024 to 2028, with microseconds, for every zone.
    lo, hi = datetime(2024, 1, 1, tzinfo=UTC).timestamp(), datetime(2028, 12, 31, tzinfo=UTC).timestamp()
    for ts in out.values():
        ts += [rng.randrange(int(lo), int(hi)) + rng.randrange(1_000_000) / 1e6 for _ in range(6)]
    return out


def shapes(zone: str, unit: str) -> list[list[Any]]:
    """Command lines that carry QUOTA specs, in the ways the module reads them."""
    return [
        ["RL.ALLOW", 3, "a", "b", "c", "QUOTA", 5, unit, "TZ", zone, "SLIDE", 1, 1, "PRECISION", 1, "QUOTA", 1, "DAY"],
        ["rl.peek", "2", "a", "b", "quota", "5", unit.lower(), "tz", zone, "QUOTA", 1, "HOUR", "TZ", "UTC", "TZ", zone],
        ["RL.REFUND", "k", "QUOTA", 5, unit, "TZ", zone, 1],
        ["RL.QUOTA", "k", 5, unit, 1, "TZ", zone, "TZ", "Asia/Tokyo", "MS"],
        ["RL.QUOTA", "k", 5, unit, "MS", "TZ"],
        ["RL.ALLOW", 2, "a", "b", "QUOTA", 5, unit, "TZ"],
        ["RL.ALLOW", 17, "a", "QUOTA", 5, unit, "TZ", zone],
        ["RL.ALLOW", 2, "a", "b", "LEAKY", 5, "QUOTA", 1, unit, "TZ", zone],
        ["RL.REFUND", "k", "SLIDE", 5, 60, 1],
        ["RL.QUOTA", "k"],
        ["RL.SLIDE", "k", 10, 60],
        ["RL.INSPECT", "k"],
    ]


def test_node_and_python_give_the_same_calendar_argument() -> None:
    rng = random.Random(35)
    node = NodeLua(None)
    cases: list[tuple[list[Any], float]] = []
    try:
        for zone, ts in instants(rng).items():
            for t in ts:
                for unit in UNITS:
                    cases.append((["RL.QUOTA", "k", 100, unit, "TZ", zone], t))
            for unit in [*UNITS, "FORTNIGHT"]:
                cases += [(cmd, ts[0]) for cmd in shapes(zone, unit)]
        diffs = []
        kinds = {"segments": 0, "unknown": 0, "empty": 0}
        for cmd, t in cases:
            py = calendar_argument(cmd, now=t)
            js = node.calendar(cmd, t)
            kinds["empty" if py == "" else "unknown" if py == "!" else "segments"] += 1
            if py != js:
                diffs.append(f"{cmd} at {datetime.fromtimestamp(t, UTC)} ({t}): python {py!r}, node {js!r}")
    finally:
        node.close()
    print(f"calendar: {len(cases)} command lines compared ({kinds}), {len(diffs)} differences")
    assert kinds["segments"] > 5000 and kinds["unknown"] > 100 and kinds["empty"] > 100
    assert not diffs, f"{len(diffs)} of {len(cases)} differ:\n" + "\n".join(diffs[:20])


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York"])
def test_a_repeated_hour_is_two_periods_in_both(zone: str) -> None:
    # A whole hour set back: the module's rules make the repeated local
    # hour two HOUR periods, the second starting at the change.
    back = list(changes(zone, datetime(2026, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)))
    tz = ZoneInfo(zone)
    fall = next(
        c
        for c in back
        if (datetime.fromtimestamp(c, tz).utcoffset() or timedelta())
        < (datetime.fromtimestamp(c - 1, tz).utcoffset() or timedelta())
    )
    node = NodeLua(None)
    try:
        arg = node.calendar(["RL.QUOTA", "k", 1, "HOUR", "TZ", zone], fall)
    finally:
        node.close()
    assert arg == calendar_argument(["RL.QUOTA", "k", 1, "HOUR", "TZ", zone], now=fall)
    name, _, steps = arg.partition("|")
    bounds = [int(s) for s in steps.split(",")]
    starts = [sum(bounds[: i + 1]) for i in range(len(bounds))]
    assert name == zone and fall in starts
