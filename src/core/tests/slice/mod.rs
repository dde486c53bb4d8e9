//! RL.SLICE: parameters, the exact slice arithmetic, a table of calls, the
//! clock going backwards, long idle gaps, rebucketing, the saved format and
//! the memory; `model`: runs against a brute-force model and the exact log;
//! `ranges`: the algorithm across its documented ranges.

mod model;
mod ranges;

use crate::core::codec::Writer;
use crate::core::slice::{Geometry, SliceParams, SliceState, MAX_LIMIT, MAX_SLICES};
use crate::core::{Decision, DecodeError, Kind, Nanos, Retry, TimeUnit, MAX_DURATION};

const MS: u64 = 1_000_000;

fn params(limit: u64, window: u64, slices: u64) -> SliceParams {
    SliceParams::new(limit, Nanos::new(window), slices).expect("valid test parameters")
}

/// Decides and applies, as the command does.
fn call(state: &mut SliceState, now: u64, p: &SliceParams, quantity: u64) -> Decision {
    let (decision, update) = state.decide(Nanos::new(now), p, quantity);
    assert_eq!(update.is_some(), !decision.limited && quantity > 0);
    if let Some(update) = update {
        state.apply(update);
    }
    state.check_invariants();
    decision
}

#[test]
fn parameters_are_validated() {
    assert!(SliceParams::new(0, Nanos::new(10), 1).is_none());
    assert!(SliceParams::new(MAX_LIMIT + 1, Nanos::new(10), 1).is_none());
    assert!(SliceParams::new(1, Nanos::new(10), 0).is_none());
    assert!(SliceParams::new(1, Nanos::new(10), 11).is_none());
    assert!(SliceParams::new(1, MAX_DURATION, MAX_SLICES + 1).is_none());
    assert!(SliceParams::new(1, MAX_DURATION.saturating_add(Nanos::new(1)), 1).is_none());
    let p = SliceParams::new(MAX_LIMIT, MAX_DURATION, MAX_SLICES).unwrap();
    assert_eq!(
        (p.limit(), p.window(), p.slices()),
        (MAX_LIMIT, MAX_DURATION, MAX_SLICES)
    );
    assert!(SliceParams::new(1, Nanos::new(10), 10).is_some());
}

#[test]
fn index_and_start_are_exact_without_divisibility() {
    let g = Geometry::new(1000, 3).unwrap(); // slices of 333⅓ ns
    assert_eq!(
        [0, 333, 334, 666, 667, 999, 1000].map(|t| g.index(Nanos::new(t))),
        [0, 0, 1, 1, 2, 2, 3]
    );
    assert_eq!(
        [0, 1, 2, 3, 4].map(|j| g.start(j).get()),
        [0, 334, 667, 1000, 1334]
    );
    let even = Geometry::new(1000, 4).unwrap();
    assert_eq!(even.index(Nanos::new(1249)), 4);
    assert_eq!(even.start(5), Nanos::new(1250));
    assert_eq!(even.start(u64::MAX), Nanos::MAX);
    let odd = Geometry::new(MAX_DURATION.get(), 7).unwrap();
    assert_eq!(odd.start(u64::MAX), Nanos::MAX);
    assert!(odd.index(Nanos::MAX) < u64::MAX);
}

proptest::proptest! {
    /// `index` and `start` split their operands to stay in 64 bits when
    /// they can: the same values as the 128-bit definitions, for any
    /// geometry and instant, saturating alike.
    #[test]
    fn index_and_start_match_their_128_bit_definitions(
        window in proptest::prop_oneof![1..=MAX_DURATION.get(), 1..=100_000_000_000u64],
        slices in proptest::prop_oneof![1..=MAX_SLICES, 1..=100u64],
        t in proptest::prelude::any::<u64>(),
        small in 0u64..1 << 40,
    ) {
        proptest::prop_assume!(slices <= window);
        let g = Geometry::new(window, slices).unwrap();
        for t in [t, small] {
            let exact = u128::from(t) * u128::from(slices) / u128::from(window);
            proptest::prop_assert_eq!(u128::from(g.index(Nanos::new(t))), exact.min(u128::from(u64::MAX)));
            let exact = (u128::from(t) * u128::from(window)).div_ceil(u128::from(slices));
            proptest::prop_assert_eq!(u128::from(g.start(t).get()), exact.min(u128::from(u64::MAX)));
        }
    }
}

