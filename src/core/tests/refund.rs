//! Refund's promises, for every algorithm: taking `a` units and giving back
//! `b` leaves what taking `a - b` would have left (SLIDE, SLICE: when no
//! time passes; THROTTLE: exactly, in its TAT); a THROTTLE TAT never moves
//! before now; remaining never exceeds the limit; and a state refunded of
//! everything is equivalent to a missing key.

use proptest::prelude::*;

use crate::core::slice::{SliceParams, SliceState};
use crate::core::slide::{SlideParams, SlideState};
use crate::core::throttle::{ThrottleParams, ThrottleState};
use crate::core::{Decision, Kind, Nanos, TimeUnit};

const S: u64 = 1_000_000_000;

/// Takes `quantity` units one request at a time (each allowed or not).
fn take<L: Kind>(state: &mut L, now: Nanos, params: &L::Params, quantity: u64) {
    for _ in 0..quantity {
        let (_, update) = state.decide(now, params, 1);
        if let Some(update) = update {
            state.apply(update);
        }
    }
}

fn peek<L: Kind>(state: &L, now: Nanos, params: &L::Params) -> Decision {
    state.decide(now, params, 0).0
}

/// Takes `a` at `now`, refunds `b` at `now`; compares with taking `a - b`.
fn check_take_refund<L: Kind + std::fmt::Debug>(
    params: &L::Params,
    history: &[(u64, u64)],
    now: u64,
    a: u64,
    b: u64,
) -> Result<(), TestCaseError> {
    // The same history before, on both states.
    let mut one = L::default();
    for &(at, q) in history {
        take(&mut one, Nanos::new(at), params, q);
    }
    let mut two = one.clone();
    let now = Nanos::new(now);
    let room = peek(&one, now, params).remaining;
    take(&mut one, now, params, a);
    one.refund(now, params, b);
    take(&mut two, now, params, a.saturating_sub(b));
    let (d1, d2) = (peek(&one, now, params), peek(&two, now, params));
    // `one` may hold fewer units than `two` when some of the a units were
    // refused (then a refund gives back older units as well); never more.
    prop_assert!(d1.remaining >= d2.remaining, "{d1:?} vs {d2:?}");
    prop_assert!(d1.remaining <= d1.limit);
    if a <= room && b <= a {
        // None of the `a` units was refused and only they go back: equal.
        prop_assert_eq!(
            d1.reply(now, TimeUnit::Millis),
            d2.reply(now, TimeUnit::Millis)
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn slide_take_then_refund(
        limit in 1u64..50,
        window in 1u64..1_000,
        history in proptest::collection::vec((0u64..500, 0u64..5), 0..6),
        a in 0u64..60,
        b in 0u64..80,
    ) {
        let params = SlideParams::new(limit, Nanos::new(window * S / 10)).unwrap();
        let mut history = history;
        history.sort();
        let history: Vec<(u64, u64)> = history.into_iter().map(|(t, q)| (1_000 * S + t * S / 10, q)).collect();
        check_take_refund::<SlideState>(&params, &history, 1_060 * S, a, b)?;
    }

    /// With PRECISION the units taken may join an older entry and move it
    /// later, which a refund does not undo: a refund gives back exactly
    /// the units (remaining as if `a - b` were taken), while the entry
    /// keeps its new leave time (never earlier: nothing leaves early).
    #[test]
    fn slide_with_precision_take_then_refund(
        limit in 1u64..50,
        window in 1u64..1_000,
        d in 0u64..=100,
        history in proptest::collection::vec((0u64..500, 0u64..5), 0..6),
        a in 0u64..60,
        b in 0u64..80,
    ) {
        let window = Nanos::new(window * S / 10);
        let d = Nanos::new((window.get() / 1_000_000 * d / 100) * 1_000_000);
        let params = SlideParams::new(limit, window).unwrap().with_precision(d).unwrap();
        let mut history = history;
        history.sort();
        let mut one = SlideState::default();
        for (t, q) in history {
            take(&mut one, Nanos::new(1_000 * S + t * S / 10), &params, q);
        }
        let mut two = one.clone();
        let now = Nanos::new(1_060 * S);
        let room = peek(&one, now, &params).remaining;
        take(&mut one, now, &params, a);
        one.refund(now, &params, b);
        take(&mut two, now, &params, a.saturating_sub(b));
        let (d1, d2) = (peek(&one, now, &params), peek(&two, now, &params));
        prop_assert!(d1.remaining >= d2.remaining, "{d1:?} vs {d2:?}");
        prop_assert!(d1.remaining <= d1.limit);
        if a <= room && b <= a {
            prop_assert_eq!(d1.remaining, d2.remaining);
        }
    }

    #[test]
    fn slice_take_then_refund(
        limit in 1u64..50,
        window in 1u64..1_000,
        slices in 1u64..20,
        history in proptest::collection::vec((0u64..500, 0u64..5), 0..6),
        a in 0u64..60,
        b in 0u64..80,
    ) {
        let params = SliceParams::new(limit, Nanos::new(window * S / 10), slices).unwrap();
        let mut history = history;
        history.sort();
        let history: Vec<(u64, u64)> = history.into_iter().map(|(t, q)| (1_000 * S + t * S / 10, q)).collect();
        check_take_refund::<SliceState>(&params, &history, 1_060 * S, a, b)?;
    }

    #[test]
    fn throttle_take_then_refund(
        burst in 0u64..30,
        count in 1u64..100,
        period in 1u64..100,
        history in proptest::collection::vec((0u64..500, 0u64..5), 0..6),
        a in 0u64..40,
        b in 0u64..50,
    ) {
        let params = ThrottleParams::new(burst, count, Nanos::new(period * S)).unwrap();
        let mut history = history;
        history.sort();
        let history: Vec<(u64, u64)> = history.into_iter().map(|(t, q)| (1_000 * S + t * S / 10, q)).collect();
        check_take_refund::<ThrottleState>(&params, &history, 1_060 * S, a, b)?;
    }

    #[test]
    fn throttle_tat_never_moves_before_now(
        count in 1u64..1_000,
        taken in 1u64..20,
        later in 0u64..100,
        b in 0u64..1_000,
    ) {
        let params = ThrottleParams::new(19, count, Nanos::new(S)).unwrap();
        let mut tat = ThrottleState::default();
        let start = Nanos::new(1_000 * S);
        take(&mut tat, start, &params, taken);
        let now = Nanos::new(1_000 * S + later * S / 50);
        let before = peek(&tat, now, &params);
        tat.refund(now, &params, b);
        let after = peek(&tat, now, &params);
        prop_assert!(after.reset_at >= now);
        prop_assert!(after.reset_at <= before.reset_at);
        prop_assert!(after.remaining <= after.limit);
        prop_assert!(after.remaining >= before.remaining);
    }
}

#[test]
fn refunding_everything_leaves_the_equivalent_of_a_missing_key() {
    let now = Nanos::new(1_000 * S);
    let slide = SlideParams::new(5, Nanos::new(60 * S)).unwrap();
    let mut log = SlideState::default();
    take(&mut log, now, &slide, 3);
    log.refund(now, &slide, 10);
    assert_eq!(log, SlideState::default());

    let slice = SliceParams::new(5, Nanos::new(60 * S), 6).unwrap();
    let mut window = SliceState::default();
    take(&mut window, now, &slice, 3);
    take(&mut window, Nanos::new(1_025 * S), &slice, 1);
    window.refund(Nanos::new(1_025 * S), &slice, 4);
    assert_eq!(window, SliceState::default());

    let throttle = ThrottleParams::new(4, 1, Nanos::new(S)).unwrap();
    let mut tat = ThrottleState::default();
    take(&mut tat, now, &throttle, 3);
    tat.refund(now, &throttle, 3);
    assert_eq!(peek(&tat, now, &throttle).reset_at, now);
}

#[test]
fn slice_refund_takes_the_newest_slices_first_and_moves_the_head_back() {
    // 10 s slices: 2 units in slice 100, 3 in slice 102.
    let p = SliceParams::new(10, Nanos::new(60 * S), 6).unwrap();
    let mut w = SliceState::default();
    take(&mut w, Nanos::new(1_000 * S), &p, 2);
    take(&mut w, Nanos::new(1_020 * S), &p, 3);
    let now = Nanos::new(1_025 * S);
    w.refund(now, &p, 4);
    // One unit left, in slice 100: counted until slice 107 starts (1,070 s).
    let d = peek(&w, now, &p);
    assert_eq!((d.remaining, d.reset_at), (9, Nanos::new(1_070 * S)));
    // The state still encodes and decodes (its head holds a unit).
    assert_eq!(SliceState::decode(&w.encode()), Ok(w.clone()));
}
