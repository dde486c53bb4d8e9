//! RL.LEASE: table-driven cases of docs/DESIGN.md#lease,
//! a property test against a naive model, the `retry_after` promise, the
//! saved format (round trip, canonical bytes, a pinned fixture, hostile
//! payloads) and the memory a lease takes.
//!
//! The model, `Model`, keeps the leases as a `BTreeMap` from id to
//! `(weight, expiry)` and answers every question by brute force from
//! the definitions of docs/DESIGN.md#lease: `held(t)` sums the weights of the leases with
//! `t < expiry`; the others are the leases but the requester's; the
//! instant to retry at is the first expiry of another lease after which
//! the request fits. It shares one rule with the code that the definitions leave
//! open: expired leases are forgotten when a grant or a release changes
//! the key (which matters to the leases kept, to the encoding and to a
//! clock that goes back: a forgotten lease no longer counts).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{choice, marks_of, move_clock, pick, quantity, spec_reply, start_instant, Choice};
use crate::core::lease::{LeaseParams, LeaseState, MAX_HOLDERS, MAX_ID_LEN, MAX_LIMIT};
use crate::core::{Decision, DecodeError, Detail, Nanos, Retry, TimeUnit, MAX_DURATION};

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;
/// 2023-11-14T22:13:20Z, in ns.
const NOW: u64 = 1_700_000_000 * S;

fn params(limit: u64, ttl: u64) -> LeaseParams {
    LeaseParams::new(limit, Nanos::new(ttl)).expect("valid parameters")
}

/// Decides a request and records it when granted.
fn take(state: &mut LeaseState, now: u64, p: &LeaseParams, id: &[u8], quantity: u64) -> Decision {
    let (decision, update) = state.decide(Nanos::new(now), p, id, quantity);
    if let Some(update) = update {
        state.apply(update);
    }
    decision
}

/// The leases as `(id, weight, expiry)`, in the canonical order.
fn leases_of(state: &LeaseState) -> Vec<(Vec<u8>, u64, u64)> {
    state
        .iter()
        .map(|(id, weight, expiry)| (id.to_vec(), weight, expiry.get()))
        .collect()
}

/// RL.INSPECT's `held`.
fn held_of(state: &LeaseState, now: u64) -> u64 {
    match state.inspect(Nanos::new(now)).first() {
        Some(("held", Detail::Integer(held))) => u64::try_from(*held).expect("not negative"),
        other => panic!("held first, not {other:?}"),
    }
}

// ---------------------------------------------------------------------
// Table-driven cases.

