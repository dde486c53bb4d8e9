"""Instructions per command, counted by valgrind's callgrind inside a
redis-server of its own (bench/profile.sh runs only this part):
each command on one hot key, `redis-benchmark -c 10 -P 16`, one run of
calls from its warm-up to the end of its count, without a pause (a pause
as long as the hot-key limit's one-second window lets a hot RL.SLIDE log
expire, and the count would see it grow back). The counters are zeroed
once the warm-up's calls are done and dumped about `n` calls later
(`callgrind_control -z` / `-d <name>`, to this server's process only); a
dump's total, less the command-name lookup and the server's timer (see
`calls_and_left_out`), divided by the commands it holds is the figure.

Each command runs alone in a database of its own (`--dbnum`), on a key of
the same name (`b:hot`, or `{b:hot}:<x>` for several keys): the server's
hash of a key name is seeded at random when it starts, so keys sharing a
database share buckets by chance, and a command whose key drew a shared
bucket paid a few hundred instructions more for its lookups (FLOOR.KEEP
measured 7,341 in one run and 7,837 in the next). Alone, every command's
lookups cost the same, so the differences are the commands' own. Counts do
not depend on the machine's load, so they are the steady figures where
throughput moves by 10 to 30 % between runs; a single-key command's count
moves by a few tenths of a percent between runs (how often an expiry moves
depends on the pace of the calls under valgrind; so does the share of the
server's timer, which is left out).

Without valgrind the counts are left out and the report says so
(`apt-get install valgrind`)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import time

from .regimes import FLOOR_ALLOW, THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S, BenchError
from .resp import Client, ReplyError
from .runner import command_stats
from .servers import Server, has_command


HOT = "b:hot"
# RL.LEASE on a key holding this many leases: the call renews one of them.
LEASES_HELD = 10
LEASE_LIMIT, LEASE_TTL_S = 1_000, 3_600


def limit_floor(name: str) -> str:
    """The name under which the floor of `name`'s interface is counted:
    FLOOR.LIMIT with the command's own arguments (FLOOR.ALLOWLIMIT for
    RL.ALLOW's): everything the command must do but deciding."""
    return "FLOOR.LIMIT " + name


def commands_of(rows) -> list:
    """What is counted: the floors, INCR, every single command, RL.LEASE
    renewing one of 10 leases held, RL.ALLOW and RL.PEEK of three limits,
    RL.THROTTLE with MAXWAIT and RL.ALLOW with a SHADOW limit, RL.REFUND
    and RL.CHARGE of one unit on a key holding units, and last RL.THROTTLE
    refused on its key; each on its hot key with the hot-key
    regimes' limit (1,000,000 per
    second), as [(name, args, required command or None, set-up commands)].
    After each single command and RL.ALLOW, its interface's floor
    (`limit_floor`) with the same arguments, in a database of its own
    without the command's set-up."""
    by = {r.name: r for r in rows}

    def hot(row):
        return row.args(HOT, THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S)

    def with_floor(name, args, requires, setup):
        floor = "FLOOR.ALLOWLIMIT" if name == "RL.ALLOW" else "FLOOR.LIMIT"
        return [(name, args, requires, setup), (limit_floor(name), [floor] + args[1:], requires, [])]

    out = [(name, hot(by[name]), None, []) for name in ("FLOOR.THROTTLE", "FLOOR.KEEP")]
    out.append(("FLOOR.ALLOW", [a.replace("b:floor_allow", HOT) for a in FLOOR_ALLOW], None, []))
    out.append(("INCR", hot(by["INCR"]), None, []))
    for r in rows:
        if r.single:
            out += with_floor(r.name, hot(r), r.requires, [])
    # RL.THROTTLE with BLOCK on calls it allows: the option read and the
    # key's block checked (docs/DESIGN.md#block); left out (as "skipped")
    # by a module without BLOCK, found by a probe call.
    block = hot(by["RL.THROTTLE"]) + ["BLOCK", "60"]
    out.append(("RL.THROTTLE BLOCK", block, ["RL.THROTTLE", "b:probe"] + block[2:], []))
    lease = lambda lease_id: ["RL.LEASE", HOT, str(LEASE_LIMIT), str(LEASE_TTL_S), lease_id]
    # Ids of 16 bytes, as in the RL.LEASE workload; the renewed one is the tenth.
    held = [lease("h%015d" % i) for i in range(1, LEASES_HELD)]
    out += with_floor("RL.LEASE", lease("h%015d" % 0), "RL.LEASE", held)
    allow = by["RL.ALLOW"]
    out += with_floor("RL.ALLOW", hot(allow), None, [])
    out.append(("RL.PEEK", allow.peek_args(HOT, THROUGHPUT_LIMIT, THROUGHPUT_WINDOW_S), None, []))
    # The options of bench/results/2026-12-02-wait.md: RL.THROTTLE with
    # MAXWAIT (at this rate every call goes at once: the cost of asking
    # for a turn), RL.ALLOW with its SLIDE limit SHADOW; left out (as
    # "skipped") by a module without them.
    maxwait = hot(by["RL.THROTTLE"]) + ["MAXWAIT", "1"]
    out.append(("RL.THROTTLE MAXWAIT", maxwait, ["RL.THROTTLE", "b:probe"] + maxwait[2:], []))
    shadow = hot(allow)
    shadow.insert(shadow.index("SLICE"), "SHADOW")
    probe = shadow[:2] + ["{b:probe}:t", "{b:probe}:l", "{b:probe}:s"] + shadow[5:]
    out.append(("RL.ALLOW SHADOW", shadow, probe, []))
    # RL.REFUND and RL.CHARGE of one unit, side by side, on a THROTTLE
    # limit of a million a day whose key the set-up took 900,000 units of:
    # every counted call changes the key (a refund has units to give back,
    # a charge stays within the capacity) and is propagated
    # (bench/results/2026-12-02-calls.md); left out (as "skipped") by a
    # module without them.
    spec = ["THROTTLE", "999999", "1000000", "86400"]
    taken = [["RL.THROTTLE", HOT] + spec[1:] + ["900000"]]
    for name in ("RL.REFUND", "RL.CHARGE"):
        out.append((name, [name, HOT] + spec + ["1"], name, taken))
    # A refused call: RL.THROTTLE on a key whose one unit a day its set-up
    # took, so every counted call is limited (and counted by RL.TOP's
    # summary, where the module has one).
    refused = ["RL.THROTTLE", HOT, "0", "1", "86400"]
    out.append(("RL.THROTTLE refused", refused, None, [refused]))
    return out


