//! RL.LEASE: table-driven cases of SPEC's section "Concurrency: RL.LEASE",
//! a property test against a naive model, the `retry_after` promise, the
//! saved format (round trip, canonical bytes, a pinned fixture, hostile
//! payloads) and the memory a lease takes.
//!
//! The model, `Model`, keeps the leases as a `BTreeMap` from id to
//! `(weight, expiry)` and answers every question by brute force from
//! SPEC's definitions: `held(t)` sums the weights of the leases with
//! `t < expiry`; the others are the leases but the requester's; the
//! instant to retry at is the first expiry of another lease after which
//! the request fits. It shares one rule with the code that SPEC leaves
//! open: expired leases are forgotten when a grant or a release changes
//! the key (which matters to the leases kept, to the encoding and to a
//! clock that goes back: a forgotten lease no longer counts).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{choice, marks_of, move_clock, pick, quantity, spec_reply, start_instant, Choice};
use crate::core::lease::{LeaseParams, Leases, MAX_HOLDERS, MAX_ID_LEN, MAX_LIMIT};
use crate::core::{Decision, DecodeError, Detail, Nanos, Retry, Unit, MAX_DURATION};

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;
/// 2023-11-14T22:13:20Z, in ns.
const NOW: u64 = 1_700_000_000 * S;

fn params(limit: u64, ttl: u64) -> LeaseParams {
    LeaseParams::new(limit, Nanos::new(ttl)).expect("valid parameters")
}

/// Decides a request and records it when granted.
fn take(state: &mut Leases, now: u64, p: &LeaseParams, id: &[u8], quantity: u64) -> Decision {
    let (decision, update) = state.decide(Nanos::new(now), p, id, quantity);
    if let Some(update) = update {
        state.apply(update);
    }
    decision
}

/// The leases as `(id, weight, expiry)`, in the canonical order.
fn leases_of(state: &Leases) -> Vec<(Vec<u8>, u64, u64)> {
    state
        .iter()
        .map(|(id, weight, expiry)| (id.to_vec(), weight, expiry.get()))
        .collect()
}

