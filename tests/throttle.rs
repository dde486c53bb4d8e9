//! RL.THROTTLE against a real server: replies, MS, peeks, types, bad input,
//! the tolerance's 100-year boundary, memory.

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
    // 10 per 600,000 ms, burst 0: T = τ = 60,000 ms. The unit is recorded
    // at some instant `t` in [sent, received]; the TAT is t + 60,000 ms.
    let (r, sent, received) = timed_five(
        &mut con,
        &["RL.THROTTLE", "k", "0", "10", "600000", "1", "MS"],
    );
    assert_eq!(r, [0, 1, 0, -1, 60_000]);
    // The key expires when the limiter is full again: at the TAT, rounded
    // up to the millisecond.
    let t = 60_000 * NS_PER_MS;
    let expiry = pexpiretime(&mut con, "k");
    assert!(
        (ceil_to(sent + t, NS_PER_MS)..=ceil_to(received + t, NS_PER_MS)).contains(&expiry),
        "expiry {expiry}, call in [{sent}, {received}]"
    );
    // With burst 0 the next unit must wait for the TAT itself: retry_after
    // and reset_after are the same instant, TAT - now, rounded up. (The
    // pause makes TAT - now measurably shorter than T.)
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (r, sent2, received2) =
        timed_five(&mut con, &["RL.THROTTLE", "k", "0", "10", "600000", "MS"]);
    assert_eq!(&r[..3], &[1, 1, 0], "{r:?}");
    assert_eq!(r[3], r[4], "retry_after is reset_after: {r:?}");
    let earliest = ceil_to(sent + t - received2, NS_PER_MS);
    let latest = ceil_to(received + t - sent2, NS_PER_MS);
    assert!((earliest..=latest).contains(&r[3]), "{r:?}");
    // And the limited request left the expiry where it was.
    assert_eq!(pexpiretime(&mut con, "k"), expiry);
    // A million per second works: 1,000 per ms, T = 1 µs.
    let r = five(
        &mut con,
        &["RL.THROTTLE", "fast", "999", "1000", "1", "1000", "MS"],
    );
    // Full for exactly 1,000 µs.
    assert_eq!(r, [0, 1000, 0, -1, 1]);
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

    // Two units at `t`: the TAT is t + 120 s.
    let (_, sent, received) = timed_five(&mut con, &["RL.THROTTLE", "p", "4", "1", "60", "2"]);
    let tat = (sent + 120 * NS_PER_S, received + 120 * NS_PER_S);
    let before = dataset(&mut con);
    let dirty_before = dirty(&mut con);
    for _ in 0..5 {
        let (r, s, e) = timed_five(&mut con, &["RL.THROTTLE", "p", "4", "1", "60", "0"]);
        assert_eq!(&r[..4], &[0, 5, 3, -1]);
        // reset_after: TAT - now, rounded up to the second.
        let reset = ceil_to(tat.0 - e, NS_PER_S)..=ceil_to(tat.1 - s, NS_PER_S);
        assert!(reset.contains(&r[4]), "{r:?}, expected {reset:?}");
    }
    assert_eq!(dataset(&mut con), before);
    assert_eq!(dirty(&mut con), dirty_before);

    // A limited request changes nothing either: value and expiry.
    five(&mut con, &["RL.THROTTLE", "p", "4", "1", "60", "3"]);
    let r = five(&mut con, &["RL.THROTTLE", "p", "4", "1", "60", "1"]);
    assert_eq!(r[0], 1);
    let after_limited = dataset(&mut con);
    for args in [
        &["RL.THROTTLE", "p", "4", "1", "60", "1"][..],
        &["RL.THROTTLE", "p", "4", "1", "60", "6"],
        &["RL.THROTTLE", "p", "0", "1", "3600", "1"],
        &["RL.THROTTLE", "p", "4", "7", "60000", "1", "MS"],
    ] {
        assert_eq!(five(&mut con, args)[0], 1, "{args:?}");
        assert_eq!(dataset(&mut con), after_limited, "{args:?}");
    }
}

