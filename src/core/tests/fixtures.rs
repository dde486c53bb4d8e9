//! The saved formats, pinned byte for byte.
//!
//! Each type's encoding (`Kind::encode`) is what RDB saves (as one
//! string buffer, under the type's `Kind::ENCODING_VERSION`) and
//! what an AOF rewrite sends as the argument of `RL.STATE`, after the
//! type's tag. Saved files must keep loading, so a change of these bytes is
//! a change of format: it needs a new encoding version and tag, and a
//! decoder for the old one (`Kind::decode_legacy`), whose fixtures stay
//! here. Each fixture is a state with a known content, built here through
//! `decide` and `apply` at fixed instants: decoding the fixture gives that
//! state (equal, and answering the same at a fixed instant), and encoding
//! the state gives the fixture again (for an old format: today's fixture
//! of the same state). Fixed-width integers are little-endian; varints are
//! unsigned LEB128 (`codec::Writer::varint`).

use crate::core::slice::{SliceParams, SliceState};
use crate::core::slide::{SlideParams, SlideState, V1_TAG};
use crate::core::throttle::{ThrottleParams, ThrottleState};
use crate::core::{Kind, Nanos, Retry, TimeUnit};

const S: u64 = 1_000_000_000;
/// 2023-11-14T22:13:20Z, in ns.
const NOW: u64 = 1_700_000_000 * S;

/// Runs requests `(at, quantity)` on an empty state; each must be allowed.
fn built<L: Kind>(params: &L::Params, requests: &[(u64, u64)]) -> L {
    let mut state = L::default();
    for &(at, quantity) in requests {
        let (decision, update) = state.decide(Nanos::new(at), params, quantity);
        assert!(!decision.limited, "request at {at} allowed");
        state.apply(update.expect("an allowed request takes units"));
    }
    state
}

/// Checks both directions: `fixture` decodes to `state`, which encodes to
/// `fixture`.
fn pinned<L: Kind + PartialEq + std::fmt::Debug>(fixture: &[u8], state: &L) -> L {
    assert_eq!(state.encode(), fixture, "encoding changed");
    let decoded = L::decode(fixture).expect("the fixture decodes");
    assert_eq!(&decoded, state);
    decoded
}

/// THROTTLE, 3 per second with burst 2, after one unit at `NOW`: the TAT
/// is `NOW` + 333,333,333⅓ ns, stored as whole ns, fraction, denominator.
#[rustfmt::skip]
const TAT: [u8; 16] = [
    // whole ns: 1_700_000_000_333_333_333, u64
    0x55, 0x43, 0x08, 0x4a, 0xfe, 0x9c, 0x97, 0x17,
    // fraction: 1, u32
    0x01, 0x00, 0x00, 0x00,
    // denominator: 3 (the count it was written with), u32
    0x03, 0x00, 0x00, 0x00,
];

#[test]
fn throttle_fixture() {
    let p = ThrottleParams::new(2, 3, Nanos::new(S)).unwrap();
    let state: ThrottleState = built(&p, &[(NOW, 1)]);
    let tat = pinned(&TAT, &state);
    // What it holds, seen from NOW: two of three units left, full again
    // after a third of a second, rounded up.
    let (peek, _) = tat.decide(Nanos::new(NOW), &p, 0);
    assert_eq!(
        peek.reply(Nanos::new(NOW), TimeUnit::Millis),
        [0, 3, 2, -1, 334]
    );
    assert_eq!(peek.reset_at, Nanos::new(NOW + 333_333_334));
    // Three more units fit a third of a second later, not a nanosecond
    // earlier: the fraction was read back.
    let (d, _) = tat.decide(Nanos::new(NOW), &p, 3);
    assert_eq!(d.retry, Retry::At(Nanos::new(NOW + 333_333_334)));
}

/// An empty TAT (a key never written: the epoch, as a fraction over 1).
#[test]
fn empty_throttle_fixture() {
    let empty = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
    pinned(&empty, &ThrottleState::default());
}

/// SLIDE in its first format (tag `L`, RDB encoding version 1), limit 5
/// in 10 s, after 2 units at `NOW` and 1 at `NOW` + 1.5 s: the number of
/// units, then one timestamp (ns) per unit, oldest first.
#[rustfmt::skip]
const SLIDE_V1: [u8; 32] = [
    // units: 3, u64
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // NOW, twice, u64
    0x00, 0x00, 0x2a, 0x36, 0xfe, 0x9c, 0x97, 0x17,
    0x00, 0x00, 0x2a, 0x36, 0xfe, 0x9c, 0x97, 0x17,
    // NOW + 1.5 s, u64
    0x00, 0x2f, 0x92, 0x8f, 0xfe, 0x9c, 0x97, 0x17,
];