/// RL.INSPECT's `held`.
fn held_of(state: &Leases, now: u64) -> u64 {
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
    let mut state = Leases::default();
    for (i, &(at, limit, ttl, call, expected)) in rows.iter().enumerate() {
        let now = NOW + at * MS;
        let p = params(limit, ttl * MS);
        let reply = |d: Decision| Reply(d.reply(Nanos::new(now), Unit::Millis));
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
fn the_last_lease_renewed_in_place_keeps_the_order() {
    // The last lease in order renewed with its weight stays in the tree
    // where it is (`Leases::apply`'s shortcut); with another weight, an
    // earlier expiry (a clock gone back) or a lease after it, it moves.
    // Each step is checked against the model of the same calls.
    let p = params(10, 10 * S);
    let mut state = Leases::default();
    let mut model = Model::default();
    let calls: [(u64, &[u8], u64); 12] = [
        (0, b"a", 1),
        (1, b"a", 1), // alone: first and last, renewed in place
        (2, b"b", 2),
        (3, b"b", 2), // the last, same weight: in place
        (4, b"b", 3), // another weight: moves
        (5, b"a", 1), // the first: moves to the end
        (5, b"a", 1), // the same instant: in place, expiry unchanged
        (4, b"a", 1), // a clock gone back: an earlier expiry, moves
        (6, b"c", 1),
        (7, b"c", 1),
        (8, b"a", 1),
        (9, b"a", 1),
    ];
    for (at, id, q) in calls {
        let now = NOW + at * S;
        let (expected, expiry) = model.decide(now, &p, id, q);
        let got = take(&mut state, now, &p, id, q);
        assert_eq!(got, expected, "at {at} s, {id:?}");
        if let Some(expiry) = expiry {
            model.record(now, id, q, expiry);
        }
        state.check();
        assert_eq!(leases_of(&state), model.sorted(), "at {at} s, {id:?}");
    }
}

#[test]
fn a_lease_counts_during_its_ttl_to_the_nanosecond() {
    let p = params(1, 1_000);
    let mut state = Leases::default();
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
    let mut state = Leases::default();
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
    let mut state = Leases::default();
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
        assert_eq!(Leases::decode(&state.encode()), Ok(state.clone()));
    }
}

/// At the end of time `now + ttl` saturates: a lease granted at
/// `Nanos::MAX` expires at once, and nothing panics.
#[test]
fn the_end_of_time() {
    let p = params(2, MAX_DURATION.get());
    let mut state = Leases::default();
    let late = u64::MAX - S;
    let d = take(&mut state, late, &p, b"a", 1);
    assert_eq!((d.limited, d.reset_at), (false, Nanos::MAX));
    let d = take(&mut state, u64::MAX, &p, b"b", 2);
    assert_eq!((d.limited, d.remaining, d.reset_at), (false, 0, Nanos::MAX));
    assert!(state.is_empty_at(Nanos::MAX));
    // a, expired at the second grant's `now`, was dropped then.
    assert_eq!(held_of(&state, late), 2);
    assert_eq!(Leases::decode(&state.encode()), Ok(state.clone()));
    // b has expired too: releasing it releases nothing, and changes
    // nothing (the expired lease stays until a change drops it).
    let before = state.clone();
    assert!(!state.release(Nanos::MAX, b"b"));
    assert_eq!(state, before);
    assert_eq!(state.iter().count(), 1);
}

#[test]
fn inspect_lists_the_soonest_to_expire_first() {
    let mut state = Leases::default();
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
        Leases::default().inspect(now),
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
    let mut state = Leases::default();
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

// ---------------------------------------------------------------------
// The model.

/// SPEC's leases, by brute force: id -> (weight, expiry).
#[derive(Clone, Debug, Default)]
struct Model {
    leases: BTreeMap<Vec<u8>, (u64, u64)>,
}

impl Model {
    /// The weight held at `t` by the leases but `except`'s.
    fn held(&self, t: u64, except: &[u8]) -> u64 {
        self.leases
            .iter()
            .filter(|&(id, &(_, expiry))| t < expiry && id.as_slice() != except)
            .map(|(_, &(weight, _))| weight)
            .sum()
    }

    /// The latest expiry after `now` of the leases but `except`'s, or `now`.
    fn latest(&self, now: u64, except: &[u8]) -> u64 {
        self.leases
            .iter()
            .filter(|&(id, _)| id.as_slice() != except)
            .map(|(_, &(_, expiry))| expiry)
            .fold(now, u64::max)
    }

    /// The decision, and the expiry of the lease to record when granted.
    fn decide(&self, now: u64, p: &LeaseParams, id: &[u8], q: u64) -> (Decision, Option<u64>) {
        let limit = p.limit;
        let held = self.held(now, b"");
        let others = self.held(now, id);
        let mut d = Decision {
            limited: true,
            limit,
            remaining: limit.saturating_sub(held),
            retry: Retry::Never,
            reset_at: Nanos::new(self.latest(now, b"")),
        };
        if q > limit {
            return (d, None);
        }
        if others + q > limit {
            // The first expiry of another lease after which it fits.
            let at = self
                .leases
                .iter()
                .filter(|&(other, &(_, expiry))| other.as_slice() != id && expiry > now)
                .map(|(_, &(_, expiry))| expiry)
                .filter(|&t| self.held(t, id) + q <= limit)
                .min()
                .expect("fits once every other lease expired");
            d.retry = Retry::At(Nanos::new(at));
            return (d, None);
        }
        d.limited = false;
        d.retry = Retry::NotLimited;
        if q == 0 {
            return (d, None);
        }
        let expiry = now + p.ttl.get();
        d.remaining = limit - others - q;
        d.reset_at = Nanos::new(expiry.max(self.latest(now, id)));
        let recorded = (1..=MAX_ID_LEN).contains(&id.len());
        (d, recorded.then_some(expiry))
    }

    fn forget_expired(&mut self, now: u64) {
        self.leases.retain(|_, &mut (_, expiry)| expiry > now);
    }

    fn record(&mut self, now: u64, id: &[u8], q: u64, expiry: u64) {
        self.forget_expired(now);
        self.leases.insert(id.to_vec(), (q, expiry));
    }

    /// A release of an unexpired lease drops the expired ones with it; a
    /// release that releases nothing changes nothing.
    fn release(&mut self, now: u64, id: &[u8]) -> bool {
        if self.leases.get(id).is_none_or(|&(_, expiry)| expiry <= now) {
            return false;
        }
        self.forget_expired(now);
        self.leases.remove(id).is_some()
    }

    /// The leases in the canonical order: by expiry, then id.
    fn sorted(&self) -> Vec<(Vec<u8>, u64, u64)> {
        let mut all: Vec<_> = self
            .leases
            .iter()
            .map(|(id, &(weight, expiry))| (id.clone(), weight, expiry))
            .collect();
        all.sort_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)));
        all
    }

    /// RL.INSPECT's fields.
    fn inspect(&self, now: u64) -> Vec<(&'static str, Detail)> {
        let unexpired: Vec<_> = self.sorted().into_iter().filter(|l| l.2 > now).collect();
        let holders = unexpired
            .iter()
            .take(MAX_HOLDERS)
            .map(|(id, weight, expiry)| {
                Detail::List(vec![
                    Detail::Bytes(id.clone()),
                    Detail::Integer(i64::try_from(*weight).expect("small")),
                    Detail::Integer(i64::try_from((expiry - now).div_ceil(MS)).expect("small")),
                ])
            })
            .collect();
        vec![
            (
                "held",
                Detail::Integer(i64::try_from(self.held(now, b"")).expect("small")),
            ),
            ("leases", Detail::Integer(unexpired.len() as i64)),
            ("holders", Detail::List(holders)),
        ]
    }
}

