//! RL.SLIDE's decisions: a table of calls, the module doc's worked
//! example, the rounding to the microsecond, the extremes, what a unit
//! costs in memory, counted entries, refunds, narrow and wide rings, and
//! PRECISION's grouping.

use std::mem;

use super::{ms, params, request, MS, S, US};
use crate::core::slide::times::TAIL;
use crate::core::slide::{
    SlideParams, SlideState, SlideUpdate, MAX_LIMIT, MAX_MICROS, PRECISION_RULE,
};
use crate::core::{Kind, Nanos, ParamError, Retry, TimeUnit, MAX_DURATION};

#[test]
fn params_are_validated() {
    assert!(SlideParams::new(0, ms(1)).is_none());
    assert!(SlideParams::new(MAX_LIMIT + 1, ms(1)).is_none());
    assert!(SlideParams::new(1, Nanos::ZERO).is_none());
    assert!(SlideParams::new(1, MAX_DURATION.saturating_add(Nanos::new(1))).is_none());
    let p = SlideParams::new(MAX_LIMIT, MAX_DURATION).expect("extremes are valid");
    assert_eq!((p.limit(), p.window()), (MAX_LIMIT, MAX_DURATION));
    let p = SlideParams::new(1, Nanos::new(1)).expect("extremes are valid");
    assert_eq!((p.limit(), p.window()), (1, Nanos::new(1)));
}

/// at, limit, window_ms, quantity, limited, remaining, retry_after_ms, reset_after_ms
type Row = (Nanos, u64, u64, u64, i64, i64, i64, i64);

#[test]
fn table() {
    // One log, requests in order; times in ms unless noted.
    // at (ns), limit, window_ms, quantity => limited, remaining, retry_after_ms, reset_after_ms
    #[rustfmt::skip]
    let cases: &[Row] = &[
        // an empty log: peek, then one unit
        (ms(0),    3, 1000, 0,    0, 3, -1,    0),
        (ms(0),    3, 1000, 1,    0, 2, -1, 1000),
        // quantity > 1 fills the log: [0, 100, 100]
        (ms(100),  3, 1000, 2,    0, 0, -1, 1000),
        // full: the entry at 0 leaves at 1000
        (ms(500),  3, 1000, 1,    1, 0, 500,  600),
        // two must leave: the second entry (100) leaves at 1100
        (ms(500),  3, 1000, 2,    1, 0, 600,  600),
        // quantity > limit never fits
        (ms(500),  3, 1000, 4,    1, 0, -1,   600),
        // a peek on a full log is allowed and changes nothing
        (ms(500),  3, 1000, 0,    0, 0, -1,   600),
        // window edge: the entry at 0 is counted 1 ns before 1000 ...
        (Nanos::new(1000 * MS - 1), 3, 1000, 1,   1, 0, 1, 101),
        // ... and has left at 1000: [100, 100, 1000]
        (ms(1000), 3, 1000, 1,    0, 0, -1, 1000),
        // the limit lowered to 2: 3 counted, a peek is limited until 1100
        (ms(1050), 2, 1000, 0,    1, 0, 50,   950),
        // one unit needs two to leave: both at 100 leave at 1100
        (ms(1050), 2, 1000, 1,    1, 0, 50,   950),
        // at 1100 they have: [1000, 1100]
        (ms(1100), 2, 1000, 1,    0, 0, -1, 1000),
        // the clock goes back to 900: read at 1100, the entry at 1000 leaves at 2000
        (ms(900),  2, 1000, 1,    1, 0, 1100, 1200),
        // limit 3, still at 900: allowed, recorded at 1100, not at 900
        (ms(900),  3, 1000, 1,    0, 0, -1, 1200),
        // at 2050 the entries at 1100 are still counted (900 would have left)
        (ms(2050), 3, 1000, 1,    0, 0, -1, 1000),
        // long after: nothing counted
        (ms(9000), 3, 1000, 0,    0, 3, -1,    0),
    ];
    let mut log = SlideState::default();
    for (row, &(at, limit, window_ms, quantity, limited, remaining, retry, reset)) in
        cases.iter().enumerate()
    {
        let p = params(limit, window_ms * MS);
        let reply = request(&mut log, at, &p, quantity).reply(at, TimeUnit::Millis);
        let expected = [limited, limit as i64, remaining, retry, reset];
        assert_eq!(reply, expected, "row {row}");
    }
    // The request at 2050 dropped the entry at 1000, which had left;
    // limited requests and peeks recorded nothing.
    let expected: Vec<u64> = [1100, 1100, 2050].map(|m| m * MS).to_vec();
    assert_eq!(log.units_ns(), expected);
}

