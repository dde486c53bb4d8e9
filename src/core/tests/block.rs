//! BLOCK's promises (docs/DESIGN.md#block), time a parameter: a refusal
//! by a limit with BLOCK blocks until `now + b`; a blocked key refuses
//! everything, records nothing, and answers a retry that is enough (the
//! later of the block's end and the limiter's own); refusals do not extend
//! it; a request that can never fit starts none; the limiter goes on from
//! what it recorded when the block ends; refunds and charges keep it; the
//! block end saturates; and the saved format of a blocked key carries the
//! block in a trailer that today's decoders (older builds') refuse, while
//! a key without a running block saves exactly today's bytes.

use proptest::prelude::*;

use crate::core::block::{self, TRAILER};
use crate::core::quota::{CalendarUnit, QuotaParams, QuotaState, Zone};
use crate::core::slice::{SliceParams, SliceState};
use crate::core::slide::{SlideParams, SlideState};
use crate::core::throttle::{ThrottleParams, ThrottleState};
use crate::core::{DecodeError, Kind, Nanos, Retry};

const S: u64 = 1_000_000_000;
const T0: u64 = 1_700_000_000 * S;

fn at(seconds: u64) -> Nanos {
    Nanos::new(T0 + seconds * S)
}

/// One unit a minute, BLOCK `b` seconds.
fn throttle(b: Option<u64>) -> ThrottleParams {
    ThrottleParams::new(0, 1, Nanos::new(60 * S))
        .unwrap()
        .with_block(b.map(|b| Nanos::new(b * S)))
}

/// Decides at `now` and records what the commands record: the update of
/// an allowed request, the block a refusal starts.
fn request<K: Kind>(state: &mut K, now: Nanos, params: &K::Params, quantity: u64) -> [i64; 5] {
    let decided = block::decide(state, now, params, quantity, b"");
    if let Some(update) = decided.update {
        state.apply(update);
    }
    if let Some(end) = decided.starts {
        state.set_blocked_until(end);
    }
    decided.decision.reply(now, crate::core::TimeUnit::Seconds)
}

#[test]
fn a_throttle_through_its_block() {
    let p = throttle(Some(600));
    let mut k = ThrottleState::default();
    // second, quantity => limited, limit, remaining, retry_after, reset_after
    #[rustfmt::skip]
    let table: &[(u64, u64, [i64; 5])] = &[
        (0,   1, [0, 1, 0, -1, 60]),
        // Refused at 10 s (own retry 50 s): blocked until 610 s.
        (10,  1, [1, 1, 0, 600, 600]),
        // Refusals during the block do not extend it.
        (300, 1, [1, 1, 0, 310, 310]),
        // Long after the limiter's own window: still blocked.
        (609, 1, [1, 1, 0, 1, 1]),
        // Never fits: -1, the block in reset_after.
        (609, 2, [1, 1, 0, -1, 1]),
        // A peek answers the block's end.
        (609, 0, [1, 1, 0, 1, 1]),
        // The block ends: the limiter goes on from its TAT (60 s).
        (610, 1, [0, 1, 0, -1, 60]),
    ];
    for &(second, quantity, expected) in table {
        assert_eq!(
            request(&mut k, at(second), &p, quantity),
            expected,
            "at {second} s, quantity {quantity}"
        );
    }
    // The block ended: the call at 610 s took the unit, and cleared it.
    assert_eq!(block::blocked_at(&k, at(610)), None);
}

#[test]
fn without_block_a_refusal_blocks_nothing() {
    let mut k = ThrottleState::default();
    request(&mut k, at(0), &throttle(None), 1);
    assert_eq!(
        request(&mut k, at(10), &throttle(None), 1),
        [1, 1, 0, 50, 50]
    );
    assert_eq!(k.blocked_until(), Nanos::ZERO);
    // A blocked key refuses calls without BLOCK too.
    request(&mut k, at(20), &throttle(Some(100)), 1);
    assert_eq!(
        request(&mut k, at(70), &throttle(None), 1),
        [1, 1, 0, 50, 50]
    );
}

#[test]
fn a_peek_and_a_never_fit_start_no_block() {
    let p = throttle(Some(600));
    let mut k = ThrottleState::default();
    request(&mut k, at(0), &p, 1);
    let d = block::decide(&k, at(10), &p, 0, b"");
    assert!(d.starts.is_none() && !d.decision.limited);
    let d = block::decide(&k, at(10), &p, 2, b"");
    assert_eq!((d.starts, d.decision.retry), (None, Retry::Never));
}

#[test]
fn the_block_end_saturates() {
    let p = ThrottleParams::new(0, 1, Nanos::new(60 * S))
        .unwrap()
        .with_block(Some(crate::core::MAX_DURATION));
    let mut k = ThrottleState::default();
    let late = Nanos::new(u64::MAX - 100 * S);
    request(&mut k, late, &p, 1);
    let d = block::decide(&k, late, &p, 1, b"");
    assert_eq!(d.starts, Some(Nanos::MAX));
    assert_eq!(d.decision.retry, Retry::At(Nanos::MAX));
    assert_eq!(d.decision.reset_at, Nanos::MAX);
    let [limited, _, _, retry, reset] = d.decision.reply(late, crate::core::TimeUnit::Millis);
    assert_eq!((limited, retry, reset), (1, 100_000, 100_000));
}

#[test]
fn refunds_and_charges_keep_the_block() {
    let p = throttle(Some(600));
    let mut k = ThrottleState::default();
    request(&mut k, at(0), &p, 1);
    request(&mut k, at(10), &p, 1);
    let end = k.blocked_until();
    block::refund(&mut k, at(20), &p, 1);
    assert_eq!(k.blocked_until(), end);
    assert_eq!(block::peek(&k, at(20), &p).retry, Retry::At(end));
    block::charge(&mut k, at(20), &p, 1).unwrap();
    assert_eq!(k.blocked_until(), end);
}

