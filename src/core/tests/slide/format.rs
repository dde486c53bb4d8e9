//! RL.SLIDE's saved formats: today's (tag `M`) byte by byte, with and
//! without PRECISION's last field, what its decoder refuses, and the first
//! format (tag `L`), still read.

use std::iter;

use super::{params, request, MS, S};
use crate::core::codec::Writer;
use crate::core::slide::{first_ns_of, SlideState, MAX_LIMIT, MAX_MICROS, MAX_UNITS, V1_TAG};
use crate::core::{DecodeError, Kind, Nanos};

/// Encodes entries `(instant µs, count)` and a clock (ns) as `encode`
/// does, from the layout in its doc.
fn v2_at(entries: &[(u64, u64)], clock: u64) -> Vec<u8> {
    let mut w = Writer::default();
    w.varint(entries.len() as u64);
    let mut previous = 0;
    for &(t, count) in entries {
        w.varint(((t - previous) << 1) | u64::from(count > 1));
        if count > 1 {
            w.varint(count - 2);
        }
        previous = t;
    }
    if !entries.is_empty() {
        w.varint(clock - first_ns_of(previous));
    }
    w.into_bytes()
}

/// As `v2_at`, the clock at the first nanosecond of the newest entry.
pub(super) fn v2(entries: &[(u64, u64)]) -> Vec<u8> {
    let clock = entries.last().map_or(0, |&(t, _)| first_ns_of(t));
    v2_at(entries, clock)
}

fn v1(words: &[u64]) -> Vec<u8> {
    let mut w = Writer::default();
    for &word in words {
        w.u64(word);
    }
    w.into_bytes()
}

#[test]
fn the_encoding_is_the_documented_layout() {
    let p = params(100, 60 * S);
    let mut log = SlideState::default();
    request(&mut log, Nanos::new(1_000_000), &p, 1);
    request(&mut log, Nanos::new(1_000_001), &p, 3);
    request(&mut log, Nanos::new(1_300_000), &p, 1);
    assert_eq!(log.entry_list(), [(1_000, 1), (1_001, 3), (1_300, 1)]);
    let bytes = log.encode();
    assert_eq!(bytes, v2_at(&log.entry_list(), 1_300_000));
    // 3 entries; 1,000 << 1 (2 bytes); 1 << 1 | 1, then 3 - 2; 299 << 1;
    // the clock, 1,300,000 ns, 999 ns after 1,299,001.
    assert_eq!(bytes, [3, 0xd0, 0x0f, 0x03, 0x01, 0xd6, 0x04, 0xe7, 0x07]);
    assert_eq!(SlideState::decode(&[0]), Ok(SlideState::default()));
    assert_eq!(SlideState::default().encode(), [0]);
}

/// The encoding of a log whose entries joined units: the layout of
/// entries and clock, then the newest entry's first unit.
#[test]
fn the_encoding_with_precision_is_the_documented_layout() {
    let p = params(100, 60 * S)
        .with_precision(Nanos::new(MS))
        .expect("valid");
    let mut log = SlideState::default();
    request(&mut log, Nanos::new(1_000_000), &p, 1);
    request(&mut log, Nanos::new(1_300_000), &p, 1);
    request(&mut log, Nanos::new(1_900_000), &p, 1);
    assert_eq!(log.entry_list(), [(1_900, 3)]);
    let bytes = log.encode();
    let mut expected = v2_at(&[(1_900, 3)], 1_900_000);
    // The first unit, 900 µs before the entry's instant (1,000 µs).
    expected.extend([0x84, 0x07]);
    assert_eq!(bytes, expected);
    // 1 entry; 1,900 << 1 | 1 (2 bytes), then 3 - 2; the clock, 999 ns
    // after 1,899,001; 900.
    assert_eq!(bytes, [1, 0xd9, 0x1d, 0x01, 0xe7, 0x07, 0x84, 0x07]);
    // Refused: a first unit after the entry, or where it cannot be.
    let mut after = v2_at(&[(1_900, 3)], 1_900_000);
    after.extend([0xed, 0x0e]);
    assert!(SlideState::decode(&after).is_err());
    let mut single = v2_at(&[(5, 1), (1_900, 1)], 1_900_000);
    single.push(3);
    assert!(SlideState::decode(&single).is_err());
    let mut before_previous = v2_at(&[(5, 2), (1_900, 3)], 1_900_000);
    before_previous.extend([0xed, 0x0e]);
    assert!(SlideState::decode(&before_previous).is_err());
    // Without joined units the field may be 0 only, and needs a
    // counted entry.
    let mut no_counts = v2_at(&[(5, 1), (1_900, 1)], 1_900_000);
    no_counts.push(0);
    assert!(SlideState::decode(&no_counts).is_err());
}

