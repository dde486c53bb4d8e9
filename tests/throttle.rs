//! RL.THROTTLE against a real server: replies, MS, peeks, types, bad input.

mod common;
use common::*;

#[test]
fn reply_table() {
    let server = Server::start();
    let mut con = server.conn();
    // 30 per 60 s, burst 15: T = 2 s, capacity 16. The calls run within a
    // second of each other; every expected value holds for any delay below
    // one second, because times are rounded up.
    // args => limited, limit, remaining, retry_after, reset_after
    #[rustfmt::skip]
    let table: &[(&[&str], [i64; 5])] = &[
        (&["RL.THROTTLE", "user:1", "15", "30", "60"],        [0, 16, 15, -1, 2]),
        (&["RL.THROTTLE", "user:1", "15", "30", "60", "14"],  [0, 16, 1, -1, 30]),
        (&["RL.THROTTLE", "user:1", "15", "30", "60", "1"],   [0, 16, 0, -1, 32]),
        (&["RL.THROTTLE", "user:1", "15", "30", "60"],        [1, 16, 0, 2, 32]),
        (&["RL.THROTTLE", "user:1", "15", "30", "60", "0"],   [0, 16, 0, -1, 32]),
        (&["RL.THROTTLE", "user:1", "15", "30", "60", "17"],  [1, 16, 0, -1, 32]),
        (&["RL.THROTTLE", "user:2", "0", "1", "3600", "1"],   [0, 1, 0, -1, 3600]),
        (&["RL.THROTTLE", "user:2", "0", "1", "3600", "1"],   [1, 1, 0, 3600, 3600]),
    ];
    for (args, expected) in table {
        assert_eq!(five(&mut con, args), *expected, "{args:?}");
    }
}

#[test]
fn milliseconds() {
    let server = Server::start();
    let mut con = server.conn();
    // 10 per 1,000 ms, burst 0: T = 100 ms.
    let r = five(
        &mut con,
        &["RL.THROTTLE", "k", "0", "10", "1000", "1", "MS"],
    );
    assert_eq!(r, [0, 1, 0, -1, 100]);
    let r = five(&mut con, &["RL.THROTTLE", "k", "0", "10", "1000", "MS"]);
    assert_eq!(&r[..3], &[1, 1, 0]);
    assert!((1..=100).contains(&r[3]), "retry_after {r:?}");
    assert!((1..=100).contains(&r[4]), "reset_after {r:?}");
    // The key expires when the limiter is full again.
    let pttl: i64 = redis::cmd("PTTL").arg("k").query(&mut con).unwrap();
    // The expiry is the reset instant rounded up to the millisecond.
    assert!((1..=101).contains(&pttl), "pttl {pttl}");
    // A million per second works: 1,000 per ms, T = 1 µs.
    let r = five(
        &mut con,
        &["RL.THROTTLE", "fast", "999", "1000", "1", "1000", "MS"],
    );
    assert_eq!(&r[..4], &[0, 1000, 0, -1]);
}

#[test]
fn peek_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    // A peek on a missing key creates nothing.
    assert_eq!(
        five(&mut con, &["RL.THROTTLE", "p", "4", "1", "60", "0"]),
        [0, 5, 5, -1, 0]
    );
    assert!(!exists(&mut con, "p"));

    five(&mut con, &["RL.THROTTLE", "p", "4", "1", "60", "2"]);
    let before = digest(&mut con);
    let ttl_before = pexpiretime(&mut con, "p");
    let dirty_before = dirty(&mut con);
    for _ in 0..5 {
        let r = five(&mut con, &["RL.THROTTLE", "p", "4", "1", "60", "0"]);
        assert_eq!(&r[..4], &[0, 5, 3, -1]);
    }
    assert_eq!(digest(&mut con), before);
    assert_eq!(pexpiretime(&mut con, "p"), ttl_before);
    assert_eq!(dirty(&mut con), dirty_before);

    // A limited request changes nothing either.
    five(&mut con, &["RL.THROTTLE", "p", "4", "1", "60", "3"]);
    let r = five(&mut con, &["RL.THROTTLE", "p", "4", "1", "60", "1"]);
    assert_eq!(r[0], 1);
    let after_limited = digest(&mut con);
    five(&mut con, &["RL.THROTTLE", "p", "4", "1", "60", "1"]);
    assert_eq!(digest(&mut con), after_limited);
}

#[test]
fn expiry_is_the_reset_moment() {
    let server = Server::start();
    let mut con = server.conn();
    let r = five(&mut con, &["RL.THROTTLE", "e", "9", "1", "60", "3"]);
    assert_eq!(r, [0, 10, 7, -1, 180]);
    let ttl: i64 = redis::cmd("TTL").arg("e").query(&mut con).unwrap();
    assert!((179..=180).contains(&ttl), "ttl {ttl}");
    let kind: String = redis::cmd("TYPE").arg("e").query(&mut con).unwrap();
    assert_eq!(kind, "rl-gcra--");
}

