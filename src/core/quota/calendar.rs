//! Calendar periods on a zone's local clock.
//!
//! Domain words:
//!
//! - **local time**: what the zone's clocks show, counted here as seconds
//!   since 1970-01-01 00:00:00 *on that clock* (a naive time line that
//!   knows nothing of offsets). The instant `t` (Unix seconds) shows the
//!   local time `t + offset(t)`.
//! - **unit start**: a local time that begins a unit: second 0 of a
//!   minute, minute 0 of an hour, 00:00 of a day, Monday 00:00 for a week
//!   (ISO 8601), the 1st at 00:00 for a month, 1 January 00:00 for a year.
//! - **transition**: an instant at which the zone's offset changes. Before
//!   it the offset is `before`, from it on `after`; the clock jumps forward
//!   (`after > before`, a gap: local times that never show) or back (a
//!   fold: local times that show twice).
//! - **boundary**: an instant at which a period starts. Every instant
//!   at which the clock shows a unit start, and every transition at which
//!   the clock jumps forward over one. Precisely, `t` is a boundary when a
//!   unit start `u` has `local(t-) <= u <= local(t)` (reached or jumped
//!   over; `local(t-)` is the limit from the left, equal to `local(t)`
//!   except at a transition) or `u == local(t)` (a fold that lands on one).
//! - **period**: from one boundary to the next, `[start, end)`.
//!
//! Consequences (docs/DESIGN.md#quota): a day with a daylight-saving change lasts
//! 23 or 25 hours; a day whose midnight is skipped starts at the jump; a
//! repeated local hour is two HOUR periods; in a zone whose offset is not
//! whole hours (Asia/Kolkata, +05:30) an hour starts at :30 UTC.
//!
//! Every boundary is a whole second (offsets and transitions are whole
//! seconds), so the search works in seconds and only the conversion at the
//! edges sees nanoseconds. It walks the zone's segments of constant offset
//! (at most a few per period: a period is at most a year, and zones change
//! offset at most a few times a year), so its cost does not depend on the
//! unit.

use crate::core::Nanos;

/// Seconds in a minute, an hour, a day.
const MINUTE: i64 = 60;
const HOUR: i64 = 3_600;
const DAY: i64 = 86_400;
/// Nanoseconds in a second.
const NS: u64 = 1_000_000_000;

/// Segments the search visits at most in one direction. Real rules need a
/// handful (a year holds at most a few offset changes); the bound only
/// guarantees that no rule set, however odd, can make the search loop.
const MAX_SEGMENTS: usize = 64;

/// The unit of a calendar quota: its periods are this unit of the zone's
/// local calendar.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CalendarUnit {
    #[default]
    Minute,
    Hour,
    Day,
    /// An ISO 8601 week: Monday 00:00 to the next Monday 00:00.
    Week,
    Month,
    Year,
}

impl CalendarUnit {
    /// The argument words, in the order of `from_index`.
    pub const WORDS: [&'static str; 6] = ["MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR"];
    const ALL: [CalendarUnit; 6] = [
        CalendarUnit::Minute,
        CalendarUnit::Hour,
        CalendarUnit::Day,
        CalendarUnit::Week,
        CalendarUnit::Month,
        CalendarUnit::Year,
    ];
    const NAMES: [&'static str; 6] = ["minute", "hour", "day", "week", "month", "year"];

    /// The unit of `WORDS[i]`.
    pub fn from_index(i: usize) -> Option<CalendarUnit> {
        Self::ALL.get(i).copied()
    }

    /// Its position in `WORDS`, which is also its byte in the encoding.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The lowercase name, for RL.INSPECT.
    pub fn name(self) -> &'static str {
        Self::NAMES[self.index()]
    }

    /// The latest unit start at or before the local time `local`.
    pub(super) fn floor(self, local: i64) -> i64 {
        let days = local.div_euclid(DAY);
        match self {
            CalendarUnit::Minute => local - local.rem_euclid(MINUTE),
            CalendarUnit::Hour => local - local.rem_euclid(HOUR),
            CalendarUnit::Day => days * DAY,
            // 1970-01-01 was a Thursday: three days after a Monday.
            CalendarUnit::Week => (days - (days + 3).rem_euclid(7)) * DAY,
            CalendarUnit::Month => {
                let (year, month) = year_month(days);
                first_of(year, month) * DAY
            }
            CalendarUnit::Year => first_of(year_month(days).0, 1) * DAY,
        }
    }

    /// The earliest unit start after the local time `local`.
    pub(super) fn next(self, local: i64) -> i64 {
        let floor = self.floor(local);
        match self {
            CalendarUnit::Minute => floor + MINUTE,
            CalendarUnit::Hour => floor + HOUR,
            CalendarUnit::Day => floor + DAY,
            CalendarUnit::Week => floor + 7 * DAY,
            CalendarUnit::Month => {
                let (year, month) = year_month(floor.div_euclid(DAY));
                if month == 12 {
                    first_of(year + 1, 1) * DAY
                } else {
                    first_of(year, month + 1) * DAY
                }
            }
            CalendarUnit::Year => first_of(year_month(floor.div_euclid(DAY)).0 + 1, 1) * DAY,
        }
    }

    /// Whether the local time `local` is a unit start.
    fn is_start(self, local: i64) -> bool {
        self.floor(local) == local
    }
}

/// Whether `year` has a 29 February (proleptic Gregorian calendar).
fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Leap days in the years before `year`, counted from year 0.
fn leap_days_before(year: i64) -> i64 {
    let y = year - 1;
    y.div_euclid(4) - y.div_euclid(100) + y.div_euclid(400)
}

/// Days from 1970-01-01 to 1 January of `year`.
fn year_start(year: i64) -> i64 {
    365 * (year - 1970) + leap_days_before(year) - leap_days_before(1970)
}

/// Days from 1 January to the 1st of each month, in a common year.
const MONTH_STARTS: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];

