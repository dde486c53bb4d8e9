"""What one RL.LEASE call of the Lua backend costs as the leases held grow
(clients/lua/README.md: a call reads the whole key, HGETALL, so its cost is
O(leases held); the module's is O(log held)).

    python3 bench/lua_lease_scale.py [--server PATH] [--calls N]

For each count held (10, 1,000, 10,000), a redis-server on a free port
gets one RL.LEASE key holding that many leases of a long ttl, written in
the scripts' own layout (field L, then #id = expiry µs|units per lease:
granting them one by one through the scripts would itself take O(n^2)),
then, through clients/lua/dist's script: one call that reads the whole
key (the key has no field H yet, as one written by older scripts: the
call migrates it; the same path as a call that finds an expired lease),
N renewals of one lease and N grants of new ids; the wall time per call
is printed with the server's own usec_per_call for EVALSHA (INFO
commandstats).
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
    source = manifest["RL.LEASE"]["prefix"].encode() + (DIST / "ratelimit.lua").read_bytes()
    sha = hashlib.sha1(source).hexdigest()
    version = subprocess.run([server, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"RL.LEASE through the Lua backend's script, {version}, {opts.calls} calls each, {time.strftime('%Y-%m-%d')}")
    print("(`python3 bench/lua_lease_scale.py`):\n")
    print(
        "| leases held | full read (migration), µs (server) | renewal, µs per call (wall) | server µs per EVALSHA "
        "| new grant, µs per call (wall) | server µs per EVALSHA |"
    )
    print("|---|---|---|---|---|---|")
    for held in (10, 1000, 10000):
        port = free_port()
        work = tempfile.mkdtemp(prefix="rl-lease-scale-")
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
            sec, usec = r.time()
            exp = (sec + 86400) * 1_000_000 + usec
            fields = {"L": "1"}
            for i in range(held):
                fields[f"#lease-{i:08d}"] = f"{exp}|1"
            pipe = r.pipeline(transaction=False)
            items = list(fields.items())
            for i in range(0, len(items), 1000):
                pipe.hset("k", mapping=dict(items[i : i + 1000]))
            pipe.pexpireat("k", exp // 1000 + 1)
            pipe.execute()
            limit = str(held + 2 * opts.calls + 10)
            row = [f"{held:,}"]
            r.config_resetstat()
            reply = r.evalsha(sha, 1, "k", "", limit, "86400", "lease-00000001")
            assert reply[0] == 0 and r.hget("k", "H") is not None, reply
            row.append(f"{float(r.info('commandstats')['cmdstat_evalsha']['usec_per_call']):,.0f}")
            for label, ident in (("renew", lambda i: "lease-00000000"), ("grant", lambda i: f"new-{i:08d}")):
                r.config_resetstat()
                start = time.perf_counter()
                for i in range(opts.calls):
                    reply = r.evalsha(sha, 1, "k", "", limit, "86400", ident(i))
                    assert reply[0] == 0, (label, reply)
                wall = (time.perf_counter() - start) / opts.calls * 1e6
                stats = r.info("commandstats").get("cmdstat_evalsha", {})
                row += [f"{wall:,.0f}", f"{float(stats.get('usec_per_call', 0)):,.1f}"]
            print("| " + " | ".join(row) + " |")
        finally:
            proc.terminate()
            proc.wait(10)
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