/// The ids of the runs: mostly five short ones (so that leases renew
/// and contend), now and then ids of 16, 127 and 128 bytes, and with kind
/// 0 and 1 an empty one and one over 128 bytes (decided, never recorded).
/// With `many`, one of 400.
fn id_of((kind, seed): Choice, many: bool) -> Vec<u8> {
    let short: [&[u8]; 5] = [b"a", b"b", b"c", b"ab", b"\0"];
    match kind % 16 {
        0 => Vec::new(),
        1 => vec![1; MAX_ID_LEN + 1],
        _ if many => format!("id-{}", seed % 400).into_bytes(),
        2 => b"job-000000000001".to_vec(),
        3 => vec![0xff; MAX_ID_LEN],
        4 => vec![7; MAX_ID_LEN - 1],
        _ => short[(seed % short.len() as u64) as usize].to_vec(),
    }
}

/// A limit: half the time 1 to 8 (leases contend), else anywhere up to
/// `MAX_LIMIT`.
fn limit_of(c: Choice) -> u64 {
    if c.0.is_multiple_of(2) {
        1 + c.1 % 8
    } else {
        1 + pick(MAX_LIMIT - 1, c)
    }
}

/// A ttl from 1 ns to `MAX_DURATION`, often whole milliseconds or seconds,
/// a third of the time at most a minute.
fn ttl_of(c: Choice) -> u64 {
    let max = MAX_DURATION.get();
    let raw = match c.0 % 3 {
        0 => 1 + pick(60 * S - 1, c),
        _ => 1 + pick(max - 1, c),
    };
    match c.0 / 64 {
        1 => raw.next_multiple_of(MS).min(max),
        2 => raw.next_multiple_of(S).min(max),
        _ => raw,
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    /// RL.LEASE: decide, and record when granted.
    Lease,
    /// RL.RELEASE.
    Release,
    /// Decide only (RL.PEEK, or RL.ALLOW refused by another limit).
    Peek,
}

#[derive(Clone, Debug)]
struct Step {
    time: Choice,
    op: u8,
    id: Choice,
    quantity: Choice,
    limit: Option<Choice>,
    ttl: Option<Choice>,
}

#[derive(Clone, Debug)]
struct Run {
    start: u64,
    limit: Choice,
    ttl: Choice,
    steps: Vec<Step>,
}

/// Runs of `steps` calls; with `changes`, a fifth of the calls bring a
/// new limit and a fifth a new ttl.
fn runs(changes: bool, steps: std::ops::Range<usize>) -> impl Strategy<Value = Run> {
    let step = (
        choice(),
        any::<u8>(),
        choice(),
        choice(),
        prop::option::weighted(0.2, choice()),
        prop::option::weighted(0.2, choice()),
    )
        .prop_map(move |(time, op, id, quantity, limit, ttl)| Step {
            time,
            op,
            id,
            quantity,
            limit: limit.filter(|_| changes),
            ttl: ttl.filter(|_| changes),
        });
    (
        start_instant(),
        choice(),
        choice(),
        prop::collection::vec(step, steps),
    )
        .prop_map(|(start, limit, ttl, steps)| Run {
            start,
            limit,
            ttl,
            steps,
        })
}

/// One decision as the code made it.
struct Call<'a> {
    /// The state before the call.
    state: &'a Leases,
    now: u64,
    p: LeaseParams,
    id: &'a [u8],
    quantity: u64,
    decision: Decision,
}

