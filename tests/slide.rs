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
    let calls: Vec<&[&str]> = table.iter().map(|(args, _)| *args).collect();
    let (_, replies, suffix) = run_in_one_second_suffixed(&mut con, &calls);
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

    // On an existing key: values, expiries and the dirty counter stay.
    let recorded = timed_five(&mut con, &["RL.SLIDE", "p", "4", "60", "2"]);
    assert_eq!(recorded.0, [0, 4, 2, -1, 60]);
    let snapshot = |con: &mut Connection| (dataset(con), dirty(con));
    let before = snapshot(&mut con);
    // reset_after: the units leave `window` after they came, rounded up.
    let reset = |window: i128, unit: i128, call: &([i64; 5], i128, i128)| {
        ceil_to(recorded.1 + window - call.2, unit)..=ceil_to(recorded.2 + window - call.1, unit)
    };
    for _ in 0..5 {
        let call = timed_five(&mut con, &["RL.SLIDE", "p", "4", "60", "0"]);
        let r = call.0;
        assert_eq!(&r[..4], &[0, 4, 2, -1], "{r:?}");
        assert!(
            reset(60 * NS_PER_S, NS_PER_S, &call).contains(&r[4]),
            "{r:?}"
        );
    }
    // Peeks with other parameters read the same log.
    let call = timed_five(&mut con, &["RL.SLIDE", "p", "10", "3600", "0"]);
    assert_eq!(&call.0[..4], &[0, 10, 8, -1], "{call:?}");
    assert!(reset(3600 * NS_PER_S, NS_PER_S, &call).contains(&call.0[4]));
    let call = timed_five(&mut con, &["RL.SLIDE", "p", "2", "60000", "0", "MS"]);
    assert_eq!(&call.0[..4], &[0, 2, 0, -1], "{call:?}");
    assert!(reset(60 * NS_PER_S, NS_PER_MS, &call).contains(&call.0[4]));
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
    // The expiry is the reset instant, the newest unit's instant plus the
    // window, rounded up to the millisecond.
    let expiry = |call: &([i64; 5], i128, i128), window: i128| {
        ceil_to(call.1 + window, NS_PER_MS)..=ceil_to(call.2 + window, NS_PER_MS)
    };
    let call = timed_five(&mut con, &["RL.SLIDE", "e", "10", "60", "3"]);
    assert_eq!(call.0, [0, 10, 7, -1, 60]);
    let at = pexpiretime(&mut con, "e");
    assert!(expiry(&call, 60 * NS_PER_S).contains(&at), "{at}");
    let kind: String = redis::cmd("TYPE").arg("e").query(&mut con).unwrap();
    assert_eq!(kind, "rl-slide-");

    // In ms.
    let call = timed_five(&mut con, &["RL.SLIDE", "m", "10", "90000", "3", "MS"]);
    assert_eq!(call.0, [0, 10, 7, -1, 90000]);
    let first = pexpiretime(&mut con, "m");
    assert!(
        expiry(&call, 90_000 * NS_PER_MS).contains(&first),
        "{first}"
    );
    // A later unit moves the expiry to its own reset moment.
    std::thread::sleep(Duration::from_millis(20));
    let call = timed_five(&mut con, &["RL.SLIDE", "m", "10", "90000", "1", "MS"]);
    assert_eq!(call.0, [0, 10, 6, -1, 90000]);
    let later = pexpiretime(&mut con, "m");
    assert!(
        expiry(&call, 90_000 * NS_PER_MS).contains(&later),
        "{later}"
    );
    assert!(later >= first + 20, "{first} -> {later}");

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

/// Calls `args` on `key` (the second word), timed.
fn timed_on(con: &mut Connection, key: &str, args: &[&str]) -> ([i64; 5], i128, i128) {
    let mut args = args.to_vec();
    args[1] = key;
    timed_five(con, &args)
}

/// What a time in ms in the reply can read when the instant it measures to
/// is `leave` ns after an event in [`from.1`, `from.2`], and the reply
/// was decided in [`call.1`, `call.2`].
fn ms_range(
    from: &([i64; 5], i128, i128),
    leave: i128,
    call: &([i64; 5], i128, i128),
) -> std::ops::RangeInclusive<i64> {
    ceil_to(from.1 + leave - call.2, NS_PER_MS)..=ceil_to(from.2 + leave - call.1, NS_PER_MS)
}

