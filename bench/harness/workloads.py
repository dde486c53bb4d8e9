"""Measurements outside the rows-by-regimes matrix, one entry each in
WORKLOADS. A workload names the commands the loaded module must have
(COMMAND INFO; without them the report says it was not measured), sets its
keys up once, runs once per repetition after the rows (so that it is
interleaved with them as the scaling runs are), and gives its raw results,
its figures, its targets and its lines of the report.

RL.LEASE (concurrency leases): acquire and release, in pairs, on a key that
holds 10 leases and on one that holds 10,000 (ids of 16 bytes). redis-
benchmark sends one command line per run, and a lease acquired must be
released for the key to keep its count, so a pipelined connection of this
package sends `RL.LEASE key limit ttl <id>` then `RL.RELEASE key <id>`, a
fresh id per pair; FLOOR.KEEP pairs on a hot key, sent the same way in the
same repetition, are the reference. Such a client cannot load the server
as redis-benchmark does, so the figures are the server's: each command's
time per call from INFO commandstats (`usec_per_call`), and its server CPU
per call estimated as that time plus what every call of the connection
costs outside its command (FLOOR.KEEP's CPU per call from INFO cpu minus
its own commandstats time). Throughput ratio to FLOOR.KEEP = FLOOR.KEEP's
CPU per call / the command's. MEMORY USAGE of the 10,000-lease key / 10,000
is the memory per lease.
"""

from __future__ import annotations

from .regimes import THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S, median
from .resp import ReplyError, encode
from .runner import command_stats, fill_keys, usec_per_call


class Workload:
    """The interface of an entry of WORKLOADS."""

    name = ""
    title = ""
    requires: tuple = ()

    def setup(self, b, quick: bool) -> None:
        pass

    def repetition(self, b, rep: int) -> None:
        pass

    def finish(self, b) -> dict:
        """The raw results (JSON), with the server still running."""
        return {}

    def figures(self, raw: dict) -> dict:
        """The medians the report and the targets read (JSON)."""
        return {}

    def targets(self, fig: dict) -> list:
        """[(target, measured text, passed: bool or None for not measured)]."""
        return []

    def report(self, fig: dict) -> list:
        """Markdown lines of the workload's section."""
        return []


def drive(b, commands: list, names) -> dict:
    """Sends the encoded `commands` pipelined on a connection of its own;
    returns the server CPU per call (INFO cpu), each of `names`' time per
    call (INFO commandstats), the error replies and the first reply of
    each of the first two commands."""
    stats0 = command_stats(b.con)
    cpu0 = b.cpu_seconds()
    replies = fill_keys(b.server.port, commands, encoded=True)
    cpu1 = b.cpu_seconds()
    stats1 = command_stats(b.con)
    errors = [r for r in replies if isinstance(r, ReplyError)]
    return {
        "calls": len(commands),
        "server_cpu_us_per_call": (cpu1 - cpu0) * 1e6 / len(commands),
        "usec_per_call": {n: usec_per_call(stats0, stats1, n) for n in names},
        "errors": len(errors),
        "first_error": str(errors[0]) if errors else None,
        "first_replies": [repr(r) for r in replies[:2]],
    }


