//! The exact sliding log: at most `limit` units in any window of length
//! `window`, exact to the microsecond. Its rules, its layout (narrow and
//! wide rings, the tail, counted entries, capacity), its costs, PRECISION
//! and a clock going backwards are in docs/DESIGN.md#slide and
//! docs/DESIGN.md#precision; the saved formats in
//! docs/DESIGN.md#persistence. The words used here are those: **unit**,
//! **entry** (an instant and its count), the log's **clock**, **counted**
//! and **left**, `used(t)`.
//!
//! ## Worked example
//!
//! `limit` 3, `window` 10 s.
//!
//! - At 0 s, 1 unit: `used` = 0, allowed. Log `[0]`, remaining 2, reset after
//!   10 s (when the entry at 0 leaves).
//! - At 4 s, 2 units: `used` = 1, allowed. Log `[0, 4, 4]`, remaining 0.
//! - At 7 s, 1 unit: `used` = 3, limited. `need` = 3 + 1 - 3 = 1: the first
//!   counted unit (0 s) must leave, which it does at 10 s: retry after 3 s.
//! - At 12 s, 2 units: the entry at 0 s has left, `used` = 2, limited.
//!   `need` = 2 + 2 - 3 = 1: the first counted unit (4 s) must leave; it
//!   leaves at 14 s, with its twin: retry after 2 s.
//!
//! Files: `times.rs` holds the ring of instants, `entries.rs` the entries
//! and their counts, `format.rs` the saved formats.

mod entries;
mod format;
pub(super) mod times;

use std::collections::VecDeque;
use std::mem;

use super::time::Nanos;
use super::{
    block, millis, Ceiling, ChargeError, Decision, DecodeError, Detail, Kind, Param, ParamError,
    ParamKind, Retry, Value, MAX_DURATION,
};
use times::{Room, Times};

/// The largest `limit`: it bounds the memory of a key, and a decoded log
/// may not hold more units than this.
pub const MAX_LIMIT: u64 = 100_000_000;

/// The most units a log holds: only RL.CHARGE takes it past the limit
/// (a debt until enough has left), never past this, which keeps the
/// entries' counts exact in their `u32` sums.
pub const MAX_UNITS: u64 = u32::MAX as u64;
/// The bound of a charge, as its error states it after `quantity`.
const CHARGE_RULE: &str = "would take the units a SLIDE key holds past 4294967295";

/// The tag of the first format, one `u64` of nanoseconds per unit (RDB
/// encoding version 1), which `decode_legacy` still reads.
pub const V1_TAG: u8 = b'L';

/// Nanoseconds in a microsecond, the log's resolution.
const NS_PER_US: u64 = 1_000;

/// The latest instant an entry can hold, in µs: `Nanos::MAX` rounded up.
pub(super) const MAX_MICROS: u64 = u64::MAX.div_ceil(NS_PER_US);

/// The longest span (newest minus oldest entry, µs) a narrow log is
/// rebased into; a longer one turns wide. 7/8 of the 2^32 µs an offset
/// reaches: windows up to an hour stay narrow, and every rebase leaves 1/8
/// of the range (9 minutes) before the next.
pub const NARROW_SPAN: u64 = (1 << 32) / 8 * 7;

/// Units in one microsecond are one entry with a count from this many on
/// (below it, one entry each: cheaper than an entry and its record).
pub const COUNT_FROM: u64 = 3;

/// Validated parameters: at most `limit` units in any `window`, units
/// grouped into entries spanning less than `precision` (0: exact).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlideParams {
    limit: u64,
    window: Nanos,
    precision: Nanos,
    /// BLOCK: how long a refusal blocks the key.
    block: block::Penalty,
}

/// The rule PRECISION's value breaks above the window.
pub const PRECISION_RULE: &str = "PRECISION must be at most the window";

