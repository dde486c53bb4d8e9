"""The benchmark's parameters: paths, the throughput regimes, the limits of
each regime and the scripts. See the package docstring for what each one
means."""

from __future__ import annotations

import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LUA_DIR = ROOT / "bench" / "lua"
MODULE = ROOT / "target" / "release" / "libredis_ratelimit.so"
FLOOR = ROOT / "target" / "release" / "examples" / "libfloor.so"

CLIENTS = 50
RAND_KEYS = 100_000
# The random keys of a quick run (--quick): enough for every regime's
# figures to be there, few enough to be made in a moment.
QUICK_RAND_KEYS = 1_000
# redis-benchmark's placeholder: with `-r N` each occurrence is replaced by a
# number drawn below N (each occurrence its own), written as 12 zero-padded
# digits.
RAND = "__rand_int__"
# The keys of a regime: "hot" (one per row), "kept" (100k random keys created
# before the calibration, state kept between calls, each row's in a database
# of its own from KEPT_DB on) or "churn" (100k random keys in CHURN_DB,
# emptied before and after each run, state emptied between a key's calls).
REGIMES = [
    # (id, title, pipeline, keys)
    ("hot_P16", "hot key, -P 16", 16, "hot"),
    ("rand_P16", "100k keys, kept state, -P 16", 16, "kept"),
    ("rand_churn_P16", "100k keys, state emptied between calls, -P 16", 16, "churn"),
    ("hot_P1", "hot key, -P 1", 1, "hot"),
    ("rand_P1", "100k keys, kept state, -P 1", 1, "kept"),
]
CHURN_DB = 1
# The kept-state regimes' first database: row i keeps its keys in
# KEPT_DB + i, so that no row's keys sit in another row's hash chains (the
# server adds a key at the head of its chain: in one shared keyspace, the
# rows created last would be found first). DATABASES: the server's count.
KEPT_DB = 2
DATABASES = 64

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

SCRIPTS = ["zset_log", "hash_slices", "token_bucket", "gcra", "fixed_window", "zset_semaphore"]
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
    "zset_semaphore": "sorted-set semaphore",
}
# The Lua backend's scripts (clients/lua): the script of a command is its
# file, a newline, then prelude.lua.
BACKEND_DIR = ROOT / "clients" / "lua"
BACKEND_SCRIPTS = ["throttle", "slide", "slice", "quota", "lease", "allow", "peek"]
# Each kind: the module's row, its Lua backend's row, and the peer scripts
# doing the same job (None: RL.ALLOW's peer is the three single calls of
# the fastest peers of its limits, computed from their runs).
BACKEND_KINDS = [
    ("RL.THROTTLE", "backend:RL.THROTTLE", ["lua:gcra", "lua:token_bucket"]),
    ("RL.SLIDE", "backend:RL.SLIDE", ["lua:zset_log"]),
    ("RL.SLICE", "backend:RL.SLICE", ["lua:hash_slices"]),
    ("RL.QUOTA", "backend:RL.QUOTA", ["lua:fixed_window"]),
    ("RL.LEASE", "backend:RL.LEASE", ["lua:zset_semaphore"]),
    ("RL.ALLOW", "backend:RL.ALLOW", None),
]
# The rows a --lua-only run measures besides those of BACKEND_KINDS: the
# references of the ratios.
LUA_ONLY_REFERENCES = ["INCR", "FLOOR.THROTTLE", "FLOOR.KEEP"]
RL_COMMANDS = ["RL.THROTTLE", "RL.SLIDE", "RL.SLICE"]
# RL.ALLOW deciding the three single commands' limits at once.
ALLOW_PARTS = ["RL.THROTTLE", "RL.SLIDE", "RL.SLICE"]
# RL.ALLOW's interface deciding nothing (bench/floor.rs): its three keys
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


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
