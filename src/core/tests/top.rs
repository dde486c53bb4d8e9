//! The RL.TOP summary's promises (core/top.rs): exact counts while fewer
//! distinct keys than its size were refused; the floor of the decayed
//! count; the Space-Saving bound against an exact model, with time a
//! parameter; ties; resizing keeps the heaviest; off holds nothing; the
//! levels' origin moving up keeps the order; long keys held bounded.

use proptest::prelude::*;

use crate::core::top::{held_key, Row, Summary, MAX_KEY_BYTES, REBASE_HALF_LIVES};
use crate::core::Nanos;

const S: u64 = 1_000_000_000;
/// A realistic instant: 2026-12-02 in Unix nanoseconds.
const T0: u64 = 1_796_169_600 * S;
const H: u64 = 60 * S;

fn at(ns: u64) -> Nanos {
    Nanos::new(T0 + ns)
}

/// (key, refusals) of the top `n` at `now`.
fn counts(s: &Summary, n: usize, now: Nanos) -> Vec<(String, u64)> {
    s.top(n, now)
        .into_iter()
        .map(|r| (String::from_utf8_lossy(r.key).into_owned(), r.refusals))
        .collect()
}

fn refuse(s: &mut Summary, key: &str, times: usize, now: Nanos) {
    for _ in 0..times {
        s.record(key.as_bytes(), now);
    }
    s.check();
}

fn pairs(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|&(k, n)| (k.to_string(), n)).collect()
}

#[test]
fn counts_are_exact_while_fewer_keys_than_the_size() {
    let mut s = Summary::new(4, Nanos::new(H));
    refuse(&mut s, "a", 3, at(0));
    refuse(&mut s, "b", 7, at(0));
    refuse(&mut s, "c", 1, at(0));
    assert_eq!(s.len(), 3);
    assert_eq!(
        counts(&s, 10, at(0)),
        pairs(&[("b", 7), ("a", 3), ("c", 1)])
    );
    assert_eq!(counts(&s, 2, at(0)), pairs(&[("b", 7), ("a", 3)]));
    assert_eq!(s.floor_count(at(0)), 0.0, "not full: nothing was evicted");
}

/// Columns: refusals as (instant in half-lives, how many), the instant
/// read (half-lives), the refusals RL.TOP shows (the floor of the sum of
/// `2^(-age/h)`).
#[test]
fn the_reply_is_the_floor_of_the_decayed_count() {
    let cases: &[(&[(u64, usize)], u64, u64)] = &[
        (&[(0, 5)], 0, 5),
        (&[(0, 5)], 1, 2),         // 2.5
        (&[(0, 5)], 2, 1),         // 1.25
        (&[(0, 5)], 3, 0),         // 0.625: held, shown 0
        (&[(0, 1), (1, 1)], 1, 1), // 1.5
        (&[(0, 2), (1, 1)], 1, 2), // exactly 2
        (&[(0, 4), (2, 3)], 2, 4), // exactly 4
        (&[(0, 1000)], 10, 0),     // 0.9765625
        (&[(0, 1024)], 10, 1),     // exactly 1
    ];
    for &(refusals, read, expected) in cases {
        let mut s = Summary::new(8, Nanos::new(H));
        for &(when, n) in refusals {
            refuse(&mut s, "k", n, at(when * H));
        }
        let rows = s.top(1, at(read * H));
        assert_eq!(rows[0].refusals, expected, "{refusals:?} read at {read}h");
    }
    // Half a half-life: 3 × 2^(-1/2) = 2.12.
    let mut s = Summary::new(8, Nanos::new(H));
    refuse(&mut s, "k", 3, at(0));
    assert_eq!(s.top(1, at(H / 2))[0].refusals, 2);
    let exact = s.count_of(b"k", at(H / 2)).unwrap_or_default();
    assert!((exact - 3.0 * 0.5f64.sqrt()).abs() < 1e-12, "{exact}");
}

#[test]
fn recent_refusals_outweigh_old_ones() {
    let mut s = Summary::new(8, Nanos::new(H));
    refuse(&mut s, "old", 8, at(0));
    refuse(&mut s, "new", 3, at(2 * H));
    // At 2h: old 8/4 = 2, new 3.
    assert_eq!(counts(&s, 10, at(2 * H)), pairs(&[("new", 3), ("old", 2)]));
    // At 0 the old one led; the order of the held entries does not change
    // with time alone, only the counts shown.
    assert_eq!(counts(&s, 10, at(4 * H)), pairs(&[("new", 0), ("old", 0)]));
}

