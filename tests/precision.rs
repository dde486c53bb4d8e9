//! RL.SLIDE's PRECISION option against a real server: units joining the
//! newest entry (RL.INSPECT's `entries`), the figure (a high-limit
//! key in a few entries and under 200 bytes), the option in RL.ALLOW,
//! RL.PEEK and RL.REFUND specs, replicas and the AOF, and bad input.

mod common;
use common::*;

use redis::{Connection, Value};
use std::thread;
use std::time::{Duration, Instant};

/// RL.INSPECT's integer field `name`.
fn inspect_int(con: &mut Connection, key: &str, name: &str) -> i64 {
    let fields = inspect(con, key).unwrap_or_else(|| panic!("RL.INSPECT {key}: no such key"));
    match fields.iter().find(|(n, _)| n == name) {
        Some((_, Value::Int(n))) => *n,
        other => panic!("RL.INSPECT {key}: {name} is {other:?}"),
    }
}

/// Calls within a second join one entry, whose units leave a window after
/// the last of them; the replies are SLIDE's (the calls are all within
/// the same second, so exactness is not at stake).
#[test]
fn units_join_the_newest_entry() {
    let server = Server::start();
    let mut con = server.conn();
    // args => limited, limit, remaining, retry_after, reset_after
    #[rustfmt::skip]
    let table: &[&[&str]] = &[
        &["RL.SLIDE", "p", "3", "60", "PRECISION", "10"],
        &["RL.SLIDE", "p", "3", "60", "precision", "10"],
        &["RL.SLIDE", "p", "3", "60", "1", "PRECISION", "10"],
        &["RL.SLIDE", "p", "3", "60", "PRECISION", "10"],
        &["RL.SLIDE", "p", "3", "60", "0", "PRECISION", "10"],
        // the same key, exact: the units already joined keep their entry
        &["RL.SLIDE", "p", "3", "60", "0"],
        // PRECISION 0 is exact: three calls, three entries
        &["RL.SLIDE", "e", "3", "60000", "MS", "PRECISION", "0"],
        &["RL.SLIDE", "e", "3", "60000", "PRECISION", "0", "MS"],
        &["RL.SLIDE", "e", "3", "60000", "MS"],
    ];
    let (_, replies, suffix) = run_in_one_second_suffixed(&mut con, table);
    let (p, e) = (format!("p{suffix}"), format!("e{suffix}"));
    assert_eq!(
        replies,
        [
            [0, 3, 2, -1, 60],
            [0, 3, 1, -1, 60],
            [0, 3, 0, -1, 60],
            [1, 3, 0, 60, 60],
            [0, 3, 0, -1, 60],
            [0, 3, 0, -1, 60],
            [0, 3, 2, -1, 60_000],
            [0, 3, 1, -1, 60_000],
            [0, 3, 0, -1, 60_000],
        ]
    );
    assert_eq!(inspect_int(&mut con, &p, "units"), 3);
    assert_eq!(inspect_int(&mut con, &p, "entries"), 1);
    assert_eq!(inspect_int(&mut con, &e, "units"), 3);
    assert_eq!(inspect_int(&mut con, &e, "entries"), 3);
    // The joined entry's expiry is its last unit's plus the window, in
    // whole ms rounded up (PTTL may read 1 ms more than the window).
    let ttl: i64 = cmd(&["PTTL", &p]).query(&mut con).unwrap();
    assert!((50_000..=60_001).contains(&ttl), "{ttl}");
}

/// The figure, with its parameters: limit 1,000,000, window
/// 3,600 s, PRECISION 36 s (1%). 100,000 single-unit calls, pipelined (a
/// second or two of real time, well within 36 s): one entry, under 200
/// bytes of MEMORY USAGE, where the exact log takes about 4 bytes a unit.
#[test]
fn a_high_limit_key_takes_few_entries_and_little_memory() {
    let server = Server::start();
    let mut con = server.conn();
    for (key, option) in [("prec", &["PRECISION", "36"][..]), ("exact", &[][..])] {
        let mut pipe = redis::pipe();
        for _ in 0..100_000 {
            pipe.cmd("RL.SLIDE")
                .arg(key)
                .arg("1000000")
                .arg("3600")
                .arg(option);
        }
        let replies: Vec<[i64; 5]> = pipe.query(&mut con).unwrap();
        assert!(replies.iter().all(|r| r[0] == 0));
        assert_eq!(replies[99_999][2], 900_000);
        assert_eq!(inspect_int(&mut con, key, "units"), 100_000);
    }
    assert_eq!(inspect_int(&mut con, "prec", "entries"), 1);
    let memory = memory_usage(&mut con, "prec");
    println!("MEMORY USAGE prec: {memory}");
    assert!(memory < 200, "{memory}");
    // Without the option: an entry per call (some share a microsecond).
    let exact = memory_usage(&mut con, "exact");
    println!("MEMORY USAGE exact: {exact}");
    assert!(exact > 300_000, "{exact}");
}