def supported(con, requires) -> bool:
    """Whether the server has what a counted command requires: a command
    (its name), or an option (a probe call, as a list, that must not
    answer an error; it runs in database 0, which no count uses)."""
    if isinstance(requires, str):
        return has_command(con, requires)
    try:
        con.call(*requires)
        return True
    except ReplyError:
        return False


def missing_tools():
    return [t for t in ("valgrind", "callgrind_control", "callgrind_annotate") if not shutil.which(t)]


def count(server_bin, modules, benchmark, commands, n, warm, workdir, top=0, progress=print) -> dict:
    """`commands`: [(name, args, required command or None, set-up
    commands)], counted in this order, each in database 1, 2, ... (its
    set-up sent there first), those the server lacks left out ("skipped").
    Returns
    {"available", "calls", "per_call": {name: instructions}, "top": {name:
    [(instructions per call, function)]}} or, without valgrind, why not."""
    missing = missing_tools()
    if missing:
        return {"available": False, "reason": "%s not found: apt-get install valgrind" % ", ".join(missing)}
    out = os.path.join(workdir, "callgrind")
    os.makedirs(out, exist_ok=True)
    # A vgdb prefix of its own: a callgrind_control without a pid (which
    # zeroes and dumps every callgrind run of the machine) does not find
    # this server, and this one reaches no other.
    prefix = "--vgdb-prefix=%s/vgdb" % out
    wrapper = ["valgrind", "--tool=callgrind", prefix, "--callgrind-out-file=%s/cg.%%p" % out]
    server = Server(
        server_bin,
        modules,
        out,
        wrapper=wrapper,
        start_timeout_s=120,
        extra=["--databases", str(len(commands) + 1), "--enable-debug-command", "local"],
    )
    progress("instructions: redis-server under callgrind, %s calls per command" % "{:,}".format(n))
    server.start()
    try:
        pid = server.proc.pid
        con = Client(server.port, timeout=120)
        try:
            skipped = [name for name, _, req, _ in commands if req and not supported(con, req)]
            commands = [(name, args, setup) for name, args, _, setup in commands if name not in skipped]
            for db, (_, _, setup) in enumerate(commands, 1):
                if setup:
                    con.call("SELECT", db)
                    for c in setup:
                        con.call(*c)
            commands = [(db, name, apart(con, db, args)) for db, (name, args, _) in enumerate(commands, 1)]
        finally:
            con.close()

        def control(*args):
            cmd = ["callgrind_control", prefix] + list(args) + [str(pid)]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                raise BenchError("callgrind_control %s failed: %s" % (" ".join(args), p.stderr))

        for db, name, args in commands:
            count_one(server.port, benchmark, db, name, args, n, warm, control)
    finally:
        server.stop()
    # Every dump of this server is one of these (the last, at its exit,
    # has no trigger name): anything else dumped its counters meanwhile.
    mine = {dump_name(name) for _, name, _ in commands}
    foreign = [t for t in triggers(out, pid) if t is not None and t not in mine]
    if foreign:
        raise BenchError("callgrind dumps this benchmark did not ask for (%s): counts unusable" % ", ".join(foreign))
    per_call, in_modules, tops, lookups, crons, counted = {}, {}, {}, {}, {}, {}
    objects = {os.path.realpath(m) for m in modules}
    for _, name, _ in commands:
        path = find_dump(out, pid, dump_name(name))
        if path is None:
            raise BenchError("no callgrind dump for %s in %s" % (name, out))
        calls, left_out = calls_and_left_out(path)
        if not calls:
            raise BenchError("the dump of %s holds no command (%s)" % (name, path))
        counted[name] = calls
        if left_out[LOOKUP]:
            lookups[name] = left_out[LOOKUP] / calls
        crons[name] = left_out[CRON] / calls
        per_call[name] = (summary(path) - sum(left_out.values())) / calls
        in_modules[name] = modules_own(path, calls, objects)
        if top:
            tops[name] = top_functions(path, calls, top)
    result = {
        "available": True,
        "calls": n,
        "warm_up_calls": warm,
        "counted_calls": counted,
        "per_call": per_call,
        "lookup_per_call": lookups,
        "cron_per_call": crons,
        # False when the server runs its lookup inlined, where it cannot be
        # told apart: then every count keeps it.
        "lookup_left_out": len(lookups) == len(per_call),
        "in_modules_per_call": in_modules,
        "skipped": skipped,
    }
    if top:
        result["top"] = tops
    return result


