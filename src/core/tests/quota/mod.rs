//! RL.QUOTA: calendar periods in real zones, the decision on one key, the
//! change of unit or zone, and the saved format.
//!
//! - `periods_derived_by_hand`: each row's period was worked out on paper
//!   from the zone's published rules (offsets and the dates and local
//!   times of its changes), not from the code or from the crate.
//! - `period_matches_walking_model`: the code against `walk`, which
//!   finds boundaries by stepping through time and asking the zone's
//!   offset only (through jiff's TZif reader directly, not through
//!   `Zone`), with jiff's civil calendar deciding what is a unit start.
//! - `decide_refund_match_model`: the state machine against `Recorded`,
//!   which keeps every recording and recomputes each answer from the
//!   rules of `quota`'s module doc.

use jiff::civil::{DateTime, Weekday};
use jiff::tz::TimeZone;
use jiff::Timestamp;
use proptest::prelude::*;

use crate::core::quota::{
    period, CalendarUnit, QuotaParams, QuotaState, QuotaUpdate, Zone, MAX_PERIOD, MAX_USED,
};
use crate::core::{Decision, DecodeError, Detail, Nanos, Retry, TimeUnit};

const S: u64 = 1_000_000_000;

/// Unix seconds of an RFC 3339 instant, read by jiff.
fn unix(text: &str) -> i64 {
    text.parse::<Timestamp>()
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .as_second()
}

/// An RFC 3339 instant as `Nanos` (whole seconds).
fn at(text: &str) -> Nanos {
    Nanos::new(u64::try_from(unix(text)).unwrap() * S)
}

fn zone(name: &str) -> Zone {
    Zone::parse(name.as_bytes()).unwrap()
}

use CalendarUnit::{Day, Hour, Minute, Month, Week, Year};

// ---- The decision on one key ----

fn params(limit: u64, unit: CalendarUnit, name: &str) -> QuotaParams {
    QuotaParams {
        limit,
        unit,
        zone: zone(name),
        block: crate::core::block::Penalty::NONE,
    }
}

/// Runs a request on a key (the default: missing), storing what it
/// records.
fn run(key: &mut QuotaState, now: Nanos, p: &QuotaParams, quantity: u64) -> Decision {
    let (decision, update) = key.decide(now, p, quantity);
    if let Some(update) = update {
        key.apply(update);
    }
    decision
}