impl SlideParams {
    /// `None` unless `1 <= limit <= MAX_LIMIT` and `1 ns <= window <= MAX_DURATION`.
    pub fn new(limit: u64, window: Nanos) -> Option<SlideParams> {
        let limit_ok = (1..=MAX_LIMIT).contains(&limit);
        let window_ok = Nanos::new(1) <= window && window <= MAX_DURATION;
        (limit_ok && window_ok).then_some(SlideParams {
            limit,
            window,
            precision: Nanos::ZERO,
            block: block::Penalty::NONE,
        })
    }

    /// The same parameters with the BLOCK option (`None`: without).
    #[cfg(test)]
    pub fn with_block(self, block: Option<Nanos>) -> SlideParams {
        SlideParams {
            block: block::Penalty::new(block),
            ..self
        }
    }

    /// The same with PRECISION `d`: `None` unless `d <= window` and `d` is
    /// whole microseconds (the log's resolution; the command's units, s
    /// and ms, always are).
    pub fn with_precision(self, d: Nanos) -> Option<SlideParams> {
        (d <= self.window && d.get().is_multiple_of(NS_PER_US)).then_some(SlideParams {
            precision: d,
            ..self
        })
    }
}

#[cfg(test)]
impl SlideParams {
    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn window(&self) -> Nanos {
        self.window
    }

    pub fn precision(&self) -> Nanos {
        self.precision
    }
}

/// The state of one key: the entries of the admitted units, oldest first,
/// their instants (µs, rounded up) never decreasing, and the log's clock.
/// Expired entries at the front are dropped lazily, by the next allowed
/// request.
///
/// Two logs are equal when they hold the same entries with the same
/// counts and, unless empty, the same clock, whatever their mode, base and
/// capacity.
#[derive(Clone, Debug, Default)]
pub struct SlideState {
    times: Times,
    /// The counts of the entries that hold more than one unit; `None`
    /// while every entry holds one.
    counts: Option<Box<Counts>>,
    /// The instant the log was last changed at (its last read by a call
    /// that recorded or refunded): at or after every unit's exact instant,
    /// in the newest entry's microsecond or later. Meaningless when empty.
    clock: Nanos,
    /// The end of the key's block (BLOCK); zero: none was started.
    blocked: Nanos,
}

/// The counted entries: those holding more than one unit.
///
/// Entries are named by a sequence number that wraps around `u32` (a log
/// holds far fewer than 2^32 entries, so differences are exact): the front
/// entry's is `front`, and the one at index `i` has `front + i`. Units are
/// summed the same way: `records` hold, per counted entry, its sequence
/// number and the sum of `count - 1` over the counted entries before it
/// (since an arbitrary origin); `origin` is that sum at the front of the
/// log, `end` the sum after the newest counted entry.
///
/// With PRECISION, the newest entry may have **joined** later units: its
/// instant is then its last unit's, and `first` keeps its first unit's
/// (µs), which decides whether the next unit joins it too. Only a counted
/// entry can have joined (it holds at least two units), so `first` lives
/// here: it is the newest entry's first unit whenever the newest entry is
/// counted (an entry of one unit is its own first). `joined` says that
/// some counted entry may have joined units; while it is false (a key that
/// never used PRECISION) every counted entry holds units of one
/// microsecond and `first` is the newest entry's own instant.
#[derive(Clone, Debug, Default)]
struct Counts {
    front: u32,
    origin: u32,
    end: u32,
    joined: bool,
    /// The newest entry's first unit (µs), when the newest entry is counted.
    first: u64,
    /// `(sequence number, sum before it)`, oldest first; never empty.
    records: VecDeque<(u32, u32)>,
}

/// What an allowed request changes; produced by `SlideState::decide`,
/// consumed by `SlideState::apply` on the same state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlideUpdate {
    /// Entries at the front that have left and can be dropped.
    expired: usize,
    /// The instant the units are recorded at (never before the clock).
    at: Nanos,
    /// Units to record, at least 1, at most `limit`.
    quantity: u64,
    /// The limit in force: the ring's capacity never grows past it.
    limit: u64,
    /// PRECISION (0: exact): the units join the newest entry when they
    /// arrive less than this after its first unit.
    precision: Nanos,
}

