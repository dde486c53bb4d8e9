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
        self.id = name.replace("lua:", "").replace("RL.", "rl_").replace("CL.", "cl_").lower()

    def args(self, key, limit, window_s, slices=SLICES):
        return [str(a) for a in self.build(key, limit, window_s, slices)]

    def peek_args(self, key, limit, window_s):
        """The same limit, peeked (quantity 0; RL.PEEK for RL.ALLOW)."""
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


def make_rows(shas: dict, with_cell: bool):
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
    return " ".join(args)

