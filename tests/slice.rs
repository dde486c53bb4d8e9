//! RL.SLICE against a real server: the reply table, peeks, expiry, types,
//! bad input, parameter changes, the strict guarantee under real time,
//! memory and command metadata. Persistence and replication are in
//! persistence.rs.
//!
//! Slices are aligned to the Unix epoch and the server reads the same wall
//! clock as the tests, so a test that knows in which slice its calls ran
//! (checked on the client's clock before and after each call) knows the
//! exact replies.

mod common;
use common::*;

use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

/// A reply and the client's wall clock just before sending the request and
/// just after receiving the reply: the server decided in between.
struct Timed {
    reply: [i64; 5],
    sent: i128,
    received: i128,
}

fn timed(con: &mut Connection, args: &[&str]) -> Timed {
    let sent = unix_ns();
    let reply = five(con, args);
    let received = unix_ns();
    Timed {
        reply,
        sent,
        received,
    }
}

/// What a time in the reply (ms, rounded up) until the instant `at_ns` can
/// read for a call made in `[sent, received]`.
fn ms_until(at_ns: i128, call: &Timed) -> RangeInclusive<i64> {
    let ceil_ms = |ns: i128| ((ns + NS_PER_MS - 1).div_euclid(NS_PER_MS)) as i64;
    ceil_ms(at_ns - call.received)..=ceil_ms(at_ns - call.sent)
}

/// Waits until the wall clock reaches `at_ns`.
fn sleep_until(at_ns: i128) {
    loop {
        let now = unix_ns();
        if now >= at_ns {
            return;
        }
        std::thread::sleep(Duration::from_nanos(((at_ns - now) as u64).min(1_000_000)));
    }
}