/// The same state in today's format (tag `M`, RDB encoding version 2):
/// the number of entries, then per entry `(delta << 1) | counted`, delta in
/// µs since the previous entry (the first: since the epoch), then the
/// clock in ns after the first nanosecond of the newest entry's µs; all
/// varints. Two units in one µs are two entries.
#[rustfmt::skip]
const SLIDE: [u8; 16] = [
    // entries: 3
    0x03,
    // NOW: 1_700_000_000_000_000 µs << 1, not counted
    0x80, 0x80, 0xf2, 0x81, 0x83, 0x89, 0x85, 0x06,
    // NOW again: delta 0
    0x00,
    // NOW + 1.5 s: 1_500_000 µs << 1
    0xc0, 0x8d, 0xb7, 0x01,
    // the clock, NOW + 1.5 s: 999 ns after the first ns of that µs
    0xe7, 0x07,
];

/// The five fields the SLIDE fixture state answers.
fn check_slide_fixture(log: &SlideState, p: &SlideParams) {
    // Seen from NOW + 2 s: 3 units counted, the newest leaves at NOW +
    // 11.5 s; 3 more units need the oldest unit gone, at NOW + 10 s.
    let now = Nanos::new(NOW + 2 * S);
    let (d, _) = log.decide(now, p, 3);
    assert_eq!(d.reply(now, TimeUnit::Millis), [1, 5, 2, 8_000, 9_500]);
    assert_eq!(d.retry, Retry::At(Nanos::new(NOW + 10 * S)));
    // At NOW + 10 s the two units of NOW have both left.
    let (d, _) = log.decide(Nanos::new(NOW + 10 * S), p, 4);
    assert_eq!((d.limited, d.remaining), (false, 0));
}

#[test]
fn slide_fixture() {
    let p = SlideParams::new(5, Nanos::new(10 * S)).unwrap();
    let state: SlideState = built(&p, &[(NOW, 2), (NOW + 1_500_000_000, 1)]);
    let log = pinned(&SLIDE, &state);
    check_slide_fixture(&log, &p);
}

/// Files of the first release keep loading: the first format decodes to
/// the same state (its instants are whole µs, so rounding changes
/// nothing), which answers the same and is saved in today's format.
#[test]
fn slide_v1_fixture() {
    let p = SlideParams::new(5, Nanos::new(10 * S)).unwrap();
    let state: SlideState = built(&p, &[(NOW, 2), (NOW + 1_500_000_000, 1)]);
    let log = SlideState::decode_tagged(V1_TAG, &SLIDE_V1).expect("the first format decodes");
    assert_eq!(log, state);
    check_slide_fixture(&log, &p);
    assert_eq!(log.encode(), SLIDE);
}

#[test]
fn empty_slide_fixture() {
    pinned(&[0u8], &SlideState::default());
    assert_eq!(
        SlideState::decode_tagged(V1_TAG, &[0u8; 8]),
        Ok(SlideState::default())
    );
}

/// SLIDE with counted entries, limit 100 in 60 s: 40 units at `NOW` - 30
/// s (one entry, counted), 1 at `NOW`, 2 at `NOW` + 1 ns (kept at `NOW` +
/// 1 µs, two entries, at the clock, `NOW` + 1 ns).
#[rustfmt::skip]
const SLIDE_COUNTED: [u8; 17] = [
    // entries: 4
    0x04,
    // NOW - 30 s: 1_699_999_970_000_000 µs << 1 | 1 (counted), then 40 - 2
    0x81, 0xf2, 0xa3, 0xe5, 0x82, 0x89, 0x85, 0x06, 0x26,
    // NOW: 30_000_000 µs << 1
    0x80, 0x8e, 0xce, 0x1c,
    // NOW + 1 µs: 1 << 1, then the same instant again
    0x02, 0x00,
    // the clock, NOW + 1 ns: the first ns of that µs
    0x00,
];

