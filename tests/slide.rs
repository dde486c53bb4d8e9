//! RL.SLIDE against a real server: the reply table, peeks, expiry, types,
//! bad input, parameter changes, the exact window under real time, memory
//! and command metadata. Persistence and replication are in persistence.rs.

mod common;
use common::*;

use std::time::{Duration, Instant};

#[test]
fn reply_table() {
    let server = Server::start();
    let mut con = server.conn();
    // Limit 3 per 60 s, then 1 per hour, then 10 per 120,000 ms. All the
    // calls of one attempt run within one wall-clock second (checked), so a
    // time of 60 s minus a fraction, rounded up, reads exactly 60.
    // args => limited, limit, remaining, retry_after, reset_after
    #[rustfmt::skip]
    let table: &[(&[&str], [i64; 5])] = &[
        // a peek on a missing key: full capacity, nothing to reset
        (&["RL.SLIDE", "a", "3", "60", "0"],             [0, 3, 3, -1, 0]),
        (&["RL.SLIDE", "a", "3", "60"],                  [0, 3, 2, -1, 60]),
        // quantity > 1 takes the rest
        (&["RL.SLIDE", "a", "3", "60", "2"],             [0, 3, 0, -1, 60]),
        // full: the first unit leaves 60 s after it came (59.9.. rounded up)
        (&["RL.SLIDE", "a", "3", "60"],                  [1, 3, 0, 60, 60]),
        (&["RL.SLIDE", "a", "3", "60", "3"],             [1, 3, 0, 60, 60]),
        // a peek on a full log fits
        (&["RL.SLIDE", "a", "3", "60", "0"],             [0, 3, 0, -1, 60]),
        // quantity > limit can never fit: retry_after -1
        (&["RL.SLIDE", "a", "3", "60", "4"],             [1, 3, 0, -1, 60]),
        (&["RL.SLIDE", "a", "3", "60", "1000000000000"], [1, 3, 0, -1, 60]),
        // a raised limit lets one more in
        (&["RL.SLIDE", "a", "4", "60"],                  [0, 4, 0, -1, 60]),
        (&["RL.SLIDE", "a", "4", "60"],                  [1, 4, 0, 60, 60]),
        // quantity > limit on a missing key: limited, nothing stored
        (&["RL.SLIDE", "never", "3", "60", "4"],         [1, 3, 3, -1, 0]),
        (&["RL.SLIDE", "b", "1", "3600"],                [0, 1, 0, -1, 3600]),
        (&["RL.SLIDE", "b", "1", "3600"],                [1, 1, 0, 3600, 3600]),
        // MS: replies in milliseconds; a unit recorded now leaves exactly
        // one window later
        (&["RL.SLIDE", "c", "10", "120000", "4", "MS"],  [0, 10, 6, -1, 120000]),
        (&["RL.SLIDE", "c", "10", "120000", "6", "ms"],  [0, 10, 0, -1, 120000]),
        // the same key read in seconds
        (&["RL.SLIDE", "c", "10", "120", "0"],           [0, 10, 0, -1, 120]),
    ];
    let (_, (replies, suffix)) = in_one_second(|suffix| {
        let replies: Vec<[i64; 5]> = table
            .iter()
            .map(|(args, _)| {
                let mut args = args.to_vec();
                let key = format!("{}{suffix}", args[1]);
                args[1] = &key;
                five(&mut con, &args)
            })
            .collect();
        (replies, suffix.to_string())
    });
    for ((args, expected), got) in table.iter().zip(&replies) {
        assert_eq!(got, expected, "{args:?}");
    }
    assert!(
        !exists(&mut con, &format!("never{suffix}")),
        "a request that can never fit created its key"
    );

    // Limited in MS: the oldest unit of `c` leaves 120,000 ms after it
    // came, which was at most `elapsed` ago.
    let since = Instant::now();
    five(&mut con, &["RL.SLIDE", "d", "2", "120000", "2", "MS"]);
    let r = five(&mut con, &["RL.SLIDE", "d", "2", "120000", "1", "MS"]);
    let elapsed = ms_since(since);
    assert_eq!(&r[..3], &[1, 2, 0], "{r:?}");
    assert!(
        (120_000 - elapsed..=120_000).contains(&r[3]),
        "retry_after {r:?}, {elapsed} ms elapsed"
    );
    assert!(
        (120_000 - elapsed..=120_000).contains(&r[4]),
        "reset_after {r:?}, {elapsed} ms elapsed"
    );
    // Rounded up, never 0 while limited; the reset is no earlier.
    assert!(r[3] >= 1 && r[4] >= r[3]);
}