#[test]
fn table_of_requests_on_one_key() {
    // One key, requests in order. Columns: instant (UTC), limit, unit,
    // zone, quantity => limited, limit, remaining, retry_after (s),
    // reset_after (s). A refund row has quantity -n.
    type Case = (&'static str, u64, CalendarUnit, &'static str, i64, [i64; 5]);
    #[rustfmt::skip]
    let cases: &[Case] = &[
        // 3 per DAY in Berlin. 10:00Z on Sat 28 Mar is 11:00 CET; the day
        // ends at 23:00Z: 13 h.
        ("2026-03-28T10:00:00Z", 3, Day, "Europe/Berlin", 1, [0, 3, 2, -1, 46_800]),
        ("2026-03-28T11:00:00Z", 3, Day, "Europe/Berlin", 2, [0, 3, 0, -1, 43_200]),
        // Spent: retry when the day ends.
        ("2026-03-28T22:59:59Z", 3, Day, "Europe/Berlin", 1, [1, 3, 0, 1, 1]),
        // A peek changes nothing; more than the limit can never fit.
        ("2026-03-28T12:00:00Z", 3, Day, "Europe/Berlin", 0, [0, 3, 0, -1, 39_600]),
        ("2026-03-28T12:00:00Z", 3, Day, "Europe/Berlin", 4, [1, 3, 0, -1, 39_600]),
        // A lowered limit below what is used: even a peek is limited.
        ("2026-03-28T12:00:00Z", 2, Day, "Europe/Berlin", 0, [1, 2, 0, 39_600, 39_600]),
        ("2026-03-28T12:00:00Z", 2, Day, "Europe/Berlin", 1, [1, 2, 0, 39_600, 39_600]),
        // The next day (23 hours, the clocks go forward): everything again.
        ("2026-03-28T23:00:00Z", 3, Day, "Europe/Berlin", 0, [0, 3, 3, -1, 0]),
        ("2026-03-28T23:00:00Z", 3, Day, "Europe/Berlin", 1, [0, 3, 2, -1, 82_800]),
        // A refund of more than is used empties the key.
        ("2026-03-29T00:00:00Z", 3, Day, "Europe/Berlin", -5, [0, 3, 3, -1, 0]),
        // Change of unit, the longer one second: units of a DAY count
        // until the end of the MONTH they fall in (31 Mar 22:00Z).
        ("2026-03-29T10:00:00Z", 3, Day, "Europe/Berlin", 3, [0, 3, 0, -1, 43_200]),
        ("2026-03-30T10:00:00Z", 5, Month, "Europe/Berlin", 0, [0, 5, 2, -1, 129_600]),
        ("2026-03-30T10:00:00Z", 5, Day, "Europe/Berlin", 0, [0, 5, 5, -1, 0]),
        ("2026-03-30T10:00:00Z", 5, Month, "Europe/Berlin", 2, [0, 5, 0, -1, 129_600]),
        // Now the key counts 5 until the month's end, whatever the unit:
        // the next DAY (31st) is limited until then.
        ("2026-03-31T10:00:00Z", 5, Day, "Europe/Berlin", 1, [1, 5, 0, 43_200, 43_200]),
        // At the month's end the Berlin day of 1 Apr starts: 24 h.
        ("2026-03-31T22:00:00Z", 5, Day, "Europe/Berlin", 1, [0, 5, 4, -1, 86_400]),
        // Change of zone. Under UTC the unit recorded at 31 Mar 22:00Z
        // counts until the later of its own end (Berlin, 1 Apr 22:00Z) and
        // the end of the UTC day it falls in (31 Mar, ended 1 Apr 00:00Z).
        ("2026-04-01T10:00:00Z", 5, Day, "UTC", 0, [0, 5, 4, -1, 43_200]),
        // Recording under UTC: the key takes UTC's day of 1 Apr, which
        // ends later (2 Apr 00:00Z): everything counts until then.
        ("2026-04-01T10:00:00Z", 5, Day, "UTC", 1, [0, 5, 3, -1, 50_400]),
        ("2026-04-01T21:59:59Z", 5, Day, "UTC", 2, [0, 5, 1, -1, 7_201]),
        // Back to Berlin, whose 2 Apr started at 1 Apr 22:00Z: the units
        // still count until 2 Apr 00:00Z (their own end is the later).
        ("2026-04-01T23:00:00Z", 5, Day, "Europe/Berlin", 0, [0, 5, 1, -1, 3_600]),
        ("2026-04-01T23:00:00Z", 5, Day, "Europe/Berlin", 2, [1, 5, 1, 3_600, 3_600]),
        ("2026-04-02T00:00:00Z", 5, Day, "Europe/Berlin", 0, [0, 5, 5, -1, 0]),
    ];
    let mut key = QuotaState::default();
    for (i, &(instant, limit, unit, name, quantity, expect)) in cases.iter().enumerate() {
        let now = at(instant);
        let p = params(limit, unit, name);
        let reply = if quantity < 0 {
            key.refund(now, &p, quantity.unsigned_abs());
            key.decide(now, &p, 0).0.reply(now, TimeUnit::Seconds)
        } else {
            run(&mut key, now, &p, quantity as u64).reply(now, TimeUnit::Seconds)
        };
        assert_eq!(
            reply, expect,
            "case {i}: {instant} {limit} {unit:?} {name} {quantity}"
        );
    }
}