#[test]
fn reply_table() {
    let server = Server::start();
    let mut con = server.conn();
    // Limit 3 per 60 s in 60 slices of 1 s. All the calls run within one
    // wall-clock second `s` (checked), slice `s`: each unit is counted until
    // slice s + 61 begins, 61 s minus a fraction from now, rounded up: 61.
    // args => limited, limit, remaining, retry_after, reset_after
    #[rustfmt::skip]
    let table: &[(&[&str], [i64; 5])] = &[
        // a peek on a missing key: full capacity, nothing to reset
        (&["RL.SLICE", "a", "3", "60", "60", "0"],             [0, 3, 3, -1, 0]),
        (&["RL.SLICE", "a", "3", "60", "60"],                  [0, 3, 2, -1, 61]),
        // quantity > 1 takes the rest
        (&["RL.SLICE", "a", "3", "60", "60", "2"],             [0, 3, 0, -1, 61]),
        // full: the slice drops out 61 s minus a fraction from now
        (&["RL.SLICE", "a", "3", "60", "60"],                  [1, 3, 0, 61, 61]),
        (&["RL.SLICE", "a", "3", "60", "60", "3"],             [1, 3, 0, 61, 61]),
        // a peek on a full key fits
        (&["RL.SLICE", "a", "3", "60", "60", "0"],             [0, 3, 0, -1, 61]),
        // quantity > limit can never fit: retry_after -1
        (&["RL.SLICE", "a", "3", "60", "60", "4"],             [1, 3, 0, -1, 61]),
        (&["RL.SLICE", "a", "3", "60", "60", "1000000000000"], [1, 3, 0, -1, 61]),
        // a raised limit lets one more in
        (&["RL.SLICE", "a", "4", "60", "60"],                  [0, 4, 0, -1, 61]),
        (&["RL.SLICE", "a", "4", "60", "60"],                  [1, 4, 0, 61, 61]),
        // quantity > limit on a missing key: limited, nothing stored
        (&["RL.SLICE", "never", "3", "60", "60", "4"],         [1, 3, 3, -1, 0]),
    ];
    let calls: Vec<&[&str]> = table.iter().map(|(args, _)| *args).collect();
    let (_, replies) = run_in_one_second(&mut con, &calls);
    for ((args, expected), got) in table.iter().zip(&replies) {
        assert_eq!(got, expected, "{args:?}");
    }
    for attempt in 0..10 {
        assert!(
            !exists(&mut con, &format!("never:{attempt}")),
            "a request that can never fit created its key"
        );
    }

    // One per hour in one slice: counted until the second hour after the
    // current epoch-aligned hour begins.
    let (s, replies) = run_in_one_second(
        &mut con,
        &[
            &["RL.SLICE", "b", "1", "3600", "1"],
            &["RL.SLICE", "b", "1", "3600", "1"],
        ],
    );
    let h = (s / 3600 + 2) * 3600 - s;
    assert!((3601..=7200).contains(&h));
    assert_eq!(replies, vec![[0, 1, 0, -1, h], [1, 1, 0, h, h]]);

    // MS: 10 per 120,000 ms in 120 slices of 1,000 ms; replies in ms, each
    // within what the client's clock allows around the call.
    let (s, calls) = in_one_second(|suffix| {
        let key = format!("c{suffix}");
        [
            timed(
                &mut con,
                &["RL.SLICE", &key, "10", "120000", "120", "4", "MS"],
            ),
            timed(
                &mut con,
                &["RL.SLICE", &key, "10", "120000", "120", "6", "ms"],
            ),
            timed(
                &mut con,
                &["RL.SLICE", &key, "10", "120000", "120", "1", "MS"],
            ),
            timed(&mut con, &["RL.SLICE", &key, "10", "120", "120", "0"]),
        ]
    });
    let drop_out = i128::from(s + 121) * NS_PER_S;
    let [c0, c1, c2, c3] = &calls;
    assert_eq!(&c0.reply[..4], &[0, 10, 6, -1]);
    assert!(
        ms_until(drop_out, c0).contains(&c0.reply[4]),
        "{:?}",
        c0.reply
    );
    assert_eq!(&c1.reply[..4], &[0, 10, 0, -1]);
    assert!(
        ms_until(drop_out, c1).contains(&c1.reply[4]),
        "{:?}",
        c1.reply
    );
    assert_eq!(&c2.reply[..3], &[1, 10, 0]);
    assert!(
        ms_until(drop_out, c2).contains(&c2.reply[3]),
        "{:?}",
        c2.reply
    );
    assert!(
        ms_until(drop_out, c2).contains(&c2.reply[4]),
        "{:?}",
        c2.reply
    );
    assert!((120_001..=121_000).contains(&c2.reply[3]));
    // The same key read in seconds: 121 s minus a fraction, rounded up.
    assert_eq!(c3.reply, [0, 10, 0, -1, 121]);
}

