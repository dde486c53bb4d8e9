//! RL.INSPECT and RL.REFUND against a real server: what a key holds (RESP2
//! pairs and a RESP3 map), nil and WRONGTYPE; refunds per algorithm, the
//! reply a peek gives right after, never creating a key, emptying it,
//! replicas and the AOF, bad input.

mod common;
use common::*;

fn int(fields: &[(String, Value)], name: &str) -> i64 {
    match fields.iter().find(|(n, _)| n == name) {
        Some((_, Value::Int(n))) => *n,
        other => panic!("{name}: {other:?} in {fields:?}"),
    }
}

fn names(fields: &[(String, Value)]) -> Vec<&str> {
    fields.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn inspect_says_what_each_key_holds() {
    let server = Server::start();
    let mut con = server.conn();
    five(&mut con, &["RL.THROTTLE", "t", "9", "1", "6", "3"]); // T = 6 s: 18 s ahead
    five(&mut con, &["RL.SLIDE", "l", "10", "60", "4"]);
    five(&mut con, &["RL.SLICE", "s", "10", "60", "6", "2"]);

    let t = inspect(&mut con, "t").unwrap();
    assert_eq!(
        names(&t),
        ["type", "ttl", "memory", "tat_ahead_ms", "tat_unix_ms"]
    );
    assert_eq!(text(&t[0].1), "throttle");
    let ahead = int(&t, "tat_ahead_ms");
    assert!((17_000..=18_000).contains(&ahead), "{t:?}");
    assert!((int(&t, "ttl") - ahead).abs() <= 2, "{t:?}");
    assert_eq!(int(&t, "memory"), memory_usage(&mut con, "t"));
    assert!(
        (int(&t, "tat_unix_ms") - pexpiretime(&mut con, "t")).abs() <= 1,
        "{t:?}"
    );

    let l = inspect(&mut con, "l").unwrap();
    assert_eq!(
        names(&l),
        [
            "type",
            "ttl",
            "memory",
            "units",
            "entries",
            "oldest_age_ms",
            "newest_age_ms"
        ]
    );
    assert_eq!(text(&l[0].1), "slide");
    assert_eq!(int(&l, "units"), 4);
    assert!(int(&l, "oldest_age_ms") < 5_000);
    assert_eq!(int(&l, "memory"), memory_usage(&mut con, "l"));
    assert!((59_000..=60_000).contains(&int(&l, "ttl")), "{l:?}");

    let s = inspect(&mut con, "s").unwrap();
    assert_eq!(
        names(&s),
        [
            "type",
            "ttl",
            "memory",
            "window_ms",
            "slices",
            "units",
            "head_age_ms",
            "counts"
        ]
    );
    assert_eq!(text(&s[0].1), "slice");
    assert_eq!(
        (int(&s, "window_ms"), int(&s, "slices"), int(&s, "units")),
        (60_000, 6, 2)
    );
    let Some((_, Value::Array(counts))) = s.iter().find(|(n, _)| n == "counts") else {
        panic!("{s:?}")
    };
    assert_eq!(counts.len(), 7);
    assert_eq!(counts[0], Value::Int(2), "newest first: {counts:?}");
    assert!(counts[1..].iter().all(|c| *c == Value::Int(0)));
    assert_eq!(int(&s, "memory"), memory_usage(&mut con, "s"));

    assert_eq!(inspect(&mut con, "missing"), None);
    let _: () = cmd(&["SET", "str", "1"]).query(&mut con).unwrap();
    assert_eq!(
        error(&mut con, &["RL.INSPECT", "str"]),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert_eq!(
        error(&mut con, &["RL.INSPECT"]),
        "ERR wrong number of arguments for 'RL.INSPECT' command"
    );

    // RESP3: a map.
    let client =
        redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", server.port)).unwrap();
    let mut con3 = client.get_connection().unwrap();
    let v: Value = cmd(&["RL.INSPECT", "l"]).query(&mut con3).unwrap();
    let Value::Map(pairs) = &v else {
        panic!("RESP3 reply: {v:?}")
    };
    assert_eq!(pairs.len(), 7);
    assert_eq!(text(field(&v, "type").unwrap()), "slide");
}

#[test]
fn refund_gives_back_the_newest_units() {
    let server = Server::start();
    let mut con = server.conn();
    // THROTTLE: 3 taken of capacity 10 (T = 6 s); 2 back.
    five(&mut con, &["RL.THROTTLE", "t", "9", "1", "6", "3"]);
    let r = five(
        &mut con,
        &["RL.REFUND", "t", "THROTTLE", "9", "1", "6", "2"],
    );
    assert_eq!(r, [0, 10, 9, -1, 6]);
    assert_eq!(five(&mut con, &["RL.THROTTLE", "t", "9", "1", "6", "0"]), r);

    // SLIDE: 4 taken, 1 back, then more than is left: the key disappears.
    five(&mut con, &["RL.SLIDE", "l", "5", "60", "4"]);
    assert_eq!(
        five(&mut con, &["RL.REFUND", "l", "SLIDE", "5", "60", "1"]),
        [0, 5, 2, -1, 60]
    );
    assert_eq!(inspect(&mut con, "l").map(|f| int(&f, "units")), Some(3));
    assert_eq!(
        five(&mut con, &["RL.REFUND", "l", "SLIDE", "5", "60", "9"]),
        [0, 5, 5, -1, 0]
    );
    assert!(!exists(&mut con, "l"));

    // SLICE, in MS: 3 taken, 1 back.
    five(&mut con, &["RL.SLICE", "s", "5", "60000", "6", "3", "MS"]);
    let r = five(
        &mut con,
        &["RL.REFUND", "s", "SLICE", "5", "60000", "6", "1", "MS"],
    );
    assert_eq!(r[..4], [0, 5, 3, -1]);
    assert!((60_000..=70_000).contains(&r[4]), "{r:?}");

    // A missing key stays missing; quantity 0 is a peek.
    assert_eq!(
        five(&mut con, &["RL.REFUND", "none", "SLIDE", "5", "60", "1"]),
        [0, 5, 5, -1, 0]
    );
    assert!(!exists(&mut con, "none"));
    let before = digest(&mut con);
    five(
        &mut con,
        &["RL.REFUND", "s", "SLICE", "5", "60000", "6", "0", "MS"],
    );
    assert_eq!(digest(&mut con), before);
}

#[test]
fn refund_bad_input() {
    let server = Server::start();
    let mut con = server.conn();
    five(&mut con, &["RL.SLIDE", "l", "5", "60"]);
    let _: () = cmd(&["SET", "str", "1"]).query(&mut con).unwrap();
    #[rustfmt::skip]
    let table: &[(&[&str], &str)] = &[
        (&["RL.REFUND", "l", "SLIDE", "5"], "ERR wrong number of arguments for 'RL.REFUND' command"),
        (&["RL.REFUND", "l", "SLIDE", "5", "60"], "ERR wrong number of arguments for 'RL.REFUND' command"),
        (&["RL.REFUND", "l", "THROTTLE", "5", "60", "1"], "ERR THROTTLE expects max_burst count period quantity"),
        (&["RL.REFUND", "l", "LEAKY", "5", "60", "1"], "ERR unknown algorithm 'LEAKY' (expected THROTTLE, SLIDE, SLICE, LEASE or QUOTA)"),
        (&["RL.REFUND", "l", "SLIDE", "0", "60", "1"], "ERR limit must be an integer from 1 to 1000000"),
        (&["RL.REFUND", "l", "SLIDE", "5", "60", "-1"], "ERR quantity must be an integer from 0 to 1000000000000"),
        (&["RL.REFUND", "l", "SLIDE", "5", "60", "1", "PX"], "ERR unknown argument 'PX'"),
        (&["RL.REFUND", "l", "SLIDE", "5", "60", "1", "AT", "5"], "ERR AT is accepted only from the master or the AOF: it carries the master's clock"),
        (&["RL.REFUND", "l", "SLICE", "5", "60", "6", "1"], "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (&["RL.REFUND", "str", "SLIDE", "5", "60", "1"], "WRONGTYPE Operation against a key holding the wrong kind of value"),
    ];
    assert_errors(&mut con, table);
    assert_eq!(inspect(&mut con, "l").map(|f| int(&f, "units")), Some(1));
}

#[test]
fn refunds_replicate_and_persist_with_the_masters_clock() {
    let mut master = start_aof_server();
    let (_replica, mut rcon) = start_replica(&master);
    let mut con = master.conn();
    for round in 0..4u64 {
        let q = (round + 2).to_string();
        five(&mut con, &["RL.THROTTLE", "t", "20", "3", "60", &q]);
        five(&mut con, &["RL.SLIDE", "l", "30", "600", &q]);
        five(&mut con, &["RL.SLICE", "s", "30", "600", "60", &q]);
        five(
            &mut con,
            &["RL.REFUND", "t", "THROTTLE", "20", "3", "60", "1"],
        );
        five(&mut con, &["RL.REFUND", "l", "SLIDE", "30", "600", "1"]);
        five(
            &mut con,
            &["RL.REFUND", "s", "SLICE", "30", "600", "60", "1"],
        );
    }
    five(&mut con, &["RL.SLIDE", "gone", "5", "60", "2"]);
    five(&mut con, &["RL.REFUND", "gone", "SLIDE", "5", "60", "5"]);
    assert!(!exists(&mut con, "gone"));
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    let (state, times) = (digest(&mut con), expiries(&mut con));
    assert_eq!(times.len(), 3);
    assert_eq!(digest(&mut rcon), state);
    assert_eq!(expiries(&mut rcon), times);
    // INSPECT answers on the replica.
    assert_eq!(inspect(&mut rcon, "l").map(|f| int(&f, "units")), Some(10));

    master.restart();
    let mut con = master.conn();
    assert_eq!(digest(&mut con), state);
    assert_eq!(expiries(&mut con), times);
}
