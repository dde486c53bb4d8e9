"""The Lua backend: the module's commands answered by Lua scripts, for
servers that cannot load modules.

``execute(client, "RL.THROTTLE", "user:42", 9, 10, 60)`` answers exactly
what the module would answer to the same command line, run by the script
of that command (``EVALSHA``, then ``EVAL`` once on ``NOSCRIPT``), with
every key declared. Error replies are raised as redis-py's
``ResponseError`` with the module's text. ``execute_async`` is the same
for ``redis.asyncio`` clients.

The script of a command is its own file (``lua/throttle.lua``, ...), a
newline, then ``lua/prelude.lua``, read from this package's resources, or from
the directory given as ``lua_dir`` or in ``REDIS_RATELIMIT_LUA_DIR``.

RL.QUOTA's calendar: the scripts have no time-zone database, so this
module computes the period boundaries around the client's own clock with
``zoneinfo`` (``tzdata`` where the system has no zone files) and passes
them as the first argument of the scripts that may meet a QUOTA limit
(RL.QUOTA, RL.ALLOW, RL.PEEK, RL.REFUND); the script picks the period by the
server's ``TIME`` and refuses when the server's time is outside them
(clocks more than ``MARGIN_SECONDS`` apart). clients/lua/README.md
describes the encoding.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, cast
from zoneinfo import ZoneInfo, available_timezones

import redis
import redis.asyncio

__all__ = ["MARGIN_SECONDS", "calendar_argument", "execute", "execute_async", "script_source"]

Arg = str | bytes | int

#: How far the server's clock may be from the client's for RL.QUOTA: the
#: boundaries passed cover the client's now plus and minus this.
MARGIN_SECONDS = 3600

_COMMANDS = {
    "RL.THROTTLE": "throttle",
    "RL.SLIDE": "slide",
    "RL.SLICE": "slice",
    "RL.LEASE": "lease",
    "RL.RELEASE": "release",
    "RL.QUOTA": "quota",
    "RL.ALLOW": "allow",
    "RL.PEEK": "peek",
    "RL.REFUND": "refund",
    "RL.INSPECT": "inspect",
}
# The commands whose scripts take the calendar as their first argument.
_WITH_CALENDAR = {"RL.QUOTA", "RL.ALLOW", "RL.PEEK", "RL.REFUND"}
_PARAMS = {"THROTTLE": 3, "SLIDE": 2, "SLICE": 3, "LEASE": 2, "QUOTA": 2}
_OPTIONS = {"SLIDE": ("PRECISION",), "QUOTA": ("TZ",)}
_UNITS = ("MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR")


def _bytes(a: Arg) -> bytes:
    if isinstance(a, bytes):
        return a
    return str(a).encode()


def _lua_dir(lua_dir: str | Path | None) -> Path | None:
    chosen = lua_dir if lua_dir is not None else os.environ.get("REDIS_RATELIMIT_LUA_DIR")
    return Path(chosen) if chosen else None


@lru_cache(maxsize=64)
def _source(name: str, lua_dir: Path | None) -> tuple[bytes, str]:
    def read(file: str) -> bytes:
        if lua_dir is not None:
            return (lua_dir / file).read_bytes()
        return (
            resources.files(__package__ or "redis_ratelimit_client")
            .joinpath("lua", file)
            .read_bytes()
        )

    text = read(name + ".lua") + b"\n" + read("prelude.lua")
    return text, hashlib.sha1(text).hexdigest()


def script_source(command: str, lua_dir: str | Path | None = None) -> bytes:
    """The whole script that answers ``command`` (``RL.THROTTLE``, ...)."""
    return _source(_COMMANDS[command.upper()], _lua_dir(lua_dir))[0]


def _numkeys(word: bytes) -> int | None:
    if not word.isdigit():
        return None
    n = int(word)
    return n if 1 <= n <= 16 else None


def _keys(name: str, args: Sequence[bytes]) -> list[bytes]:
    if name in ("RL.ALLOW", "RL.PEEK"):
        n = _numkeys(args[0]) if args else None
        return list(args[1 : 1 + n]) if n else []
    return list(args[:1])


# The calendar ------------------------------------------------------------

_MINUTE, _HOUR, _DAY = 60, 3600, 86400
_MONTH_STARTS = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)


def _is_leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def _leap_days_before(year: int) -> int:
    y = year - 1
    return y // 4 - y // 100 + y // 400


def _year_start(year: int) -> int:
    return 365 * (year - 1970) + _leap_days_before(year) - _leap_days_before(1970)


def _first_of(year: int, month: int) -> int:
    month = min(max(month, 1), 12)
    return _year_start(year) + _MONTH_STARTS[month - 1] + (1 if month > 2 and _is_leap(year) else 0)


def _year_month(days: int) -> tuple[int, int]:
    year = 1970 + (days * 400) // 146097
    while _year_start(year) > days:
        year -= 1
    while _year_start(year + 1) <= days:
        year += 1
    day_of_year = days - _year_start(year)
    month = 12
    while month > 1 and _first_of(year, month) - _year_start(year) > day_of_year:
        month -= 1
    return year, month


def _floor(unit: int, local: int) -> int:
    days = local // _DAY
    if unit == 0:
        return local - local % _MINUTE
    if unit == 1:
        return local - local % _HOUR
    if unit == 2:
        return days * _DAY
    if unit == 3:
        return (days - (days + 3) % 7) * _DAY
    year, month = _year_month(days)
    if unit == 4:
        return _first_of(year, month) * _DAY
    return _first_of(year, 1) * _DAY


def _next(unit: int, local: int) -> int:
    floor = _floor(unit, local)
    if unit == 0:
        return floor + _MINUTE
    if unit == 1:
        return floor + _HOUR
    if unit == 2:
        return floor + _DAY
    if unit == 3:
        return floor + 7 * _DAY
    year, month = _year_month(floor // _DAY)
    if unit == 4:
        return (_first_of(year + 1, 1) if month == 12 else _first_of(year, month + 1)) * _DAY
    return _first_of(year + 1, 1) * _DAY


class _Rules:
    """A zone's UTC offsets and the instants they change, from zoneinfo."""

    def __init__(self, tz: timezone | ZoneInfo) -> None:
        self.tz = tz
        self.changes: dict[int, list[int]] = {}

    def offset(self, t: int) -> int:
        off = datetime.fromtimestamp(t, self.tz).utcoffset()
        return int(off.total_seconds()) if off is not None else 0

    def _changes_in(self, bucket: int) -> list[int]:
        # The changes within one 30-day bucket, found hour by hour and then
        # to the second.
        found = self.changes.get(bucket)
        if found is not None:
            return found
        found = []
        if not isinstance(self.tz, timezone):
            lo = bucket * 30 * _DAY
            prev = self.offset(lo - 1)
            t = lo
            end = lo + 30 * _DAY
            while t < end:
                step = min(_HOUR, end - t)
                cur = self.offset(t + step - 1)
                if cur != prev:
                    a, b = t - 1, t + step - 1  # offset(a) == prev, offset(b) != prev
                    while b - a > 1:
                        mid = (a + b) // 2
                        if self.offset(mid) == prev:
                            a = mid
                        else:
                            b = mid
                    found.append(b)
                    prev = cur
                t += step
        self.changes[bucket] = found
        return found

    def change_at_or_before(self, t: int) -> int | None:
        bucket = t // (30 * _DAY)
        for b in range(bucket, bucket - 16, -1):
            cs = [c for c in self._changes_in(b) if c <= t]
            if cs:
                return cs[-1]
        return None

    def change_after(self, t: int) -> int | None:
        bucket = t // (30 * _DAY)
        for b in range(bucket, bucket + 16):
            cs = [c for c in self._changes_in(b) if c > t]
            if cs:
                return cs[0]
        return None


