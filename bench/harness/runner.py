"""One redis-benchmark run against the server, and the key set-up and checks
around the runs."""

from __future__ import annotations

import csv
import io
import subprocess

from .regimes import CLIENTS, KEPT_LIMIT, RAND, BenchError
from .resp import Client, ReplyError, encode
from .rows import Row
from .servers import Server

class Bench:
    def __init__(self, opts, server: Server, benchmark: str, rand_keys: int):
        self.opts = opts
        # The random keys' count: `-r` of redis-benchmark.
        self.rand_keys = rand_keys
        self.server = server
        # redis-benchmark's command line before its options (a pinning
        # prefix, then the binary).
        self.benchmark = [benchmark] if isinstance(benchmark, str) else list(benchmark)
        self.con = Client(server.port)

    def cpu_seconds(self) -> float:
        i = self.con.info("cpu")
        return float(i["used_cpu_user"]) + float(i["used_cpu_sys"])

    def command_stats(self) -> dict:
        """INFO commandstats: {command name: (calls, usec)}."""
        return command_stats(self.con)

    def errors_and_expired(self):
        stats = self.con.info("stats")
        return int(stats.get("total_error_replies", 0)), int(stats.get("expired_keys", 0))

    def run(self, args, n: int, pipeline: int, rand: bool, db: int = 0) -> dict:
        """One redis-benchmark run; returns rps, server CPU per command, the
        number of error replies the server sent and of keys that expired
        meanwhile (in any database), and the command's own time per call
        from INFO commandstats (`usec_per_call`: the time inside the command,
        without reading the request and writing the reply), read outside
        the CPU figure's window."""
        cmd = self.benchmark + [
            "-h", "127.0.0.1",
            "-p", str(self.server.port),
            "-c", str(CLIENTS),
            "-n", str(n),
            "-P", str(pipeline),
            "--csv",
        ]
        if rand:
            cmd += ["-r", str(self.rand_keys)]
        if db:
            cmd += ["--dbnum", str(db)]
        cmd += args
        stats0 = self.command_stats()
        (err0, exp0), cpu0 = self.errors_and_expired(), self.cpu_seconds()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(120, n / 200))
        except subprocess.TimeoutExpired:
            raise BenchError("redis-benchmark timed out: " + " ".join(cmd))
        cpu1, (err1, exp1) = self.cpu_seconds(), self.errors_and_expired()
        stats1 = self.command_stats()
        rps = csv_rps(p.stdout)
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
            "usec_per_call": usec_per_call(stats0, stats1, args[0]),
        }


def csv_rps(output: str):
    """The requests per second of `redis-benchmark --csv`'s output: the
    second field of its last line after the header ("test","rps",...),
    or None when there is none."""
    rps = None
    for rec in csv.reader(io.StringIO(output)):
        if len(rec) >= 2 and rec[0] != "test":
            try:
                rps = float(rec[1])
            except ValueError:
                pass
    return rps


def command_stats(con: Client) -> dict:
    """INFO commandstats: {command name, lower case: (calls, usec)}."""
    out = {}
    for key, value in con.info("commandstats").items():
        if key.startswith("cmdstat_"):
            fields = dict(f.split("=", 1) for f in value.split(",") if "=" in f)
            out[key[len("cmdstat_") :].lower()] = (int(fields.get("calls", 0)), int(fields.get("usec", 0)))
    return out


def usec_per_call(before: dict, after: dict, name: str):
    """The command's time per call between two command_stats readings."""
    name = name.lower()
    c0, u0 = before.get(name, (0, 0))
    c1, u1 = after.get(name, (0, 0))
    return (u1 - u0) / (c1 - c0) if c1 > c0 else None


def check_limits(con: Client, row: Row) -> str:
    """A limiter of 3 units per 3,600 s must allow 3 calls on a fresh key,
    then limit; the reply must be five integers. Returns "ok" or what went
    wrong. (An hour, not less: RL.QUOTA's shortest calendar unit.)"""
    key = "b:check:" + row.id
    calls = [row.args(key, 3, 3600) for _ in range(5)]
    if row.lease_id_at is not None:
        # A lease each: the same id would renew one.
        for i, c in enumerate(calls):
            c[row.lease_id_at] = "check-%d" % i
    replies = con.pipeline(calls)
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


def fill_keys(port: int, commands, encoded: bool = False, db: int = 0) -> list:
    """Runs the commands pipelined on a connection of its own, in database
    `db`, closed before returning so that its buffers are not counted."""
    c = Client(port)
    try:
        if db:
            c.call("SELECT", str(db))
        return c.pipeline_encoded(commands) if encoded else c.pipeline(commands)
    finally:
        c.close()


def rand_commands(args, rand_keys: int) -> list:
    """The command `args` encoded once for each of the `rand_keys` numbers
    `-r rand_keys` draws from, 000000000000 to rand_keys - 1, each
    placeholder replaced by the number (both are 12 characters long, so
    the encoded lengths stay right)."""
    template = encode(args)
    return [template.replace(RAND.encode(), b"%012d" % i) for i in range(rand_keys)]


def rand_key_names(args, rand_keys: int) -> list:
    """Every key name the random-key command `args` can touch."""
    names = []
    for a in args:
        if RAND in a:
            names += [a.replace(RAND, "%012d" % i) for i in range(rand_keys)]
    return names


def create_rand_keys(port: int, row: Row, args, db: int, rand_keys: int) -> None:
    """Calls `args` once on each random key of database `db` (creating its
    state); every call must be allowed."""
    replies = fill_keys(port, rand_commands(args, rand_keys), encoded=True, db=db)
    bad = [r for r in replies if isinstance(r, ReplyError) or (isinstance(r, list) and r[0] != 0)]
    if bad:
        raise BenchError(
            "%s: %d of %d calls creating its random keys failed or were limited, first: %r"
            % (row.name, len(bad), len(replies), bad[0])
        )


def kept_state_check(b: Bench, row: Row, args, peek, db: int) -> dict:
    """After the kept-state regimes: every random key of the row (in
    database `db`) still exists and (limiters) every one peeked has units
    left, so every call of the benchmark was allowed. Returns the figures
    and "check"."""
    names = rand_key_names(args, b.rand_keys)
    present = fill_keys(b.server.port, [["EXISTS"] + names], db=db)[0]
    out = {"keys": len(names), "present": present}
    problems = []
    if out["present"] != out["keys"]:
        problems.append("%d of %d keys present" % (out["present"], out["keys"]))
    if peek is not None:
        used, errors = [], []
        for r in fill_keys(b.server.port, rand_commands(peek, b.rand_keys), encoded=True, db=db):
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


def allowed_count(replies) -> int:
    n = 0
    for r in replies:
        if isinstance(r, ReplyError):
            raise BenchError("error reply while filling: %s" % r)
        if isinstance(r, list) and r and r[0] == 0:
            n += 1
    return n


