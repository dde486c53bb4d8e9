//! MAXWAIT: a request granted for its turn (`Kind::turn`, `Kind::book`,
//! `core::wait`). A table of grants on one GCRA key, then the promise the
//! spec makes, over many calls with time a parameter: the turns handed out
//! never exceed the limit's rate and burst (in any span of `d` ns from one
//! turn to another, at most `capacity + d × count / period` units), on one
//! limit and on each of several limits waited for together.

use proptest::prelude::*;

use super::throttle::stored;
use crate::core::throttle::{ThrottleParams, ThrottleState};
use crate::core::wait::{booking, call_turn};
use crate::core::{Kind, Nanos, Retry, TimeUnit};

const S: u64 = 1_000_000_000;

fn params(max_burst: u64, count: u64, period_s: u64) -> ThrottleParams {
    ThrottleParams::new(max_burst, count, Nanos::new(period_s * S)).unwrap()
}

/// One RL.THROTTLE call with MAXWAIT on `state`, as the command decides it:
/// booked at its turn when that is within `max_wait`, else decided plainly.
fn call(
    state: &mut ThrottleState,
    now: u64,
    p: &ThrottleParams,
    quantity: u64,
    max_wait: u64,
) -> [i64; 5] {
    let now = Nanos::new(now);
    let own = state.turn(now, p, quantity);
    let (decision, update) = match booking(None, own, now, Nanos::new(max_wait)) {
        Some(at) => state.book(now, at, p, quantity),
        None => state.decide(now, p, quantity),
    };
    if let Some(update) = update {
        state.apply(update);
    }
    decision.reply(now, TimeUnit::Millis)
}

#[test]
fn grants_for_a_turn() {
    // capacity 2, T = 6 s, τ = 12 s; times in s, replies in ms.
    let p = params(1, 10, 60);
    let mut key = ThrottleState::default();
    // now, quantity, max_wait => reply
    #[rustfmt::skip]
    let cases: &[(u64, u64, u64, [i64; 5])] = &[
        // At once: its wait is 0, remaining and reset as allowed.
        (0, 1, 0, [0, 2, 1, 0, 6_000]),
        (0, 1, 10, [0, 2, 0, 0, 12_000]),
        // Full: a wait of 6 s is beyond 5 s, refused, nothing recorded ...
        (0, 1, 5, [1, 2, 0, 6_000, 12_000]),
        // ... and within 6 s: granted for its turn at 6 s, the TAT 18 s.
        (0, 1, 6, [0, 2, 0, 6_000, 18_000]),
        // The next turn is at 12 s; at 1 s that is a wait of 11 s.
        (1, 1, 11, [0, 2, 0, 11_000, 23_000]),
        // Two units wait for a turn at 24 s, within 30 s: the TAT 36 s.
        (2, 2, 30, [0, 2, 0, 22_000, 34_000]),
        // Three never fit: refused whatever the wait.
        (2, 3, 300, [1, 2, 0, -1, 34_000]),
        // A peek with MAXWAIT: nothing booked, the wait it would have.
        (30, 0, 0, [0, 2, 1, 0, 6_000]),
        (40, 1, 0, [0, 2, 1, 0, 6_000]),
    ];
    for (i, &(now, quantity, wait, reply)) in cases.iter().enumerate() {
        assert_eq!(
            call(&mut key, now * S, &p, quantity, wait * S),
            reply,
            "case {i}"
        );
    }
}