#[test]
fn the_window_slides_exactly_in_real_time() {
    // Under the real clock, with windows of seconds. Only one thing
    // depends on how fast the calls run: that the calls of an attempt all
    // ran within the window of its first unit. An attempt too slow for that
    // is dropped, unasserted, and retried on a fresh key; everything
    // asserted holds for any delay, since the expected times are computed
    // from the client's clock around each call.
    let server = Server::start();
    let mut con = server.conn();
    const W: i128 = 1_000 * NS_PER_MS;

    // Limit 3 per 1,000 ms: waiting exactly retry_after is enough.
    let args = ["RL.SLIDE", "", "3", "1000", "MS"];
    let done = (0..5).any(|attempt| {
        let key = format!("w{attempt}");
        let fill: Vec<_> = (0..3).map(|_| timed_on(&mut con, &key, &args)).collect();
        let over = timed_on(&mut con, &key, &args);
        if over.2 - fill[0].1 >= W {
            return false;
        }
        for (call, remaining) in fill.iter().zip([2, 1, 0]) {
            assert_eq!(call.0, [0, 3, remaining, -1, 1000]);
        }
        // Limited until the first unit leaves; reset when the third does.
        let r = over.0;
        assert_eq!(&r[..3], &[1, 3, 0], "{r:?}");
        assert!(ms_range(&fill[0], W, &over).contains(&r[3]), "{r:?}");
        assert!(ms_range(&fill[2], W, &over).contains(&r[4]), "{r:?}");
        std::thread::sleep(Duration::from_millis(r[3] as u64));
        let after = timed_on(&mut con, &key, &args).0;
        assert_eq!(after[0], 0, "limited after waiting retry_after: {after:?}");
        // The other two units may have left too.
        assert_eq!((after[1], after[3], after[4]), (3, -1, 1000), "{after:?}");
        assert!((0..=2).contains(&after[2]), "{after:?}");
        true
    });
    assert!(
        done,
        "five attempts each took a whole second for four calls"
    );

    // Exact, not fixed windows: limit 2 per 2,000 ms, units 500 ms apart.
    const W2: i128 = 2_000 * NS_PER_MS;
    let args = ["RL.SLIDE", "", "2", "2000", "MS"];
    let done = (0..5).any(|attempt| {
        let key = format!("x{attempt}");
        let a = timed_on(&mut con, &key, &args);
        std::thread::sleep(Duration::from_millis(500));
        let b = timed_on(&mut con, &key, &args);
        let c = timed_on(&mut con, &key, &args);
        if c.2 - a.1 >= W2 {
            return false;
        }
        assert_eq!(a.0, [0, 2, 1, -1, 2000]);
        assert_eq!(b.0, [0, 2, 0, -1, 2000]);
        // Limited until `a` leaves, a window after it came (not when `b`
        // leaves, 500 ms later, nor at a fixed boundary); reset when `b`
        // leaves.
        let r = c.0;
        assert_eq!(&r[..3], &[1, 2, 0], "{r:?}");
        assert!(ms_range(&a, W2, &c).contains(&r[3]), "{r:?}");
        assert!(ms_range(&b, W2, &c).contains(&r[4]), "{r:?}");
        std::thread::sleep(Duration::from_millis(r[3] as u64));
        let d = timed_on(&mut con, &key, &args);
        assert_eq!((d.0[0], d.0[1], d.0[3], d.0[4]), (0, 2, -1, 2000), "{d:?}");
        // `b` is still counted unless a window may have passed since it.
        if d.2 < b.1 + W2 {
            assert_eq!(d.0[2], 0, "{d:?}");
        } else if d.1 >= b.2 + W2 {
            assert_eq!(d.0[2], 1, "{d:?}");
        }
        true
    });
    assert!(done, "five attempts each took two seconds for three calls");
}

