//! RL.ALLOW and RL.PEEK against a real server: the seven-element reply and
//! the binding limit, all-or-nothing recording, WRONGTYPE, bad input, key
//! positions and COMMAND DOCS, replicas, the AOF, MULTI and Lua, INFO and
//! events, and PEEK where writes are refused (replica, EVAL_RO, maxmemory).
//! Windows are a minute or more, so that scheduling noise cannot flip an
//! assertion.

mod common;
use common::*;

use std::time::Duration;

const THREE: &[&str] = &[
    "THROTTLE", "1", "10", "60", // capacity 2, T = 6 s
    "SLIDE", "2", "60", //
    "SLICE", "3", "60", "6",
];

fn allow3(con: &mut Connection, command: &str, keys: [&str; 3], extra: &[&str]) -> Seven {
    let mut args = vec![command, "3", keys[0], keys[1], keys[2]];
    args.extend_from_slice(THREE);
    args.extend_from_slice(extra);
    seven(con, &args)
}

#[test]
fn reply_and_binding_limit() {
    let server = Server::start();
    let mut con = server.conn();
    let r = allow3(&mut con, "RL.ALLOW", ["a", "b", "c"], &[]);
    assert_eq!(r.limits[0], [0, 2, 1, -1, 6]);
    assert_eq!(r.limits[1], [0, 2, 1, -1, 60]);
    assert_eq!(&r.limits[2][..4], &[0, 3, 2, -1]);
    // A unit in slice j is counted until slice j + 7 starts: 61 to 70 s.
    assert!((61..=70).contains(&r.limits[2][4]), "{r:?}");
    // Allowed: least remaining (1 and 1), then the longer reset: SLIDE.
    assert_eq!((r.index, r.binding), (2, r.limits[1]));

    let r = allow3(&mut con, "RL.ALLOW", ["a", "b", "c"], &[]);
    assert_eq!(r.limits[0], [0, 2, 0, -1, 12]);
    assert_eq!(r.limits[1], [0, 2, 0, -1, 60]);
    assert_eq!((r.index, r.binding), (2, r.limits[1]));

    // Full: THROTTLE frees a unit in 6 s, SLIDE in 60 s; the binding one
    // is the refusing limit that frees last.
    let r = allow3(&mut con, "RL.ALLOW", ["a", "b", "c"], &[]);
    assert_eq!(r.limits[0], [1, 2, 0, 6, 12]);
    assert_eq!(r.limits[1], [1, 2, 0, 60, 60]);
    // SLICE alone would allow (its fields say so: remaining after this
    // request), but nothing was recorded.
    assert_eq!(r.limits[2][..3], [0, 3, 0]);
    assert_eq!((r.index, r.binding), (2, r.limits[1]));
    let peek = seven(
        &mut con,
        &[
            "RL.PEEK", "1", "c", "SLICE", "3", "60", "6", "QUANTITY", "0",
        ],
    );
    assert_eq!(peek.binding[..3], [0, 3, 1]);

    // Never-fits counts as the longest wait; QUANTITY and MS.
    let r = allow3(
        &mut con,
        "RL.ALLOW",
        ["a", "b", "c"],
        &["QUANTITY", "3", "MS"],
    );
    assert_eq!(r.limits[0][..4], [1, 2, 0, -1]);
    assert_eq!(r.limits[1][..4], [1, 2, 0, -1]);
    assert_eq!(r.index, 1, "{r:?}");
}

