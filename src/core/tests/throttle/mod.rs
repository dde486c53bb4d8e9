//! RL.THROTTLE (GCRA): tables of requests, redis-cell's published cases,
//! the decoder's refusals, and properties against a naive reference in
//! exact rationals. `ranges`: the algorithm across its documented ranges.

mod ranges;

use proptest::prelude::*;

use crate::core::throttle::{
    ThrottleParamError, ThrottleParams, ThrottleState, MAX_BURST, MAX_COUNT,
};
use crate::core::{Decision, DecodeError, Kind, Nanos, Retry, TimeUnit, MAX_DURATION};

/// Decides against a stored TAT, or a missing key (`None`); the update as
/// the state it stores.
fn decide(
    tat: Option<&ThrottleState>,
    now: Nanos,
    p: &ThrottleParams,
    quantity: u64,
) -> (Decision, Option<ThrottleState>) {
    let (decision, update) = tat.cloned().unwrap_or_default().decide(now, p, quantity);
    (decision, update.map(stored))
}

/// The state an update stores.
pub(crate) fn stored(update: crate::core::throttle::Tat) -> ThrottleState {
    let mut state = ThrottleState::default();
    state.apply(update);
    state
}

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;

fn params(max_burst: u64, count: u64, period: Nanos) -> ThrottleParams {
    ThrottleParams::new(max_burst, count, period).unwrap()
}

/// Runs requests in order against one key, storing what `decide` returns.
fn run(key: &mut Option<ThrottleState>, now: u64, p: &ThrottleParams, quantity: u64) -> Decision {
    let (decision, update) = decide(key.as_ref(), Nanos::new(now), p, quantity);
    if let Some(tat) = update {
        *key = Some(tat);
    }
    decision
}

#[test]
fn table_of_requests_in_seconds() {
    // One key, requests in order. Columns:
    // at (ms), max_burst, count, period (s), quantity
    //   => limited, limit, remaining, retry_after (s), reset_after (s)
    #[rustfmt::skip]
    type Case = (u64, u64, u64, u64, u64, [i64; 5]);
    let cases: &[Case] = &[
        // 30 per 60 s, burst 15: T = 2 s, capacity 16, τ = 32 s.
        (0, 15, 30, 60, 1, [0, 16, 15, -1, 2]),
        (0, 15, 30, 60, 14, [0, 16, 1, -1, 30]),
        (0, 15, 30, 60, 1, [0, 16, 0, -1, 32]),
        (0, 15, 30, 60, 1, [1, 16, 0, 2, 32]),
        // A peek reports without changing anything.
        (0, 15, 30, 60, 0, [0, 16, 0, -1, 32]),
        // 1.5 s later one unit is still 0.5 s away: rounded up to 1 s.
        (1_500, 15, 30, 60, 1, [1, 16, 0, 1, 31]),
        (2_000, 15, 30, 60, 1, [0, 16, 0, -1, 32]),
        // More than the capacity can never fit.
        (2_000, 15, 30, 60, 17, [1, 16, 0, -1, 32]),
        // Long idle: the key is as good as empty.
        (100_000, 15, 30, 60, 0, [0, 16, 16, -1, 0]),
        (100_000, 15, 30, 60, 16, [0, 16, 0, -1, 32]),
        // A smaller burst on the same key applies to what it recorded:
        // TAT is 32 s ahead, τ is now 2 s.
        (100_000, 0, 30, 60, 0, [1, 1, 0, 30, 32]),
        (130_000, 0, 30, 60, 1, [1, 1, 0, 2, 2]),
        (132_000, 0, 30, 60, 1, [0, 1, 0, -1, 2]),
    ];
    let mut key = None;
    for (i, &(at, burst, count, period, quantity, expect)) in cases.iter().enumerate() {
        let p = params(burst, count, Nanos::new(period * S));
        let d = run(&mut key, at * MS, &p, quantity);
        assert_eq!(
            d.reply(Nanos::new(at * MS), TimeUnit::Seconds),
            expect,
            "case {i}"
        );
    }
}

