#!/usr/bin/env python3
"""Side-by-side benchmark: the module's commands against INCR and the Lua
scripts people use today. Standard library only.

    python3 scripts/bench.py                 # the full run (about 9 minutes on 2 cores)
    python3 scripts/bench.py --quick         # a smoke run (tiny counts, about 30 s)
    python3 scripts/bench.py --json out.json # also write the results as JSON
    python3 scripts/bench.py --module PATH   # benchmark this .so, build nothing
    python3 scripts/bench.py --floor PATH    # the floor module (examples/floor.rs)

It builds the release module (not with `--module` or `--no-build`), starts
its own redis-server on a free 127.0.0.1 port (`$REDIS_SERVER`, default `redis-server` on PATH; `--save ""
--appendonly no`), loads the module (and redis-cell when `$REDIS_CELL_SO`
names its .so, adding a CL.THROTTLE row), drives it with `redis-benchmark`
(`$REDIS_BENCHMARK`, default on PATH), prints Markdown tables and always
stops the server. Nothing but 127.0.0.1 is contacted.

What each part measures
-----------------------

Two references. INCR, Redis's own per-command cost on the same keys; and
the floor: FLOOR.THROTTLE from examples/floor.rs, a module command with
RL.THROTTLE's arguments and five-integer reply that opens its key and
decides nothing, the least any module limiter with this interface can cost.
Every row is reported as a ratio to both, measured in the same repetition.
A third row, FLOOR.KEEP, also keeps state the way a limiter must (a value
per key, its expiry read and moved out on every call, WATCH told): what a
command costs beyond it is its own parsing, deciding and replying.

Throughput: five regimes, each row in each, 50 clients (the ids are the
JSON keys `throughput.<regime>`, in the order they run):

- `hot_P16` and `hot_P1`: one hot key per row, `b:<row>:hot`, pipelined
  (-P 16: mostly the server's cost per command) and not (-P 1: mostly round
  trips). Every limiter gets 1,000,000 units per 1 s, quantity 1
  (THROUGHPUT_LIMIT / THROUGHPUT_WINDOW_S; RL.THROTTLE capacity 1,000,000 =
  max_burst 999,999 and 1,000,000 per second; the scripts get the same
  figures in ms). That is far above what one key receives here, so
  practically every call is *allowed* and does its full write path (read,
  decide, store, set the expiry, replicate): the path that costs the most
  and the one comparable to INCR, which always writes.
- `rand_P16` and `rand_P1`, "100k keys, kept state": 100,000 random keys
  per row, `b:<row>:__rand_int__` with `-r 100000`, and a limit under
  which every key keeps its state between its calls, as INCR's counters
  do: 10,000 units per 10,000,000 s (KEPT_LIMIT / KEPT_WINDOW_S). So these
  regimes measure what INCR measures, a key's state updated. RL.THROTTLE,
  the GCRA and the token bucket scripts (and CL.THROTTLE): capacity 10,000
  (max_burst 9,999) and one unit back per 1,000 s (T = period / count); a
  key expires when it is full again, so it lives at least 1,000 s after
  each of its calls, and 1,000 s more for each call it received: longer
  than any gap between two calls of a key (at most about a repetition,
  under three minutes at the defaults). RL.SLIDE and the sorted-set log:
  units counted for 10,000,000 s, so the log holds one entry per call (a
  few dozen per key by the end, at the defaults), as a sliding log under a
  long window does. RL.SLICE and the hash of slices: 60 slices of
  166,667 s. The fixed window: one window of 10,000,000 s from a key's
  first call.
  RL.ALLOW: the three limits on three keys, `{b:rl_allow:__rand_int__}:t`,
  `:l` and `:s`, each number drawn on its own by redis-benchmark, so each
  of the 300,000 keys gets as many calls as another row's key. INCR's keys
  have no expiry. FLOOR.THROTTLE creates nothing. FLOOR.KEEP sets its
  key's expiry to one minute after the call whatever the arguments
  (examples/floor.rs), shorter than a repetition: its keys are created
  just before each of its runs in these regimes and deleted right after,
  outside the measurement. Before the calibration, each other row's
  command is called once on each of its keys, `b:<row>:000000000000` to
  `b:<row>:000000099999` (what `__rand_int__` becomes with `-r 100000`),
  pipelined over a raw socket, so no measurement pays for creating a key;
  the two regimes share these keys, and since none of them expires during
  the benchmark, no row pays for another's expirations. Every call stays
  allowed: from the request counts, a key's calls over the creation, the
  calibration and all repetitions are bounded before the repetitions
  (mean + 10 x sqrt(mean) + 10, Poisson; about 30 calls on average and a
  bound near 90 at the defaults) and the benchmark stops if the bound
  exceeds half the limit; after the repetitions every key of every row is
  checked to exist and peeked (quantity 0; RL.PEEK for RL.ALLOW), and the
  most used key must have units left (`kept_check` and `kept_state` of
  each row in the JSON). Every row's keys share database 0 (1.3 million
  keys in all), so INCR itself runs slower here than on the churn regime's
  emptied database: compare ratios within a regime, not requests per
  second across regimes.
- `rand_churn_P16`, "100k keys, state emptied between calls": the hot-key
  limit, 1,000,000 per 1 s, on 100,000 random keys, -P 16: what the
  random-key regime measured before the two above existed. A GCRA key is
  empty 1 us after a call (T = period / count) and expires about 1 ms
  later, while each key comes back every ~0.2 s: practically every
  RL.THROTTLE call finds its key expired, deletes it and creates a new one
  (398,423 expirations in 400,000 calls, measured when this was the only
  random-key regime; RL.SLICE: about 109,000), a cost INCR's keys never
  pay. This regime shows that cost on its own: it runs in database 1
  (`--dbnum 1`), emptied with FLUSHDB SYNC before and after each run,
  calibration included, so no row pays for another row's leftover keys
  (when every row ran in one keyspace without flushing, the 100,000 keys a
  row left behind were deleted by the active expire cycle during the next
  rows' runs: 32,538 expirations during one INCR run), and it reports the
  keys that expired during each run (INFO stats `expired_keys`, before and
  after) per call, next to the ratio.

Every run records its expirations; in the other regimes they are a
handful (hot keys and limit-check keys of earlier steps), reported in
total. Each repetition runs every row once per regime, in order
(interleaved), so slow phases of a shared machine hit all rows alike; each
row's throughput is divided by INCR's (and the floor's) in the same
repetition and regime, and the median of those ratios is reported next to
the median requests per second. The ratios are the figures that count. The
request count per measurement is chosen from a short calibration run so
that each takes about `--seconds` (default 2 s). The server's own CPU time
per command (INFO cpu) is recorded as well.

RL.ALLOW against the three single calls. Server CPU per call (INFO cpu),
hot keys, -P 16, per repetition: the RL.ALLOW row (THROTTLE + SLIDE + SLICE
on three keys) divided by the sum of the three single commands' rows. Next
to it FLOOR.ALLOW (examples/floor.rs: RL.ALLOW's arguments and
seven-element reply, three keys kept with an expiry, nothing parsed or
decided), run once per repetition after the regimes, and the least any
RL.ALLOW of these limits can cost: FLOOR.ALLOW plus, for each single
command, its CPU beyond FLOOR.KEEP's (its interface keeping one key):
parsing its numbers, deciding, recording, which RL.ALLOW does for each of
its limits too. (That sum counts the singles' per-call overhead, the
command's context, clock read and replication call, three times where
RL.ALLOW pays it once: about 200 instructions each, under 0.01 of the
ratio.)

Memory per key. For every row with a key: FLUSHALL, then the row's command
once on each of `--keys` (default 100,000) distinct keys `rl:<12 digits>`,
pipelined over a raw socket, with limit 100 per 3,600 s (so nothing expires
during the measurement); DBSIZE is checked and (used_memory after - before)
/ keys reported. This includes the key name, the server's dictionary entry
and bucket, and the expiry entry when the row sets one.

Memory per recorded unit: one RL.SLIDE key and one sorted-set-script key,
limit 1,000,000 per 3,600 s (UNIT_LIMIT, RL.SLIDE's default maximum), each
filled with N admitted units, one call per
unit (N = 1,000 and 100,000); MEMORY USAGE key SAMPLES 0, divided by N. The
marginal cost, (usage at 100,000 - usage at 1,000) / 99,000, leaves out the
fixed per-key overhead; both raw figures are printed too.

Memory with PRECISION (RL.SLIDE's adaptive entries): limit 1,000,000 per
3,600 s with PRECISION 36 (1% of the window). (a) 100,000 single-unit calls,
pipelined (a second or two of real time, within 36 s: one entry), next to
the same calls without the option; (b) the issue's "100,000 units over a
minute", scaled down 100 times so that it takes under a second: window
36,000 ms, PRECISION 360 ms, 100 calls of 1,000 units every 6 ms (about the
window's sixtieth). Entries (RL.INSPECT) and MEMORY USAGE key SAMPLES 0.

Memory at 60 slices: one RL.SLICE key and one hash-script key, limit
1,000,000 per 1,200 ms in 60 slices of 20 ms, both called every ~4 ms for
1.3 s of real time, so that all slices of the window hold units (HLEN of the
hash shows how many fields it holds); then MEMORY USAGE of each key.

Scaling. RL.SLIDE on a hot key with limit 10, 1,000 and 100,000 in a
3,600 s window: each key is first filled with `limit` admitted units (one
call per unit), so its log is full; the benchmark then calls it with
quantity 1, every call is limited (it must find when the oldest unit
leaves) and the log stays full. RL.SLICE on a hot key with 10, 600 and 3,600
slices, limit 1,000,000,000 per 1 s: every call is allowed and, at thousands
of calls per second, every slice of the window holds units while slices roll
over continuously (one every 278 us at 3,600 slices). Both at -P 16, 50
clients, interleaved in each repetition; ratio = throughput at the largest
setting / at the smallest, per repetition, median.

The module against the scripts. Each module command next to the Lua
script doing the same job (RL.THROTTLE: the GCRA and the token bucket
scripts; RL.SLIDE: the sorted-set log; RL.SLICE: the hash of slices; the
fixed window has no counterpart among the commands): its throughput divided
by the script's in the same repetition and regime, median over the
repetitions. Above 1 the module is faster.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import math
import os
import platform
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "bench"
MODULE = ROOT / "target" / "release" / "libredis_ratelimit.so"
FLOOR = ROOT / "target" / "release" / "examples" / "libfloor.so"

CLIENTS = 50
RAND_KEYS = 100_000
# redis-benchmark's placeholder: with `-r N` each occurrence is replaced by a
# number drawn below N (each occurrence its own), written as 12 zero-padded
# digits.
RAND = "__rand_int__"
# The keys of a regime: "hot" (one per row), "kept" (100k random keys created
# before the calibration, state kept between calls) or "churn" (100k random
# keys in CHURN_DB, emptied before and after each run, state emptied between
# a key's calls).
REGIMES = [
    # (id, title, pipeline, keys)
    ("hot_P16", "hot key, -P 16", 16, "hot"),
    ("rand_P16", "100k keys, kept state, -P 16", 16, "kept"),
    ("rand_churn_P16", "100k keys, state emptied between calls, -P 16", 16, "churn"),
    ("hot_P1", "hot key, -P 1", 1, "hot"),
    ("rand_P1", "100k keys, kept state, -P 1", 1, "kept"),
]
CHURN_DB = 1

# Throughput, hot keys and churn: 1,000,000 units per 1 s. Kept state:
# 10,000 units per 10,000,000 s. Memory: 100 units per 3,600 s.
THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S = 1_000_000, 1
KEPT_LIMIT, KEPT_WINDOW_S = 10_000, 10_000_000
# The kept-state regimes stop before they start if a key's calls could
# reach this share of KEPT_LIMIT.
KEPT_MARGIN = 0.5
MEMORY_LIMIT, MEMORY_WINDOW_S = 100, 3600
SLICES = 60
# Memory per recorded unit: a key of this limit (RL.SLIDE's default maximum).
UNIT_LIMIT = 1_000_000

SCRIPTS = ["zset_log", "hash_slices", "token_bucket", "gcra", "fixed_window"]
# Each module command and the scripts that do the same job.
SAME_JOB = [
    ("RL.THROTTLE", "lua:gcra"),
    ("RL.THROTTLE", "lua:token_bucket"),
    ("RL.SLIDE", "lua:zset_log"),
    ("RL.SLICE", "lua:hash_slices"),
]
SCRIPT_TITLES = {
    "zset_log": "sorted-set sliding log",
    "hash_slices": "hash of 60 time slices",
    "token_bucket": "hash token bucket",
    "gcra": "GCRA (redis_rate style)",
    "fixed_window": "INCR+EXPIRE fixed window",
}
RL_COMMANDS = ["RL.THROTTLE", "RL.SLIDE", "RL.SLICE"]
# RL.ALLOW deciding the three single commands' limits at once.
ALLOW_PARTS = ["RL.THROTTLE", "RL.SLIDE", "RL.SLICE"]
# RL.ALLOW's interface deciding nothing (examples/floor.rs): its three keys
# kept with an expiry, RL.ALLOW's seven-element reply. Measured next to the
# RL.ALLOW row on hot keys, -P 16, in every repetition.
FLOOR_ALLOW = [
    "FLOOR.ALLOW", "3", "{b:floor_allow}:t", "{b:floor_allow}:l", "{b:floor_allow}:s",
    "THROTTLE", str(THROUGHPUT_LIMIT - 1), str(THROUGHPUT_LIMIT), str(THROUGHPUT_WINDOW_S),
    "SLIDE", str(THROUGHPUT_LIMIT), str(THROUGHPUT_WINDOW_S),
    "SLICE", str(THROUGHPUT_LIMIT), str(THROUGHPUT_WINDOW_S), str(SLICES),
]


class BenchError(Exception):
    pass


# --------------------------------------------------------------------------
# A small RESP2 client over a raw socket, with pipelining.


class ReplyError(Exception):
    pass


def encode(args) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Client:
    def __init__(self, port: int, timeout: float = 60.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")

    def close(self):
        try:
            self.reader.close()
            self.sock.close()
        except OSError:
            pass

    def _read(self):
        return self._value(self.reader.readline())

    def _value(self, line):
        """The reply whose first line is `line`."""
        if not line:
            raise ConnectionError("connection closed by the server")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ReplyError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.reader.read(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            if n < 0:
                return None
            # Integer elements (the limiters' replies) parsed in place.
            readline, out = self.reader.readline, []
            for _ in range(n):
                item = readline()
                out.append(int(item[1:-2]) if item[:1] == b":" else self._value(item))
            return out
        raise BenchError("unexpected RESP reply: %r" % line)

    def pipeline(self, commands, batch: int = 500):
        """Sends the commands in batches; returns the replies (errors as
        ReplyError values, not raised)."""
        return self.pipeline_encoded([encode(c) for c in commands], batch)

    def pipeline_encoded(self, commands, batch: int = 500):
        """`pipeline` of commands already encoded. The next batch is sent
        before the replies to this one are read, so that the server works
        while they are parsed."""
        replies = []
        chunks = [commands[i : i + batch] for i in range(0, len(commands), batch)]
        if chunks:
            self.sock.sendall(b"".join(chunks[0]))
        for i, chunk in enumerate(chunks):
            if i + 1 < len(chunks):
                self.sock.sendall(b"".join(chunks[i + 1]))
            replies.extend(self._read() for _ in chunk)
        return replies

    def call(self, *args):
        reply = self.pipeline([args])[0]
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    def info(self, section: str) -> dict:
        text = self.call("INFO", section)
        fields = {}
        for line in text.decode().splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                fields[k] = v
        return fields


# --------------------------------------------------------------------------
# The rows.


class Row:
    """One command of the comparison. `args(key, limit, window_s)` gives its
    command line for a limiter of `limit` units per `window_s` seconds."""

    def __init__(
        self, name, title, build, limiter=True, script=None, keys_per_call=1, five=True, keeps=True, expiry_s=None
    ):
        self.name = name
        self.title = title
        self.build = build
        self.limiter = limiter
        self.script = script
        # Keys one call writes (0: none); memory per key needs exactly 1.
        self.keys_per_call = keys_per_call
        # The reply starts with the five fields (RL.ALLOW adds two more).
        self.five = five
        # A call leaves state on its key(s) (PING and FLOOR.THROTTLE do not).
        self.keeps = keeps
        # The state's lifetime after a call when the arguments do not set it.
        self.expiry_s = expiry_s
        self.id = name.replace("lua:", "").replace("RL.", "rl_").replace("CL.", "cl_").lower()

    def args(self, key, limit, window_s, slices=SLICES):
        return [str(a) for a in self.build(key, limit, window_s, slices)]

    def peek_args(self, key, limit, window_s):
        """The same limit, peeked (quantity 0; RL.PEEK for RL.ALLOW)."""
        args = self.args(key, limit, window_s)
        if args[0] == "RL.ALLOW":
            return ["RL.PEEK"] + args[1:]
        return args + ["0"]


def make_rows(shas: dict, with_cell: bool):
    rows = [
        Row("PING", "PING (no key)", lambda k, l, w, s: ["PING"], limiter=False, keys_per_call=0, keeps=False),
        Row("INCR", "INCR (the baseline)", lambda k, l, w, s: ["INCR", k], limiter=False),
        Row(
            "FLOOR.THROTTLE",
            "floor: no-op module command",
            lambda k, l, w, s: ["FLOOR.THROTTLE", k, l - 1, l, w],
            limiter=False,
            keys_per_call=0,
            keeps=False,
        ),
        Row(
            "FLOOR.KEEP",
            "floor keeping state with an expiry",
            lambda k, l, w, s: ["FLOOR.KEEP", k, l - 1, l, w],
            limiter=False,
            keys_per_call=0,
            # examples/floor.rs: one minute after the call, whatever the limit.
            expiry_s=60,
        ),
        Row("RL.THROTTLE", "RL.THROTTLE (GCRA)", lambda k, l, w, s: ["RL.THROTTLE", k, l - 1, l, w]),
        Row("RL.SLIDE", "RL.SLIDE (exact log)", lambda k, l, w, s: ["RL.SLIDE", k, l, w]),
        Row("RL.SLICE", "RL.SLICE (60 slices)", lambda k, l, w, s: ["RL.SLICE", k, l, w, s]),
        Row(
            "RL.ALLOW",
            "RL.ALLOW (the three above at once)",
            lambda k, l, w, s: [
                "RL.ALLOW", 3, "{%s}:t" % k, "{%s}:l" % k, "{%s}:s" % k,
                "THROTTLE", l - 1, l, w, "SLIDE", l, w, "SLICE", l, w, s,
            ],
            keys_per_call=3,
            five=False,
        ),
    ]
    lua_args = {
        "zset_log": lambda l, w, s: [l, w * 1000],
        "hash_slices": lambda l, w, s: [l, w * 1000, s],
        "token_bucket": lambda l, w, s: [l, w * 1000],
        "gcra": lambda l, w, s: [l, l, w * 1000],
        "fixed_window": lambda l, w, s: [l, w * 1000],
    }
    for name in SCRIPTS:
        sha, extra = shas[name], lua_args[name]
        rows.append(
            Row(
                "lua:" + name,
                "Lua: " + SCRIPT_TITLES[name],
                (lambda sha, extra: lambda k, l, w, s: ["EVALSHA", sha, 1, k] + extra(l, w, s))(sha, extra),
                script=name,
            )
        )
    if with_cell:
        rows.append(
            Row("CL.THROTTLE", "CL.THROTTLE (redis-cell)", lambda k, l, w, s: ["CL.THROTTLE", k, l - 1, l, w])
        )
    return rows


def display_args(row: Row, limit, window_s, key="KEY") -> str:
    args = row.args(key, limit, window_s)
    if row.script:
        args = ["EVALSHA", "<%s.lua>" % row.script] + args[2:]
    return " ".join(args)


# --------------------------------------------------------------------------
# The server.


def find_binary(env: str, default: str) -> str:
    name = os.environ.get(env, default)
    path = shutil.which(name)
    if not path:
        raise BenchError(
            "%s not found (set $%s or install it; on Debian: apt-get install redis-server redis-tools)"
            % (name, env)
        )
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary: str, modules, workdir: str):
        self.binary, self.modules, self.workdir = binary, modules, workdir
        self.proc = None
        self.port = None

    def start(self):
        for attempt in range(3):
            self.port = free_port()
            log = os.path.join(self.workdir, "redis-%d.log" % self.port)
            cmd = [
                self.binary,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", self.workdir,
                "--logfile", log,
            ]
            for so in self.modules:
                cmd += ["--loadmodule", so]
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    c = Client(self.port, timeout=2)
                    try:
                        if c.call("PING") == "PONG":
                            return c
                    finally:
                        c.close()
                except (OSError, ReplyError, ConnectionError):
                    time.sleep(0.05)
            tail = ""
            try:
                with open(log) as f:
                    tail = "".join(f.readlines()[-15:])
            except OSError:
                pass
            self.stop()
            if attempt == 2:
                raise BenchError("redis-server did not start:\n" + tail)

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                c = Client(self.port, timeout=2)
                c.sock.sendall(encode(["SHUTDOWN", "NOSAVE"]))
                c.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


# --------------------------------------------------------------------------
# Measurements.


class Bench:
    def __init__(self, opts, server: Server, benchmark: str):
        self.opts = opts
        self.server = server
        self.benchmark = benchmark
        self.con = Client(server.port)

    def cpu_seconds(self) -> float:
        i = self.con.info("cpu")
        return float(i["used_cpu_user"]) + float(i["used_cpu_sys"])

    def errors_and_expired(self):
        stats = self.con.info("stats")
        return int(stats.get("total_error_replies", 0)), int(stats.get("expired_keys", 0))

    def run(self, args, n: int, pipeline: int, rand: bool, db: int = 0) -> dict:
        """One redis-benchmark run; returns rps, server CPU per command, the
        number of error replies the server sent and of keys that expired
        meanwhile (in any database)."""
        cmd = [
            self.benchmark,
            "-h", "127.0.0.1",
            "-p", str(self.server.port),
            "-c", str(CLIENTS),
            "-n", str(n),
            "-P", str(pipeline),
            "--csv",
        ]
        if rand:
            cmd += ["-r", str(RAND_KEYS)]
        if db:
            cmd += ["--dbnum", str(db)]
        cmd += args
        (err0, exp0), cpu0 = self.errors_and_expired(), self.cpu_seconds()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(60, n / 2000))
        except subprocess.TimeoutExpired:
            raise BenchError("redis-benchmark timed out: " + " ".join(cmd))
        cpu1, (err1, exp1) = self.cpu_seconds(), self.errors_and_expired()
        rps = None
        for rec in csv.reader(io.StringIO(p.stdout)):
            if len(rec) >= 2 and rec[0] != "test":
                try:
                    rps = float(rec[1])
                except ValueError:
                    pass
        if p.returncode != 0 or rps is None:
            raise BenchError(
                "redis-benchmark failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout, p.stderr)
            )
        return {
            "n": n,
            "rps": rps,
            "server_cpu_us_per_cmd": (cpu1 - cpu0) * 1e6 / n,
            "errors": err1 - err0,
            "expired": exp1 - exp0,
            "expired_per_call": (exp1 - exp0) / n,
        }


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def check_limits(con: Client, row: Row) -> str:
    """A limiter of 3 units per 10 s must allow 3 calls on a fresh key, then
    limit; the reply must be five integers. Returns "ok" or what went wrong."""
    key = "b:check:" + row.id
    replies = con.pipeline([row.args(key, 3, 10) for _ in range(5)])
    if not row.five:
        # A seven-element reply: the binding limit's five fields first.
        replies = [r[:5] if isinstance(r, list) and len(r) == 7 else r for r in replies]
    for r in replies:
        if isinstance(r, ReplyError):
            return "error: %s" % r
        if not (isinstance(r, list) and len(r) == 5 and all(isinstance(x, int) for x in r)):
            return "unexpected reply: %r" % (r,)
    flags = [r[0] for r in replies]
    if flags != [0, 0, 0, 1, 1]:
        return "limited flags %s, expected [0, 0, 0, 1, 1]" % flags
    if [r[2] for r in replies[:3]] != [2, 1, 0] or replies[3][3] <= 0:
        return "remaining/retry_after wrong: %r" % (replies,)
    return "ok"


def fill_keys(port: int, commands, encoded: bool = False) -> list:
    """Runs the commands pipelined on a connection of its own, closed before
    returning so that its buffers are not counted."""
    c = Client(port)
    try:
        return c.pipeline_encoded(commands) if encoded else c.pipeline(commands)
    finally:
        c.close()


def rand_commands(args) -> list:
    """The command `args` encoded once for each of the RAND_KEYS numbers
    `-r RAND_KEYS` draws from, 000000000000 to 000000099999, each
    placeholder replaced by the number (both are 12 characters long, so
    the encoded lengths stay right)."""
    template = encode(args)
    return [template.replace(RAND.encode(), b"%012d" % i) for i in range(RAND_KEYS)]


def rand_key_names(args) -> list:
    """Every key name the random-key command `args` can touch."""
    names = []
    for a in args:
        if RAND in a:
            names += [a.replace(RAND, "%012d" % i) for i in range(RAND_KEYS)]
    return names


def create_rand_keys(port: int, row: Row, args) -> None:
    """Calls `args` once on each random key (creating its state); every call
    must be allowed."""
    replies = fill_keys(port, rand_commands(args), encoded=True)
    bad = [r for r in replies if isinstance(r, ReplyError) or (isinstance(r, list) and r[0] != 0)]
    if bad:
        raise BenchError(
            "%s: %d of %d calls creating its random keys failed or were limited, first: %r"
            % (row.name, len(bad), len(replies), bad[0])
        )


def kept_state_check(b: Bench, row: Row, args, peek) -> dict:
    """After the kept-state regimes: every random key of the row still
    exists and (limiters) every one peeked has units left, so every call of
    the benchmark was allowed. Returns the figures and "check"."""
    names = rand_key_names(args)
    out = {"keys": len(names), "present": b.con.call("EXISTS", *names)}
    problems = []
    if out["present"] != out["keys"]:
        problems.append("%d of %d keys present" % (out["present"], out["keys"]))
    if peek is not None:
        used, errors = [], []
        for r in fill_keys(b.server.port, rand_commands(peek), encoded=True):
            if isinstance(r, ReplyError) or not (isinstance(r, list) and len(r) >= 5):
                errors.append(r)
            else:
                used.append(r[1] - r[2])
        out["limit"] = KEPT_LIMIT
        out["max_used"] = max(used) if used else None
        if errors:
            problems.append("%d peeks failed, first: %r" % (len(errors), errors[0]))
        if used and max(used) >= KEPT_LIMIT:
            problems.append("a key used %d of %d units" % (max(used), KEPT_LIMIT))
    out["check"] = "; ".join(problems) or "ok"
    return out


def used_memory(con: Client) -> int:
    return int(con.info("memory")["used_memory"])


def allowed_count(replies) -> int:
    n = 0
    for r in replies:
        if isinstance(r, ReplyError):
            raise BenchError("error reply while filling: %s" % r)
        if isinstance(r, list) and r and r[0] == 0:
            n += 1
    return n


def memory_per_key(b: Bench, row: Row, keys: int) -> dict:
    con = b.con
    con.call("FLUSHALL", "SYNC")
    time.sleep(0.05)
    before = used_memory(con)
    cmds = [row.args("rl:%012d" % i, MEMORY_LIMIT, MEMORY_WINDOW_S) for i in range(keys)]
    replies = fill_keys(b.server.port, cmds)
    errors = [r for r in replies if isinstance(r, ReplyError)]
    time.sleep(0.05)
    after = used_memory(con)
    dbsize = con.call("DBSIZE")
    expiring = int(con.info("keyspace").get("db0", "expires=0").split("expires=")[1].split(",")[0]) if dbsize else 0
    result = {
        "keys": keys,
        "dbsize": dbsize,
        "with_expiry": expiring,
        "bytes_per_key": (after - before) / keys,
        "errors": len(errors),
    }
    if errors:
        result["first_error"] = str(errors[0])
    return result


def memory_per_unit(b: Bench, rows: dict, sizes) -> dict:
    con = b.con
    limit = UNIT_LIMIT
    out = {"limit": limit, "window_s": 3600, "sizes": {}}
    for n in sizes:
        con.call("FLUSHALL", "SYNC")
        entry = {}
        for name in ("RL.SLIDE", "lua:zset_log"):
            row = rows[name]
            key = "u:%s" % row.id
            replies = fill_keys(b.server.port, [row.args(key, limit, 3600) for _ in range(n)])
            admitted = allowed_count(replies)
            usage = con.call("MEMORY", "USAGE", key, "SAMPLES", "0")
            entry[name] = {
                "units": admitted,
                "memory_usage": usage,
                "bytes_per_unit": usage / admitted if usage and admitted else None,
            }
            if name == "lua:zset_log":
                entry[name]["zcard"] = con.call("ZCARD", key)
        out["sizes"][str(n)] = entry
    lo, hi = str(min(sizes)), str(max(sizes))
    for name in ("RL.SLIDE", "lua:zset_log"):
        a, z = out["sizes"][lo][name], out["sizes"][hi][name]
        if a["memory_usage"] and z["memory_usage"] and z["units"] > a["units"]:
            out.setdefault("marginal_bytes_per_unit", {})[name] = (z["memory_usage"] - a["memory_usage"]) / (
                z["units"] - a["units"]
            )
    return out


def inspect_field(con: Client, key: str, name: str):
    fields = con.call("RL.INSPECT", key)
    for i in range(0, len(fields) - 1, 2):
        if fields[i] in (name, name.encode()):
            return fields[i + 1]
    return None


def memory_precision(b: Bench, units: int) -> dict:
    """RL.SLIDE with and without PRECISION on a high-limit key (see the
    module doc of this script)."""
    con = b.con
    con.call("FLUSHALL", "SYNC")
    out = {"limit": UNIT_LIMIT, "window_s": 3600, "precision_s": 36, "units": units}
    for key, option in (("p:prec", ["PRECISION", 36]), ("p:exact", [])):
        replies = fill_keys(b.server.port, [["RL.SLIDE", key, UNIT_LIMIT, 3600] + option for _ in range(units)])
        out[key] = {
            "admitted": allowed_count(replies),
            "entries": inspect_field(con, key, "entries"),
            "memory_usage": con.call("MEMORY", "USAGE", key, "SAMPLES", "0"),
        }
    start = time.monotonic()
    calls = 100
    for _ in range(calls):
        r = con.call("RL.SLIDE", "p:minute", UNIT_LIMIT, 36000, 1000, "MS", "PRECISION", 360)
        if isinstance(r, ReplyError) or r[0] != 0:
            raise BenchError("precision minute: %s" % r)
        time.sleep(0.006)
    out["scaled_minute"] = {
        "window_ms": 36000,
        "precision_ms": 360,
        "calls": calls,
        "units_per_call": 1000,
        "span_ms": (time.monotonic() - start) * 1000,
        "units": inspect_field(con, "p:minute", "units"),
        "entries": inspect_field(con, "p:minute", "entries"),
        "memory_usage": con.call("MEMORY", "USAGE", "p:minute", "SAMPLES", "0"),
    }
    return out


def memory_slices(b: Bench, rows: dict) -> dict:
    """Fills every slice of a 60-slice window of 1,200 ms (20 ms slices) by
    calling both limiters every ~4 ms for 1.3 s, then reads MEMORY USAGE."""
    con = b.con
    con.call("FLUSHALL", "SYNC")
    window_ms, limit = 1200, 1_000_000
    rl = ["RL.SLICE", "s:rl", limit, window_ms, SLICES, 1, "MS"]
    lua = rows["lua:hash_slices"].args("s:lua", limit, 1)  # window 1 s; fixed below
    lua[-2] = str(window_ms)  # EVALSHA sha 1 key limit window_ms slices
    calls = 0
    start = time.monotonic()
    while time.monotonic() - start < (window_ms + 100) / 1000:
        for r in con.pipeline([rl, lua]):
            if isinstance(r, ReplyError):
                raise BenchError("error while filling slices: %s" % r)
        calls += 1
        time.sleep(0.004)
    return {
        "window_ms": window_ms,
        "slices": SLICES,
        "calls_each": calls,
        "RL.SLICE": {"memory_usage": con.call("MEMORY", "USAGE", "s:rl", "SAMPLES", "0")},
        "lua:hash_slices": {
            "memory_usage": con.call("MEMORY", "USAGE", "s:lua", "SAMPLES", "0"),
            "fields": con.call("HLEN", "s:lua"),
        },
    }


# --------------------------------------------------------------------------
# Output.


def fmt_rps(x):
    return "-" if x is None else "{:,.0f}".format(x)


def fmt_ratio(x):
    return "-" if x is None else "%.2fx" % x


def fmt_num(x, digits=1):
    return "-" if x is None else "{:,.{d}f}".format(x, d=digits)


def markdown_table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke mode: tiny counts, 1 repetition, 1,000 keys")
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
    opts = ap.parse_args(argv)
    quick = opts.quick
    reps = opts.reps if opts.reps is not None else (1 if quick else 3)
    if reps < 1:
        ap.error("--reps must be at least 1")
    keys = opts.keys if opts.keys is not None else (1_000 if quick else 100_000)
    unit_sizes = [100, 1_000] if quick else [1_000, 100_000]
    slide_levels = [10, 100, 1_000] if quick else [10, 1_000, 100_000]
    slice_levels = [10, 60, 600] if quick else [10, 600, 3_600]

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
    reproduce.append("python3 scripts/bench.py")
    reproduce += [shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])]
    reproduce = " ".join(reproduce)

    modules = [str(module), str(floor)] + ([cell] if cell else [])
    with tempfile.TemporaryDirectory(prefix="rl-bench-") as workdir:
        server = Server(server_bin, modules, workdir)
        try:
            server.start()
            b = Bench(opts, server, benchmark)
            version = b.con.info("server")["redis_version"]
            shas = {}
            for name in SCRIPTS:
                shas[name] = b.con.call("SCRIPT", "LOAD", (BENCH_DIR / (name + ".lua")).read_bytes()).decode()
            rows = make_rows(shas, bool(cell))
            by_name = {r.name: r for r in rows}

            checks = {r.name: check_limits(b.con, r) for r in rows if r.limiter}
            for name, res in checks.items():
                if res != "ok":
                    progress("WARNING: %s does not limit as expected: %s" % (name, res))

            def row_cmd(row, keys):
                if keys == "hot":
                    return row.args("b:%s:hot" % row.id, THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S)
                if keys == "kept":
                    return row.args("b:%s:%s" % (row.id, RAND), KEPT_LIMIT, KEPT_WINDOW_S)
                return row.args("b:%s:%s" % (row.id, RAND), THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S)

            # The churn regime's database, emptied before and after each run.
            churn = Client(server.port)
            churn.call("SELECT", str(CHURN_DB))

            def measure(regime, row, n):
                """One run of `row` in `regime`, with what the regime's keys
                need before and after it (outside the measurement)."""
                _, _, pipe, keys = regime
                args = row_cmd(row, keys)
                if keys == "churn":
                    churn.call("FLUSHDB", "SYNC")
                elif keys == "kept" and row.expiry_s:
                    # Keys that would expire before the row's next run (and
                    # during other rows' runs): created now, deleted after.
                    create_rand_keys(server.port, row, args)
                res = b.run(args, n, pipe, keys != "hot", CHURN_DB if keys == "churn" else 0)
                if keys == "churn":
                    churn.call("FLUSHDB", "SYNC")
                elif keys == "kept" and row.expiry_s:
                    names = rand_key_names(args)
                    res["keys_present"] = b.con.call("EXISTS", *names)
                    b.con.call("DEL", *names)
                return res

            # Scaling setups: SLIDE logs pre-filled to their limit.
            scaling = []
            for level in slide_levels:
                key = "b:scale:slide:%d" % level
                cmd = ["RL.SLIDE", key, str(level), "3600"]
                admitted = allowed_count(fill_keys(server.port, [cmd] * level))
                peek = b.con.call("RL.SLIDE", key, str(level), "3600", "0")
                scaling.append(
                    {"family": "RL.SLIDE", "level": level, "cmd": cmd, "prefilled": admitted, "remaining_after_fill": peek[2]}
                )
            for level in slice_levels:
                key = "b:scale:slice:%d" % level
                cmd = ["RL.SLICE", key, "1000000000", "1", str(level)]
                scaling.append({"family": "RL.SLICE", "level": level, "cmd": cmd})

            # The kept-state regimes' keys, created once (see the docstring).
            progress("creating %s random keys per row for the kept-state regimes" % "{:,}".format(RAND_KEYS))
            for row in rows:
                if row.keeps and not row.expiry_s:
                    create_rand_keys(server.port, row, row_cmd(row, "kept"))

            # Request counts: fixed in quick mode, else from a calibration run.
            def calibration_n(pipe):
                return 0 if quick else (40_000 if pipe > 1 else 5_000)

            n_for = {}
            if quick:
                for rg in REGIMES:
                    for row in rows:
                        n_for[(rg[0], row.name)] = 2_000
                for s in scaling:
                    n_for[("scale", s["family"], s["level"])] = 2_000
                n_for["floor_allow"] = 2_000
            else:
                progress("calibrating request counts for %.1f s per measurement" % opts.seconds)
                for regime in REGIMES:
                    for row in rows:
                        res = measure(regime, row, calibration_n(regime[2]))
                        n = int(res["rps"] * opts.seconds) // 1000 * 1000
                        n_for[(regime[0], row.name)] = min(max(n, 20_000), 10_000_000)
                for s in scaling:
                    res = b.run(s["cmd"], 40_000, 16, False)
                    n = int(res["rps"] * opts.seconds) // 1000 * 1000
                    n_for[("scale", s["family"], s["level"])] = min(max(n, 20_000), 10_000_000)
                res = b.run(FLOOR_ALLOW, 40_000, 16, False)
                n = int(res["rps"] * opts.seconds) // 1000 * 1000
                n_for["floor_allow"] = min(max(n, 20_000), 10_000_000)

            # The most calls a kept-state key can get, creation, calibration
            # and repetitions together: each call of a run draws its key
            # uniformly from RAND_KEYS, so a key's calls are Poisson with
            # the mean below; the bound is 10 standard deviations above.
            kept_bounds = {}
            for row in rows:
                if not row.limiter:
                    continue
                calls = RAND_KEYS + sum(
                    calibration_n(pipe) + reps * n_for[(rg_id, row.name)]
                    for rg_id, _, pipe, keys in REGIMES
                    if keys == "kept"
                )
                mean = calls / RAND_KEYS
                bound = mean + 10 * math.sqrt(mean) + 10
                kept_bounds[row.name] = {"calls": calls, "mean_calls_per_key": mean, "bound_calls_per_key": bound}
                if bound > KEPT_MARGIN * KEPT_LIMIT:
                    raise BenchError(
                        "%s: a kept-state key could get %.0f calls, more than %.0f%% of the limit %d: "
                        "lower --seconds or --reps" % (row.name, bound, KEPT_MARGIN * 100, KEPT_LIMIT)
                    )

            results = {(rg[0], r.name): [] for rg in REGIMES for r in rows}
            scale_results = {(s["family"], s["level"]): [] for s in scaling}
            floor_allow_results = []
            for rep in range(reps):
                progress("repetition %d of %d" % (rep + 1, reps))
                for regime in REGIMES:
                    for row in rows:
                        res = measure(regime, row, n_for[(regime[0], row.name)])
                        res["rep"] = rep
                        results[(regime[0], row.name)].append(res)
                for s in scaling:
                    res = b.run(s["cmd"], n_for[("scale", s["family"], s["level"])], 16, False)
                    res["rep"] = rep
                    scale_results[(s["family"], s["level"])].append(res)
                res = b.run(FLOOR_ALLOW, n_for["floor_allow"], 16, False)
                res["rep"] = rep
                floor_allow_results.append(res)

            # Every kept-state key still there, every call allowed.
            progress("checking the kept-state keys")
            kept_checks = {}
            for row in rows:
                if not row.keeps:
                    continue
                args = row_cmd(row, "kept")
                if row.expiry_s:
                    expected = RAND_KEYS * sum(RAND in a for a in args)
                    present = [
                        r["keys_present"] for rg in REGIMES if rg[3] == "kept" for r in results[(rg[0], row.name)]
                    ]
                    bad = [x for x in present if x != expected]
                    kept_checks[row.name] = {
                        "keys": expected,
                        "present_after_each_run": present,
                        "check": "%d of %d keys present after a run" % (bad[0], expected) if bad else "ok",
                    }
                else:
                    peek = row.peek_args("b:%s:%s" % (row.id, RAND), KEPT_LIMIT, KEPT_WINDOW_S) if row.limiter else None
                    kept_checks[row.name] = kept_state_check(b, row, args, peek)
                if kept_checks[row.name]["check"] != "ok":
                    progress("WARNING: %s kept-state keys: %s" % (row.name, kept_checks[row.name]["check"]))
            churn.close()

            progress("memory: %d keys per row" % keys)
            mem = {}
            for row in rows:
                if row.keys_per_call != 1:
                    continue
                mem[row.name] = memory_per_key(b, row, keys)
            progress("memory: per recorded unit at %s units" % unit_sizes)
            per_unit = memory_per_unit(b, by_name, unit_sizes)
            progress("memory: RL.SLIDE with PRECISION")
            precision = memory_precision(b, max(unit_sizes))
            progress("memory: 60 slices")
            slices60 = memory_slices(b, by_name)
            b.con.close()
        finally:
            server.stop()

    total = time.monotonic() - t_start

    # ---- Aggregate.
    out_rows = []
    for row in rows:
        entry = {
            "name": row.name,
            "title": row.title,
            "command": display_args(row, THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S),
            "command_kept": display_args(row, KEPT_LIMIT, KEPT_WINDOW_S),
            "limit_check": checks.get(row.name, "n/a"),
            "kept_check": kept_checks[row.name]["check"] if row.name in kept_checks else "n/a",
            "kept_state": dict(kept_checks.get(row.name, {}), **kept_bounds.get(row.name, {})) or None,
            "throughput": {},
            "memory": mem.get(row.name),
            "bytes_per_key": mem[row.name]["bytes_per_key"] if row.name in mem else None,
        }
        for rg_id, _, _, _ in REGIMES:
            runs = results[(rg_id, row.name)]
            base = results[(rg_id, "INCR")]
            ratios = [r["rps"] / i["rps"] for r, i in zip(runs, base)]
            floor_ratios = [r["rps"] / f["rps"] for r, f in zip(runs, results[(rg_id, "FLOOR.THROTTLE")])]
            entry["throughput"][rg_id] = {
                "rps_median": median([r["rps"] for r in runs]),
                "ratio_to_incr_median": median(ratios),
                "ratio_to_floor_median": median(floor_ratios),
                "floor_ratios": floor_ratios,
                "server_cpu_us_per_cmd_median": median([r["server_cpu_us_per_cmd"] for r in runs]),
                "errors": sum(r["errors"] for r in runs),
                "expired": sum(r["expired"] for r in runs),
                "expired_per_call_median": median([r["expired_per_call"] for r in runs]),
                "runs": runs,
                "ratios": ratios,
            }
        out_rows.append(entry)
    # Expirations during the runs on kept-state keys: a handful, of keys
    # other steps left (hot keys, limit checks), where churn had one a call.
    kept_runs = [r for rg in REGIMES if rg[3] == "kept" for row in rows for r in results[(rg[0], row.name)]]
    kept_expired = {"expired": sum(r["expired"] for r in kept_runs), "calls": sum(r["n"] for r in kept_runs)}

    scale_out = {}
    for family, levels in (("RL.SLIDE", slide_levels), ("RL.SLICE", slice_levels)):
        lo, hi = scale_results[(family, min(levels))], scale_results[(family, max(levels))]
        ratios = [h["rps"] / l["rps"] for h, l in zip(hi, lo)]
        scale_out[family] = {
            "levels": {
                str(lv): {
                    "rps_median": median([r["rps"] for r in scale_results[(family, lv)]]),
                    "server_cpu_us_per_cmd_median": median(
                        [r["server_cpu_us_per_cmd"] for r in scale_results[(family, lv)]]
                    ),
                    "errors": sum(r["errors"] for r in scale_results[(family, lv)]),
                    "runs": scale_results[(family, lv)],
                    "setup": next(s for s in scaling if s["family"] == family and s["level"] == lv),
                }
                for lv in levels
            },
            "largest_over_smallest_ratios": ratios,
            "largest_over_smallest_median": median(ratios),
        }

    # ---- RL.ALLOW of three limits against the three single calls: server
    # CPU per call, hot keys, -P 16, per repetition.
    allow_cpu = [r["server_cpu_us_per_cmd"] for r in results[("hot_P16", "RL.ALLOW")]]
    parts_cpu = [
        sum(x)
        for x in zip(*[[r["server_cpu_us_per_cmd"] for r in results[("hot_P16", name)]] for name in ALLOW_PARTS])
    ]
    allow_ratios = [a / p for a, p in zip(allow_cpu, parts_cpu) if p]
    # The least any RL.ALLOW of these three limits can cost: FLOOR.ALLOW
    # (its interface, three keys kept, the reply) plus what each single
    # command costs beyond FLOOR.KEEP (its interface, one key kept): parsing
    # its numbers, deciding, recording, the values of its reply. RL.ALLOW
    # must do all of that for each of its limits.
    floor_allow_cpu = [r["server_cpu_us_per_cmd"] for r in floor_allow_results]
    keep_cpu = [r["server_cpu_us_per_cmd"] for r in results[("hot_P16", "FLOOR.KEEP")]]
    bound_cpu = [f + p - len(ALLOW_PARTS) * k for f, p, k in zip(floor_allow_cpu, parts_cpu, keep_cpu)]
    allow_out = {
        "allow_cpu_us_per_call": allow_cpu,
        "singles_cpu_us_sum": parts_cpu,
        "ratios": allow_ratios,
        "ratio_median": median(allow_ratios),
        "floor_allow_cpu_us_per_call": floor_allow_cpu,
        "floor_allow_ratios": [f / p for f, p in zip(floor_allow_cpu, parts_cpu) if p],
        "floor_allow_runs": floor_allow_results,
        "bound_cpu_us_per_call": bound_cpu,
        "bound_ratios": [b_ / p for b_, p in zip(bound_cpu, parts_cpu) if p],
    }

    # ---- The module against the script doing the same job.
    row_by = {e["name"]: e for e in out_rows}
    same_job = []
    for command, script in SAME_JOB:
        pair = {"command": command, "script": script, "ratio_median": {}, "ratios": {}}
        for rg_id, _, _, _ in REGIMES:
            ours = row_by[command]["throughput"][rg_id]["runs"]
            theirs = row_by[script]["throughput"][rg_id]["runs"]
            ratios = [o["rps"] / t["rps"] for o, t in zip(ours, theirs)]
            pair["ratios"][rg_id] = ratios
            pair["ratio_median"][rg_id] = median(ratios)
        same_job.append(pair)

    report = {
        "date": started_at.isoformat(timespec="seconds"),
        "redis_version": version,
        "server_binary": server_bin,
        "redis_benchmark": benchmark,
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "reproduce": reproduce,
        "quick": quick,
        "reps": reps,
        "clients": CLIENTS,
        "random_keys": RAND_KEYS,
        "regimes": [
            {
                "id": rg_id,
                "title": title,
                "pipeline": pipe,
                "keys": keys,
                "random_keys": RAND_KEYS if keys != "hot" else 1,
                "db": CHURN_DB if keys == "churn" else 0,
                "limit": KEPT_LIMIT if keys == "kept" else THROUGHPUT_LIMIT,
                "window_s": KEPT_WINDOW_S if keys == "kept" else THROUGHPUT_WINDOW_S,
            }
            for rg_id, title, pipe, keys in REGIMES
        ],
        "throughput_params": {
            "limit": THROUGHPUT_LIMIT,
            "window_s": THROUGHPUT_WINDOW_S,
            "kept_limit": KEPT_LIMIT,
            "kept_window_s": KEPT_WINDOW_S,
            "quantity": 1,
        },
        "kept_state": {
            "limit": KEPT_LIMIT,
            "window_s": KEPT_WINDOW_S,
            "margin": KEPT_MARGIN,
            "expired_during_runs": kept_expired["expired"],
            "calls": kept_expired["calls"],
        },
        "memory_params": {"limit": MEMORY_LIMIT, "window_s": MEMORY_WINDOW_S, "keys": keys},
        "rows": out_rows,
        "memory_per_unit": per_unit,
        "memory_slices60": slices60,
        "memory_precision": precision,
        "scaling": scale_out,
        "same_job": same_job,
        "allow_vs_singles": allow_out,
        "total_seconds": None,
    }

    # ---- Print.
    p = print
    p("# redis-ratelimit: side-by-side benchmark%s" % (" (QUICK smoke run: figures not meaningful)" if quick else ""))
    p()
    p("- date: %s" % report["date"])
    p(
        "- server: redis %s (%s), module %s, floor %s%s"
        % (version, server_bin, module, floor, ", redis-cell " + cell if cell else "")
    )
    p("- CPUs: %s (%s); the client (redis-benchmark) and the server share them" % (os.cpu_count(), platform.machine()))
    p("- reproduce, from the repository root: `%s`" % reproduce)
    p(
        "- %d repetitions, rows interleaved; medians; ratio = row / INCR in the same repetition, "
        "median of the ratios (the figures that count on a shared machine; the range over the repetitions "
        "follows in parentheses); %d clients" % (reps, CLIENTS)
    )
    p()
    p(
        "## Throughput: requests per second, ratio to INCR and to the floor\n\n"
        "The floor is FLOOR.THROTTLE (examples/floor.rs): RL.THROTTLE's arguments and reply, opens its key, "
        "decides nothing. Hot key: `b:<row>:hot`, every limiter **%s units per %d s, quantity 1**, so "
        "practically every call is allowed and takes its full write path. "
        "100k keys, kept state: `b:<row>:__rand_int__` with `-r %s`, every limiter **%s units per %s s**, "
        "each key created before the calibration and keeping its state between its calls (as INCR's counters "
        "do), every call allowed (at most %s calls on a key, bound computed from the request counts; "
        "checked after the repetitions: every key there, every key with units left). "
        "100k keys, state emptied between calls: the hot-key limit on the same key names in database %d, "
        "emptied before and after each run; a GCRA key is empty 1 us after a call and expires before the "
        "key's next call, so a call may delete an expired key and create a new one; expired/call = keys "
        "expired during the run (INFO stats expired_keys) / calls, median over the repetitions. "
        "Memory column: **limit %d per %d s**, %s keys `rl:<12 digits>`, (used_memory delta) / keys, expiry "
        "entries included where the row sets one."
        % (
            "{:,}".format(THROUGHPUT_LIMIT),
            THROUGHPUT_WINDOW_S,
            RAND_KEYS,
            "{:,}".format(KEPT_LIMIT),
            "{:,}".format(KEPT_WINDOW_S),
            "{:,.0f}".format(max([v["bound_calls_per_key"] for v in kept_bounds.values()] or [0])),
            CHURN_DB,
            MEMORY_LIMIT,
            MEMORY_WINDOW_S,
            "{:,}".format(keys),
        )
    )
    p()
    header = ["command"]
    for _, title, _, kind in REGIMES:
        header += [title + " req/s", "x INCR", "x floor"]
        if kind == "churn":
            header.append("expired/call")
    header += ["server us/cmd (hot, -P 16)", "bytes/key"]
    body = []
    for e in out_rows:
        cells = [e["title"]]
        for rg_id, _, _, kind in REGIMES:
            t = e["throughput"][rg_id]
            mark = " (%d errors!)" % t["errors"] if t["errors"] else ""
            ratio = fmt_ratio(t["ratio_to_incr_median"])
            if len(t["ratios"]) > 1 and e["name"] != "INCR":
                ratio += " (%.2f-%.2f)" % (min(t["ratios"]), max(t["ratios"]))
            cells += [fmt_rps(t["rps_median"]) + mark, ratio, fmt_ratio(t["ratio_to_floor_median"])]
            if kind == "churn":
                cells.append(fmt_num(t["expired_per_call_median"], 3))
        cells.append(fmt_num(e["throughput"]["hot_P16"]["server_cpu_us_per_cmd_median"], 2))
        bpk = e["bytes_per_key"]
        m = e["memory"]
        note = ""
        if m and m["dbsize"] != m["keys"]:
            note = " (DBSIZE %d!)" % m["dbsize"]
        cells.append(fmt_num(bpk) + note if bpk is not None else "n/a")
        body.append(cells)
    p(markdown_table(header, body))
    p()
    p(
        "Kept state: %s keys expired during the %s calls of the kept-state runs (keys other steps left: "
        "hot keys, limit checks), against about one a call for a GCRA row in the churn regime."
        % ("{:,}".format(kept_expired["expired"]), "{:,}".format(kept_expired["calls"]))
    )
    p()
    p("Commands (KEY as above; hot key and state emptied / kept state):")
    p()
    for e in out_rows:
        check = "" if e["limit_check"] in ("ok", "n/a") else "  **limit check FAILED: %s**" % e["limit_check"]
        if e["kept_check"] not in ("ok", "n/a"):
            check += "  **kept-state check FAILED: %s**" % e["kept_check"]
        kept = e["kept_state"] or {}
        if "max_used" in kept:
            check += " (kept state: at most %s of %s units used on a key)" % (
                "{:,}".format(kept["max_used"]),
                "{:,}".format(kept["limit"]),
            )
        p("- %s: `%s` / `%s`%s" % (e["title"], e["command"], e["command_kept"], check))
    p()
    rs = allow_out["ratios"]
    p(
        "## RL.ALLOW of three limits against three single calls\n\n"
        "Server CPU per call, hot keys, -P 16: RL.ALLOW deciding THROTTLE + SLIDE + SLICE on three keys, "
        "divided by the sum of the three single commands' CPU per call, same repetition (median; range). "
        "Below 1, one RL.ALLOW is cheaper than the three calls it replaces. Next to it, FLOOR.ALLOW "
        "(examples/floor.rs: RL.ALLOW's arguments and reply, its three keys kept with an expiry, nothing "
        "decided), and the least any RL.ALLOW of these limits can cost: FLOOR.ALLOW plus what each single "
        "command costs beyond FLOOR.KEEP (parsing its numbers, deciding, recording), all of which RL.ALLOW "
        "does for each of its limits."
    )
    p()
    def ratio_cell(ratios):
        if not ratios:
            return "-"
        return fmt_ratio(median(ratios)) + (" (%.2f-%.2f)" % (min(ratios), max(ratios)) if len(ratios) > 1 else "")

    p(
        markdown_table(
            ["command", "us/call", "x the three singles"],
            [
                ["sum of RL.THROTTLE, RL.SLIDE, RL.SLICE", fmt_num(median(allow_out["singles_cpu_us_sum"]), 2), "1"],
                ["RL.ALLOW", fmt_num(median(allow_out["allow_cpu_us_per_call"]), 2), ratio_cell(rs)],
                [
                    "FLOOR.ALLOW (the interface, deciding nothing)",
                    fmt_num(median(allow_out["floor_allow_cpu_us_per_call"]), 2),
                    ratio_cell(allow_out["floor_allow_ratios"]),
                ],
                [
                    "least possible: FLOOR.ALLOW + each single's cost beyond FLOOR.KEEP",
                    fmt_num(median(allow_out["bound_cpu_us_per_call"]), 2),
                    ratio_cell(allow_out["bound_ratios"]),
                ],
            ],
        )
    )
    p()
    p(
        "## Memory per recorded unit: exact sliding logs\n\n"
        "One key, limit %s per 3,600 s, filled with N admitted units (one call per unit); "
        "MEMORY USAGE key SAMPLES 0 / N. Marginal = usage difference / unit difference."
        % "{:,}".format(per_unit["limit"])
    )
    p()
    header = ["command"] + ["%s units: bytes/unit" % "{:,}".format(n) for n in unit_sizes] + ["marginal bytes/unit"]
    body = []
    for name in ("RL.SLIDE", "lua:zset_log"):
        cells = [by_name[name].title]
        for n in unit_sizes:
            d = per_unit["sizes"][str(n)][name]
            cells.append("%s (%s B, %s units)" % (fmt_num(d["bytes_per_unit"], 2), "{:,}".format(d["memory_usage"] or 0), "{:,}".format(d["units"])))
        cells.append(fmt_num(per_unit.get("marginal_bytes_per_unit", {}).get(name), 2))
        body.append(cells)
    p(markdown_table(header, body))
    p()
    p(
        "## Memory with PRECISION: entries drawn by the traffic\n\n"
        "RL.SLIDE, limit %s per 3,600 s. With PRECISION 36 s (1%%), units arriving less than 36 s after an "
        "entry's first unit join it; without the option a call is an entry (calls in one microsecond share one). MEMORY USAGE key SAMPLES 0; "
        "entries from RL.INSPECT. The last row is the issue's \"100,000 units over a minute\" scaled down 100 "
        "times (window 36,000 ms, PRECISION 360 ms, %d calls of 1,000 units every 6 ms, %.0f ms in all)."
        % ("{:,}".format(precision["limit"]), precision["scaled_minute"]["calls"], precision["scaled_minute"]["span_ms"])
    )
    p()
    minute = precision["scaled_minute"]
    p(
        markdown_table(
            ["key", "units", "entries", "MEMORY USAGE (bytes)"],
            [
                ["PRECISION 36, %s calls pipelined" % "{:,}".format(precision["units"]), precision["p:prec"]["admitted"], precision["p:prec"]["entries"], "{:,}".format(precision["p:prec"]["memory_usage"] or 0)],
                ["no PRECISION, the same calls", precision["p:exact"]["admitted"], precision["p:exact"]["entries"], "{:,}".format(precision["p:exact"]["memory_usage"] or 0)],
                ["PRECISION 1%, traffic over the window's sixtieth (scaled)", minute["units"], minute["entries"], "{:,}".format(minute["memory_usage"] or 0)],
            ],
        )
    )
    p()
    p(
        "## Memory per key at 60 slices\n\n"
        "Limit 1,000,000 per %d ms in %d slices (%d ms each); both keys called every ~4 ms for %.1f s "
        "(%d calls each), so every slice of the window holds units; MEMORY USAGE key SAMPLES 0."
        % (slices60["window_ms"], SLICES, slices60["window_ms"] // SLICES, (slices60["window_ms"] + 100) / 1000, slices60["calls_each"])
    )
    p()
    p(
        markdown_table(
            ["command", "bytes per key", "bytes per slice"],
            [
                [by_name["RL.SLICE"].title, slices60["RL.SLICE"]["memory_usage"], fmt_num(slices60["RL.SLICE"]["memory_usage"] / SLICES)],
                [
                    by_name["lua:hash_slices"].title + " (%d fields)" % slices60["lua:hash_slices"]["fields"],
                    slices60["lua:hash_slices"]["memory_usage"],
                    fmt_num(slices60["lua:hash_slices"]["memory_usage"] / SLICES),
                ],
            ],
        )
    )
    p()
    p(
        "## Scaling (hot key, -P 16)\n\n"
        "RL.SLIDE: limit L per 3,600 s, log pre-filled with L units, then quantity 1 (every call limited, log stays full). "
        "RL.SLICE: limit 1,000,000,000 per 1 s in S slices, every call allowed, slices rolling over."
    )
    p()
    body = []
    for family in ("RL.SLIDE", "RL.SLICE"):
        s = scale_out[family]
        for lv, d in s["levels"].items():
            setup = d["setup"]
            extra = ""
            if family == "RL.SLIDE":
                extra = " (pre-filled %s, remaining %s)" % ("{:,}".format(setup["prefilled"]), setup["remaining_after_fill"])
            body.append(
                [
                    "`%s`%s" % (" ".join(setup["cmd"]), extra),
                    fmt_rps(d["rps_median"]),
                    fmt_num(d["server_cpu_us_per_cmd_median"], 2),
                    "",
                ]
            )
        rs = s["largest_over_smallest_ratios"]
        body[-1][3] = "largest/smallest: %s%s" % (
            fmt_ratio(s["largest_over_smallest_median"]),
            " (%.2f-%.2f)" % (min(rs), max(rs)) if len(rs) > 1 else "",
        )
    p(markdown_table(["command", "req/s", "server us/cmd", "ratio"], body))
    p()
    p(
        "## The module against the Lua script doing the same job\n\n"
        "Throughput of the command / throughput of the script, in the same repetition and regime "
        "(median; range over the repetitions in parentheses). Above 1 the module is faster."
    )
    p()
    body = []
    for pair in same_job:
        cells = [pair["command"], by_name[pair["script"]].title]
        for rg_id, _, _, _ in REGIMES:
            rs = pair["ratios"][rg_id]
            cell = fmt_ratio(pair["ratio_median"][rg_id])
            if len(rs) > 1:
                cell += " (%.2f-%.2f)" % (min(rs), max(rs))
            cells.append(cell)
        body.append(cells)
    p(markdown_table(["command", "script"] + [title for _, title, _, _ in REGIMES], body))
    p()
    total = time.monotonic() - t_start
    report["total_seconds"] = total
    p("Total time: %.0f s (%.1f min)" % (total, total / 60))
    sys.stdout.flush()

    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(report, f, indent=2, default=str)
    return 0


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted; server stopped", file=sys.stderr)
        sys.exit(130)
    except BenchError as e:
        print("bench.py: error: %s" % e, file=sys.stderr)
        sys.exit(1)
