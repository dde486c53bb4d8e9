//! The `ratelimit` section of INFO: per command, calls, allowed, limited
//! (not for RL.INSPECT and RL.RELEASE, which decide nothing) and errors;
//! per kind, the keys that hold one (all databases); the version of the
//! time-zone rules RL.QUOTA carries (`tzdb_version`); what calls
//! decided besides allowed or limited (`waits_granted`, `shadow_limited`);
//! the blocks client requests started (`blocks_started`) and the refusals a
//! running block answered (`blocked_refusals`, one per limit). The counters count
//! client calls (not commands replayed from the master or the AOF) and
//! are reset by `CONFIG RESETSTAT`.

use crate::core::quota;
use crate::kinds::{Listed, VisitKind, KINDS};
use crate::server::{Fields, Section};
use crate::stats::{Call, Stats, Tallies, Tally as Counter};

/// A row of the section: one per kind (its index in `kinds::KINDS`), then
/// the commands that are not a kind's.
#[derive(Clone, Copy)]
pub struct Stat(usize);

impl Stat {
    pub const ALLOW: Stat = Stat(KINDS.len());
    pub const PEEK: Stat = Stat(KINDS.len() + 1);
    pub const INSPECT: Stat = Stat(KINDS.len() + 2);
    pub const REFUND: Stat = Stat(KINDS.len() + 3);
    pub const RELEASE: Stat = Stat(KINDS.len() + 4);
    pub const CHARGE: Stat = Stat(KINDS.len() + 5);

    /// The row of kind `L`'s command.
    pub const fn of<L: Listed>() -> Stat {
        Stat(L::INDEX)
    }
}

/// The rows after the kinds', named as INFO shows them.
const OTHER_ROWS: [&str; 6] = ["allow", "peek", "inspect", "refund", "release", "charge"];
const ROWS: usize = KINDS.len() + OTHER_ROWS.len();

static STATS: Stats<ROWS> = Stats::new();
static BLOCKS_STARTED: Counter = Counter::new();
static BLOCKED_REFUSALS: Counter = Counter::new();

/// Counts a block a client's request started (BLOCK).
pub fn block_started() {
    BLOCKS_STARTED.bump();
}

/// Counts a refusal of at least one unit that a key's running block
/// answered.
pub fn blocked_refusal() {
    BLOCKED_REFUSALS.bump();
}

/// What INFO counts besides calls, one field each.
#[derive(Clone, Copy)]
pub enum Tally {
    /// `waits_granted`: a MAXWAIT grant for a turn later than now.
    WaitGranted,
    /// `shadow_limited`: a SHADOW limit that would have refused.
    ShadowLimited,
}

/// The fields of the tallies, in the order of [`Tally`].
const TALLIES: [&str; 2] = ["waits_granted", "shadow_limited"];

static EVENTS: Tallies<{ TALLIES.len() }> = Tallies::new();

/// Counts one event of a client call.
#[inline]
pub fn count(tally: Tally) {
    EVENTS.count(tally as usize);
}

/// Counts one client call of row `stat` and how it ended.
#[inline]
pub fn record(stat: Stat, call: Call) {
    STATS.record(stat.0, call);
}

/// The name of row `i`: the kind's name in lower case, or the command's.
fn row_name(i: usize) -> String {
    match KINDS.get(i) {
        Some(kind) => kind.name.to_ascii_lowercase(),
        None => OTHER_ROWS
            .get(i - KINDS.len())
            .copied()
            .unwrap_or_default()
            .to_string(),
    }
}

/// The module's INFO section.
pub struct Info;

impl Section for Info {
    fn write(fields: &mut Fields<'_>) {
        for i in 0..ROWS {
            let name = row_name(i);
            let counts = STATS.read(i);
            fields.number(&format!("{name}_calls"), counts.calls);
            // RL.INSPECT and RL.RELEASE decide nothing: no outcomes.
            if i != Stat::INSPECT.0 && i != Stat::RELEASE.0 {
                fields.number(&format!("{name}_allowed"), counts.allowed);
                fields.number(&format!("{name}_limited"), counts.limited);
            }
            fields.number(&format!("{name}_errors"), counts.errors);
        }
        for (i, kind) in KINDS.iter().enumerate() {
            fields.number(&format!("{}_keys", row_name(i)), kind.visit(KeysHeld));
        }
        for (i, name) in TALLIES.iter().enumerate() {
            fields.number(name, EVENTS.read(i));
        }
        fields.number("blocks_started", BLOCKS_STARTED.read());
        fields.number("blocked_refusals", BLOCKED_REFUSALS.read());
        fields.text(c"tzdb_version", quota::tzdb_version());
    }

    fn reset() {
        STATS.reset();
        EVENTS.reset();
        BLOCKS_STARTED.reset();
        BLOCKED_REFUSALS.reset();
    }
}

/// The keys holding a kind's state, in all databases.
struct KeysHeld;

impl VisitKind for KeysHeld {
    type Out = u64;

    fn visit<L: Listed>(self) -> u64 {
        L::module_type().keys()
    }
}
