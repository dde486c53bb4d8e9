//! The exact sliding log: at most `limit` units in any window of length
//! `window`, exact to the microsecond.
//!
//! Its domain words:
//!
//! - **unit**: what a request costs; a request for `quantity` units that is
//!   allowed at `t` records `quantity` units at `t`.
//! - **entry**: an instant and the units recorded at it (its **count**,
//!   usually 1). The log is the sequence of entries, oldest first, their
//!   instants never decreasing.
//! - **microsecond**: the log's resolution. A unit recorded at `t` is kept
//!   at `t` rounded **up** to the microsecond, so it leaves the window at
//!   most 1 µs later than its exact moment, and never earlier.
//! - **clock**: the instant (ns) the log was last changed at. It is never
//!   read before it, and the entries of the clock's own microsecond are at
//!   the clock, not at the microsecond's end: the units a call just
//!   recorded leave exactly one window later, and `reset_after` right
//!   after a call is the window itself. An entry's **instant** is thus its
//!   microsecond or the clock, whichever is earlier.
//! - **window**: the half-open interval `(t - window, t]`. An entry at `e` is
//!   **counted** at every `t < e + window`; at `e + window` it has **left**
//!   (it is **expired**). `used(t)` is the number of units counted at `t`.
//! - A request for `quantity` units at `now` is **allowed** when
//!   `used(now) + quantity <= limit`. A quantity above the limit never fits.
//!   `quantity = 0` is a **peek**: it answers, and records nothing.
//!
//! ## Four bytes per unit
//!
//! The instants are microseconds since the epoch, kept in a ring in one of
//! two **modes**:
//!
//! - **narrow** (the usual one): a `u32` offset from a `base` instant, 4
//!   bytes per entry. Offsets reach 2^32 µs (71 minutes) past the base. When
//!   a new instant does not fit, the log is **rebased** on its oldest entry
//!   (every offset minus the oldest one) if the entries then span at most
//!   [`NARROW_SPAN`] (62 minutes, 7/8 of the range), else it turns wide.
//! - **wide**: the instant itself, a `u64`, 8 bytes per entry. The span of
//!   a log is only bounded by the window (up to ten years), not by the
//!   format. A wide log turns narrow again when a new entry finds it
//!   spanning at most [`NARROW_SPAN`].
//!
//! A rebase or a change of mode rewrites the whole ring (O(n)), but each is
//! followed by at least 2^32 - [`NARROW_SPAN`] µs (9 minutes) of the log's
//! time before the next, and touches only entries at most [`NARROW_SPAN`]
//! old (or, turning wide, in the narrow range): each entry is rewritten a
//! bounded number of times in its life, so this stays O(1) amortized per
//! entry. A window of an hour with steady traffic stays narrow, rebasing
//! about every 11 minutes.
//!
//! Units that share a microsecond share an entry once there are
//! [`COUNT_FROM`] of them (a request for 1,000 units is one entry): an
//! entry's count is kept in a side table of **counted** entries, one `(u32,
//! u32)` record each (its sequence number and the extra units of the counted
//! entries before it), empty and unallocated while every entry holds one
//! unit. Fewer units in one microsecond stay one entry each: two plain
//! entries cost less than an entry and its record. The sums in the records
//! make the one question that needs more than the ends of the log a binary
//! search: when a request is limited, `need = used + quantity - limit` of
//! the counted units must leave first, and the entry holding the last of
//! them is found by its rank among the units (units leave in order).
//!
//! The ring's capacity doubles while it is small (up to 64 entries: few
//! reallocations for the short logs most keys hold), then grows to 1/16
//! more than it needs (rounded up to 4 entries), never past the limit in
//! force unless the entries themselves need it; it shrinks back to the
//! planned capacity when it holds more than twice that (plus 8 entries).
//! A full log of one unit per microsecond therefore takes at most about
//! 4.25 bytes per unit, and its memory stays bounded by the limit, not by
//! the traffic: expired entries are dropped before new ones are appended,
//! and at most `limit` units are ever counted.
//!
//! Cost: the counted part starts after the expired prefix, found in O(1)
//! when none or all of the log is expired and otherwise by a galloping
//! search from the front, O(log k) in the k expired entries (a limited call
//! changes nothing, so it must not rescan what a later call would scan
//! again). An allowed call drops the expired prefix and appends one or two
//! entries: each entry is appended once and dropped once, and growing or
//! shrinking copies O(1) amortized per entry. So a call is O(log n) at
//! worst, and O(1) amortized per unit recorded.
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
//! ## PRECISION: entries drawn by the traffic
//!
//! With PRECISION `d > 0` (whole microseconds; the command gives seconds
//! or milliseconds, at most the window) an entry is a group of units
//! whose first and last arrived less than `d` apart. A unit recorded at
//! `t` (its µs) **joins** the newest entry when `t - first < d`, `first`
//! being the µs of that entry's first unit: the entry's count grows and
//! its instant moves to `t`, so it leaves at its last unit's instant plus
//! the window. Otherwise the units start an entry of their own (one entry
//! whatever the quantity). So:
//!
//! - a unit is counted at most `d` longer than exact (less than `d` past
//!   its own µs), never shorter: never more than `limit` units in any
//!   window, as without the option;
//! - requests at least `d` apart never join: the exact log's replies;
//! - the first units of two entries are at least `d` apart, and an entry
//!   still held was counted after `now - window`, so its first unit came
//!   after `now - window - d`: at most `ceil(window / d) + 1` entries,
//!   whatever the limit and the traffic.
//!
//! Joining is O(1): the newest entry is counted (it holds two units or
//! more), its instant is rewritten in place and its count grows; only the
//! newest entry's first unit is kept, in the side table of counts. A log
//! with PRECISION grows its ring and its table tightly (a quarter more
//! than needed, no rounding to 4), as its few entries hold many units.
//!
//! `d` is a parameter of the call: it may change between calls, and what
//! is recorded keeps its leave time. A refund takes the newest units; a
//! joined entry keeps its instant (its units leave no earlier). When it
//! removes the newest entry whole, the new newest entry's first unit, if
//! it may have joined units, is taken at the previous entry's instant:
//! earlier than the truth, so later units join it less, never more.
//!
//! ## Clock going backwards
//!
//! If `now` is earlier than the log's clock, the log is read and written
//! at its clock instead: nothing recorded is ever in the future, nothing a
//! call dropped as expired could be counted again, so nothing expires early
//! and nothing extra is let through. The instants in the `Decision` stay
//! absolute; the reply measures them from the real `now`.
//!
//! The state does not depend on the parameters, so they may change between
//! calls: a lowered limit applies at once to what is already recorded (which
//! can then be more than the new limit; `remaining` saturates at 0).
//!
//! ## Saved format
//!
//! [`Limiter::encode`] writes the entries and the clock as varints (see
//! `encode`), about one to four bytes an entry, tagged `M` in `RL.STATE`
//! and saved under RDB encoding version 2; a log whose entries may have
//! joined units (PRECISION) adds its newest entry's first unit at the end,
//! so the logs of keys that never used it encode as they did before. The first format (tag `L`,
//! version 1: one `u64` of nanoseconds per unit) is still read by
//! `decode_legacy`, rounding each instant up to the microsecond (the
//! newest instant becomes the clock, exactly).

use std::collections::VecDeque;
use std::mem;

use super::codec::{Reader, Writer};
use super::time::Nanos;
use super::{
    millis, Arg, ArgKind, Ceiling, Decision, DecodeError, Detail, Limiter, ParamError, Retry,
    MAX_DURATION,
};

/// The largest `limit`: it bounds the memory of a key, and a decoded log
/// may not hold more units than this.
pub const MAX_LIMIT: u64 = 100_000_000;

/// The tag of the first format, one `u64` of nanoseconds per unit (RDB
/// encoding version 1), which `decode_legacy` still reads.
pub const V1_TAG: u8 = b'L';

/// Nanoseconds in a microsecond, the log's resolution.
const NS_PER_US: u64 = 1_000;

/// The latest instant an entry can hold, in µs: `Nanos::MAX` rounded up.
const MAX_MICROS: u64 = u64::MAX.div_ceil(NS_PER_US);

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
        })
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
pub struct SlideLog {
    times: Times,
    /// The counts of the entries that hold more than one unit; `None`
    /// while every entry holds one.
    counts: Option<Box<Counts>>,
    /// The instant the log was last changed at (its last read by a call
    /// that recorded or refunded): at or after every unit's exact instant,
    /// in the newest entry's microsecond or later. Meaningless when empty.
    clock: Nanos,
}

/// The instants of the entries, in µs since the epoch, in one of two modes.
#[derive(Clone, Debug)]
enum Times {
    /// Offsets from `base`: every instant in `base ..= base + u32::MAX`.
    Narrow { base: u64, offsets: VecDeque<u32> },
    /// The instants themselves.
    Wide(VecDeque<u64>),
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

/// What an allowed request changes; produced by `SlideLog::decide`,
/// consumed by `SlideLog::apply` on the same state.
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

impl Limiter for SlideLog {
    type Params = SlideParams;
    type Update = SlideUpdate;