#[test]
fn a_grant_moves_the_tat_by_the_increment() {
    // 1 per 3 s (T not a whole number of ns in the other unit), capacity 1.
    let p = params(0, 1, 3);
    let mut key = ThrottleState::default();
    call(&mut key, 0, &p, 1, 0);
    let before = key.clone();
    let (d, update) = key.book(Nanos::new(S), Nanos::new(3 * S), &p, 1);
    assert_eq!(d.retry, Retry::Turn(Nanos::new(3 * S)));
    assert_eq!(
        update.map(stored),
        Some(ThrottleState::from_nanos(Nanos::new(6 * S)))
    );
    assert_eq!(before, key, "book changes nothing itself");
    // Booked at a later turn (another limit's), from that instant.
    let (d, update) = key.book(Nanos::new(S), Nanos::new(10 * S), &p, 1);
    assert_eq!(d.retry, Retry::Turn(Nanos::new(3 * S)));
    assert_eq!(
        update.map(stored),
        Some(ThrottleState::from_nanos(Nanos::new(13 * S)))
    );
    assert_eq!(d.reply(Nanos::new(S), TimeUnit::Seconds), [0, 1, 0, 2, 12]);
}

/// A limit's own turn, and whether it is enforced.
type Turn = (Option<Nanos>, bool);

#[test]
fn the_call_goes_at_the_latest_enforced_turn() {
    let t = |s: u64| Some(Nanos::new(s * S));
    let (now, wait) = (Nanos::new(S), Nanos::new(5 * S));
    // turns (enforced?) => the call's turn
    #[rustfmt::skip]
    let cases: &[(&[Turn], Option<Nanos>)] = &[
        (&[(t(1), true), (t(4), true)], t(4)),
        (&[(t(1), true), (t(6), true)], t(6)),
        (&[(t(1), true), (t(7), true)], None),
        (&[(t(2), true), (None, true)], None),
        // A shadow limit never sets the call's turn, nor refuses it.
        (&[(t(2), true), (t(9), false), (None, false)], t(2)),
    ];
    for (i, (turns, expected)) in cases.iter().enumerate() {
        assert_eq!(
            call_turn(turns.iter().copied(), now, wait),
            *expected,
            "case {i}"
        );
    }
    // call, own => booked at
    assert_eq!(booking(t(4), t(2), now, wait), t(4));
    assert_eq!(booking(t(4), t(5), now, wait), None);
    assert_eq!(booking(None, t(5), now, wait), t(5));
    assert_eq!(booking(None, t(7), now, wait), None);
    assert_eq!(booking(t(4), None, now, wait), None);
}

/// The promise over one limit's turns, `(instant, units)` in the order
/// they were handed out: at most `capacity` units at one instant, and from
/// any turn to a later one `d` ns on, at most `capacity + d × count /
/// period` units.
fn assert_within_rate(turns: &[(u64, u64)], capacity: u64, count: u64, period: u64) {
    let mut sorted = turns.to_vec();
    sorted.sort_by_key(|&(t, _)| t);
    for i in 0..sorted.len() {
        let mut units = 0u128;
        for j in i..sorted.len() {
            units += u128::from(sorted[j].1);
            let span = u128::from(sorted[j].0 - sorted[i].0);
            assert!(
                units * u128::from(period)
                    <= u128::from(capacity) * u128::from(period) + span * u128::from(count),
                "{units} units in {span} ns: {sorted:?}"
            );
        }
    }
}

/// One call of a run: how long after the previous one, its units, its
/// MAXWAIT (all in units of a tenth of the emission interval).
fn calls() -> impl Strategy<Value = Vec<(u64, u64, u64)>> {
    prop::collection::vec((0u64..30, 1u64..4, 0u64..100), 1..200)
}