def _start(t: int, unit: int, rules: _Rules) -> int:
    x, off = t, rules.offset(t)
    for _ in range(64):
        shown = _floor(unit, x + off)
        change = rules.change_at_or_before(x)
        if change is None or not shown - off < change:
            return shown - off
        before = rules.offset(change - 1)
        if shown >= change + before:
            return change
        x, off = change - 1, before
    return x


def _end(t: int, unit: int, rules: _Rules) -> int:
    x, off = t, rules.offset(t)
    for _ in range(64):
        nxt = _next(unit, x + off)
        change = rules.change_after(x)
        if change is None or not nxt - off >= change:
            return nxt - off
        after = rules.offset(change)
        if nxt <= change + after or _floor(unit, change + after) == change + after:
            return change
        x, off = change, after
    return x


@lru_cache(maxsize=1)
def _zone_names() -> dict[str, str]:
    return {name.lower(): name for name in available_timezones() if name.upper() != "UTC"}


@lru_cache(maxsize=256)
def _rules(name: str) -> _Rules:
    return _Rules(ZoneInfo(name))


def _zone(value: bytes | None) -> tuple[str, _Rules] | None:
    """A zone's canonical name and rules, as the module reads the TZ value;
    None when the client's database does not know it."""
    if value is None or value.upper() == b"UTC":
        return "UTC", _Rules(UTC)
    if value[:1] in (b"+", b"-"):
        text = value.decode("ascii", "replace")
        if len(text) != 6 or text[3] != ":" or not (text[1:3] + text[4:]).isdigit():
            return None
        seconds = (int(text[1:3]) * 60 + int(text[4:])) * 60
        if int(text[4:]) >= 60 or seconds > 18 * 3600:
            return None
        if seconds == 0:
            return "UTC", _Rules(UTC)
        sign = -1 if text[0] == "-" else 1
        return text, _Rules(timezone(timedelta(seconds=sign * seconds)))
    try:
        name = _zone_names().get(value.decode("ascii").lower())
    except UnicodeDecodeError:
        return None
    if name is None:
        return None
    return name, _rules(name)