#[test]
fn all_or_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    // b is full; a and c hold a unit each.
    five(&mut con, &["RL.SLIDE", "b", "2", "60", "2"]);
    five(&mut con, &["RL.THROTTLE", "a", "1", "10", "60"]);
    five(&mut con, &["RL.SLICE", "c", "3", "60", "6"]);
    let before: Vec<(String, i64)> = ["a", "b", "c"]
        .iter()
        .map(|k| (digest_value(&mut con, k), pexpiretime(&mut con, k)))
        .collect();
    let r = allow3(&mut con, "RL.ALLOW", ["a", "b", "c"], &[]);
    assert_eq!(r.binding[0], 1);
    assert_eq!(r.index, 2);
    assert_eq!(r.limits[0][0], 0, "THROTTLE alone would allow");
    let after: Vec<(String, i64)> = ["a", "b", "c"]
        .iter()
        .map(|k| (digest_value(&mut con, k), pexpiretime(&mut con, k)))
        .collect();
    assert_eq!(before, after, "a refused request records nothing anywhere");

    // Missing keys are not created by a refused request or a QUANTITY 0 peek.
    let r = allow3(&mut con, "RL.ALLOW", ["x", "b", "y"], &[]);
    assert_eq!(r.binding[0], 1);
    assert!(!exists(&mut con, "x") && !exists(&mut con, "y"));
    let r = allow3(&mut con, "RL.ALLOW", ["x", "p", "y"], &["QUANTITY", "0"]);
    assert_eq!(r.binding, [0, 2, 2, -1, 0]);
    assert_eq!(dbsize(&mut con), 3);

    // Allowed: every key records what its single command would record.
    let r = allow3(&mut con, "RL.ALLOW", ["x", "p", "y"], &["QUANTITY", "1"]);
    assert_eq!(r.binding[0], 0);
    five(&mut con, &["RL.THROTTLE", "x2", "1", "10", "60"]);
    five(&mut con, &["RL.SLIDE", "p2", "2", "60"]);
    five(&mut con, &["RL.SLICE", "y2", "3", "60", "6"]);
    for (k1, k2, peek) in [
        ("x", "x2", vec!["RL.THROTTLE", "1", "10", "60", "0"]),
        ("p", "p2", vec!["RL.SLIDE", "2", "60", "0"]),
        ("y", "y2", vec!["RL.SLICE", "3", "60", "6", "0"]),
    ] {
        let ask = |con: &mut Connection, key: &str| {
            let mut args = vec![peek[0], key];
            args.extend_from_slice(&peek[1..]);
            five(con, &args)
        };
        let (one, two) = (ask(&mut con, k1), ask(&mut con, k2));
        assert_eq!(one[..3], two[..3], "{k1} vs {k2}");
        assert!(
            (one[4] - two[4]).abs() <= 1,
            "{k1} vs {k2}: {one:?} {two:?}"
        );
        let (t1, t2) = (pexpiretime(&mut con, k1), pexpiretime(&mut con, k2));
        assert!(t1 > 0 && (t1 - t2).abs() < 1_000, "{t1} {t2}");
    }
}

#[test]
fn a_refused_request_still_moves_an_expiry_out() {
    // b holds a unit recorded under a 60 s window; a call under a 600 s
    // window is refused by a: b's expiry moves to 600 s, nothing recorded.
    let server = Server::start();
    let mut con = server.conn();
    five(&mut con, &["RL.THROTTLE", "a", "0", "1", "60"]);
    five(&mut con, &["RL.SLIDE", "b", "5", "60"]);
    let before = pexpiretime(&mut con, "b");
    let r = seven(
        &mut con,
        &[
            "RL.ALLOW", "2", "a", "b", "THROTTLE", "0", "1", "60", "SLIDE", "5", "600",
        ],
    );
    assert_eq!(r.binding[0], 1);
    assert_eq!(r.limits[1], [0, 5, 3, -1, 600]);
    let after = pexpiretime(&mut con, "b");
    assert!(after - before > 500_000, "{before} -> {after}");
    assert_eq!(five(&mut con, &["RL.SLIDE", "b", "5", "600", "0"])[2], 4);
}