/// A peek (quantity 0, however written) opens its key for reading, a call
/// that takes units for writing: the server counts keyspace hits and misses
/// for reads only. The key is opened before the arguments are read
/// (docs/DESIGN.md#flow), so the mode comes from the quantity's word.
#[test]
fn a_peek_reads_its_key_and_a_take_writes_it() {
    let server = Server::start();
    let mut con = server.conn();
    let lookups = |con: &mut Connection| {
        let hits: i64 = info_field(con, "stats", "keyspace_hits").parse().unwrap();
        let misses: i64 = info_field(con, "stats", "keyspace_misses").parse().unwrap();
        (hits, misses)
    };
    let (h0, m0) = lookups(&mut con);
    five(&mut con, &["RL.THROTTLE", "m", "4", "1", "60", "0"]);
    five(&mut con, &["RL.THROTTLE", "m", "4", "1", "60", "000", "MS"]);
    assert_eq!(lookups(&mut con), (h0, m0 + 2), "peeks read");
    five(&mut con, &["RL.THROTTLE", "m", "4", "1", "60"]);
    five(&mut con, &["RL.THROTTLE", "m", "4", "1", "60", "1"]);
    five(&mut con, &["RL.THROTTLE", "m", "4", "1", "60", "MS"]);
    assert_eq!(lookups(&mut con), (h0, m0 + 2), "takes write");
    five(&mut con, &["RL.THROTTLE", "m", "4", "1", "60", "0"]);
    assert_eq!(
        lookups(&mut con),
        (h0 + 1, m0 + 2),
        "a peek of a key that exists"
    );
    // An argument error after the key was opened changes nothing.
    let before = dataset(&mut con);
    assert!(error(&mut con, &["RL.THROTTLE", "m", "4", "1", "60", "x"]).starts_with("ERR"));
    assert!(error(&mut con, &["RL.THROTTLE", "m", "4", "1", "0"]).starts_with("ERR"));
    assert_eq!(dataset(&mut con), before);
}

#[test]
fn expiry_is_the_reset_moment() {
    let server = Server::start();
    let mut con = server.conn();
    let (r, sent, received) = timed_five(&mut con, &["RL.THROTTLE", "e", "9", "1", "60", "3"]);
    assert_eq!(r, [0, 10, 7, -1, 180]);
    // Three units at `t` in [sent, received]: the TAT is t + 180 s, and the
    // expiry is the TAT rounded up to the millisecond.
    let expiry = pexpiretime(&mut con, "e");
    let t = 180 * NS_PER_S;
    assert!(
        (ceil_to(sent + t, NS_PER_MS)..=ceil_to(received + t, NS_PER_MS)).contains(&expiry),
        "expiry {expiry}, call in [{sent}, {received}]"
    );
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
        (&["RL.THROTTLE", "k", "1", "1", "1", "1", "MS", "x", "x", "x", "x", "x"], "ERR unknown argument 'x'"),
        (&["RL.STATE", "k", "Gxxxxxxxxxxxxxxxx"], "ERR RL.STATE is accepted only from the master or the AOF"),
    ];
    assert_errors(&mut con, table);
    // No failed call created a key.
    assert_eq!(dbsize(&mut con), 0);
}

/// The tolerance τ = (max_burst + 1) × period / count: the server refuses
/// τ over 100 years (3,153,600,000 s). Calls exactly at the boundary are
/// accepted (allowed, with their exact reply); one step beyond is refused
/// and creates nothing.
#[test]
fn the_tolerance_boundary_is_100_years() {
    let server = Server::start();
    let mut con = server.conn();
    // args => reply, for calls whose τ is exactly 100 years
    #[rustfmt::skip]
    let at_the_boundary: &[(&[&str], [i64; 5])] = &[
        // T = 1 s, capacity 3,153,600,000
        (&["RL.THROTTLE", "a", "3153599999", "1", "1"], [0, 3_153_600_000, 3_153_599_999, -1, 1]),
        // T = 10 years, capacity 10
        (&["RL.THROTTLE", "b", "9", "1", "315360000"], [0, 10, 9, -1, 315_360_000]),
        // T = 1/3 s: τ = 9,460,800,000 / 3 s exactly
        (&["RL.THROTTLE", "c", "9460799999", "3", "1"], [0, 9_460_800_000, 9_460_799_999, -1, 1]),
        // the largest count: T = 10 years / 4,294,967,295
        (&["RL.THROTTLE", "d", "42949672949", "4294967295", "315360000"], [0, 42_949_672_950, 42_949_672_949, -1, 1]),
        // MS: T = 1,000 ms
        (&["RL.THROTTLE", "e", "3153599999", "1", "1000", "1", "MS"], [0, 3_153_600_000, 3_153_599_999, -1, 1_000]),
        // MS: T = 3,153,600 ms, capacity 1,000,000
        (&["RL.THROTTLE", "f", "999999", "1", "3153600", "1", "MS"], [0, 1_000_000, 999_999, -1, 3_153_600]),
        // MS: T = 10 years
        (&["RL.THROTTLE", "g", "9", "1", "315360000000", "1", "MS"], [0, 10, 9, -1, 315_360_000_000]),
    ];
    for (args, expected) in at_the_boundary {
        assert_eq!(five(&mut con, args), *expected, "{args:?}");
    }
    assert_eq!(dbsize(&mut con), at_the_boundary.len() as i64);

    for args in beyond_the_boundary() {
        let e = error(&mut con, args);
        // The message names the limit (its wording: see the next test).
        assert!(
            e.starts_with("ERR ") && e.ends_with(" must be at most 3153600000 seconds (100 years)"),
            "{args:?}: {e}"
        );
    }
    assert_eq!(
        dbsize(&mut con),
        at_the_boundary.len() as i64,
        "nothing created"
    );
}

