"""Assembles the Lua backend's script from its parts (clients/lua/src/).

    python3 clients/lua/build.py            writes clients/lua/dist/ (make lua-dist)
    python3 clients/lua/build.py --check    exits 1 when dist/ is not what the parts make
    python3 clients/lua/build.py --test DIR writes the test variant into DIR

The script is one chunk: the parts are pieces of it, not modules (a script
keeps nothing between calls, so whatever it defines is made again on every
call, and the parts share the locals of the blocks they sit in). Each part
is stored without the indentation of its block; PARTS gives it back. The
test variant has lib()'s test hooks (`entry == 'lib'`, `set_clock`, the
big-integer helpers exported), which the shipped script has not.

dist/manifest.json: for each command the scripts answer, the prefix that
comes before ratelimit.lua (the two locals that name the path the script
takes, after `#!lua flags=no-writes` for the read-only commands), how its
keys are found, and whether it is read-only (clients/lua/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
DIST = HERE / "dist"

# (part, indentation), in the order of the script.
PARTS = [
    ("head.lua", 0),
    ("throttle_us.lua", 2),
    ("fast/gcra.lua", 2),
    ("fast/throttle.lua", 2),
    ("fast/quota.lua", 2),
    ("fast/slide.lua", 2),
    ("fast/slice.lua", 2),
    ("fast/lease.lua", 2),
    ("fast/calls.lua", 2),
    ("lib/args.lua", 2),
    ("lib/bigint.lua", 4),
    ("lib/grammar.lua", 4),
    ("lib/zones.lua", 4),
    ("lib/calendar.lua", 4),
    ("lib/params.lua", 4),
    ("lib/clock_keys.lua", 4),
    ("lib/throttle.lua", 4),
    ("lib/slide.lua", 4),
    ("lib/slice.lua", 4),
    ("lib/lease.lua", 4),
    ("lib/quota.lua", 4),
    ("lib/commands.lua", 4),
    ("lib/exports.lua", 4),
    ("tail.lua", 0),
]
# The test variant's parts in place of the shipped ones.
TEST_PARTS = {"lib/exports.lua": "test/exports.lua", "tail.lua": "test/tail.lua"}

RO = "#!lua flags=no-writes\n"
COMMANDS = {
    "RL.THROTTLE": ("local entry, arg = 'limiter', 'THROTTLE'\n", "first", False),
    "RL.SLIDE": ("local entry, arg = 'limiter', 'SLIDE'\n", "first", False),
    "RL.SLICE": ("local entry, arg = 'limiter', 'SLICE'\n", "first", False),
    "RL.LEASE": ("local entry, arg = 'limiter', 'LEASE'\n", "first", False),
    "RL.QUOTA": ("local entry, arg = 'limiter', 'QUOTA'\n", "first", False),
    "RL.RELEASE": ("local entry, arg = 'release', nil\n", "first", False),
    "RL.ALLOW": ("local entry, arg = 'several', true\n", "numkeys", False),
    "RL.PEEK": (RO + "local entry, arg = 'several', false\n", "numkeys", True),
    "RL.REFUND": ("local entry, arg = 'refund', nil\n", "first", False),
    "RL.INSPECT": (RO + "local entry, arg = 'inspect', nil\n", "first", True),
    "RL.CHARGE": ("local entry, arg = 'charge', true\n", "first", False),
    # The scripts keep no summary of refusals: RL.TOP answers an error
    # (head.lua), with no keys ("none": KEYS = [], ARGV = head + arguments).
    "RL.TOP": (RO + "local entry, arg = 'top', nil\n", "none", True),
}


def script(test: bool = False) -> str:
    out = []
    for name, indent in PARTS:
        part = TEST_PARTS.get(name, name) if test else name
        text = (SRC / part).read_text(encoding="utf-8")
        for line in text.splitlines():
            out.append(" " * indent + line if line else "")
    return "\n".join(out) + "\n"


def manifest() -> str:
    commands = {
        name: {"prefix": prefix, "keys": keys, "readonly": ro}
        for name, (prefix, keys, ro) in COMMANDS.items()
    }
    return json.dumps({"commands": commands}, indent=2, ensure_ascii=False) + "\n"


def files(test: bool = False) -> dict[str, str]:
    return {"ratelimit.lua": script(test), "manifest.json": manifest()}


def write(into: Path, test: bool = False) -> None:
    into.mkdir(parents=True, exist_ok=True)
    for name, text in files(test).items():
        (into / name).write_bytes(text.encode("utf-8"))


def stale() -> list[str]:
    """The files of dist/ that differ from what the parts make."""
    return [
        name
        for name, text in files().items()
        if not (DIST / name).exists() or (DIST / name).read_bytes() != text.encode("utf-8")
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when dist/ is not current")
    ap.add_argument("--test", metavar="DIR", help="write the test variant into DIR")
    opts = ap.parse_args()
    if opts.check:
        old = stale()
        if old:
            print(
                f"clients/lua/dist/{', '.join(old)} not current: run `make lua-dist`",
                file=sys.stderr,
            )
            return 1
        return 0
    if opts.test:
        write(Path(opts.test), test=True)
    else:
        write(DIST)
    return 0


if __name__ == "__main__":
    sys.exit(main())
