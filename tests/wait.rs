//! MAXWAIT, SHADOW and UNITS against a real server: grants for a turn on
//! RL.THROTTLE and RL.ALLOW / RL.PEEK, shadow limits beside enforced ones,
//! per-limit units (the LLM case of a lease, requests per minute and
//! tokens per minute in one call), their errors, INFO and events, and
//! replicas and the AOF reaching the master's state. Periods are a minute
//! to hours and replies in seconds, so that the few milliseconds between
//! calls cannot move a rounded-up time.

mod common;
use common::*;

use std::time::Duration;

/// 1 per hour, capacity 1.
const HOURLY: &[&str] = &["THROTTLE", "0", "1", "3600"];

fn with(head: &[&str], spec: &[&str], tail: &[&str]) -> Vec<String> {
    head.iter()
        .chain(spec)
        .chain(tail)
        .map(|s| s.to_string())
        .collect()
}

/// A field of INFO's ratelimit section (named with or without the
/// section's prefix, as the server writes it).
fn stat(con: &mut Connection, field: &str) -> String {
    let info: String = cmd(&["INFO", "ratelimit"]).query(con).unwrap();
    let prefixed = info_value(&info, &format!("ratelimit_{field}"));
    match prefixed.is_empty() {
        true => info_value(&info, field),
        false => prefixed,
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn maxwait_on_throttle() {
    let server = Server::start();
    let mut con = server.conn();
    let call = |con: &mut Connection, tail: &[&str]| {
        five(con, &strs(&with(&["RL.THROTTLE", "a"], &HOURLY[1..], tail)))
    };
    // At once: its wait is 0, not -1.
    assert_eq!(call(&mut con, &["MAXWAIT", "0"]), [0, 1, 0, 0, 3600]);
    // Full: a wait of an hour is beyond 3599 s: refused, nothing recorded.
    assert_eq!(call(&mut con, &["MAXWAIT", "3599"]), [1, 1, 0, 3600, 3600]);
    // Within an hour: granted for its turn, the TAT an hour later.
    assert_eq!(call(&mut con, &["maxwait", "3600"]), [0, 1, 0, 3600, 7200]);
    assert_eq!(
        call(&mut con, &["1", "MAXWAIT", "7200"]),
        [0, 1, 0, 7200, 10800]
    );
    // Without MAXWAIT nothing changes; two units never fit.
    assert_eq!(call(&mut con, &[]), [1, 1, 0, 10800, 10800]);
    assert_eq!(
        call(&mut con, &["2", "MAXWAIT", "100000"]),
        [1, 1, 0, -1, 10800]
    );
    // The TAT is 3 h ahead, 2 h past the tolerance: even a peek waits 2 h.
    // It answers that wait, and books nothing.
    assert_eq!(
        call(&mut con, &["0", "MAXWAIT", "0"]),
        [1, 1, 0, 7200, 10800]
    );
    assert_eq!(
        call(&mut con, &["0", "MAXWAIT", "7200"]),
        [0, 1, 0, 7200, 10800]
    );
    // With MS, in milliseconds.
    let r = five(
        &mut con,
        &[
            "RL.THROTTLE",
            "a",
            "0",
            "1",
            "3600000",
            "MS",
            "MAXWAIT",
            "14400000",
        ],
    );
    assert_eq!(r[..3], [0, 1, 0]);
    assert!((10_799_000..=10_800_000).contains(&r[3]), "{r:?}");
    assert_eq!(stat(&mut con, "waits_granted"), "3");
    assert_eq!(stat(&mut con, "throttle_limited"), "4");

    assert_errors(
        &mut con,
        &[
            (
                &["RL.THROTTLE", "a", "0", "1", "60", "MAXWAIT", "-1"],
                "ERR MAXWAIT must be an integer from 0 to 315360000 (seconds)",
            ),
            (
                &["RL.THROTTLE", "a", "0", "1", "60", "MS", "MAXWAIT", "x"],
                "ERR MAXWAIT must be an integer from 0 to 315360000000 (milliseconds, with MS)",
            ),
            (
                &[
                    "RL.THROTTLE",
                    "a",
                    "0",
                    "1",
                    "60",
                    "MAXWAIT",
                    "1",
                    "MAXWAIT",
                    "1",
                ],
                "ERR MAXWAIT is given more than once",
            ),
            (
                &["RL.SLIDE", "s", "5", "60", "MAXWAIT", "1"],
                "ERR MAXWAIT takes THROTTLE limits only",
            ),
            (
                &["RL.SLICE", "s", "5", "60", "6", "MAXWAIT", "1"],
                "ERR MAXWAIT takes THROTTLE limits only",
            ),
            (
                &["RL.QUOTA", "s", "5", "DAY", "MAXWAIT", "1"],
                "ERR MAXWAIT takes THROTTLE limits only",
            ),
            (
                &["RL.LEASE", "s", "5", "60", "id", "MAXWAIT", "1"],
                "ERR MAXWAIT takes THROTTLE limits only",
            ),
            (
                &["RL.THROTTLE", "a", "0", "1", "60", "SHADOW"],
                "ERR unknown argument 'SHADOW'",
            ),
            (
                &["RL.THROTTLE", "a", "0", "1", "60", "UNITS", "1"],
                "ERR unknown argument 'UNITS'",
            ),
            (
                &["RL.REFUND", "a", "THROTTLE", "0", "1", "60", "SHADOW", "1"],
                "ERR unknown argument 'SHADOW'",
            ),
            (
                &[
                    "RL.CHARGE",
                    "a",
                    "THROTTLE",
                    "0",
                    "1",
                    "60",
                    "1",
                    "MAXWAIT",
                    "1",
                ],
                "ERR unknown argument 'MAXWAIT'",
            ),
        ],
    );
}

#[test]
fn maxwait_on_allow_and_peek() {
    let server = Server::start();
    let mut con = server.conn();
    // k1: 1 per hour; k2: capacity 2, 1 per minute.
    let call = |con: &mut Connection, command: &str, tail: &[&str]| {
        let mut args = vec![command, "2", "k1", "k2"];
        args.extend_from_slice(HOURLY);
        args.extend_from_slice(&["THROTTLE", "1", "1", "60"]);
        args.extend_from_slice(tail);
        seven(con, &args)
    };
    let r = call(&mut con, "RL.ALLOW", &["MAXWAIT", "0"]);
    assert_eq!(r.limits, [[0, 1, 0, 0, 3600], [0, 2, 1, 0, 60]]);
    assert_eq!((r.index, r.binding), (1, r.limits[0]));
    // k1 waits an hour, k2 would go at once: both are booked at the
    // call's turn, k2 as a request arriving then. The longest wait binds.
    let r = call(&mut con, "RL.ALLOW", &["MAXWAIT", "3600"]);
    assert_eq!(r.limits, [[0, 1, 0, 3600, 7200], [0, 2, 0, 0, 3660]]);
    assert_eq!((r.index, r.binding), (1, r.limits[0]));
    // k1 would wait two hours: refused; k2 shows its own grant, and
    // nothing is recorded anywhere.
    let before = (digest_value(&mut con, "k1"), digest_value(&mut con, "k2"));
    let r = call(&mut con, "RL.ALLOW", &["MAXWAIT", "3600"]);
    assert_eq!(r.limits, [[1, 1, 0, 7200, 7200], [0, 2, 0, 3600, 3720]]);
    assert_eq!((r.index, r.binding), (1, r.limits[0]));
    // RL.PEEK answers what RL.ALLOW would, and changes nothing.
    // k2's own wait is an hour; it is booked at the call's turn, in 2 h.
    let peek = call(&mut con, "RL.PEEK", &["MAXWAIT", "7200"]);
    assert_eq!(peek.limits, [[0, 1, 0, 7200, 10800], [0, 2, 0, 3600, 7260]]);
    assert_eq!((peek.index, peek.binding), (1, peek.limits[0]));
    assert_eq!(
        (digest_value(&mut con, "k1"), digest_value(&mut con, "k2")),
        before
    );
    assert_eq!(stat(&mut con, "waits_granted"), "1");
    assert_eq!(stat(&mut con, "allow_limited"), "1");

    assert_errors(
        &mut con,
        &[
            (
                &[
                    "RL.ALLOW", "2", "a", "b", "THROTTLE", "0", "1", "60", "SLIDE", "5", "60",
                    "MAXWAIT", "1",
                ],
                "ERR MAXWAIT takes THROTTLE limits only: spec 2 is SLIDE",
            ),
            (
                &[
                    "RL.PEEK", "2", "a", "b", "QUOTA", "5", "DAY", "SLIDE", "5", "60", "MAXWAIT",
                    "1",
                ],
                "ERR MAXWAIT takes THROTTLE limits only: spec 1 is QUOTA",
            ),
            (
                &[
                    "RL.ALLOW",
                    "1",
                    "a",
                    "THROTTLE",
                    "0",
                    "1",
                    "60",
                    "MAXWAIT",
                    "315360001",
                ],
                "ERR MAXWAIT must be an integer from 0 to 315360000 (seconds)",
            ),
            (
                &[
                    "RL.ALLOW", "1", "a", "THROTTLE", "0", "1", "60", "MAXWAIT", "1", "MAXWAIT",
                    "2",
                ],
                "ERR MAXWAIT is given more than once",
            ),
        ],
    );
}

#[test]
fn shadow_limits() {
    let server = Server::start();
    let mut con = server.conn();
    let _: () = cmd(&["CONFIG", "SET", "notify-keyspace-events", "Ed"])
        .query(&mut con)
        .unwrap();
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port)).unwrap();
    let mut sub = client.get_connection().unwrap();
    sub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut pubsub = sub.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:rl.limited").unwrap();

    // e: capacity 10 a minute, enforced; s: 1 a minute, SHADOW.
    let call = |con: &mut Connection, keys: [&str; 2], tail: &[&str]| {
        let mut args = vec!["RL.ALLOW", "2", keys[0], keys[1]];
        args.extend_from_slice(&["SLIDE", "1", "60", "SHADOW", "THROTTLE", "9", "10", "60"]);
        args.extend_from_slice(tail);
        seven(con, &args)
    };
    // Both allow: both record; the binding limit is the enforced one.
    let r = call(&mut con, ["s", "e"], &[]);
    assert_eq!(r.limits, [[0, 1, 0, -1, 60], [0, 10, 9, -1, 6]]);
    assert_eq!((r.index, r.binding), (2, r.limits[1]));
    // The shadow limit would refuse: shown so, the call allowed, and the
    // shadow key records nothing.
    let s_before = digest_value(&mut con, "s");
    let r = call(&mut con, ["s", "e"], &[]);
    assert_eq!(r.limits, [[1, 1, 0, 60, 60], [0, 10, 8, -1, 12]]);
    assert_eq!((r.index, r.binding), (2, r.limits[1]));
    assert_eq!(digest_value(&mut con, "s"), s_before);
    // An enforced refusal: nothing recorded anywhere, the shadow key that
    // would allow included.
    five(&mut con, &["RL.THROTTLE", "full", "0", "1", "60"]);
    let mut args = vec!["RL.ALLOW", "2", "new", "full"];
    args.extend_from_slice(&["SLIDE", "1", "60", "SHADOW", "THROTTLE", "0", "1", "60"]);
    let r = seven(&mut con, &args);
    assert_eq!(r.limits, [[0, 1, 0, -1, 60], [1, 1, 0, 60, 60]]);
    assert_eq!((r.index, r.binding), (2, r.limits[1]));
    assert!(!exists(&mut con, "new"));
    // Only the enforced refusal published rl.limited.
    let msg = pubsub.get_message().unwrap();
    assert_eq!(msg.get_payload::<String>().unwrap(), "full");

    // s refuses again (counted again), e allows; then RL.PEEK answers
    // the same way, changing nothing.
    let r = call(&mut con, ["s", "e"], &[]);
    assert_eq!(
        (r.limits[0][0], r.binding[..3].to_vec()),
        (1, vec![0, 10, 7])
    );
    let e_now = digest_value(&mut con, "e");
    let mut args = vec!["RL.PEEK", "2", "s", "e"];
    args.extend_from_slice(&["SLIDE", "1", "60", "SHADOW", "THROTTLE", "9", "10", "60"]);
    let peek = seven(&mut con, &args);
    assert_eq!(peek.limits[0][..2], [1, 1]);
    assert_eq!(
        (peek.index, peek.binding[..3].to_vec()),
        (2, vec![0, 10, 6])
    );
    assert_eq!(digest_value(&mut con, "e"), e_now);

    // With MAXWAIT only the enforced limits set the wait: a shadow limit
    // that would need longer shows limited 1 and records nothing.
    let both = |con: &mut Connection, tail: &[&str]| {
        let mut args = vec!["RL.ALLOW", "2", "w1", "w2"];
        args.extend_from_slice(HOURLY);
        args.extend_from_slice(&["THROTTLE", "0", "1", "7200", "SHADOW"]);
        args.extend_from_slice(tail);
        seven(con, &args)
    };
    assert_eq!(
        both(&mut con, &[]).limits,
        [[0, 1, 0, -1, 3600], [0, 1, 0, -1, 7200]]
    );
    let w2 = digest_value(&mut con, "w2");
    let r = both(&mut con, &["MAXWAIT", "3600"]);
    assert_eq!(r.limits, [[0, 1, 0, 3600, 7200], [1, 1, 0, 7200, 7200]]);
    assert_eq!((r.index, r.binding), (1, r.limits[0]));
    assert_eq!(digest_value(&mut con, "w2"), w2);

    for (field, value) in [
        ("allow_calls", "6"),
        ("allow_allowed", "5"),
        ("allow_limited", "1"),
        ("shadow_limited", "3"),
        ("waits_granted", "1"),
    ] {
        assert_eq!(stat(&mut con, field), value, "{field}");
    }
    let _: () = cmd(&["CONFIG", "RESETSTAT"]).query(&mut con).unwrap();
    assert_eq!(stat(&mut con, "shadow_limited"), "0");

    assert_errors(
        &mut con,
        &[
            (
                &[
                    "RL.ALLOW", "2", "a", "b", "THROTTLE", "0", "1", "60", "SHADOW", "SLIDE", "5",
                    "60", "shadow",
                ],
                "ERR at least one spec must be enforced: every spec is SHADOW",
            ),
            (
                &["RL.PEEK", "1", "a", "THROTTLE", "0", "1", "60", "SHADOW"],
                "ERR at least one spec must be enforced: every spec is SHADOW",
            ),
            (
                &[
                    "RL.ALLOW", "1", "a", "THROTTLE", "0", "1", "60", "SHADOW", "SHADOW",
                ],
                "ERR spec 1 (THROTTLE): SHADOW is given more than once",
            ),
        ],
    );
}

