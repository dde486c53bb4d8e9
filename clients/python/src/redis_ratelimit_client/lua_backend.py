"""The Lua backend: the module's commands answered by Lua scripts, for
servers that cannot load modules.

``execute(client, "RL.THROTTLE", "user:42", 9, 10, 60)`` answers exactly
what the module would answer to the same command line, run by the script
of that command (``EVALSHA``, then ``EVAL`` once on ``NOSCRIPT``), with
every key declared. Error replies are raised as redis-py's
``ResponseError`` with the module's text. ``execute_async`` is the same
for ``redis.asyncio`` clients.

The scripts (``lua/ratelimit.lua`` and ``lua/manifest.json``, built from
clients/lua/src, read from this package's resources or from the directory
given as ``lua_dir`` or in ``REDIS_RATELIMIT_LUA_DIR``) hold every rule:
this module passes the command line through and computes only what a
script cannot know, a time zone's UTC offsets around now (``zone_offsets``,
from ``zoneinfo``; ``tzdata`` where the system has no zone files), and,
for servers that refuse ``TIME`` in scripts, the server's clock.
clients/lua/README.md describes the contract.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import weakref
from collections.abc import Awaitable, Sequence
from datetime import datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union, cast
from zoneinfo import ZoneInfo, available_timezones

import redis
import redis.asyncio

__all__ = [
    "CLOCK_REREAD_SECONDS",
    "TIME_REFUSED",
    "execute",
    "execute_async",
    "execute_many",
    "execute_many_async",
    "head",
    "zone_offsets",
]

Arg = Union[str, bytes, int, float]

#: The start of the scripts' answer when the server refuses TIME in scripts.
TIME_REFUSED = "ERR ratelimit: TIME refused in scripts:"
#: How often a passed clock reads the server's again (and so how long a
#: drift of the client's monotonic clock can grow: 60 s at 100 ppm is 6 ms).
CLOCK_REREAD_SECONDS = 60.0
_RANGE = 400 * 86400  # the zone offsets cover now - 400 days to now + 400 days
_STEP = 3600  # the search for offset changes steps an hour at a time


def _bytes(a: Arg) -> bytes:
    if isinstance(a, bytes):
        return a
    return str(a).encode()


def _name(command: Sequence[Arg]) -> str:
    first = command[0]
    return (first.decode("utf-8", "replace") if isinstance(first, bytes) else str(first)).upper()


# The scripts ---------------------------------------------------------------


def _lua_dir(lua_dir: Union[str, Path, None]) -> Optional[Path]:
    chosen = lua_dir if lua_dir is not None else os.environ.get("REDIS_RATELIMIT_LUA_DIR")
    return Path(chosen) if chosen else None


@lru_cache(maxsize=8)
def _scripts(lua_dir: Optional[Path]) -> Dict[str, Tuple[bytes, str, str]]:
    """Each command's (script, SHA1, keys) from the manifest."""

    def read(file: str) -> bytes:
        if lua_dir is not None:
            return (lua_dir / file).read_bytes()
        package = resources.files(__package__ or "redis_ratelimit_client")
        # One part per call: Traversable.joinpath takes one before 3.11.
        return package.joinpath("lua").joinpath(file).read_bytes()

    body = read("ratelimit.lua")
    out = {}
    for name, entry in json.loads(read("manifest.json"))["commands"].items():
        text = entry["prefix"].encode() + body
        out[name] = (text, hashlib.sha1(text).hexdigest(), entry["keys"])
    return out


def _script(name: str, lua_dir: Union[str, Path, None]) -> Tuple[bytes, str, str]:
    found = _scripts(_lua_dir(lua_dir)).get(name)
    if found is None:
        raise ValueError(f"{name} is not a command the Lua backend's scripts answer")
    return found


def script_source(command: str, lua_dir: Union[str, Path, None] = None) -> bytes:
    """The whole script that answers ``command`` (``RL.THROTTLE``, ...)."""
    return _script(command.upper(), lua_dir)[0]


# The zone offsets: the one thing computed here -----------------------------


@lru_cache(maxsize=1)
def _zone_names() -> Dict[str, str]:
    # UTC apart: the scripts read it (and fixed offsets) themselves.
    return {name.lower(): name for name in available_timezones() if name.upper() != "UTC"}