/// The same figure with its traffic spread over "a minute", scaled down
/// by 100 so that the test takes well under a second: window 36,000 ms,
/// PRECISION 360 ms (1%), 100 calls of 1,000 units, one every 6 ms (about
/// 600 ms; the window's sixtieth). The entries start at least 360 ms
/// apart, so the calls' span, measured, bounds their number: at least 2
/// (the calls take 600 ms or more), at most one per 360 ms of the span (2
/// or 3 when the calls keep their pace; a loaded host that stretches the
/// span gets as many more as the bound allows, never more), and under 200
/// bytes for 3 entries, about 16 more per entry beyond.
#[test]
fn traffic_over_a_scaled_minute_takes_at_most_three_entries() {
    let server = Server::start();
    let mut con = server.conn();
    let start = Instant::now();
    for i in 0..100 {
        let r = five(
            &mut con,
            &[
                "RL.SLIDE",
                "m",
                "1000000",
                "36000",
                "1000",
                "MS",
                "PRECISION",
                "360",
            ],
        );
        assert_eq!(r[..3], [0, 1_000_000, 1_000_000 - 1_000 * (i + 1)]);
        thread::sleep(Duration::from_millis(6));
    }
    let span = start.elapsed();
    let most = i64::try_from(span.as_millis() / 360).unwrap_or(i64::MAX) + 1;
    let entries = inspect_int(&mut con, "m", "entries");
    assert!(
        (2..=most).contains(&entries),
        "{entries} entries in {span:?}"
    );
    assert_eq!(inspect_int(&mut con, "m", "units"), 100_000);
    let memory = memory_usage(&mut con, "m");
    println!("MEMORY USAGE m: {memory} ({entries} entries, {span:?})");
    assert!(memory < 200 + 16 * (entries - 3).max(0), "{memory}");
}

/// PRECISION in the SLIDE spec of RL.ALLOW, RL.PEEK and RL.REFUND.
#[test]
fn the_option_in_specs() {
    let server = Server::start();
    let mut con = server.conn();
    let allow = |con: &mut Connection, q: &str| -> Vec<Value> {
        cmd(&[
            "RL.ALLOW",
            "2",
            "{u}a",
            "{u}b",
            "SLIDE",
            "5",
            "60",
            "PRECISION",
            "30",
            "SLIDE",
            "10",
            "60",
            "QUANTITY",
            q,
        ])
        .query(con)
        .unwrap()
    };
    for _ in 0..3 {
        allow(&mut con, "1");
    }
    assert_eq!(inspect_int(&mut con, "{u}a", "units"), 3);
    assert_eq!(inspect_int(&mut con, "{u}a", "entries"), 1);
    assert_eq!(inspect_int(&mut con, "{u}b", "entries"), 3);
    let peek: Vec<Value> = cmd(&[
        "RL.PEEK",
        "1",
        "{u}a",
        "SLIDE",
        "5",
        "60",
        "PRECISION",
        "30",
    ])
    .query(&mut con)
    .unwrap();
    assert_eq!(peek[0], Value::Int(0), "{peek:?}");
    // RL.PEEK asks whether one more unit fits: 3 taken, 1 left after it.
    assert_eq!(peek[2], Value::Int(1), "{peek:?}");
    // A refund takes the newest units out of the joined entry.
    let r = five(
        &mut con,
        &[
            "RL.REFUND",
            "{u}a",
            "SLIDE",
            "5",
            "60",
            "PRECISION",
            "30",
            "2",
        ],
    );
    assert_eq!(r[..4], [0, 5, 4, -1]);
    assert_eq!(inspect_int(&mut con, "{u}a", "units"), 1);
    assert_eq!(inspect_int(&mut con, "{u}a", "entries"), 1);
    let r = five(
        &mut con,
        &[
            "RL.REFUND",
            "{u}a",
            "SLIDE",
            "5",
            "60000",
            "PRECISION",
            "30000",
            "1",
            "MS",
        ],
    );
    assert_eq!(r, [0, 5, 5, -1, 0]);
    assert!(!exists(&mut con, "{u}a"));
}

