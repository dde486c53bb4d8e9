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

/// Epoch-aligned slices: `window` ns cut into `slices`.
#[derive(Clone, Copy, PartialEq)]
struct Geo {
    window: i128,
    slices: i128,
}

const fn geo(window_s: i128, slices: i128) -> Geo {
    Geo {
        window: window_s * NS_PER_S,
        slices,
    }
}

impl Geo {
    /// `idx(t) = floor(t × S / W)`.
    fn idx(self, t: i128) -> i128 {
        (t * self.slices).div_euclid(self.window)
    }

    /// `start(j) = ceil(j × W / S)`.
    fn start(self, j: i128) -> i128 {
        (j * self.window + self.slices - 1).div_euclid(self.slices)
    }

    /// When a unit recorded at `t` stops being counted: when slice
    /// `idx(t) + S + 1` starts.
    fn drop_out(self, t: i128) -> i128 {
        self.start(self.idx(t) + self.slices + 1)
    }

    /// The same under `new` parameters: the unit's slice moves to the new
    /// slice that holds the old slice's last instant (docs/DESIGN.md#parameter-changes).
    fn drop_out_under(self, new: Geo, t: i128) -> i128 {
        if new == self {
            return self.drop_out(t);
        }
        let last = self.start(self.idx(t) + 1) - 1;
        new.drop_out(last)
    }
}

/// What a time in a reply, in `unit` ns, can read when it runs from a call
/// made in [`call.sent`, `call.received`] to `end(t)`, for a unit recorded
/// at some `t` in [`rec.sent`, `rec.received`]; `end` never decreases.
fn reply_time(
    rec: &Timed,
    end: impl Fn(i128) -> i128,
    call: &Timed,
    unit: i128,
) -> RangeInclusive<i64> {
    ceil_to(end(rec.sent) - call.received, unit)..=ceil_to(end(rec.received) - call.sent, unit)
}

/// What PEXPIRETIME can read when the key expires at `end(t)` rounded up
/// to the ms, for a unit recorded at some `t` in [`rec.sent`, `rec.received`].
fn expiry_time(rec: &Timed, end: impl Fn(i128) -> i128) -> RangeInclusive<i64> {
    ceil_to(end(rec.sent), NS_PER_MS)..=ceil_to(end(rec.received), NS_PER_MS)
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

    // On an existing key: values, expiries and the dirty counter stay.
    // Six slices of 10 s: the units count until slice idx + 7 starts.
    let g = geo(60, 6);
    let fill = timed(&mut con, &["RL.SLICE", "p", "4", "60", "6", "2"]);
    assert_eq!(&fill.reply[..4], &[0, 4, 2, -1]);
    let reset = reply_time(&fill, |t| g.drop_out(t), &fill, NS_PER_S);
    assert!(reset.contains(&fill.reply[4]), "{:?}", fill.reply);
    let snapshot = |con: &mut Connection| (dataset(con), dirty(con));
    let before = snapshot(&mut con);
    for _ in 0..5 {
        let c = timed(&mut con, &["RL.SLICE", "p", "4", "60", "6", "0"]);
        assert_eq!(&c.reply[..4], &[0, 4, 2, -1], "{:?}", c.reply);
        let reset = reply_time(&fill, |t| g.drop_out(t), &c, NS_PER_S);
        assert!(reset.contains(&c.reply[4]), "{:?}", c.reply);
    }
    // Peeks with another limit, window or slice count (which rebuckets the
    // counters to answer) change nothing either; each reads the reset of
    // its own geometry.
    for (args, new, unit) in [
        (&["RL.SLICE", "p", "10", "60", "6", "0"][..], g, NS_PER_S),
        (
            &["RL.SLICE", "p", "10", "120", "10", "0"],
            geo(120, 10),
            NS_PER_S,
        ),
        (
            &["RL.SLICE", "p", "10", "30", "1", "0"],
            geo(30, 1),
            NS_PER_S,
        ),
        (
            &["RL.SLICE", "p", "10", "60000", "6", "0", "MS"],
            g,
            NS_PER_MS,
        ),
    ] {
        let c = timed(&mut con, args);
        assert_eq!(&c.reply[..4], &[0, 10, 8, -1], "{args:?}: {:?}", c.reply);
        let reset = reply_time(&fill, |t| g.drop_out_under(new, t), &c, unit);
        assert!(
            reset.contains(&c.reply[4]),
            "{args:?}: {:?} not in {reset:?}",
            c.reply
        );
    }
    assert_eq!(snapshot(&mut con), before);

    // A limited request changes nothing either, with any parameters.
    let second = timed(&mut con, &["RL.SLICE", "p", "4", "60", "6", "2"]);
    assert_eq!(&second.reply[..4], &[0, 4, 0, -1]);
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
    // longer than the key's expiry, so the expiry grows (and nothing else):
    // to when the newest units stop counting under the new geometry.
    let value: Vec<u8> = redis::cmd("DUMP").arg("p").query(&mut con).unwrap();
    let r = five(&mut con, &["RL.SLICE", "p", "4", "120", "10", "1"]);
    assert_eq!(&r[..3], &[1, 4, 0]);
    let expiry = pexpiretime(&mut con, "p");
    let expected = expiry_time(&second, |t| g.drop_out_under(geo(120, 10), t));
    assert!(expected.contains(&expiry), "{expiry} not in {expected:?}");
    let after: Vec<u8> = redis::cmd("DUMP").arg("p").query(&mut con).unwrap();
    assert_eq!(after, value, "the state itself is unchanged");
}