#[test]
fn worked_example_of_the_module_doc() {
    let s = |n: u64| Nanos::new(n * S);
    let p = SlideParams::new(3, s(10)).expect("valid");
    let mut log = SlideState::default();
    let seconds =
        |log: &mut SlideState, at, q| request(log, at, &p, q).reply(at, TimeUnit::Seconds);
    assert_eq!(seconds(&mut log, s(0), 1), [0, 3, 2, -1, 10]);
    assert_eq!(seconds(&mut log, s(4), 2), [0, 3, 0, -1, 10]);
    assert_eq!(seconds(&mut log, s(7), 1), [1, 3, 0, 3, 7]);
    assert_eq!(seconds(&mut log, s(12), 2), [1, 3, 1, 2, 2]);
}

/// Units are kept at their instant rounded up to the microsecond: they
/// leave at most 1 µs late, never early; those of the clock's
/// microsecond leave a window after the clock, exactly.
#[test]
fn instants_round_up_to_the_microsecond() {
    let p = params(3, 10 * US);
    let mut log = SlideState::default();
    // Recorded at 1,001 ns, kept at 2 µs, but at the clock (1,001 ns):
    // it leaves exactly a window later.
    let d = request(&mut log, Nanos::new(1_001), &p, 1);
    assert_eq!(d.reset_at, Nanos::new(11_001));
    assert_eq!(log.units_ns(), [2 * US]);
    // Another at 1,500 ns: the clock moves, both leave at 11,500 ns.
    let d = request(&mut log, Nanos::new(1_500), &p, 1);
    assert_eq!(d.reset_at, Nanos::new(11_500));
    assert_eq!(log.units_ns(), [2 * US, 2 * US]);
    let d = request(&mut log, Nanos::new(1_600), &p, 0);
    assert_eq!(d.reset_at, Nanos::new(11_500));
    // A third at 3 µs: the clock leaves their microsecond, so they
    // leave at its end, 12 µs (999 and 500 ns late).
    request(&mut log, Nanos::new(3 * US), &p, 1);
    let d = request(&mut log, Nanos::new(11_999), &p, 1);
    assert_eq!(d.retry, Retry::At(Nanos::new(12 * US)));
    let d = request(&mut log, Nanos::new(12 * US), &p, 2);
    assert!(!d.limited);
    assert_eq!(log.units_ns(), [3 * US, 12 * US, 12 * US]);
    // The clock goes back to 0: read at the log's clock, 12 µs; two
    // must leave, the second at 12 µs + 10 µs.
    let d = request(&mut log, Nanos::ZERO, &p, 2);
    assert_eq!(d.reply(Nanos::ZERO, TimeUnit::Millis), [1, 3, 0, 1, 1]);
    assert_eq!(d.retry, Retry::At(Nanos::new(22 * US)));
}

#[test]
fn decide_never_panics_at_the_extremes() {
    let p = SlideParams::new(MAX_LIMIT, MAX_DURATION).expect("valid");
    let one = SlideParams::new(1, Nanos::new(1)).expect("valid");
    let mut log = SlideState::default();
    for now in [Nanos::ZERO, Nanos::new(1), Nanos::MAX] {
        for quantity in [0, 1, MAX_LIMIT, MAX_LIMIT + 1, u64::MAX] {
            let _ = log.decide(now, &p, quantity);
            let _ = log.decide(now, &one, quantity);
        }
    }
    let d = request(&mut log, Nanos::MAX, &one, 1);
    assert_eq!(d.reset_at, Nanos::MAX);
    let d = request(&mut log, Nanos::ZERO, &one, 1);
    assert_eq!(d.retry, Retry::At(Nanos::MAX));
    assert_eq!(log.len(), 1);
    assert_eq!(log.entry_list(), [(MAX_MICROS, 1)]);
    assert_eq!(SlideState::decode(&log.encode()), Ok(log));
}