/// One state, one call per row, in order. Times in ms; `-1` is the
/// reply's "not applicable".
#[test]
#[rustfmt::skip]
fn table() {
    type Case = (u64, u64, u64, u64, u64, [i64; 5], &'static str);
    let cases: &[Case] = &[
        // at_ms, limit, window_ms, slices, quantity, => [limited, limit, remaining, retry_after_ms, reset_after_ms], what
        (   100,  3, 1000, 4, 1, [0, 3, 2, -1, 1150], "slice 0 (0..250): counted until slice 5 starts at 1250"),
        (   249,  3, 1000, 4, 2, [0, 3, 0, -1, 1001], "quantity 2, last ms of slice 0"),
        (   250,  3, 1000, 4, 1, [1, 3, 0, 1000, 1000], "slice 1: limited until slice 0 drops out at 1250"),
        (   900,  3, 1000, 4, 0, [0, 3, 0, -1, 350], "peek: reports, changes nothing"),
        (  1000,  3, 1000, 4, 1, [1, 3, 0, 250, 250], "a full window later slice 0 is still counted: no double burst"),
        (  1249,  3, 1000, 4, 1, [1, 3, 0, 1, 1], "1 ms before it drops out"),
        (  1250,  3, 1000, 4, 1, [0, 3, 2, -1, 1250], "slice 5: slice 0 dropped out"),
        (  1250,  3, 1000, 4, 4, [1, 3, 2, -1, 1250], "quantity over the limit: never fits"),
        (  1260,  3, 1000, 4, 3, [1, 3, 2, 1240, 1240], "needs the slice 5 unit gone: 2500"),
        (  9000,  3, 1000, 4, 2, [0, 3, 1, -1, 1250], "idle gap longer than the window: everything expired; slice 36"),
        (  9300,  3, 1000, 4, 1, [0, 3, 0, -1, 1200], "slice 37 (9250..9500)"),
        (  9400,  3, 1000, 3, 0, [0, 3, 0, -1, 1267], "3 slices of 333.3 ms: slice 36 -> 27 (9000..9333.3), 37 -> 28 (..9666.7), counted until 10666.7"),
        (  9400,  3, 1000, 3, 1, [1, 3, 0, 934, 1267], "the peek stored nothing; limited until slice 27 drops out at 10333.3"),
        ( 10334,  3, 1000, 3, 1, [0, 3, 1, -1, 1333], "slice 31: the 2 units of slice 27 are gone; rebucketed state stored"),
        ( 10400,  3, 2000, 2, 1, [0, 3, 0, -1, 2600], "2 s in 2 slices: 28 -> 9 (9000..10000), 31 -> 10, the new unit joins slice 10"),
        ( 10500,  3, 2000, 2, 1, [1, 3, 0, 1500, 2500], "limited until slice 9 drops out at 12000"),
        ( 12000,  3, 2000, 2, 1, [0, 3, 0, -1, 3000], "slice 12"),
        ( 12000,  2, 2000, 2, 1, [1, 2, 0, 1000, 3000], "limit lowered to 2: 3 counted, 2 must go (slice 10, at 13000)"),
        ( 12000, 10, 2000, 2, 1, [0, 10, 6, -1, 3000], "limit raised: nothing to move"),
        ( 20000,  1, 1000, 1, 1, [0, 1, 0, -1, 2000], "slices = 1: slice 20, counted until slice 22 at 22000"),
        ( 20999,  1, 1000, 1, 1, [1, 1, 0, 1001, 1001], "last ms of the slice"),
        ( 21000,  1, 1000, 1, 1, [1, 1, 0, 1000, 1000], "next slice: a fixed window would allow here"),
        ( 22000,  1, 1000, 1, 1, [0, 1, 0, -1, 2000], "a full slice later"),
    ];
    let mut state = SliceState::new();
    for &(at, limit, window, slices, quantity, reply, what) in cases {
        let p = params(limit, window * MS, slices);
        let before = state.clone();
        let decision = call(&mut state, at * MS, &p, quantity);
        assert_eq!(decision.reply(Nanos::new(at * MS), TimeUnit::Millis), reply, "at {at} ms: {what}");
        if decision.limited || quantity == 0 {
            assert_eq!(state, before, "at {at} ms: changes nothing");
        }
    }
}

#[test]
fn clock_going_backwards_counts_from_the_head() {
    let p = params(2, 1000, 10); // slices of 100 ns
    let mut state = SliceState::new();
    call(&mut state, 5_000, &p, 2);
    // Back by a whole window: the units are still counted, from slice 50.
    let d = call(&mut state, 3_000, &p, 1);
    assert!(d.limited);
    assert_eq!(d.retry, Retry::At(Nanos::new(6_100)));
    assert_eq!(d.reset_at, Nanos::new(6_100));
    // Allowed at the promised instant, recorded in the current slice.
    assert!(!call(&mut state, 6_100, &p, 1).limited);
    let d = call(&mut state, 4_000, &p, 1);
    assert_eq!((d.limited, d.remaining), (false, 0));
    assert_eq!(
        d.reset_at,
        Nanos::new(7_200),
        "recorded in the head slice 61"
    );
}

#[test]
fn a_long_idle_gap_is_cleared_at_once() {
    let p = params(MAX_LIMIT, 3_600_000 * MS, 3_600);
    let mut state = SliceState::new();
    for second in 0..3_600 {
        call(&mut state, second * 1_000 * MS, &p, 1);
    }
    assert_eq!(state.total(), 3_600);
    let d = call(&mut state, u64::MAX / 2, &p, 5);
    assert_eq!(d.remaining, MAX_LIMIT - 5);
    assert_eq!(state.total(), 5);
}

#[test]
fn extreme_instants_do_not_panic() {
    for p in [
        params(1, 1, 1),
        params(3, 7, 7),
        params(3, MAX_DURATION.get(), 3),
        params(5, 10, 3),
    ] {
        let mut state = SliceState::new();
        for now in [u64::MAX, u64::MAX - 1, 0, u64::MAX] {
            call(&mut state, now, &p, 1);
            call(&mut state, now, &p, 0);
            let other = params(2, 1_000_003, 4);
            call(&mut state.clone(), now, &other, 1);
        }
    }
}

#[test]
fn rebucketing_never_forgets_a_live_unit() {
    // A unit at 99 s in one 100 s slice; the head moves to slice 1 at 100 s.
    let mut state = SliceState::new();
    call(&mut state, 99_000 * MS, &params(10, 100_000 * MS, 1), 1);
    call(&mut state, 100_000 * MS, &params(10, 100_000 * MS, 1), 1);
    // Now a 10 s window: the head moves to new slice 19 (190..200 s), the
    // 99 s unit to slice 9, more than S before it, yet still live at
    // 100 s: it is held in slice 18 instead of being dropped, counted
    // until 200 s, as long as the old geometry would have.
    let p = params(2, 10_000 * MS, 1);
    let d = call(&mut state, 100_000 * MS, &p, 1);
    assert!(d.limited, "both units are still counted");
    assert_eq!(d.retry, Retry::At(Nanos::new(200_000 * MS)));
    let mut later = state.clone();
    call(&mut later, 300_000 * MS, &p, 2);
    assert_eq!(later.total(), 2);
}

#[test]
fn encode_round_trip() {
    let empty = SliceState::new();
    assert_eq!(empty.encode(), [0u8; 24]);
    assert_eq!(SliceState::decode(&empty.encode()), Ok(empty));

    let p = params(100, 1000, 7);
    let mut state = SliceState::new();
    for (now, q) in [(10, 1), (200, 3), (450, 2), (1_100, 4), (1_500, 5)] {
        call(&mut state, now, &p, q);
        let bytes = state.encode();
        assert_eq!(bytes.len(), 24 + 8 * 4);
        let decoded = SliceState::decode(&bytes).unwrap();
        decoded.check_invariants();
        assert_eq!(decoded, state);
        assert_eq!(decoded.oldest(), state.oldest());
        assert_eq!(decoded.total(), state.total());
    }
}

#[test]
fn decode_rejects_bad_payloads() {
    let mut state = SliceState::new();
    call(&mut state, 1_000, &params(10, 100, 4), 3);
    let good = state.encode();
    let header = |window: u64, slices: u64, head: u64| {
        let mut w = Writer::default();
        w.u64(window).u64(slices).u64(head);
        w.into_bytes()
    };
    let with_counters = |mut bytes: Vec<u8>, counters: &[u32]| {
        for c in counters {
            bytes.extend_from_slice(&c.to_le_bytes());
        }
        bytes
    };
    let invalid = |bytes: &[u8]| matches!(SliceState::decode(bytes), Err(DecodeError::Invalid(_)));

    for cut in 0..good.len() {
        assert_eq!(
            SliceState::decode(&good[..cut]),
            Err(DecodeError::Length),
            "truncated at {cut}"
        );
    }
    assert_eq!(
        SliceState::decode(&[good.as_slice(), &[0]].concat()),
        Err(DecodeError::Length)
    );
    assert_eq!(SliceState::decode(&[0u8; 25]), Err(DecodeError::Length));
    assert!(invalid(&header(5, 0, 0)), "empty with a window");
    assert!(invalid(&header(0, 0, 5)), "empty with a head");
    assert!(
        invalid(&with_counters(header(100, 0x1_0000_0000, 40), &[1; 4])),
        "slices over the maximum"
    );
    assert!(
        invalid(&with_counters(header(3, 4, 0), &[0, 0, 0, 0, 1])),
        "window shorter than the slices"
    );
    assert!(
        invalid(&with_counters(
            header(MAX_DURATION.get() + 1, 4, 9),
            &[1; 5]
        )),
        "window too long"
    );
    assert!(
        invalid(&with_counters(header(8, 4, u64::MAX), &[1; 5])),
        "head past the end of time"
    );
    assert_eq!(
        SliceState::decode(&with_counters(header(100, 4, 40), &[1; 4])),
        Err(DecodeError::Length),
        "one counter short"
    );
    assert_eq!(
        SliceState::decode(&with_counters(header(100, 4, 40), &[1; 6])),
        Err(DecodeError::Length),
        "one counter too many"
    );
    // A count claiming a million counters with a short payload is refused
    // before anything is allocated for them.
    assert_eq!(
        SliceState::decode(&with_counters(
            header(MAX_DURATION.get(), MAX_SLICES, 40),
            &[1; 3]
        )),
        Err(DecodeError::Length)
    );
    assert!(
        invalid(&with_counters(header(100, 4, 40), &[0; 5])),
        "no unit"
    );
    assert!(
        invalid(&with_counters(header(100, 4, 40), &[1, 0, 0, 0, 0])),
        "empty head slice"
    );
    assert!(
        invalid(&with_counters(header(100, 4, 40), &[u32::MAX, 0, 0, 0, 1])),
        "total too large"
    );
    assert!(
        invalid(&with_counters(header(100, 4, 2), &[0, 1, 0, 0, 1])),
        "unit before the epoch"
    );
    assert!(SliceState::decode(&with_counters(header(100, 4, 2), &[0, 0, 1, 0, 1])).is_ok());
}

#[test]
fn memory_is_fixed_and_small() {
    assert_eq!(
        SliceState::new().mem_usage(),
        std::mem::size_of::<SliceState>()
    );
    // The geometry, the head, the total and the head's counter (two
    // u32 in one word), the ring's pointer and length, the oldest slice,
    // the block's end: still one 64-byte allocation.
    assert_eq!(std::mem::size_of::<SliceState>(), 64);
    for slices in [6, 60, 3_600] {
        let p = params(1_000_000, 3_600 * 1_000 * MS, slices);
        let mut state = SliceState::new();
        for i in 0..10_000u64 {
            call(&mut state, i * 997 * MS, &p, 1);
        }
        let bound = 8 * slices as usize + 100;
        assert!(
            state.mem_usage() <= bound,
            "{slices} slices: {} > {bound}",
            state.mem_usage()
        );
    }
}