#[test]
fn wrong_types() {
    let server = Server::start();
    let mut con = server.conn();
    let _: () = redis::cmd("SET").arg("s").arg("x").query(&mut con).unwrap();
    let _: () = redis::cmd("LPUSH")
        .arg("l")
        .arg("x")
        .query(&mut con)
        .unwrap();
    five(&mut con, &["RL.SLIDE", "slide", "5", "60"]);
    five(&mut con, &["RL.SLICE", "slice", "5", "60", "6"]);
    five(&mut con, &["RL.THROTTLE", "gcra", "5", "1", "60"]);
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for key in ["s", "l", "slide", "slice"] {
        assert_eq!(
            error(&mut con, &["RL.THROTTLE", key, "5", "1", "60"]),
            wrongtype
        );
        assert_eq!(
            error(&mut con, &["RL.THROTTLE", key, "5", "1", "60", "0"]),
            wrongtype
        );
    }
    assert_eq!(error(&mut con, &["RL.SLIDE", "gcra", "5", "60"]), wrongtype);
    assert_eq!(
        error(&mut con, &["RL.SLICE", "gcra", "5", "60", "6"]),
        wrongtype
    );
    // The string is untouched.
    let s: String = redis::cmd("GET").arg("s").query(&mut con).unwrap();
    assert_eq!(s, "x");
}

#[test]
fn bad_input_table() {
    let server = Server::start();
    let mut con = server.conn();
    // args => error reply
    #[rustfmt::skip]
    let table: &[(&[&str], &str)] = &[
        (&["RL.THROTTLE", "k", "1", "2"], "ERR wrong number of arguments for 'rl.throttle' command"),
        (&["RL.THROTTLE", "k", "-1", "30", "60"], "ERR max_burst must be an integer from 0 to 1000000000000"),
        (&["RL.THROTTLE", "k", "1.5", "30", "60"], "ERR max_burst must be an integer from 0 to 1000000000000"),
        (&["RL.THROTTLE", "k", "15", "0", "60"], "ERR count must be an integer from 1 to 4294967295"),
        (&["RL.THROTTLE", "k", "15", "4294967296", "60"], "ERR count must be an integer from 1 to 4294967295"),
        (&["RL.THROTTLE", "k", "15", "30", "0"], "ERR period must be an integer from 1 to 315360000 (seconds)"),
        (&["RL.THROTTLE", "k", "15", "30", "99999999999999999999999"], "ERR period must be an integer from 1 to 315360000 (seconds)"),
        (&["RL.THROTTLE", "k", "15", "30", "0", "MS"], "ERR period must be an integer from 1 to 315360000000 (milliseconds, with MS)"),
        (&["RL.THROTTLE", "k", "15", "30", "60", "-1"], "ERR quantity must be an integer from 0 to 1000000000000"),
        (&["RL.THROTTLE", "k", "15", "30", "60", "1", "2"], "ERR unknown argument '2'"),
        (&["RL.THROTTLE", "k", "15", "30", "60", "NX"], "ERR unknown argument 'NX'"),
        (&["RL.THROTTLE", "k", "15", "30", "60", "MS", "MS"], "ERR MS is given more than once"),
        (&["RL.THROTTLE", "k", "15", "30", "60", "1", "MS", "AT", "1"], "ERR AT is accepted only from the master or the AOF: it carries the master's clock"),
        (&["RL.THROTTLE", "k", "1000000", "1", "315360000"], "ERR (max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)"),
        (&["RL.THROTTLE", "k", "1", "1", "1", "1", "MS", "x", "x", "x", "x", "x"], "ERR unknown argument 'x'"),
        (&["RL.STATE", "k", "Gxxxxxxxxxxxxxxxx"], "ERR RL.STATE is accepted only from the master or the AOF"),
    ];
    assert_errors(&mut con, table);
    // No failed call created a key.
    assert_eq!(dbsize(&mut con), 0);
}

#[test]
fn command_metadata() {
    let server = Server::start();
    let mut con = server.conn();
    assert_command_metadata(
        &mut con,
        "RL.THROTTLE",
        -5,
        &[
            "GCRA",
            "limited, limit, remaining, retry_after, reset_after",
        ],
        &[
            &["RL.THROTTLE", "user:7", "1", "2", "3"],
            &["RL.THROTTLE", "user:7", "15", "30", "60000", "2", "MS"],
        ],
        &[
            ("key", "key", false, None),
            ("max_burst", "integer", false, None),
            ("count", "integer", false, None),
            ("period", "integer", false, None),
            ("quantity", "integer", true, None),
            ("ms", "pure-token", true, Some("MS")),
        ],
    );
}