#[test]
fn decode_rejects_malformed_payloads() {
    let good = v2(&[(5, 1), (5, 1), (9, 3)]);
    assert!(SlideState::decode(&good).is_ok());
    assert_eq!(SlideState::decode(&[]), Err(DecodeError::Length));
    for cut in 1..good.len() {
        assert_eq!(
            SlideState::decode(&good[..cut]),
            Err(DecodeError::Length),
            "cut {cut}"
        );
    }
    // One more varint is PRECISION's first unit; two are too many.
    let mut trailing = good.clone();
    trailing.extend([0, 0]);
    assert_eq!(SlideState::decode(&trailing), Err(DecodeError::Length));
    let invalid = |bytes: &[u8]| matches!(SlideState::decode(bytes), Err(DecodeError::Invalid(_)));
    // More units than a log holds (RL.CHARGE's debts may pass the limit,
    // never MAX_UNITS), or more entries than any limit.
    assert!(invalid(&v2(&[(1, MAX_UNITS + 1)])));
    assert!(invalid(&v2(&[(1, MAX_UNITS), (2, 1)])));
    assert!(SlideState::decode(&v2(&[(1, MAX_UNITS - 1), (2, 1)])).is_ok());
    let mut w = Writer::default();
    w.varint(MAX_LIMIT + 1);
    assert!(invalid(&w.into_bytes()));
    // A count the bytes do not back is refused before anything is reserved.
    let mut w = Writer::default();
    w.varint(MAX_LIMIT).varint(2).varint(2);
    assert_eq!(
        SlideState::decode(&w.into_bytes()),
        Err(DecodeError::Length)
    );
    // Instants past the end of time.
    assert!(invalid(&v2(&[(MAX_MICROS + 1, 1)])));
    assert!(SlideState::decode(&v2(&[(MAX_MICROS, 1)])).is_ok());
    let mut w = Writer::default();
    w.varint(2).varint(MAX_MICROS << 1).varint(2);
    assert!(invalid(&w.into_bytes()));
    let mut w = Writer::default();
    w.varint(1).varint(u64::MAX).varint(u64::MAX);
    assert!(invalid(&w.into_bytes()));
    // A count varint in a longer form than needed.
    assert!(invalid(&[1, 0x03, 0x80, 0x00, 0x00]));
    // A clock past the end of time; the last one.
    let last = v2_at(&[(MAX_MICROS, 1)], u64::MAX);
    assert_eq!(SlideState::decode(&last).map(|l| l.clock()), Ok(Nanos::MAX));
    let mut past = v2(&[(MAX_MICROS, 1)]);
    past.pop();
    let mut w = Writer::default();
    w.varint(u64::MAX - first_ns_of(MAX_MICROS) + 1);
    past.extend(w.into_bytes());
    assert!(invalid(&past));
}

#[test]
fn the_first_format_still_decodes() {
    // 3 units: 1,500 ns, twice 2,000 ns; then 7 units at 1 s.
    let mut words = vec![10, 1_500, 2_000, 2_000];
    words.extend(iter::repeat_n(S, 7));
    let log = SlideState::decode_tagged(V1_TAG, &v1(&words)).expect("decodes");
    // Rounded up: three units in the 2nd µs, one entry; seven at 1 s.
    assert_eq!(log.entry_list(), [(2, 3), (1_000_000, 7)]);
    assert_eq!(
        log.units_ns(),
        [2_000, 2_000, 2_000]
            .into_iter()
            .chain(iter::repeat_n(S, 7))
            .collect::<Vec<_>>()
    );
    // The same as recording them today.
    let p = params(10, 10 * S);
    let mut today = SlideState::default();
    for (at, q) in [(1_500, 1), (2_000, 2), (S, 7)] {
        request(&mut today, Nanos::new(at), &p, q);
    }
    assert_eq!(log, today);
    // Two units in one µs stay two entries.
    let log = SlideState::decode_legacy(V1_TAG, &v1(&[2, 999, 1_000])).unwrap();
    assert_eq!(log.entry_list(), [(1, 1), (1, 1)]);
}

#[test]
fn the_first_format_is_validated_as_it_always_was() {
    let decode = |bytes: &[u8]| SlideState::decode_legacy(V1_TAG, bytes);
    let good = v1(&[3, 5, 5, 9]);
    assert!(decode(&good).is_ok());
    assert_eq!(decode(&[]), Err(DecodeError::Length));
    for cut in 1..good.len() {
        assert_eq!(decode(&good[..cut]), Err(DecodeError::Length), "cut {cut}");
    }
    let mut trailing = good.clone();
    trailing.push(0);
    assert_eq!(decode(&trailing), Err(DecodeError::Length));
    assert_eq!(
        decode(&v1(&[3, 5, 9, 7])),
        Err(DecodeError::Invalid("slide log timestamps decrease"))
    );
    assert!(matches!(
        decode(&v1(&[MAX_LIMIT + 1])),
        Err(DecodeError::Invalid(_))
    ));
    assert!(matches!(
        decode(&v1(&[u64::MAX, 1])),
        Err(DecodeError::Invalid(_))
    ));
    // A count the bytes do not back is refused before anything is reserved.
    assert_eq!(decode(&v1(&[MAX_LIMIT, 1, 2])), Err(DecodeError::Length));
    assert_eq!(decode(&v1(&[0])), Ok(SlideState::default()));
    // The last nanoseconds round up to the last microsecond.
    let log = decode(&v1(&[2, u64::MAX - 1, u64::MAX])).unwrap();
    assert_eq!(log.entry_list(), [(MAX_MICROS, 1), (MAX_MICROS, 1)]);
    // Other tags are not this type's.
    assert!(SlideState::decode_tagged(b'G', &good).is_err());
    assert!(SlideState::decode_legacy(b'M', &good).is_err());
}
