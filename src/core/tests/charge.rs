//! RL.CHARGE's promises, for every kind it charges: a charge within the
//! limit records exactly what an allowed request of that quantity records;
//! past the limit the key is in debt, limited until exactly when the debt
//! is paid (waiting `retry_after` is enough, a nanosecond less is not);
//! `remaining` stays within the limit; memory stays within the bound of
//! allowed requests; and a charge past a counter's maximum is refused with
//! nothing recorded.

use proptest::prelude::*;

use crate::core::quota::{CalendarUnit, QuotaParams, QuotaState, Zone, MAX_USED};
use crate::core::slice::{SliceParams, SliceState};
use crate::core::slide::{SlideParams, SlideState, MAX_UNITS};
use crate::core::throttle::{ThrottleParams, ThrottleState};
use crate::core::{Kind, Nanos, Retry, MAX_DURATION};

const S: u64 = 1_000_000_000;

/// A charge within what the key can still take equals the allowed request.
fn check_within<L: Kind + PartialEq + std::fmt::Debug>(
    params: &L::Params,
    state: &L,
    now: Nanos,
    quantity: u64,
) -> Result<(), TestCaseError> {
    let (decision, update) = state.decide(now, params, quantity);
    if decision.limited || quantity == 0 {
        return Ok(());
    }
    let mut allowed = state.clone();
    allowed.apply(update.expect("an allowed request that takes units updates"));
    let mut charged = state.clone();
    prop_assert_eq!(charged.charge(now, params, quantity), Ok(()));
    prop_assert_eq!(charged, allowed);
    Ok(())
}

/// After a charge: a request of `quantity` is limited until its retry,
/// then allowed (if nothing else is recorded), and remaining stays within
/// the limit.
fn check_debt<L: Kind>(
    state: &L,
    params: &L::Params,
    now: Nanos,
    quantity: u64,
) -> Result<(), TestCaseError> {
    let (d, _) = state.decide(now, params, quantity);
    prop_assert!(d.remaining <= d.limit);
    match d.retry {
        Retry::At(at) => {
            prop_assert!(d.limited);
            prop_assert!(at > now);
            let before = state.decide(Nanos::new(at.get() - 1), params, quantity).0;
            prop_assert!(before.limited, "allowed 1 ns before its retry: {d:?}");
            let then = state.decide(at, params, quantity).0;
            prop_assert!(
                !then.limited,
                "still limited at its retry: {d:?} then {then:?}"
            );
        }
        Retry::NotLimited => prop_assert!(!d.limited),
        Retry::Never => prop_assert!(quantity > d.limit),
        Retry::Turn(_) => prop_assert!(false, "decide answered a turn: {d:?}"),
    }
    Ok(())
}

proptest! {
    #[test]
    fn throttle_charges_are_debts_paid_back_exactly(
        max_burst in 0u64..20,
        count in 1u64..50,
        period in 1u64..100,
        charges in proptest::collection::vec((0u64..100, 1u64..200), 1..6),
        ask in 1u64..5,
    ) {
        let params = ThrottleParams::new(max_burst, count, Nanos::new(period * S)).unwrap();
        let mut state = ThrottleState::default();
        let mut now = 1_000 * S;
        // The model: the TAT in units of 1/count ns.
        let mut tat = 0u128;
        for (dt, q) in charges {
            now += dt * S / 10;
            check_within(&params, &state, Nanos::new(now), q)?;
            prop_assert_eq!(state.charge(Nanos::new(now), &params, q), Ok(()));
            // The TAT moves by exactly quantity × T from max(now, TAT).
            tat = tat.max(now as u128 * count as u128) + q as u128 * period as u128 * S as u128;
            let reset = state.decide(Nanos::new(now), &params, 0).0.reset_at;
            prop_assert_eq!(reset.get() as u128, tat.div_ceil(count as u128));
            check_debt(&state, &params, Nanos::new(now), ask)?;
        }
    }

    #[test]
    fn slide_charges_stay_bounded_and_are_paid_exactly(
        limit in 1u64..12,
        window in 1u64..100,
        precision in 0u64..4,
        charges in proptest::collection::vec((0u64..300, 1u64..40), 1..30),
        ask in 1u64..4,
    ) {
        let d = precision * window / 4;
        let params = SlideParams::new(limit, Nanos::new(window * S / 10))
            .unwrap()
            .with_precision(Nanos::new(d * S / 10))
            .unwrap();
        let bound = window.checked_div(d).map_or(limit, |n| limit.min(n + 1));
        let mut state = SlideState::default();
        let mut now = 1_000 * S;
        // The model: every charged unit and its exact instant.
        let mut units: Vec<(u64, u64)> = Vec::new();
        for (dt, q) in charges {
            now += dt * S / 100;
            check_within(&params, &state, Nanos::new(now), q)?;
            prop_assert_eq!(state.charge(Nanos::new(now), &params, q), Ok(()));
            units.push((now, q));
            prop_assert!(state.entries() as u64 <= bound, "{} entries, bound {bound}", state.entries());
            // Never let through early: whatever the exact log still counts
            // at any later instant, the key counts too.
            for later in [0, window * S / 20, window * S / 10 - 1, window * S / 10] {
                let t = now + later;
                let exact: u64 = units.iter().filter(|(at, _)| at + window * S / 10 > t).map(|u| u.1).sum();
                let d = state.decide(Nanos::new(t), &params, 0).0;
                prop_assert!(limit - d.remaining.min(limit) >= exact.min(limit), "at {t}: exact {exact}, {d:?}");
                if exact > limit {
                    prop_assert!(d.limited);
                }
            }
            check_debt(&state, &params, Nanos::new(now), ask)?;
        }
    }

    #[test]
    fn slice_charges_are_paid_exactly(
        limit in 1u64..20,
        window in 1u64..100,
        slices in 1u64..6,
        charges in proptest::collection::vec((0u64..300, 1u64..60), 1..10),
        ask in 1u64..4,
    ) {
        let params = SliceParams::new(limit, Nanos::new(window * S / 10), slices).unwrap();
        let mut state = SliceState::default();
        let mut now = 1_000 * S;
        for (dt, q) in charges {
            now += dt * S / 100;
            check_within(&params, &state, Nanos::new(now), q)?;
            prop_assert_eq!(state.charge(Nanos::new(now), &params, q), Ok(()));
            check_debt(&state, &params, Nanos::new(now), ask)?;
        }
    }

    #[test]
    fn quota_charges_are_paid_at_the_period_end(
        limit in 1u64..20,
        charges in proptest::collection::vec((0u64..40_000, 1u64..60), 1..10),
        ask in 1u64..4,
    ) {
        let params = QuotaParams { limit, unit: CalendarUnit::Hour, zone: Zone::UTC, block: crate::core::block::Penalty::NONE };
        let mut state = QuotaState::default();
        let mut now = 1_000 * 3_600 * S;
        for (dt, q) in charges {
            now += dt * S / 10;
            check_within(&params, &state, Nanos::new(now), q)?;
            prop_assert_eq!(Kind::charge(&mut state, Nanos::new(now), &params, q), Ok(()));
            check_debt(&state, &params, Nanos::new(now), ask)?;
        }
    }
}

