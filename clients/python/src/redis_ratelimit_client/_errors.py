"""Exceptions: the module's ERR replies name their argument; WRONGTYPE has a
class of its own."""

from __future__ import annotations

import re
from typing import Optional, Sequence, Tuple, Union

from redis.exceptions import ResponseError

from ._results import AllowResult, Result


class RateLimitError(Exception):
    """Base of this package's own exceptions."""


class CommandError(ResponseError, RateLimitError):
    """A command's error reply (also a redis-py ``ResponseError``)."""


class ArgumentError(CommandError, ValueError):
    """The module refused an argument (an ``ERR ...`` reply).

    ``argument`` names it as the module's documentation does (``period``,
    ``PRECISION``, ``TZ``, ``spec``, ``key``; for an unknown word, the word
    itself), or is None for the server's arity error. ``spec`` is the 1-based
    spec of RL.ALLOW, RL.PEEK or RL.REFUND the error is about, if any.
    ``message`` is the module's text without ``ERR ``."""

    def __init__(self, message: str, argument: Optional[str], spec: Optional[int]) -> None:
        super().__init__(message)
        self.message = message
        self.argument = argument
        self.spec = spec


class WrongTypeError(CommandError, TypeError):
    """The key holds another type than the command's (``WRONGTYPE``)."""


class ModuleNotLoadedError(RateLimitError):
    """No backend can answer: the module is not loaded on the server."""


class LeaseRefused(RateLimitError):
    """A lease context manager could not take its slot; ``retry_after`` (in
    the call's unit) says when it could, -1 when it never can."""

    def __init__(self, key: str, result: Result) -> None:
        unit = "ms" if result.ms else "s"
        super().__init__(
            f"lease on {key!r} refused: {result.remaining} of {result.limit} free, "
            f"retry after {result.retry_after} {unit}"
        )
        self.key = key
        self.result = result
        self.retry_after = result.retry_after


class RateLimited(RateLimitError):
    """``acquire`` (or ``acquire_all``) was refused: no turn within the wait
    it could ask for (its ``max_wait``, cut to its deadline), the key is
    blocked, or the request can never fit. ``retry_after`` is in seconds
    (a float; -1.0 when it can never fit), ``result`` the reply as the
    module gave it (in ms), ``keys`` the keys asked for."""

    def __init__(self, keys: Sequence[str], result: Union[Result, AllowResult]) -> None:
        self.keys = tuple(keys)
        self.result = result
        raw = result.retry_after
        self.retry_after = -1.0 if raw < 0 else (raw / 1000 if result.ms else float(raw))
        when = ("can never fit" if raw < 0 else f"retry after {self.retry_after:.3f} s")
        super().__init__(f"rate limited on {', '.join(map(repr, self.keys))}: {when}")


_SPEC = re.compile(r"^spec (\d+)(?: \((\w+)\))?(?::| is missing)\s*(.*)$")
_QUOTED = re.compile(r"^unknown argument '(.*)'$", re.S)
_WORD = re.compile(r"^([A-Za-z_]+) (?:must|is given|expects)\b")


def name_argument(message: str) -> Tuple[Optional[str], Optional[int]]:
    """The argument (and spec index) a module error text names."""
    spec: Optional[int] = None
    m = _SPEC.match(message)
    if m:
        spec = int(m.group(1))
        rest = m.group(3)
        if not rest or rest.startswith(("expects", "unknown algorithm")) or "need" in rest:
            return "spec", spec
        message = rest
    if message.startswith("wrong number of arguments"):
        return None, spec
    m = _QUOTED.match(message)
    if m:
        return m.group(1), spec
    if message.startswith("unknown time zone"):
        return "TZ", spec
    if message.startswith(("unknown algorithm", "RL.REFUND does not take",
                           "RL.CHARGE does not take")):
        return "spec", spec
    if message.startswith("LEASE takes no BLOCK"):
        return "BLOCK", spec
    if message.startswith(("SHADOW takes no BLOCK", "at least one spec must be enforced")):
        return "SHADOW", spec
    if message.startswith("MAXWAIT takes THROTTLE limits only"):
        return "MAXWAIT", spec
    if message.startswith("key '"):
        return "key", spec
    if message.startswith("(max_burst + 1) x period / count"):
        return "period", spec
    if re.match(r"^a \w+ spec needs the ID option", message):
        return "ID", spec
    if message.startswith("ID is given but"):
        return "ID", spec
    m = _WORD.match(message)
    if m:
        word = m.group(1)
        if word in ("THROTTLE", "SLIDE", "SLICE", "LEASE", "QUOTA"):
            return "spec", spec
        return word, spec
    if message.startswith("unit ") or "calendar unit" in message:
        return "unit", spec
    return None, spec


_OTHER_CODES = frozenset((
    "BUSY", "NOSCRIPT", "CROSSSLOT", "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "READONLY",
    "LOADING", "MASTERDOWN", "NOPERM", "OOM", "NOAUTH", "EXECABORT", "WRONGPASS",
    "NOREPLICAS", "MISCONF", "UNBLOCKED", "NOPROTO",
))


def translate(error: ResponseError) -> Exception:
    """The package's exception for a redis-py error reply, or the error
    itself when it is not the module's (MOVED, NOPERM ...)."""
    text = str(error)
    if text.startswith("WRONGTYPE"):
        return WrongTypeError(text)
    if isinstance(error, CommandError):
        return error
    if type(error) is ResponseError:
        # redis-py strips the "ERR " of an ERR reply and keeps other codes.
        if text.split(" ", 1)[0] in _OTHER_CODES:
            return error
        argument, spec = name_argument(text)
        return ArgumentError(text, argument, spec)
    return error