/// Replays a run on one key and on the model, comparing them after every
/// call (decisions, releases, the leases kept, RL.INSPECT, emptiness),
/// and calls `check` on every decision; returns the state at the end.
/// With `many`, ids come from a pool of 400 and most calls are grants.
fn replay(run: &Run, many: bool, mut check: impl FnMut(&Call)) -> Leases {
    let mut state = Leases::default();
    let mut model = Model::default();
    let mut now = run.start;
    let mut last: Option<Decision> = None;
    // Many leases need a large limit, and a ttl of at least 1 ms.
    let limit_of = |c: Choice| {
        if many {
            limit_of(c).max(400)
        } else {
            limit_of(c)
        }
    };
    let ttl_of = |c: Choice| if many { ttl_of(c).max(MS) } else { ttl_of(c) };
    let (mut limit, mut ttl) = (limit_of(run.limit), ttl_of(run.ttl));
    for step in &run.steps {
        limit = step.limit.map_or(limit, limit_of);
        ttl = step.ttl.map_or(ttl, ttl_of);
        let p = params(limit, ttl);
        let mut marks = marks_of(last.as_ref());
        marks.extend(model.leases.values().take(4).map(|&(_, expiry)| expiry));
        // Half the steps move the clock a little forward, so that leases
        // live long enough to be renewed; the others as `move_clock`
        // likes, back included. With `many`, leases pile up: the clock
        // moves by less than a microsecond, forward or (one time in
        // eight) back, or (one time in sixteen) by up to 3/16 of the ttl.
        let (kind, seed) = step.time;
        let time = match (many, kind % 16) {
            (true, 0..=12) => (1, seed),
            (true, 13) => (2, seed),
            (true, _) => (10, seed),
            (false, 0..=3) => (2, seed),
            (false, _) => step.time,
        };
        now = move_clock(now, time, (ttl / 16).max(1), ttl, &marks);
        let op = match (many, step.op % 8) {
            (true, 0..=5) | (false, 0..=4) => Op::Lease,
            (true, 6) | (false, 5) => Op::Release,
            _ => Op::Peek,
        };
        let id = id_of(step.id, many);
        let what = format!("{op:?} {id:?} at {now}, {p:?}");
        if let Op::Release = op {
            let released = state.release(Nanos::new(now), &id);
            assert_eq!(released, model.release(now, &id), "{what}");
        } else {
            let remaining = last.map_or(limit, |d| d.remaining);
            // A peek, a few units, or any quantity (`quantity`'s edges;
            // not with `many`: a lease of the whole limit would keep the
            // others out).
            let (kind, seed) = step.quantity;
            let quantity = match (many, kind % 4) {
                (_, 0) => 0,
                (true, _) | (false, 1 | 2) => 1 + seed % limit.min(3),
                (false, _) => quantity(step.quantity, limit, remaining),
            };
            let (decision, update) = state.decide(Nanos::new(now), &p, &id, quantity);
            let (expected, record) = model.decide(now, &p, &id, quantity);
            let what = format!("{what}, quantity {quantity}");
            assert_eq!(decision, expected, "{what}");
            for unit in [Unit::Millis, Unit::Seconds] {
                let reply = decision.reply(Nanos::new(now), unit);
                assert_eq!(reply, spec_reply(&expected, now, unit), "{unit:?}, {what}");
            }
            assert_eq!(update.is_some(), record.is_some(), "{what}");
            check(&Call {
                state: &state,
                now,
                p,
                id: &id,
                quantity,
                decision,
            });
            if let (Op::Lease, Some(update), Some(expiry)) = (op, update, record) {
                state.apply(update);
                model.record(now, &id, quantity, expiry);
            }
            last = Some(decision);
        }
        state.check();
        assert_eq!(leases_of(&state), model.sorted(), "{what}");
        assert_eq!(state.inspect(Nanos::new(now)), model.inspect(now), "{what}");
        let empty = model.held(now, b"") == 0;
        assert_eq!(state.is_empty_at(Nanos::new(now)), empty, "{what}");
    }
    state
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every decision equals the model's, in both units; releases, the
    /// leases kept and RL.INSPECT too, with the limit and the ttl
    /// changing and the clock going back; the state at the end encodes
    /// and decodes to itself.
    #[test]
    fn matches_the_model(run in runs(true, 1..48)) {
        let state = replay(&run, false, |_| {});
        prop_assert_eq!(Leases::decode(&state.encode()), Ok(state));
    }

    /// SPEC's promise: the same request is allowed at the instant
    /// `Retry::At` names and limited a nanosecond earlier; waiting the
    /// rounded-up reply, in milliseconds or seconds, is enough;
    /// `Retry::Never` only for a quantity over the limit.
    #[test]
    fn waiting_retry_after_is_enough(run in runs(true, 1..48)) {
        replay(&run, false, |call| {
            let decide = |at: u64| call.state.decide(Nanos::new(at), &call.p, call.id, call.quantity).0;
            match call.decision.retry {
                Retry::At(at) => {
                    let at = at.get();
                    assert!(at > call.now);
                    assert!(!decide(at).limited, "still limited at the promised {at}");
                    assert!(decide(at - 1).limited, "already allowed at {}", at - 1);
                    for unit in [Unit::Millis, Unit::Seconds] {
                        let wait = call.decision.reply(Nanos::new(call.now), unit)[3];
                        let then = call.now + u64::try_from(wait).unwrap() * unit.nanos();
                        assert!(!decide(then).limited, "limited after waiting {wait} {unit:?}");
                    }
                }
                Retry::Never => assert!(call.quantity > call.p.limit),
                Retry::NotLimited => assert!(!call.decision.limited),
            }
        });
    }

    /// With one limit, the clock going back or not, the key never holds
    /// more than the limit: every lease kept counts at any instant before
    /// the last grant's (none expired there), so what they weigh together
    /// is the most ever held at once.
    #[test]
    fn never_more_than_the_limit(run in runs(false, 1..48)) {
        let limit = limit_of(run.limit);
        let state = replay(&run, false, |call| {
            let kept: u64 = call.state.iter().map(|(_, weight, _)| weight).sum();
            assert!(kept <= limit, "{kept} held under a limit of {limit}");
        });
        let kept: u64 = state.iter().map(|(_, weight, _)| weight).sum();
        prop_assert!(kept <= limit);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Hundreds of leases (ids from a pool of 400, mostly grants), so the
    /// tree grows deep and records move: still the model's answers.
    #[test]
    fn many_leases_match_the_model(run in runs(true, 200..400)) {
        let state = replay(&run, true, |_| {});
        prop_assert_eq!(Leases::decode(&state.encode()), Ok(state));
    }
}

// ---------------------------------------------------------------------
// The saved format.

/// Builds the leases `(id, weight, expiry)` by granting them in this
/// order at the epoch, each with its expiry as ttl.
fn granted(leases: &[(Vec<u8>, u64, u64)]) -> Leases {
    let mut state = Leases::default();
    for (id, weight, expiry) in leases {
        let d = take(&mut state, 0, &params(MAX_LIMIT, *expiry), id, *weight);
        assert!(!d.limited);
    }
    state
}

#[test]
fn two_histories_one_encoding() {
    let p = params(5, 10 * S);
    // a (2) and b (1) at NOW, c (1) at NOW + 1 s.
    let mut first = Leases::default();
    take(&mut first, NOW, &p, b"a", 2);
    take(&mut first, NOW, &p, b"b", 1);
    take(&mut first, NOW + S, &p, b"c", 1);
    // The same leases after renewals, a release, an expired lease and
    // refusals, in another order.
    let mut second = Leases::default();
    take(&mut second, NOW - 20 * S, &p, b"old", 5);
    take(&mut second, NOW - 5 * S, &p, b"c", 2);
    take(&mut second, NOW, &p, b"b", 1);
    take(&mut second, NOW, &p, b"x", 2);
    assert!(take(&mut second, NOW, &p, b"y", 1).limited);
    assert!(second.release(Nanos::new(NOW), b"x"));
    take(&mut second, NOW, &p, b"a", 2);
    take(&mut second, NOW + S, &p, b"c", 1);
    second.check();
    assert_eq!(first, second);
    assert_eq!(first.encode(), second.encode());
    let decoded = Leases::decode(&second.encode()).expect("decodes");
    decoded.check();
    assert_eq!(decoded, first);
    assert_eq!(decoded.encode(), first.encode());
}

/// Two leases: `job-1` (1 unit) granted at `NOW` and `job-2` (3 units)
/// at `NOW` + 1 ms, both for 30 s.
#[rustfmt::skip]
const LEASES: [u8; 27] = [
    // 2 leases
    0x02,
    // expiry: 1_700_000_030_000_000_000 ns since the epoch, varint
    0x80, 0xd8, 0xb6, 0x92, 0xd3, 0xa0, 0xe7, 0xcb, 0x17,
    // weight 1, id length 5
    0x01, 0x05,
    // expiry: 1 ms after the previous, varint; weight 3, id length 5
    0xc0, 0x84, 0x3d, 0x03, 0x05,
    // the ids
    b'j', b'o', b'b', b'-', b'1',
    b'j', b'o', b'b', b'-', b'2',
];

#[test]
fn leases_fixture() {
    let p = params(4, 30 * S);
    let mut state = Leases::default();
    take(&mut state, NOW, &p, b"job-1", 1);
    take(&mut state, NOW + MS, &p, b"job-2", 3);
    assert_eq!(state.encode(), LEASES, "encoding changed");
    let decoded = Leases::decode(&LEASES).expect("the fixture decodes");
    decoded.check();
    assert_eq!(decoded, state);
    let (d, _) = decoded.decide(Nanos::new(NOW + S), &p, b"job-3", 1);
    assert_eq!(d.retry, Retry::At(Nanos::new(NOW + 30 * S)));
    assert_eq!(d.reset_at, Nanos::new(NOW + 30 * S + MS));
    assert_eq!(Leases::default().encode(), [0]);
    assert_eq!(Leases::decode(&[0]), Ok(Leases::default()));
}

/// Varints, then raw bytes.
fn payload(varints: &[u64], ids: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for &v in varints {
        let mut v = v;
        while v >= 0x80 {
            bytes.push((v & 0x7f) as u8 | 0x80);
            v >>= 7;
        }
        bytes.push(v as u8);
    }
    bytes.extend_from_slice(ids);
    bytes
}

#[test]
fn hostile_payloads_are_refused() {
    let invalid = DecodeError::Invalid;
    let long = [b'x'; 129];
    let mut valid = LEASES.to_vec();
    valid.push(0);
    // name | payload | error
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<u8>, DecodeError)> = vec![
        ("empty payload", vec![], DecodeError::Length),
        ("count, no leases", vec![1], DecodeError::Length),
        ("a trailing byte", valid, DecodeError::Length),
        ("a missing id byte", LEASES[..26].to_vec(), DecodeError::Length),
        ("ids longer than their lengths", payload(&[1, 5, 1, 1], b"ab"), DecodeError::Length),
        ("more leases than the payload holds", payload(&[1_000, 5, 1, 1], b"a"), DecodeError::Length),
        ("more leases than the largest limit", payload(&[MAX_LIMIT + 1], &[0; 64]),
            invalid("more leases than the largest limit")),
        ("a count past 64 bits", vec![0xff; 11], invalid("varint above 64 bits")),
        ("a padded count", vec![0x81, 0x00, 5, 1, 1, b'a'], invalid("varint not in its shortest form")),
        ("a weight of 0", payload(&[1, 5, 0, 1], b"a"), invalid("a lease of weight 0")),
        ("a weight over the limit", payload(&[1, 5, MAX_LIMIT + 1, 1], b"a"),
            invalid("weights above the largest limit")),
        ("weights summing over the limit", payload(&[2, 5, 600_000, 1, 1, 600_000, 1], b"ab"),
            invalid("weights above the largest limit")),
        ("a weight of 2^64 - 1", payload(&[2, 5, 1, 1, 1, u64::MAX, 1], b"ab"),
            invalid("weights above the largest limit")),
        ("an empty id", payload(&[1, 5, 1, 0], b"a"), invalid("an empty lease id")),
        ("an id of 129 bytes", payload(&[1, 5, 1, 129], &long), invalid("a lease id over 128 bytes")),
        ("an expiry at the epoch", payload(&[1, 0, 1, 1], b"a"), invalid("an expiry at the epoch")),
        ("an expiry past 2^64 - 1 ns", payload(&[2, u64::MAX, 1, 1, 1, 1, 1], b"ab"),
            invalid("an expiry after the latest instant")),
        // Expiries are deltas: a later lease cannot expire earlier. At one
        // expiry the ids must increase.
        ("ids out of order at one expiry", payload(&[2, 5, 1, 1, 0, 1, 1], b"ba"),
            invalid("leases out of order")),
        ("one id twice at one expiry", payload(&[2, 5, 1, 1, 0, 1, 1], b"aa"),
            invalid("leases out of order")),
        ("a shorter id after a longer at one expiry", payload(&[2, 5, 1, 2, 0, 1, 1], b"aba"),
            invalid("leases out of order")),
        ("one id at two expiries", payload(&[2, 5, 1, 1, 1, 1, 1], b"aa"),
            invalid("a lease id given twice")),
    ];
    for (name, bytes, error) in cases {
        assert_eq!(Leases::decode(&bytes), Err(error), "{name}");
    }
    // The largest payload that decodes: 128-byte ids, MAX_LIMIT in all.
    let most = payload(
        &[2, u64::MAX - 1, 1, 128, 1, MAX_LIMIT - 1, 128],
        &[b'z'; 256],
    );
    let mut ids = [b'z'; 256];
    ids[255] = b'{';
    let most = [&most[..most.len() - 256], &ids].concat();
    let decoded = Leases::decode(&most).expect("valid");
    decoded.check();
    assert_eq!(decoded.encode(), most);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any bytes: refused or decoded, never a panic; what decodes is a
    /// valid state, and canonical (it encodes back to the same bytes).
    #[test]
    fn any_payload_is_refused_or_canonical(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(state) = Leases::decode(&bytes) {
            state.check();
            prop_assert_eq!(state.encode(), bytes);
        }
    }

    /// A valid encoding with one byte changed, inserted or cut: the same.
    #[test]
    fn a_damaged_payload_is_refused_or_canonical(
        leases in prop::collection::vec((1u8..8, 1u64..20, 1u64..1_000), 0..12),
        at in any::<usize>(),
        byte in any::<u8>(),
        how in 0u8..3,
    ) {
        let leases: Vec<_> = leases
            .into_iter()
            .map(|(id, weight, expiry)| (vec![b'a'; usize::from(id)], weight, expiry))
            .collect();
        let mut bytes = granted(&leases).encode();
        let at = at % (bytes.len() + 1);
        match how {
            0 if at < bytes.len() => bytes[at] = byte,
            1 => bytes.insert(at, byte),
            _ => bytes.truncate(at),
        }
        if let Ok(state) = Leases::decode(&bytes) {
            state.check();
            prop_assert_eq!(state.encode(), bytes);
        }
    }

    /// The same leases granted in two orders, with leases granted and
    /// released between, encode to the same bytes, which decode to them.
    #[test]
    fn the_encoding_is_canonical(
        set in prop::collection::btree_map(
            prop::collection::vec(any::<u8>(), 1..20),
            (1u64..1_000, 1u64..MAX_DURATION.get()),
            0..40,
        ),
        order in any::<u64>(),
        noise in prop::collection::vec(prop::collection::vec(any::<u8>(), 21..24), 0..5),
    ) {
        let leases: Vec<_> = set
            .iter()
            .map(|(id, &(weight, expiry))| (id.clone(), weight, expiry.min(MAX_DURATION.get())))
            .collect();
        let first = granted(&leases);
        // Another order, with other leases granted then released.
        let mut shuffled = leases.clone();
        let n = shuffled.len().max(1) as u64;
        shuffled.rotate_left((order % n) as usize);
        if order & 1 == 1 {
            shuffled.reverse();
        }
        let extra: Vec<_> = noise.iter().map(|id| (id.clone(), 1, 7)).collect();
        let mut second = granted(&[extra.clone(), shuffled].concat());
        for (id, _, _) in &extra {
            second.release(Nanos::ZERO, id);
        }
        second.check();
        prop_assert_eq!(&first, &second);
        let bytes = first.encode();
        prop_assert_eq!(&bytes, &second.encode());
        let decoded = Leases::decode(&bytes).expect("decodes");
        decoded.check();
        prop_assert_eq!(decoded.encode(), bytes);
        prop_assert_eq!(leases_of(&decoded), {
            let mut sorted = leases.clone();
            sorted.sort_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)));
            sorted
        });
    }
}