#[test]
fn peek_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();

    // On a missing key: the full capacity, and nothing is created.
    let dirty_before = dirty(&mut con);
    assert_eq!(
        five(&mut con, &["RL.SLICE", "p", "4", "60", "6", "0"]),
        [0, 4, 4, -1, 0]
    );
    assert_eq!(
        five(&mut con, &["RL.SLICE", "p", "4", "60000", "6", "0", "MS"]),
        [0, 4, 4, -1, 0]
    );
    assert!(!exists(&mut con, "p"));
    assert_eq!(dbsize(&mut con), 0);
    assert_eq!(dirty(&mut con), dirty_before);

    // On an existing key: digest, expiry and the dirty counter stay.
    let r = five(&mut con, &["RL.SLICE", "p", "4", "60", "6", "2"]);
    assert_eq!(&r[..4], &[0, 4, 2, -1]);
    assert!((61..=70).contains(&r[4]), "{r:?}");
    let snapshot = |con: &mut Connection| (digest(con), pexpiretime(con, "p"), dirty(con));
    let before = snapshot(&mut con);
    for _ in 0..5 {
        let r = five(&mut con, &["RL.SLICE", "p", "4", "60", "6", "0"]);
        assert_eq!(&r[..4], &[0, 4, 2, -1], "{r:?}");
        assert!((1..=70).contains(&r[4]), "{r:?}");
    }
    // Peeks with another limit, window or slice count (which rebuckets the
    // counters to answer) change nothing either.
    for args in [
        &["RL.SLICE", "p", "10", "60", "6", "0"][..],
        &["RL.SLICE", "p", "10", "120", "10", "0"],
        &["RL.SLICE", "p", "10", "30", "1", "0"],
        &["RL.SLICE", "p", "10", "60000", "6", "0", "MS"],
    ] {
        let r = five(&mut con, args);
        assert_eq!(&r[..4], &[0, 10, 8, -1], "{args:?}: {r:?}");
        assert!(r[4] > 0, "{args:?}: {r:?}");
    }
    assert_eq!(snapshot(&mut con), before);

    // A limited request changes nothing either, with any parameters.
    let r = five(&mut con, &["RL.SLICE", "p", "4", "60", "6", "2"]);
    assert_eq!(&r[..4], &[0, 4, 0, -1]);
    let before = snapshot(&mut con);
    for args in [
        &["RL.SLICE", "p", "4", "60", "6"][..],
        &["RL.SLICE", "p", "4", "60", "6", "3"],
        &["RL.SLICE", "p", "4", "60", "6", "5"],
        &["RL.SLICE", "p", "3", "60", "6", "1"],
        &["RL.SLICE", "p", "4", "30", "3", "1"],
        &["RL.SLICE", "p", "4", "60000", "6", "1", "MS"],
    ] {
        let r = five(&mut con, args);
        let limit: i64 = args[2].parse().unwrap();
        assert_eq!(&r[..3], &[1, limit, 0], "{args:?}");
    }
    assert_eq!(snapshot(&mut con), before);

    // The one exception: limited under a longer window, the units count
    // longer than the key's expiry, so the expiry grows (and nothing else).
    let value: Vec<u8> = redis::cmd("DUMP").arg("p").query(&mut con).unwrap();
    let r = five(&mut con, &["RL.SLICE", "p", "4", "120", "10", "1"]);
    assert_eq!(&r[..3], &[1, 4, 0]);
    assert!(
        pexpiretime(&mut con, "p") > before.1 + 50_000,
        "the expiry follows the window"
    );
    let after: Vec<u8> = redis::cmd("DUMP").arg("p").query(&mut con).unwrap();
    assert_eq!(after, value, "the state itself is unchanged");
}

#[test]
fn expiry_is_the_reset_moment() {
    let server = Server::start();
    let mut con = server.conn();
    // 6 slices of 10 s: counted until 60 to 70 s from now.
    let since = Instant::now();
    let r = five(&mut con, &["RL.SLICE", "e", "10", "60", "6", "3"]);
    assert_eq!(&r[..4], &[0, 10, 7, -1]);
    assert!((61..=70).contains(&r[4]), "{r:?}");
    let ttl: i64 = redis::cmd("TTL").arg("e").query(&mut con).unwrap();
    // TTL rounds to the nearest second.
    let elapsed_s = (ms_since(since) + 999) / 1000;
    assert!(
        (r[4] - 1 - elapsed_s..=r[4]).contains(&ttl),
        "ttl {ttl}, reply {r:?}"
    );
    let kind: String = redis::cmd("TYPE").arg("e").query(&mut con).unwrap();
    assert_eq!(kind, "rl-slice-");

    // In ms: the expiry is the reset instant (a whole ms here).
    let since = Instant::now();
    let r = five(&mut con, &["RL.SLICE", "m", "10", "60000", "6", "3", "MS"]);
    assert_eq!(&r[..4], &[0, 10, 7, -1]);
    assert!((60_001..=70_000).contains(&r[4]), "{r:?}");
    let pttl: i64 = redis::cmd("PTTL").arg("m").query(&mut con).unwrap();
    let elapsed = ms_since(since);
    assert!(
        (r[4] - elapsed - 1..=r[4] + 1).contains(&pttl),
        "pttl {pttl}, reply {r:?}, {elapsed} ms elapsed"
    );

    // A short window: the key disappears by itself, and a new request then
    // sees a full limiter.
    let r = five(&mut con, &["RL.SLICE", "short", "2", "100", "2", "2", "MS"]);
    assert_eq!(&r[..4], &[0, 2, 0, -1]);
    assert!((101..=150).contains(&r[4]), "{r:?}");
    let pttl: i64 = redis::cmd("PTTL").arg("short").query(&mut con).unwrap();
    assert!((0..=r[4] + 1).contains(&pttl), "pttl {pttl}");
    wait_until(5, "the key to expire", || !exists(&mut con, "short"));
    assert_eq!(
        five(&mut con, &["RL.SLICE", "short", "2", "100", "2", "0", "MS"]),
        [0, 2, 2, -1, 0]
    );
}