#[test]
fn the_stored_end_decides() {
    // A key whose stored period is not this build's idea of the period (a
    // key written under other rules): 2 used in a Berlin DAY that started
    // 31 May 22:00Z and, as stored, ends 13 h later at 1 Jun 11:00Z (the
    // real one ends at 22:00Z). Calls under its unit and zone use the
    // stored end: nothing is recomputed.
    let p = params(5, Day, "Europe/Berlin");
    let start = at("2026-05-31T22:00:00Z").get();
    let bytes = payload(
        2,
        start,
        13 * 3_600 * S,
        0,
        12 * 3_600 * S,
        2,
        b"Europe/Berlin",
    );
    let mut key = QuotaState::decode(&bytes).unwrap();
    let end = at("2026-06-01T11:00:00Z");
    let before = Nanos::new(end.get() - 1);
    let (d, _) = key.decide(before, &p, 0);
    assert_eq!((d.remaining, d.reset_at), (3, end));
    assert_eq!(key.decide(end, &p, 0).0.remaining, 5);
    // Recording in its last nanosecond keeps the stored period.
    run(&mut key, before, &p, 1);
    assert_eq!(key.decide(before, &p, 0).0.reset_at, end);
    assert_eq!(key.decide(before, &p, 0).0.remaining, 2);
    // At its end a new period starts, this build's: 1 Jun ends at 22:00Z.
    run(&mut key, end, &p, 1);
    assert_eq!(
        key.decide(end, &p, 0).0.reset_at,
        at("2026-06-01T22:00:00Z")
    );
}

#[test]
fn carried_units_and_a_new_period_of_the_keys_own_unit() {
    // 2 per MONTH in +05:45: March ends 31 Mar 18:15Z. Then DAY in Berlin
    // on the 20th: the month's units carry over, counted until 18:15Z on
    // the 31st, while the key's period is the Berlin day of the 20th.
    let mut key = QuotaState::default();
    run(
        &mut key,
        at("2026-03-10T00:00:00Z"),
        &params(2, Month, "+05:45"),
        1,
    );
    let day = params(5, Day, "Europe/Berlin");
    let d = run(&mut key, at("2026-03-20T10:00:00Z"), &day, 1);
    assert_eq!(d.reset_at, at("2026-03-31T18:15:00Z"));
    // A unit on the 31st, in a later Berlin day than the key's, counts to
    // that day's end (22:00Z, CEST), past the carried units' deadline.
    let d = run(&mut key, at("2026-03-31T10:00:00Z"), &day, 1);
    assert_eq!((d.remaining, d.reset_at), (2, at("2026-03-31T22:00:00Z")));
    assert_eq!(
        key.decide(at("2026-03-31T21:00:00Z"), &day, 0).0.remaining,
        2
    );
    assert_eq!(
        key.decide(at("2026-03-31T22:00:00Z"), &day, 0).0.remaining,
        5
    );
}

#[test]
fn inspect_shows_the_period() {
    let mut key = QuotaState::default();
    let p = params(10, Week, "Asia/Shanghai");
    run(&mut key, at("2026-06-14T15:59:59Z"), &p, 4);
    let ms = |t: &str| Detail::Integer(unix(t) * 1_000);
    assert_eq!(
        key.inspect(at("2026-06-14T15:59:59Z")),
        vec![
            ("unit", Detail::Bytes(b"week".to_vec())),
            ("zone", Detail::Bytes(b"Asia/Shanghai".to_vec())),
            ("used", Detail::Integer(4)),
            ("start", ms("2026-06-07T16:00:00Z")),
            ("end", ms("2026-06-14T16:00:00Z")),
        ]
    );
    assert_eq!(
        key.inspect(at("2026-06-14T16:00:00Z"))[2],
        ("used", Detail::Integer(0))
    );
    assert!(!key.is_empty_at(at("2026-06-14T15:59:59Z")));
    assert!(key.is_empty_at(at("2026-06-14T16:00:00Z")));
    assert!(QuotaState::default().is_empty_at(Nanos::ZERO));
    assert_eq!(key.mem_usage(), std::mem::size_of::<QuotaState>());
}

mod format;
use format::{payload, FIXTURE};
mod model;
mod periods;