@lru_cache(maxsize=64)
def _changes(name: str, lo: int, hi: int) -> Tuple[int, Tuple[Tuple[int, int], ...]]:
    """The offset at lo and each (instant, offset) change up to hi."""
    tz = ZoneInfo(name)

    def offset(t: int) -> int:
        off = datetime.fromtimestamp(t, tz).utcoffset()
        return int(off.total_seconds()) if off is not None else 0

    first = prev = offset(lo)
    found = []
    t = lo
    while t < hi:
        step = min(_STEP, hi - t)
        cur = offset(t + step)
        if cur != prev:
            a, b = t, t + step  # offset(a) == prev, offset(b) != prev
            while b - a > 1:
                mid = (a + b) // 2
                if offset(mid) == prev:
                    a = mid
                else:
                    b = mid
            prev = offset(b)
            found.append((b, prev))
            t = b  # the search goes on from the change: another may follow within the hour
            continue
        t += step
    return first, tuple(found)


def zone_offsets(written: bytes, now: float) -> Optional[str]:
    """The head's segment of a TZ value (clients/lua/README.md):
    ``written|canonical|lo|off0(|t|off)*``, lo = now - 400 days, each
    change up to now + 400 days; None when the zone database does not know
    the name (the script answers UTC and fixed offsets itself). The changes
    are found hour by hour once per zone and 30-day window (cached)."""
    try:
        name = _zone_names().get(written.decode("ascii").lower())
    except UnicodeDecodeError:
        return None
    if name is None:
        return None
    lo = int(now // 1) - _RANGE
    hi = int(now // 1) + _RANGE
    # The search runs over a window rounded out to 30 days, so that calls
    # within it share one search; the segment is cut to [lo, hi].
    w_lo = lo - lo % (30 * 86400)
    w_hi = w_lo + 2 * _RANGE + 60 * 86400
    off0, changes = _changes(name, w_lo, w_hi)
    parts = [written.decode("ascii"), name, str(lo)]
    tail = []
    for t, off in changes:
        if t <= lo:
            off0 = off
        elif t <= hi:
            tail.append(f"{t}|{off}")
    parts.append(str(off0))
    return "|".join(parts + tail)


def head(argv: Sequence[bytes], clock: Optional[int], now: float) -> bytes:
    """ARGV[1]: the clock (``""``: the script reads TIME; else Unix µs), then
    a zone segment per distinct argument after a ``TZ`` among ``argv``, the
    command line's arguments that are not keys."""
    args = list(argv)
    text = "" if clock is None else str(clock)
    seen = set()
    for i in range(len(args) - 1):
        if args[i].upper() != b"TZ" or args[i + 1] in seen:
            continue
        seen.add(args[i + 1])
        segment = zone_offsets(args[i + 1], now)
        if segment is not None:
            text += ";" + segment
    return text.encode()


# The clock, for servers that refuse TIME in scripts ------------------------


class _Clock:
    """A pool's clock choice and the server's clock carried on the client's
    monotonic clock."""

    def __init__(self, passed: bool) -> None:
        self.passed = passed
        self.server_us = 0
        self.read_at = -1.0  # monotonic seconds; -1: never read

    def stale(self) -> bool:
        return self.read_at < 0 or time.monotonic() - self.read_at >= CLOCK_REREAD_SECONDS

    def set(self, server_us: int) -> None:
        self.server_us, self.read_at = server_us, time.monotonic()

    def now_us(self) -> int:
        return self.server_us + int((time.monotonic() - self.read_at) * 1_000_000)


_CLOCKS: weakref.WeakKeyDictionary[Any, _Clock] = weakref.WeakKeyDictionary()


def _clock_of(client: Any, clock: str) -> _Clock:
    if clock not in ("auto", "server", "client"):
        raise ValueError(f"clock must be 'auto', 'server' or 'client', not {clock!r}")
    owner = getattr(client, "connection_pool", None) or client
    found = _CLOCKS.get(owner)
    if found is None:
        found = _Clock(passed=clock == "client")
        _CLOCKS[owner] = found
    if clock != "auto":
        found.passed = clock == "client"
    return found


def _parse_time(reply: Any) -> int:
    sec, usec = reply[0], reply[1]
    return int(sec) * 1_000_000 + int(usec)


def _parse_info(reply: Any) -> int:
    if isinstance(reply, dict):
        return int(reply["server_time_usec"])
    text = reply.decode() if isinstance(reply, bytes) else str(reply)
    for line in text.splitlines():
        if line.startswith("server_time_usec:"):
            return int(line.split(":", 1)[1])
    raise redis.ResponseError("INFO server has no server_time_usec")


def _is_refused(e: redis.ResponseError) -> bool:
    return str(e).startswith(TIME_REFUSED[4:]) or str(e).startswith(TIME_REFUSED)


def _server_clock(client: Any) -> int:
    run: Callable[..., Any] = client.execute_command
    try:
        return _parse_time(run("TIME"))
    except redis.ResponseError:
        return _parse_info(run("INFO", "server"))


async def _server_clock_async(client: Any) -> int:
    run: Callable[..., Awaitable[Any]] = client.execute_command
    try:
        return _parse_time(await run("TIME"))
    except redis.ResponseError:
        return _parse_info(await run("INFO", "server"))


# A call --------------------------------------------------------------------


def _prepare(
    command: Sequence[Arg], lua_dir: Union[str, Path, None]
) -> Tuple[bytes, str, List[bytes], List[bytes]]:
    """The script, its SHA1, KEYS and ARGV without the head."""
    if not command:
        raise ValueError("a command line needs at least the command's name")
    source, sha, mode = _script(_name(command), lua_dir)
    args = [_bytes(a) for a in command[1:]]
    keys: List[bytes] = args[:1]
    at = 0
    if mode == "none":
        keys = []
    elif mode == "numkeys":
        word = args[0] if args else b""
        n = int(word) if word.isdigit() and len(word) <= 2 else 0
        keys = args[1 : 1 + n] if 1 <= n <= 16 and len(args) > n else []
        at = 1
    return source, sha, keys, [*args[:at], *args[at + len(keys) :]]


def _is_noscript(e: redis.ResponseError) -> bool:
    return isinstance(e, redis.exceptions.NoScriptError) or str(e).startswith("NOSCRIPT")


def _as_map(command: Sequence[Arg], reply: Any, client: Any) -> Any:
    # RL.INSPECT replies a map under RESP3; a script replies its flat array.
    if _name(command) != "RL.INSPECT" or not isinstance(reply, list):
        return reply
    kwargs = cast(Callable[[], Dict[str, Any]], client.get_connection_kwargs)()
    if str(kwargs.get("protocol") or 2) == "3":
        return dict(zip(reply[::2], reply[1::2]))
    return reply


def execute(
    client: redis.Redis,
    *command: Arg,
    lua_dir: Union[str, Path, None] = None,
    now: Optional[float] = None,
    clock: str = "auto",
) -> Any:
    """Answers a module command line through the Lua scripts, exactly as the
    module would: ``execute(r, "RL.SLIDE", "k", 10, 60)``. ``now`` (Unix
    seconds) replaces the client's clock for the zone offsets. ``clock``:
    "server" (the script reads TIME), "client" (the server's clock read
    outside the script is passed) or "auto" (server until the script says
    the server refuses TIME in scripts, then client for the pool)."""
    source, sha, keys, argv = _prepare(command, lua_dir)
    at = time.time() if now is None else now
    state = _clock_of(client, clock)
    run: Callable[..., Any] = client.execute_command
    for attempt in (0, 1):
        passed = None
        if state.passed:
            # A clock read for this call goes as read; else carried forward.
            if state.stale():
                state.set(_server_clock(client))
                passed = state.server_us
            else:
                passed = state.now_us()
        first = head(argv, passed, at)
        try:
            try:
                reply = run("EVALSHA", sha, len(keys), *keys, first, *argv)
            except redis.ResponseError as e:
                if not _is_noscript(e):
                    raise
                reply = run("EVAL", source, len(keys), *keys, first, *argv)
        except redis.ResponseError as e:
            if attempt == 0 and not state.passed and clock == "auto" and _is_refused(e):
                state.passed = True
                continue
            raise
        return _as_map(command, reply, client)
    raise AssertionError("unreachable")


async def execute_async(
    client: redis.asyncio.Redis,
    *command: Arg,
    lua_dir: Union[str, Path, None] = None,
    now: Optional[float] = None,
    clock: str = "auto",
) -> Any:
    """`execute` for a ``redis.asyncio`` client."""
    source, sha, keys, argv = _prepare(command, lua_dir)
    at = time.time() if now is None else now
    state = _clock_of(client, clock)
    run: Callable[..., Awaitable[Any]] = client.execute_command
    for attempt in (0, 1):
        passed = None
        if state.passed:
            # A clock read for this call goes as read; else carried forward.
            if state.stale():
                state.set(await _server_clock_async(client))
                passed = state.server_us
            else:
                passed = state.now_us()
        first = head(argv, passed, at)
        try:
            try:
                reply = await run("EVALSHA", sha, len(keys), *keys, first, *argv)
            except redis.ResponseError as e:
                if not _is_noscript(e):
                    raise
                reply = await run("EVAL", source, len(keys), *keys, first, *argv)
        except redis.ResponseError as e:
            if attempt == 0 and not state.passed and clock == "auto" and _is_refused(e):
                state.passed = True
                continue
            raise
        return _as_map(command, reply, client)
    raise AssertionError("unreachable")


def _passed(client: Any, state: _Clock) -> Optional[int]:
    if not state.passed:
        return None
    if state.stale():
        state.set(_server_clock(client))
        return state.server_us
    return state.now_us()


async def _passed_async(client: Any, state: _Clock) -> Optional[int]:
    if not state.passed:
        return None
    if state.stale():
        state.set(await _server_clock_async(client))
        return state.server_us
    return state.now_us()


def _again(reply: Any) -> bool:
    """A pipelined reply that one call of its own answers: the script not
    cached yet (EVAL), or the server refusing TIME (the clock switch)."""
    return isinstance(reply, redis.ResponseError) and (_is_noscript(reply) or _is_refused(reply))


def execute_many(
    client: redis.Redis,
    commands: Sequence[Sequence[Arg]],
    *,
    lua_dir: Union[str, Path, None] = None,
    now: Optional[float] = None,
    clock: str = "auto",
) -> List[Any]:
    """Several command lines as `execute` answers each, their EVALSHAs in one
    pipeline; an error reply is in its place as its ``ResponseError``. A
    script the server does not hold yet, or a refused TIME, is answered by
    `execute` for that command (a round trip more, once)."""
    prepared = [_prepare(command, lua_dir) for command in commands]
    at = time.time() if now is None else now
    state = _clock_of(client, clock)
    passed = _passed(client, state)
    pipe: Any = client.pipeline(transaction=False)
    for _source, sha, keys, argv in prepared:
        pipe.execute_command("EVALSHA", sha, len(keys), *keys, head(argv, passed, at), *argv)
    replies = pipe.execute(raise_on_error=False)
    out = []
    for command, reply in zip(commands, replies):
        if _again(reply):
            try:
                reply = execute(client, *command, lua_dir=lua_dir, now=now, clock=clock)
            except redis.ResponseError as e:
                reply = e
        out.append(_as_map(command, reply, client))
    return out


async def execute_many_async(
    client: redis.asyncio.Redis,
    commands: Sequence[Sequence[Arg]],
    *,
    lua_dir: Union[str, Path, None] = None,
    now: Optional[float] = None,
    clock: str = "auto",
) -> List[Any]:
    """`execute_many` for a ``redis.asyncio`` client."""
    prepared = [_prepare(command, lua_dir) for command in commands]
    at = time.time() if now is None else now
    state = _clock_of(client, clock)
    passed = await _passed_async(client, state)
    pipe: Any = client.pipeline(transaction=False)
    for _source, sha, keys, argv in prepared:
        pipe.execute_command("EVALSHA", sha, len(keys), *keys, head(argv, passed, at), *argv)
    replies = await pipe.execute(raise_on_error=False)
    out = []
    for command, reply in zip(commands, replies):
        if _again(reply):
            try:
                reply = await execute_async(client, *command, lua_dir=lua_dir, now=now,
                                            clock=clock)
            except redis.ResponseError as e:
                reply = e
        out.append(_as_map(command, reply, client))
    return out