// ---------------------------------------------------------------------
// Memory and scale.

/// The id of lease `i`: 16 bytes.
fn id16(i: u64) -> Vec<u8> {
    format!("lease-{i:010}").into_bytes()
}

#[test]
fn ten_thousand_leases_of_16_byte_ids_take_at_most_64_bytes_each() {
    let p = params(MAX_LIMIT, 3_600 * S);
    let mut state = Leases::default();
    for i in 0..10_000 {
        assert_eq!(id16(i).len(), 16);
        assert!(!take(&mut state, NOW + i, &p, &id16(i), 1).limited);
    }
    state.check();
    let per_lease = state.mem_usage() as f64 / 10_000.0;
    eprintln!("10,000 leases of 16-byte ids: {per_lease:.1} bytes a lease");
    assert!(
        state.mem_usage() <= 64 * 10_000,
        "{per_lease} bytes a lease"
    );
    // A decoded state is allocated to fit, and the AVL depth is bounded.
    let decoded = Leases::decode(&state.encode()).expect("decodes");
    assert!(decoded.mem_usage() <= state.mem_usage());
    assert!(state.height() <= 19 && decoded.height() <= 14);
    // Releasing gives the memory back.
    for i in 10..10_000 {
        assert!(state.release(Nanos::new(NOW + 10_000), &id16(i)));
    }
    state.check();
    assert!(
        state.mem_usage() <= 2_048,
        "{} bytes for 10 leases",
        state.mem_usage()
    );
    // Empty, it holds nothing but itself.
    for i in 0..10 {
        assert!(state.release(Nanos::new(NOW + 10_000), &id16(i)));
    }
    assert_eq!(state.mem_usage(), std::mem::size_of::<Leases>());
}