#[test]
fn a_new_key_takes_over_the_smallest_count() {
    let mut s = Summary::new(2, Nanos::new(H));
    refuse(&mut s, "a", 3, at(0));
    refuse(&mut s, "b", 1, at(0));
    refuse(&mut s, "c", 1, at(0));
    // c took b's entry: b's count 1, plus c's own refusal.
    assert_eq!(counts(&s, 10, at(0)), pairs(&[("a", 3), ("c", 2)]));
    assert_eq!(s.count_of(b"b", at(0)), None);
    assert_eq!(s.floor_count(at(0)), 2.0);
    // b again takes the smallest, c's 2, decayed: at 1h c = 1, a = 1.5.
    refuse(&mut s, "b", 1, at(H));
    assert_eq!(counts(&s, 10, at(H)), pairs(&[("b", 2), ("a", 1)]));
    assert_eq!(s.len(), 2);
}

#[test]
fn ties_show_the_later_refusal_first_then_the_key_bytes() {
    let mut s = Summary::new(8, Nanos::new(86_400 * S));
    // Read 5 ms later, the counts at 0 are a hair below their integers.
    refuse(&mut s, "b", 3, at(0)); // 2.99.. shows 2
    refuse(&mut s, "a", 3, at(0)); // 2
    refuse(&mut s, "c", 4, at(0)); // 3
    refuse(&mut s, "z", 2, at(5_000_000)); // exactly 2, 5 ms later
    let rows = s.top(10, at(5_000_000));
    let ms = T0 / 1_000_000;
    let row = |key: &'static str, refusals, last_ms| Row {
        key: key.as_bytes(),
        refusals,
        last_ms,
    };
    assert_eq!(
        rows,
        vec![
            row("c", 3, ms),
            row("z", 2, ms + 5),
            row("a", 2, ms),
            row("b", 2, ms),
        ]
    );
    // COUNT cuts after the order is decided.
    assert_eq!(s.top(2, at(5_000_000)), rows[..2].to_vec());
}

#[test]
fn shrinking_keeps_the_heaviest_and_growing_keeps_all() {
    let mut s = Summary::new(6, Nanos::new(H));
    for (key, n) in [("a", 1), ("b", 6), ("c", 3), ("d", 5), ("e", 2), ("f", 4)] {
        refuse(&mut s, key, n, at(0));
    }
    s.resize(3);
    s.check();
    assert_eq!(
        counts(&s, 10, at(0)),
        pairs(&[("b", 6), ("d", 5), ("f", 4)])
    );
    // Full at 3: a new key takes f's entry.
    refuse(&mut s, "g", 1, at(0));
    assert_eq!(
        counts(&s, 10, at(0)),
        pairs(&[("b", 6), ("d", 5), ("g", 5)])
    );
    s.resize(10);
    refuse(&mut s, "h", 1, at(0));
    assert_eq!(s.len(), 4);
    assert_eq!(s.capacity(), 10);
}

#[test]
fn size_zero_is_off_and_holds_nothing() {
    let mut s = Summary::new(5, Nanos::new(H));
    refuse(&mut s, "a", 2, at(0));
    s.resize(0);
    s.check();
    assert!(s.is_empty());
    refuse(&mut s, "a", 2, at(0));
    assert!(s.is_empty());
    assert!(s.top(10, at(0)).is_empty());
    let off = Summary::new(0, Nanos::new(H));
    assert!(off.memory() <= std::mem::size_of::<Summary>());
    s.resize(5);
    refuse(&mut s, "a", 1, at(0));
    assert_eq!(counts(&s, 10, at(0)), pairs(&[("a", 1)]));
}

#[test]
fn a_new_half_life_applies_from_each_last_refusal() {
    let mut s = Summary::new(4, Nanos::new(H));
    refuse(&mut s, "a", 8, at(0));
    refuse(&mut s, "b", 4, at(H));
    // At 1h under 60 s: a 4, b 4 (tie, b later).
    assert_eq!(counts(&s, 10, at(H)), pairs(&[("b", 4), ("a", 4)]));
    s.set_half_life(Nanos::new(2 * H));
    s.check();
    assert_eq!(s.half_life(), Nanos::new(2 * H));
    // At 2h, every count decays at the new rate from its last refusal on:
    // a 8 × 2^(-2h/2h) = 4, b 4 × 2^(-1h/2h) = 2.83.
    assert_eq!(s.count_of(b"a", at(2 * H)), Some(4.0));
    let b = s.count_of(b"b", at(2 * H)).unwrap_or_default();
    assert!((b - 4.0 * 0.5f64.sqrt()).abs() < 1e-9, "{b}");
    refuse(&mut s, "a", 1, at(2 * H));
    assert_eq!(counts(&s, 10, at(2 * H)), pairs(&[("a", 5), ("b", 2)]));
}