    const NAME: &'static str = "SLIDE";
    const TYPE_NAME: &'static str = "rl-slide-";
    const TAG: u8 = b'M';
    const LEGACY_TAGS: &'static [u8] = &[V1_TAG];
    const ARGS: &'static [Arg] = &[
        Arg {
            name: "limit",
            kind: ArgKind::Integer {
                min: 1,
                max: MAX_LIMIT,
                ceiling: Some(Ceiling::SlideLimit),
            },
        },
        Arg {
            name: "window",
            kind: ArgKind::Duration,
        },
    ];
    const OPTIONS: &'static [Arg] = &[Arg {
        name: "PRECISION",
        kind: ArgKind::DurationOrZero,
    }];

    fn params(values: &[u64]) -> Result<SlideParams, ParamError> {
        let &[limit, window, precision] = values else {
            return Err(ParamError::Arg(values.len().min(2)));
        };
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ParamError::Arg(0));
        }
        let params = SlideParams::new(limit, Nanos::new(window)).ok_or(ParamError::Arg(1))?;
        if precision > window {
            return Err(ParamError::Joint(PRECISION_RULE));
        }
        params
            .with_precision(Nanos::new(precision))
            .ok_or(ParamError::Arg(2))
    }

    /// Decides a request for `quantity` units at `now`. Pure: returns the
    /// decision and, only when the request is allowed and takes at least one
    /// unit, the update to `apply`.
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
        mem::size_of::<SlideLog>() + self.times.heap_bytes() + counts
    }

    /// Canonical encoding (tag `M`, RDB encoding version 2), all varints
    /// (`codec::Writer::varint`):
    ///
    /// ```text
    /// n                         the number of entries
    /// n times:
    ///   (delta << 1) | counted  delta: µs since the previous entry (for
    ///                           the first, since the epoch)
    ///   count - 2               only when counted (count >= 2)
    /// if n > 0:
    ///   clock - first           ns; first: the first nanosecond of the
    ///                           newest entry's µs, (µs - 1) * 1000 + 1
    /// only if entries may have joined units (PRECISION):
    ///   newest - first          µs: how long before the newest entry's
    ///                           instant its first unit came (0 when it
    ///                           is an entry of one unit)
    /// ```
    ///
    /// Dense traffic takes one or two bytes an entry, and no entry more
    /// than it takes in memory; the clock usually one or two bytes. The
    /// mode, base and capacity are not part of it. The last field is
    /// written only once a counted entry may have joined units, so a key
    /// that never used PRECISION encodes as it did before the option.
    fn encode(&self) -> Vec<u8> {
        let n = self.times.len();
        let mut w = Writer::with_capacity(10 + 2 * n);
        w.varint(n as u64);
        let mut records = self
            .counts
            .as_ref()
            .map(|c| (c, c.records.iter().peekable()));
        let mut previous = 0;
        for (i, t) in self.times.iter().enumerate() {
            let mut count = 1;
            if let Some((c, iter)) = records.as_mut() {
                if let Some(&&(seq, before)) = iter.peek() {
                    if seq.wrapping_sub(c.front) as usize == i {
                        iter.next();
                        let after = iter.peek().map_or(c.end, |&&(_, next)| next);
                        count = u64::from(after.wrapping_sub(before)) + 1;
                    }
                }
            }
            let delta = t.saturating_sub(previous);
            w.varint((delta << 1) | u64::from(count > 1));
            if count > 1 {
                w.varint(count - 2);
            }
            previous = t;
        }
        if n > 0 {
            w.varint(self.clock.get().saturating_sub(first_ns_of(previous)));
        }
        if self.counts.as_ref().is_some_and(|c| c.joined) {
            let first = self.first_of_newest().unwrap_or(previous);
            w.varint(previous.saturating_sub(first));
        }
        w.into_bytes()
    }

    /// Decodes what `encode` wrote, validating everything: the exact
    /// length, at most `MAX_LIMIT` entries and units, instants and the
    /// clock within range. Every entry takes at least a byte, so what is
    /// reserved is bounded by the payload's own length (at most 8 bytes of
    /// memory per byte).
    fn decode(bytes: &[u8]) -> Result<SlideLog, DecodeError> {
        let mut r = Reader::new(bytes);
        let n = r.varint()?;
        if n > MAX_LIMIT {
            return Err(DecodeError::Invalid(
                "slide log holds more entries than any limit",
            ));
        }
        let n = usize::try_from(n).map_err(|_| DecodeError::Length)?;
        if n > r.remaining() {
            return Err(DecodeError::Length);
        }
        let mut log = SlideLog::with_capacity(n)?;
        let mut previous = 0u64;
        let mut units = 0u64;
        for _ in 0..n {
            let word = r.varint()?;
            let t = previous
                .checked_add(word >> 1)
                .filter(|&t| t <= MAX_MICROS)
                .ok_or(DecodeError::Invalid("slide log instant out of range"))?;
            let count = if word & 1 == 1 {
                r.varint()?.saturating_add(2)
            } else {
                1
            };
            units = units.saturating_add(count);
            if units > MAX_LIMIT {
                return Err(DecodeError::Invalid(
                    "slide log holds more units than any limit",
                ));
            }
            log.push_entry(t, count, Room::UNBOUNDED);
            previous = t;
        }
        if n > 0 {
            let clock = first_ns_of(previous)
                .checked_add(r.varint()?)
                .ok_or(DecodeError::Invalid("slide log clock out of range"))?;
            log.clock = Nanos::new(clock);
        }
        if r.remaining() > 0 {
            log.decode_first(r.varint()?)?;
        }
        r.finish()?;
        log.shrink_to_fit();
        Ok(log)
    }

    /// The first format (tag `L`, RDB encoding version 1): the number of
    /// units (`u64`), then each unit's instant in ns (`u64`), oldest first.
    /// Validated as it always was (exact length, at most `MAX_LIMIT` units,
    /// never decreasing), then each instant is rounded up to the
    /// microsecond: a unit may leave up to 1 µs later than before, never
    /// earlier; the newest instant becomes the clock, so the newest units
    /// leave exactly as before. Units sharing a microsecond become one
    /// entry from [`COUNT_FROM`] on, as if recorded today.
    fn decode_legacy(tag: u8, bytes: &[u8]) -> Result<SlideLog, DecodeError> {
        if tag != V1_TAG {
            return Err(DecodeError::Invalid("no such format"));
        }
        let mut r = Reader::new(bytes);
        let count = r.u64()?;
        if count > MAX_LIMIT {
            return Err(DecodeError::Invalid(
                "slide log holds more units than any limit",
            ));
        }
        let count = usize::try_from(count).map_err(|_| DecodeError::Length)?;
        if count.checked_mul(mem::size_of::<u64>()) != Some(r.remaining()) {
            return Err(DecodeError::Length);
        }
        let mut log = SlideLog::with_capacity(count)?;
        let mut previous = 0;
        for _ in 0..count {
            let entry = r.u64()?;
            if entry < previous {
                return Err(DecodeError::Invalid("slide log timestamps decrease"));
            }
            log.record(micros_up(Nanos::new(entry)), 1, Room::UNBOUNDED);
            previous = entry;
        }
        log.clock = Nanos::new(previous);
        r.finish()?;
        log.shrink_to_fit();
        Ok(log)
    }
}

impl PartialEq for SlideLog {
    fn eq(&self, other: &SlideLog) -> bool {
        let joined = |log: &SlideLog| log.counts.as_ref().is_some_and(|c| c.joined);
        self.times.len() == other.times.len()
            && self.times.iter().eq(other.times.iter())
            && (0..self.times.len()).all(|i| self.count_at(i) == other.count_at(i))
            && (self.times.len() == 0 || self.clock == other.clock)
            && self.first_of_newest() == other.first_of_newest()
            && joined(self) == joined(other)
    }
}

impl Eq for SlideLog {}

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
fn first_ns_of(us: u64) -> u64 {
    match us.checked_sub(1) {
        Some(before) => before.saturating_mul(NS_PER_US).saturating_add(1),
        None => 0,
    }
}

impl SlideLog {
    /// An empty log whose ring has room for `entries`.
    fn with_capacity(entries: usize) -> Result<SlideLog, DecodeError> {
        let mut offsets = VecDeque::new();
        offsets
            .try_reserve_exact(entries)
            .map_err(|_| DecodeError::Invalid("slide log too large to allocate"))?;
        Ok(SlideLog {
            times: Times::Narrow { base: 0, offsets },
            counts: None,
            clock: Nanos::ZERO,
        })
    }

    /// The instant the log is read and written at for a call at `now`:
    /// `now`, or the log's clock if `now` is before it (the clock went
    /// back).
    fn read_at(&self, now: Nanos) -> Nanos {
        if self.times.len() == 0 {
            now
        } else {
            now.max(self.clock)
        }
    }

    /// The instant of an entry kept at `us`: its microsecond, or the clock
    /// in the clock's own microsecond.
    fn instant(&self, us: u64) -> Nanos {
        nanos(us).min(self.clock)
    }

    /// How many entries at the front have left by `at`: those whose
    /// instant is at or before `at - window`.
    #[inline]
    fn expired_at(&self, at: Nanos, window: Nanos) -> usize {
        // Before `window` has passed since the epoch nothing can have left.
        let Some(cutoff) = at.get().checked_sub(window.get()) else {
            return 0;
        };
        if self.clock.get() <= cutoff {
            // Every instant is at or before the clock.
            return self.times.len();
        }
        // The others are at their microseconds: `e` has left when
        // `e * 1000 <= cutoff` (the clock's microsecond, after the cutoff,
        // is not among them).
        self.times.leading_at_most(cutoff / NS_PER_US)
    }

    /// Units held.
    fn units(&self) -> u64 {
        let extra = self
            .counts
            .as_ref()
            .map_or(0, |c| c.end.wrapping_sub(c.origin));
        self.times.len() as u64 + u64::from(extra)
    }

    /// Units held in the entries before index `index`.
    #[inline]
    fn units_before(&self, index: usize) -> u64 {
        let Some(c) = &self.counts else {
            return index as u64;
        };
        let k = c
            .records
            .partition_point(|&(seq, _)| (seq.wrapping_sub(c.front) as usize) < index);
        let sum = c.records.get(k).map_or(c.end, |&(_, before)| before);
        index as u64 + u64::from(sum.wrapping_sub(c.origin))
    }

    /// The index of the entry holding the unit of rank `rank` (0 for the
    /// oldest unit held).
    fn entry_of_unit(&self, rank: u64) -> usize {
        let as_index = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let Some(c) = &self.counts else {
            return as_index(rank);
        };
        // The units before a counted entry: its index plus the extra units
        // of the counted entries before it.
        let before = |&(seq, sum): &(u32, u32)| {
            u64::from(seq.wrapping_sub(c.front)) + u64::from(sum.wrapping_sub(c.origin))
        };
        let k = c.records.partition_point(|r| before(r) <= rank);
        let Some(k) = k.checked_sub(1) else {
            // Before the first counted entry, one unit per entry.
            return as_index(rank);
        };
        let record = c.records[k];
        let index = u64::from(record.0.wrapping_sub(c.front));
        let after = c.records.get(k + 1).map_or(c.end, |&(_, sum)| sum);
        let count = u64::from(after.wrapping_sub(record.1)) + 1;
        let first = before(&record);
        if rank < first + count {
            as_index(index)
        } else {
            // In the entries of one unit after it.
            as_index(index + 1 + (rank - first - count))
        }
    }

    /// The count of the entry at `index` (O(log n); for whole-log walks
    /// `encode` does better).
    fn count_at(&self, index: usize) -> u64 {
        self.units_before(index + 1) - self.units_before(index)
    }

    /// Whether the entry at `index` is counted, for one of the two newest.
    fn is_counted_near_back(&self, index: usize) -> bool {
        self.counts.as_ref().is_some_and(|c| {
            c.records
                .back()
                .is_some_and(|&(seq, _)| seq.wrapping_sub(c.front) as usize == index)
        })
    }

    /// Appends an entry at `t` (µs, not before the newest) holding `count`
    /// units (at least 1).
    fn push_entry(&mut self, t: u64, count: u64, room: Room) {
        self.times.push(t, room);
        if count > 1 {
            let index = (self.times.len() - 1) as u32;
            let c = self.counts.get_or_insert_with(Box::default);
            reserve(&mut c.records, 1, room);
            c.records.push_back((c.front.wrapping_add(index), c.end));
            c.end = c.end.wrapping_add((count - 1) as u32);
            c.first = t;
        }
    }

    /// The instant (µs) of the newest entry's first unit: its own instant
    /// unless it joined later units (PRECISION). `None` when empty.
    fn first_of_newest(&self) -> Option<u64> {
        let newest = self.times.back()?;
        let len = self.times.len();
        match &self.counts {
            Some(c) if self.is_counted_near_back(len - 1) => Some(c.first.min(newest)),
            _ => Some(newest),
        }
    }

