"""The clients' one computation: a time zone's UTC offsets around now (the
head's zone segments, clients/lua/README.md), by the Python package
(zone_offsets, zoneinfo) and the Node package (zoneOffsets, Intl), tested
against the zone database directly: a table of zones and instants written
down from the database (daylight-saving edges, Lord Howe's 30-minute
shift, a skipped midnight, a zone without changes, UTC), every change
found checked to the second with zoneinfo, and the two packages' segments
equal for many zones and instants."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from harness import NodeLua
from redis_ratelimit_client.lua_backend import zone_offsets

DAY = 86400


def parse(segment: str) -> tuple[str, str, int, int, list[tuple[int, int]]]:
    f = segment.split("|")
    pairs = [(int(f[i]), int(f[i + 1])) for i in range(4, len(f), 2)]
    return f[0], f[1], int(f[2]), int(f[3]), pairs


def offset_at(segment: str, t: int) -> int:
    _, _, lo, off, pairs = parse(segment)
    assert t >= lo
    for c, o in pairs:
        if c <= t:
            off = o
    return off


def utc(*a: int) -> int:
    return int(datetime(*a, tzinfo=UTC).timestamp())  # type: ignore[misc,arg-type]


NOW = utc(2026, 6, 1)
# (zone, instant, offset then), from the database's rules.
TABLE = [
    ("Europe/Berlin", utc(2026, 3, 29, 0, 59, 59), 3600),
    ("Europe/Berlin", utc(2026, 3, 29, 1), 7200),
    ("Europe/Berlin", utc(2026, 10, 25, 0, 59, 59), 7200),
    ("Europe/Berlin", utc(2026, 10, 25, 1), 3600),
    ("America/New_York", utc(2026, 3, 8, 6, 59, 59), -18000),
    ("America/New_York", utc(2026, 3, 8, 7), -14400),
    ("America/New_York", utc(2026, 11, 1, 6), -18000),
    # Lord Howe: +11 in summer, +10:30 in winter, changing at 02:00 local.
    ("Australia/Lord_Howe", utc(2026, 4, 4, 14, 59, 59), 39600),
    ("Australia/Lord_Howe", utc(2026, 4, 4, 15), 37800),
    ("Australia/Lord_Howe", utc(2026, 10, 3, 15, 29, 59), 37800),
    ("Australia/Lord_Howe", utc(2026, 10, 3, 15, 30), 39600),
    # Santiago skips midnight: 2026-09-06 00:00 -04 is 01:00 -03.
    ("America/Santiago", utc(2026, 9, 6, 3, 59, 59), -14400),
    ("America/Santiago", utc(2026, 9, 6, 4), -10800),
    ("America/Santiago", utc(2026, 4, 5, 2, 59, 59), -10800),
    ("America/Santiago", utc(2026, 4, 5, 3), -14400),
    ("Asia/Kolkata", utc(2026, 1, 1), 19800),
    ("Asia/Kolkata", utc(2027, 1, 1), 19800),
    ("Etc/UTC", utc(2026, 1, 1), 0),
]
ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "America/Havana",
    "Europe/Dublin",
    "Antarctica/Troll",
    "America/Santiago",
    "America/St_Johns",
    "Africa/Casablanca",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Pacific/Kiritimati",
    "US/Eastern",
    "Etc/GMT+5",
    "Europe/Kyiv",
]


def test_the_table_of_the_zone_database() -> None:
    for zone, t, off in TABLE:
        seg = zone_offsets(zone.encode(), NOW)
        assert seg is not None, zone
        assert offset_at(seg, t) == off, (zone, t, seg)
    assert parse(zone_offsets(b"Asia/Kolkata", NOW) or "")[4] == []  # no change: off0 alone
    lh = parse(zone_offsets(b"australia/lord_howe", NOW) or "")
    assert lh[:3] == ("australia/lord_howe", "Australia/Lord_Howe", NOW - 400 * DAY)
    # Two changes a year, 30 minutes each.
    assert [abs(a[1] - b[1]) for a, b in zip(lh[4], lh[4][1:])] == [1800] * (len(lh[4]) - 1)
    assert len(lh[4]) in (4, 5)


def test_what_the_database_does_not_know_gets_no_segment() -> None:
    for value in (b"Moon/Base", b"UTC", b"utc", b"+05:30", b"", b"\xff", b"Europe/Berlin "):
        assert zone_offsets(value, NOW) is None, value


def test_every_change_is_the_databases_to_the_second() -> None:
    for zone in ZONES:
        tz = ZoneInfo(zone)

        def off(t: int, tz: ZoneInfo = tz) -> int:
            o = datetime.fromtimestamp(t, tz).utcoffset()
            assert o is not None
            return int(o.total_seconds())

        seg = zone_offsets(zone.encode(), NOW)
        assert seg is not None
        _, name, lo, off0, pairs = parse(seg)
        assert name == zone and lo == NOW - 400 * DAY and off0 == off(lo)
        for t, o in pairs:
            assert lo < t <= NOW + 400 * DAY
            assert off(t) == o and off(t - 1) != o, (zone, t)
        # Nothing missed: the offset at every 6 hours is the segment's.
        for t in range(lo, NOW + 400 * DAY, 6 * 3600):
            assert offset_at(seg, t) == off(t), (zone, t)


def test_node_and_python_give_the_same_segments() -> None:
    rng = random.Random(44)
    node = NodeLua(None)
    try:
        lo, hi = utc(2024, 1, 1), utc(2028, 12, 31)
        diffs = []
        for zone in [*ZONES, "europe/berlin", "ASIA/CALCUTTA", "Moon/Base", "UTC", "+05:30"]:
            for t in [NOW, NOW + 0.5] + [rng.randrange(lo, hi) + rng.random() for _ in range(4)]:
                py = zone_offsets(zone.encode(), t)
                js = node.zones(zone, t)
                if py != js:
                    diffs.append((zone, t, py, js))
        assert diffs == []
    finally:
        node.close()