impl Kind for SlideState {
    type Params = SlideParams;
    type Update = SlideUpdate;

    const NAME: &'static str = "SLIDE";
    const TYPE_NAME: &'static str = "rl-slide-";
    const TAG: u8 = b'M';
    const ENCODING_VERSION: i32 = 2;
    const LEGACY: &'static [(i32, u8)] = &[(1, V1_TAG)];
    const SUMMARY: &'static str =
        "Exact sliding-log rate limiter. Replies limited, limit, remaining, retry_after, reset_after.";
    const COMPLEXITY: &'static str =
        "O(log N) at worst in the N units held; O(1) amortized per unit recorded";
    const SINCE: &'static str = "0.1.0";
    const PARAMS: &'static [Param] = &[
        Param::capped("limit", 1, MAX_LIMIT, Some(Ceiling::SlideLimit)),
        Param::of("window", ParamKind::Duration),
    ];
    const OPTIONS: &'static [Param] = &[
        Param::of("PRECISION", ParamKind::DurationOrZero),
        block::BLOCK,
    ];

    fn params(values: &[Value<'_>]) -> Result<SlideParams, ParamError> {
        let [limit, window, precision] = Value::numbers(values)?;
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ParamError::Param(0));
        }
        let params = SlideParams::new(limit, Nanos::new(window)).ok_or(ParamError::Param(1))?;
        if precision > window {
            return Err(ParamError::Joint(PRECISION_RULE));
        }
        let mut params = params
            .with_precision(Nanos::new(precision))
            .ok_or(ParamError::Param(2))?;
        params.block = block::option(values, 3);
        Ok(params)
    }

    fn block_of(params: &SlideParams) -> Option<Nanos> {
        params.block.get()
    }

    fn blocked_until(&self) -> Nanos {
        self.blocked
    }

    fn set_blocked_until(&mut self, end: Nanos) {
        self.blocked = end;
    }

    /// Decides a request for `quantity` units at `now`. Pure: returns the
    /// decision and, only when the request is allowed and takes at least one
    /// unit, the update to `apply`. Inlined into its callers, as `apply`
    /// is, which spares their frames and a copy of the answer.
    #[inline(always)]
    fn decide(
        &self,
        now: Nanos,
        params: &SlideParams,
        quantity: u64,
    ) -> (Decision, Option<SlideUpdate>) {
        let limit = params.limit;
        let window = params.window;
        let newest = self.times.back();
        // Read (and write) the log no earlier than its clock.
        let at = match newest {
            Some(_) => now.max(self.clock),
            None => now,
        };
        let expired = self.expired_at(at, window);
        let used = match self.counts {
            None => (self.times.len() - expired) as u64,
            Some(_) => self.units().saturating_sub(self.units_before(expired)),
        };
        // The newest entry is counted whenever anything is.
        let reset_at = match newest {
            Some(newest) if used > 0 => self.instant(newest).saturating_add(window),
            _ => now,
        };

        if quantity > limit {
            let never = Decision {
                limited: true,
                limit,
                remaining: limit.saturating_sub(used),
                retry: Retry::Never,
                reset_at,
            };
            return (never, None);
        }

        let total = used.saturating_add(quantity);
        if total <= limit {
            let mut allowed = Decision {
                limited: false,
                limit,
                remaining: limit - total,
                retry: Retry::NotLimited,
                reset_at,
            };
            if quantity == 0 {
                return (allowed, None);
            }
            // Kept at their µs, the new units are at the clock, `at`.
            allowed.reset_at = at.saturating_add(window);
            let update = SlideUpdate {
                expired,
                at,
                quantity,
                limit,
                precision: params.precision,
            };
            return (allowed, Some(update));
        }

        // Limited: the oldest `need` counted units must leave first. As
        // `quantity <= limit`, `need <= used`, so that unit is in the log.
        let need = total - limit;
        let rank = self.units_before(expired).saturating_add(need - 1);
        let last_to_leave = self
            .times
            .get(self.entry_of_unit(rank))
            .or(newest)
            .map_or(at, |us| self.instant(us));
        let limited = Decision {
            limited: true,
            limit,
            remaining: limit.saturating_sub(used),
            retry: Retry::At(last_to_leave.saturating_add(window)),
            reset_at,
        };
        (limited, None)
    }

    /// Applies an update that `decide` produced on this same state: drops
    /// the expired prefix, records the units, and moves the clock to their
    /// instant.
    #[inline(always)]
    fn apply(&mut self, update: SlideUpdate) {
        let expired = update.expired.min(self.times.len());
        self.drop_front(expired);
        // Defensive: never before the clock, even if misused.
        let at = self.read_at(update.at);
        let room = Room {
            limit: usize::try_from(update.limit).unwrap_or(usize::MAX),
            tight: update.precision > Nanos::ZERO,
        };
        let (t, quantity) = (micros_up(at), update.quantity.min(update.limit));
        if update.precision == Nanos::ZERO {
            self.record(t, quantity, room);
        } else {
            self.record_within(t, quantity, update.precision, room);
        }
        self.clock = at;
        // Only dropping makes the log shorter.
        if expired > 0 {
            self.shrink_if_sparse();
        }
    }

    /// Drops the units that have left, then removes the newest `quantity`;
    /// the clock moves to the instant it read at.
    fn refund(&mut self, now: Nanos, params: &SlideParams, quantity: u64) {
        let at = self.read_at(now);
        self.drop_front(self.expired_at(at, params.window));
        self.keep_units(self.units().saturating_sub(quantity));
        self.clock = at;
        self.shrink_if_sparse();
    }

    /// Drops the units that have left, then records `quantity` units at
    /// the clock as an allowed request would, as one entry (or, below
    /// `COUNT_FROM`, one entry a unit); when that would take the log past
    /// its bound of entries, `limit` (with PRECISION `d`, also at most
    /// `window / d + 1`), they join the newest entry, whose instant moves
    /// to theirs: counted for longer, never shorter. Refused when the log
    /// would hold more than [`MAX_UNITS`].
    fn charge(
        &mut self,
        now: Nanos,
        params: &SlideParams,
        quantity: u64,
    ) -> Result<(), ChargeError> {
        let at = self.read_at(now);
        let expired = self.expired_at(at, params.window);
        let held = self.units() - self.units_before(expired);
        if held.checked_add(quantity).is_none_or(|u| u > MAX_UNITS) {
            return Err(ChargeError(CHARGE_RULE));
        }
        self.drop_front(expired);
        self.charge_at(micros_up(at), quantity, params);
        self.clock = at;
        if expired > 0 {
            self.shrink_if_sparse();
        }
        Ok(())
    }

    /// `units`: the units held (some may have left already: the window is
    /// a parameter of the call, not of the key); `entries`: the entries
    /// holding them (what the memory grows with); `oldest_age_ms` and
    /// `newest_age_ms`: how long ago the oldest and newest entry were
    /// recorded (an entry that joined units with PRECISION: its last).
    fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)> {
        let age = |us: u64| Detail::Integer(millis(now.saturating_sub(self.instant(us))));
        let mut out = vec![
            (
                "units",
                Detail::Integer(i64::try_from(self.units()).unwrap_or(i64::MAX)),
            ),
            (
                "entries",
                Detail::Integer(i64::try_from(self.times.len()).unwrap_or(i64::MAX)),
            ),
        ];
        if let (Some(oldest), Some(newest)) = (self.times.front(), self.times.back()) {
            out.push(("oldest_age_ms", age(oldest)));
            out.push(("newest_age_ms", age(newest)));
        }
        out
    }

    /// Bytes this value occupies, counting what is allocated, not what is
    /// used: the struct, the ring's capacity, the side table if any.
    fn mem_usage(&self) -> usize {
        let counts = self.counts.as_ref().map_or(0, |c| {
            mem::size_of::<Counts>() + c.records.capacity() * mem::size_of::<(u32, u32)>()
        });
        mem::size_of::<SlideState>() + self.times.heap_bytes() + counts
    }

    /// Today's format (tag `M`): `encode_v2`, in `format.rs`.
    fn encode(&self) -> Vec<u8> {
        self.encode_v2()
    }

    /// Reads today's format: `decode_v2`, in `format.rs`.
    fn decode(bytes: &[u8]) -> Result<SlideState, DecodeError> {
        SlideState::decode_v2(bytes)
    }

    /// Reads the first format (tag `L`): `decode_v1`, in `format.rs`.
    fn decode_legacy(tag: u8, bytes: &[u8]) -> Result<SlideState, DecodeError> {
        SlideState::decode_v1(tag, bytes)
    }
}