    /// Records `quantity` units at `t` (µs, not before the newest entry)
    /// with PRECISION `d` (> 0): they join the newest entry when `t` is
    /// less than `d` after its first unit, else they start an entry of
    /// their own (one entry, whatever the quantity).
    fn record_within(&mut self, t: u64, quantity: u64, d: Nanos, room: Room) {
        if quantity == 0 {
            return;
        }
        match self.first_of_newest() {
            Some(first) if t.saturating_sub(first).saturating_mul(NS_PER_US) < d.get() => {
                self.join(t, quantity, room);
            }
            _ => self.push_entry(t, quantity, room),
        }
    }

    /// Adds `quantity` units to the newest entry (there is one) and moves
    /// its instant to `t` (µs, not before it); its first unit stays.
    fn join(&mut self, t: u64, quantity: u64, room: Room) {
        let len = self.times.len();
        let Some(first) = self.first_of_newest() else {
            return;
        };
        if self.is_counted_near_back(len - 1) {
            // The usual case: a counted newest entry, moved in place.
            if self.times.set_back(t) {
                if let Some(c) = self.counts.as_mut() {
                    c.end = c.end.wrapping_add(quantity as u32);
                    c.joined = true;
                }
                return;
            }
        }
        // Take the newest entry out and push it back at `t` with its units
        // and the new ones (the push may rebase or change the mode).
        let count = self.count_at(len - 1);
        if self.is_counted_near_back(len - 1) {
            if let Some(c) = self.counts.as_mut() {
                if let Some((_, before)) = c.records.pop_back() {
                    c.end = before;
                }
            }
        }
        self.times.truncate(len - 1);
        self.push_entry(t, count.saturating_add(quantity), room);
        if let Some(c) = self.counts.as_mut() {
            c.first = first;
            c.joined = true;
        }
    }

    /// After a refund took whole entries from the back: the new newest
    /// entry's first unit is not known if it may have joined units, so it
    /// is taken at the previous entry's instant (or 0), which is never
    /// after it. Earlier than the truth only means fewer units join it:
    /// a unit is still never counted more than PRECISION late.
    fn forget_first_of_newest(&mut self) {
        let len = self.times.len();
        if len == 0 || !self.is_counted_near_back(len - 1) {
            return;
        }
        let previous = len.checked_sub(2).and_then(|i| self.times.get(i));
        let own = self.times.back().unwrap_or(0);
        if let Some(c) = self.counts.as_mut() {
            c.first = if c.joined { previous.unwrap_or(0) } else { own };
        }
    }

    /// Sets the newest entry's first unit from the last field of the
    /// encoding (`newest - first`, µs), refusing what no log holds: a
    /// first unit before the previous entry, or apart from an entry of
    /// one unit.
    fn decode_first(&mut self, back: u64) -> Result<(), DecodeError> {
        let bad = DecodeError::Invalid("slide log first unit out of range");
        let len = self.times.len();
        let newest = self.times.back().ok_or(bad)?;
        let first = newest.checked_sub(back).ok_or(bad)?;
        let previous = len.checked_sub(2).and_then(|i| self.times.get(i));
        if previous.is_some_and(|p| first < p) {
            return Err(bad);
        }
        let counted = self.is_counted_near_back(len - 1);
        let c = self.counts.as_mut().ok_or(bad)?;
        if !counted && back != 0 {
            return Err(bad);
        }
        c.joined = true;
        if counted {
            c.first = first;
        }
        Ok(())
    }

    /// Records `quantity` units at `t` (µs, not before the newest entry):
    /// into the newest entry if it is counted and at `t`, into one counted
    /// entry if that makes [`COUNT_FROM`] units at `t` or more (taking in
    /// the single-unit entries at `t`), else one entry per unit.
    fn record(&mut self, t: u64, quantity: u64, room: Room) {
        if quantity == 0 {
            return;
        }
        // The usual case first: one unit, in a microsecond of its own, in
        // a narrow ring that has room and reach for it.
        if let Times::Narrow { base, offsets } = &mut self.times {
            if let (1, Some(&newest), Some(offset)) =
                (quantity, offsets.back(), offset_of(*base, t))
            {
                if offset != newest && offsets.len() < offsets.capacity() {
                    offsets.push_back(offset);
                    return;
                }
            }
        }
        let len = self.times.len();
        if self.times.back() == Some(t) {
            if self.is_counted_near_back(len - 1) {
                if let Some(c) = self.counts.as_mut() {
                    c.end = c.end.wrapping_add(quantity as u32);
                }
                return;
            }
            let twin = len >= 2
                && self.times.get(len - 2) == Some(t)
                && !self.is_counted_near_back(len - 2);
            let singles: usize = if twin { 2 } else { 1 };
            if singles as u64 + quantity >= COUNT_FROM {
                self.times.truncate(len - singles);
                self.push_entry(t, singles as u64 + quantity, room);
                return;
            }
        } else if quantity >= COUNT_FROM {
            self.push_entry(t, quantity, room);
            return;
        }
        for _ in 0..quantity {
            self.push_entry(t, 1, room);
        }
    }

    /// Drops the `n` oldest entries.
    fn drop_front(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.times.drop_front(n);
        if let Some(c) = self.counts.as_mut() {
            let k = c
                .records
                .partition_point(|&(seq, _)| (seq.wrapping_sub(c.front) as usize) < n);
            c.records.drain(..k);
            c.origin = c.records.front().map_or(c.end, |&(_, before)| before);
            c.front = c.front.wrapping_add(n as u32);
            if c.records.is_empty() {
                self.counts = None;
            }
        }
    }

    /// Keeps the `keep` oldest units, removing the newest others.
    fn keep_units(&mut self, keep: u64) {
        if keep >= self.units() {
            return;
        }
        if keep == 0 {
            self.times.truncate(0);
            self.counts = None;
            return;
        }
        let last = self.entry_of_unit(keep - 1);
        let in_last = keep - self.units_before(last);
        let newest_kept = last + 1 == self.times.len();
        self.times.truncate(last + 1);
        if let Some(c) = self.counts.as_mut() {
            let k = c
                .records
                .partition_point(|&(seq, _)| (seq.wrapping_sub(c.front) as usize) <= last);
            if let Some(&(_, before)) = c.records.get(k) {
                c.end = before;
            }
            c.records.truncate(k);
            if let Some(&(seq, before)) = c.records.back() {
                if seq.wrapping_sub(c.front) as usize == last {
                    // The entry keeps `in_last` of its units.
                    c.end = before.wrapping_add((in_last - 1) as u32);
                    if in_last == 1 {
                        c.records.pop_back();
                    }
                }
            }
            if c.records.is_empty() {
                self.counts = None;
            }
        }
        if !newest_kept {
            self.forget_first_of_newest();
        }
    }

    fn shrink_if_sparse(&mut self) {
        self.times.shrink_if_sparse();
        if let Some(c) = self.counts.as_mut() {
            shrink_if_sparse(&mut c.records);
        }
    }

    fn shrink_to_fit(&mut self) {
        self.times.shrink_to_fit();
        if let Some(c) = self.counts.as_mut() {
            c.records.shrink_to_fit();
        }
    }
}

impl Default for Times {
    fn default() -> Times {
        Times::Narrow {
            base: 0,
            offsets: VecDeque::new(),
        }
    }
}

impl Times {
    fn len(&self) -> usize {
        match self {
            Times::Narrow { offsets, .. } => offsets.len(),
            Times::Wide(times) => times.len(),
        }
    }

    /// The instant of the entry at `index`, in µs.
    fn get(&self, index: usize) -> Option<u64> {
        match self {
            Times::Narrow { base, offsets } => offsets
                .get(index)
                .map(|&offset| base.saturating_add(u64::from(offset))),
            Times::Wide(times) => times.get(index).copied(),
        }
    }

    fn front(&self) -> Option<u64> {
        match self {
            Times::Narrow { base, offsets } => offsets
                .front()
                .map(|&offset| base.saturating_add(u64::from(offset))),
            Times::Wide(times) => times.front().copied(),
        }
    }

    fn back(&self) -> Option<u64> {
        match self {
            Times::Narrow { base, offsets } => offsets
                .back()
                .map(|&offset| base.saturating_add(u64::from(offset))),
            Times::Wide(times) => times.back().copied(),
        }
    }

    fn iter(&self) -> TimesIter<'_> {
        match self {
            Times::Narrow { base, offsets } => TimesIter::Narrow(*base, offsets.iter()),
            Times::Wide(times) => TimesIter::Wide(times.iter()),
        }
    }

    /// How many entries at the front are at or before `cutoff` (µs).
    fn leading_at_most(&self, cutoff: u64) -> usize {
        match self {
            Times::Narrow { base, offsets } => match cutoff.checked_sub(*base) {
                None => 0,
                Some(offset) => match u32::try_from(offset) {
                    Ok(offset) => leading_at_most(offsets, offset),
                    Err(_) => offsets.len(),
                },
            },
            Times::Wide(times) => leading_at_most(times, cutoff),
        }
    }

    fn drop_front(&mut self, n: usize) {
        match self {
            Times::Narrow { offsets, .. } => drop_front(offsets, n),
            Times::Wide(times) => drop_front(times, n),
        }
    }

    /// Moves the newest entry to `t` (µs, not before it) if the ring holds
    /// it as it is; answers whether it did.
    fn set_back(&mut self, t: u64) -> bool {
        match self {
            Times::Narrow { base, offsets } => match (offset_of(*base, t), offsets.back_mut()) {
                (Some(offset), Some(back)) => {
                    *back = offset;
                    true
                }
                _ => false,
            },
            Times::Wide(times) => match times.back_mut() {
                Some(back) => {
                    *back = t;
                    true
                }
                None => false,
            },
        }
    }

    fn truncate(&mut self, len: usize) {
        match self {
            Times::Narrow { offsets, .. } => offsets.truncate(len),
            Times::Wide(times) => times.truncate(len),
        }
    }

    /// Appends `t` (µs, not before the newest entry), changing the base or
    /// the mode when a narrow ring cannot hold it or a wide one could be
    /// narrow (see the module doc).
    fn push(&mut self, t: u64, room: Room) {
        if let Times::Narrow { base, offsets } = self {
            if offsets.is_empty() {
                *base = t;
            }
            if let Some(offset) = offset_of(*base, t) {
                reserve(offsets, 1, room);
                offsets.push_back(offset);
                return;
            }
        }
        let oldest = self.front().unwrap_or(t);
        if t.saturating_sub(oldest) <= NARROW_SPAN {
            self.narrow_on(oldest, room);
        } else {
            self.widen(room);
        }
        match self {
            Times::Narrow { base, offsets } => {
                reserve(offsets, 1, room);
                offsets.push_back(offset_of(*base, t).unwrap_or(u32::MAX));
            }
            Times::Wide(times) => {
                reserve(times, 1, room);
                times.push_back(t);
            }
        }
    }

    /// Makes the ring narrow with base `base`, the oldest entry: rebases a
    /// narrow ring in place, rewrites a wide one.
    fn narrow_on(&mut self, base: u64, room: Room) {
        match self {
            Times::Narrow {
                base: current,
                offsets,
            } => {
                let shift = offset_of(*current, base).unwrap_or(0);
                let (a, b) = offsets.as_mut_slices();
                for offset in a.iter_mut().chain(b.iter_mut()) {
                    *offset = offset.saturating_sub(shift);
                }
                *current = base;
            }
            Times::Wide(times) => {
                let mut offsets = VecDeque::new();
                reserve(&mut offsets, times.len() + 1, room);
                offsets.extend(
                    times
                        .iter()
                        .map(|&t| offset_of(base, t).unwrap_or(u32::MAX)),
                );
                *self = Times::Narrow { base, offsets };
            }
        }
    }

    /// Makes the ring wide.
    fn widen(&mut self, room: Room) {
        if let Times::Narrow { base, offsets } = self {
            let mut times = VecDeque::new();
            reserve(&mut times, offsets.len() + 1, room);
            times.extend(offsets.iter().map(|&o| base.saturating_add(u64::from(o))));
            *self = Times::Wide(times);
        }
    }

    /// Entries the ring has room for.
    #[cfg(test)]
    fn capacity(&self) -> usize {
        match self {
            Times::Narrow { offsets, .. } => offsets.capacity(),
            Times::Wide(times) => times.capacity(),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Times::Narrow { offsets, .. } => offsets.capacity() * mem::size_of::<u32>(),
            Times::Wide(times) => times.capacity() * mem::size_of::<u64>(),
        }
    }

    fn shrink_if_sparse(&mut self) {
        match self {
            Times::Narrow { offsets, .. } => shrink_if_sparse(offsets),
            Times::Wide(times) => shrink_if_sparse(times),
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            Times::Narrow { offsets, .. } => offsets.shrink_to_fit(),
            Times::Wide(times) => times.shrink_to_fit(),
        }
    }
}