def _segment(unit_word: bytes | None, zone_value: bytes | None, now: float) -> str:
    zone = _zone(zone_value)
    word = unit_word.upper().decode("ascii", "replace") if unit_word else ""
    unit = _UNITS.index(word) if word in _UNITS else None
    if zone is None or unit is None:
        return "!"
    name, rules = zone
    lo, hi = int(now) - MARGIN_SECONDS, int(now) + MARGIN_SECONDS
    bounds = [_start(lo, unit, rules)]
    while bounds[-1] <= hi:
        bounds.append(_end(bounds[-1], unit, rules))
    steps = [bounds[0]] + [b - a for a, b in itertools.pairwise(bounds)]
    return name + "|" + ",".join(str(s) for s in steps)


def _quota_specs(name: str, args: Sequence[bytes]) -> list[tuple[bytes | None, bytes | None]]:
    """The (unit, TZ value) of every QUOTA limit of a command line, in order,
    found as the module finds them."""

    def spec_at(at: int) -> tuple[str | None, int, tuple[bytes | None, bytes | None]]:
        word = args[at].upper().decode("ascii", "replace") if at < len(args) else ""
        n = _PARAMS.get(word)
        if n is None or at + n >= len(args):
            return None, len(args), (None, None)
        nxt = at + 1 + n
        tz: bytes | None = None
        while nxt < len(args) and args[nxt].upper().decode("ascii", "replace") in _OPTIONS.get(
            word, ()
        ):
            if nxt + 1 < len(args) and tz is None and word == "QUOTA":
                tz = args[nxt + 1]
            nxt += 2
        return word, nxt, (args[at + 2], tz)

    if name == "RL.QUOTA":
        tz = None
        i = 3
        while i < len(args):
            if args[i].upper() == b"TZ":
                if i + 1 < len(args) and tz is None:
                    tz = args[i + 1]
                i += 2
            else:
                i += 1
        return [(args[2] if len(args) > 2 else None, tz)]
    if name == "RL.REFUND":
        word, _, spec = spec_at(1)
        return [spec] if word == "QUOTA" else []
    if name in ("RL.ALLOW", "RL.PEEK"):
        n = _numkeys(args[0]) if args else None
        out = []
        at = 1 + (n or 0)
        for _ in range(n or 0):
            word, at, spec = spec_at(at)
            if word is None:
                break
            if word == "QUOTA":
                out.append(spec)
        return out
    return []