#[test]
fn a_new_log_allocates_nothing() {
    let log = SlideState::default();
    assert_eq!(log.capacity(), 0);
    assert!(log.is_empty());
    assert_eq!(log.mem_usage(), mem::size_of::<SlideState>());
    assert_eq!(log, SlideState::default());
    // The ring (40 bytes with its base), the tail (two offsets from that
    // base), the side table's pointer, the clock, the block's end: one
    // word past a cache line (docs/DESIGN.md#block).
    assert_eq!(mem::size_of::<SlideState>(), 72);
    assert!(mem::size_of::<SlideUpdate>() <= 40);
}

/// One unit per microsecond, one call each: at most 4.25 bytes a unit
/// and the struct, at 1,000 and at 100,000 units.
#[test]
fn a_log_costs_four_bytes_and_a_quarter_per_unit() {
    let p = params(1_000_000, 3_600 * S);
    for n in [1_000u64, 100_000] {
        let mut log = SlideState::default();
        let start = 1_700_000_000 * S;
        for i in 0..n {
            assert!(!request(&mut log, Nanos::new(start + i * US + 1), &p, 1).limited);
        }
        assert_eq!((log.len() as u64, log.entries() as u64), (n, n));
        assert!(!log.is_wide());
        let bytes = log.mem_usage() - mem::size_of::<SlideState>();
        assert!(bytes as u64 <= 4 * n + n / 4 + 16, "{n}: {bytes}");
        assert!(log.capacity() as u64 <= n + n / 16 + 4);
    }
}

/// Units in one microsecond: two are two entries, three or more one
/// counted entry, which later units of that microsecond join.
#[test]
fn units_of_one_microsecond_share_an_entry_from_three_on() {
    let p = params(1_000_000, 60 * S);
    let mut log = SlideState::default();
    let t = 5 * S;
    request(&mut log, Nanos::new(t), &p, 1);
    request(&mut log, Nanos::new(t), &p, 1);
    assert_eq!(log.entry_list(), [(t / US, 1), (t / US, 1)]);
    request(&mut log, Nanos::new(t), &p, 1);
    assert_eq!(log.entry_list(), [(t / US, 3)]);
    request(&mut log, Nanos::new(t + 1), &p, 1); // same µs, rounded up
    assert_eq!(log.entry_list(), [(t / US, 3), (t / US + 1, 1)]);
    request(&mut log, Nanos::new(t + 1_000), &p, 2);
    assert_eq!(log.entry_list(), [(t / US, 3), (t / US + 1, 3)]);
    request(&mut log, Nanos::new(t + 1_000), &p, 5);
    assert_eq!(log.entry_list(), [(t / US, 3), (t / US + 1, 8)]);
    // A million units in one request: one entry.
    request(&mut log, Nanos::new(t + 2_000), &p, 999_000);
    assert_eq!(log.entries(), 3);
    assert_eq!(log.len(), 999_011);
    assert!(log.mem_usage() < 200, "{}", log.mem_usage());
    assert_eq!(SlideState::decode(&log.encode()), Ok(log.clone()));
    // Ranks across counted entries: 999,011 units held, limit 1,000,000.
    let d = request(&mut log, Nanos::new(t + 3_000), &p, 989);
    assert!(!d.limited);
    // Needing 1, 3, 4, 11, 12 units to leave: the entries at t (3
    // units), t + 1 µs (8 units), t + 2 µs.
    for (quantity, leaves) in [(1, t), (3, t), (4, t + US), (11, t + US), (12, t + 2 * US)] {
        let (d, _) = log.decide(Nanos::new(t + 3_000), &p, quantity);
        assert_eq!(
            d.retry,
            Retry::At(Nanos::new(leaves + 60 * S)),
            "{quantity}"
        );
    }
}

/// A refund removes the newest units, splitting a counted entry.
#[test]
fn refunds_take_from_the_newest_entries() {
    let p = params(100, 60 * S);
    let mut log = SlideState::default();
    let t = 7 * S;
    request(&mut log, Nanos::new(t), &p, 4);
    request(&mut log, Nanos::new(t + US), &p, 1);
    request(&mut log, Nanos::new(t + 2 * US), &p, 5);
    assert_eq!(
        log.entry_list(),
        [(7_000_000, 4), (7_000_001, 1), (7_000_002, 5)]
    );
    log.refund(Nanos::new(t + 2 * US), &p, 3);
    assert_eq!(
        log.entry_list(),
        [(7_000_000, 4), (7_000_001, 1), (7_000_002, 2)]
    );
    log.refund(Nanos::new(t + 2 * US), &p, 1);
    assert_eq!(
        log.entry_list(),
        [(7_000_000, 4), (7_000_001, 1), (7_000_002, 1)]
    );
    assert_eq!(log.counted_entries(), Some(1));
    log.refund(Nanos::new(t + 2 * US), &p, 4);
    assert_eq!(log.entry_list(), [(7_000_000, 2)]);
    log.refund(Nanos::new(t + 2 * US), &p, 1);
    assert_eq!(log.entry_list(), [(7_000_000, 1)]);
    assert!(log.counted_entries().is_none());
    log.refund(Nanos::new(t + 2 * US), &p, 10);
    assert_eq!(log, SlideState::default());
}

