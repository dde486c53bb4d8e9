"""Instructions per call of the Lua backend's scripts beside the peer
scripts doing the same job and beside the floors: scripts that make the
backend's server calls and nothing else (bench/lua/floors/), called with
the backend's arguments, which they do not read. A floor above its peer
shows that no script making those calls can be as fast as the peer; a
floor below it bounds what the backend's own Lua work may cost. RL.SLIDE
also has its hot path alone (bench/lua/floors/slide_hot.lua): the
backend's work on its list layout for this call and no other, in one
straight block, what that layout costs at best.

    python3 bench/lua_floors.py [--calls N] [--warm N] [--server PATH]

Each script runs on one hot key with the throughput benchmark's hot-key
limit (1,000,000 units per second; RL.SLICE 60 slices, RL.LEASE one lease
renewed with a ttl of 1 s), `redis-benchmark -c 1 -P 16`, in a
redis-server under valgrind's callgrind that has every script of the
table loaded, with `hz 1`: the server's timer work runs by the clock, and
callgrind slows the calls down, so at the default hz 10 it would add
thousands of instructions to each call, more the busier the machine. A
count is the server's total after the warm-up and N calls, less its total
after the warm-up alone (each in a server of its own): what N calls cost,
the garbage collector's share included. Needs valgrind, redis-server and redis-benchmark
(scripts/deps.sh --test; REDIS_SERVER and REDIS_BENCHMARK name others, as
for the benchmark)."""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Run as `python3 bench/lua_floors.py`: the harness package beside it.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.instructions import summary
from harness.regimes import BenchError
from harness.resp import Client
from harness.servers import Server, find_binary

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "bench" / "lua"
FLOORS = PEERS / "floors"
BACKEND = ROOT / "clients" / "lua"
KEY = "b:hot"
LEASE = "lease-0000000001"  # the benchmark's lease id

# (command, peer script and its arguments, the backend's arguments: the
# head, empty (the script reads TIME), then the module's), the key aside.
# RL.THROTTLE twice: at 1,000,000 a second a hot key's state ends 1 µs
# after each call, so the key is gone at many calls (callgrind slows them
# down); at 1,000,000 per 1,000 s its TAT runs ahead, and every call reads
# and writes the state.
KINDS = [
    ("RL.THROTTLE", "gcra", ["1000000", "1000000", "1000"], ["", "999999", "1000000", "1"]),
    ("RL.THROTTLE, state kept", "gcra", ["1000000", "1000000", "1000000"], ["", "999999", "1000000", "1000"]),
    ("RL.SLIDE", "zset_log", ["1000000", "1000"], ["", "1000000", "1"]),
    ("RL.QUOTA", "fixed_window", ["1000000", "1000"], ["", "3600000000", "hour"]),
    ("RL.SLICE", "hash_slices", ["1000000", "1000", "60"], ["", "1000000", "1", "60"]),
    ("RL.LEASE", "zset_semaphore", ["1000000", "1000", LEASE], ["", "1000000", "1", LEASE]),
]


def backend_source(kind: str) -> str:
    """The shipped script of a command: its manifest prefix, then
    clients/lua/dist/ratelimit.lua."""
    manifest = json.loads((BACKEND / "dist" / "manifest.json").read_text())["commands"]
    return manifest[kind.split(",")[0]]["prefix"] + (BACKEND / "dist" / "ratelimit.lua").read_text()


def total(server: str, benchmark: str, sources: list, script: int, args: list, calls: int, workdir: str) -> int:
    """The instructions a redis-server under callgrind runs in all, with
    every one of `sources` loaded and `calls` calls of sources[script]."""
    run = tempfile.mkdtemp(dir=workdir)
    out = os.path.join(run, "callgrind.out")
    srv = Server(
        server,
        [],
        run,
        wrapper=["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out],
        start_timeout_s=120,
        extra=["--hz", "1"],
    )
    srv.start()
    try:
        con = Client(srv.port, timeout=120)
        try:
            for src in sources:
                con.call("SCRIPT", "LOAD", src)
            sha = hashlib.sha1(sources[script].encode()).hexdigest()
            if calls:
                bench = [benchmark, "-p", str(srv.port), "-c", "1", "-P", "16", "-q", "-n", str(calls)]
                done = subprocess.run(
                    bench + ["EVALSHA", sha, "1", KEY] + args, check=False, capture_output=True, text=True
                )
                if done.returncode != 0:
                    said = (done.stderr.strip() or done.stdout.strip())[-500:]
                    raise BenchError(f"redis-benchmark exited with {done.returncode}: {said}")
                con.call("EVALSHA", sha, "1", KEY, *args)  # raises on an error reply
        finally:
            con.close()
    finally:
        srv.stop()
    return summary(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=3000, help="calls counted per script (default 3,000)")
    ap.add_argument("--warm", type=int, default=500, help="calls before the count (default 500)")
    ap.add_argument("--server", default="redis-server", help="the server (default: $REDIS_SERVER, else redis-server)")
    opts = ap.parse_args()
    try:
        server = find_binary("REDIS_SERVER", opts.server)
        benchmark = find_binary("REDIS_BENCHMARK", "redis-benchmark")
    except BenchError as e:
        print(e, file=sys.stderr)
        return 1
    if not shutil.which("valgrind"):
        print("valgrind not found: apt-get install valgrind", file=sys.stderr)
        return 1
    version = subprocess.run([server, "--version"], check=False, capture_output=True, text=True).stdout.strip()
    # Every script in every server: the heap the garbage collector walks is
    # the same for all of them.
    names, sources, argv = [], [], []
    for kind, peer, peer_args, be_args in KINDS:
        stem = kind[3:].split(",")[0].lower()
        for label, src, args in (
            ("peer: " + peer, (PEERS / (peer + ".lua")).read_text(), peer_args),
            ("backend: " + kind.split(",")[0], backend_source(kind), be_args),
            ("floor: its calls alone", (FLOORS / (stem + ".lua")).read_text(), be_args),
            *(
                [("hot path alone, one block", (FLOORS / (stem + "_hot.lua")).read_text(), be_args)]
                if (FLOORS / (stem + "_hot.lua")).exists()
                else []
            ),
        ):
            names.append((kind, label))
            sources.append(src)
            argv.append(args)
    counts = {}
    with tempfile.TemporaryDirectory(prefix="rl-floors-") as workdir:
        jobs = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
            for i in range(len(sources)):
                for n in (opts.warm, opts.warm + opts.calls):
                    jobs[(i, n)] = pool.submit(total, server, benchmark, sources, i, argv[i], n, workdir)
            for (i, n), job in jobs.items():
                try:
                    counts[(i, n)] = job.result()
                except BenchError as e:
                    print(f"{names[i][0]}, {names[i][1]}: {e}", file=sys.stderr)
                    pool.shutdown(cancel_futures=True)
                    return 1
    print(
        f"Instructions per call, hot key (1,000,000 per second), {version}, {opts.calls:,} calls after {opts.warm:,},"
    )
    print(f"{datetime.date.today().isoformat()} (`python3 bench/lua_floors.py`):\n")
    print("| command | script | instructions per call | peer's count / this one |")
    print("|---|---|---|---|")
    peer_count = 0.0
    for i, (kind, label) in enumerate(names):
        per_call = (counts[(i, opts.warm + opts.calls)] - counts[(i, opts.warm)]) / opts.calls
        if label.startswith("peer"):
            peer_count = per_call
        print(f"| {kind} | {label} | {per_call:,.0f} | {peer_count / per_call:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
