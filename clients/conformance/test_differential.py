"""The randomized differential run: one random sequence of calls of every
kind and option (RL.CHARGE, MAXWAIT, BLOCK, SHADOW and UNITS among them),
at random instants of a faked clock (forward jumps from 0 to days,
and now and then a step back), sent to the module (keys `m:...`), to the
Python package's Lua backend (keys `l:...`) and to the Node package's
(keys `n:...`, node_driver.js) on the same server; every reply and every
key's expiry must be equal. RL_DIFF_CALLS sets the number of calls
(default 3000), RL_DIFF_SEED the seed (default: random, printed)."""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import redis
from harness import FAKED_SERVER, Server, normalize, send, server

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/Sao_Paulo",
    "Asia/Kolkata",
    "+05:45",
    "-03:30",
    "Australia/Lord_Howe",
    "America/New_York",
]
UNITS = ["MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR"]


def spec(rng: random.Random, kind: str) -> list[Any]:
    if kind == "THROTTLE":
        return [
            "THROTTLE",
            rng.choice([0, 1, 4, 9]),
            rng.choice([1, 3, 7, 10, 1000, 10000]),
            rng.choice([1, 2, 60, 3600, 10**7]),
        ]
    if kind == "SLIDE":
        out: list[Any] = ["SLIDE", rng.choice([1, 3, 5, 10]), rng.choice([1, 2, 10, 60])]
        if rng.random() < 0.4:
            out += ["PRECISION", rng.choice([0, 1, 2])]
        return out
    if kind == "SLICE":
        return ["SLICE", rng.choice([1, 3, 5, 10]), rng.choice([1, 7, 10, 60, 10**7]), rng.choice([1, 2, 3, 6, 7])]
    if kind == "LEASE":
        return ["LEASE", rng.choice([1, 2, 3, 5]), rng.choice([1, 5, 30])]
    out = ["QUOTA", rng.choice([1, 3, 10]), rng.choice(UNITS)]
    if rng.random() < 0.8:
        out += ["TZ", rng.choice(ZONES)]
    return out


def times(rng: random.Random, word: str, choices: list[int], ms: bool, p: float) -> list[Any]:
    """`word t` (a time in the command's unit: ms with MS) with probability p."""
    if rng.random() >= p:
        return []
    return [word, rng.choice(choices) * (1000 if ms else 1)]


def call(rng: random.Random) -> tuple[list[Any], list[str]]:
    """A command line with keys as `{k}` placeholders, and its keys."""
    kind = rng.choice(["THROTTLE", "SLIDE", "SLICE", "LEASE", "QUOTA"])
    key = f"{kind.lower()}{rng.randrange(2)}"
    q = rng.choice([0, 1, 1, 1, 2, 3, 5, 11])
    ms = ["MS"] if rng.random() < 0.2 else []
    r = rng.random()
    if r < 0.5:
        s = spec(rng, kind)
        if kind == "LEASE":
            return ["RL.LEASE", "{k}0", *s[1:], rng.choice("abc"), q, *ms], [key]
        opts = s[s.index("PRECISION") :] if "PRECISION" in s else s[s.index("TZ") :] if "TZ" in s else []
        base = s[: len(s) - len(opts)]
        if ms and "PRECISION" in opts:
            opts = ["PRECISION", int(opts[1]) * 1000]
            base = base[:2] + [int(base[2]) * 1000] + base[3:] if kind == "SLIDE" else base
        # BLOCK on every kind but LEASE; MAXWAIT on THROTTLE.
        opts += times(rng, "BLOCK", [1, 5, 60, 600], bool(ms), 0.15)
        if kind == "THROTTLE":
            opts += times(rng, "MAXWAIT", [0, 1, 10, 100, 10**5], bool(ms), 0.3)
        pairs = [opts[i : i + 2] for i in range(0, len(opts), 2)]
        rng.shuffle(pairs)
        return ["RL." + kind, "{k}0", *base[1:], q, *ms, *[w for pair in pairs for w in pair]], [key]
    if r < 0.65:
        n = rng.randrange(1, 4)
        # A third of the calls THROTTLE only, which MAXWAIT may wait for.
        kinds_of = ["THROTTLE"] if rng.random() < 0.33 else ["THROTTLE", "SLIDE", "SLICE", "LEASE", "QUOTA"]
        kinds = [rng.choice(kinds_of) for _ in range(n)]
        keys = [f"{k.lower()}{i % 2}" for i, k in enumerate(kinds)]
        if len(set(keys)) < n:
            keys = [f"{k.lower()}{i}" for i, k in enumerate(kinds)]
        cmd: list[Any] = [rng.choice(["RL.ALLOW", "RL.PEEK"]), n, *[f"{{k}}{i}" for i in range(n)]]
        ms_all = rng.random() < 0.2
        shadows = 0
        for k in kinds:
            # Each spec's own options, any order: BLOCK (not LEASE), UNITS,
            # SHADOW (not with BLOCK; now and then every spec, an error).
            own = [] if k == "LEASE" else times(rng, "BLOCK", [1, 5, 60, 600], ms_all, 0.15)
            words = [own] if own else []
            if rng.random() < 0.2:
                words.append(["UNITS", rng.choice([0, 1, 2, 5, 11])])
            if not own and rng.random() < (0.25 if shadows < n - 1 else 0.02):
                shadows += 1
                words.append(["SHADOW"])
            rng.shuffle(words)
            cmd += spec(rng, k) + [w for ws in words for w in ws]
        if rng.random() < 0.7:
            cmd += ["QUANTITY", q]
        if ms_all:
            cmd += ["MS"]
        if rng.random() < (0.6 if set(kinds) == {"THROTTLE"} else 0.03):
            cmd += times(rng, "MAXWAIT", [0, 1, 10, 100, 10**5], ms_all, 1.0)
        if "LEASE" in kinds:
            cmd += ["ID", rng.choice("abc")]
        return cmd, keys
    if r < 0.78:
        if kind == "LEASE":
            return ["RL.RELEASE", "{k}0", rng.choice("abc")], [key]
        if rng.random() < 0.5:
            return ["RL.CHARGE", "{k}0", *spec(rng, kind), max(q, 1) * rng.choice([1, 1, 3, 40]), *ms], [key]
        return ["RL.REFUND", "{k}0", *spec(rng, kind), q, *ms], [key]
    return ["RL.INSPECT", "{k}0"], [key]