/// The LLM case of ROUND5.md: a lease, 60 requests a minute and 100,000
/// tokens a minute, with an estimate of 1,500 tokens, in one call.
const LLM: &[&str] = &[
    "RL.ALLOW",
    "3",
    "{u1}:lease",
    "{u1}:rpm",
    "{u1}:tpm",
    "LEASE",
    "4",
    "120",
    "THROTTLE",
    "60",
    "60",
    "60",
    "THROTTLE",
    "100000",
    "100000",
    "60",
    "UNITS",
    "1500",
    "ID",
    "req-7",
];

#[test]
fn units_the_llm_case() {
    let server = Server::start();
    let mut con = server.conn();
    let r = seven(&mut con, LLM);
    // tpm: T = 0.6 ms, 1,500 tokens take 0.9 s of its capacity 100,001.
    assert_eq!(
        r.limits,
        [
            [0, 4, 3, -1, 120],
            [0, 61, 60, -1, 1],
            [0, 100_001, 98_501, -1, 1]
        ]
    );
    assert_eq!((r.index, r.binding), (1, r.limits[0]));
    // The cost known afterwards: 1,800 tokens, 300 more than estimated.
    let charged = five(
        &mut con,
        &[
            "RL.CHARGE",
            "{u1}:tpm",
            "THROTTLE",
            "100000",
            "100000",
            "60",
            "300",
        ],
    );
    // (Time gives back a token each 0.6 ms: the counts after the first
    // are within a second of tokens of the exact ones.)
    let near = |got: i64, want: i64| (want..want + 1_700).contains(&got);
    assert!(near(charged[2], 98_201), "{charged:?}");

    // An estimate above the tokens' capacity never fits that limit: the
    // call is refused there, and the lease is not taken.
    let mut big = LLM.to_vec();
    big[17] = "100002";
    big[19] = "req-8";
    let r = seven(&mut con, &big);
    assert_eq!(r.limits[2][..2], [1, 100_001]);
    assert!(near(r.limits[2][2], 98_201), "{r:?}");
    assert_eq!(r.limits[2][3], -1);
    assert_eq!(r.limits[0][..3], [0, 4, 2]);
    assert_eq!((r.index, r.binding[0]), (3, 1));
    let lease = five(
        &mut con,
        &["RL.LEASE", "{u1}:lease", "4", "120", "req-8", "0"],
    );
    assert_eq!(lease[2], 3, "{lease:?}");

    // Every limit's quantity 0: a peek, which changes nothing ...
    let dirty_before = dirty(&mut con);
    let mut peek = LLM.to_vec();
    peek[17] = "0";
    peek.extend_from_slice(&["QUANTITY", "0"]);
    let r = seven(&mut con, &peek);
    assert_eq!(r.limits[1][..3], [0, 61, 60]);
    assert_eq!(dirty(&mut con), dirty_before);
    // ... and QUANTITY 0 with UNITS on one limit records that one alone.
    let r = seven(
        &mut con,
        &[
            "RL.ALLOW", "2", "{u1}:rpm", "{u1}:tpm", "THROTTLE", "60", "60", "60", "THROTTLE",
            "100000", "100000", "60", "UNITS", "1000", "QUANTITY", "0",
        ],
    );
    assert_eq!(r.limits[0][..3], [0, 61, 60]);
    assert!(near(r.limits[1][2], 97_201), "{r:?}");
    let r = seven(&mut con, &peek);
    assert_eq!(r.limits[1][..3], [0, 61, 60]);
    assert!(near(r.limits[2][2], 97_201), "{r:?}");

    assert_errors(
        &mut con,
        &[
            (
                &[
                    "RL.ALLOW",
                    "1",
                    "a",
                    "THROTTLE",
                    "0",
                    "1",
                    "60",
                    "UNITS",
                    "1000000000001",
                ],
                "ERR spec 1 (THROTTLE): UNITS must be an integer from 0 to 1000000000000",
            ),
            (
                &[
                    "RL.ALLOW", "2", "a", "b", "THROTTLE", "0", "1", "60", "SLIDE", "5", "60",
                    "UNITS", "-1",
                ],
                "ERR spec 2 (SLIDE): UNITS must be an integer from 0 to 1000000000000",
            ),
            (
                &[
                    "RL.PEEK", "1", "a", "THROTTLE", "0", "1", "60", "UNITS", "1", "units", "1",
                ],
                "ERR spec 1 (THROTTLE): UNITS is given more than once",
            ),
            (
                &[
                    "RL.ALLOW", "1", "a", "THROTTLE", "0", "1", "60", "QUANTITY", "1", "UNITS", "1",
                ],
                "ERR unknown argument 'UNITS'",
            ),
        ],
    );
}

