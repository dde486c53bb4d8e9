//! The exact sliding log: at most `limit` units in any window of length
//! `window`, with no rounding.
//!
//! Its domain words:
//!
//! - **entry**: the timestamp of one admitted unit. A request for `quantity`
//!   units that is allowed at `t` records `quantity` entries, all equal to `t`.
//!   The log is the sequence of entries, oldest first, never decreasing.
//! - **window**: the half-open interval `(t - window, t]`. An entry at `e` is
//!   **counted** at every `t` with `e <= t < e + window`; at `e + window` it
//!   has **left** (it is **expired**). `used(t)` is the number of entries
//!   counted at `t`.
//! - A request for `quantity` units at `now` is **allowed** when
//!   `used(now) + quantity <= limit`. A quantity above the limit never fits.
//!   `quantity = 0` is a **peek**: it answers, and records nothing.
//!
//! ## One word per unit
//!
//! The log stores one `u64` per unit, in a ring buffer (`VecDeque`). Memory
//! is therefore bounded by the limit, not by the traffic: at most `limit`
//! units are ever counted, expired entries are dropped before new ones are
//! appended, so the ring never holds more than the largest limit in force
//! when units were admitted, at 8 bytes each.
//!
//! Storing a unit per word rather than a `(timestamp, count)` pair per request
//! makes the one question that needs more than the ends of the log a direct
//! index: when a request is limited, `need = used + quantity - limit` of the
//! counted units must leave first, and the last of those is simply the entry
//! at index `expired + need - 1` (units leave in order). With pairs that rank
//! lookup would need a scan or a second index.
//!
//! Cost: the counted part starts after the expired prefix, found in O(1)
//! when none or all of the log is expired and otherwise by a binary search,
//! O(log n) in the units held (a limited call changes nothing, so it must
//! not rescan what a later call would scan again). An allowed call drops the
//! expired prefix and appends its units: each unit is appended once and
//! dropped once, so recording costs O(1) amortized per unit, and the ring
//! grows by doubling and shrinks by halving. So a call is O(log n) at worst
//! and O(1) amortized per unit recorded.
//!
//! ## Worked example
//!
//! `limit` 3, `window` 10 s.
//!
//! - At 0 s, 1 unit: `used` = 0, allowed. Log `[0]`, remaining 2, reset after
//!   10 s (when the entry at 0 leaves).
//! - At 4 s, 2 units: `used` = 1, allowed. Log `[0, 4, 4]`, remaining 0.
//! - At 7 s, 1 unit: `used` = 3, limited. `need` = 3 + 1 - 3 = 1: the entry at
//!   index 0 (0 s) must leave, which it does at 10 s: retry after 3 s.
//! - At 12 s, 2 units: the entry at 0 s has left (expired prefix 1), `used` =
//!   2, limited. `need` = 2 + 2 - 3 = 1: the entry at index 1 + 1 - 1 = 1
//!   (4 s) must leave; it leaves at 14 s, with its twin: retry after 2 s.
//!
//! ## Clock going backwards
//!
//! If `now` is earlier than the newest entry, the log is read and written at
//! the newest entry's instant instead: nothing recorded is ever in the future,
//! so nothing expires early and nothing extra is let through. The instants in
//! the `Decision` stay absolute; the reply measures them from the real `now`.
//!
//! The state does not depend on the parameters, so they may change between
//! calls: a lowered limit applies at once to what is already recorded (which
//! can then be more than the new limit; `remaining` saturates at 0).

use std::collections::VecDeque;
use std::iter;
use std::mem;

use super::codec::{Reader, Writer};
use super::time::Nanos;
use super::{
    millis, Arg, ArgKind, Ceiling, Decision, DecodeError, Detail, Limiter, ParamError, Retry,
    MAX_DURATION,
};

/// The largest `limit`: it bounds the memory of a key (8 bytes per unit),
/// and a decoded log may not hold more units than this.
pub const MAX_LIMIT: u64 = 100_000_000;

/// Bytes of one entry.
const ENTRY_BYTES: usize = mem::size_of::<u64>();

/// Validated parameters: at most `limit` units in any `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlideParams {
    limit: u64,
    window: Nanos,
}

