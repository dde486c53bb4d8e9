"""Memory per key and per recorded unit, module against Lua backend, by
MEMORY USAGE, on Valkey 8.1.8 (libc malloc) with a faked clock:
`python clients/conformance/measure_memory.py` (the venv of
scripts/deps.sh --test; RL_MODULE names the module if not built here).
Prints the Markdown table of clients/lua/README.md."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import FAKED_SERVER, LUA_DIR, Server, server
from redis_ratelimit_client.lua_backend import execute

T0 = datetime(2026, 3, 2, 12, 0, 0)


def fill(srv: Server, backend: str, key: str, make: Callable[[int], list[Any]], n: int, step: float) -> int:
    for i in range(n):
        at = T0 + timedelta(seconds=i * step)
        srv.set_clock(at.strftime("%Y-%m-%d %H:%M:%S.%f"))
        cmd = make(i)
        cmd[1] = key
        if backend == "module":
            run: Callable[..., Any] = srv.client.execute_command
            reply = run(*cmd)
        else:
            reply = execute(srv.client, *cmd, lua_dir=LUA_DIR, now=at.timestamp())
        assert reply[0] == 0, (cmd, reply)
    usage = srv.client.memory_usage(key, samples=0)
    assert isinstance(usage, int)
    return usage


ROWS: list[tuple[str, str, Callable[[int], list[Any]], list[int], float]] = [
    ("RL.THROTTLE", "key", lambda i: ["RL.THROTTLE", "", 1000, 1, 1], [1], 0.001),
    ("RL.SLIDE (exact)", "unit", lambda i: ["RL.SLIDE", "", 100000, 3600], [1, 100, 1000, 10000], 0.01),
    (
        "RL.SLIDE PRECISION 36 (1 %)",
        "entry",
        lambda i: ["RL.SLIDE", "", 100000, 3600, 1, "PRECISION", 36],
        [1, 100],
        36.0,
    ),
    ("RL.SLICE 60 slices", "non-empty slice", lambda i: ["RL.SLICE", "", 100000, 60, 60], [1, 30, 60], 1.0),
    ("RL.SLICE 3600 slices", "non-empty slice", lambda i: ["RL.SLICE", "", 100000, 3600, 3600], [1, 100, 1000], 1.0),
    (
        "RL.LEASE, 16-byte ids",
        "lease",
        lambda i: ["RL.LEASE", "", 100000, 3600, f"job-{i:012d}"],
        [1, 100, 1000],
        0.001,
    ),
    (
        "RL.QUOTA DAY Europe/Berlin",
        "key",
        lambda i: ["RL.QUOTA", "", 1000, "DAY", 1, "TZ", "Europe/Berlin"],
        [1],
        0.001,
    ),
]


def main() -> None:
    print("| kind | unit of growth | n | module bytes | Lua bytes | module per unit | Lua per unit |")
    print("|---|---|---|---|---|---|---|")
    with server(FAKED_SERVER, faked=True) as srv:
        for name, unit, make, counts, step in ROWS:
            base: dict[str, int] = {}
            for n in counts:
                srv.client.flushall()
                got = {b: fill(srv, b, f"rl:{b[0]}", make, n, step) for b in ("module", "lua")}
                if n == counts[0]:
                    base = got
                    per = ("", "")
                else:
                    per = tuple(f"{(got[b] - base[b]) / (n - counts[0]):.1f}" for b in ("module", "lua"))  # type: ignore[assignment]
                print(f"| {name} | {unit} | {n} | {got['module']} | {got['lua']} | {per[0]} | {per[1]} |")


if __name__ == "__main__":
    main()