def apart(con, db, args, tries=64) -> list:
    """`args` with their keys in buckets of their own. A key's bucket in a
    database depends on the hash seed the server drew when it started, so
    the three keys of RL.ALLOW's limits (`{b:hot}:t`, ...) shared one in
    some runs and not in others, and every lookup of a key behind another
    in its bucket compared names once more: RL.ALLOW's and FLOOR.ALLOW's
    counts moved by 800 instructions between runs. The hash tag is renamed
    (`{b:hot1}`, ...) until the keys, created in the command's database,
    fill as many buckets as they are (DEBUG HTSTATS), then they are
    deleted; the command creates them again in the same buckets."""
    tag = "{%s}" % HOT
    if sum(tag in a for a in args) < 2:
        return args
    con.call("SELECT", db)
    for i in range(tries):
        new_tag = "{%s%s}" % (HOT, i or "")
        renamed = [a.replace(tag, new_tag) for a in args]
        keys = [a for a in renamed if new_tag in a]
        con.call("MSET", *[x for k in keys for x in (k, "0")])
        stats = con.call("DEBUG", "HTSTATS", db)
        con.call("DEL", *keys)
        text = stats.decode() if isinstance(stats, bytes) else str(stats)
        m = re.search(r"number of elements: (\d+)\s+different slots: (\d+)", text)
        if m is None:
            # A server whose tables report otherwise (Valkey's buckets
            # hold several keys each): the keys as they are.
            return args
        if m.group(1) == m.group(2):
            return renamed
    raise BenchError("no hash tag put the keys of %s in buckets of their own" % args[0])


def count_one(port, benchmark, db, name, args, n, warm, control, poll_s=0.05):
    """Counts one command: `redis-benchmark` calls it without a pause
    from its warm-up to the end of its count, the counters zeroed once
    INFO commandstats shows `warm` calls and dumped about `n` calls later
    (timed at the warm-up's pace; the dump itself says how many calls it
    holds), then the benchmark is stopped. No call of INFO falls within
    the count."""
    cmd = [benchmark, "-h", "127.0.0.1", "-p", str(port), "-c", "10", "-P", "16", "-q"]
    cmd += ["-n", str(warm + 50 * n), "--dbnum", str(db)] + args
    con = Client(port, timeout=120)
    try:
        def calls():
            return command_stats(con).get(args[0].lower(), (0, 0))[0]

        base = calls()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            started, done = time.monotonic(), 0
            while done < warm:
                if proc.poll() is not None or time.monotonic() > started + 900:
                    raise BenchError(
                        "redis-benchmark under callgrind stopped before its warm-up: %s\n%s"
                        % (" ".join(args), proc.communicate()[1] if proc.poll() is not None else "timed out")
                    )
                time.sleep(poll_s)
                done = calls() - base
            # The pace since the start, its connections included: a little
            # slow, so the count holds a few more calls than `n`.
            rate = done / (time.monotonic() - started)
            control("-z")
            time.sleep(n / rate)
            control("-d", dump_name(name))
            if proc.poll() is not None:
                raise BenchError("redis-benchmark under callgrind ended within its count: %s" % " ".join(args))
        finally:
            if proc.poll() is None:
                proc.terminate()
            proc.communicate(timeout=300)
    finally:
        con.close()


# The server's functions left out of every count, everything under each
# included (see calls_and_left_out): finding the command by its name, and
# the server's timer.
LOOKUP, CRON = "lookupCommandLogic", "serverCron"