/// The only refusals: a counter past its maximum. Nothing is recorded.
#[test]
fn charges_past_a_counters_maximum_are_refused_and_record_nothing() {
    let now = Nanos::new(1_000 * S);
    // THROTTLE: 1 per 10 s; ten years ahead is 31,536,000 units.
    let params = ThrottleParams::new(0, 1, Nanos::new(10 * S)).unwrap();
    let max = MAX_DURATION.get() / (10 * S);
    let mut state = ThrottleState::default();
    assert!(state.charge(now, &params, max + 1).is_err());
    assert_eq!(state, ThrottleState::default());
    assert_eq!(state.charge(now, &params, max), Ok(()));
    let full = state.clone();
    assert!(state.charge(now, &params, 1).is_err());
    assert_eq!(state, full);
    // Time pays the debt back, and then a charge fits again.
    assert_eq!(
        state.charge(Nanos::new(now.get() + 10 * S), &params, 1),
        Ok(())
    );

    // SLIDE and SLICE: their u32 counters.
    let slide = SlideParams::new(5, Nanos::new(60 * S)).unwrap();
    let mut log = SlideState::default();
    assert_eq!(log.charge(now, &slide, MAX_UNITS - 1), Ok(()));
    let kept = log.clone();
    assert!(log.charge(now, &slide, 2).is_err());
    assert_eq!(log, kept);
    assert_eq!(log.charge(now, &slide, 1), Ok(()));
    assert_eq!(log.decide(now, &slide, 0).0.remaining, 0);
    let slice = SliceParams::new(5, Nanos::new(60 * S), 3).unwrap();
    let mut slices = SliceState::default();
    assert_eq!(slices.charge(now, &slice, MAX_UNITS), Ok(()));
    let kept = slices.clone();
    assert!(slices.charge(now, &slice, 1).is_err());
    assert_eq!(slices, kept);

    // QUOTA: 10^18 used.
    let quota = QuotaParams {
        limit: 5,
        unit: CalendarUnit::Day,
        zone: Zone::UTC,
        block: crate::core::block::Penalty::NONE,
    };
    let mut used = QuotaState::default();
    assert_eq!(
        Kind::charge(&mut used, now, &quota, 999_999_999_999),
        Ok(())
    );
    for _ in 0..999_999 {
        assert_eq!(
            Kind::charge(&mut used, now, &quota, 1_000_000_000_000),
            Ok(())
        );
    }
    assert_eq!(Kind::charge(&mut used, now, &quota, 1), Ok(()));
    let kept = used.clone();
    assert!(Kind::charge(&mut used, now, &quota, 1).is_err());
    assert_eq!(used, kept);
    const { assert!(MAX_USED == 1_000_000_000_000_000_000) };
    // The next day, the debt is gone.
    let tomorrow = Nanos::new(now.get() + 86_400 * S);
    assert_eq!(Kind::charge(&mut used, tomorrow, &quota, 1), Ok(()));
    assert_eq!(used.decide(tomorrow, &quota, 0).0.remaining, 4);
}

/// A charged state survives its encoding: saved debts are read back.
#[test]
fn charged_states_encode_and_decode() {
    let now = Nanos::new(1_000 * S);
    let mut log = SlideState::default();
    let slide = SlideParams::new(3, Nanos::new(60 * S)).unwrap();
    for q in [1, 2, 1_000_000_000, 7] {
        log.charge(now, &slide, q).unwrap();
    }
    assert_eq!(SlideState::decode(&log.encode()), Ok(log.clone()));
    assert!(log.entries() <= 3);
    let mut quota = QuotaState::default();
    let params = QuotaParams {
        limit: 5,
        unit: CalendarUnit::Month,
        zone: Zone::UTC,
        block: crate::core::block::Penalty::NONE,
    };
    Kind::charge(&mut quota, now, &params, MAX_USED).unwrap();
    assert_eq!(QuotaState::decode(&quota.encode()), Ok(quota));
}