impl SlideParams {
    /// `None` unless `1 <= limit <= MAX_LIMIT` and `1 ns <= window <= MAX_DURATION`.
    pub fn new(limit: u64, window: Nanos) -> Option<SlideParams> {
        let limit_ok = (1..=MAX_LIMIT).contains(&limit);
        let window_ok = Nanos::new(1) <= window && window <= MAX_DURATION;
        (limit_ok && window_ok).then_some(SlideParams { limit, window })
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
}

/// The state of one key: the timestamps (ns) of the admitted units, one
/// entry per unit, oldest first, never decreasing. Expired entries at the
/// front are dropped lazily, by the next allowed request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlideLog {
    entries: VecDeque<u64>,
}

/// What an allowed request changes; produced by `SlideLog::decide`,
/// consumed by `SlideLog::apply` on the same state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlideUpdate {
    /// Entries at the front that have left and can be dropped.
    expired: usize,
    /// The instant the units are recorded at (never before the newest entry).
    at: Nanos,
    /// Units to record, at least 1, at most `limit`.
    quantity: u64,
    /// The limit in force: the ring's capacity never grows past it.
    limit: u64,
}

impl Limiter for SlideLog {
    type Params = SlideParams;
    type Update = SlideUpdate;

    const NAME: &'static str = "SLIDE";
    const TYPE_NAME: &'static str = "rl-slide-";
    const TAG: u8 = b'L';
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

    fn params(values: &[u64]) -> Result<SlideParams, ParamError> {
        let &[limit, window] = values else {
            return Err(ParamError::Arg(values.len().min(1)));
        };
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ParamError::Arg(0));
        }
        SlideParams::new(limit, Nanos::new(window)).ok_or(ParamError::Arg(1))
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
        let newest = self.entries.back().map(|&e| Nanos::new(e));
        // Read (and write) the log no earlier than its newest entry.
        let at = newest.map_or(now, |newest| now.max(newest));
        let expired = self.expired_at(at, window);
        let used = self.entries.len().saturating_sub(expired) as u64;
        // The newest entry is counted whenever anything is.
        let reset_at = match newest {
            Some(newest) if used > 0 => newest.saturating_add(window),
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
            allowed.reset_at = at.saturating_add(window);
            let update = SlideUpdate {
                expired,
                at,
                quantity,
                limit,
            };
            return (allowed, Some(update));
        }

        // Limited: the oldest `need` counted units must leave first. As
        // `quantity <= limit`, `need <= used`, so the index is in the log.
        let need = total - limit;
        let last_to_leave = usize::try_from(need)
            .ok()
            .and_then(|need| expired.checked_add(need - 1))
            .and_then(|index| self.entries.get(index))
            .map(|&e| Nanos::new(e))
            .or(newest)
            .unwrap_or(at);
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
    /// the expired prefix, then records the units.
    fn apply(&mut self, update: SlideUpdate) {
        let expired = update.expired.min(self.entries.len());
        self.entries.drain(..expired);
        // Defensive: keep the log nondecreasing even if misused.
        let at = match self.entries.back() {
            Some(&newest) => update.at.get().max(newest),
            None => update.at.get(),
        };
        let quantity = usize::try_from(update.quantity.min(update.limit)).unwrap_or(usize::MAX);
        let limit = usize::try_from(update.limit).unwrap_or(usize::MAX);
        self.grow_for(quantity, limit);
        self.entries.extend(iter::repeat_n(at, quantity));
        self.shrink_if_sparse();
    }

    /// Drops the units that have left, then removes the newest `quantity`.
    fn refund(&mut self, now: Nanos, params: &SlideParams, quantity: u64) {
        let newest = self.entries.back().map(|&e| Nanos::new(e));
        let at = newest.map_or(now, |newest| now.max(newest));
        let expired = self.expired_at(at, params.window);
        self.entries.drain(..expired);
        let take = usize::try_from(quantity).unwrap_or(usize::MAX);
        let keep = self.entries.len().saturating_sub(take);
        self.entries.truncate(keep);
        self.shrink_if_sparse();
    }

    /// `units`: the units held (some may have left already: the window is
    /// a parameter of the call, not of the key); `oldest_age_ms` and
    /// `newest_age_ms`: how long ago the oldest and newest were recorded.
    fn inspect(&self, now: Nanos) -> Vec<(&'static str, Detail)> {
        let age = |e: &u64| Detail::Integer(millis(now.saturating_sub(Nanos::new(*e))));
        let mut out = vec![(
            "units",
            Detail::Integer(i64::try_from(self.entries.len()).unwrap_or(i64::MAX)),
        )];
        if let (Some(oldest), Some(newest)) = (self.entries.front(), self.entries.back()) {
            out.push(("oldest_age_ms", age(oldest)));
            out.push(("newest_age_ms", age(newest)));
        }
        out
    }

    /// Bytes this value occupies, counting what is allocated, not what is used.
    fn mem_usage(&self) -> usize {
        mem::size_of::<SlideLog>() + self.entries.capacity() * ENTRY_BYTES
    }

    /// Canonical encoding: the number of entries, then the entries, oldest
    /// first. The ring's capacity and layout are not part of it.
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(ENTRY_BYTES * (1 + self.entries.len()));
        w.u64(self.entries.len() as u64);
        for &entry in &self.entries {
            w.u64(entry);
        }
        w.into_bytes()
    }

    /// Decodes what `encode` wrote, validating everything: the exact length,
    /// at most `MAX_LIMIT` entries, entries never decreasing. Allocates only
    /// what the payload's own length justifies.
    fn decode(bytes: &[u8]) -> Result<SlideLog, DecodeError> {
        let mut r = Reader::new(bytes);
        let count = r.u64()?;
        if count > MAX_LIMIT {
            return Err(DecodeError::Invalid(
                "slide log holds more units than any limit",
            ));
        }
        let count = usize::try_from(count).map_err(|_| DecodeError::Length)?;
        if count.checked_mul(ENTRY_BYTES) != Some(r.remaining()) {
            return Err(DecodeError::Length);
        }
        let mut entries = VecDeque::new();
        entries
            .try_reserve_exact(count)
            .map_err(|_| DecodeError::Invalid("slide log too large to allocate"))?;
        let mut previous = 0;
        for _ in 0..count {
            let entry = r.u64()?;
            if entry < previous {
                return Err(DecodeError::Invalid("slide log timestamps decrease"));
            }
            entries.push_back(entry);
            previous = entry;
        }
        r.finish()?;
        Ok(SlideLog { entries })
    }
}