def calls_and_left_out(path):
    """From a dump: how many commands it holds (the calls of the server's
    `call`, which runs each one), and the instructions of LOOKUP and of
    CRON, each with everything under it, which are left out of every
    count, the floors' included:

    - LOOKUP finds a command by its name in the command table, a hash
      table seeded at random when the server starts: a command whose name
      drew a bucket shared with another command's compares names once
      more, about 200 instructions (293 to 522 per call between the
      commands of one run), whatever the command does.
    - CRON, the server's timer, runs so many times a second: its share of
      a call grows as valgrind's pace slows on a loaded machine (60 and
      more instructions a call), whatever the command does.

    A cost line belongs to the function of the last `fn=` (named once
    with its number, in an `fn=` or a callee's `cfn=`, then by number
    alone); a `calls=` line is followed by the callee's whole cost,
    counted here for its caller. A server that inlines the lookup into
    its caller (Redis 8.2's build) has no LOOKUP: 0, and its counts keep
    it."""
    names, current, callee = {}, None, None
    calls, left_out = 0, {LOOKUP: 0, CRON: 0}
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("fn="):
                current = compressed_name(line, names)
            elif line.startswith("cfn="):
                callee = compressed_name(line, names)
            elif line.startswith("calls="):
                if callee == "call":
                    calls += int(line.split("=", 1)[1].split()[0])
            elif current in left_out:
                left_out[current] += line_cost(line)
    return calls, left_out


def compressed_name(line, names, resolve=lambda name: name):
    """The name an `ob=`/`cob=` or `fn=`/`cfn=` line gives. The dump names
    each object and function once, with its number (`fn=(12) call`), then
    by the number alone (`cfn=(12)`): `names` (one per kind of name) keeps
    them, `resolve` applied to each."""
    m = re.match(r"\w+=(?:\((\d+)\))?\s*(.*)", line.rstrip("\n"))
    ident, text = m.group(1), m.group(2)
    if not text:
        return names.get(ident)
    name = resolve(text)
    if ident:
        names[ident] = name
    return name


def line_cost(line) -> int:
    """The instructions of a cost line (`<position> <Ir> ...`); 0 for any
    other line."""
    if line[:1] not in "0123456789+-*":
        return 0
    parts = line.split()
    return int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else 0


def dump_name(name: str) -> str:
    """A dump's trigger word: the command's name without blanks."""
    return re.sub(r"\W", "_", name)


def triggers(out, pid) -> list:
    """The dump names (`dump <name>` triggers) of the server's dump files;
    None for a dump without one."""
    names = []
    for path in glob.glob(os.path.join(out, "cg.%d*" % pid)):
        name = None
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("desc: Trigger:"):
                    m = re.search(r"dump (\S+)$", line.rstrip("\n"))
                    name = m.group(1) if m else None
                    break
                if line.startswith(("positions:", "events:", "fn=")):
                    break  # past the header
        names.append(name)
    return names


def find_dump(out, pid, name):
    for path in sorted(glob.glob(os.path.join(out, "cg.%d.*" % pid))):
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("desc: Trigger:"):
                    if line.rstrip("\n").endswith("dump " + name):
                        return path
                    break
    return None


def summary(path) -> int:
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise BenchError("no summary line in %s" % path)


def modules_own(path, n, objects):
    """Instructions per call in the loaded modules' own code (`objects`:
    their .so files), the rest of the count being the server's and the C
    library's: where a command's instructions go. Read from the dump
    itself: each cost line belongs to the object named by the last `ob=`
    (a name is given once with its number, in an `ob=` or a callee's
    `cob=`, then by number alone), and the line after a `calls=` is the
    callee's cost, not the caller's."""
    names, current, total, skip = {}, None, 0, False
    with open(path, errors="replace") as f:
        for line in f:
            if skip:
                skip = False
                continue
            if line.startswith(("ob=", "cob=")):
                name = compressed_name(line, names, os.path.realpath)
                if line.startswith("ob="):
                    current = name
            elif line.startswith("calls="):
                skip = True
            elif current in objects:
                total += line_cost(line)
    return total / n


def top_functions(path, n, top):
    """The `top` costliest functions (their own instructions), per call,
    from callgrind_annotate."""
    p = subprocess.run(["callgrind_annotate", "--threshold=100", path], capture_output=True, text=True)
    rows, total = [], None
    for line in p.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S.*)", line)
        if not m:
            continue
        cost = int(m.group(1).replace(",", ""))
        if total is None:
            total = cost  # PROGRAM TOTALS
        elif cost < 0.99 * total:
            # Leaving out the functions on the stack at every dump (main
            # and what calls it), counted with the whole program.
            rows.append((cost // n, m.group(2)[:110]))
    return rows[:top]