proptest! {
    /// One limit: every grant's wait is within MAXWAIT, a refusal records
    /// nothing, and the granted turns stay within the rate and the burst.
    #[test]
    fn one_limits_turns_stay_within_rate_and_burst(
        max_burst in 0u64..4,
        count in 1u64..7,
        period_s in 1u64..4,
        run in calls(),
    ) {
        let p = params(max_burst, count, period_s);
        let tenth = period_s * S / count / 10;
        let mut key = ThrottleState::default();
        let mut now = 1_000 * S;
        let mut turns = Vec::new();
        for (gap, quantity, wait) in run {
            now += gap * tenth;
            let max_wait = Nanos::new(wait * tenth);
            let own = key.turn(Nanos::new(now), &p, quantity);
            let before = key.clone();
            let reply = call(&mut key, now, &p, quantity, max_wait.get());
            match own {
                Some(turn) if turn.get() - now <= max_wait.get() => {
                    prop_assert_eq!(reply[0], 0);
                    prop_assert!(reply[3] >= 0);
                    // The wait is within MAXWAIT, rounded up to the ms.
                    prop_assert!(reply[3] as u64 * 1_000_000 >= turn.get() - now);
                    turns.push((turn.get(), quantity));
                }
                _ => {
                    prop_assert_eq!(reply[0], 1);
                    prop_assert_eq!(&key, &before);
                }
            }
        }
        assert_within_rate(&turns, max_burst + 1, count, period_s * S);
    }

    /// Several limits waited for together (two enforced, one SHADOW): the
    /// call's turn is within MAXWAIT; each limit's turns, the call's
    /// turns where it recorded, stay within its own rate and burst.
    #[test]
    fn each_limits_turns_stay_within_its_rate_and_burst(
        limits in prop::collection::vec((0u64..3, 1u64..5, 1u64..4), 3),
        run in calls(),
    ) {
        let ps: Vec<ThrottleParams> =
            limits.iter().map(|&(b, c, s)| params(b, c, s)).collect();
        let tenth = S / 10;
        let mut keys: [ThrottleState; 3] = Default::default();
        let mut turns: [Vec<(u64, u64)>; 3] = Default::default();
        let enforced = [true, true, false];
        let mut now = Nanos::new(1_000 * S);
        for (gap, quantity, wait) in run {
            now = now.saturating_add(Nanos::new(gap * tenth));
            let max_wait = Nanos::new(wait * tenth);
            let own: Vec<Option<Nanos>> =
                (0..3).map(|i| keys[i].turn(now, &ps[i], quantity)).collect();
            let call = call_turn(own.iter().copied().zip(enforced), now, max_wait);
            if let Some(at) = call {
                prop_assert!(at.get() - now.get() <= max_wait.get());
            }
            for i in 0..3 {
                let booked = booking(call, own[i], now, max_wait);
                let (decision, update) = match booked {
                    Some(at) => keys[i].book(now, at, &ps[i], quantity),
                    None => keys[i].decide(now, &ps[i], quantity),
                };
                if let (Some(at), Some(update)) = (call, update) {
                    prop_assert!(!decision.limited);
                    keys[i].apply(update);
                    turns[i].push((at.get(), quantity));
                }
            }
        }
        for i in 0..3 {
            let (b, c, s) = limits[i];
            assert_within_rate(&turns[i], b + 1, c, s * S);
        }
    }
}

#[test]
fn extremes_neither_panic_nor_wrap() {
    use crate::core::throttle::MAX_TOLERANCE;
    let max_wait = Nanos::new(crate::core::MAX_DURATION_SECONDS * S);
    let widest = ThrottleParams::new(9, 1, Nanos::new(MAX_TOLERANCE.get() / 10)).unwrap();
    let finest = ThrottleParams::new(0, u64::from(u32::MAX), Nanos::new(1)).unwrap();
    for p in [widest, finest, params(0, 1, 1)] {
        for now in [
            Nanos::ZERO,
            Nanos::new(u64::MAX / 2),
            Nanos::new(u64::MAX - 1),
        ] {
            for tat in [Nanos::ZERO, now, Nanos::new(u64::MAX)] {
                let state = ThrottleState::from_nanos(tat);
                for quantity in [0, 1, 10, u64::MAX] {
                    let own = state.turn(now, &p, quantity);
                    assert!(own.is_none_or(|t| t >= now));
                    for at in [own.unwrap_or(now), now.saturating_add(max_wait)] {
                        let (d, update) = state.book(now, at, &p, quantity);
                        assert!(d.remaining <= d.limit);
                        if let Some(update) = update {
                            let mut after = state.clone();
                            after.apply(update);
                        }
                        let _ = d.reply(now, TimeUnit::Millis);
                    }
                }
            }
        }
    }
}