/// Keys with PRECISION: allowed, limited, joined, refunded, d changing.
fn workload(con: &mut Connection) {
    for (i, d) in ["10", "10", "0", "30", "60", "1"].iter().enumerate() {
        five(con, &["RL.SLIDE", "p1", "4", "60", "PRECISION", d]);
        five(
            con,
            &[
                "RL.SLIDE",
                "p2",
                "100",
                "3600000",
                "3",
                "MS",
                "PRECISION",
                "36000",
            ],
        );
        if i == 2 {
            five(
                con,
                &["RL.REFUND", "p1", "SLIDE", "4", "60", "PRECISION", d, "1"],
            );
        }
    }
    five(con, &["RL.SLIDE", "ex", "4", "60"]);
    let _: Vec<Value> = cmd(&[
        "RL.ALLOW",
        "2",
        "{s}a",
        "{s}b",
        "SLIDE",
        "5",
        "60",
        "PRECISION",
        "6",
        "SLIDE",
        "3",
        "60",
        "PRECISION",
        "60",
    ])
    .query(con)
    .unwrap();
    let _: () = redis::cmd("MULTI").query(con).unwrap();
    for _ in 0..3 {
        let _: String = cmd(&["RL.SLIDE", "mx", "2", "60", "PRECISION", "5"])
            .query(con)
            .unwrap();
    }
    let _: Vec<Value> = redis::cmd("EXEC").query(con).unwrap();
}

#[test]
fn replicas_the_aof_and_the_rdb_reach_the_masters_state() {
    let mut master = start_aof_server();
    let (_replica, mut rcon) = start_replica(&master);
    let mut con = master.conn();
    workload(&mut con);
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    let want = dataset(&mut con);
    assert_same_dataset(&dataset(&mut rcon), &want, 6, "replica");
    assert!(inspect_int(&mut con, "p2", "entries") == 1);
    // The state travels whole: DUMP and RESTORE, and DEBUG RELOAD (RDB).
    let dump: Vec<u8> = cmd(&["DUMP", "p1"]).query(&mut con).unwrap();
    let _: () = redis::cmd("RESTORE")
        .arg("p1copy")
        .arg(0)
        .arg(&dump)
        .query(&mut con)
        .unwrap();
    let again: Vec<u8> = cmd(&["DUMP", "p1copy"]).query(&mut con).unwrap();
    assert_eq!(again, dump);
    let _: () = cmd(&["DEL", "p1copy"]).query(&mut con).unwrap();
    // The AOF replays to the same state and expiries.
    master.restart();
    let mut con = master.conn();
    assert_same_dataset(&dataset(&mut con), &want, 6, "AOF");
    let _: String = cmd(&["DEBUG", "RELOAD"]).query(&mut con).unwrap();
    assert_same_dataset(&dataset(&mut con), &want, 6, "RDB");
}

#[test]
fn bad_input() {
    let server = Server::start();
    let mut con = server.conn();
    let s = "ERR PRECISION must be an integer from 0 to 315360000 (seconds)";
    let ms = "ERR PRECISION must be an integer from 0 to 315360000000 (milliseconds, with MS)";
    let above = "ERR PRECISION must be at most the window";
    #[rustfmt::skip]
    let table: &[(&[&str], &str)] = &[
        (&["RL.SLIDE", "k", "5", "60", "PRECISION", "-1"], s),
        (&["RL.SLIDE", "k", "5", "60", "PRECISION", "61"], above),
        (&["RL.SLIDE", "k", "5", "60000", "MS", "PRECISION", "60001"], above),
        (&["RL.SLIDE", "k", "5", "60", "PRECISION", "1.5"], s),
        (&["RL.SLIDE", "k", "5", "60", "PRECISION", "ten"], s),
        (&["RL.SLIDE", "k", "5", "60", "MS", "PRECISION", "x"], ms),
        (&["RL.SLIDE", "k", "5", "60", "PRECISION"], s),
        (&["RL.SLIDE", "k", "5", "60", "PRECISION", "1", "PRECISION", "1"], "ERR PRECISION is given more than once"),
        (&["RL.ALLOW", "1", "k", "SLIDE", "5", "60", "PRECISION", "61"], "ERR spec 1 (SLIDE): PRECISION must be at most the window"),
        (&["RL.PEEK", "1", "k", "SLIDE", "5", "60", "PRECISION", "-1"], "ERR spec 1 (SLIDE): PRECISION must be an integer from 0 to 315360000 (seconds)"),
        (&["RL.REFUND", "k", "SLIDE", "5", "60", "PRECISION", "61", "1"], above),
    ];
    assert_errors(&mut con, table);
    assert!(!exists(&mut con, "k"));
}