/// Each kind that takes BLOCK, filled at `now` and refused once, with a
/// one-hour block.
fn blocked_states() -> (ThrottleState, SlideState, SliceState, QuotaState) {
    let now = at(0);
    let hour = Some(Nanos::new(3_600 * S));
    let mut t = ThrottleState::default();
    let tp = ThrottleParams::new(1, 1, Nanos::new(60 * S))
        .unwrap()
        .with_block(hour);
    let mut l = SlideState::default();
    let lp = SlideParams::new(2, Nanos::new(60 * S))
        .unwrap()
        .with_block(hour);
    let mut s = SliceState::default();
    let sp = SliceParams::new(2, Nanos::new(60 * S), 6)
        .unwrap()
        .with_block(hour);
    let mut q = QuotaState::default();
    let qp = QuotaParams {
        limit: 2,
        unit: CalendarUnit::Day,
        zone: Zone::UTC,
        block: crate::core::block::Penalty::new(hour),
    };
    assert_eq!(request(&mut t, now, &tp, 2)[0], 0);
    assert_eq!(request(&mut t, now, &tp, 1), [1, 2, 0, 3600, 3600]);
    assert_eq!(request(&mut l, now, &lp, 2)[0], 0);
    assert_eq!(request(&mut l, now, &lp, 1), [1, 2, 0, 3600, 3600]);
    assert_eq!(request(&mut s, now, &sp, 2)[0], 0);
    assert_eq!(request(&mut s, now, &sp, 1), [1, 2, 0, 3600, 3600]);
    assert_eq!(request(&mut q, now, &qp, 2)[0], 0);
    let r = request(&mut q, now, &qp, 1);
    // A day's quota from 22:13:20 UTC: the period ends after the block,
    // and its end answers.
    assert_eq!(r, [1, 2, 0, 6400, 6400]);
    (t, l, s, q)
}

/// A blocked state saves today's bytes plus the trailer while blocked,
/// exactly today's bytes after; today's decoder (what older builds run)
/// refuses the blocked payload; `restore` reads both back.
fn check_format<K: Kind + PartialEq + std::fmt::Debug>(state: &K) {
    let end = state.blocked_until();
    assert!(end > at(0), "{state:?}");
    let plain = state.encode();
    let saved = state.persist(at(0));
    assert_eq!(saved.len(), plain.len() + TRAILER);
    assert_eq!(&saved[..plain.len()], &plain[..]);
    assert_eq!(
        &saved[plain.len()..plain.len() + 8],
        &end.get().to_le_bytes()
    );
    assert_eq!(saved.last(), Some(&0));
    assert!(
        K::decode(&saved).is_err(),
        "an older build reads a blocked key"
    );
    assert_eq!(K::restore(&saved).as_ref(), Ok(state));
    assert_eq!(K::decode_tagged(K::TAG, &saved).as_ref(), Ok(state));
    // Once the block has ended: today's bytes, byte for byte.
    assert_eq!(state.persist(end), plain);
    let back = K::restore(&plain).unwrap();
    assert_eq!(back.blocked_until(), Nanos::ZERO);
    // A trailer of a block ending at 0, or with another mark, is refused.
    let mut zero = plain.clone();
    zero.extend_from_slice(&[0; TRAILER]);
    assert!(K::restore(&zero).is_err());
    let mut marked = saved.clone();
    *marked.last_mut().unwrap() = 1;
    assert!(K::restore(&marked).is_err());
    // Every cut of the trailer is refused.
    for cut in plain.len() + 1..saved.len() {
        assert!(K::restore(&saved[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn blocked_keys_save_a_trailer_that_today_s_decoders_refuse() {
    let (t, l, s, q) = blocked_states();
    check_format(&t);
    check_format(&l);
    check_format(&s);
    check_format(&q);
}

#[test]
fn the_lease_kind_reads_no_trailer() {
    use crate::core::lease::LeaseState;
    let mut bytes = LeaseState::default().encode();
    bytes.extend_from_slice(&at(0).get().to_le_bytes());
    bytes.push(0);
    assert!(matches!(
        LeaseState::restore(&bytes),
        Err(DecodeError::Length | DecodeError::Invalid(_))
    ));
}

proptest! {
    /// The retry promise with a block: waiting `retry_after` is enough,
    /// whatever the traffic, for quantities that can fit; a blocked key
    /// records nothing.
    #[test]
    fn waiting_retry_after_is_enough(
        steps in proptest::collection::vec((0u64..200, 0u64..3, any::<bool>()), 1..40),
        b in 1u64..500,
    ) {
        let with = throttle(Some(b));
        let without = throttle(None);
        let mut k = ThrottleState::default();
        let mut now = at(0);
        for (dt, quantity, blocking) in steps {
            now = now.saturating_add(Nanos::new(dt * S));
            let p = if blocking { &with } else { &without };
            let before = k.clone();
            let d = block::decide(&k, now, p, quantity, b"");
            if d.blocked {
                prop_assert!(d.update.is_none() && d.starts.is_none());
                prop_assert!(d.decision.limited);
            }
            request(&mut k, now, p, quantity);
            if let Retry::At(t) = d.decision.retry {
                let mut later = before;
                if let Some(end) = d.starts {
                    later.set_blocked_until(end);
                }
                let then = block::decide(&later, t, p, quantity, b"").decision;
                prop_assert!(!then.limited, "{d:?} then {then:?}");
                if let Some(end) = block::blocked_at(&later, now) {
                    prop_assert!(t >= end);
                    prop_assert!(d.decision.reset_at >= end);
                }
            }
        }
    }
}