/// The key of the cost target: 10,000 leases, renewed and released in a
/// random order and expiring in bulk, keep the structure valid.
#[test]
fn ten_thousand_leases_renewed_released_and_expired() {
    let long = params(MAX_LIMIT, 3_600 * S);
    let short = params(MAX_LIMIT, S);
    let mut state = Leases::default();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..10_000u64 {
        let p = if i.is_multiple_of(2) { &long } else { &short };
        take(&mut state, NOW + i, p, &id16(i), 1 + i % 3);
    }
    for t in 0..5_000 {
        let i = next() % 10_000;
        match next() % 3 {
            0 => {
                take(&mut state, NOW + 10_000 + t, &long, &id16(i), 1);
            }
            1 => {
                state.release(Nanos::new(NOW + 10_000 + t), &id16(i));
            }
            _ => {
                take(&mut state, NOW + 10_000 + t, &long, &id16(10_000 + t), 2);
            }
        }
    }
    state.check();
    // The short leases expire, and go at the next grant.
    let later = NOW + 2 * S;
    let held = held_of(&state, later);
    take(&mut state, later, &long, b"late", 1);
    state.check();
    assert_eq!(held_of(&state, later), held + 1);
    assert!(state.iter().all(|(_, _, expiry)| expiry.get() > later));
    assert_eq!(Leases::decode(&state.encode()), Ok(state.clone()));
}