impl PartialEq for SlideState {
    fn eq(&self, other: &SlideState) -> bool {
        let joined = |log: &SlideState| log.counts.as_ref().is_some_and(|c| c.joined);
        self.times.len() == other.times.len()
            && self.times.iter().eq(other.times.iter())
            && (0..self.times.len()).all(|i| self.count_at(i) == other.count_at(i))
            && (self.times.is_empty() || self.clock == other.clock)
            && self.first_of_newest() == other.first_of_newest()
            && joined(self) == joined(other)
            && self.blocked == other.blocked
    }
}

impl Eq for SlideState {}

/// An entry's instant in ns (saturating at the far end of `Nanos`).
fn nanos(us: u64) -> Nanos {
    Nanos::new(us.saturating_mul(NS_PER_US))
}

/// An instant rounded up to the microsecond.
fn micros_up(at: Nanos) -> u64 {
    at.get().div_ceil(NS_PER_US)
}

/// The first nanosecond that rounds up to the microsecond `us`: the
/// earliest a unit kept at `us` can have been recorded at.
pub(super) fn first_ns_of(us: u64) -> u64 {
    match us.checked_sub(1) {
        Some(before) => before.saturating_mul(NS_PER_US).saturating_add(1),
        None => 0,
    }
}

#[cfg(test)]
impl SlideState {
    /// Units held, expired ones not yet dropped included.
    pub fn len(&self) -> usize {
        usize::try_from(self.units()).unwrap_or(usize::MAX)
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Entries held.
    pub fn entries(&self) -> usize {
        self.times.len()
    }

    /// Entries the ring has room for.
    pub fn capacity(&self) -> usize {
        self.times.capacity()
    }

    /// Whether the ring is wide.
    pub fn is_wide(&self) -> bool {
        self.times.is_wide()
    }

    /// Entries in the tail, the newest ones kept in the struct.
    pub(super) fn in_tail(&self) -> usize {
        self.times.tail_len()
    }

    /// Each unit's instant, in ns, oldest first.
    pub fn units_ns(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for (i, t) in self.times.iter().enumerate() {
            for _ in 0..self.count_at(i) {
                out.push(nanos(t).get());
            }
        }
        out
    }

    /// The entries as `(instant in µs, count)`, oldest first.
    pub fn entry_list(&self) -> Vec<(u64, u64)> {
        self.times
            .iter()
            .enumerate()
            .map(|(i, t)| (t, self.count_at(i)))
            .collect()
    }

    /// Records in the side table of counted entries; `None` without one.
    pub(super) fn counted_entries(&self) -> Option<usize> {
        self.counts.as_ref().map(|c| c.records.len())
    }

    /// The base of a narrow ring; `None` when wide.
    pub(super) fn narrow_base(&self) -> Option<u64> {
        self.times.narrow_base()
    }

    /// The log's clock.
    pub(super) fn clock(&self) -> Nanos {
        self.clock
    }
}