def calendar_argument(command: Sequence[Arg], now: float | None = None) -> str:
    """The scripts' first argument for a command line: the period
    boundaries of each of its QUOTA limits around ``now`` (the client's
    clock by default), or the empty string."""
    name = str(command[0].decode() if isinstance(command[0], bytes) else command[0]).upper()
    args = [_bytes(a) for a in command[1:]]
    specs = _quota_specs(name, args)
    if not specs:
        return ""
    at = time.time() if now is None else now
    return ";".join(_segment(unit, tz, at) for unit, tz in specs)


def _prepare(
    command: Sequence[Arg], lua_dir: str | Path | None, now: float | None
) -> tuple[bytes, str, list[bytes], list[bytes]]:
    if not command:
        raise ValueError("a command line needs at least the command's name")
    name = (command[0].decode() if isinstance(command[0], bytes) else str(command[0])).upper()
    if name not in _COMMANDS:
        raise ValueError(f"{name} is not a command of the module")
    source, sha = _source(_COMMANDS[name], _lua_dir(lua_dir))
    args = [_bytes(a) for a in command[1:]]
    keys = _keys(name, args)
    # The keys go in KEYS only: the script puts them back in their places.
    at = 1 if name in ("RL.ALLOW", "RL.PEEK") else 0
    argv = [*args[:at], *args[at + len(keys) :]]
    if name in _WITH_CALENDAR:
        argv.insert(0, calendar_argument(command, now).encode())
    return source, sha, keys, argv


def _is_noscript(e: redis.ResponseError) -> bool:
    return isinstance(e, redis.exceptions.NoScriptError) or str(e).startswith("NOSCRIPT")


def _as_map(command: Sequence[Arg], reply: Any, protocol: Any) -> Any:
    # RL.INSPECT replies a map under RESP3; a script replies its flat array.
    name = command[0].decode() if isinstance(command[0], bytes) else str(command[0])
    if name.upper() == "RL.INSPECT" and isinstance(reply, list) and str(protocol) == "3":
        return dict(zip(reply[::2], reply[1::2]))
    return reply


def _protocol(client: Any) -> Any:
    # The protocol the client speaks, from its connection settings (a
    # Redis or a RedisCluster, sync or asyncio; RESP2 when unset).
    kwargs = cast(Callable[[], dict[str, Any]], client.get_connection_kwargs)()
    return kwargs.get("protocol") or 2


def execute(
    client: redis.Redis, *command: Arg, lua_dir: str | Path | None = None, now: float | None = None
) -> Any:
    """Answers a module command line through the Lua scripts, exactly as the
    module would: ``execute(r, "RL.SLIDE", "k", 10, 60)``. ``now`` (Unix
    seconds) replaces the client's clock for RL.QUOTA's calendar."""
    source, sha, keys, argv = _prepare(command, lua_dir, now)
    run: Callable[..., Any] = client.execute_command
    try:
        reply = run("EVALSHA", sha, len(keys), *keys, *argv)
    except redis.ResponseError as e:
        if not _is_noscript(e):
            raise
        reply = run("EVAL", source, len(keys), *keys, *argv)
    if isinstance(reply, list) and str(command[0]).upper().endswith("INSPECT"):
        return _as_map(command, reply, _protocol(client))
    return reply


async def execute_async(
    client: redis.asyncio.Redis,
    *command: Arg,
    lua_dir: str | Path | None = None,
    now: float | None = None,
) -> Any:
    """`execute` for a ``redis.asyncio`` client."""
    source, sha, keys, argv = _prepare(command, lua_dir, now)
    run: Callable[..., Awaitable[Any]] = client.execute_command
    try:
        reply = await run("EVALSHA", sha, len(keys), *keys, *argv)
    except redis.ResponseError as e:
        if not _is_noscript(e):
            raise
        reply = await run("EVAL", source, len(keys), *keys, *argv)
    if isinstance(reply, list) and str(command[0]).upper().endswith("INSPECT"):
        return _as_map(command, reply, _protocol(client))
    return reply