#[test]
fn wrong_types_change_no_key() {
    let server = Server::start();
    let mut con = server.conn();
    let _: () = cmd(&["SET", "s", "x"]).query(&mut con).unwrap();
    five(&mut con, &["RL.THROTTLE", "g", "5", "10", "60"]);
    let before = digest(&mut con);
    for args in [
        &[
            "RL.ALLOW", "2", "a", "s", "THROTTLE", "1", "1", "60", "SLIDE", "1", "60",
        ][..],
        &[
            "RL.ALLOW", "2", "a", "g", "THROTTLE", "1", "1", "60", "SLIDE", "1", "60",
        ][..],
        &[
            "RL.PEEK", "2", "a", "g", "THROTTLE", "1", "1", "60", "SLIDE", "1", "60",
        ][..],
    ] {
        assert_eq!(
            error(&mut con, args),
            "WRONGTYPE Operation against a key holding the wrong kind of value"
        );
    }
    assert_eq!(digest(&mut con), before);
    assert!(!exists(&mut con, "a"));
}

#[test]
fn bad_input() {
    let server = Server::start();
    let mut con = server.conn();
    #[rustfmt::skip]
    let table: &[(&[&str], &str)] = &[
        (&["RL.ALLOW", "1", "a", "SLIDE", "1"], "ERR wrong number of arguments for 'RL.ALLOW' command"),
        (&["RL.ALLOW", "0", "a", "SLIDE", "1", "60"], "ERR numkeys must be an integer from 1 to 16"),
        (&["RL.ALLOW", "17", "a", "SLIDE", "1", "60"], "ERR numkeys must be an integer from 1 to 16"),
        (&["RL.ALLOW", "x", "a", "SLIDE", "1", "60"], "ERR numkeys must be an integer from 1 to 16"),
        (&["RL.ALLOW", "2", "a", "a", "SLIDE", "1", "60", "SLIDE", "1", "60"], "ERR key 'a' is given more than once"),
        (&["RL.ALLOW", "2", "a", "b", "SLIDE", "1", "60"], "ERR spec 2 is missing: 2 keys need 2 specs"),
        (&["RL.ALLOW", "2", "a", "b", "SLIDE", "1", "60", "CELL", "1", "60"], "ERR spec 2: unknown algorithm 'CELL' (expected THROTTLE, SLIDE, SLICE, LEASE or QUOTA)"),
        (&["RL.ALLOW", "2", "a", "b", "SLIDE", "1", "60", "SLICE", "1", "60"], "ERR spec 2 (SLICE): expects limit window slices"),
        (&["RL.ALLOW", "2", "a", "b", "SLIDE", "1", "60", "SLIDE", "1", "0"], "ERR spec 2 (SLIDE): window must be an integer from 1 to 315360000 (seconds)"),
        (&["RL.ALLOW", "2", "a", "b", "SLIDE", "1", "60", "SLIDE", "1", "0", "MS"], "ERR spec 2 (SLIDE): window must be an integer from 1 to 315360000000 (milliseconds, with MS)"),
        (&["RL.ALLOW", "1", "a", "THROTTLE", "10", "1", "315360000"], "ERR spec 1 (THROTTLE): (max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)"),
        (&["RL.ALLOW", "1", "a", "SLIDE", "0", "60"], "ERR spec 1 (SLIDE): limit must be an integer from 1 to 1000000"),
        (&["RL.ALLOW", "1", "a", "SLICE", "1", "60", "0"], "ERR spec 1 (SLICE): slices must be an integer from 1 to 86400"),
        (&["RL.ALLOW", "1", "a", "SLIDE", "1", "60", "5"], "ERR unknown argument '5'"),
        (&["RL.ALLOW", "1", "a", "SLIDE", "1", "60", "QUANTITY"], "ERR QUANTITY must be an integer from 0 to 1000000000000"),
        (&["RL.ALLOW", "1", "a", "SLIDE", "1", "60", "QUANTITY", "-1"], "ERR QUANTITY must be an integer from 0 to 1000000000000"),
        (&["RL.ALLOW", "1", "a", "SLIDE", "1", "60", "QUANTITY", "1", "QUANTITY", "1"], "ERR QUANTITY is given more than once"),
        (&["RL.ALLOW", "1", "a", "SLIDE", "1", "60", "MS", "MS"], "ERR MS is given more than once"),
        (&["RL.ALLOW", "1", "a", "SLIDE", "1", "60", "AT", "5"], "ERR AT is accepted only from the master or the AOF: it carries the master's clock"),
        (&["RL.PEEK", "1", "a", "SLIDE", "1", "60", "AT", "5"], "ERR AT is accepted only from the master or the AOF: it carries the master's clock"),
    ];
    assert_errors(&mut con, table);
    assert_eq!(dbsize(&mut con), 0);
    // 16 keys is the most.
    let keys: Vec<String> = (0..16).map(|i| format!("k{i}")).collect();
    let mut args: Vec<&str> = vec!["RL.ALLOW", "16"];
    args.extend(keys.iter().map(String::as_str));
    for _ in 0..16 {
        args.extend_from_slice(&["SLIDE", "1", "60"]);
    }
    let r = seven(&mut con, &args);
    assert_eq!(r.limits.len(), 16);
    assert_eq!(dbsize(&mut con), 16);
}