#[derive(Clone, Copy, Debug)]
enum Row {
    /// RL.LEASE: decide, and record when granted.
    Lease(&'static str, u64),
    /// RL.PEEK: decide only ("" = without ID).
    Peek(&'static str, u64),
    /// RL.RELEASE.
    Release(&'static str),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// limited, limit, remaining, retry_after ms, reset_after ms
    Reply([i64; 5]),
    /// RL.RELEASE's answer
    Released(bool),
}

use Expect::{Released, Reply};
use Row::{Lease, Peek, Release};

/// Runs rows `(at ms, limit, ttl ms, call, expected)` on one key, in order.
fn run_table(rows: &[(u64, u64, u64, Row, Expect)]) {
    let mut state = LeaseState::default();
    for (i, &(at, limit, ttl, call, expected)) in rows.iter().enumerate() {
        let now = NOW + at * MS;
        let p = params(limit, ttl * MS);
        let reply = |d: Decision| Reply(d.reply(Nanos::new(now), TimeUnit::Millis));
        let got = match call {
            Lease(id, q) => reply(take(&mut state, now, &p, id.as_bytes(), q)),
            Peek(id, q) => reply(state.decide(Nanos::new(now), &p, id.as_bytes(), q).0),
            Release(id) => Released(state.release(Nanos::new(now), id.as_bytes())),
        };
        state.check();
        assert_eq!(got, expected, "row {i}: {call:?} at {at} ms");
    }
}

#[test]
fn the_worked_example() {
    // at ms | limit | ttl ms | call | expected (limited, limit, remaining,
    // retry_after ms, reset_after ms) or RL.RELEASE's answer
    #[rustfmt::skip]
    run_table(&[
        (0,     3, 10_000, Lease("a", 2),   Reply([0, 3, 1, -1, 10_000])),
        // 2 + 2 > 3: a's two units free up at 10 s.
        (4_000, 3, 10_000, Lease("b", 2),   Reply([1, 3, 1, 6_000, 6_000])),
        // a renews with 1: the others hold nothing.
        (5_000, 3, 10_000, Lease("a", 1),   Reply([0, 3, 2, -1, 10_000])),
        (6_000, 3, 10_000, Lease("b", 2),   Reply([0, 3, 0, -1, 10_000])),
        (7_000, 3, 10_000, Release("a"),    Released(true)),
        (7_000, 3, 10_000, Release("a"),    Released(false)),
        // A peek answers as the request would: remaining after it.
        (7_000, 3, 10_000, Peek("", 1),     Reply([0, 3, 0, -1, 10_000])),
        (7_000, 3, 10_000, Peek("", 0),     Reply([0, 3, 1, -1, 9_000])),
        (7_000, 3, 10_000, Peek("b", 0),    Reply([0, 3, 1, -1, 9_000])),
        // b expires at 16 s, exactly: counted a millisecond before.
        (15_999, 3, 10_000, Peek("", 3),    Reply([1, 3, 1, 1, 1])),
        (16_000, 3, 10_000, Peek("", 3),    Reply([0, 3, 0, -1, 10_000])),
        (16_000, 3, 10_000, Release("b"),   Released(false)),
    ]);
}

#[test]
fn renewals_refusals_and_changed_parameters() {
    // at ms | limit | ttl ms | call | expected (limited, limit, remaining,
    // retry_after ms, reset_after ms) or RL.RELEASE's answer
    #[rustfmt::skip]
    run_table(&[
        (0,      3, 10_000, Lease("a", 2),   Reply([0, 3, 1, -1, 10_000])),
        (1_000,  3, 10_000, Lease("b", 1),   Reply([0, 3, 0, -1, 10_000])),
        // A refused renewal: the others (b) hold 1, 1 + 3 > 3; b frees at 11 s.
        (2_000,  3, 10_000, Lease("a", 3),   Reply([1, 3, 0, 9_000, 9_000])),
        // ... and a's lease is as it was: 2 units until 10 s.
        (9_999,  3, 10_000, Peek("c", 1),    Reply([1, 3, 0, 1, 1_001])),
        (10_000, 3, 10_000, Lease("c", 1),   Reply([0, 3, 1, -1, 10_000])),
        (10_000, 3, 10_000, Release("a"),    Released(false)),
        // More than the limit never fits.
        (10_000, 3, 10_000, Lease("a", 4),   Reply([1, 3, 1, -1, 10_000])),
        // b renews for a shorter ttl: its expiry moves earlier (11.5 s).
        (10_500, 3, 1_000,  Lease("b", 1),   Reply([0, 3, 1, -1, 9_500])),
        // The limit lowered under what is held: even a peek is limited,
        // until b's unit frees at 11.5 s.
        (10_500, 1, 10_000, Peek("", 0),     Reply([1, 1, 0, 1_000, 9_500])),
        (10_500, 1, 10_000, Lease("c", 1),   Reply([1, 1, 0, 1_000, 9_500])),
        (11_500, 1, 10_000, Lease("c", 1),   Reply([0, 1, 0, -1, 10_000])),
        (11_500, 1, 10_000, Lease("d", 1),   Reply([1, 1, 0, 10_000, 10_000])),
    ]);
}

#[test]
fn the_own_lease_frees_nothing_for_itself() {
    // at ms | limit | ttl ms | call | expected (limited, limit, remaining,
    // retry_after ms, reset_after ms) or RL.RELEASE's answer
    #[rustfmt::skip]
    run_table(&[
        (0,     2, 10_000, Lease("a", 1),   Reply([0, 2, 1, -1, 10_000])),
        (1_000, 2, 10_000, Lease("b", 1),   Reply([0, 2, 0, -1, 10_000])),
        // a expires first (10 s), but it is a's own: b must go (11 s).
        (2_000, 2, 10_000, Lease("a", 2),   Reply([1, 2, 0, 9_000, 9_000])),
        // Anyone else waits for the first to expire.
        (2_000, 2, 10_000, Lease("c", 1),   Reply([1, 2, 0, 8_000, 9_000])),
        (2_000, 2, 10_000, Lease("c", 2),   Reply([1, 2, 0, 9_000, 9_000])),
        (11_000, 2, 10_000, Lease("a", 2),  Reply([0, 2, 0, -1, 10_000])),
    ]);
}

#[test]
fn a_lease_counts_during_its_ttl_to_the_nanosecond() {
    let p = params(1, 1_000);
    let mut state = LeaseState::default();
    assert!(!take(&mut state, 5_000, &p, b"a", 1).limited);
    let at = |t: u64| state.decide(Nanos::new(t), &p, b"b", 1).0;
    assert_eq!(at(5_999).retry, Retry::At(Nanos::new(6_000)));
    assert!(at(5_999).limited);
    assert!(!at(6_000).limited);
    assert!(!state.is_empty_at(Nanos::new(5_999)));
    assert!(state.is_empty_at(Nanos::new(6_000)));
}

#[test]
fn ids_are_any_bytes_up_to_128() {
    let p = params(10, S);
    let mut state = LeaseState::default();
    let longest = vec![0xff; MAX_ID_LEN];
    for id in [&b"\0"[..], b"\0\0", b"a\xffb", &longest] {
        let (d, update) = state.decide(Nanos::new(NOW), &p, id, 1);
        assert!(!d.limited && update.is_some(), "{id:?}");
        state.apply(update.expect("granted"));
    }
    state.check();
    assert_eq!(state.iter().count(), 4);
    // An empty id and one over 128 bytes are decided as a new lease, and
    // never recorded.
    let too_long = vec![0xff; MAX_ID_LEN + 1];
    for id in [&b""[..], &too_long] {
        let (d, update) = state.decide(Nanos::new(NOW), &p, id, 1);
        assert_eq!((d.limited, d.remaining, update), (false, 5, None));
        assert!(!state.clone().release(Nanos::new(NOW), id));
    }
    // The longest id renews its own lease.
    let (d, _) = state.decide(Nanos::new(NOW), &p, &longest, 7);
    assert_eq!((d.limited, d.remaining), (false, 0));
}

#[test]
fn parameters() {
    let ttl = Nanos::new(S);
    assert!(LeaseParams::new(1, ttl).is_some());
    assert!(LeaseParams::new(MAX_LIMIT, MAX_DURATION).is_some());
    assert!(LeaseParams::new(0, ttl).is_none());
    assert!(LeaseParams::new(MAX_LIMIT + 1, ttl).is_none());
    assert!(LeaseParams::new(1, Nanos::ZERO).is_none());
    assert!(LeaseParams::new(1, Nanos::new(MAX_DURATION.get() + 1)).is_none());
}

/// Parameters the glue would refuse never panic, and never let the key
/// hold more than `MAX_LIMIT` or a lease that expires at the epoch.
#[test]
fn unvalidated_parameters_never_panic() {
    let mut state = LeaseState::default();
    for (limit, ttl) in [
        (0, 0),
        (u64::MAX, 0),
        (u64::MAX, u64::MAX),
        (MAX_LIMIT + 1, 1),
    ] {
        let p = LeaseParams {
            limit,
            ttl: Nanos::new(ttl),
        };
        for q in [0, 1, MAX_LIMIT, MAX_LIMIT + 1, u64::MAX] {
            for now in [0, NOW, u64::MAX] {
                let d = take(&mut state, now, &p, b"x", q);
                assert!(d.remaining <= d.limit && d.limit <= MAX_LIMIT);
                take(&mut state, 0, &p, format!("{q}").as_bytes(), q);
            }
        }
        state.check();
        assert!(state.iter().all(|(_, _, expiry)| expiry.get() >= 1));
        assert_eq!(LeaseState::decode(&state.encode()), Ok(state.clone()));
    }
}

/// At the end of time `now + ttl` saturates: a lease granted at
/// `Nanos::MAX` expires at once, and nothing panics.
#[test]
fn the_end_of_time() {
    let p = params(2, MAX_DURATION.get());
    let mut state = LeaseState::default();
    let late = u64::MAX - S;
    let d = take(&mut state, late, &p, b"a", 1);
    assert_eq!((d.limited, d.reset_at), (false, Nanos::MAX));
    let d = take(&mut state, u64::MAX, &p, b"b", 2);
    assert_eq!((d.limited, d.remaining, d.reset_at), (false, 0, Nanos::MAX));
    assert!(state.is_empty_at(Nanos::MAX));
    // a, expired at the second grant's `now`, was dropped then.
    assert_eq!(held_of(&state, late), 2);
    assert_eq!(LeaseState::decode(&state.encode()), Ok(state.clone()));
    // b has expired too: releasing it releases nothing, and changes
    // nothing (the expired lease stays until a change drops it).
    let before = state.clone();
    assert!(!state.release(Nanos::MAX, b"b"));
    assert_eq!(state, before);
    assert_eq!(state.iter().count(), 1);
}

#[test]
fn inspect_lists_the_soonest_to_expire_first() {
    let mut state = LeaseState::default();
    take(&mut state, NOW, &params(10, 10 * S), b"late", 3);
    take(&mut state, NOW, &params(10, S), b"gone", 1);
    take(&mut state, NOW, &params(10, 5 * S), b"b", 2);
    take(&mut state, NOW, &params(10, 5 * S), b"a", 1);
    // 1.5 s later "gone" has expired, still kept, not counted.
    let now = Nanos::new(NOW + 1_500 * MS + 1);
    let holder = |id: &[u8], weight, ms| {
        Detail::List(vec![
            Detail::Bytes(id.to_vec()),
            Detail::Integer(weight),
            Detail::Integer(ms),
        ])
    };
    assert_eq!(
        state.inspect(now),
        vec![
            ("held", Detail::Integer(6)),
            ("leases", Detail::Integer(3)),
            (
                "holders",
                Detail::List(vec![
                    // ms left rounded up; at one expiry, by id.
                    holder(b"a", 1, 3_500),
                    holder(b"b", 2, 3_500),
                    holder(b"late", 3, 8_500),
                ])
            ),
        ]
    );
    assert_eq!(state.iter().count(), 4);
    assert_eq!(
        LeaseState::default().inspect(now),
        vec![
            ("held", Detail::Integer(0)),
            ("leases", Detail::Integer(0)),
            ("holders", Detail::List(vec![])),
        ]
    );
}

#[test]
fn inspect_lists_at_most_100_holders() {
    // Lease i expires at NOW + 100 + i ns; at NOW + 119 the first 20 have.
    let mut state = LeaseState::default();
    for i in 0..250u64 {
        let p = params(MAX_LIMIT, 100 + i);
        take(&mut state, NOW, &p, format!("{i:03}").as_bytes(), 1);
    }
    let details = state.inspect(Nanos::new(NOW + 119));
    assert_eq!(details[0], ("held", Detail::Integer(230)));
    assert_eq!(details[1], ("leases", Detail::Integer(230)));
    let Detail::List(holders) = &details[2].1 else {
        panic!("holders is a list");
    };
    assert_eq!(holders.len(), MAX_HOLDERS);
    let first: Vec<Detail> = ["020", "021"]
        .iter()
        .map(|id| Detail::Bytes(id.as_bytes().to_vec()))
        .collect();
    for (holder, id) in holders.iter().zip(&first) {
        let Detail::List(fields) = holder else {
            panic!("a holder is a list");
        };
        assert_eq!(&fields[0], id);
    }
}

mod format;
mod model;
mod scale;