/// MEMORY USAGE is computed: the log's struct (64 bytes, the newest two
/// entries in it) and its ring, 4 bytes per entry of capacity; units that
/// share a microsecond, from three on, share a counted entry, whose count
/// takes a side table (56 bytes) with records of 8 bytes. Taken one by
/// one, the ring grows to 1/16 more than it needs, rounded up to 4
/// entries, but never past the limit.
#[test]
fn memory_is_four_bytes_per_unit() {
    let server = Server::start();
    let mut con = server.conn();
    let mut expected = Vec::new();
    // Units taken at once: one entry (in the struct) and one record (a
    // table of 4), whatever their number.
    for (key, units) in [("m10", 10u64), ("m1k", 1_000), ("m100k", 100_000)] {
        let n = units.to_string();
        assert_eq!(
            five(&mut con, &["RL.SLIDE", key, &n, "600", &n]),
            [0, units as i64, 0, -1, 600]
        );
        expected.push((key, 72 + 56 + 4 * 8));
    }
    // 1,000 units taken one by one (each call in its own microsecond),
    // moved to the ring two by two: capacity 4, 8, 16, ..., 916, 976,
    // then the limit, 1,000.
    for _ in 0..1_000 {
        assert_eq!(five(&mut con, &["RL.SLIDE", "one", "1000", "600"])[0], 0);
    }
    assert_eq!(five(&mut con, &["RL.SLIDE", "one", "1000", "600"])[0], 1);
    expected.push(("one", 72 + 4 * 1_000));
    // The same under the limit of a million: 4.5 bytes per unit or less
    // with the key's own overhead (checked below). The ring's capacity,
    // 1,024 when every call has its own microsecond, depends on how the
    // calls fall into microseconds (a fast client sends two in one), so
    // it is bounded rather than exact.
    for _ in 0..1_000 {
        assert_eq!(five(&mut con, &["RL.SLIDE", "big", "1000000", "600"])[0], 0);
    }
    // Three units under limit 5: two move to the ring (capacity 4) when
    // the third comes.
    five(&mut con, &["RL.SLIDE", "three", "5", "600"]);
    five(&mut con, &["RL.SLIDE", "three", "5", "600", "2"]);
    expected.push(("three", 72 + 4 * 4));
    // Two units under limit 2: both in the struct, no ring.
    five(&mut con, &["RL.SLIDE", "two", "2", "600", "2"]);
    expected.push(("two", 72));
    assert_memory_usage(&mut con, &expected);
    let big = memory_usage(&mut con, "big");
    assert!((72 + 4 * 1_000..=4_500).contains(&big), "big: {big} bytes");

    // 100,000 units, one call each, pipelined (some calls share a
    // microsecond): 4.5 bytes per unit or less, all counted.
    let mut pipe = redis::pipe();
    for _ in 0..100_000 {
        pipe.cmd("RL.SLIDE").arg("fill").arg("1000000").arg("600");
    }
    let replies: Vec<[i64; 5]> = pipe.query(&mut con).unwrap();
    assert!(replies.iter().all(|r| r[0] == 0));
    assert!(memory_usage(&mut con, "fill") <= 450_000);
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
            ("PRECISION", "integer", true, Some("PRECISION")),
            ("BLOCK", "integer", true, Some("BLOCK")),
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
    // Both expiries are the units' instant plus a whole number of ms,
    // rounded up: they differ by exactly the difference of the windows.
    let long = pexpiretime(&mut con, "k");
    assert_eq!(long - short, 59_000, "expiry {short} -> {long}");
    // A peek with an even longer window touches nothing.
    five(&mut con, &["RL.SLIDE", "k", "2", "120000", "0", "MS"]);
    assert_eq!(pexpiretime(&mut con, "k"), long);
    // After the short window the units still count.
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    let r = five(&mut con, &["RL.SLIDE", "k", "2", "60000", "1", "MS"]);
    assert_eq!(&r[..3], &[1, 2, 0]);
}

#[test]
fn a_shorter_window_never_brings_the_expiry_earlier() {
    // Five units under "5 per 10 minutes", then one allowed call under
    // "10 per second": the key must still outlive the first five, or a
    // later call under the long window would find it gone and admit five
    // more within the ten minutes.
    let server = Server::start();
    let mut con = server.conn();
    five(&mut con, &["RL.SLIDE", "k", "5", "600000", "5", "MS"]);
    let long = pexpiretime(&mut con, "k");
    assert_eq!(
        five(&mut con, &["RL.SLIDE", "k", "10", "1000", "1", "MS"])[0],
        0
    );
    assert_eq!(pexpiretime(&mut con, "k"), long);
    five(&mut con, &["RL.SLICE", "s", "5", "600000", "10", "5", "MS"]);
    let long = pexpiretime(&mut con, "s");
    assert_eq!(
        five(&mut con, &["RL.SLICE", "s", "10", "1000", "10", "1", "MS"])[0],
        0
    );
    assert_eq!(pexpiretime(&mut con, "s"), long);
    assert_eq!(
        five(&mut con, &["RL.SLIDE", "k", "5", "600000", "1", "MS"])[..3],
        [1, 5, 0]
    );
}