/// A window of an hour with steady traffic stays narrow: the log
/// rebases on its oldest entry when the newest no longer fits.
#[test]
fn an_hour_long_window_stays_narrow() {
    let window = 3_600 * S;
    let p = params(10_000, window);
    let mut log = SlideState::default();
    let start = 1_700_000_000 * S + 123;
    let mut rebases = 0;
    let mut base = None;
    // One unit every 2 s for five hours: 1,800 units held at most.
    for i in 0..9_000u64 {
        let now = Nanos::new(start + i * 2 * S);
        assert!(!request(&mut log, now, &p, 1).limited, "{i}");
        assert!(!log.is_wide(), "{i}");
        let Some(b) = log.narrow_base() else {
            unreachable!()
        };
        if base.is_some_and(|old| old != b) {
            rebases += 1;
        }
        base = Some(b);
        // 1,800 units an hour, and the one recorded an hour ago, which
        // leaves 877 ns late (kept at 123 ns rounded up).
        assert!(log.len() <= 1_801);
    }
    // After the first 71 minutes, a rebase about every 71 - 60 = 11
    // minutes.
    assert!((20..=30).contains(&rebases), "{rebases}");
}

/// A span longer than a narrow log takes makes it wide; it turns
/// narrow again once the span is short, and answers stay exact.
#[test]
fn long_spans_make_the_log_wide_and_back() {
    let year = 365 * 24 * 3_600 * S;
    let p = params(10, 10 * year);
    let mut log = SlideState::default();
    let t0 = 1_700_000_000 * S + 1;
    request(&mut log, Nanos::new(t0), &p, 1);
    request(&mut log, Nanos::new(t0 + 5 * 60 * S), &p, 1);
    assert!(!log.is_wide());
    // Two hours later: span over 62 minutes.
    request(&mut log, Nanos::new(t0 + 2 * 3_600 * S), &p, 3);
    assert!(log.is_wide());
    request(&mut log, Nanos::new(t0 + year), &p, 1);
    assert!(log.is_wide());
    let (d, _) = log.decide(Nanos::new(t0 + year), &p, 10);
    assert_eq!(d.remaining, 4);
    // 3 must leave: the units at t0 and t0 + 5 min, and the first of
    // the 3 at 2 h, which leave together.
    let (d, _) = log.decide(Nanos::new(t0 + year), &p, 7);
    let leaves = (t0 + 2 * 3_600 * S).div_ceil(US) * US + 10 * year;
    assert_eq!(d.retry, Retry::At(Nanos::new(leaves)));
    // Under a window of an hour everything but the newest has left:
    // the next unit finds a short span and the log turns narrow.
    let hour = params(10, 3_600 * S);
    request(&mut log, Nanos::new(t0 + year + S), &hour, 1);
    assert!(!log.is_wide());
    let expected: Vec<u64> = [t0 + year, t0 + year + S]
        .map(|t| t.div_ceil(US) * US)
        .to_vec();
    assert_eq!(log.units_ns(), expected);
    assert_eq!(SlideState::decode(&log.encode()), Ok(log));
}

#[test]
fn the_ring_shrinks_when_traffic_drops() {
    let p = params(1_000, 10 * US);
    let mut log = SlideState::default();
    for i in 0..1_000 {
        request(&mut log, Nanos::new(1 + i % 999), &p, 1);
    }
    // 1,000 units in 1 µs: one counted entry.
    assert_eq!((log.len(), log.entries()), (1_000, 1));
    let mut log = SlideState::default();
    for i in 0..1_000 {
        request(&mut log, Nanos::new(i * US), &p, 1);
    }
    assert_eq!(log.entries(), 10);
    let mut log = SlideState::default();
    let wide = params(1_000, 10 * S);
    for i in 0..1_000 {
        request(&mut log, Nanos::new(i * US), &wide, 1);
    }
    assert_eq!(log.capacity(), 1_000);
    request(&mut log, Nanos::new(20 * S), &wide, 1);
    assert_eq!(log.len(), 1);
    assert!(log.capacity() <= 4, "{}", log.capacity());
}