#[test]
fn wrong_types() {
    let server = Server::start();
    let mut con = server.conn();
    let _: () = redis::cmd("SET").arg("s").arg("x").query(&mut con).unwrap();
    let _: () = redis::cmd("RPUSH")
        .arg("l")
        .arg("x")
        .query(&mut con)
        .unwrap();
    five(&mut con, &["RL.THROTTLE", "gcra", "5", "1", "60"]);
    five(&mut con, &["RL.SLIDE", "slide", "5", "60"]);
    let gcra = digest_value(&mut con, "gcra");
    let slide = digest_value(&mut con, "slide");
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for key in ["s", "l", "gcra", "slide"] {
        for args in [
            &["RL.SLICE", key, "5", "60", "6"][..],
            &["RL.SLICE", key, "5", "60", "6", "0"],
            &["RL.SLICE", key, "5", "60000", "6", "2", "MS"],
            &["RL.SLICE", key, "5", "60", "6", "6"],
        ] {
            assert_eq!(error(&mut con, args), wrongtype, "{args:?}");
        }
    }
    // Nothing was touched.
    let s: String = redis::cmd("GET").arg("s").query(&mut con).unwrap();
    assert_eq!(s, "x");
    let l: Vec<String> = redis::cmd("LRANGE")
        .arg("l")
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(l, vec!["x"]);
    assert_eq!(digest_value(&mut con, "gcra"), gcra);
    assert_eq!(digest_value(&mut con, "slide"), slide);
    // And the other commands refuse a slice key.
    five(&mut con, &["RL.SLICE", "slice", "5", "60", "6"]);
    assert_eq!(
        error(&mut con, &["RL.THROTTLE", "slice", "5", "1", "60"]),
        wrongtype
    );
    assert_eq!(
        error(&mut con, &["RL.SLIDE", "slice", "5", "60"]),
        wrongtype
    );
}