class Leases(Workload):
    name = "RL.LEASE"
    title = "RL.LEASE / RL.RELEASE (concurrency leases)"
    requires = ("RL.LEASE", "RL.RELEASE")
    LIMIT = 1_000_000
    TTL_S = 3600
    HELD = (10, 10_000)
    KEEP = ["FLOOR.KEEP", "b:lease:keep", THROUGHPUT_LIMIT - 1, THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S]

    def key(self, held):
        return "b:lease:%d" % held

    def acquire(self, held, lease_id):
        return ["RL.LEASE", self.key(held), self.LIMIT, self.TTL_S, lease_id]

    def setup(self, b, quick):
        self.pairs = 2_000 if quick else 100_000
        self.setup_out = {"pairs_per_run": self.pairs, "limit": self.LIMIT, "ttl_s": self.TTL_S}
        for held in self.HELD:
            # The held leases' ids: 16 bytes, "h" and 15 digits.
            replies = fill_keys(b.server.port, [encode(self.acquire(held, "h%015d" % i)) for i in range(held)], True)
            errors = [r for r in replies if isinstance(r, ReplyError)]
            self.setup_out[str(held)] = {
                "acquired": len(replies) - len(errors),
                "errors": len(errors),
                "first_error": str(errors[0]) if errors else None,
                "first_reply": repr(replies[0]) if replies else None,
                "memory_usage": b.con.call("MEMORY", "USAGE", self.key(held), "SAMPLES", "0"),
            }
        # Each pair: a fresh id (16 bytes, "a" and 15 digits) acquired, then
        # released; the same ids in every run, each released before the next.
        self.sequences = {"keep": [encode(self.KEEP)] * (2 * self.pairs)}
        for held in self.HELD:
            seq = []
            for i in range(self.pairs):
                lease_id = "a%015d" % i
                seq.append(encode(self.acquire(held, lease_id)))
                seq.append(encode(["RL.RELEASE", self.key(held), lease_id]))
            self.sequences[str(held)] = seq
        self.runs = {k: [] for k in self.sequences}

    def repetition(self, b, rep):
        for variant, seq in self.sequences.items():
            res = drive(b, seq, ["floor.keep", "rl.lease", "rl.release"])
            res["rep"] = rep
            if variant != "keep":
                # Grows if a release leaves its lease behind.
                res["memory_usage_after"] = b.con.call("MEMORY", "USAGE", self.key(int(variant)), "SAMPLES", "0")
            self.runs[variant].append(res)

    def finish(self, b):
        return {"setup": self.setup_out, "runs": self.runs}

    def figures(self, raw):
        runs, setup = raw["runs"], raw["setup"]
        keep = runs["keep"]
        # Per repetition: what a call of the driving connection costs
        # outside its command, from FLOOR.KEEP's run.
        overhead = [r["server_cpu_us_per_call"] - (r["usec_per_call"]["floor.keep"] or 0) for r in keep]
        fig = {"keep_cpu_us_per_call": median([r["server_cpu_us_per_call"] for r in keep])}
        errors = sum(r["errors"] for v in runs.values() for r in v)
        errors += sum(setup[str(h)]["errors"] for h in self.HELD)
        fig["errors"] = errors
        for held in self.HELD:
            v = runs[str(held)]
            for cmd in ("rl.lease", "rl.release"):
                usec = [r["usec_per_call"][cmd] for r in v]
                cpu = [o + u if u is not None else None for o, u in zip(overhead, usec)]
                ratio = [k["server_cpu_us_per_call"] / c if c else None for k, c in zip(keep, cpu)]
                fig["%s_%d" % (cmd, held)] = {
                    "usec_per_call_median": median(usec),
                    "server_cpu_us_per_call": cpu,
                    "server_cpu_us_per_call_median": median(cpu),
                    "ratio_to_keep": ratio,
                    "ratio_to_keep_median": median(ratio),
                }
        lo, hi = self.HELD
        for cmd in ("rl.lease", "rl.release"):
            a, z = fig["%s_%d" % (cmd, lo)], fig["%s_%d" % (cmd, hi)]
            ratios = [h / l if h and l else None for h, l in zip(z["server_cpu_us_per_call"], a["server_cpu_us_per_call"])]
            fig["%s_scale_median" % cmd] = median(ratios)
        usage = setup[str(hi)]["memory_usage"]
        fig["bytes_per_lease"] = usage / hi if usage else None
        if usage and setup[str(lo)]["memory_usage"]:
            fig["marginal_bytes_per_lease"] = (usage - setup[str(lo)]["memory_usage"]) / (hi - lo)
        return fig

    def targets(self, fig):
        """Without figures (not measured): every target, nothing measured."""
        rows = []
        for cmd, name in (("rl.lease", "acquire (RL.LEASE)"), ("rl.release", "release (RL.RELEASE)")):
            rows.append(
                (
                    "lease %s on a key holding 10 leases >= 0.85x FLOOR.KEEP's throughput (server CPU per call)"
                    % name,
                    lambda f, cmd=cmd: f["%s_10" % cmd]["ratio_to_keep_median"],
                    "%.3fx",
                    lambda x: x >= 0.85,
                )
            )
        for cmd, name in (("rl.lease", "acquire"), ("rl.release", "release")):
            rows.append(
                (
                    "lease %s with 10,000 leases held <= 1.3x its cost with 10 (server CPU per call)" % name,
                    lambda f, cmd=cmd: f["%s_scale_median" % cmd],
                    "%.3fx",
                    lambda x: x <= 1.3,
                )
            )
        rows.append(
            (
                "MEMORY USAGE at 10,000 leases of 16-byte ids <= 64 B per lease",
                lambda f: f["bytes_per_lease"],
                "%.1f B",
                lambda x: x <= 64,
            )
        )
        out = []
        for text, get, pattern, ok in rows:
            x = get(fig) if fig else None
            measured = fmt(x, pattern)
            if fig and fig["errors"]:
                measured += " (%d error replies: not judged)" % fig["errors"]
            out.append((text, measured, None if x is None or (fig and fig["errors"]) else ok(x)))
        return out

    def report(self, fig):
        lines = [
            "Pairs of `RL.LEASE key %d %d <16-byte id>` and `RL.RELEASE key <id>` on one pipelined "
            "connection, a fresh id per pair, next to FLOOR.KEEP pairs sent the same way (%s server CPU "
            "per call). CPU per call = the command's commandstats time + what FLOOR.KEEP's calls cost outside "
            "their command; x FLOOR.KEEP = FLOOR.KEEP's CPU per call / the command's (medians)."
            % (self.LIMIT, self.TTL_S, fmt(fig["keep_cpu_us_per_call"], "%.2f us")),
            "",
            "| command | leases held | usec_per_call | CPU us/call | x FLOOR.KEEP |",
            "|---|---|---|---|---|",
        ]
        for held in self.HELD:
            for cmd in ("rl.lease", "rl.release"):
                f = fig["%s_%d" % (cmd, held)]
                lines.append(
                    "| %s | %s | %s | %s | %s |"
                    % (
                        cmd.upper(),
                        "{:,}".format(held),
                        fmt(f["usec_per_call_median"], "%.2f"),
                        fmt(f["server_cpu_us_per_call_median"], "%.2f"),
                        fmt(f["ratio_to_keep_median"], "%.2fx"),
                    )
                )
        lines += [
            "",
            "MEMORY USAGE at 10,000 leases: %s per lease (marginal over 10 leases: %s); %d error replies."
            % (fmt(fig["bytes_per_lease"], "%.1f B"), fmt(fig.get("marginal_bytes_per_lease"), "%.1f B"), fig["errors"]),
        ]
        return lines


def fmt(x, pattern):
    return "-" if x is None else pattern % x


# Every workload; the session measures those whose commands the module has.
WORKLOADS = [Leases()]