#[test]
fn slide_counted_fixture() {
    let p = SlideParams::new(100, Nanos::new(60 * S)).unwrap();
    let state: SlideState = built(&p, &[(NOW - 30 * S, 40), (NOW, 1), (NOW + 1, 2)]);
    let log = pinned(&SLIDE_COUNTED, &state);
    // Seen from NOW + 10 s, 43 units counted; the newest leave at NOW +
    // 60 s + 1 ns (50,000.000001 ms, rounded up). 60 more need 3 gone: they
    // are among the 40, which leave at NOW + 30 s; 98 need 41 gone, the
    // 41st leaves at NOW + 60 s; 99 need 42 gone, the 42nd a ns later.
    let now = Nanos::new(NOW + 10 * S);
    for (quantity, retry_ms) in [(60, 20_000), (98, 50_000), (99, 50_001)] {
        let (d, _) = log.decide(now, &p, quantity);
        assert_eq!(
            d.reply(now, TimeUnit::Millis),
            [1, 100, 57, retry_ms, 50_001]
        );
    }
    // At NOW + 30 s the 40 have left.
    let (d, _) = log.decide(Nanos::new(NOW + 30 * S), &p, 97);
    assert_eq!((d.limited, d.remaining), (false, 0));
}

/// SLIDE spanning more than a narrow log holds (a wide log in memory; the
/// format is the same), limit 5 in ten years: 1 unit at `NOW` - 2 h, 3 at
/// `NOW` (one counted entry).
#[rustfmt::skip]
const SLIDE_WIDE: [u8; 17] = [
    // entries: 2
    0x02,
    // NOW - 2 h: 1_699_992_800_000_000 µs << 1
    0x80, 0xe0, 0xb7, 0xaf, 0xcd, 0x88, 0x85, 0x06,
    // NOW: 7_200_000_000 µs << 1 | 1, then 3 - 2
    0x81, 0xa0, 0xba, 0xd2, 0x35, 0x01,
    // the clock, NOW: 999 ns after the first ns of its µs
    0xe7, 0x07,
];

#[test]
fn slide_wide_fixture() {
    let years = 315_360_000 * S;
    let p = SlideParams::new(5, Nanos::new(years)).unwrap();
    let state: SlideState = built(&p, &[(NOW - 7_200 * S, 1), (NOW, 3)]);
    assert!(state.is_wide());
    let log = pinned(&SLIDE_WIDE, &state);
    assert!(log.is_wide());
    // 2 more units need the oldest gone: ten years after NOW - 2 h.
    let now = Nanos::new(NOW);
    let (d, _) = log.decide(now, &p, 2);
    assert_eq!(
        d.reply(now, TimeUnit::Seconds),
        [1, 5, 1, 315_360_000 - 7_200, 315_360_000]
    );
}

/// SLICE, limit 10 in 60 s in 4 slices of 15 s. `NOW` is 5 s into slice
/// h = 113,333,333; 1 unit was recorded in slice h - 3, 2 in h - 1, 3 in
/// h. Window, slice count, head (u64 each), then the 5 counters (u32
/// each) of slices h - 4 ..= h, oldest first (in memory the ring holds
/// slice j at j mod 5, so the head sits at position 3: the encoding is not
/// the memory layout).
#[rustfmt::skip]
const SLICE: [u8; 44] = [
    // window: 60 s in ns, u64
    0x00, 0x58, 0x47, 0xf8, 0x0d, 0x00, 0x00, 0x00,
    // slices: 4, u64
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // head: slice 113_333_333, u64
    0x55, 0x54, 0xc1, 0x06, 0x00, 0x00, 0x00, 0x00,
    // counters of slices h - 4, h - 3, h - 2, h - 1, h: 0, 1, 0, 2, 3, u32
    0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00,
];

#[test]
fn slice_fixture() {
    let p = SliceParams::new(10, Nanos::new(60 * S), 4).unwrap();
    let requests = [(NOW - 49 * S, 1), (NOW - 18 * S, 2), (NOW, 3)];
    let state: SliceState = built(&p, &requests);
    let window = pinned(&SLICE, &state);
    // Seen from NOW: 6 counted; the head slice stops being counted when
    // slice h + 5 starts, 70 s later; 5 more units need slice h - 3 gone,
    // when slice h + 2 starts, 25 s later.
    let now = Nanos::new(NOW);
    let (d, _) = window.decide(now, &p, 5);
    assert_eq!(d.reply(now, TimeUnit::Millis), [1, 10, 4, 25_000, 70_000]);
    // 7 more units need slices h - 3 and h - 1 gone: 55 s later.
    let (d, _) = window.decide(now, &p, 7);
    assert_eq!(d.reply(now, TimeUnit::Seconds), [1, 10, 4, 55, 70]);
}

#[test]
fn empty_slice_fixture() {
    pinned(&[0u8; 24], &SliceState::new());
}