impl SlideLog {
    /// How many entries at the front have left by `at`: those `<= at - window`.
    fn expired_at(&self, at: Nanos, window: Nanos) -> usize {
        // Before `window` has passed since the epoch nothing can have left.
        let Some(cutoff) = at.get().checked_sub(window.get()) else {
            return 0;
        };
        match (self.entries.front(), self.entries.back()) {
            (Some(&oldest), _) if oldest > cutoff => 0,
            (_, Some(&newest)) if newest <= cutoff => self.entries.len(),
            _ => self.entries.partition_point(|&e| e <= cutoff),
        }
    }

    /// Makes room for `additional` entries: doubling, but never past `limit`
    /// unless the entries themselves need it, and exactly (a key holding
    /// `limit` units has capacity `limit`).
    fn grow_for(&mut self, additional: usize, limit: usize) {
        let len = self.entries.len();
        let needed = len.saturating_add(additional);
        let capacity = self.entries.capacity();
        if needed <= capacity {
            return;
        }
        let target = capacity
            .saturating_mul(2)
            .max(needed)
            .min(limit)
            .max(needed);
        self.entries.reserve_exact(target - len);
    }

    /// Shrinks the ring to twice the log once the log fills a quarter of it
    /// or less: amortized O(1), as the log must then double or halve before
    /// the next reallocation.
    fn shrink_if_sparse(&mut self) {
        let len = self.entries.len();
        if len.saturating_mul(4) <= self.entries.capacity() {
            self.entries.shrink_to(len.saturating_mul(2));
        }
    }
}

