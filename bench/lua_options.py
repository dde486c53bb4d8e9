"""What this round's options cost a call of the Lua backend: each command
line's server time per EVALSHA (INFO commandstats), beside the usual call
it extends. A usual call takes a fast path; RL.CHARGE, MAXWAIT, BLOCK,
UNITS, SHADOW and a key holding a block's mark take the full code, lib()
(clients/lua/README.md, "Cost per call").

    python3 bench/lua_options.py [--server PATH] [--calls N]

Each line runs N times on a key of its own, on a redis-server started on a
free port, through clients/lua/dist's script (the server's TIME).
Needs redis-server and Python's redis package (tmp/python-client/venv)."""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "clients" / "lua" / "dist"

T = ["THROTTLE", 1000000, 1000, 1]
LINES: list[tuple[str, list[object]]] = [
    ("usual", ["RL.THROTTLE", "t1", 1000000, 1000, 1]),
    ("MAXWAIT", ["RL.THROTTLE", "t2", 1000000, 1000, 1, 1, "MAXWAIT", 10]),
    ("BLOCK, allowed", ["RL.THROTTLE", "t3", 1000000, 1000, 1, 1, "BLOCK", 10]),
    ("blocked key, refused", ["RL.THROTTLE", "t4", 0, 1, 3600, 1, "BLOCK", 3600]),
    ("RL.CHARGE", ["RL.CHARGE", "t5", *T, 1]),
    ("usual", ["RL.SLIDE", "s1", 1000000, 60]),
    ("BLOCK, allowed", ["RL.SLIDE", "s2", 1000000, 60, 1, "BLOCK", 10]),
    ("RL.CHARGE", ["RL.CHARGE", "s3", "SLIDE", 1000000, 60, 1]),
    ("usual", ["RL.ALLOW", 2, "{a}1", "{a}2", *T, *T]),
    ("UNITS", ["RL.ALLOW", 2, "{b}1", "{b}2", *T, *T, "UNITS", 5]),
    ("SHADOW", ["RL.ALLOW", 2, "{c}1", "{c}2", *T, *T, "SHADOW"]),
    ("MAXWAIT", ["RL.ALLOW", 2, "{d}1", "{d}2", *T, *T, "MAXWAIT", 10]),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keys_and_argv(line: list[object], keys: str) -> tuple[list[str], list[str]]:
    """KEYS and ARGV (after the head) of a command line, as the contract has them."""
    args = [str(a) for a in line[1:]]
    if keys == "numkeys":
        n = int(args[0])
        return args[1 : 1 + n], [args[0], *args[1 + n :]]
    return args[:1], args[1:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default="redis-server")
    ap.add_argument("--calls", type=int, default=2000)
    opts = ap.parse_args()
    server = shutil.which(opts.server) or opts.server
    manifest = json.loads((DIST / "manifest.json").read_text())["commands"]
    body = (DIST / "ratelimit.lua").read_bytes()
    version = subprocess.run([server, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"The Lua backend's script, {version}, {opts.calls} calls each, {time.strftime('%Y-%m-%d')}")
    print("(`python3 bench/lua_options.py`):\n")
    print("| command | call | server µs per EVALSHA |")
    print("|---|---|---|")
    port = free_port()
    work = tempfile.mkdtemp(prefix="rl-lua-options-")
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", work],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        r = redis.Redis(port=port)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        for label, line in LINES:
            entry = manifest[str(line[0])]
            source = entry["prefix"].encode() + body
            sha = hashlib.sha1(source).hexdigest()
            r.script_load(source)
            keys, argv = keys_and_argv(line, entry["keys"])
            if label == "blocked key, refused":
                # One allowed, one refused: the key is blocked for an hour.
                for _ in range(2):
                    r.evalsha(sha, len(keys), *keys, "", *argv)
            r.config_resetstat()
            for _ in range(opts.calls):
                reply = r.evalsha(sha, len(keys), *keys, "", *argv)
                assert isinstance(reply, list), reply
            want = 1 if label == "blocked key, refused" else 0
            assert reply[0] == want, (label, line, reply)
            stats = r.info("commandstats")["cmdstat_evalsha"]
            print(f"| {line[0]} | {label} | {float(stats['usec_per_call']):,.1f} |")
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