/// Days from 1970-01-01 to the 1st of `month` (1 to 12) of `year`.
fn first_of(year: i64, month: usize) -> i64 {
    let index = month.clamp(1, 12) - 1;
    let leap = i64::from(month > 2 && is_leap(year));
    year_start(year) + MONTH_STARTS[index] + leap
}

/// The year and month (1 to 12) of the day `days` after 1970-01-01.
fn year_month(days: i64) -> (i64, usize) {
    // An estimate from the mean Gregorian year (146,097 days per 400
    // years), off by at most one either way, then corrected.
    let mut year = 1970 + (days * 400).div_euclid(146_097);
    while year_start(year) > days {
        year -= 1;
    }
    while year_start(year + 1) <= days {
        year += 1;
    }
    let day_of_year = days - year_start(year);
    let mut month = 12;
    while month > 1 && first_of(year, month) - year_start(year) > day_of_year {
        month -= 1;
    }
    (year, month)
}

/// How a zone sets its clock: the offset at each instant and the instants
/// at which it changes. All in whole seconds.
pub trait Rules {
    /// Seconds east of UTC at the instant `t`.
    fn offset(&self, t: i64) -> i64;
    /// The latest transition at or before `t`.
    fn change_at_or_before(&self, t: i64) -> Option<i64>;
    /// The earliest transition after `t`.
    fn change_after(&self, t: i64) -> Option<i64>;
}

/// The period of `unit` in the zone whose rules are `zone` that contains
/// the instant `at` (Unix ns): `[start, end)`.
///
/// Instants are `Nanos`, which start at the Unix epoch and end in 2554: a
/// start before 1970 reads as the epoch and an end past `Nanos::MAX` as
/// `Nanos::MAX` (so the instant `Nanos::MAX` itself ends its period).
pub fn period(at: Nanos, unit: CalendarUnit, zone: impl Rules) -> (Nanos, Nanos) {
    // Boundaries are whole seconds, so the second that holds `at` decides.
    let t = i64::try_from(at.get() / NS).unwrap_or(i64::MAX);
    let (start, end) = period_seconds(t, unit, &zone);
    (instant(start), instant(end))
}

/// Unix seconds as `Nanos`, clamped to its range.
fn instant(seconds: i64) -> Nanos {
    match u64::try_from(seconds) {
        Ok(s) => Nanos::new(s.saturating_mul(NS)),
        Err(_) => Nanos::ZERO,
    }
}

/// `period` in whole seconds, for any rules.
pub(super) fn period_seconds(t: i64, unit: CalendarUnit, rules: &impl Rules) -> (i64, i64) {
    (start(t, unit, rules), end(t, unit, rules))
}

/// The latest boundary at or before `t`.
///
/// Walks back one segment of constant offset at a time. In the segment
/// that ends at `x` (inclusive) with offset `off`, the latest unit start
/// the clock showed is `floor(x + off)`, at the instant `floor - off`, if
/// that instant is inside the segment. Otherwise the segment's first
/// instant, a transition `c`, is a boundary when the clock jumped forward
/// over a unit start there: the latest unit start before `local(c)` is at
/// or after `local(c-) = c + before`.
fn start(t: i64, unit: CalendarUnit, rules: &impl Rules) -> i64 {
    let mut x = t;
    let mut off = rules.offset(x);
    for _ in 0..MAX_SEGMENTS {
        let shown = unit.floor(x + off);
        let change = rules.change_at_or_before(x);
        let Some(change) = change.filter(|&c| shown - off < c) else {
            return shown - off;
        };
        let before = rules.offset(change - 1);
        if shown >= change + before {
            return change;
        }
        x = change - 1;
        off = before;
    }
    x
}