/// With PRECISION, units join the newest entry while they arrive less
/// than `d` after its first unit; the entry moves to its last unit and
/// leaves a window after it.
#[test]
fn precision_joins_units_into_the_newest_entry() {
    // limit 5, window 10 s, PRECISION 3 s; times in ms.
    let p = params(5, 10 * S)
        .with_precision(Nanos::new(3 * S))
        .expect("valid");
    let mut log = SlideState::default();
    let at = |log: &mut SlideState, t: u64, q: u64| {
        request(log, ms(t), &p, q).reply(ms(t), TimeUnit::Millis)
    };
    assert_eq!(at(&mut log, 0, 1), [0, 5, 4, -1, 10_000]);
    // 2,999 ms after the first unit: joins, the entry moves to 2,999.
    assert_eq!(at(&mut log, 2_999, 2), [0, 5, 2, -1, 10_000]);
    assert_eq!(log.entry_list(), [(2_999_000, 3)]);
    // 3,000 ms after it: a new entry.
    assert_eq!(at(&mut log, 3_000, 1), [0, 5, 1, -1, 10_000]);
    assert_eq!(log.entry_list(), [(2_999_000, 3), (3_000_000, 1)]);
    // Full at 5,000: the first three leave at 12,999 (exactly: 10,000).
    assert_eq!(at(&mut log, 5_000, 2), [1, 5, 1, 7_999, 8_000]);
    // A unit a window after the first entry's last: it has left.
    assert_eq!(at(&mut log, 12_999, 3), [0, 5, 1, -1, 10_000]);
    assert_eq!(log.entry_list(), [(3_000_000, 1), (12_999_000, 3)]);
    // The newest entry's first unit survives a round trip.
    let bytes = log.encode();
    assert_eq!(SlideState::decode(&bytes), Ok(log.clone()));
    // 2,999 ms after 12,999 (the new entry's first unit): joins; the
    // entry at 3,000 has left.
    assert_eq!(at(&mut log, 15_998, 1), [0, 5, 1, -1, 10_000]);
    assert_eq!(log.entry_list(), [(15_998_000, 4)]);
}

/// The figure: limit 1,000,000, window an hour, PRECISION 36 s;
/// 100,000 units over a minute, in calls of 10 units every 6 ms: two
/// entries (at most 3), and a few hundred bytes at most.
#[test]
fn a_dense_key_with_precision_holds_few_entries() {
    let p = params(1_000_000, 3_600 * S)
        .with_precision(Nanos::new(36 * S))
        .expect("valid");
    let mut log = SlideState::default();
    let start = 1_700_000_000 * S;
    for i in 0..10_000 {
        assert!(!request(&mut log, Nanos::new(start + i * 6 * MS), &p, 10).limited);
    }
    assert_eq!(log.len(), 100_000);
    assert_eq!(log.entries(), 2);
    // The struct (the 2 entries in its tail, no ring), the side table
    // and 2 records.
    assert_eq!(log.mem_usage(), 72 + 56 + 2 * 8);
    // The exact log: an entry per call.
    let exact = params(1_000_000, 3_600 * S);
    let mut log = SlideState::default();
    for i in 0..10_000 {
        request(&mut log, Nanos::new(start + i * 6 * MS), &exact, 10);
    }
    assert_eq!(log.entries(), 10_000);
}

/// PRECISION's rule and range, from the command's values (ns).
#[test]
fn precision_is_at_most_the_window() {
    let p = SlideState::params(&numbers([5, 10 * S, 10 * S])).expect("d = window");
    assert_eq!(p.precision(), Nanos::new(10 * S));
    assert_eq!(
        SlideState::params(&numbers([5, 10 * S, 0])).map(|p| p.precision()),
        Ok(Nanos::ZERO)
    );
    assert_eq!(
        SlideState::params(&numbers([5, 10 * S, 10 * S + MS])),
        Err(ParamError::Joint(PRECISION_RULE))
    );
    assert!(params(5, 10 * S)
        .with_precision(Nanos::new(1_500))
        .is_none());
}

