//! RL.SLIDE against a brute-force reference over random runs, and the
//! properties of whole runs: exact retry instants, memory bounded by the
//! limit, round trips of the encoding, PRECISION's promises, a decoder that
//! never panics.

use std::collections::VecDeque;
use std::iter;

use proptest::prelude::*;

use super::format::v2;
use super::{params, US};
use crate::core::slide::times::leading_at_most;
use crate::core::slide::{SlideParams, SlideState, MAX_MICROS, V1_TAG};
use crate::core::{Decision, Kind, Nanos, Retry};

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
                        if dropped + n <= before && d > 0 && (kept / 1_000 - first) * 1_000 < d =>
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

impl Model {
    /// A refund of `quantity` units at `now` (exact logs): forgets the
    /// units that left at the instant it reads, takes the newest units,
    /// moves the clock.
    fn refund(&mut self, now: u64, window: u64, quantity: u64) {
        let t = self.read_at(now);
        let clock = self.clock;
        self.stamps
            .retain(|&s| u128::from(s.min(clock)) + u128::from(window) > u128::from(t));
        let keep = self.stamps.len().saturating_sub(quantity as usize);
        self.stamps.truncate(keep);
        self.clock = t;
        self.newest = None;
    }
}

const LIMITS: [u64; 6] = [1, 2, 3, 5, 8, 13];

/// Limits well above the 2 entries the log keeps in its struct (its tail):
/// logs whose entries move to the ring in batches.
const LONG_LIMITS: [u64; 4] = [16, 30, 47, 64];

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
    check: impl FnMut(&SlideState, u64, &SlideParams, u64, &Decision, bool),
) -> SlideState {
    run_within(limits, window, &[0], start, steps, check)
}

/// As `run`, with PRECISION: `ds[i % ds.len()]` (µs) at step `i`.
fn run_within(
    limits: &[u64],
    window: u64,
    ds: &[u64],
    start: u64,
    steps: &[Step],
    mut check: impl FnMut(&SlideState, u64, &SlideParams, u64, &Decision, bool),
) -> SlideState {
    let mut log = SlideState::default();
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

    /// Logs longer than the tail: entries move to the ring in batches,
    /// leave from both, and refunds take them back from both; at every
    /// step the log answers as the model, and as its decoded copy (which
    /// splits its entries between ring and tail its own way).
    #[test]
    fn matches_the_reference_model_across_the_tail(
        window in (20u64..=400, prop_oneof![Just(0u64), 0u64..1_000]).prop_map(|(us, ns)| us * US + ns),
        start in 0u64..100_000,
        steps in prop::collection::vec(
            (step(LONG_LIMITS.len(), 6, 4), prop::option::weighted(0.08, 1u64..40)),
            1..300,
        ),
    ) {
        let mut model = Model::default();
        let mut log = SlideState::default();
        let (mut now, mut limit) = (start, LONG_LIMITS[0]);
        for (s, refund) in &steps {
            let dt = s.dt.0 * US + s.dt.1;
            now = if s.back { now.saturating_sub(dt * 2) } else { now + dt };
            if let Some(i) = s.limit {
                limit = LONG_LIMITS[i];
            }
            let p = params(limit, window);
            if let Some(q) = *refund {
                log.refund(Nanos::new(now), &p, q);
                model.refund(now, window, q);
            } else {
                let quantity = s.quantity % (limit + 3);
                let copy = SlideState::decode(&log.encode()).expect("round trip");
                let (decision, update) = log.decide(Nanos::new(now), &p, quantity);
                prop_assert_eq!(copy.decide(Nanos::new(now), &p, quantity).0, decision);
                prop_assert_eq!(decision, model.decide(now, limit, window, quantity));
                if let Some(update) = update {
                    log.apply(update);
                }
            }
            prop_assert_eq!(log.units_ns(), model.stamps.clone());
        }
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
        let decoded = SlideState::decode(&bytes);
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
        let log = SlideState::decode(&bytes).expect("decodes");
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
        let mut log = SlideState::default();
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
        let decoded = SlideState::decode(&bytes);
        prop_assert_eq!(decoded.as_ref(), Ok(&log));
        prop_assert_eq!(decoded.map(|d| d.encode()), Ok(bytes));
    }

    #[test]
    fn decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..100)) {
        let _ = SlideState::decode(&bytes);
        let _ = SlideState::decode_legacy(V1_TAG, &bytes);
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
        if let Ok(decoded) = SlideState::decode(&bytes) {
            prop_assert_eq!(decoded.encode(), bytes);
        }
    }
}
