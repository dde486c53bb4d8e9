//! The tests of the three algorithms: a folder each (`throttle/`, `slice/`,
//! `slide/`) for its tables, reference models and properties, `refund.rs`
//! for the promises of refunds, `fixtures.rs` for the saved formats.
//!
//! Across their whole documented ranges (issue 10), each folder's
//! `ranges.rs` and `fixtures.rs`: property tests that reach the maxima,
//! independent models written from the formulas of docs/DESIGN.md and compared on all
//! five reply fields, and byte fixtures of the saved formats.
//!
//! Those use the core's public interface only (`Kind`, the parameter
//! constructors, `Decision`), so the models cannot lean on the code's
//! private helpers: what they share with the code is docs/DESIGN.md, not arithmetic.
//! The other tests may also use the few helpers and test-only accessors
//! an algorithm's module opens to `core` for them.
//!
//! Random choices are drawn as `(kind, seed)` pairs and turned into values
//! at run time (`pick`, `move_clock`, `quantity`), because the interesting
//! values depend on the parameters and on the previous decision: the
//! instant a decision said to retry at, a nanosecond before it, the edges
//! of a range. A pair shrinks towards `(0, 0)`, the simplest value.

mod charge;
mod fixtures;
mod lease;
mod quota;
mod refund;
mod slice;
mod slide;
mod throttle;
mod wait;

use proptest::prelude::*;

use crate::args::MAX_QUANTITY;
use crate::core::{Decision, Kind, Nanos, Retry, TimeUnit};

/// One random choice: a kind (which edge, which distribution) and a seed.
pub type Choice = (u8, u64);

pub fn choice() -> impl Strategy<Value = Choice> {
    (any::<u8>(), any::<u64>())
}

/// A year of 365 days, in nanoseconds.
pub const YEAR: u64 = 365 * 24 * 3_600 * 1_000_000_000;

/// No instant in these runs is later than this (in 2286), so that anything
/// a limiter computes from it (at most 100 years of tolerance, ten-year
/// windows) stays far below `Nanos::MAX` and no arithmetic saturates: the
/// models use unbounded arithmetic, and saturation has its own tests.
pub const LATEST: u64 = 10_000_000_000_000_000_000;

/// A value in `0..=bound`, drawn to reach the edges of the range often: 0,
/// the bound, a few above 0, a few below the bound, log-uniform (every
/// order of magnitude as likely), uniform.
pub fn pick(bound: u64, (kind, seed): Choice) -> u64 {
    let near = bound.saturating_add(1).min(16);
    match kind % 6 {
        0 => 0,
        1 => bound,
        2 => seed % near,
        3 => bound - seed % near,
        4 => {
            let bits = u64::from(64 - bound.leading_zeros());
            let width = seed % (bits + 1);
            let mixed = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
            let value = if width == 0 { 0 } else { mixed >> (64 - width) };
            value.min(bound)
        }
        _ => match bound.checked_add(1) {
            Some(n) => seed % n,
            None => seed,
        },
    }
}

/// The clock of the next call: the same instant, a step forward or back at
/// the scale of the nanosecond, of the parameters' `short` and `long`
/// durations (an emission interval and a tolerance, a slice and a window)
/// or of years, whole milliseconds, or exactly one of `marks` (instants
/// the last decision named, boundaries) or a nanosecond before it.
pub fn move_clock(now: u64, (kind, seed): Choice, short: u64, long: u64, marks: &[u64]) -> u64 {
    let forward = |d: u64| now.saturating_add(d);
    let back = |d: u64| now.saturating_sub(d);
    let mark = || (!marks.is_empty()).then(|| marks[(seed % marks.len() as u64) as usize]);
    let next = match kind % 14 {
        0 => now,
        1 => forward(seed % 1_000),
        2 => forward(seed % short.saturating_mul(3).saturating_add(1)),
        3 => forward(seed % long.saturating_add(1)),
        4 => forward(seed % long.saturating_mul(2).saturating_add(1)),
        5 => forward(pick(200 * YEAR, (4, seed))),
        6 => forward(seed % 100_000 * 1_000_000),
        7 | 8 => mark().unwrap_or(now),
        9 => mark().map_or(now, |m| m.saturating_sub(1)),
        10 => back(seed % 1_000),
        11 => back(seed % short.saturating_mul(3).saturating_add(1)),
        12 => back(seed % long.saturating_mul(2).saturating_add(1)),
        _ => back(pick(100 * YEAR, (4, seed))),
    };
    next.min(LATEST)
}