/// Parameter values as `Kind::params` receives them.
fn numbers<const N: usize>(values: [u64; N]) -> [crate::core::Value<'static>; N] {
    values.map(crate::core::Value::Number)
}

/// The newest entries stay in the struct, up to `TAIL` (2): a new log
/// allocates nothing for them; the next one moves them to the ring in one
/// batch and starts the tail again. The log answers the same.
#[test]
fn the_newest_entries_stay_in_the_struct_and_move_in_batches() {
    let p = params(100, 60 * S);
    let mut log = SlideState::default();
    let t = 1_700_000_000 * S;
    let at = |i: usize| Nanos::new(t + i as u64 * US);
    for i in 0..TAIL {
        request(&mut log, at(i), &p, 1);
    }
    assert_eq!(
        (log.entries(), log.in_tail(), log.capacity()),
        (TAIL, TAIL, 0)
    );
    assert_eq!(log.mem_usage(), mem::size_of::<SlideState>());
    let before = log.entry_list();
    request(&mut log, at(TAIL), &p, 1);
    assert_eq!((log.entries(), log.in_tail()), (TAIL + 1, 1));
    // The ring's planned capacity for TAIL entries: a power of two, 4 or
    // more.
    assert_eq!(log.capacity(), TAIL.next_power_of_two().max(4));
    assert_eq!(&log.entry_list()[..TAIL], &before[..]);
    let n = 2 * TAIL + 1;
    for i in TAIL + 1..n {
        request(&mut log, at(i), &p, 1);
    }
    assert_eq!((log.entries(), log.in_tail()), (n, 1));
    let expected: Vec<(u64, u64)> = (0..n as u64).map(|i| (t / US + i, 1)).collect();
    assert_eq!(log.entry_list(), expected);
    // 100 - n more fit; two more need the two oldest units gone.
    let held = n as u64;
    assert_eq!(log.decide(at(n), &p, 100 - held).0.remaining, 0);
    let (d, _) = log.decide(at(n), &p, 102 - held);
    assert_eq!(d.retry, Retry::At(Nanos::new(t + US + 60 * S)));
}

/// Expiry and refunds take entries across the boundary: from the tail
/// and the ring at once.
#[test]
fn expiry_and_refunds_cross_from_the_ring_to_the_tail() {
    let p = params(100, 100 * US);
    let mut log = SlideState::default();
    let t = 1_700_000_000 * S;
    let at = |i: usize| Nanos::new(t + i as u64 * US);
    // Entries at 0 .. n µs, two of them in the tail.
    let n = 3 * TAIL + 2;
    for i in 0..n {
        request(&mut log, at(i), &p, 1);
    }
    assert_eq!((log.entries(), log.in_tail()), (n, 2));
    // A refund of 3: the 2 of the tail, 1 of the ring.
    log.refund(at(n - 1), &p, 3);
    let kept = n - 3;
    assert_eq!((log.entries(), log.in_tail()), (kept, 0));
    let expected: Vec<(u64, u64)> = (0..kept as u64).map(|i| (t / US + i, 1)).collect();
    assert_eq!(log.entry_list(), expected);
    // The next TAIL entries, at n µs and after, fill the tail again.
    for i in n..n + TAIL {
        request(&mut log, at(i), &p, 1);
    }
    assert_eq!((log.entries(), log.in_tail()), (kept + TAIL, TAIL));
    // At n + 100 µs the entries up to n µs have left: the ring's and the
    // tail's first; TAIL - 1 are counted.
    let now = at(n + 100);
    let (d, _) = log.decide(now, &p, 0);
    assert_eq!(d.remaining, 100 - (TAIL as u64 - 1));
    request(&mut log, now, &p, 1);
    assert_eq!((log.entries(), log.in_tail()), (TAIL, TAIL));
    let expected: Vec<(u64, u64)> = (n + 1..n + TAIL)
        .chain([n + 100])
        .map(|i| (t / US + i as u64, 1))
        .collect();
    assert_eq!(log.entry_list(), expected);
    // Everything refunded: an empty log, as new.
    log.refund(now, &p, 100);
    assert_eq!(log, SlideState::default());
}