#[cfg(test)]
impl SlideLog {
    /// Units held, expired ones not yet dropped included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::Unit;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

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
        assert_eq!(log.entries, expected);
    }

    #[test]
    fn worked_example_of_the_module_doc() {
        let s = |n: u64| Nanos::new(n * 1_000_000_000);
        let p = SlideParams::new(3, s(10)).expect("valid");
        let mut log = SlideLog::default();
        let seconds = |log: &mut SlideLog, at, q| request(log, at, &p, q).reply(at, Unit::Seconds);
        assert_eq!(seconds(&mut log, s(0), 1), [0, 3, 2, -1, 10]);
        assert_eq!(seconds(&mut log, s(4), 2), [0, 3, 0, -1, 10]);
        assert_eq!(seconds(&mut log, s(7), 1), [1, 3, 0, 3, 7]);
        assert_eq!(seconds(&mut log, s(12), 2), [1, 3, 1, 2, 2]);
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
    }

    #[test]
    fn a_new_log_allocates_nothing() {
        let log = SlideLog::default();
        assert_eq!(log.entries.capacity(), 0);
        assert!(log.is_empty());
        assert_eq!(log.mem_usage(), mem::size_of::<SlideLog>());
        assert_eq!(log, SlideLog::default());
    }

    #[test]
    fn a_full_log_costs_eight_bytes_per_unit() {
        let p = params(1_000, 1_000_000);
        // Filled one unit at a time, or in one request.
        let mut one_by_one = SlideLog::default();
        for t in 0..1_000 {
            assert!(!request(&mut one_by_one, Nanos::new(t), &p, 1).limited);
        }
        let mut at_once = SlideLog::default();
        assert!(!request(&mut at_once, Nanos::ZERO, &p, 1_000).limited);
        for log in [&one_by_one, &at_once] {
            assert_eq!(log.len(), 1_000);
            assert_eq!(log.entries.capacity(), 1_000);
            assert!(log.mem_usage() <= 8 * 1_000 + 64, "{}", log.mem_usage());
        }
    }

    #[test]
    fn the_ring_shrinks_when_traffic_drops() {
        let p = params(1_000, 10);
        let mut log = SlideLog::default();
        request(&mut log, Nanos::ZERO, &p, 1_000);
        assert_eq!(log.entries.capacity(), 1_000);
        request(&mut log, Nanos::new(10), &p, 1);
        assert_eq!(log.len(), 1);
        assert!(log.entries.capacity() <= 2);
    }

    #[test]
    fn decode_rejects_malformed_payloads() {
        let encode = |words: &[u64]| {
            let mut w = Writer::default();
            for &word in words {
                w.u64(word);
            }
            w.into_bytes()
        };
        let good = encode(&[3, 5, 5, 9]);
        assert!(SlideLog::decode(&good).is_ok());
        assert_eq!(SlideLog::decode(&[]), Err(DecodeError::Length));
        for cut in 1..good.len() {
            assert_eq!(
                SlideLog::decode(&good[..cut]),
                Err(DecodeError::Length),
                "cut {cut}"
            );
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert_eq!(SlideLog::decode(&trailing), Err(DecodeError::Length));
        assert_eq!(
            SlideLog::decode(&encode(&[3, 5, 9, 7])),
            Err(DecodeError::Invalid("slide log timestamps decrease"))
        );
        assert!(matches!(
            SlideLog::decode(&encode(&[MAX_LIMIT + 1])),
            Err(DecodeError::Invalid(_))
        ));
        assert!(matches!(
            SlideLog::decode(&encode(&[u64::MAX, 1])),
            Err(DecodeError::Invalid(_))
        ));
        // A count the bytes do not back is refused before anything is reserved.
        assert_eq!(
            SlideLog::decode(&encode(&[MAX_LIMIT, 1, 2])),
            Err(DecodeError::Length)
        );
        assert_eq!(SlideLog::decode(&encode(&[0])), Ok(SlideLog::default()));
    }

    /// The naive reference: every admitted unit's timestamp, nothing ever
    /// dropped, everything computed by brute force from the definitions.
    #[derive(Default)]
    struct Model {
        stamps: Vec<u64>,
    }

    impl Model {
        fn newest(&self) -> Option<u64> {
            self.stamps.iter().copied().max()
        }

        /// Units recorded in `(t - window, t]`.
        fn counted(&self, t: u64, window: u64) -> Vec<u64> {
            let t = u128::from(t);
            self.stamps
                .iter()
                .copied()
                .filter(|&s| t < u128::from(s) + u128::from(window) && u128::from(s) <= t)
                .collect()
        }

        fn decide(&mut self, now: u64, limit: u64, window: u64, quantity: u64) -> Decision {
            let t = self.newest().map_or(now, |n| n.max(now));
            let counted = self.counted(t, window);
            let used = counted.len() as u64;
            let reset_at = counted.iter().map(|&s| s + window).max().unwrap_or(now);
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
                    self.stamps.extend(iter::repeat_n(t, quantity as usize));
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
            // The smallest instant among the candidates (an entry leaving)
            // at which the same request would fit.
            let newest = self.newest().unwrap_or(0);
            let retry_at = self
                .stamps
                .iter()
                .map(|&s| s + window)
                .filter(|&c| c > now)
                .filter(|&c| self.counted(c.max(newest), window).len() as u64 + quantity <= limit)
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
        dt: u64,
        /// A new limit (index in the limit table), or keep the current one.
        limit: Option<usize>,
        /// Taken modulo `limit + 3`: 0 ..= limit + 2.
        quantity: u64,
    }

    fn step(limits: usize, max_dt: u64, max_quantity: u64) -> impl Strategy<Value = Step> {
        (
            prop::bool::weighted(0.1),
            0..=max_dt,
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

    /// Runs `steps` from `start` with a fixed `window`, calling `check` with
    /// the log before each request, the request and its decision.
    fn run(
        limits: &[u64],
        window: u64,
        start: u64,
        steps: &[Step],
        mut check: impl FnMut(&SlideLog, u64, &SlideParams, u64, &Decision, bool),
    ) -> SlideLog {
        let mut log = SlideLog::default();
        let mut now = start;
        let mut limit = limits[0];
        for s in steps {
            now = if s.back {
                now.saturating_sub(s.dt * 2)
            } else {
                now + s.dt
            };
            if let Some(i) = s.limit {
                limit = limits[i];
            }
            let quantity = s.quantity % (limit + 3);
            let p = params(limit, window);
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
            window in 1u64..=40,
            start in 0u64..100,
            steps in prop::collection::vec(step(LIMITS.len(), 20, 15), 1..150),
        ) {
            let mut model = Model::default();
            run(&LIMITS, window, start, &steps, |_, now, p, quantity, decision, admitted| {
                let before = model.stamps.len();
                let expected = model.decide(now, p.limit(), window, quantity);
                assert_eq!(*decision, expected, "now {now} quantity {quantity}");
                assert_eq!(admitted, model.stamps.len() > before);
            });
        }

        #[test]
        fn waiting_retry_after_is_enough_and_not_too_much(
            window in 1u64..=40,
            start in 0u64..100,
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
            window in 1u64..=200,
            steps in prop::collection::vec(step(4, 30, 2_000), 1..200),
        ) {
            let limits = [10, 1_000, 3, 100];
            let mut largest = 0;
            let log = run(&limits, window, 0, &steps, |log, _, p, _, _, _| {
                assert!(log.len() as u64 <= largest);
                assert!(log.entries.capacity() as u64 <= largest);
                largest = largest.max(p.limit());
            });
            prop_assert!(log.len() as u64 <= largest);
            prop_assert!(log.entries.capacity() as u64 <= largest);
        }

        #[test]
        fn encoding_round_trips(
            window in 1u64..=40,
            steps in prop::collection::vec(step(LIMITS.len(), 20, 15), 0..100),
        ) {
            let log = run(&LIMITS, window, 0, &steps, |_, _, _, _, _, _| {});
            let bytes = log.encode();
            prop_assert_eq!(bytes.len(), 8 * (1 + log.len()));
            let decoded = SlideLog::decode(&bytes);
            prop_assert_eq!(decoded.as_ref(), Ok(&log));
            prop_assert_eq!(decoded.map(|d| d.encode()), Ok(bytes));
        }

        #[test]
        fn any_sorted_log_round_trips(mut entries in prop::collection::vec(any::<u64>(), 0..50)) {
            entries.sort_unstable();
            let log = SlideLog { entries: entries.iter().copied().collect() };
            let decoded = SlideLog::decode(&log.encode());
            prop_assert_eq!(decoded.as_ref(), Ok(&log));
            prop_assert_eq!(decoded.map(|d| d.entries.into_iter().collect::<Vec<_>>()), Ok(entries));
        }

        #[test]
        fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..100)) {
            let _ = SlideLog::decode(&bytes);
        }
    }
}
