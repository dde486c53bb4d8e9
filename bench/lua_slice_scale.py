"""What one RL.SLICE call of the Lua backend costs as the non-empty slices
held grow (clients/lua/README.md: a call reads the key's header, the slice
of now and the slices that leave by name, not the whole key; a key of the
older layout, or a limited call, reads it whole).

    python3 bench/lua_slice_scale.py [--server PATH] [--calls N]

For each count held (10, 1,000, 10,000), a redis-server on a free port
gets one RL.SLICE key of a 20,000 s window in 20,000 slices (slice j is
Unix second j) holding one unit in each of that many slices up to now,
written in the scripts' own layout (writing them through the scripts
would take that many seconds), its header first of the older form
(window|slices|head), then, through clients/lua/dist's script: one call
that reads the whole key and migrates it; N calls in the slice of now;
N calls each of which finds the head one slice behind, so that one slice
leaves (the header is set back before each, outside the count); the wall
time per call is printed with the server's own usec_per_call for EVALSHA
(INFO commandstats).
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
WINDOW, SLICES = 20000, 20000
W_US = WINDOW * 1_000_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default="redis-server")
    ap.add_argument("--calls", type=int, default=200)
    opts = ap.parse_args()
    server = shutil.which(opts.server) or opts.server
    manifest = json.loads((DIST / "manifest.json").read_text())["commands"]
    source = manifest["RL.SLICE"]["prefix"].encode() + (DIST / "ratelimit.lua").read_bytes()
    sha = hashlib.sha1(source).hexdigest()
    version = subprocess.run([server, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"RL.SLICE through the Lua backend's script, {version}, {opts.calls} calls each, {time.strftime('%Y-%m-%d')}")
    print("(`python3 bench/lua_slice_scale.py`):\n")
    print(
        "| slices held | full read (migration), µs (server) | slice of now, µs per call (wall) | server µs per EVALSHA "
        "| one slice leaves, µs per call (wall) | server µs per EVALSHA |"
    )
    print("|---|---|---|---|---|---|")
    args = ["4000000000", str(WINDOW), str(SLICES)]
    for held in (10, 1000, 10000):
        port = free_port()
        work = tempfile.mkdtemp(prefix="rl-slice-scale-")
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
            r.script_load(source)
            idx = int(r.time()[0])
            fields = {"S": f"{W_US}|{SLICES}|{idx}"}
            for j in range(idx - held + 1, idx + 1):
                fields[str(j)] = "1"
            pipe = r.pipeline(transaction=False)
            items = list(fields.items())
            for i in range(0, len(items), 1000):
                pipe.hset("k", mapping=dict(items[i : i + 1000]))
            pipe.pexpireat("k", (idx + WINDOW + 2) * 1000)
            pipe.execute()
            row = [f"{held:,}"]
            r.config_resetstat()
            reply = r.evalsha(sha, 1, "k", "", *args)
            header = r.hget("k", "S")
            assert reply[0] == 0 and header is not None and header.count(b"|") == 4, (reply, header)
            row.append(f"{float(r.info('commandstats')['cmdstat_evalsha']['usec_per_call']):,.0f}")
            # The slice of now.
            r.config_resetstat()
            start = time.perf_counter()
            for _ in range(opts.calls):
                reply = r.evalsha(sha, 1, "k", "", *args)
                assert reply[0] == 0, reply
            wall = (time.perf_counter() - start) / opts.calls * 1e6
            stats = r.info("commandstats").get("cmdstat_evalsha", {})
            row += [f"{wall:,.0f}", f"{float(stats.get('usec_per_call', 0)):,.1f}"]
            # One slice leaves: the head set one slice behind now, the slice
            # that then leaves the window put back, the total kept right.
            spent, server_us, n = 0.0, 0.0, 0
            for _ in range(opts.calls):
                now = int(r.time()[0])
                _, _, _, total, count = (int(x) for x in r.hget("k", "S").split(b"|"))
                pipe = r.pipeline(transaction=False)
                pipe.hdel("k", str(now))
                pipe.hset("k", mapping={"S": f"{W_US}|{SLICES}|{now - 1}|{total + 1}|{count + 1}", str(now - 1 - SLICES): "1"})
                pipe.execute()
                r.config_resetstat()
                start = time.perf_counter()
                reply = r.evalsha(sha, 1, "k", "", *args)
                spent += time.perf_counter() - start
                assert reply[0] == 0, reply
                server_us += float(r.info("commandstats")["cmdstat_evalsha"]["usec_per_call"])
                n += 1
            row += [f"{spent / n * 1e6:,.0f}", f"{server_us / n:,.1f}"]
            print("| " + " | ".join(row) + " |")
        finally:
            proc.terminate()
            proc.wait(10)
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
