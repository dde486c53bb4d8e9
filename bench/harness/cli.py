"""The command line: options, the build, the server's lifetime, then the
report and the JSON."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import __doc__ as PACKAGE_DOC
from .aggregate import build_report
from .regimes import DATABASES, FLOOR, MODULE, QUICK_RAND_KEYS, RAND_KEYS, ROOT, BenchError
from . import instructions
from .regimes import SCRIPTS
from .report import print_instructions, print_report
from .rows import make_rows
from .servers import Server, find_binary, pinning
from .session import measure


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench", description=PACKAGE_DOC.split("\n\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="smoke mode: tiny counts, 1 repetition, 1,000 keys and random keys"
    )
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 3; 1 with --quick)")
    ap.add_argument("--seconds", type=float, default=2.0, help="target duration of one measurement (default 2)")
    ap.add_argument("--keys", type=int, default=None, help="keys for memory per key (default 100,000)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--no-build", action="store_true", help="use the existing release build")
    ap.add_argument(
        "--module",
        metavar="PATH",
        help="the module to load (default: build and load %s); nothing is built" % MODULE.relative_to(ROOT),
    )
    ap.add_argument(
        "--floor",
        metavar="PATH",
        help="the floor module (default: %s, built with the module, or next to --module's in examples/)"
        % FLOOR.relative_to(ROOT),
    )
    ap.add_argument(
        "--no-instructions",
        action="store_true",
        help="leave out the instruction counts (callgrind; taken by default when valgrind is installed)",
    )
    ap.add_argument(
        "--instructions-only",
        action="store_true",
        help="only count instructions per command under callgrind and print them (bench/profile.sh)",
    )
    ap.add_argument(
        "--lua-only",
        action="store_true",
        help="only the module, its Lua backend and the peer scripts, with the references of their ratios "
        "(no scaling, workloads, unit memory, instructions or targets)",
    )
    ap.add_argument("--top", type=int, default=0, metavar="N", help="with the counts, the N costliest functions")
    opts = ap.parse_args(argv)
    quick = opts.quick
    reps = opts.reps if opts.reps is not None else (1 if quick else 3)
    if reps < 1:
        ap.error("--reps must be at least 1")
    keys = opts.keys if opts.keys is not None else (1_000 if quick else 100_000)
    unit_sizes = [100, 1_000] if quick else [1_000, 100_000]
    slide_levels = [10, 100, 1_000] if quick else [10, 1_000, 1_000_000]
    slice_levels = [2, 60, 600] if quick else [2, 60, 1_000]
    allow_levels = [1, 4, 16]
    # Calls per command under callgrind (bench/profile.sh's figures), and
    # the warm-up calls before them in the same run of calls: more than a
    # second of calls at valgrind's pace (about 15,000 a second), so that a
    # hot RL.SLIDE log (1,000,000 per second) is as long as the calls keep
    # it, dropping as many entries as it records.
    instr_calls, instr_warm = (2_000, 500) if quick else (20_000, 40_000)

    t_start = time.monotonic()
    started_at = datetime.datetime.now(datetime.timezone.utc)

    def progress(msg):
        print("[%6.1fs] %s" % (time.monotonic() - t_start, msg), file=sys.stderr, flush=True)

    server_bin = find_binary("REDIS_SERVER", "redis-server")
    benchmark = find_binary("REDIS_BENCHMARK", "redis-benchmark")
    cell = os.environ.get("REDIS_CELL_SO")
    if cell:
        cell = str(Path(cell).resolve())
        if not os.path.exists(cell):
            raise BenchError("REDIS_CELL_SO=%s does not exist" % cell)

    module = Path(opts.module).resolve() if opts.module else MODULE
    if opts.floor:
        floor = Path(opts.floor).resolve()
    elif opts.module:
        floor = module.parent / "examples" / "libfloor.so"
    else:
        floor = FLOOR
    if not (opts.no_build or opts.module):
        progress("cargo build --release; cargo build --release --example floor")
        for extra in ([], ["--example", "floor"]):
            p = subprocess.run(
                ["cargo", "build", "--release"] + extra, cwd=ROOT, stdout=sys.stderr, stderr=sys.stderr
            )
            if p.returncode != 0:
                raise BenchError("cargo build --release %s failed" % " ".join(extra))
    if not module.exists():
        raise BenchError("%s not found" % module)
    if not floor.exists():
        raise BenchError("%s not found: cargo build --release --example floor (or pass --floor)" % floor)

    reproduce = []
    for env in ("REDIS_SERVER", "REDIS_BENCHMARK", "REDIS_CELL_SO"):
        if os.environ.get(env):
            reproduce.append("%s=%s" % (env, shlex.quote(os.environ[env])))
    reproduce.append("python3 bench")
    reproduce += [shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])]
    reproduce = " ".join(reproduce)

    modules = [str(module), str(floor)] + ([cell] if cell else [])
    settings = {
        "quick": quick,
        "reps": reps,
        "keys": keys,
        "rand_keys": QUICK_RAND_KEYS if quick else RAND_KEYS,
        "unit_sizes": unit_sizes,
        "slide_levels": slide_levels,
        "slice_levels": slice_levels,
        "allow_levels": allow_levels,
        "cell": bool(cell),
        "lua_only": opts.lua_only,
    }
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="rl-bench-") as workdir:

        def count_instructions(rows):
            if opts.no_instructions:
                return {"available": False, "reason": "left out (--no-instructions)"}
            if opts.lua_only:
                return {"available": False, "reason": "left out (--lua-only)"}
            return instructions.count(
                server_bin,
                modules,
                benchmark,
                instructions.commands_of(rows),
                instr_calls,
                instr_warm,
                workdir,
                top=opts.top,
                progress=progress,
            )

        if opts.instructions_only:
            rows = make_rows({name: "0" * 40 for name in SCRIPTS}, False)
            counts = count_instructions(rows)
            print_instructions(counts, machine, reproduce)
            return 0 if counts["available"] else 1
        server_pin, client_pin = pinning()
        machine["pinned"] = bool(server_pin)
        server = Server(server_bin, modules, workdir, wrapper=server_pin, extra=["--databases", str(DATABASES)])
        try:
            server.start()
            raw = measure(opts, server, client_pin + [benchmark], settings, progress)
        finally:
            server.stop()
        # After the throughput runs, on a server of its own.
        counts = count_instructions(raw["rows"])
        if not counts["available"]:
            progress("instructions: not counted (%s)" % counts["reason"])

    run = dict(
        settings,
        started_at=started_at,
        server_bin=server_bin,
        benchmark=benchmark,
        reproduce=reproduce,
        module=module,
        floor=floor,
        cell=cell,
        t_start=t_start,
        instructions=counts,
        machine_info=machine,
    )
    report = build_report(raw, run)
    print_report(report, run)

    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(report, f, indent=2, default=str)
    return 0


def machine_info() -> dict:
    """The CPU model and cores of this machine (Linux: /proc/cpuinfo), the
    cores this process may use and the load average at the start."""
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {
        "cpu_model": model or platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "arch": platform.machine(),
        "loadavg_at_start": load,
    }


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def run_cli() -> int:
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return main()
    except KeyboardInterrupt:
        print("interrupted; server stopped", file=sys.stderr)
        return 130
    except BenchError as e:
        print("bench: error: %s" % e, file=sys.stderr)
        return 1