/// MAXWAIT grants, SHADOW recordings and refusals, UNITS, in MULTI and
/// Lua too.
fn workload(con: &mut Connection) {
    for wait in ["0", "3600", "3600", "7200"] {
        let mut args = vec!["RL.ALLOW", "2", "{w}a", "{w}b"];
        args.extend_from_slice(HOURLY);
        args.extend_from_slice(&["THROTTLE", "1", "1", "60", "MAXWAIT", wait]);
        seven(con, &args);
        five(
            con,
            &[
                "RL.THROTTLE",
                "{w}t",
                "2",
                "3",
                "60000",
                "MS",
                "MAXWAIT",
                wait,
            ],
        );
    }
    for _ in 0..3 {
        seven(
            con,
            &[
                "RL.ALLOW", "3", "{w}e", "{w}s", "{w}u", "THROTTLE", "4", "1", "60", "SLIDE", "1",
                "60", "SHADOW", "SLICE", "10", "60", "6", "UNITS", "3",
            ],
        );
    }
    // The LLM case, per hour (so that no key expires before the restart).
    let mut llm = LLM.to_vec();
    llm[2..5].copy_from_slice(&["{w}lease", "{w}rpm", "{w}tpm"]);
    llm[11] = "3600";
    llm[15] = "3600";
    seven(con, &llm);
    let _: () = redis::cmd("MULTI").query(con).unwrap();
    for _ in 0..2 {
        let _: String = cmd(&["RL.THROTTLE", "{m}a", "0", "1", "60", "MAXWAIT", "120"])
            .query(con)
            .unwrap();
    }
    let _: Vec<Value> = redis::cmd("EXEC").query(con).unwrap();
    let script = "return redis.call('RL.ALLOW', 2, KEYS[1], KEYS[2], 'THROTTLE', 0, 1, 60, \
        'THROTTLE', 0, 1, 90, 'SHADOW', 'MAXWAIT', 60)[4]";
    for _ in 0..2 {
        let _: i64 = redis::cmd("EVAL")
            .arg(script)
            .arg(2)
            .arg("{lua}a")
            .arg("{lua}b")
            .query(con)
            .unwrap();
    }
}