#[test]
fn bad_input_table() {
    let server = Server::start();
    let mut con = server.conn();
    let arity = "ERR wrong number of arguments for 'rl.slice' command";
    let limit = "ERR limit must be an integer from 1 to 4294967295";
    let window_s = "ERR window must be an integer from 1 to 315360000 (seconds)";
    let window_ms = "ERR window must be an integer from 1 to 315360000000 (milliseconds, with MS)";
    let slices = "ERR slices must be an integer from 1 to 86400";
    let quantity = "ERR quantity must be an integer from 0 to 1000000000000";
    let at = "ERR AT is accepted only from the master or the AOF: it carries the master's clock";
    // args => error reply (compared case-insensitively)
    #[rustfmt::skip]
    let table: &[(&[&str], &str)] = &[
        (&["RL.SLICE"], arity),
        (&["RL.SLICE", "k"], arity),
        (&["RL.SLICE", "k", "5"], arity),
        (&["RL.SLICE", "k", "5", "60"], arity),
        (&["RL.SLICE", "k", "0", "60", "6"], limit),
        (&["RL.SLICE", "k", "4294967296", "60", "6"], limit),
        (&["RL.SLICE", "k", "-5", "60", "6"], limit),
        (&["RL.SLICE", "k", "5.0", "60", "6"], limit),
        (&["RL.SLICE", "k", "", "60", "6"], limit),
        (&["RL.SLICE", "k", "5", "0", "6"], window_s),
        (&["RL.SLICE", "k", "5", "315360001", "6"], window_s),
        (&["RL.SLICE", "k", "5", "-60", "6"], window_s),
        (&["RL.SLICE", "k", "5", "1m", "6"], window_s),
        (&["RL.SLICE", "k", "5", "0", "6", "MS"], window_ms),
        (&["RL.SLICE", "k", "5", "315360000001", "6", "MS"], window_ms),
        (&["RL.SLICE", "k", "5", "60", "0"], slices),
        (&["RL.SLICE", "k", "5", "60", "86401"], slices),
        (&["RL.SLICE", "k", "5", "60", "1000001"], slices),
        (&["RL.SLICE", "k", "5", "60", "-6"], slices),
        (&["RL.SLICE", "k", "5", "60", "six"], slices),
        (&["RL.SLICE", "k", "5", "60", "6", "-1"], quantity),
        (&["RL.SLICE", "k", "5", "60", "6", "1000000000001"], quantity),
        (&["RL.SLICE", "k", "5", "60", "6", "2x"], quantity),
        (&["RL.SLICE", "k", "5", "60", "6", "1", "2"], "ERR unknown argument '2'"),
        (&["RL.SLICE", "k", "5", "60", "6", "MS", "1"], "ERR unknown argument '1'"),
        (&["RL.SLICE", "k", "5", "60", "6", "NX"], "ERR unknown argument 'NX'"),
        (&["RL.SLICE", "k", "5", "60", "6", "MS", "MS"], "ERR MS is given more than once"),
        (&["RL.SLICE", "k", "5", "60", "6", "1", "ms", "mS"], "ERR MS is given more than once"),
        (&["RL.SLICE", "k", "5", "60", "6", "AT", "1"], at),
        (&["RL.SLICE", "k", "5", "60", "6", "1", "MS", "AT", "1700000000000000000"], at),
        (&["RL.SLICE", "k", "5", "60", "6", "AT"], at),
        (&["RL.SLICE", "k", "5", "60", "6", "1", "MS", "x", "x", "x", "x", "x"], "ERR unknown argument 'x'"),
    ];
    assert_errors(&mut con, table);
    // No failed call created a key.
    assert_eq!(dbsize(&mut con), 0);
}

#[test]
fn a_lowered_limit_applies_to_what_was_recorded() {
    let server = Server::start();
    let mut con = server.conn();
    // 60 slices of 1 s; all calls within one second: times read 61.
    // args => limited, limit, remaining, retry_after, reset_after
    #[rustfmt::skip]
    let table: &[(&[&str], [i64; 5])] = &[
        (&["RL.SLICE", "k", "5", "60", "60", "4"],  [0, 5, 1, -1, 61]),
        // over the lowered limit: even a peek is limited until the slice
        // drops out
        (&["RL.SLICE", "k", "3", "60", "60", "0"],  [1, 3, 0, 61, 61]),
        (&["RL.SLICE", "k", "3", "60", "60"],       [1, 3, 0, 61, 61]),
        (&["RL.SLICE", "k", "1", "60", "60"],       [1, 1, 0, 61, 61]),
        (&["RL.SLICE", "k", "4", "60", "60"],       [1, 4, 0, 61, 61]),
        (&["RL.SLICE", "k", "4", "60", "60", "0"],  [0, 4, 0, -1, 61]),
        // back to limit 5: one unit left
        (&["RL.SLICE", "k", "5", "60", "60"],       [0, 5, 0, -1, 61]),
        (&["RL.SLICE", "k", "5", "60", "60"],       [1, 5, 0, 61, 61]),
    ];
    let calls: Vec<&[&str]> = table.iter().map(|(args, _)| *args).collect();
    let (_, replies) = run_in_one_second(&mut con, &calls);
    for ((args, expected), got) in table.iter().zip(&replies) {
        assert_eq!(got, expected, "{args:?}");
    }
}