#[test]
fn key_positions_and_command_docs() {
    let server = Server::start();
    let mut con = server.conn();
    for name in ["RL.ALLOW", "RL.PEEK"] {
        let keys: Vec<String> = cmd(&[
            "COMMAND", "GETKEYS", name, "2", "k1", "k2", "THROTTLE", "1", "1", "1", "SLIDE", "1",
            "1",
        ])
        .query(&mut con)
        .unwrap();
        assert_eq!(keys, ["k1", "k2"]);

        let info: Value = cmd(&["COMMAND", "INFO", name]).query(&mut con).unwrap();
        let Value::Array(entries) = &info else {
            panic!("{info:?}")
        };
        let Some(Value::Array(entry)) = entries.first() else {
            panic!("{info:?}")
        };
        assert_eq!(entry[1], Value::Int(-6));
        let flags = strings(&entry[2]);
        assert!(flags.iter().any(|f| f == "movablekeys"), "{flags:?}");
        if name == "RL.ALLOW" {
            for flag in ["write", "denyoom", "fast"] {
                assert!(flags.iter().any(|f| f == flag), "{flag}: {flags:?}");
            }
        } else {
            assert!(flags.iter().any(|f| f == "readonly"), "{flags:?}");
            assert!(
                !flags.iter().any(|f| f == "write" || f == "denyoom"),
                "{flags:?}"
            );
        }

        let docs: Value = cmd(&["COMMAND", "DOCS", name]).query(&mut con).unwrap();
        let doc = field(&docs, name).unwrap_or_else(|| panic!("{docs:?}"));
        assert_eq!(text(field(doc, "since").expect("since")), "0.2.0");
        let Some(Value::Array(arguments)) = field(doc, "arguments") else {
            panic!("{doc:?}")
        };
        let names: Vec<String> = arguments
            .iter()
            .map(|a| text(field(a, "name").expect("name")))
            .collect();
        assert_eq!(
            names,
            ["numkeys", "key", "spec", "quantity", "ms", "maxwait", "id"]
        );
        assert_eq!(text(field(&arguments[5], "token").unwrap()), "MAXWAIT");
        // `ID lease_id`, for the LEASE specs: optional, after its token.
        let id = &arguments[6];
        assert_eq!(text(field(id, "type").unwrap()), "string");
        assert_eq!(text(field(id, "token").unwrap()), "ID");
        assert!(strings(field(id, "flags").unwrap()).contains(&"optional".to_string()));
        let spec = &arguments[2];
        assert_eq!(text(field(spec, "type").unwrap()), "oneof");
        assert!(strings(field(spec, "flags").unwrap()).contains(&"multiple".to_string()));
        let Some(Value::Array(blocks)) = field(spec, "arguments") else {
            panic!("{spec:?}")
        };
        let block_names: Vec<String> = blocks
            .iter()
            .map(|b| text(field(b, "name").unwrap()))
            .collect();
        assert_eq!(
            block_names,
            ["THROTTLE", "SLIDE", "SLICE", "LEASE", "QUOTA"]
        );
        let Some(Value::Array(slice_args)) = field(&blocks[2], "arguments") else {
            panic!("{:?}", blocks[2])
        };
        let slice_names: Vec<String> = slice_args
            .iter()
            .map(|a| text(field(a, "name").unwrap()))
            .collect();
        assert_eq!(
            slice_names,
            ["algorithm", "limit", "window", "slices", "units", "shadow"]
        );
        let Some(Value::Array(lease_args)) = field(&blocks[3], "arguments") else {
            panic!("{:?}", blocks[3])
        };
        let lease_names: Vec<String> = lease_args
            .iter()
            .map(|a| text(field(a, "name").unwrap()))
            .collect();
        assert_eq!(
            lease_names,
            ["algorithm", "limit", "ttl", "units", "shadow"]
        );
        assert_eq!(text(field(&arguments[3], "token").unwrap()), "QUANTITY");
    }
}