/// A way down the tree longer than the insertion's or removal's path
/// holds (never with at most `MAX_LIMIT` leases: an AVL tree of them is at
/// most 28 deep) makes it rebuild the tree instead of retracing its
/// steps. With the path cut to 0, 1 and 2 nodes (a test-only limit), grants,
/// renewals, releases and expiries on ids of one length and of several
/// keep the state valid, and give the same leases as the usual path.
#[test]
fn a_full_path_rebuilds_the_tree() {
    use crate::core::lease::PATH_LIMIT;
    let usual = PATH_LIMIT.with(|limit| limit.get());
    let long = params(MAX_LIMIT, 3_600 * S);
    let short = params(MAX_LIMIT, S);
    let run = |limit: usize, mixed: bool| {
        PATH_LIMIT.with(|l| l.set(limit));
        let id = |i: u64| match mixed && i.is_multiple_of(3) {
            true => format!("x{i}").into_bytes(),
            false => id16(i),
        };
        let mut state = Leases::default();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for t in 0..600u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = x % 150;
            let now = NOW + t * (S / 50);
            match x >> 60 {
                0..=2 => {
                    state.release(Nanos::new(now), &id(i));
                }
                3..=7 => {
                    take(&mut state, now, &short, &id(i), 1 + i % 3);
                }
                _ => {
                    take(&mut state, now, &long, &id(i), 1 + i % 2);
                }
            }
            state.check();
        }
        PATH_LIMIT.with(|l| l.set(usual));
        state
    };
    for mixed in [false, true] {
        let expected = run(usual, mixed);
        assert!(expected.iter().count() > 20);
        for limit in [0, 1, 2] {
            let state = run(limit, mixed);
            assert_eq!(leases_of(&state), leases_of(&expected), "limit {limit}");
            assert_eq!(state.encode(), expected.encode());
        }
    }
}