#[test]
fn a_changed_window_or_slice_count_keeps_the_recorded_units() {
    let server = Server::start();
    let mut con = server.conn();
    // Limit 5 filled in 6 slices of 10 s, at `t`. The ranges below hold
    // for calls within a second of `t`, and are widened by whatever more
    // time has passed.
    let filled = Instant::now();
    let r = five(&mut con, &["RL.SLICE", "k", "5", "60", "6", "5"]);
    assert_eq!(&r[..4], &[0, 5, 0, -1]);
    assert!((61..=70).contains(&r[4]), "{r:?}");
    let before = digest(&mut con);
    // Each new geometry moves the units to the slice holding the last
    // instant of their 10 s slice, counted for more than the new window
    // from `t` and at most a new slice after that 10 s slice ends.
    // args => retry_after range
    #[rustfmt::skip]
    let table: &[(&[&str], RangeInclusive<i64>)] = &[
        (&["RL.SLICE", "k", "5", "120", "10"], 120..=142),
        (&["RL.SLICE", "k", "5", "30", "3"], 30..=40),
        (&["RL.SLICE", "k", "5", "60", "1"], 60..=130),
        (&["RL.SLICE", "k", "5", "3600", "3600"], 3600..=3610),
        (&["RL.SLICE", "k", "5", "60000", "6", "1", "MS"], 59_000..=70_000),
        // a peek (its reset_after is checked instead)
        (&["RL.SLICE", "k", "5", "120", "10", "0"], 0..=0),
    ];
    // Milliseconds and seconds past the first second after `t`.
    let late = |ms: bool| {
        let late_ms = (ms_since(filled) - 1_000).max(0);
        if ms {
            late_ms
        } else {
            (late_ms + 999) / 1_000
        }
    };
    for (args, retry) in table {
        let r = five(&mut con, args);
        let retry = retry.start() - late(args.contains(&"MS"))..=*retry.end();
        if args.len() == 6 && args[5] == "0" {
            // A peek fits exactly, and reads the new geometry's reset.
            assert_eq!(&r[..4], &[0, 5, 0, -1], "{args:?}");
            let reset = 120 - late(false)..=142;
            assert!(reset.contains(&r[4]), "{args:?}: {r:?}");
            continue;
        }
        assert_eq!(&r[..3], &[1, 5, 0], "still limited: {args:?}");
        assert!(retry.contains(&r[3]), "{args:?}: {r:?}");
        assert_eq!(r[4], r[3], "one slice holds every unit: {args:?}: {r:?}");
    }
    // Limited requests changed nothing, whatever the parameters.
    assert_eq!(digest(&mut con), before);

    // A raised limit under a new geometry: the five units still count.
    let r = five(&mut con, &["RL.SLICE", "k", "6", "120", "10"]);
    assert_eq!(&r[..4], &[0, 6, 0, -1], "{r:?}");
    assert!((120 - late(false)..=142).contains(&r[4]), "{r:?}");
    let r = five(&mut con, &["RL.SLICE", "k", "6", "120", "10"]);
    assert_eq!(&r[..3], &[1, 6, 0], "{r:?}");
    // And back to the first geometry: six units, limit 7.
    let r = five(&mut con, &["RL.SLICE", "k", "7", "60", "6"]);
    assert_eq!(&r[..4], &[0, 7, 0, -1], "{r:?}");
    let r = five(&mut con, &["RL.SLICE", "k", "7", "60", "6"]);
    assert_eq!(&r[..3], &[1, 7, 0], "{r:?}");
}