#[test]
fn expiry_is_the_reset_moment() {
    let server = Server::start();
    let mut con = server.conn();
    // 6 slices of 10 s: counted until slice idx + 7 starts, 60 to 70 s
    // from now; the key expires then (a whole second here).
    let g = geo(60, 6);
    let c = timed(&mut con, &["RL.SLICE", "e", "10", "60", "6", "3"]);
    assert_eq!(&c.reply[..4], &[0, 10, 7, -1]);
    assert!(reply_time(&c, |t| g.drop_out(t), &c, NS_PER_S).contains(&c.reply[4]));
    assert!((61..=70).contains(&c.reply[4]), "{:?}", c.reply);
    let expiry = pexpiretime(&mut con, "e");
    assert!(
        expiry_time(&c, |t| g.drop_out(t)).contains(&expiry),
        "{expiry}"
    );
    let kind: String = redis::cmd("TYPE").arg("e").query(&mut con).unwrap();
    assert_eq!(kind, "rl-slice-");

    // In ms.
    let c = timed(&mut con, &["RL.SLICE", "m", "10", "60000", "6", "3", "MS"]);
    assert_eq!(&c.reply[..4], &[0, 10, 7, -1]);
    assert!(reply_time(&c, |t| g.drop_out(t), &c, NS_PER_MS).contains(&c.reply[4]));
    assert!((60_001..=70_000).contains(&c.reply[4]), "{:?}", c.reply);
    let expiry = pexpiretime(&mut con, "m");
    assert!(
        expiry_time(&c, |t| g.drop_out(t)).contains(&expiry),
        "{expiry}"
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
    // Limit 5 filled in 6 slices of 10 s, at `t`. Under each new geometry
    // the units move to the new slice holding the last instant of their
    // 10 s slice, and count until that slice drops out: every time below
    // is computed from that, and from the clock around each call.
    let g = geo(60, 6);
    let fill = timed(&mut con, &["RL.SLICE", "k", "5", "60", "6", "5"]);
    assert_eq!(&fill.reply[..4], &[0, 5, 0, -1]);
    assert!(reply_time(&fill, |t| g.drop_out(t), &fill, NS_PER_S).contains(&fill.reply[4]));
    let before = dataset(&mut con);
    // args => the geometry of the call, the unit of its reply
    #[rustfmt::skip]
    let table: &[(&[&str], Geo, i128)] = &[
        (&["RL.SLICE", "k", "5", "120", "10"], geo(120, 10), NS_PER_S),
        (&["RL.SLICE", "k", "5", "30", "3"], geo(30, 3), NS_PER_S),
        (&["RL.SLICE", "k", "5", "60", "1"], geo(60, 1), NS_PER_S),
        (&["RL.SLICE", "k", "5", "3600", "3600"], geo(3600, 3600), NS_PER_S),
        (&["RL.SLICE", "k", "5", "60000", "6", "1", "MS"], g, NS_PER_MS),
        // a peek: it fits exactly
        (&["RL.SLICE", "k", "5", "120", "10", "0"], geo(120, 10), NS_PER_S),
    ];
    for (args, new, unit) in table {
        let c = timed(&mut con, args);
        let r = c.reply;
        let until = reply_time(&fill, |t| g.drop_out_under(*new, t), &c, *unit);
        assert!(until.contains(&r[4]), "{args:?}: {r:?} vs {until:?}");
        if args.len() == 6 && args[5] == "0" {
            assert_eq!(&r[..4], &[0, 5, 0, -1], "{args:?}");
            continue;
        }
        // One slice holds every unit: retry when it drops out, which is
        // also the reset.
        assert_eq!(&r[..3], &[1, 5, 0], "still limited: {args:?}");
        assert_eq!(r[3], r[4], "{args:?}: {r:?}");
    }
    // Limited requests changed nothing but the expiry, which moved out to
    // when the units stop counting under the longest window asked
    // (3,600 slices of 1 s: slice idx + 3,601 of the units' last second).
    let after = dataset(&mut con);
    assert_eq!(after.digest, before.digest);
    let expiry = after.expiries["0:k"];
    let expected = expiry_time(&fill, |t| g.drop_out_under(geo(3600, 3600), t));
    assert!(expected.contains(&expiry), "{expiry} not in {expected:?}");

    // A raised limit under a new geometry: the five units still count.
    let c = timed(&mut con, &["RL.SLICE", "k", "6", "120", "10"]);
    assert_eq!(&c.reply[..4], &[0, 6, 0, -1], "{:?}", c.reply);
    // Counted until the later of the moved units' and the new unit's
    // slices drops out.
    let g12 = geo(120, 10);
    let end = |t: i128| g.drop_out_under(g12, t);
    let reset = ceil_to(
        end(fill.sent).max(g12.drop_out(c.sent)) - c.received,
        NS_PER_S,
    )
        ..=ceil_to(
            end(fill.received).max(g12.drop_out(c.received)) - c.sent,
            NS_PER_S,
        );
    assert!(reset.contains(&c.reply[4]), "{:?} vs {reset:?}", c.reply);
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

/// MEMORY USAGE is computed: the state's struct (56 bytes) and its
/// `slices + 1` counters of 4 bytes, fixed by the slice count whatever the
/// traffic.
#[test]
fn memory_is_fixed_by_the_slice_count() {
    let server = Server::start();
    let mut con = server.conn();
    let mut expected = Vec::new();
    for (key, slices) in [("m1", 1i64), ("m6", 6), ("m60", 60), ("m3600", 3_600)] {
        let n = slices.to_string();
        five(&mut con, &["RL.SLICE", key, "1000", "3600", &n, "1"]);
        for _ in 0..200 {
            five(&mut con, &["RL.SLICE", key, "1000", "3600", &n, "3"]);
        }
        expected.push((key, 64 + 4 * (slices + 1)));
    }
    // A THROTTLE key, 16 bytes, for comparison across types.
    five(&mut con, &["RL.THROTTLE", "g", "1", "1", "60"]);
    expected.push(("g", 16));
    assert_memory_usage(&mut con, &expected);
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
            ("BLOCK", "integer", true, Some("BLOCK")),
        ],
    );
}