/// A counted entry keeps its count as it moves from the tail to the
/// ring, and a refund splits it there.
#[test]
fn counted_entries_move_to_the_ring_with_their_counts() {
    let p = params(100, 60 * S);
    let mut log = SlideState::default();
    let t = 1_700_000_000 * S;
    let at = |i: usize| Nanos::new(t + i as u64 * US);
    for i in 0..TAIL - 1 {
        request(&mut log, at(i), &p, 1);
    }
    request(&mut log, at(TAIL - 1), &p, 5);
    let units = TAIL + 4;
    assert_eq!(
        (log.entries(), log.in_tail(), log.len()),
        (TAIL, TAIL, units)
    );
    request(&mut log, at(TAIL), &p, 1);
    assert_eq!(
        (log.entries(), log.in_tail(), log.len()),
        (TAIL + 1, 1, units + 1)
    );
    assert_eq!(log.entry_list()[TAIL - 1], (t / US + TAIL as u64 - 1, 5));
    assert_eq!(log.counted_entries(), Some(1));
    // For 99 more, TAIL + 4 units must leave: the last is the counted
    // entry's last, in the ring.
    let (d, _) = log.decide(at(TAIL + 1), &p, 99);
    let leaves = t + (TAIL as u64 - 1) * US + 60 * S;
    assert_eq!(d.retry, Retry::At(Nanos::new(leaves)));
    // A refund of 3: the newest unit, and 2 of the counted entry's.
    log.refund(at(TAIL + 1), &p, 3);
    assert_eq!(log.len(), units - 2);
    assert_eq!(
        log.entry_list().last(),
        Some(&(t / US + TAIL as u64 - 1, 3))
    );
    assert_eq!(SlideState::decode(&log.encode()), Ok(log));
}

/// Decoding fills the ring, then the tail, as appending would: the ring
/// is allocated exactly for the entries before the tail.
#[test]
fn decoding_fills_the_ring_then_the_tail() {
    let p = params(100, 60 * S);
    let t = 1_700_000_000 * S;
    for n in [3, TAIL, TAIL + 1, 2 * TAIL + 3, 3 * TAIL + 1] {
        let mut log = SlideState::default();
        for i in 0..n as u64 {
            request(&mut log, Nanos::new(t + i * US), &p, 1);
        }
        let bytes = log.encode();
        let decoded = SlideState::decode(&bytes).expect("decodes");
        assert_eq!(decoded, log, "{n}");
        let in_tail = (n - 1) % TAIL + 1;
        assert_eq!(decoded.in_tail(), in_tail, "{n}");
        assert_eq!(decoded.capacity(), n - in_tail, "{n}");
        assert_eq!(decoded.encode(), bytes, "{n}");
    }
}

/// An entry more than 2^32 µs (71 minutes) after the ring's base goes
/// to the ring after the tail's entries, and the ring's modes handle the
/// long span; a wide ring keeps no tail, a narrow one starts it again.
#[test]
fn an_entry_out_of_the_bases_reach_goes_to_the_ring() {
    let year = 365 * 24 * 3_600 * S;
    let p = params(10, 10 * year);
    let mut log = SlideState::default();
    let t0 = 1_700_000_000 * S;
    request(&mut log, Nanos::new(t0), &p, 1);
    request(&mut log, Nanos::new(t0 + US), &p, 1);
    assert_eq!((log.entries(), log.in_tail()), (2, 2));
    let far = t0 + (1 << 32) * US;
    request(&mut log, Nanos::new(far), &p, 1);
    assert_eq!((log.entries(), log.in_tail()), (3, 0));
    assert!(log.is_wide());
    request(&mut log, Nanos::new(far + US), &p, 1);
    assert_eq!((log.entries(), log.in_tail()), (4, 0));
    let expected = [t0, t0 + US, far, far + US].map(|t| (t / US, 1));
    assert_eq!(log.entry_list(), expected);
    assert_eq!(SlideState::decode(&log.encode()), Ok(log.clone()));
    // Under a window of a minute the two old entries leave: the span is
    // short, the ring narrow again, and the next entry in the tail.
    let minute = params(10, 60 * S);
    request(&mut log, Nanos::new(far + 2 * US), &minute, 1);
    assert!(!log.is_wide());
    request(&mut log, Nanos::new(far + 3 * US), &minute, 1);
    assert_eq!((log.entries(), log.in_tail()), (4, 1));
    let expected = [far, far + US, far + 2 * US, far + 3 * US].map(|t| (t / US, 1));
    assert_eq!(log.entry_list(), expected);
}