/// Mixed several-limit traffic: allowed, refused (with an expiry moved
/// out), peeks, MULTI and Lua.
fn workload(con: &mut Connection) {
    for round in 0..3 {
        let q = (round + 1).to_string();
        allow3(con, "RL.ALLOW", ["{w}a", "{w}b", "{w}c"], &["QUANTITY", &q]);
        allow3(
            con,
            "RL.ALLOW",
            ["{w}a", "{w}b", "{w}c"],
            &["QUANTITY", "0"],
        );
        allow3(con, "RL.PEEK", ["{w}a", "{w}b", "{w}c"], &[]);
    }
    five(con, &["RL.SLIDE", "{w}e", "5", "60"]);
    five(con, &["RL.THROTTLE", "{w}f", "0", "1", "60"]);
    seven(
        con,
        &[
            "RL.ALLOW", "2", "{w}f", "{w}e", "THROTTLE", "0", "1", "60", "SLIDE", "5", "900",
        ],
    );
    let _: () = redis::cmd("MULTI").query(con).unwrap();
    for key in ["{m}a", "{m}a", "{m}a"] {
        let _: String = cmd(&[
            "RL.ALLOW", "2", key, "{m}b", "SLIDE", "2", "60", "SLICE", "5", "60", "10",
        ])
        .query(con)
        .unwrap();
    }
    let replies: Vec<Value> = redis::cmd("EXEC").query(con).unwrap();
    let last = parse_seven(&replies[2]).unwrap();
    assert_eq!((last.binding[0], last.index), (1, 1), "{last:?}");
    let script = "local out = {} \
        for i = 1, 3 do \
          out[#out + 1] = redis.call('RL.ALLOW', 2, KEYS[1], KEYS[2], 'THROTTLE', 1, 1, 60, 'SLIDE', 3, 120)[1] \
        end \
        return out";
    let limited: Vec<i64> = redis::cmd("EVAL")
        .arg(script)
        .arg(2)
        .arg("{lua}t")
        .arg("{lua}l")
        .query(con)
        .unwrap();
    assert_eq!(limited, [0, 0, 1]);
}

#[test]
fn replicas_and_the_aof_reach_the_masters_state() {
    let mut master = start_aof_server();
    let (_replica, mut rcon) = start_replica(&master);
    let mut con = master.conn();
    workload(&mut con);
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    let (state, times) = (digest(&mut con), expiries(&mut con));
    assert!(times.len() >= 9, "{times:?}");
    assert_eq!(digest(&mut rcon), state);
    assert_eq!(expiries(&mut rcon), times);

    // PEEK answers on the replica, where RL.ALLOW is refused.
    let r = allow3(&mut rcon, "RL.PEEK", ["{w}a", "{w}b", "{w}c"], &[]);
    assert_eq!(
        r,
        allow3(&mut con, "RL.PEEK", ["{w}a", "{w}b", "{w}c"], &[])
    );
    let e = error(
        &mut rcon,
        &["RL.ALLOW", "1", "{w}a", "THROTTLE", "1", "10", "60"],
    );
    assert!(e.starts_with("READONLY"), "{e}");

    // The AOF replays to the same state and expiries.
    master.restart();
    let mut con = master.conn();
    assert_eq!(digest(&mut con), state);
    assert_eq!(expiries(&mut con), times);
}