#[test]
fn peek_changes_nothing() {
    let server = Server::start();
    let mut con = server.conn();

    // On a missing key: the full capacity, and nothing is created.
    let dirty_before = dirty(&mut con);
    assert_eq!(
        five(&mut con, &["RL.SLIDE", "p", "4", "60", "0"]),
        [0, 4, 4, -1, 0]
    );
    assert_eq!(
        five(&mut con, &["RL.SLIDE", "p", "4", "60000", "0", "MS"]),
        [0, 4, 4, -1, 0]
    );
    assert!(!exists(&mut con, "p"));
    assert_eq!(dbsize(&mut con), 0);
    assert_eq!(dirty(&mut con), dirty_before);

    // On an existing key: digest, expiry and the dirty counter stay.
    let recorded = Instant::now();
    assert_eq!(
        five(&mut con, &["RL.SLIDE", "p", "4", "60", "2"]),
        [0, 4, 2, -1, 60]
    );
    let snapshot = |con: &mut Connection| (digest(con), pexpiretime(con, "p"), dirty(con));
    let before = snapshot(&mut con);
    for _ in 0..5 {
        let r = five(&mut con, &["RL.SLIDE", "p", "4", "60", "0"]);
        assert_eq!(&r[..4], &[0, 4, 2, -1], "{r:?}");
        assert!((1..=60).contains(&r[4]), "{r:?}");
    }
    // Peeks with other parameters read the same log.
    let r = five(&mut con, &["RL.SLIDE", "p", "10", "3600", "0"]);
    assert_eq!(&r[..4], &[0, 10, 8, -1], "{r:?}");
    let r = five(&mut con, &["RL.SLIDE", "p", "2", "60000", "0", "MS"]);
    assert_eq!(&r[..4], &[0, 2, 0, -1], "{r:?}");
    let elapsed = ms_since(recorded);
    assert!((60_000 - elapsed..=60_000).contains(&r[4]), "{r:?}");
    assert_eq!(snapshot(&mut con), before);

    // A limited request changes nothing either.
    assert_eq!(
        &five(&mut con, &["RL.SLIDE", "p", "4", "60", "2"])[..4],
        &[0, 4, 0, -1]
    );
    let before = snapshot(&mut con);
    for args in [
        &["RL.SLIDE", "p", "4", "60"][..],
        &["RL.SLIDE", "p", "4", "60", "3"],
        &["RL.SLIDE", "p", "4", "60", "5"],
        &["RL.SLIDE", "p", "3", "60", "1"],
        &["RL.SLIDE", "p", "4", "60000", "1", "MS"],
    ] {
        let r = five(&mut con, args);
        assert_eq!(
            &r[..3],
            &[1, args[2].parse::<i64>().unwrap(), 0],
            "{args:?}"
        );
    }
    assert_eq!(snapshot(&mut con), before);
}