/// Sends requests on a fresh key for about 1.5 s, every 3 ms, and checks
/// from the client's clock alone that no `window` ever admitted more than
/// `limit` requests.
///
/// Each admission happened at some instant within [sent, received] of its
/// request; requests are sequential, so admissions are in order. `limit + 1`
/// consecutive admissions i ..= i + limit certainly fall within an interval
/// of length received(i + limit) - sent(i): if that is shorter than the
/// window, the guarantee is certainly broken. Only that is asserted. (The
/// server's wall clock and the client's monotonic clock run at the same
/// rate: both follow NTP's slewing.)
fn check_strict(con: &mut Connection, key: &str, limit: usize, window_ms: u64, slices: u64) {
    let limit_s = limit.to_string();
    let window_s = window_ms.to_string();
    let slices_s = slices.to_string();
    let args = ["RL.SLICE", key, &limit_s, &window_s, &slices_s, "MS"];
    let window = Duration::from_millis(window_ms);
    // A unit is counted at most a window and a slice.
    let longest = (window_ms + window_ms / slices) as i64;
    let origin = Instant::now();
    let mut admitted: Vec<(Duration, Duration)> = Vec::new();
    let mut replies = 0;
    let mut limited = 0;
    while origin.elapsed() < Duration::from_millis(1_500) && replies < 1_000 {
        let sent = origin.elapsed();
        let r = five(con, &args);
        let received = origin.elapsed();
        replies += 1;
        assert_eq!(r[1], limit as i64, "{r:?}");
        assert!((0..=limit as i64).contains(&r[2]), "{r:?}");
        if r[0] == 0 {
            admitted.push((sent, received));
            assert_eq!(r[3], -1, "{r:?}");
            assert!(
                (window_ms as i64 + 1..=longest).contains(&r[4]),
                "reset_after of an allowed request: {r:?}"
            );
        } else {
            limited += 1;
            assert!((1..=longest).contains(&r[3]), "retry_after {r:?}");
            assert!((r[3]..=longest).contains(&r[4]), "reset_after {r:?}");
        }
        if replies <= limit {
            assert_eq!(r[0], 0, "the first {limit} requests on a fresh key fit");
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    println!(
        "RL.SLICE {limit} per {window_ms} ms in {slices} slices: {replies} requests, {} admitted, {limited} limited",
        admitted.len()
    );
    for (i, group) in admitted.windows(limit + 1).enumerate() {
        let earliest = group[0].0;
        let latest = group[limit].1;
        assert!(
            latest - earliest >= window,
            "admissions {i}..={} certainly fell within {:?} < {window:?}: {group:?}",
            i + limit,
            latest - earliest
        );
    }
}

#[test]
fn never_more_than_limit_in_any_window() {
    let server = Server::start();
    let mut con = server.conn();
    check_strict(&mut con, "strict4", 5, 200, 4);
    check_strict(&mut con, "strict1", 5, 200, 1);
}

#[test]
fn one_slice_is_a_strict_fixed_window_plus_one() {
    let server = Server::start();
    let mut con = server.conn();
    // Limit 3 per 300 ms, one slice: slice j is [300j, 300j + 300) ms since
    // the epoch, and its units are counted until slice j + 2 begins. A fixed
    // window counter would admit 3 more at the start of slice j + 1 (a
    // double burst); this one does not.
    const LEN: i128 = 300 * NS_PER_MS;
    let args = ["RL.SLICE", "", "3", "300", "1", "MS"];
    for attempt in 0..8 {
        let key = format!("one:{attempt}");
        let call = |con: &mut Connection, quantity: &str| {
            let mut a = args.to_vec();
            a[1] = &key;
            a.insert(5, quantity);
            timed(con, &a)
        };
        let in_slice = |c: &Timed, j: i128| c.sent / LEN == j && c.received / LEN == j;
        // Fill late in a slice j.
        while unix_ns() % LEN < 200 * NS_PER_MS || unix_ns() % LEN > 240 * NS_PER_MS {
            std::thread::sleep(Duration::from_millis(1));
        }
        let j = unix_ns() / LEN;
        let fill: Vec<Timed> = (0..3).map(|_| call(&mut con, "1")).collect();
        let over = call(&mut con, "1");
        if !fill.iter().chain([&over]).all(|c| in_slice(c, j)) {
            continue; // the calls were too slow to stay in one slice
        }
        let drop_out = (j + 2) * LEN;
        for (c, remaining) in fill.iter().zip([2, 1, 0]) {
            assert_eq!(&c.reply[..4], &[0, 3, remaining, -1]);
            assert!(ms_until(drop_out, c).contains(&c.reply[4]), "{:?}", c.reply);
        }
        assert_eq!(&over.reply[..3], &[1, 3, 0]);
        assert!(ms_until(drop_out, &over).contains(&over.reply[3]));
        assert!(ms_until(drop_out, &over).contains(&over.reply[4]));

        // Early in slice j + 1: still limited, told to wait for slice j + 2.
        sleep_until((j + 1) * LEN + 5 * NS_PER_MS);
        let next = call(&mut con, "1");
        if !in_slice(&next, j + 1) {
            continue;
        }
        assert_eq!(
            &next.reply[..3],
            &[1, 3, 0],
            "a double burst at the boundary"
        );
        assert!(ms_until(drop_out, &next).contains(&next.reply[3]));
        assert!((1..=300).contains(&next.reply[3]), "{:?}", next.reply);

        // From slice j + 2 on, the whole limit is back.
        sleep_until(drop_out);
        let back = call(&mut con, "3");
        assert_eq!(&back.reply[..4], &[0, 3, 0, -1], "{:?}", back.reply);
        assert!((301..=600).contains(&back.reply[4]), "{:?}", back.reply);
        if back.sent / LEN == back.received / LEN {
            let k = back.sent / LEN;
            assert!(ms_until((k + 2) * LEN, &back).contains(&back.reply[4]));
        }
        return;
    }
    panic!("eight attempts were too slow to stay within one 300 ms slice");
}

#[test]
fn memory_is_fixed_by_the_slice_count() {
    let server = Server::start();
    let mut con = server.conn();
    for slices in [6u64, 60, 3_600] {
        let key = format!("m{slices}");
        let n = slices.to_string();
        five(&mut con, &["RL.SLICE", &key, "1000", "3600", &n, "1"]);
        let usage = memory_usage(&mut con, &key);
        println!("RL.SLICE MEMORY USAGE, {slices} slices: {usage} bytes");
        assert!(
            usage <= 8 * slices as i64 + 100,
            "{slices} slices take {usage} bytes"
        );
        // Traffic does not change it.
        for _ in 0..200 {
            five(&mut con, &["RL.SLICE", &key, "1000", "3600", &n, "3"]);
        }
        assert_eq!(memory_usage(&mut con, &key), usage, "{slices} slices");
    }
}

#[test]
fn command_metadata() {
    let server = Server::start();
    let mut con = server.conn();
    assert_command_metadata(
        &mut con,
        "RL.SLICE",
        -5,
        &[
            "slices",
            "limited, limit, remaining, retry_after, reset_after",
        ],
        &[
            &["RL.SLICE", "user:7", "1", "2", "3"],
            &["RL.SLICE", "user:7", "10", "60000", "6", "3", "MS"],
        ],
        &[
            ("key", "key", false, None),
            ("limit", "integer", false, None),
            ("window", "integer", false, None),
            ("slices", "integer", false, None),
            ("quantity", "integer", true, None),
            ("ms", "pure-token", true, Some("MS")),
        ],
    );
}