#[test]
fn peek_where_writes_are_refused() {
    let server = Server::start();
    let mut con = server.conn();
    allow3(&mut con, "RL.ALLOW", ["a", "b", "c"], &[]);
    let before = digest(&mut con);
    // EVAL_RO runs read-only commands only.
    let r: Value = redis::cmd("EVAL_RO")
        .arg("return redis.call('RL.PEEK', 1, KEYS[1], 'SLIDE', 2, 60)")
        .arg(1)
        .arg("b")
        .query(&mut con)
        .unwrap();
    assert_eq!(parse_seven(&r).unwrap().binding[..4], [0, 2, 0, -1]);
    let e = redis::cmd("EVAL_RO")
        .arg("return redis.call('RL.ALLOW', 1, KEYS[1], 'SLIDE', 2, 60)")
        .arg(1)
        .arg("b")
        .query::<Value>(&mut con)
        .unwrap_err();
    assert!(
        error_text(&e).contains("Write commands are not allowed"),
        "{e}"
    );

    // Out of memory under noeviction: RL.ALLOW is refused, RL.PEEK answers.
    let _: () = cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        .query(&mut con)
        .unwrap();
    let _: () = cmd(&["CONFIG", "SET", "maxmemory", "1"])
        .query(&mut con)
        .unwrap();
    let e = error(&mut con, &["RL.ALLOW", "1", "b", "SLIDE", "2", "60"]);
    assert!(e.starts_with("OOM"), "{e}");
    let r = seven(&mut con, &["RL.PEEK", "1", "b", "SLIDE", "2", "60"]);
    assert_eq!(r.binding[..4], [0, 2, 0, -1], "would be allowed, leaving 0");
    let _: () = cmd(&["CONFIG", "SET", "maxmemory", "0"])
        .query(&mut con)
        .unwrap();
    assert_eq!(digest(&mut con), before, "PEEK changed nothing");
}

#[test]
fn info_counters_and_events() {
    let server = Server::start();
    let mut con = server.conn();
    let _: () = cmd(&["CONFIG", "SET", "notify-keyspace-events", "Ed"])
        .query(&mut con)
        .unwrap();
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port)).unwrap();
    let mut sub = client.get_connection().unwrap();
    sub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut pubsub = sub.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:rl.*").unwrap();

    five(&mut con, &["RL.SLIDE", "b", "1", "60"]);
    five(&mut con, &["RL.THROTTLE", "c", "0", "1", "60"]);
    // a allows, b and c refuse: one event per refusing key.
    seven(
        &mut con,
        &[
            "RL.ALLOW", "3", "a", "b", "c", "SLIDE", "5", "60", "SLIDE", "1", "60", "THROTTLE",
            "0", "1", "60",
        ],
    );
    seven(&mut con, &["RL.ALLOW", "1", "a", "SLIDE", "5", "60"]);
    seven(&mut con, &["RL.PEEK", "1", "b", "SLIDE", "1", "60"]);
    let _ = error(&mut con, &["RL.ALLOW", "1", "a", "SLIDE", "0", "60"]);
    let mut keys = Vec::new();
    for _ in 0..2 {
        let msg = pubsub.get_message().unwrap();
        assert_eq!(msg.get_channel_name(), "__keyevent@0__:rl.limited");
        keys.push(msg.get_payload::<String>().unwrap());
    }
    assert_eq!(keys, ["b", "c"]);

    let info: String = cmd(&["INFO", "ratelimit"]).query(&mut con).unwrap();
    for (field, value) in [
        ("allow_calls", "3"),
        ("allow_allowed", "1"),
        ("allow_limited", "1"),
        ("allow_errors", "1"),
        ("peek_calls", "1"),
        ("peek_allowed", "0"),
        ("peek_limited", "1"),
        ("slide_keys", "2"),
    ] {
        let got = info_value(&info, &format!("ratelimit_{field}"));
        let got = if got.is_empty() {
            info_value(&info, field)
        } else {
            got
        };
        assert_eq!(got, value, "{field} in {info}");
    }
}