/// The quantity of the next call, up to `MAX_QUANTITY` (the parser's
/// bound): a peek, one, a few, the limit and just below or above it, what
/// the last decision said remains and one more, any, the maximum.
pub fn quantity((kind, seed): Choice, limit: u64, remaining: u64) -> u64 {
    let q = match kind % 10 {
        0 => 0,
        1 => 1,
        2 => seed % 8,
        3 => limit.saturating_sub(seed % 3),
        4 => limit.saturating_add(1 + seed % 2),
        5 => remaining,
        6 => remaining.saturating_add(1),
        7 => pick(limit, (4, seed)),
        8 => pick(MAX_QUANTITY, (4, seed)),
        _ => MAX_QUANTITY,
    };
    q.min(MAX_QUANTITY)
}

/// The instants a decision names: when to retry, when it resets.
pub fn marks_of(decision: Option<&Decision>) -> Vec<u64> {
    let Some(d) = decision else {
        return Vec::new();
    };
    let mut marks = vec![d.reset_at.get()];
    if let Retry::At(at) = d.retry {
        marks.push(at.get());
    }
    marks
}

/// Where a run's clock starts: the epoch, just after it, today, or within
/// 200 years of `LATEST`.
pub fn start_instant() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        0u64..1_000_000,
        1_700_000_000_000_000_000u64..1_800_000_000_000_000_000,
        LATEST - 200 * YEAR..=LATEST,
    ]
}

/// The promise of one call's `retry_after`: the same request is
/// allowed at the instant `Retry::At` names and limited a nanosecond
/// earlier, and waiting the rounded-up reply, in milliseconds or seconds,
/// is enough; `Retry::Never` only when the quantity exceeds `capacity`.
pub fn assert_retry_promise<L: Kind>(
    state: &L,
    params: &L::Params,
    now: u64,
    quantity: u64,
    capacity: u64,
    decision: &Decision,
) {
    let decide = |at: u64| state.decide(Nanos::new(at), params, quantity).0;
    match decision.retry {
        Retry::At(at) => {
            let at = at.get();
            assert!(at > now);
            assert!(!decide(at).limited, "still limited at the promised {at}");
            assert!(decide(at - 1).limited, "already allowed at {}", at - 1);
            for unit in [TimeUnit::Millis, TimeUnit::Seconds] {
                let wait = decision.reply(Nanos::new(now), unit)[3];
                let then = now + u64::try_from(wait).unwrap() * unit.nanos();
                assert!(
                    !decide(then).limited,
                    "limited after waiting {wait} {unit:?}"
                );
            }
        }
        Retry::Never => assert!(quantity > capacity),
        Retry::NotLimited => assert!(!decision.limited),
        Retry::Turn(_) => panic!("decide answered a turn: {decision:?}"),
    }
}

/// The reply docs/DESIGN.md#reply gives for a decision, computed apart from
/// `Decision::reply`: times from `now`, rounded up to the `unit`.
pub fn spec_reply(d: &Decision, now: u64, unit: TimeUnit) -> [i64; 5] {
    let after = |at: Nanos| {
        let ns = at.get().saturating_sub(now);
        i64::try_from(ns.div_ceil(unit.nanos())).expect("in range")
    };
    let retry_after = match d.retry {
        Retry::At(at) | Retry::Turn(at) => after(at),
        Retry::NotLimited | Retry::Never => -1,
    };
    [
        i64::from(d.limited),
        i64::try_from(d.limit).expect("in range"),
        i64::try_from(d.remaining).expect("in range"),
        retry_after,
        after(d.reset_at),
    ]
}