/// The earliest boundary after `t`.
///
/// Walks forward one segment at a time. In the segment that starts after
/// `x` with offset `off`, the next unit start is `next(x + off)`, shown at
/// `next - off` if that is before the segment's end, a transition `c`.
/// Otherwise `c` is a boundary when the clock jumps forward over that unit
/// start (it lies in `[c + off, c + after]`) or lands on a unit start.
fn end(t: i64, unit: CalendarUnit, rules: &impl Rules) -> i64 {
    let mut x = t;
    let mut off = rules.offset(x);
    for _ in 0..MAX_SEGMENTS {
        let next = unit.next(x + off);
        let change = rules.change_after(x);
        let Some(change) = change.filter(|&c| next - off >= c) else {
            return next - off;
        };
        let after = rules.offset(change);
        if next <= change + after || unit.is_start(change + after) {
            return change;
        }
        x = change;
        off = after;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Days from 1970-01-01, counted by hand from the calendar.
    #[test]
    fn civil_days() {
        // year, month => days since 1970-01-01 of its 1st
        #[rustfmt::skip]
        let table: &[(i64, usize, i64)] = &[
            (1970, 1, 0),
            (1970, 2, 31),
            (1970, 3, 59),          // 1970 is common: 31 + 28
            (1971, 1, 365),
            (1972, 3, 365 + 365 + 31 + 29), // 1972 is a leap year
            (1969, 12, -31),
            (1969, 1, -365),
            (2000, 1, 10_957),      // 30 years with 7 leap days: 30 × 365 + 7
            (2000, 3, 10_957 + 60), // 2000 is a leap year (divisible by 400)
            (2100, 3, 47_482 + 59), // 2100 is not (divisible by 100)
        ];
        for &(year, month, days) in table {
            assert_eq!(first_of(year, month), days, "{year}-{month}");
            assert_eq!(year_month(days), (year, month), "{days}");
            assert_eq!(
                year_month(days - 1).1,
                if month == 1 { 12 } else { month - 1 }
            );
        }
        assert_eq!(year_start(2100), 47_482);
    }

    #[test]
    fn year_month_round_trips_every_day_of_six_centuries() {
        let mut days = first_of(1900, 1);
        for year in 1900..2560 {
            for month in 1..=12 {
                assert_eq!(first_of(year, month), days, "{year}-{month}");
                let next = if month == 12 {
                    first_of(year + 1, 1)
                } else {
                    first_of(year, month + 1)
                };
                assert_eq!(year_month(days), (year, month));
                assert_eq!(year_month(next - 1), (year, month));
                days = next;
            }
        }
    }

    #[test]
    fn floor_and_next_in_local_time() {
        // 2026-03-04 (a Wednesday) 13:45:30 local: 20,516 days after the epoch.
        let day = 20_516 * DAY;
        let local = day + 13 * HOUR + 45 * MINUTE + 30;
        // unit => floor, next
        #[rustfmt::skip]
        let table: &[(CalendarUnit, i64, i64)] = &[
            (CalendarUnit::Minute, local - 30, local + 30),
            (CalendarUnit::Hour, day + 13 * HOUR, day + 14 * HOUR),
            (CalendarUnit::Day, day, day + DAY),
            // Monday 2026-03-02 to Monday 2026-03-09.
            (CalendarUnit::Week, day - 2 * DAY, day + 5 * DAY),
            // 2026-03-01 to 2026-04-01: 31 days of March.
            (CalendarUnit::Month, day - 3 * DAY, day + 28 * DAY),
            // 2026-01-01 is day 20,454; 2027-01-01 is 365 days later.
            (CalendarUnit::Year, 20_454 * DAY, (20_454 + 365) * DAY),
        ];
        for &(unit, floor, next) in table {
            assert_eq!(unit.floor(local), floor, "{unit:?}");
            assert_eq!(unit.next(local), next, "{unit:?}");
            assert_eq!(unit.floor(floor), floor, "{unit:?} at a start");
            assert_eq!(unit.next(floor), next, "{unit:?} after a start");
        }
        // Before the epoch: 1969-12-31 23:59:59 local, a Wednesday.
        assert_eq!(CalendarUnit::Day.floor(-1), -DAY);
        assert_eq!(CalendarUnit::Week.floor(-1), -3 * DAY);
        assert_eq!(CalendarUnit::Month.floor(-1), -31 * DAY);
        assert_eq!(CalendarUnit::Year.next(-1), 0);
    }

    #[test]
    fn words_and_names() {
        for (i, word) in CalendarUnit::WORDS.iter().enumerate() {
            let unit = CalendarUnit::from_index(i).unwrap();
            assert_eq!(unit.index(), i);
            assert_eq!(unit.name(), word.to_ascii_lowercase());
        }
        assert_eq!(CalendarUnit::from_index(6), None);
    }
}