#[test]
fn redis_cell_published_cases() {
    // The case list redis-cell publishes for its own GCRA (capacity 5,
    // one unit per second), replayed here in milliseconds: the replies
    // agree wherever redis-cell is right. One key, requests in order.
    // at (ms), quantity => limited, limit, remaining, retry_after (ms), reset_after (ms)
    type Case = (u64, u64, [i64; 5]);
    #[rustfmt::skip]
    let cases: &[Case] = &[
        (0,     6, [1, 5, 5, -1, 0]),     // never fits
        (0,     1, [0, 5, 4, -1, 1_000]),
        (0,     1, [0, 5, 3, -1, 2_000]),
        (0,     1, [0, 5, 2, -1, 3_000]),
        (0,     1, [0, 5, 1, -1, 4_000]),
        (0,     1, [0, 5, 0, -1, 5_000]),
        (0,     1, [1, 5, 0, 1_000, 5_000]),
        (3_000, 1, [0, 5, 2, -1, 3_000]),
        (3_100, 1, [0, 5, 1, -1, 3_900]),
        (4_000, 1, [0, 5, 1, -1, 4_000]),
        (8_000, 1, [0, 5, 4, -1, 1_000]),
        (9_500, 1, [0, 5, 4, -1, 1_000]),
        (9_500, 0, [0, 5, 4, -1, 1_000]), // peek
        (9_500, 2, [0, 5, 2, -1, 3_000]),
        (9_500, 5, [1, 5, 2, 3_000, 3_000]),
    ];
    let p = params(4, 1, Nanos::new(S));
    let mut key = None;
    let start = 1_700_000_000 * S;
    for (i, &(at, quantity, expect)) in cases.iter().enumerate() {
        let now = start + at * MS;
        let d = run(&mut key, now, &p, quantity);
        assert_eq!(
            d.reply(Nanos::new(now), TimeUnit::Millis),
            expect,
            "case {i}"
        );
    }
}

#[test]
fn thirds_of_a_second_are_exact() {
    // 3 per second, burst 1: a burst of two fits at once, which it would
    // not if T were rounded up to 333,333,334 ns.
    let p = params(1, 3, Nanos::new(S));
    let mut key = None;
    assert!(!run(&mut key, 0, &p, 1).limited);
    assert!(!run(&mut key, 0, &p, 1).limited);
    let d = run(&mut key, 0, &p, 1);
    assert!(d.limited);
    // The third unit fits exactly one third of a second later, rounded up.
    assert_eq!(d.retry, Retry::At(Nanos::new(333_333_334)));
    assert!(run(&mut key, 333_333_333, &p, 1).limited);
    assert!(!run(&mut key, 333_333_334, &p, 1).limited);
    // Over 1,000 s the rate is exactly 3 per second.
    let mut allowed = 0;
    for ms in 1_000..=1_001_000 {
        if !run(&mut key, ms * MS, &p, 1).limited {
            allowed += 1;
        }
    }
    // 3,000 for the 1,000 s, plus the full burst of 2 the key had at 1 s.
    assert_eq!(allowed, 3_002);
}

#[test]
fn millisecond_periods_and_a_million_per_second() {
    let p = params(0, 1_000, Nanos::new(MS)); // 10^6 per second, T = 1 µs
    let mut key = None;
    let d = run(&mut key, 0, &p, 1);
    assert_eq!(d.reply(Nanos::ZERO, TimeUnit::Millis), [0, 1, 0, -1, 1]);
    assert_eq!(d.reset_at, Nanos::new(1_000));
    let d = run(&mut key, 999, &p, 1);
    assert_eq!(d.retry, Retry::At(Nanos::new(1_000)));
    assert!(!run(&mut key, 1_000, &p, 1).limited);
}