#[test]
fn expiry_is_the_reset_moment() {
    let server = Server::start();
    let mut con = server.conn();
    let since = Instant::now();
    let r = five(&mut con, &["RL.SLIDE", "e", "10", "60", "3"]);
    assert_eq!(r, [0, 10, 7, -1, 60]);
    let ttl: i64 = redis::cmd("TTL").arg("e").query(&mut con).unwrap();
    // TTL rounds to the nearest second.
    let elapsed_s = (ms_since(since) + 999) / 1000;
    assert!((59 - elapsed_s..=60).contains(&ttl), "ttl {ttl}");
    let kind: String = redis::cmd("TYPE").arg("e").query(&mut con).unwrap();
    assert_eq!(kind, "rl-slide-");

    // In ms: the expiry is the reset instant rounded up to the millisecond.
    let since = Instant::now();
    let r = five(&mut con, &["RL.SLIDE", "m", "10", "90000", "3", "MS"]);
    assert_eq!(r, [0, 10, 7, -1, 90000]);
    let pttl: i64 = redis::cmd("PTTL").arg("m").query(&mut con).unwrap();
    let elapsed = ms_since(since);
    assert!(
        (90_000 - elapsed - 1..=90_001).contains(&pttl),
        "pttl {pttl}, {elapsed} ms elapsed"
    );
    // A later unit moves the expiry to its own reset moment.
    std::thread::sleep(Duration::from_millis(20));
    let since = Instant::now();
    let r = five(&mut con, &["RL.SLIDE", "m", "10", "90000", "1", "MS"]);
    assert_eq!(r, [0, 10, 6, -1, 90000]);
    let pttl: i64 = redis::cmd("PTTL").arg("m").query(&mut con).unwrap();
    let elapsed = ms_since(since);
    assert!(
        (90_000 - elapsed - 1..=90_001).contains(&pttl),
        "pttl {pttl}, {elapsed} ms elapsed"
    );

    // A short window: the key disappears by itself, and a new request then
    // sees a full limiter.
    assert_eq!(
        five(&mut con, &["RL.SLIDE", "short", "2", "150", "2", "MS"]),
        [0, 2, 0, -1, 150]
    );
    let pttl: i64 = redis::cmd("PTTL").arg("short").query(&mut con).unwrap();
    assert!((0..=151).contains(&pttl), "pttl {pttl}");
    wait_until(5, "the key to expire", || !exists(&mut con, "short"));
    assert_eq!(
        five(&mut con, &["RL.SLIDE", "short", "2", "150", "0", "MS"]),
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
    five(&mut con, &["RL.SLICE", "slice", "5", "60", "6"]);
    let gcra = digest_value(&mut con, "gcra");
    let slice = digest_value(&mut con, "slice");
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for key in ["s", "l", "gcra", "slice"] {
        for args in [
            &["RL.SLIDE", key, "5", "60"][..],
            &["RL.SLIDE", key, "5", "60", "0"],
            &["RL.SLIDE", key, "5", "60000", "2", "MS"],
            &["RL.SLIDE", key, "5", "60", "6"],
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
    assert_eq!(digest_value(&mut con, "slice"), slice);
    // And the other commands refuse a slide key.
    five(&mut con, &["RL.SLIDE", "slide", "5", "60"]);
    assert_eq!(
        error(&mut con, &["RL.THROTTLE", "slide", "5", "1", "60"]),
        wrongtype
    );
    assert_eq!(
        error(&mut con, &["RL.SLICE", "slide", "5", "60", "6"]),
        wrongtype
    );
}

#[test]
fn bad_input_table() {
    let server = Server::start();
    let mut con = server.conn();
    let arity = "ERR wrong number of arguments for 'rl.slide' command";
    let limit = "ERR limit must be an integer from 1 to 1000000";
    let window_s = "ERR window must be an integer from 1 to 315360000 (seconds)";
    let window_ms = "ERR window must be an integer from 1 to 315360000000 (milliseconds, with MS)";
    let quantity = "ERR quantity must be an integer from 0 to 1000000000000";
    let at = "ERR AT is accepted only from the master or the AOF: it carries the master's clock";
    // args => error reply (compared case-insensitively)
    #[rustfmt::skip]
    let table: &[(&[&str], &str)] = &[
        (&["RL.SLIDE"], arity),
        (&["RL.SLIDE", "k"], arity),
        (&["RL.SLIDE", "k", "5"], arity),
        (&["RL.SLIDE", "k", "0", "60"], limit),
        (&["RL.SLIDE", "k", "1000001", "60"], limit),
        (&["RL.SLIDE", "k", "100000001", "60"], limit),
        (&["RL.SLIDE", "k", "-1", "60"], limit),
        (&["RL.SLIDE", "k", "1.5", "60"], limit),
        (&["RL.SLIDE", "k", " 5", "60"], limit),
        (&["RL.SLIDE", "k", "", "60"], limit),
        (&["RL.SLIDE", "k", "five", "60"], limit),
        (&["RL.SLIDE", "k", "5", "0"], window_s),
        (&["RL.SLIDE", "k", "5", "315360001"], window_s),
        (&["RL.SLIDE", "k", "5", "-60"], window_s),
        (&["RL.SLIDE", "k", "5", "99999999999999999999999"], window_s),
        (&["RL.SLIDE", "k", "5", "0", "MS"], window_ms),
        (&["RL.SLIDE", "k", "5", "315360000001", "MS"], window_ms),
        (&["RL.SLIDE", "k", "5", "60", "-1"], quantity),
        (&["RL.SLIDE", "k", "5", "60", "1000000000001"], quantity),
        (&["RL.SLIDE", "k", "5", "60", "1x"], quantity),
        (&["RL.SLIDE", "k", "5", "60", "1", "2"], "ERR unknown argument '2'"),
        (&["RL.SLIDE", "k", "5", "60", "MS", "1"], "ERR unknown argument '1'"),
        (&["RL.SLIDE", "k", "5", "60", "NX"], "ERR unknown argument 'NX'"),
        (&["RL.SLIDE", "k", "5", "60", "1", "SECONDS"], "ERR unknown argument 'SECONDS'"),
        (&["RL.SLIDE", "k", "5", "60", "MS", "MS"], "ERR MS is given more than once"),
        (&["RL.SLIDE", "k", "5", "60", "1", "ms", "Ms"], "ERR MS is given more than once"),
        (&["RL.SLIDE", "k", "5", "60", "AT", "1"], at),
        (&["RL.SLIDE", "k", "5", "60", "1", "MS", "AT", "1700000000000000000"], at),
        (&["RL.SLIDE", "k", "5", "60", "AT"], at),
        (&["RL.SLIDE", "k", "5", "60", "1", "MS", "x", "x", "x", "x", "x", "x"], "ERR unknown argument 'x'"),
    ];
    assert_errors(&mut con, table);
    // No failed call created a key.
    assert_eq!(dbsize(&mut con), 0);
}

#[test]
fn changed_parameters_apply_to_what_was_recorded() {
    let server = Server::start();
    let mut con = server.conn();
    // 4 units recorded under limit 5; the state is the log, whatever the
    // parameters of later calls. All calls within one second.
    // args => limited, limit, remaining, retry_after, reset_after
    #[rustfmt::skip]
    let table: &[(&[&str], [i64; 5])] = &[
        (&["RL.SLIDE", "k", "5", "60", "4"],  [0, 5, 1, -1, 60]),
        // a lowered limit applies at once: even a peek is over it, until
        // one unit leaves
        (&["RL.SLIDE", "k", "3", "60", "0"],  [1, 3, 0, 60, 60]),
        (&["RL.SLIDE", "k", "3", "60"],       [1, 3, 0, 60, 60]),
        (&["RL.SLIDE", "k", "1", "60"],       [1, 1, 0, 60, 60]),
        (&["RL.SLIDE", "k", "4", "60"],       [1, 4, 0, 60, 60]),
        (&["RL.SLIDE", "k", "4", "60", "0"],  [0, 4, 0, -1, 60]),
        // a shorter or longer window reads the same timestamps
        (&["RL.SLIDE", "k", "4", "30"],       [1, 4, 0, 30, 30]),
        (&["RL.SLIDE", "k", "4", "120"],      [1, 4, 0, 120, 120]),
        // back to limit 5: one unit left
        (&["RL.SLIDE", "k", "5", "60"],       [0, 5, 0, -1, 60]),
        (&["RL.SLIDE", "k", "5", "60"],       [1, 5, 0, 60, 60]),
    ];
    let calls: Vec<&[&str]> = table.iter().map(|(args, _)| *args).collect();
    let (_, replies) = run_in_one_second(&mut con, &calls);
    for ((args, expected), got) in table.iter().zip(&replies) {
        assert_eq!(got, expected, "{args:?}");
    }
}

#[test]
fn the_window_slides_exactly_in_real_time() {
    let server = Server::start();
    let mut con = server.conn();
    // Limit 3 per 300 ms.
    let start = Instant::now();
    for remaining in [2, 1, 0] {
        assert_eq!(
            five(&mut con, &["RL.SLIDE", "w", "3", "300", "MS"]),
            [0, 3, remaining, -1, 300]
        );
    }
    let r = five(&mut con, &["RL.SLIDE", "w", "3", "300", "MS"]);
    let elapsed = ms_since(start);
    assert_eq!(&r[..3], &[1, 3, 0], "{r:?}");
    // The first unit came at most `elapsed` ago and leaves 300 ms after it
    // came; rounded up, so at least 1.
    let retry = r[3];
    assert!(
        (1..=300).contains(&retry) && retry >= 300 - elapsed,
        "retry_after {retry}, {elapsed} ms elapsed"
    );
    assert!((retry..=300).contains(&r[4]), "reset_after {r:?}");
    // Waiting exactly retry_after is enough. The other two units may or may
    // not have left too, so `remaining` is 0 to 2; a unit taken now resets
    // exactly one window from now.
    std::thread::sleep(Duration::from_millis(retry as u64));
    let r = five(&mut con, &["RL.SLIDE", "w", "3", "300", "MS"]);
    assert_eq!(r[0], 0, "limited after waiting retry_after: {r:?}");
    assert_eq!((r[1], r[3], r[4]), (3, -1, 300), "{r:?}");
    assert!((0..=2).contains(&r[2]), "{r:?}");

    // Exact, not fixed windows: limit 2 per 400 ms, units 200 ms apart.
    let a_sent = Instant::now();
    assert_eq!(
        five(&mut con, &["RL.SLIDE", "x", "2", "400", "MS"]),
        [0, 2, 1, -1, 400]
    );
    std::thread::sleep(Duration::from_millis(200));
    let b_sent = Instant::now();
    let r = five(&mut con, &["RL.SLIDE", "x", "2", "400", "MS"]);
    assert_eq!(&r[..4], &[0, 2, 0, -1], "{r:?}");
    let r = five(&mut con, &["RL.SLIDE", "x", "2", "400", "MS"]);
    let since_a = ms_since(a_sent);
    assert_eq!(&r[..3], &[1, 2, 0], "{r:?}");
    // The first unit leaves 400 ms after it came, which was at least 200 ms
    // and at most `since_a` ago.
    let retry = r[3];
    assert!(
        (400 - since_a..=200).contains(&retry),
        "retry_after {retry}, {since_a} ms since the first unit"
    );
    std::thread::sleep(Duration::from_millis(retry as u64));
    let r = five(&mut con, &["RL.SLIDE", "x", "2", "400", "MS"]);
    let since_b = ms_since(b_sent);
    assert_eq!((r[0], r[1], r[3], r[4]), (0, 2, -1, 400), "{r:?}");
    if since_b < 400 {
        // The second unit is certainly still in the window.
        assert_eq!(r[2], 0, "{r:?}");
    }
}

#[test]
fn memory_is_eight_bytes_per_unit() {
    let server = Server::start();
    let mut con = server.conn();
    for units in [10u64, 1_000, 100_000] {
        let key = format!("m{units}");
        let n = units.to_string();
        assert_eq!(
            five(&mut con, &["RL.SLIDE", &key, &n, "600", &n]),
            [0, units as i64, 0, -1, 600]
        );
        let usage = memory_usage(&mut con, &key);
        println!("RL.SLIDE MEMORY USAGE, {units} units (limit {units}): {usage} bytes");
        assert!(
            usage <= 8 * units as i64 + 200,
            "{units} units take {usage} bytes"
        );
    }
    // The same 1,000 units taken one by one: the ring grows by doubling but
    // never past the limit.
    for _ in 0..1_000 {
        assert_eq!(five(&mut con, &["RL.SLIDE", "one", "1000", "600"])[0], 0);
    }
    assert_eq!(five(&mut con, &["RL.SLIDE", "one", "1000", "600"])[0], 1);
    let usage = memory_usage(&mut con, "one");
    println!("RL.SLIDE MEMORY USAGE, 1000 units taken one by one (limit 1000): {usage} bytes");
    assert!(usage <= 8 * 1_000 + 200, "{usage} bytes");
}

#[test]
fn command_metadata() {
    let server = Server::start();
    let mut con = server.conn();
    assert_command_metadata(
        &mut con,
        "RL.SLIDE",
        -4,
        &[
            "sliding",
            "limited, limit, remaining, retry_after, reset_after",
        ],
        &[
            &["RL.SLIDE", "user:7", "1", "2"],
            &["RL.SLIDE", "user:7", "10", "60000", "3", "MS"],
        ],
        &[
            ("key", "key", false, None),
            ("limit", "integer", false, None),
            ("window", "integer", false, None),
            ("quantity", "integer", true, None),
            ("ms", "pure-token", true, Some("MS")),
        ],
    );
}

#[test]
fn a_longer_window_keeps_the_key_while_limited() {
    let server = Server::start();
    let mut con = server.conn();
    // Full for one second...
    assert_eq!(
        &five(&mut con, &["RL.SLIDE", "k", "2", "1000", "2", "MS"])[..3],
        &[0, 2, 0]
    );
    let short = pexpiretime(&mut con, "k");
    // ...then asked with a one-minute window: limited, and the key now
    // lives as long as its units count under that window.
    let r = five(&mut con, &["RL.SLIDE", "k", "2", "60000", "1", "MS"]);
    assert_eq!(&r[..3], &[1, 2, 0]);
    let long = pexpiretime(&mut con, "k");
    assert!(long >= short + 58_000, "expiry {short} -> {long}");
    assert!(long <= short + 60_000, "expiry {short} -> {long}");
    // A peek with an even longer window touches nothing.
    five(&mut con, &["RL.SLIDE", "k", "2", "120000", "0", "MS"]);
    assert_eq!(pexpiretime(&mut con, "k"), long);
    // After the short window the units still count.
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    let r = five(&mut con, &["RL.SLIDE", "k", "2", "60000", "1", "MS"]);
    assert_eq!(&r[..3], &[1, 2, 0]);
}
