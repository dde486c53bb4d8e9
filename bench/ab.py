#!/usr/bin/env python3
"""A/B of two builds of the module: server CPU per call of one command,
measured on two redis-servers side by side, one per build, in interleaved
repetitions. Standard library only (and the benchmark's RESP client, bench/harness/resp.py).

    python3 bench/ab.py --a tmp/before.so --b target/release/libredis_ratelimit.so \\
        --cmd 'RL.SLIDE b:s:__rand_int__ 10000 10000000' -r 100000 -n 2000000 -P 16 --reps 5

Each server runs pinned to one core (`--server-core`, default 0) and
`redis-benchmark` to another (`--client-core`, default 1), so the client
does not take the server's CPU. Before the repetitions, with `-r`, the
command is called once on every key `__rand_int__` can become (000000000000
to the `-r` bound, pipelined), so no measurement pays for creating a key;
the keys keep their state from one repetition to the next, identically on
both servers. A repetition runs the command on both servers, alternating
which goes first. Per run it reports:

- `cpu_us`: server CPU per call, the delta of INFO cpu's `used_cpu_user +
  used_cpu_sys` over the calls INFO commandstats counted (the steadier
  figure on a shared machine: it does not include the client's time);
- `usec_per_call`: INFO commandstats' figure for the command (reset before
  each run: time inside the command only);
- `rps`: redis-benchmark's throughput.

Then the medians and the median of the per-repetition ratios B / A (below
1: B spends less). `--memory CMD --memory-calls N` also calls CMD (a key
of its own) N times on each server and reports MEMORY USAGE per call: for a
command that records one unit per call, bytes per unit. `--extra-module`
loads another module into both servers (e.g. the floor, for FLOOR.KEEP).
`--cmd-b` gives B a command of its own (e.g. A: FLOOR.KEEP, B: RL.SLIDE,
both servers loading the same modules), for a ratio of two commands
measured the same way. `--json PATH` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.resp import Client, ReplyError, encode  # noqa: E402
from harness.runner import csv_rps  # noqa: E402
from harness.servers import free_port  # noqa: E402

RAND = "__rand_int__"


class Pinned:
    """A redis-server on a free loopback port, pinned to one core, loading
    `modules`; persistence off."""

    def __init__(self, binary: str, core: int, modules, workdir: str, name: str):
        self.port = free_port()
        log = os.path.join(workdir, "%s-%d.log" % (name, self.port))
        cmd = ["taskset", "-c", str(core), binary, "--port", str(self.port), "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--dir", workdir, "--logfile", log]
        for so in modules:
            cmd += ["--loadmodule", so]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.con = Client(self.port)
                if self.con.call("PING") == "PONG":
                    return
            except (OSError, ReplyError, ConnectionError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit("ab.py: redis-server did not start, see %s" % log)
            time.sleep(0.05)

    def cpu(self) -> float:
        i = self.con.info("cpu")
        return float(i["used_cpu_user"]) + float(i["used_cpu_sys"])

    def cmdstat(self, name: str) -> dict:
        stats = {k.lower(): v for k, v in self.con.info("commandstats").items()}
        line = stats.get("cmdstat_" + name.lower(), "")
        return {k: float(v) for k, v in (f.split("=") for f in line.split(",") if "=" in f)}

    def stop(self):
        try:
            self.con.sock.sendall(encode(["SHUTDOWN", "NOSAVE"]))
            self.con.close()
        except (OSError, AttributeError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def prefill(server: Pinned, args, keys: int) -> None:
    """Calls `args` once per value `__rand_int__` takes with `-r keys`
    (the 12-digit numbers redis-benchmark writes)."""
    template = encode(args)
    commands = [template.replace(RAND.encode(), b"%012d" % i) for i in range(keys)]
    errors = [r for r in server.con.pipeline_encoded(commands) if isinstance(r, ReplyError)]
    if errors:
        sys.exit("ab.py: %d errors creating the keys, first: %s" % (len(errors), errors[0]))


def run(server: Pinned, opts, args) -> dict:
    cmd = ["taskset", "-c", str(opts.client_core), opts.benchmark, "-h", "127.0.0.1",
           "-p", str(server.port), "-c", str(opts.clients), "-n", str(opts.n), "-P", str(opts.pipeline),
           "--csv"]
    if opts.r:
        cmd += ["-r", str(opts.r)]
    cmd += args
    server.con.call("CONFIG", "RESETSTAT")
    cpu0 = server.cpu()
    p = subprocess.run(cmd, capture_output=True, text=True)
    cpu1 = server.cpu()
    stat = server.cmdstat(args[0])
    rps = csv_rps(p.stdout)
    if p.returncode != 0 or rps is None:
        sys.exit("ab.py: redis-benchmark failed: %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    calls = stat.get("calls", 0) or opts.n
    return {
        "cpu_us": (cpu1 - cpu0) * 1e6 / calls,
        "usec_per_call": stat.get("usec_per_call"),
        "rps": rps,
        "calls": calls,
        "failed": stat.get("failed_calls", 0) + stat.get("rejected_calls", 0),
    }


def memory(server: Pinned, args, calls: int) -> dict:
    key = args[1]
    server.con.call("DEL", key)
    replies = server.con.pipeline([args] * calls)
    allowed = sum(1 for r in replies if isinstance(r, list) and r and r[0] == 0)
    usage = server.con.call("MEMORY", "USAGE", key)
    return {"calls": calls, "allowed": allowed, "memory_usage": usage, "bytes_per_call": usage / calls}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="module A (.so), e.g. the build before a change")
    ap.add_argument("--b", required=True, help="module B (.so)")
    ap.add_argument("--cmd", required=True, help="the command, as redis-benchmark takes it")
    ap.add_argument("--cmd-b", help="B's command, if not the same")
    ap.add_argument("--extra-module", action="append", default=[], help="loaded into both servers")
    ap.add_argument("-n", type=int, default=2_000_000, help="calls per run (default 2,000,000)")
    ap.add_argument("-r", type=int, default=0, help="random keys: redis-benchmark -r (0: none)")
    ap.add_argument("-P", dest="pipeline", type=int, default=16, help="pipeline depth (default 16)")
    ap.add_argument("-c", dest="clients", type=int, default=50, help="clients (default 50)")
    ap.add_argument("--reps", type=int, default=5, help="interleaved repetitions (default 5)")
    ap.add_argument("--server-core", type=int, default=0)
    ap.add_argument("--client-core", type=int, default=1)
    ap.add_argument("--no-prefill", action="store_true", help="do not create the random keys first")
    ap.add_argument("--memory", help="a command on one key: MEMORY USAGE after --memory-calls calls")
    ap.add_argument("--memory-calls", type=int, default=100_000)
    ap.add_argument("--json", help="write every figure here")
    opts = ap.parse_args()
    opts.server = shutil.which(os.environ.get("REDIS_SERVER", "redis-server"))
    opts.benchmark = shutil.which(os.environ.get("REDIS_BENCHMARK", "redis-benchmark"))
    if not (opts.server and opts.benchmark and shutil.which("taskset")):
        sys.exit("ab.py: needs redis-server, redis-benchmark and taskset")
    commands = {"A": shlex.split(opts.cmd), "B": shlex.split(opts.cmd_b or opts.cmd)}
    builds = {"A": os.path.abspath(opts.a), "B": os.path.abspath(opts.b)}
    workdir = tempfile.mkdtemp(prefix="ab-")
    servers = {}
    report = {"cmd": opts.cmd, "cmd_b": opts.cmd_b or opts.cmd, "builds": builds, "n": opts.n, "r": opts.r, "P": opts.pipeline, "runs": []}
    try:
        for name, so in builds.items():
            servers[name] = Pinned(opts.server, opts.server_core, [so] + [os.path.abspath(m) for m in opts.extra_module], workdir, name)
        if opts.memory:
            for name, s in servers.items():
                m = memory(s, shlex.split(opts.memory), opts.memory_calls)
                report["memory_" + name] = m
                print("memory %s: %s" % (name, m), flush=True)
        if opts.r and not opts.no_prefill:
            for name, s in servers.items():
                prefill(s, commands[name], opts.r)
        print("%4s %5s %10s %14s %12s" % ("rep", "build", "cpu_us", "usec_per_call", "rps"), flush=True)
        for rep in range(opts.reps):
            order = ["A", "B"] if rep % 2 == 0 else ["B", "A"]
            row = {}
            for name in order:
                row[name] = run(servers[name], opts, commands[name])
                r = row[name]
                print("%4d %5s %10.3f %14.2f %12.0f" % (rep, name, r["cpu_us"], r["usec_per_call"] or 0, r["rps"]),
                      flush=True)
            report["runs"].append(row)
    finally:
        for s in servers.values():
            s.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    runs = report["runs"]
    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else float("nan")

    summary = {}
    for field in ("cpu_us", "usec_per_call", "rps"):
        a = [r["A"][field] for r in runs]
        b = [r["B"][field] for r in runs]
        ratios = [y / x for x, y in zip(a, b) if x and y is not None]
        summary[field] = {"A": med(a), "B": med(b), "B/A": med(ratios),
                          "B/A range": [min(ratios), max(ratios)] if ratios else None}
    report["summary"] = summary
    print("\nmedians over %d repetitions (B/A: median of the per-repetition ratios)" % len(runs))
    for field, s in summary.items():
        lo, hi = s["B/A range"] or (float("nan"), float("nan"))
        print("%-14s A %10.3f  B %10.3f  B/A %.3f  (%.3f to %.3f)" % (field, s["A"], s["B"], s["B/A"], lo, hi))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