#[test]
fn a_clock_going_backwards_lets_nothing_more_through() {
    let p = params(0, 1, Nanos::new(S));
    let mut key = None;
    assert!(!run(&mut key, 10 * S, &p, 1).limited);
    let d = run(&mut key, 5 * S, &p, 1);
    assert!(d.limited);
    assert_eq!(
        d.reply(Nanos::new(5 * S), TimeUnit::Seconds),
        [1, 1, 0, 6, 6]
    );
}

#[test]
fn a_changed_count_rounds_the_stored_fraction_up() {
    let thirds = params(0, 3, Nanos::new(S));
    let mut key = None;
    run(&mut key, 0, &thirds, 1); // TAT = 333,333,333⅓ ns
    let halves = params(0, 2, Nanos::new(S));
    let d = run(&mut key, 0, &halves, 0);
    assert_eq!(d.reset_at, Nanos::new(333_333_334));
}

#[test]
fn parameters_out_of_range_are_refused() {
    assert_eq!(
        ThrottleParams::new(MAX_BURST + 1, 1, Nanos::new(S)),
        Err(ThrottleParamError::MaxBurst)
    );
    assert_eq!(
        ThrottleParams::new(0, 0, Nanos::new(S)),
        Err(ThrottleParamError::Count)
    );
    assert_eq!(
        ThrottleParams::new(0, MAX_COUNT + 1, Nanos::new(S)),
        Err(ThrottleParamError::Count)
    );
    assert_eq!(
        ThrottleParams::new(0, 1, Nanos::ZERO),
        Err(ThrottleParamError::Period)
    );
    assert_eq!(
        ThrottleParams::new(0, 1, MAX_DURATION.saturating_add(Nanos::new(1))),
        Err(ThrottleParamError::Period)
    );
    assert_eq!(
        ThrottleParams::new(100, 1, MAX_DURATION),
        Err(ThrottleParamError::Tolerance)
    );
    assert!(ThrottleParams::new(MAX_BURST, MAX_COUNT, Nanos::new(S)).is_ok());
    assert!(ThrottleParams::new(0, 1, MAX_DURATION).is_ok());
}

#[test]
fn decode_refuses_what_no_state_holds() {
    let tat = ThrottleState::from_parts(Nanos::new(5), 1, 3);
    assert_eq!(ThrottleState::decode(&tat.encode()), Ok(tat.clone()));
    let bytes = tat.encode();
    assert_eq!(
        ThrottleState::decode(&bytes[..15]),
        Err(DecodeError::Length)
    );
    assert_eq!(
        ThrottleState::decode(&[bytes.as_slice(), &[0]].concat()),
        Err(DecodeError::Length)
    );
    // whole 5, frac 0, den 0: no state holds a zero denominator.
    let zero_den = [&5u64.to_le_bytes()[..], &[0; 8]].concat();
    assert!(matches!(
        ThrottleState::decode(&zero_den),
        Err(DecodeError::Invalid(_))
    ));
    let big_frac = ThrottleState::from_parts(Nanos::new(5), 3, 3).encode();
    assert!(matches!(
        ThrottleState::decode(&big_frac),
        Err(DecodeError::Invalid(_))
    ));
}

/// A naive GCRA over exact rationals, as a reference: the TAT is kept as
/// a numerator over `count` with no shortcut at all.
struct Reference {
    tat_num: Option<u128>, // TAT × count
}

impl Reference {
    fn request(&mut self, now: u64, burst: u64, count: u64, period: u64, q: u64) -> bool {
        let now_num = u128::from(now) * u128::from(count);
        let tat = self.tat_num.unwrap_or(now_num).max(now_num);
        let new_tat = tat + u128::from(q) * u128::from(period);
        let allowed =
            q <= burst + 1 && new_tat - now_num <= u128::from(burst + 1) * u128::from(period);
        if allowed && q > 0 {
            self.tat_num = Some(new_tat);
        }
        allowed
    }
}