/// One step beyond each call of the test above: τ just over 100 years.
fn beyond_the_boundary() -> Vec<&'static [&'static str]> {
    vec![
        // one more unit of burst: 1 s more
        &["RL.THROTTLE", "a", "3153600000", "1", "1"],
        // 110 years
        &["RL.THROTTLE", "b", "10", "1", "315360000"],
        // a third of a second more
        &["RL.THROTTLE", "c", "9460800000", "3", "1"],
        // one count fewer: 0.73 s more
        &["RL.THROTTLE", "d", "42949672949", "4294967294", "315360000"],
        &["RL.THROTTLE", "e", "3153600000", "1", "1000", "1", "MS"],
        // one ms more of period: 1,000 s more
        &["RL.THROTTLE", "f", "999999", "1", "3153601", "1", "MS"],
        &["RL.THROTTLE", "g", "10", "1", "315360000000", "1", "MS"],
    ]
}

/// The refusal states the formula the server checks, the module's bound on the tolerance
/// (docs/DESIGN.md#throttle).
/// (The wording `(max_burst + 1) x period / count` is the one agreed in
/// issue 10; an older build said `max_burst / count x period`.)
#[test]
fn the_tolerance_error_states_the_formula() {
    let server = Server::start();
    let mut con = server.conn();
    let message =
        "ERR (max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)";
    let mut table: Vec<(&[&str], &str)> = beyond_the_boundary()
        .into_iter()
        .map(|args| (args, message))
        .collect();
    table.push((&["RL.THROTTLE", "k", "1000000", "1", "315360000"], message));
    assert_errors(&mut con, &table);
    assert_eq!(dbsize(&mut con), 0);
}

/// MEMORY USAGE is computed: a GCRA state is its TAT, 16 bytes (whole ns,
/// and a fraction as numerator and denominator), whatever its parameters;
/// compared with SLIDE and SLICE keys of known computed sizes.
#[test]
fn memory_usage_is_computed() {
    let server = Server::start();
    let mut con = server.conn();
    five(&mut con, &["RL.THROTTLE", "g1", "15", "30", "60"]);
    // A TAT with a fraction of a ns, under another count.
    five(&mut con, &["RL.THROTTLE", "g2", "999", "7", "1", "500"]);
    // Ten units at once: one counted entry, in the log's struct (72
    // bytes), a side table (56 bytes) of 4 eight-byte records.  (SLIDE and
    // SLICE states hold the end of a block, 8 bytes: docs/DESIGN.md#block.)
    five(&mut con, &["RL.SLIDE", "l", "10", "60", "10"]);
    // Six slices: seven 4-byte counters.
    five(&mut con, &["RL.SLICE", "s", "10", "60", "6"]);
    assert_memory_usage(
        &mut con,
        &[
            ("g1", 16),
            ("g2", 16),
            ("l", 72 + 56 + 4 * 8),
            ("s", 64 + 7 * 4),
        ],
    );
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
            ("maxwait", "integer", true, Some("MAXWAIT")),
            ("BLOCK", "integer", true, Some("BLOCK")),
        ],
    );
}
