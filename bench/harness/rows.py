"""The rows: each command of the comparison and how its command line is
built for a limit."""

from __future__ import annotations

from .regimes import SCRIPT_TITLES, SCRIPTS, SLICES

class Row:
    """One command of the comparison. `args(key, limit, window_s)` gives its
    command line for a limiter of `limit` units per `window_s` seconds."""

    def __init__(
        self,
        name,
        title,
        build,
        limiter=True,
        script=None,
        keys_per_call=1,
        five=True,
        keeps=True,
        single=False,
        requires=None,
        targets=None,
        state_floor="FLOOR.LIMIT",
        row_id=None,
        lease_id_at=None,
        peek=None,
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
        # A single-key limiter of the module: the targets on every single
        # command (instructions against FLOOR.KEEP's, kept-state throughput)
        # cover it.
        self.single = single
        # The command the loaded module must have (COMMAND INFO) for the row
        # to be measured; without it the row is left out and the report
        # says so.
        self.requires = requires
        # The row's own targets: {regime id: least throughput ratio to
        # FLOOR.KEEP (judged on server CPU per call)}.
        self.targets = targets or {}
        # The floor whose value takes the allocation the command's state
        # takes (FLOOR.LIMIT: 16 bytes, FLOOR.LIMIT64: 64): on keys out of
        # the cache, the least a command with this interface and this
        # state's size costs.
        self.state_floor = state_floor
        self.id = row_id or name.replace("lua:", "").replace("RL.", "rl_").replace("CL.", "cl_").lower()
        # A lease row: the index of the lease id in its command line; the
        # limit check gives each of its calls an id of its own (a repeated
        # id renews one lease).
        self.lease_id_at = lease_id_at
        # The same limit peeked, when not the command line + quantity 0.
        self.peek = peek

    def args(self, key, limit, window_s, slices=SLICES):
        return [str(a) for a in self.build(key, limit, window_s, slices)]

    def peek_args(self, key, limit, window_s):
        """The same limit, peeked (quantity 0; RL.PEEK for RL.ALLOW)."""
        if self.peek is not None:
            return [str(a) for a in self.peek(key, limit, window_s, SLICES)]
        args = self.args(key, limit, window_s)
        if args[0] == "RL.ALLOW":
            return ["RL.PEEK"] + args[1:]
        return args + ["0"]


def floor_row(name, title, keeps=True) -> Row:
    """A command of bench/floor.rs, with RL.THROTTLE's arguments; one
    that keeps state sets its key's expiry to an hour after the call,
    whatever the limit: longer than the benchmark."""
    return Row(
        name,
        title,
        lambda k, l, w, s: [name, k, l - 1, l, w],
        limiter=False,
        keys_per_call=0,
        keeps=keeps,
    )


LEASE_ID = "lease-0000000001"


def allow_args(k, l, w, s) -> list:
    """RL.ALLOW's arguments after its name: three limits on three keys."""
    return [
        3, "{%s}:t" % k, "{%s}:l" % k, "{%s}:s" % k,
        "THROTTLE", l - 1, l, w, "SLIDE", l, w, "SLICE", l, w, s,
    ]


def make_rows(shas: dict, with_cell: bool, backend: dict = None):
    """`shas`: the peer scripts' SHA1s; `backend`: the Lua backend's
    scripts' SHA1s (clients/lua), or None to leave its rows out."""
    rows = [
        Row("PING", "PING (no key)", lambda k, l, w, s: ["PING"], limiter=False, keys_per_call=0, keeps=False),
        Row("INCR", "INCR (the baseline)", lambda k, l, w, s: ["INCR", k], limiter=False),
        floor_row("FLOOR.THROTTLE", "floor: no-op module command", keeps=False),
        floor_row("FLOOR.KEEP", "floor keeping state with an expiry"),
        floor_row(
            "FLOOR.LIMIT",
            "floor: the interface deciding nothing (reads, parses, keeps a module value, propagates)",
        ),
        floor_row(
            "FLOOR.LIMIT64",
            "floor: FLOOR.LIMIT keeping a 64-byte value (the allocation of RL.SLIDE's, RL.SLICE's, RL.QUOTA's states)",
        ),
        Row("RL.THROTTLE", "RL.THROTTLE (GCRA)", lambda k, l, w, s: ["RL.THROTTLE", k, l - 1, l, w], single=True),
        Row(
            "RL.SLIDE",
            "RL.SLIDE (exact log)",
            lambda k, l, w, s: ["RL.SLIDE", k, l, w],
            single=True,
            state_floor="FLOOR.LIMIT64",
        ),
        Row(
            "RL.SLICE",
            "RL.SLICE (60 slices)",
            lambda k, l, w, s: ["RL.SLICE", k, l, w, s],
            single=True,
            state_floor="FLOOR.LIMIT64",
        ),
        # Measured once the module has it (the calendar quota).
        Row(
            "RL.QUOTA",
            "RL.QUOTA (calendar quota)",
            lambda k, l, w, s: ["RL.QUOTA", k] + quota_limit(l, w),
            single=True,
            requires="RL.QUOTA",
            state_floor="FLOOR.LIMIT64",
            targets={"hot_P16": 0.92, "rand_P16": 0.9},
        ),
        Row(
            "RL.ALLOW",
            "RL.ALLOW (the three above at once)",
            lambda k, l, w, s: ["RL.ALLOW"] + allow_args(k, l, w, s),
            keys_per_call=3,
            five=False,
        ),
        # Measured once the module has it: renewing one lease per key.
        Row(
            "RL.LEASE",
            "RL.LEASE (renewing a lease)",
            lambda k, l, w, s: ["RL.LEASE", k, l, w, LEASE_ID],
            requires="RL.LEASE",
            lease_id_at=4,
        ),
    ]
    lua_args = {
        "zset_log": lambda l, w, s: [l, w * 1000],
        "hash_slices": lambda l, w, s: [l, w * 1000, s],
        "token_bucket": lambda l, w, s: [l, w * 1000],
        "gcra": lambda l, w, s: [l, l, w * 1000],
        "fixed_window": lambda l, w, s: [l, w * 1000],
        "zset_semaphore": lambda l, w, s: [l, w * 1000, LEASE_ID],
    }
    for name in SCRIPTS:
        sha, extra = shas[name], lua_args[name]
        rows.append(
            Row(
                "lua:" + name,
                "Lua: " + SCRIPT_TITLES[name],
                (lambda sha, extra: lambda k, l, w, s: ["EVALSHA", sha, 1, k] + extra(l, w, s))(sha, extra),
                script=name,
                lease_id_at=6 if name == "zset_semaphore" else None,
            )
        )
    if backend:
        rows += backend_rows(backend)
    if with_cell:
        rows.append(
            Row("CL.THROTTLE", "CL.THROTTLE (redis-cell)", lambda k, l, w, s: ["CL.THROTTLE", k, l - 1, l, w])
        )
    return rows


def backend_rows(sha: dict) -> list:
    """The Lua backend's rows: `EVALSHA sha numkeys keys... head args...`,
    the head empty (the script reads TIME; no TZ), then the module
    command's arguments as they are with the keys in KEYS only."""

    def ev(script, keys, args):
        return ["EVALSHA", sha[script], len(keys)] + keys + args

    def quota(k, l, w, s):
        limit, unit = quota_limit(l, w)
        return ev("quota", [k], ["", limit, unit])

    def allow(k, l, w, s):
        a = allow_args(k, l, w, s)
        return ev("allow", a[1:4], ["", a[0]] + a[4:])

    def peek(k, l, w, s):
        a = allow_args(k, l, w, s)
        return ev("peek", a[1:4], ["", a[0]] + a[4:])

    table = [
        ("RL.THROTTLE", lambda k, l, w, s: ev("throttle", [k], ["", l - 1, l, w]), {}),
        ("RL.SLIDE", lambda k, l, w, s: ev("slide", [k], ["", l, w]), {}),
        ("RL.SLICE", lambda k, l, w, s: ev("slice", [k], ["", l, w, s]), {}),
        ("RL.QUOTA", quota, {}),
        ("RL.LEASE", lambda k, l, w, s: ev("lease", [k], ["", l, w, LEASE_ID]), {"lease_id_at": 7}),
        ("RL.ALLOW", allow, {"keys_per_call": 3, "five": False, "peek": peek}),
    ]
    return [
        Row(
            "backend:" + name,
            "Lua backend: " + name,
            build,
            script="clients/lua " + name,
            row_id="be_" + name[3:].lower(),
            **extra,
        )
        for name, build, extra in table
    ]


def utc_calendar(unit, now=None, margin_s=3600) -> str:
    """The Lua backend's calendar argument for one QUOTA limit of `unit`
    (hour, day or month) in UTC, as the clients compute it
    (lua_backend.calendar_argument): the period boundaries around now plus
    and minus `margin_s`, `UTC|b0,d1,d2,...` (b0 absolute, then steps)."""
    import calendar
    import datetime
    import time

    now = int(time.time() if now is None else now)

    def start(t):
        d = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
        if unit == "hour":
            d = d.replace(minute=0, second=0)
        elif unit == "day":
            d = d.replace(hour=0, minute=0, second=0)
        else:
            d = d.replace(day=1, hour=0, minute=0, second=0)
        return calendar.timegm(d.timetuple())

    def after(b):
        if unit == "hour":
            return b + 3600
        if unit == "day":
            return b + 86400
        d = datetime.datetime.fromtimestamp(b, datetime.timezone.utc)
        y, m = (d.year + 1, 1) if d.month == 12 else (d.year, d.month + 1)
        return calendar.timegm((y, m, 1, 0, 0, 0))

    bounds = [start(now - margin_s)]
    while bounds[-1] <= now + margin_s:
        bounds.append(after(bounds[-1]))
    return "UTC|" + ",".join(str(b - a) if i else str(b) for i, (a, b) in enumerate(zip([0] + bounds, bounds)))


def quota_limit(limit, window_s) -> list:
    """RL.QUOTA's `limit unit` for the other rows' `limit` units per
    `window_s` seconds: the shortest calendar unit not shorter than the
    window, with the limit scaled to the unit's length when the window is
    shorter, so that the rate is at least the same. Hot keys (1,000,000
    per 1 s): 3,600,000,000 per hour; kept state (10,000 per 10,000,000 s):
    10,000 per month (a run that crosses the month's end, UTC, finds the
    keys emptied); the limit check (3 per 3,600 s): 3 per hour; memory
    (100 per 3,600 s): 100 per hour."""
    for unit, seconds in (("hour", 3600), ("day", 86400)):
        if window_s <= seconds:
            return [limit * (seconds // window_s), unit]
    return [limit, "month"]


def display_args(row: Row, limit, window_s, key="KEY") -> str:
    args = row.args(key, limit, window_s)
    if row.script:
        args = ["EVALSHA", "<%s.lua>" % row.script] + args[2:]
    if row.name.startswith("backend:"):
        args[1] = "<clients/lua/%s.lua>" % row.name[len("backend:RL."):].lower()
    return " ".join(args)