fn scenario() -> impl Strategy<Value = (u64, u64, u64, Vec<(u64, u64)>)> {
    (
        0u64..20,
        1u64..50,
        1u64..5_000,
        proptest::collection::vec((0u64..3_000, 0u64..25), 1..200),
    )
}

proptest! {
    #[test]
    fn agrees_with_the_reference((burst, count, period_ms, steps) in scenario()) {
        let p = params(burst, count, Nanos::new(period_ms * MS));
        let mut key = None;
        let mut reference = Reference { tat_num: None };
        let mut now = 1_700_000_000 * S;
        for (step, q) in steps {
            now += step * MS / 7; // steps that are not whole milliseconds
            let d = run(&mut key, now, &p, q);
            prop_assert_eq!(!d.limited, reference.request(now, burst, count, period_ms * MS, q));
            prop_assert!(d.remaining <= d.limit);
        }
    }

    #[test]
    fn waiting_retry_after_is_enough((burst, count, period_ms, steps) in scenario(), unit_ms in prop::bool::ANY) {
        let unit = if unit_ms { TimeUnit::Millis } else { TimeUnit::Seconds };
        let p = params(burst, count, Nanos::new(period_ms * MS));
        let mut key = None;
        let mut now = 1_700_000_000 * S;
        for (step, q) in steps {
            now += step * MS / 3;
            let (d, update) = decide(key.as_ref(), Nanos::new(now), &p, q);
            if let Retry::At(at) = d.retry {
                // Exactly at `at` it fits; a nanosecond earlier it does not.
                prop_assert!(!decide(key.as_ref(), at, &p, q).0.limited);
                prop_assert!(decide(key.as_ref(), Nanos::new(at.get() - 1), &p, q).0.limited);
                // The rounded-up reply is enough too.
                let waited = now + d.reply(Nanos::new(now), unit)[3] as u64 * unit.nanos();
                prop_assert!(!decide(key.as_ref(), Nanos::new(waited), &p, q).0.limited);
            }
            if let Some(tat) = update {
                key = Some(tat);
            }
        }
    }

    #[test]
    fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        let _ = ThrottleState::decode(&bytes);
    }

    #[test]
    fn any_stored_state_decides_without_panicking(
        whole in any::<u64>(),
        den in 1u32..,
        frac_seed in any::<u32>(),
        now in any::<u64>(),
        quantity in 0u64..=MAX_BURST + 2,
        count in 1u64..=MAX_COUNT,
    ) {
        let tat = ThrottleState::from_parts(Nanos::new(whole), frac_seed % den, den);
        let p = params(0, count, Nanos::new(S));
        let (d, update) = decide(Some(&tat), Nanos::new(now), &p, quantity);
        prop_assert!(d.remaining <= d.limit);
        if let Some(t) = update {
            let (_, frac, den) = t.parts();
            prop_assert!(frac < den);
        }
    }

    #[test]
    fn no_interval_admits_more_than_capacity_plus_rate((burst, count, period_ms, steps) in scenario()) {
        let period = period_ms * MS;
        let p = params(burst, count, Nanos::new(period));
        let mut key = None;
        let mut now = 1_700_000_000 * S;
        let mut admitted: Vec<(u64, u64)> = Vec::new();
        for (step, q) in steps {
            now += step * MS / 5;
            if !run(&mut key, now, &p, q).limited && q > 0 {
                admitted.push((now, q));
            }
        }
        // Over any interval [a, a + L], at most capacity + L × count / period units.
        for (i, &(start, _)) in admitted.iter().enumerate() {
            let mut units = 0u128;
            for &(t, q) in &admitted[i..] {
                units += u128::from(q);
                let span = u128::from(t - start);
                prop_assert!(
                    units * u128::from(period) <= u128::from(burst + 1) * u128::from(period) + span * u128::from(count),
                    "{} units in {} ns", units, span
                );
            }
        }
    }
}