def with_keys(cmd: list[Any], keys: list[str], prefix: str) -> list[Any]:
    out = []
    for a in cmd:
        if isinstance(a, str) and a.startswith("{k}"):
            out.append(prefix + keys[int(a[3:])])
        else:
            out.append(a)
    return out


# The backends, and the prefix of their keys.
BACKENDS = [("module", "m:"), ("lua", "l:"), ("node-lua", "n:")]


def answer(srv: Server, backend: str, line: list[Any], now: float) -> Any:
    """A backend's reply to a command line (normalized), or its error."""
    try:
        return normalize(send(srv, backend, line, now))
    except redis.ResponseError as e:
        return {"error": str(e)}


def test_random_calls_answer_alike() -> None:
    calls = int(os.environ.get("RL_DIFF_CALLS", "3000"))
    seed = int(os.environ.get("RL_DIFF_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    t = datetime(2026, 3, 28, 23, 0, tzinfo=UTC)
    diffs: list[str] = []
    compared = 0
    outcomes = {"allowed": 0, "limited": 0, "error": 0, "other": 0}
    with server(FAKED_SERVER, faked=True) as srv:
        for i in range(calls):
            r = rng.random()
            if r < 0.3:
                pass
            elif r < 0.6:
                t += timedelta(microseconds=rng.randrange(1, 2_000_000))
            elif r < 0.85:
                t += timedelta(seconds=rng.randrange(1, 120))
            elif r < 0.97:
                t += timedelta(seconds=rng.randrange(120, 3 * 86400))
            else:
                t -= timedelta(microseconds=rng.randrange(1, 3_000_000))
            srv.set_clock(t.strftime("%Y-%m-%d %H:%M:%S.%f"))
            cmd, keys = call(rng)
            got: dict[str, tuple[Any, list[int]]] = {}
            for backend, prefix in BACKENDS:
                line = [str(a) for a in with_keys(cmd, keys, prefix)]
                got[backend] = (answer(srv, backend, line, t.timestamp()), [srv.client.pttl(prefix + k) for k in keys])
            compared += 1
            first = got["module"][0]
            if isinstance(first, dict):
                outcomes["error"] += 1
            elif isinstance(first, list) and len(first) in (5, 7) and first[0] in (0, 1):
                outcomes["limited" if first[0] else "allowed"] += 1
            else:
                outcomes["other"] += 1
            for backend, _ in BACKENDS[1:]:
                if got[backend] != got["module"]:
                    (m, mt), (b, bt) = got["module"], got[backend]
                    diffs.append(f"call {i} at {t}: {cmd} keys {keys}: module {m} pttl {mt}, {backend} {b} pttl {bt}")
    print(f"differential run: seed {seed}, {compared} calls ({outcomes}), {len(diffs)} differences")
    assert outcomes["allowed"] > calls // 10 and outcomes["limited"] > calls // 20
    assert not diffs, f"seed {seed}: {len(diffs)} of {compared} calls differ:\n" + "\n".join(diffs[:20])


def test_lease_ids_of_any_bytes_answer_alike() -> None:
    # Every byte value in lease ids (up to 128 bytes), through RL.LEASE,
    # RL.ALLOW's ID, RL.INSPECT's holders (bytes replies) and RL.RELEASE.
    ids = [bytes(range(i, i + 128)) for i in range(0, 256, 128)] + [b"\x00", b"\xff\xfe", b"\r\n*1\r\n", "é€".encode()]
    t = datetime(2026, 3, 28, 23, 0, tzinfo=UTC)
    with server(FAKED_SERVER, faked=True) as srv:
        srv.set_clock(t.strftime("%Y-%m-%d %H:%M:%S.%f"))
        replies: dict[str, list[Any]] = {}
        for backend, prefix in BACKENDS:
            key = (prefix + "lease").encode()
            lines: list[list[Any]] = [["RL.LEASE", key, 10, 60, lease_id] for lease_id in ids]
            lines += [["RL.ALLOW", 1, key, "LEASE", 10, 60, "ID", ids[0]], ["RL.INSPECT", key]]
            lines += [["RL.RELEASE", key, ids[1]], ["RL.RELEASE", key, ids[1]], ["RL.INSPECT", key]]
            replies[backend] = [answer_bytes(srv, backend, line, t.timestamp()) for line in lines]
        holders = replies["module"][len(ids) + 1][-1]
        assert sorted(h[0] for h in holders) == sorted(ids)
        assert replies["lua"] == replies["module"]
        assert replies["node-lua"] == replies["module"]


def answer_bytes(srv: Server, backend: str, line: list[Any], now: float) -> Any:
    """A backend's reply with its bytes as they are (RL.INSPECT's memory masked)."""
    try:
        reply = send(srv, backend, line, now)
    except redis.ResponseError as e:
        return {"error": str(e)}
    if line[0] == "RL.INSPECT" and isinstance(reply, list):
        assert reply[4] == b"memory", reply
        reply[5] = "*"
    return reply