/// Not a test: what acquire, renew and release cost on the state alone
/// with 10 and with 10,000 leases held, the least per call over batches
/// of distinct random leases (this machine is shared: the least is the
/// least disturbed). A batch renews its leases, releases them, acquires
/// them again (new leases) and peeks at them. Run with `cargo test
/// --release --lib -- --ignored --nocapture lease_costs`.
#[test]
#[ignore = "a measurement, not a test"]
fn lease_costs() {
    use std::hint::black_box;
    use std::time::Instant;
    let p = params(MAX_LIMIT, 3_600 * S);
    for held in [10usize, 10_000] {
        let ids: Vec<Vec<u8>> = (0..held as u64).map(id16).collect();
        let mut state = Leases::default();
        let mut now = NOW;
        for id in &ids {
            now += 1;
            take(&mut state, now, &p, id, 1);
        }
        // A random order of the leases (xorshift, Fisher-Yates).
        let mut order: Vec<usize> = (0..held).collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in (1..held).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let batch = held.min(1_000);
        let mut least = [f64::MAX; 4];
        for b in 0..2_000_000 / batch {
            let at = b * batch % held;
            let window: Vec<&[u8]> = order[at..at + batch]
                .iter()
                .map(|&i| ids[i].as_slice())
                .collect();
            let mut time = |phase: usize, call: &mut dyn FnMut(&[u8])| {
                let start = Instant::now();
                for id in &window {
                    call(id);
                }
                let ns = start.elapsed().as_nanos() as f64 / batch as f64;
                least[phase] = least[phase].min(ns);
            };
            time(0, &mut |id| {
                now += 1;
                black_box(take(&mut state, now, &p, id, 1));
            });
            time(1, &mut |id| {
                black_box(state.release(Nanos::new(now), id));
            });
            time(2, &mut |id| {
                now += 1;
                black_box(take(&mut state, now, &p, id, 1));
            });
            time(3, &mut |id| {
                black_box(state.decide(Nanos::new(now), &p, id, 0));
            });
        }
        let [renew, release, acquire, peek] = least;
        eprintln!(
            "{held} leases: renew {renew:.0} ns, release {release:.0} ns, acquire {acquire:.0} ns, peek {peek:.0} ns, {} bytes",
            state.mem_usage()
        );
    }
}