#[test]
fn replicas_and_the_aof_reach_the_masters_state() {
    let mut master = start_aof_server();
    let (_replica, mut rcon) = start_replica(&master);
    let mut con = master.conn();
    workload(&mut con);
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    let (state, times) = (digest(&mut con), expiries(&mut con));
    assert!(times.len() >= 11, "{times:?}");
    let keys: Vec<(String, String)> = times
        .keys()
        .map(|k| {
            let k = k.trim_start_matches("0:").to_string();
            (k.clone(), digest_value(&mut con, &k))
        })
        .collect();
    assert_eq!(expiries(&mut rcon), times);
    assert_eq!(digest(&mut rcon), state);
    // The replica answers RL.PEEK with MAXWAIT as the master does.
    let mut args = vec!["RL.PEEK", "2", "{w}a", "{w}b"];
    args.extend_from_slice(HOURLY);
    args.extend_from_slice(&["THROTTLE", "1", "1", "60", "MAXWAIT", "90000"]);
    assert_eq!(seven(&mut rcon, &args), seven(&mut con, &args));

    master.restart();
    let mut con = master.conn();
    for (key, value) in &keys {
        assert_eq!(
            &digest_value(&mut con, key),
            value,
            "{key}: {:?}",
            inspect(&mut con, key)
        );
    }
    assert_eq!(digest(&mut con), state);
    assert_eq!(expiries(&mut con), times);
}