#[test]
fn the_origin_moves_up_and_the_order_holds() {
    let h = S; // a one-second half-life, the smallest setting
    let mut s = Summary::new(3, Nanos::new(h));
    let late = (REBASE_HALF_LIVES + 10) * h;
    refuse(&mut s, "a", 1, at(0));
    refuse(&mut s, "b", 3, at(late));
    refuse(&mut s, "c", 2, at(late));
    refuse(&mut s, "d", 1, at(late + 3 * REBASE_HALF_LIVES * h));
    // d came when full: it took a's entry (a ≈ 0).
    assert_eq!(s.count_of(b"a", at(late)), None);
    refuse(&mut s, "d", 1, at(late + 3 * REBASE_HALF_LIVES * h));
    assert_eq!(
        counts(&s, 10, at(late + 3 * REBASE_HALF_LIVES * h)),
        pairs(&[("d", 2), ("b", 0), ("c", 0)])
    );
    // And the smallest held is c (2 < 3 at the same age): e takes it.
    refuse(&mut s, "e", 1, at(late + 3 * REBASE_HALF_LIVES * h));
    assert_eq!(s.count_of(b"c", at(late)), None);
    assert!(s.count_of(b"b", at(late)).is_some());
}

#[test]
fn a_clock_that_goes_back_counts_at_the_latest_time() {
    let mut s = Summary::new(4, Nanos::new(H));
    refuse(&mut s, "a", 2, at(10 * S));
    refuse(&mut s, "a", 1, at(0));
    let rows = s.top(1, at(0));
    assert_eq!(rows[0].refusals, 3);
    assert_eq!(rows[0].last_ms, (T0 + 10 * S) / 1_000_000);
}

#[test]
fn long_keys_are_held_bounded_and_apart() {
    let a = [b'x'; 600];
    let mut b = a;
    b[599] = b'y';
    assert_eq!(held_key(&a).len(), MAX_KEY_BYTES);
    assert_ne!(held_key(&a), held_key(&b));
    assert_eq!(&held_key(&a)[..493], &a[..493]);
    assert_eq!(&held_key(&a)[493..496], b"...");
    let whole = [b'z'; MAX_KEY_BYTES];
    assert_eq!(&held_key(&whole)[..], &whole[..]);

    let mut s = Summary::new(128, Nanos::new(H));
    for i in 0..200u32 {
        let mut key = vec![b'k'; 4096];
        key.extend_from_slice(&i.to_be_bytes());
        s.record(&key, at(u64::from(i)));
    }
    s.check();
    assert_eq!(s.len(), 128);
    // The bound docs/operations.md states: at most 640 bytes an entry.
    assert!(s.memory() <= 128 * 640, "{}", s.memory());
}

/// The steps of a random stream: (key 0..keys, nanoseconds to advance).
fn stream() -> impl Strategy<Value = (usize, u8, Vec<(u8, u64)>)> {
    (1usize..8, 1u8..24).prop_flat_map(|(size, keys)| {
        let step = (0..keys, prop_oneof![Just(0u64), 0..3 * H, 0..S]);
        (Just(size), Just(keys), prop::collection::vec(step, 1..300))
    })
}

proptest! {
    /// Against an exact model of every key's decayed count: a held key's
    /// count never underestimates and overestimates by at most the
    /// smallest count held when it entered (decayed since); a key not held
    /// was refused at most the smallest count held; fewer distinct keys
    /// than the size means exact counts.
    #[test]
    fn space_saving_bounds_hold((size, keys, steps) in stream()) {
        let h = Nanos::new(H);
        let mut s = Summary::new(size, h);
        // Per key: exact decayed count and the error bound, as of `now`.
        let mut exact = vec![0f64; usize::from(keys)];
        let mut bound = vec![0f64; usize::from(keys)];
        let mut now = at(0);
        let mut distinct = std::collections::BTreeSet::new();
        for (key, advance) in steps {
            let factor = (-(advance as f64) / H as f64).exp2();
            for v in exact.iter_mut().chain(bound.iter_mut()) {
                *v *= factor;
            }
            now = now.saturating_add(Nanos::new(advance));
            let name = [b'k', key];
            if s.count_of(&name, now).is_none() {
                bound[usize::from(key)] = s.floor_count(now);
            }
            s.record(&name, now);
            exact[usize::from(key)] += 1.0;
            distinct.insert(key);
            s.check();
            let floor = s.floor_count(now);
            for k in 0..keys {
                let e = exact[usize::from(k)];
                let slack = 1e-9 * (1.0 + e);
                match s.count_of(&[b'k', k], now) {
                    Some(c) => {
                        prop_assert!(c + slack >= e, "key {k}: {c} < exact {e}");
                        prop_assert!(c <= e + bound[usize::from(k)] + slack,
                            "key {k}: {c} > {e} + {}", bound[usize::from(k)]);
                        if distinct.len() <= size {
                            prop_assert!((c - e).abs() <= slack);
                        }
                    }
                    None => prop_assert!(e <= floor + slack, "key {k}: {e} > {floor}"),
                }
            }
        }
    }
}