/// The instants of a ring, oldest first, in µs.
enum TimesIter<'a> {
    Narrow(u64, std::collections::vec_deque::Iter<'a, u32>),
    Wide(std::collections::vec_deque::Iter<'a, u64>),
}

impl Iterator for TimesIter<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        match self {
            TimesIter::Narrow(base, offsets) => offsets
                .next()
                .map(|&offset| base.saturating_add(u64::from(offset))),
            TimesIter::Wide(times) => times.next().copied(),
        }
    }
}

/// `t - base` as an offset, if it is one.
fn offset_of(base: u64, t: u64) -> Option<u32> {
    t.checked_sub(base).and_then(|d| u32::try_from(d).ok())
}

/// How many values at the front of `ring` (nondecreasing) are `<= cutoff`:
/// O(1) when none or all are, else a galloping search from the front,
/// O(log k) for an answer of k.
fn leading_at_most<T: Copy + Ord>(ring: &VecDeque<T>, cutoff: T) -> usize {
    let len = ring.len();
    match (ring.front(), ring.back()) {
        (Some(&oldest), Some(&newest)) if oldest <= cutoff => {
            if newest <= cutoff {
                return len;
            }
        }
        _ => return 0,
    }
    // ring[lo] <= cutoff < ring[hi]: gallop, then bisect.
    let (mut lo, mut hi) = (0, len - 1);
    let mut step = 1;
    while step < hi - lo {
        let probe = lo + step;
        if ring[probe] > cutoff {
            hi = probe;
            break;
        }
        lo = probe;
        step *= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ring[mid] <= cutoff {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

fn drop_front<T>(ring: &mut VecDeque<T>, n: usize) {
    ring.drain(..n.min(ring.len()));
}

/// Up to this many entries a ring's planned capacity is a power of two.
const SMALL_RING: usize = 64;

/// The capacity planned for `needed` entries: the next power of two (at
/// least 4) while that is at most `SMALL_RING`, else 1/16 more, rounded
/// up to a multiple of 4. A short log, which most keys hold, is allocated
/// 5 times on its way to 64 entries instead of 16 (a reallocation costs
/// more than the rest of a call); a long one keeps its few bytes a unit.
fn planned(needed: usize) -> usize {
    if needed <= SMALL_RING {
        return needed.next_power_of_two().max(4);
    }
    let more = needed.saturating_add(needed / 16);
    more.checked_next_multiple_of(4).unwrap_or(more)
}

/// How a ring grows: never past `limit` entries unless the entries
/// themselves need it, and either to the planned capacity (a log of one
/// entry per unit, which fills in steps of a unit) or **tightly**, a
/// quarter more than needed, no rounding (a log with PRECISION, whose few
/// entries each hold many units: two entries take two slots, not four).
#[derive(Clone, Copy, Debug)]
struct Room {
    limit: usize,
    tight: bool,
}

impl Room {
    /// No bound but the entries' (decoding).
    const UNBOUNDED: Room = Room {
        limit: usize::MAX,
        tight: false,
    };
}

/// Makes room for `additional` more entries: the planned capacity (or the
/// tight one), but never past `room.limit` unless the entries themselves
/// need it.
#[inline]
fn reserve<T>(ring: &mut VecDeque<T>, additional: usize, room: Room) {
    if ring.len().saturating_add(additional) > ring.capacity() {
        grow(ring, additional, room);
    }
}

#[cold]
#[inline(never)]
fn grow<T>(ring: &mut VecDeque<T>, additional: usize, room: Room) {
    let len = ring.len();
    let needed = len.saturating_add(additional);
    let target = if room.tight {
        needed.saturating_add(needed / 4)
    } else {
        planned(needed)
    };
    let target = target.min(room.limit).max(needed);
    ring.reserve_exact(target - len);
}

/// Shrinks a ring holding more than twice the capacity planned for its
/// length (plus 8 entries) back to that: amortized O(1), as the length
/// must then halve, or grow past the planned capacity, before the next
/// reallocation; and a length that wavers (traffic does) does not
/// reallocate at every wave.
fn shrink_if_sparse<T>(ring: &mut VecDeque<T>) {
    let planned = planned(ring.len());
    if ring.capacity() > planned.saturating_mul(2).saturating_add(8) {
        ring.shrink_to(planned);
    }
}

#[cfg(test)]
impl SlideLog {
    /// Units held, expired ones not yet dropped included.
    pub fn len(&self) -> usize {
        usize::try_from(self.units()).unwrap_or(usize::MAX)
    }

    pub fn is_empty(&self) -> bool {
        self.times.len() == 0
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
        matches!(self.times, Times::Wide(_))
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::Unit;
    use proptest::prelude::*;
    use std::iter;

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    fn ms(n: u64) -> Nanos {
        Nanos::new(n * MS)
    }

    fn params(limit: u64, window: u64) -> SlideParams {
        SlideParams::new(limit, Nanos::new(window)).expect("valid test params")
    }

    /// Decides and, when allowed, applies; returns the decision.
    fn request(log: &mut SlideLog, now: Nanos, p: &SlideParams, quantity: u64) -> Decision {
        let (decision, update) = log.decide(now, p, quantity);
        if let Some(update) = update {
            log.apply(update);
        }
        decision
    }

    #[test]
    fn params_are_validated() {
        assert!(SlideParams::new(0, ms(1)).is_none());
        assert!(SlideParams::new(MAX_LIMIT + 1, ms(1)).is_none());
        assert!(SlideParams::new(1, Nanos::ZERO).is_none());
        assert!(SlideParams::new(1, MAX_DURATION.saturating_add(Nanos::new(1))).is_none());
        let p = SlideParams::new(MAX_LIMIT, MAX_DURATION).expect("extremes are valid");
        assert_eq!((p.limit(), p.window()), (MAX_LIMIT, MAX_DURATION));
        let p = SlideParams::new(1, Nanos::new(1)).expect("extremes are valid");
        assert_eq!((p.limit(), p.window()), (1, Nanos::new(1)));
    }

    /// at, limit, window_ms, quantity, limited, remaining, retry_after_ms, reset_after_ms
    type Row = (Nanos, u64, u64, u64, i64, i64, i64, i64);

    #[test]
    fn table() {
        // One log, requests in order; times in ms unless noted.
        // at (ns), limit, window_ms, quantity => limited, remaining, retry_after_ms, reset_after_ms
        #[rustfmt::skip]
        let cases: &[Row] = &[
            // an empty log: peek, then one unit
            (ms(0),    3, 1000, 0,    0, 3, -1,    0),
            (ms(0),    3, 1000, 1,    0, 2, -1, 1000),
            // quantity > 1 fills the log: [0, 100, 100]
            (ms(100),  3, 1000, 2,    0, 0, -1, 1000),
            // full: the entry at 0 leaves at 1000
            (ms(500),  3, 1000, 1,    1, 0, 500,  600),
            // two must leave: the second entry (100) leaves at 1100
            (ms(500),  3, 1000, 2,    1, 0, 600,  600),
            // quantity > limit never fits
            (ms(500),  3, 1000, 4,    1, 0, -1,   600),
            // a peek on a full log is allowed and changes nothing
            (ms(500),  3, 1000, 0,    0, 0, -1,   600),
            // window edge: the entry at 0 is counted 1 ns before 1000 ...
            (Nanos::new(1000 * MS - 1), 3, 1000, 1,   1, 0, 1, 101),
            // ... and has left at 1000: [100, 100, 1000]
            (ms(1000), 3, 1000, 1,    0, 0, -1, 1000),
            // the limit lowered to 2: 3 counted, a peek is limited until 1100
            (ms(1050), 2, 1000, 0,    1, 0, 50,   950),
            // one unit needs two to leave: both at 100 leave at 1100
            (ms(1050), 2, 1000, 1,    1, 0, 50,   950),
            // at 1100 they have: [1000, 1100]
            (ms(1100), 2, 1000, 1,    0, 0, -1, 1000),
            // the clock goes back to 900: read at 1100, the entry at 1000 leaves at 2000
            (ms(900),  2, 1000, 1,    1, 0, 1100, 1200),
            // limit 3, still at 900: allowed, recorded at 1100, not at 900
            (ms(900),  3, 1000, 1,    0, 0, -1, 1200),
            // at 2050 the entries at 1100 are still counted (900 would have left)
            (ms(2050), 3, 1000, 1,    0, 0, -1, 1000),
            // long after: nothing counted
            (ms(9000), 3, 1000, 0,    0, 3, -1,    0),
        ];
        let mut log = SlideLog::default();
        for (row, &(at, limit, window_ms, quantity, limited, remaining, retry, reset)) in
            cases.iter().enumerate()
        {
            let p = params(limit, window_ms * MS);
            let reply = request(&mut log, at, &p, quantity).reply(at, Unit::Millis);
            let expected = [limited, limit as i64, remaining, retry, reset];
            assert_eq!(reply, expected, "row {row}");
        }
        // The request at 2050 dropped the entry at 1000, which had left;
        // limited requests and peeks recorded nothing.
        let expected: Vec<u64> = [1100, 1100, 2050].map(|m| m * MS).to_vec();
        assert_eq!(log.units_ns(), expected);
    }

    #[test]
    fn worked_example_of_the_module_doc() {
        let s = |n: u64| Nanos::new(n * S);
        let p = SlideParams::new(3, s(10)).expect("valid");
        let mut log = SlideLog::default();
        let seconds = |log: &mut SlideLog, at, q| request(log, at, &p, q).reply(at, Unit::Seconds);
        assert_eq!(seconds(&mut log, s(0), 1), [0, 3, 2, -1, 10]);
        assert_eq!(seconds(&mut log, s(4), 2), [0, 3, 0, -1, 10]);
        assert_eq!(seconds(&mut log, s(7), 1), [1, 3, 0, 3, 7]);
        assert_eq!(seconds(&mut log, s(12), 2), [1, 3, 1, 2, 2]);
    }

    /// Units are kept at their instant rounded up to the microsecond: they
    /// leave at most 1 µs late, never early; those of the clock's
    /// microsecond leave a window after the clock, exactly.
    #[test]
    fn instants_round_up_to_the_microsecond() {
        let p = params(3, 10 * US);
        let mut log = SlideLog::default();
        // Recorded at 1,001 ns, kept at 2 µs, but at the clock (1,001 ns):
        // it leaves exactly a window later.
        let d = request(&mut log, Nanos::new(1_001), &p, 1);
        assert_eq!(d.reset_at, Nanos::new(11_001));
        assert_eq!(log.units_ns(), [2 * US]);
        // Another at 1,500 ns: the clock moves, both leave at 11,500 ns.
        let d = request(&mut log, Nanos::new(1_500), &p, 1);
        assert_eq!(d.reset_at, Nanos::new(11_500));
        assert_eq!(log.units_ns(), [2 * US, 2 * US]);
        let d = request(&mut log, Nanos::new(1_600), &p, 0);
        assert_eq!(d.reset_at, Nanos::new(11_500));
        // A third at 3 µs: the clock leaves their microsecond, so they
        // leave at its end, 12 µs (999 and 500 ns late).
        request(&mut log, Nanos::new(3 * US), &p, 1);
        let d = request(&mut log, Nanos::new(11_999), &p, 1);
        assert_eq!(d.retry, Retry::At(Nanos::new(12 * US)));
        let d = request(&mut log, Nanos::new(12 * US), &p, 2);
        assert!(!d.limited);
        assert_eq!(log.units_ns(), [3 * US, 12 * US, 12 * US]);
        // The clock goes back to 0: read at the log's clock, 12 µs; two
        // must leave, the second at 12 µs + 10 µs.
        let d = request(&mut log, Nanos::ZERO, &p, 2);
        assert_eq!(d.reply(Nanos::ZERO, Unit::Millis), [1, 3, 0, 1, 1]);
        assert_eq!(d.retry, Retry::At(Nanos::new(22 * US)));
    }

    #[test]
    fn decide_never_panics_at_the_extremes() {
        let p = SlideParams::new(MAX_LIMIT, MAX_DURATION).expect("valid");
        let one = SlideParams::new(1, Nanos::new(1)).expect("valid");
        let mut log = SlideLog::default();
        for now in [Nanos::ZERO, Nanos::new(1), Nanos::MAX] {
            for quantity in [0, 1, MAX_LIMIT, MAX_LIMIT + 1, u64::MAX] {
                let _ = log.decide(now, &p, quantity);
                let _ = log.decide(now, &one, quantity);
            }
        }
        let d = request(&mut log, Nanos::MAX, &one, 1);
        assert_eq!(d.reset_at, Nanos::MAX);
        let d = request(&mut log, Nanos::ZERO, &one, 1);
        assert_eq!(d.retry, Retry::At(Nanos::MAX));
        assert_eq!(log.len(), 1);
        assert_eq!(log.entry_list(), [(MAX_MICROS, 1)]);
        assert_eq!(SlideLog::decode(&log.encode()), Ok(log));
    }

    #[test]
    fn a_new_log_allocates_nothing() {
        let log = SlideLog::default();
        assert_eq!(log.capacity(), 0);
        assert!(log.is_empty());
        assert_eq!(log.mem_usage(), mem::size_of::<SlideLog>());
        assert_eq!(log, SlideLog::default());
        // Small: the ring (40 bytes with its base), the side table's
        // pointer, the clock.
        assert_eq!(mem::size_of::<SlideLog>(), 56);
        assert!(mem::size_of::<SlideUpdate>() <= 40);
    }

    /// One unit per microsecond, one call each: at most 4.25 bytes a unit
    /// and the struct, at 1,000 and at 100,000 units.
    #[test]
    fn a_log_costs_four_bytes_and_a_quarter_per_unit() {
        let p = params(1_000_000, 3_600 * S);
        for n in [1_000u64, 100_000] {
            let mut log = SlideLog::default();
            let start = 1_700_000_000 * S;
            for i in 0..n {
                assert!(!request(&mut log, Nanos::new(start + i * US + 1), &p, 1).limited);
            }
            assert_eq!((log.len() as u64, log.entries() as u64), (n, n));
            assert!(!log.is_wide());
            let bytes = log.mem_usage() - mem::size_of::<SlideLog>();
            assert!(bytes as u64 <= 4 * n + n / 4 + 16, "{n}: {bytes}");
            assert!(log.capacity() as u64 <= n + n / 16 + 4);
        }
    }

    /// Units in one microsecond: two are two entries, three or more one
    /// counted entry, which later units of that microsecond join.
    #[test]
    fn units_of_one_microsecond_share_an_entry_from_three_on() {
        let p = params(1_000_000, 60 * S);
        let mut log = SlideLog::default();
        let t = 5 * S;
        request(&mut log, Nanos::new(t), &p, 1);
        request(&mut log, Nanos::new(t), &p, 1);
        assert_eq!(log.entry_list(), [(t / US, 1), (t / US, 1)]);
        request(&mut log, Nanos::new(t), &p, 1);
        assert_eq!(log.entry_list(), [(t / US, 3)]);
        request(&mut log, Nanos::new(t + 1), &p, 1); // same µs, rounded up
        assert_eq!(log.entry_list(), [(t / US, 3), (t / US + 1, 1)]);
        request(&mut log, Nanos::new(t + 1_000), &p, 2);
        assert_eq!(log.entry_list(), [(t / US, 3), (t / US + 1, 3)]);
        request(&mut log, Nanos::new(t + 1_000), &p, 5);
        assert_eq!(log.entry_list(), [(t / US, 3), (t / US + 1, 8)]);
        // A million units in one request: one entry.
        request(&mut log, Nanos::new(t + 2_000), &p, 999_000);
        assert_eq!(log.entries(), 3);
        assert_eq!(log.len(), 999_011);
        assert!(log.mem_usage() < 200, "{}", log.mem_usage());
        assert_eq!(SlideLog::decode(&log.encode()), Ok(log.clone()));
        // Ranks across counted entries: 999,011 units held, limit 1,000,000.
        let d = request(&mut log, Nanos::new(t + 3_000), &p, 989);
        assert!(!d.limited);
        // Needing 1, 3, 4, 11, 12 units to leave: the entries at t (3
        // units), t + 1 µs (8 units), t + 2 µs.
        for (quantity, leaves) in [(1, t), (3, t), (4, t + US), (11, t + US), (12, t + 2 * US)] {
            let (d, _) = log.decide(Nanos::new(t + 3_000), &p, quantity);
            assert_eq!(
                d.retry,
                Retry::At(Nanos::new(leaves + 60 * S)),
                "{quantity}"
            );
        }
    }

    /// A refund removes the newest units, splitting a counted entry.
    #[test]
    fn refunds_take_from_the_newest_entries() {
        let p = params(100, 60 * S);
        let mut log = SlideLog::default();
        let t = 7 * S;
        request(&mut log, Nanos::new(t), &p, 4);
        request(&mut log, Nanos::new(t + US), &p, 1);
        request(&mut log, Nanos::new(t + 2 * US), &p, 5);
        assert_eq!(
            log.entry_list(),
            [(7_000_000, 4), (7_000_001, 1), (7_000_002, 5)]
        );
        log.refund(Nanos::new(t + 2 * US), &p, 3);
        assert_eq!(
            log.entry_list(),
            [(7_000_000, 4), (7_000_001, 1), (7_000_002, 2)]
        );
        log.refund(Nanos::new(t + 2 * US), &p, 1);
        assert_eq!(
            log.entry_list(),
            [(7_000_000, 4), (7_000_001, 1), (7_000_002, 1)]
        );
        assert_eq!(log.counts.as_ref().map(|c| c.records.len()), Some(1));
        log.refund(Nanos::new(t + 2 * US), &p, 4);
        assert_eq!(log.entry_list(), [(7_000_000, 2)]);
        log.refund(Nanos::new(t + 2 * US), &p, 1);
        assert_eq!(log.entry_list(), [(7_000_000, 1)]);
        assert!(log.counts.is_none());
        log.refund(Nanos::new(t + 2 * US), &p, 10);
        assert_eq!(log, SlideLog::default());
    }

    /// A window of an hour with steady traffic stays narrow: the log
    /// rebases on its oldest entry when the newest no longer fits.
    #[test]
    fn an_hour_long_window_stays_narrow() {
        let window = 3_600 * S;
        let p = params(10_000, window);
        let mut log = SlideLog::default();
        let start = 1_700_000_000 * S + 123;
        let mut rebases = 0;
        let mut base = None;
        // One unit every 2 s for five hours: 1,800 units held at most.
        for i in 0..9_000u64 {
            let now = Nanos::new(start + i * 2 * S);
            assert!(!request(&mut log, now, &p, 1).limited, "{i}");
            assert!(!log.is_wide(), "{i}");
            let Times::Narrow { base: b, .. } = log.times else {
                unreachable!()
            };
            if base.is_some_and(|old| old != b) {
                rebases += 1;
            }
            base = Some(b);
            // 1,800 units an hour, and the one recorded an hour ago, which
            // leaves 877 ns late (kept at 123 ns rounded up).
            assert!(log.len() <= 1_801);
        }
        // After the first 71 minutes, a rebase about every 71 - 60 = 11
        // minutes.
        assert!((20..=30).contains(&rebases), "{rebases}");
    }

    /// A span longer than a narrow log takes makes it wide; it turns
    /// narrow again once the span is short, and answers stay exact.
    #[test]
    fn long_spans_make_the_log_wide_and_back() {
        let year = 365 * 24 * 3_600 * S;
        let p = params(10, 10 * year);
        let mut log = SlideLog::default();
        let t0 = 1_700_000_000 * S + 1;
        request(&mut log, Nanos::new(t0), &p, 1);
        request(&mut log, Nanos::new(t0 + 5 * 60 * S), &p, 1);
        assert!(!log.is_wide());
        // Two hours later: span over 62 minutes.
        request(&mut log, Nanos::new(t0 + 2 * 3_600 * S), &p, 3);
        assert!(log.is_wide());
        request(&mut log, Nanos::new(t0 + year), &p, 1);
        assert!(log.is_wide());
        let (d, _) = log.decide(Nanos::new(t0 + year), &p, 10);
        assert_eq!(d.remaining, 4);
        // 3 must leave: the units at t0 and t0 + 5 min, and the first of
        // the 3 at 2 h, which leave together.
        let (d, _) = log.decide(Nanos::new(t0 + year), &p, 7);
        let leaves = (t0 + 2 * 3_600 * S).div_ceil(US) * US + 10 * year;
        assert_eq!(d.retry, Retry::At(Nanos::new(leaves)));
        // Under a window of an hour everything but the newest has left:
        // the next unit finds a short span and the log turns narrow.
        let hour = params(10, 3_600 * S);
        request(&mut log, Nanos::new(t0 + year + S), &hour, 1);
        assert!(!log.is_wide());
        let expected: Vec<u64> = [t0 + year, t0 + year + S]
            .map(|t| t.div_ceil(US) * US)
            .to_vec();
        assert_eq!(log.units_ns(), expected);
        assert_eq!(SlideLog::decode(&log.encode()), Ok(log));
    }

    #[test]
    fn the_ring_shrinks_when_traffic_drops() {
        let p = params(1_000, 10 * US);
        let mut log = SlideLog::default();
        for i in 0..1_000 {
            request(&mut log, Nanos::new(1 + i % 999), &p, 1);
        }
        // 1,000 units in 1 µs: one counted entry.
        assert_eq!((log.len(), log.entries()), (1_000, 1));
        let mut log = SlideLog::default();
        for i in 0..1_000 {
            request(&mut log, Nanos::new(i * US), &p, 1);
        }
        assert_eq!(log.entries(), 10);
        let mut log = SlideLog::default();
        let wide = params(1_000, 10 * S);
        for i in 0..1_000 {
            request(&mut log, Nanos::new(i * US), &wide, 1);
        }
        assert_eq!(log.capacity(), 1_000);
        request(&mut log, Nanos::new(20 * S), &wide, 1);
        assert_eq!(log.len(), 1);
        assert!(log.capacity() <= 4, "{}", log.capacity());
    }

    /// Encodes entries `(instant µs, count)` and a clock (ns) as `encode`
    /// does, from the layout in its doc.
    fn v2_at(entries: &[(u64, u64)], clock: u64) -> Vec<u8> {
        let mut w = Writer::default();
        w.varint(entries.len() as u64);
        let mut previous = 0;
        for &(t, count) in entries {
            w.varint(((t - previous) << 1) | u64::from(count > 1));
            if count > 1 {
                w.varint(count - 2);
            }
            previous = t;
        }
        if !entries.is_empty() {
            w.varint(clock - first_ns_of(previous));
        }
        w.into_bytes()
    }

    /// As `v2_at`, the clock at the first nanosecond of the newest entry.
    fn v2(entries: &[(u64, u64)]) -> Vec<u8> {
        let clock = entries.last().map_or(0, |&(t, _)| first_ns_of(t));
        v2_at(entries, clock)
    }

    fn v1(words: &[u64]) -> Vec<u8> {
        let mut w = Writer::default();
        for &word in words {
            w.u64(word);
        }
        w.into_bytes()
    }

    #[test]
    fn the_encoding_is_the_documented_layout() {
        let p = params(100, 60 * S);
        let mut log = SlideLog::default();
        request(&mut log, Nanos::new(1_000_000), &p, 1);
        request(&mut log, Nanos::new(1_000_001), &p, 3);
        request(&mut log, Nanos::new(1_300_000), &p, 1);
        assert_eq!(log.entry_list(), [(1_000, 1), (1_001, 3), (1_300, 1)]);
        let bytes = log.encode();
        assert_eq!(bytes, v2_at(&log.entry_list(), 1_300_000));
        // 3 entries; 1,000 << 1 (2 bytes); 1 << 1 | 1, then 3 - 2; 299 << 1;
        // the clock, 1,300,000 ns, 999 ns after 1,299,001.
        assert_eq!(bytes, [3, 0xd0, 0x0f, 0x03, 0x01, 0xd6, 0x04, 0xe7, 0x07]);
        assert_eq!(SlideLog::decode(&[0]), Ok(SlideLog::default()));
        assert_eq!(SlideLog::default().encode(), [0]);
    }

    /// With PRECISION, units join the newest entry while they arrive less
    /// than `d` after its first unit; the entry moves to its last unit and
    /// leaves a window after it.
    #[test]
    fn precision_joins_units_into_the_newest_entry() {
        // limit 5, window 10 s, PRECISION 3 s; times in ms.
        let p = params(5, 10 * S)
            .with_precision(Nanos::new(3 * S))
            .expect("valid");
        let mut log = SlideLog::default();
        let at = |log: &mut SlideLog, t: u64, q: u64| {
            request(log, ms(t), &p, q).reply(ms(t), Unit::Millis)
        };
        assert_eq!(at(&mut log, 0, 1), [0, 5, 4, -1, 10_000]);
        // 2,999 ms after the first unit: joins, the entry moves to 2,999.
        assert_eq!(at(&mut log, 2_999, 2), [0, 5, 2, -1, 10_000]);
        assert_eq!(log.entry_list(), [(2_999_000, 3)]);
        // 3,000 ms after it: a new entry.
        assert_eq!(at(&mut log, 3_000, 1), [0, 5, 1, -1, 10_000]);
        assert_eq!(log.entry_list(), [(2_999_000, 3), (3_000_000, 1)]);
        // Full at 5,000: the first three leave at 12,999 (exactly: 10,000).
        assert_eq!(at(&mut log, 5_000, 2), [1, 5, 1, 7_999, 8_000]);
        // A unit a window after the first entry's last: it has left.
        assert_eq!(at(&mut log, 12_999, 3), [0, 5, 1, -1, 10_000]);
        assert_eq!(log.entry_list(), [(3_000_000, 1), (12_999_000, 3)]);
        // The newest entry's first unit survives a round trip.
        let bytes = log.encode();
        assert_eq!(SlideLog::decode(&bytes), Ok(log.clone()));
        // 2,999 ms after 12,999 (the new entry's first unit): joins; the
        // entry at 3,000 has left.
        assert_eq!(at(&mut log, 15_998, 1), [0, 5, 1, -1, 10_000]);
        assert_eq!(log.entry_list(), [(15_998_000, 4)]);
    }

    /// The issue's figure: limit 1,000,000, window an hour, PRECISION 36 s;
    /// 100,000 units over a minute, in calls of 10 units every 6 ms: two
    /// entries (at most 3), and a few hundred bytes at most.
    #[test]
    fn a_dense_key_with_precision_holds_few_entries() {
        let p = params(1_000_000, 3_600 * S)
            .with_precision(Nanos::new(36 * S))
            .expect("valid");
        let mut log = SlideLog::default();
        let start = 1_700_000_000 * S;
        for i in 0..10_000 {
            assert!(!request(&mut log, Nanos::new(start + i * 6 * MS), &p, 10).limited);
        }
        assert_eq!(log.len(), 100_000);
        assert_eq!(log.entries(), 2);
        // The struct, a ring of 2 entries, the side table and 2 records.
        assert_eq!(log.mem_usage(), 56 + 2 * 4 + 56 + 2 * 8);
        // The exact log: an entry per call.
        let exact = params(1_000_000, 3_600 * S);
        let mut log = SlideLog::default();
        for i in 0..10_000 {
            request(&mut log, Nanos::new(start + i * 6 * MS), &exact, 10);
        }
        assert_eq!(log.entries(), 10_000);
    }

    /// PRECISION's rule and range, from the command's values (ns).
    #[test]
    fn precision_is_at_most_the_window() {
        let p = SlideLog::params(&[5, 10 * S, 10 * S]).expect("d = window");
        assert_eq!(p.precision(), Nanos::new(10 * S));
        assert_eq!(
            SlideLog::params(&[5, 10 * S, 0]).map(|p| p.precision()),
            Ok(Nanos::ZERO)
        );
        assert_eq!(
            SlideLog::params(&[5, 10 * S, 10 * S + MS]),
            Err(ParamError::Joint(PRECISION_RULE))
        );
        assert!(params(5, 10 * S)
            .with_precision(Nanos::new(1_500))
            .is_none());
    }

    /// The encoding of a log whose entries joined units: the layout of
    /// entries and clock, then the newest entry's first unit.
    #[test]
    fn the_encoding_with_precision_is_the_documented_layout() {
        let p = params(100, 60 * S)
            .with_precision(Nanos::new(MS))
            .expect("valid");
        let mut log = SlideLog::default();
        request(&mut log, Nanos::new(1_000_000), &p, 1);
        request(&mut log, Nanos::new(1_300_000), &p, 1);
        request(&mut log, Nanos::new(1_900_000), &p, 1);
        assert_eq!(log.entry_list(), [(1_900, 3)]);
        let bytes = log.encode();
        let mut expected = v2_at(&[(1_900, 3)], 1_900_000);
        // The first unit, 900 µs before the entry's instant (1,000 µs).
        expected.extend([0x84, 0x07]);
        assert_eq!(bytes, expected);
        // 1 entry; 1,900 << 1 | 1 (2 bytes), then 3 - 2; the clock, 999 ns
        // after 1,899,001; 900.
        assert_eq!(bytes, [1, 0xd9, 0x1d, 0x01, 0xe7, 0x07, 0x84, 0x07]);
        // Refused: a first unit after the entry, or where it cannot be.
        let mut after = v2_at(&[(1_900, 3)], 1_900_000);
        after.extend([0xed, 0x0e]);
        assert!(SlideLog::decode(&after).is_err());
        let mut single = v2_at(&[(5, 1), (1_900, 1)], 1_900_000);
        single.push(3);
        assert!(SlideLog::decode(&single).is_err());
        let mut before_previous = v2_at(&[(5, 2), (1_900, 3)], 1_900_000);
        before_previous.extend([0xed, 0x0e]);
        assert!(SlideLog::decode(&before_previous).is_err());
        // Without joined units the field may be 0 only, and needs a
        // counted entry.
        let mut no_counts = v2_at(&[(5, 1), (1_900, 1)], 1_900_000);
        no_counts.push(0);
        assert!(SlideLog::decode(&no_counts).is_err());
    }

    #[test]
    fn decode_rejects_malformed_payloads() {
        let good = v2(&[(5, 1), (5, 1), (9, 3)]);
        assert!(SlideLog::decode(&good).is_ok());
        assert_eq!(SlideLog::decode(&[]), Err(DecodeError::Length));
        for cut in 1..good.len() {
            assert_eq!(
                SlideLog::decode(&good[..cut]),
                Err(DecodeError::Length),
                "cut {cut}"
            );
        }
        // One more varint is PRECISION's first unit; two are too many.
        let mut trailing = good.clone();
        trailing.extend([0, 0]);
        assert_eq!(SlideLog::decode(&trailing), Err(DecodeError::Length));
        let invalid =
            |bytes: &[u8]| matches!(SlideLog::decode(bytes), Err(DecodeError::Invalid(_)));
        // More entries, or units, than any limit.
        assert!(invalid(&v2(&[(1, MAX_LIMIT + 1)])));
        assert!(invalid(&v2(&[(1, MAX_LIMIT), (2, 1)])));
        assert!(SlideLog::decode(&v2(&[(1, MAX_LIMIT - 1), (2, 1)])).is_ok());
        let mut w = Writer::default();
        w.varint(MAX_LIMIT + 1);
        assert!(invalid(&w.into_bytes()));
        // A count the bytes do not back is refused before anything is reserved.
        let mut w = Writer::default();
        w.varint(MAX_LIMIT).varint(2).varint(2);
        assert_eq!(SlideLog::decode(&w.into_bytes()), Err(DecodeError::Length));
        // Instants past the end of time.
        assert!(invalid(&v2(&[(MAX_MICROS + 1, 1)])));
        assert!(SlideLog::decode(&v2(&[(MAX_MICROS, 1)])).is_ok());
        let mut w = Writer::default();
        w.varint(2).varint(MAX_MICROS << 1).varint(2);
        assert!(invalid(&w.into_bytes()));
        let mut w = Writer::default();
        w.varint(1).varint(u64::MAX).varint(u64::MAX);
        assert!(invalid(&w.into_bytes()));
        // A count varint in a longer form than needed.
        assert!(invalid(&[1, 0x03, 0x80, 0x00, 0x00]));
        // A clock past the end of time; the last one.
        let last = v2_at(&[(MAX_MICROS, 1)], u64::MAX);
        assert_eq!(SlideLog::decode(&last).map(|l| l.clock), Ok(Nanos::MAX));
        let mut past = v2(&[(MAX_MICROS, 1)]);
        past.pop();
        let mut w = Writer::default();
        w.varint(u64::MAX - first_ns_of(MAX_MICROS) + 1);
        past.extend(w.into_bytes());
        assert!(invalid(&past));
    }

    #[test]
    fn the_first_format_still_decodes() {
        // 3 units: 1,500 ns, twice 2,000 ns; then 7 units at 1 s.
        let mut words = vec![10, 1_500, 2_000, 2_000];
        words.extend(iter::repeat_n(S, 7));
        let log = SlideLog::decode_tagged(V1_TAG, &v1(&words)).expect("decodes");
        // Rounded up: three units in the 2nd µs, one entry; seven at 1 s.
        assert_eq!(log.entry_list(), [(2, 3), (1_000_000, 7)]);
        assert_eq!(
            log.units_ns(),
            [2_000, 2_000, 2_000]
                .into_iter()
                .chain(iter::repeat_n(S, 7))
                .collect::<Vec<_>>()
        );
        // The same as recording them today.
        let p = params(10, 10 * S);
        let mut today = SlideLog::default();
        for (at, q) in [(1_500, 1), (2_000, 2), (S, 7)] {
            request(&mut today, Nanos::new(at), &p, q);
        }
        assert_eq!(log, today);
        // Two units in one µs stay two entries.
        let log = SlideLog::decode_legacy(V1_TAG, &v1(&[2, 999, 1_000])).unwrap();
        assert_eq!(log.entry_list(), [(1, 1), (1, 1)]);
    }

    #[test]
    fn the_first_format_is_validated_as_it_always_was() {
        let decode = |bytes: &[u8]| SlideLog::decode_legacy(V1_TAG, bytes);
        let good = v1(&[3, 5, 5, 9]);
        assert!(decode(&good).is_ok());
        assert_eq!(decode(&[]), Err(DecodeError::Length));
        for cut in 1..good.len() {
            assert_eq!(decode(&good[..cut]), Err(DecodeError::Length), "cut {cut}");
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert_eq!(decode(&trailing), Err(DecodeError::Length));
        assert_eq!(
            decode(&v1(&[3, 5, 9, 7])),
            Err(DecodeError::Invalid("slide log timestamps decrease"))
        );
        assert!(matches!(
            decode(&v1(&[MAX_LIMIT + 1])),
            Err(DecodeError::Invalid(_))
        ));
        assert!(matches!(
            decode(&v1(&[u64::MAX, 1])),
            Err(DecodeError::Invalid(_))
        ));
        // A count the bytes do not back is refused before anything is reserved.
        assert_eq!(decode(&v1(&[MAX_LIMIT, 1, 2])), Err(DecodeError::Length));
        assert_eq!(decode(&v1(&[0])), Ok(SlideLog::default()));
        // The last nanoseconds round up to the last microsecond.
        let log = decode(&v1(&[2, u64::MAX - 1, u64::MAX])).unwrap();
        assert_eq!(log.entry_list(), [(MAX_MICROS, 1), (MAX_MICROS, 1)]);
        // Other tags are not this type's.
        assert!(SlideLog::decode_tagged(b'G', &good).is_err());
        assert!(SlideLog::decode_legacy(b'M', &good).is_err());
    }

    /// The reference: every admitted unit's kept instant (ns, rounded up to
    /// the µs) and the clock, everything computed by brute force from the
    /// definitions and the module's rules: keep instants rounded up to the
    /// µs, but those of the clock's µs at the clock; never read before the
    /// clock; an allowed request forgets the units that left at the instant
    /// it reads, before it moves the clock (once the clock has moved on, a
    /// unit of its old µs is at the µs's end, up to 1 µs later).
    ///
    /// With PRECISION `d` (`decide_within`), the model keeps the units of
    /// the newest entry together: a unit joins them when its µs is less
    /// than `d` after the first of them, and then all of them take its
    /// stamp (an entry leaves at its last unit's instant plus the window).
    #[derive(Default)]
    struct Model {
        stamps: Vec<u64>,
        clock: u64,
        /// The newest entry's first unit (µs) and how many units it holds
        /// (the last ones of `stamps`).
        newest: Option<(u64, usize)>,
    }

    impl Model {
        fn read_at(&self, now: u64) -> u64 {
            if self.stamps.is_empty() {
                now
            } else {
                now.max(self.clock)
            }
        }

        fn instant(&self, stamp: u64) -> u64 {
            stamp.min(self.clock)
        }

        /// Units counted at `t`: those whose instant is after `t - window`.
        fn counted(&self, t: u64, window: u64) -> u64 {
            let t = u128::from(t);
            self.stamps
                .iter()
                .filter(|&&s| t < u128::from(self.instant(s)) + u128::from(window))
                .count() as u64
        }

        fn decide(&mut self, now: u64, limit: u64, window: u64, quantity: u64) -> Decision {
            self.decide_within(now, limit, window, 0, quantity)
        }

        fn decide_within(
            &mut self,
            now: u64,
            limit: u64,
            window: u64,
            d: u64,
            quantity: u64,
        ) -> Decision {
            let t = self.read_at(now);
            let used = self.counted(t, window);
            let reset_at = match self.stamps.last() {
                Some(&n) if used > 0 => self.instant(n) + window,
                _ => now,
            };
            let remaining = limit.saturating_sub(used);
            if quantity > limit {
                return Decision {
                    limited: true,
                    limit,
                    remaining,
                    retry: Retry::Never,
                    reset_at: Nanos::new(reset_at),
                };
            }
            if used + quantity <= limit {
                let mut reset_at = reset_at;
                if quantity > 0 {
                    let kept = t.div_ceil(1_000) * 1_000;
                    let clock = self.clock;
                    let before = self.stamps.len();
                    self.stamps
                        .retain(|&s| u128::from(s.min(clock)) + u128::from(window) > u128::from(t));
                    let dropped = before - self.stamps.len();
                    let q = quantity as usize;
                    self.newest = match self.newest {
                        // Its units are all dropped or none (one stamp).
                        Some((first, n))
                            if dropped + n <= before
                                && d > 0
                                && (kept / 1_000 - first) * 1_000 < d =>
                        {
                            let len = self.stamps.len();
                            self.stamps[len - n..].iter_mut().for_each(|s| *s = kept);
                            Some((first, n + q))
                        }
                        _ => Some((kept / 1_000, q)),
                    };
                    self.stamps.extend(iter::repeat_n(kept, q));
                    self.clock = t;
                    reset_at = t + window;
                }
                return Decision {
                    limited: false,
                    limit,
                    remaining: limit - used - quantity,
                    retry: Retry::NotLimited,
                    reset_at: Nanos::new(reset_at),
                };
            }
            // The smallest instant among the candidates (a unit leaving)
            // at which the same request would fit.
            let retry_at = self
                .stamps
                .iter()
                .map(|&s| self.instant(s) + window)
                .filter(|&c| c > now)
                .filter(|&c| self.counted(self.read_at(c), window) + quantity <= limit)
                .min()
                .expect("a quantity within the limit fits eventually");
            Decision {
                limited: true,
                limit,
                remaining,
                retry: Retry::At(Nanos::new(retry_at)),
                reset_at: Nanos::new(reset_at),
            }
        }
    }

    const LIMITS: [u64; 6] = [1, 2, 3, 5, 8, 13];

    #[derive(Clone, Debug)]
    struct Step {
        /// A backwards step of the clock instead of a forward one.
        back: bool,
        /// Whole µs, then ns.
        dt: (u64, u64),
        /// A new limit (index in the limit table), or keep the current one.
        limit: Option<usize>,
        /// Taken modulo `limit + 3`: 0 ..= limit + 2.
        quantity: u64,
    }

    /// Steps of whole microseconds (up to `max_dt`) and, half the time, a
    /// fraction of one, so that units share microseconds and round up.
    fn step(limits: usize, max_dt: u64, max_quantity: u64) -> impl Strategy<Value = Step> {
        let ns = prop_oneof![Just(0u64), 0u64..1_000];
        (
            prop::bool::weighted(0.1),
            (0..=max_dt, ns),
            prop::option::weighted(0.15, 0..limits),
            0..=max_quantity,
        )
            .prop_map(|(back, dt, limit, quantity)| Step {
                back,
                dt,
                limit,
                quantity,
            })
    }

    /// A window as below and a PRECISION within it, whole µs (0 or more).
    fn window_and_precision() -> impl Strategy<Value = (u64, u64)> {
        window().prop_flat_map(|w| (Just(w), 0..=w / US))
    }

    /// Windows of up to 40 µs, whole or not.
    fn window() -> impl Strategy<Value = u64> {
        (1u64..=40, prop_oneof![Just(0u64), 0u64..1_000]).prop_map(|(us, ns)| us * US + ns)
    }

    /// Runs `steps` from `start` with a fixed `window`, calling `check` with
    /// the log before each request, the request and its decision.
    fn run(
        limits: &[u64],
        window: u64,
        start: u64,
        steps: &[Step],
        check: impl FnMut(&SlideLog, u64, &SlideParams, u64, &Decision, bool),
    ) -> SlideLog {
        run_within(limits, window, &[0], start, steps, check)
    }

    /// As `run`, with PRECISION: `ds[i % ds.len()]` (µs) at step `i`.
    fn run_within(
        limits: &[u64],
        window: u64,
        ds: &[u64],
        start: u64,
        steps: &[Step],
        mut check: impl FnMut(&SlideLog, u64, &SlideParams, u64, &Decision, bool),
    ) -> SlideLog {
        let mut log = SlideLog::default();
        let mut now = start;
        let mut limit = limits[0];
        for (i, s) in steps.iter().enumerate() {
            let dt = s.dt.0 * US + s.dt.1;
            now = if s.back {
                now.saturating_sub(dt * 2)
            } else {
                now + dt
            };
            if let Some(i) = s.limit {
                limit = limits[i];
            }
            let quantity = s.quantity % (limit + 3);
            let d = Nanos::new(ds[i % ds.len()] * US);
            let p = params(limit, window)
                .with_precision(d)
                .expect("d <= window");
            let (decision, update) = log.decide(Nanos::new(now), &p, quantity);
            check(&log, now, &p, quantity, &decision, update.is_some());
            assert_eq!(update.is_some(), !decision.limited && quantity > 0);
            if let Some(update) = update {
                log.apply(update);
            }
        }
        log
    }

    proptest! {
        #[test]
        fn matches_the_reference_model(
            window in window(),
            start in 0u64..100_000,
            steps in prop::collection::vec(step(LIMITS.len(), 20, 15), 1..150),
        ) {
            let mut model = Model::default();
            let log = run(&LIMITS, window, start, &steps, |_, now, p, quantity, decision, admitted| {
                let expected = model.decide(now, p.limit(), window, quantity);
                assert_eq!(*decision, expected, "now {now} quantity {quantity}");
                assert_eq!(admitted, !expected.limited && quantity > 0);
            });
            prop_assert_eq!(log.units_ns(), model.stamps);
        }

        #[test]
        fn waiting_retry_after_is_enough_and_not_too_much(
            window in window(),
            start in 0u64..100_000,
            steps in prop::collection::vec(step(LIMITS.len(), 20, 15), 1..150),
        ) {
            run(&LIMITS, window, start, &steps, |log, now, p, quantity, decision, _| {
                if let Retry::At(at) = decision.retry {
                    assert!(at > Nanos::new(now));
                    let (then, _) = log.decide(at, p, quantity);
                    assert!(!then.limited, "still limited at the promised {at:?}");
                    let just_before = at.saturating_sub(Nanos::new(1));
                    let (before, _) = log.decide(just_before, p, quantity);
                    assert!(before.limited, "already allowed at {just_before:?}");
                }
            });
        }

        #[test]
        fn memory_is_bounded_by_the_largest_limit(
            window in 1u64..=200_000,
            steps in prop::collection::vec(step(4, 30, 2_000), 1..200),
        ) {
            let limits = [10, 1_000, 3, 100];
            let mut largest = 0;
            let log = run(&limits, window, 0, &steps, |log, _, p, _, _, _| {
                assert!(log.len() as u64 <= largest);
                assert!(log.capacity() as u64 <= largest);
                largest = largest.max(p.limit());
            });
            prop_assert!(log.len() as u64 <= largest);
            prop_assert!(log.capacity() as u64 <= largest);
        }

        #[test]
        fn encoding_round_trips(
            window in window(),
            steps in prop::collection::vec(step(LIMITS.len(), 20, 15), 0..100),
        ) {
            let log = run(&LIMITS, window, 0, &steps, |_, _, _, _, _, _| {});
            let bytes = log.encode();
            // No larger than the ring: at most 5 bytes an entry and the count.
            prop_assert!(bytes.len() <= 10 + 5 * log.entries());
            let decoded = SlideLog::decode(&bytes);
            prop_assert_eq!(decoded.as_ref(), Ok(&log));
            prop_assert_eq!(decoded.map(|d| d.encode()), Ok(bytes));
        }

        /// Any entries (instants from the whole range, counts up to a
        /// thousand) round-trip, in either mode, and answer as the units
        /// they hold.
        #[test]
        fn any_entries_round_trip(
            mut instants in prop::collection::vec(0..=MAX_MICROS, 0..50),
            counts in prop::collection::vec(prop_oneof![Just(1u64), 1u64..1_000], 50),
            near in any::<bool>(),
        ) {
            instants.sort_unstable();
            if near {
                // Within a narrow span.
                instants.iter_mut().for_each(|t| *t = 1 << 50 | (*t % (1 << 30)));
                instants.sort_unstable();
            }
            let entries: Vec<(u64, u64)> = instants.iter().copied().zip(counts).collect();
            let bytes = v2(&entries);
            let log = SlideLog::decode(&bytes).expect("decodes");
            prop_assert_eq!(log.entry_list(), entries.clone());
            prop_assert_eq!(log.encode(), bytes);
            let units: u64 = entries.iter().map(|&(_, c)| c).sum();
            prop_assert_eq!(log.len() as u64, units);
            for rank in [0, units / 2, units.saturating_sub(1)] {
                if units > 0 {
                    let index = log.entry_of_unit(rank);
                    let before: u64 = entries[..index].iter().map(|&(_, c)| c).sum();
                    prop_assert!(before <= rank && rank < before + entries[index].1);
                }
            }
        }

        /// The search of the expired prefix, on a ring that wraps around
        /// anywhere, against counting.
        #[test]
        fn leading_at_most_counts(
            mut values in prop::collection::vec(0u64..50, 0..40),
            turn in 0usize..40,
            cutoffs in prop::collection::vec(0u64..52, 1..10),
        ) {
            values.sort_unstable();
            let mut ring: VecDeque<u64> = VecDeque::with_capacity(values.len());
            // Start the ring `turn` slots in, so that it wraps.
            for _ in 0..turn % (values.len() + 1) {
                ring.push_back(0);
                ring.pop_front();
            }
            ring.extend(values.iter().copied());
            for cutoff in cutoffs {
                let expected = values.iter().filter(|&&v| v <= cutoff).count();
                prop_assert_eq!(leading_at_most(&ring, cutoff), expected);
            }
        }

        /// PRECISION against the model that stamps every unit with its
        /// entry's leave time: the same replies, always, and the same units.
        #[test]
        fn precision_matches_the_grouping_model(
            (window, d) in window_and_precision(),
            start in 0u64..100_000,
            steps in prop::collection::vec(step(LIMITS.len(), 20, 15), 1..150),
        ) {
            let mut model = Model::default();
            let log = run_within(&LIMITS, window, &[d], start, &steps, |_, now, p, quantity, decision, admitted| {
                let expected = model.decide_within(now, p.limit(), window, d * US, quantity);
                assert_eq!(*decision, expected, "now {now} quantity {quantity}");
                assert_eq!(admitted, !expected.limited && quantity > 0);
            });
            prop_assert_eq!(log.units_ns(), model.stamps);
        }

        /// Requests at least `d` apart: exactly the exact log's replies.
        #[test]
        fn sparse_requests_answer_as_the_exact_log(
            (window, d) in window_and_precision(),
            start in 0u64..100_000,
            mut steps in prop::collection::vec(step(LIMITS.len(), 20, 15), 1..150),
        ) {
            for s in &mut steps {
                s.back = false;
                s.dt.0 += d;
            }
            let mut model = Model::default();
            let log = run_within(&LIMITS, window, &[d], start, &steps, |_, now, p, quantity, decision, _| {
                let expected = model.decide(now, p.limit(), window, quantity);
                assert_eq!(*decision, expected, "now {now} quantity {quantity}");
            });
            prop_assert_eq!(log.units_ns(), model.stamps);
        }

        /// The promises of PRECISION, `d` changing between calls among
        /// `ds`: never more than the limit admitted in any window (at the
        /// instants the log read); no unit kept before its own µs nor
        /// `d` or more after it (the `d` it was recorded with, or a larger
        /// one of a later call that it joined... at most the largest);
        /// with one `d`, at most `ceil(window / d) + 1` entries.
        #[test]
        fn precision_keeps_its_promises(
            (window, d) in window_and_precision(),
            other in 0u64..=3,
            limit in prop::sample::select(&LIMITS[..]),
            start in 0u64..100_000,
            steps in prop::collection::vec(step(1, 20, 15), 1..150),
        ) {
            let ds = if other == 0 { vec![d] } else { vec![d, d.min(other), 0] };
            let largest = ds.iter().copied().max().unwrap_or(0);
            let mut admitted: Vec<(u64, u64)> = Vec::new();
            let mut arrivals: Vec<u64> = Vec::new();
            let mut clock = 0;
            let mut log = SlideLog::default();
            let mut now = start;
            for (i, s) in steps.iter().enumerate() {
                let dt = s.dt.0 * US + s.dt.1;
                now = if s.back { now.saturating_sub(dt * 2) } else { now + dt };
                let quantity = s.quantity % (limit + 3);
                let di = ds[i % ds.len()];
                let p = params(limit, window).with_precision(Nanos::new(di * US)).expect("valid");
                let (decision, update) = log.decide(Nanos::new(now), &p, quantity);
                let Some(update) = update else { continue };
                prop_assert!(!decision.limited);
                let at = if log.is_empty() { now } else { now.max(clock) };
                log.apply(update);
                clock = at;
                admitted.push((at, quantity));
                arrivals.extend(iter::repeat_n(at.div_ceil(US), quantity as usize));
                // Strict: the units admitted in (at - window, at].
                let recent: u64 = admitted
                    .iter()
                    .filter(|&&(a, _)| a + window > at)
                    .map(|&(_, q)| q)
                    .sum();
                prop_assert!(recent <= limit, "{recent} admitted within a window at {at}");
                // Delay: the log holds the newest arrivals, each kept at
                // its µs or less than the largest d after it.
                let kept = log.units_ns();
                let mine = &arrivals[arrivals.len() - kept.len()..];
                for (&k, &a) in kept.iter().zip(mine) {
                    prop_assert!(k >= a * US, "kept at {k}, arrived in µs {a}");
                    prop_assert!(k == a * US || k < a * US + largest * US, "kept at {k}, arrived in µs {a}, d {largest} µs");
                }
                if other == 0 && d > 0 {
                    let bound = (window.div_ceil(d * US) + 1) as usize;
                    prop_assert!(log.entries() <= bound, "{} entries, bound {bound}", log.entries());
                }
            }
        }

        /// Logs with PRECISION round-trip through the encoding, the first
        /// unit of the newest entry included.
        #[test]
        fn precision_encoding_round_trips(
            (window, d) in window_and_precision(),
            steps in prop::collection::vec(step(LIMITS.len(), 20, 15), 0..100),
            refund in 0u64..4,
        ) {
            let mut log = run_within(&LIMITS, window, &[d, 0, d], 0, &steps, |_, _, _, _, _, _| {});
            if refund > 0 {
                let p = params(LIMITS[0], window).with_precision(Nanos::new(d * US)).expect("valid");
                log.refund(Nanos::new(1 << 40), &p, refund);
            }
            let bytes = log.encode();
            let decoded = SlideLog::decode(&bytes);
            prop_assert_eq!(decoded.as_ref(), Ok(&log));
            prop_assert_eq!(decoded.map(|d| d.encode()), Ok(bytes));
        }

        #[test]
        fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..100)) {
            let _ = SlideLog::decode(&bytes);
            let _ = SlideLog::decode_legacy(V1_TAG, &bytes);
        }

        /// Payloads near valid ones: a valid encoding with a byte changed,
        /// cut or added decodes to a log that re-encodes to itself, or is
        /// refused.
        #[test]
        fn decode_of_mutated_payloads_never_panics(
            steps in prop::collection::vec(step(LIMITS.len(), 20, 15), 0..40),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            how in 0u8..3,
        ) {
            let log = run_within(&LIMITS, 10 * US, &[0, 4, 10], 0, &steps, |_, _, _, _, _, _| {});
            let mut bytes = log.encode();
            let i = at.index(bytes.len());
            match how {
                0 => bytes[i] = byte,
                1 => bytes.truncate(i),
                _ => bytes.insert(i, byte),
            }
            if let Ok(decoded) = SlideLog::decode(&bytes) {
                prop_assert_eq!(decoded.encode(), bytes);
            }
        }
    }
}
