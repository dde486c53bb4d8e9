//! BLOCK against a real server (docs/DESIGN.md#block): the grammar and its
//! errors, a refusal that blocks its key, what a blocked key answers, each
//! kind, RL.ALLOW and RL.PEEK, RL.INSPECT, INFO, DEL, RL.REFUND and
//! RL.CHARGE, and a blocked key through replicas, the AOF, RDB, DUMP and
//! RESTORE, COPY and DEBUG RELOAD.
//!
//! Blocks and windows are minutes or years long, so nothing ends while a
//! test runs; replies are exact because times are rounded up to the
//! second and every call runs within a second of the refusal that blocked.

mod common;
use common::*;

#[test]
fn bad_block_arguments_are_refused_naming_them() {
    let server = Server::start();
    let mut con = server.conn();
    #[rustfmt::skip]
    let table: &[(&[&str], &str)] = &[
        (&["RL.THROTTLE", "k", "1", "1", "60", "BLOCK", "0"], "ERR BLOCK must be an integer from 1 to 315360000 (seconds)"),
        (&["RL.THROTTLE", "k", "1", "1", "60", "BLOCK", "315360001"], "ERR BLOCK must be an integer from 1 to 315360000 (seconds)"),
        (&["RL.THROTTLE", "k", "1", "1", "60000", "MS", "BLOCK", "x"], "ERR BLOCK must be an integer from 1 to 315360000000 (milliseconds, with MS)"),
        (&["RL.THROTTLE", "k", "1", "1", "60", "BLOCK"], "ERR BLOCK must be an integer from 1 to 315360000 (seconds)"),
        (&["RL.THROTTLE", "k", "1", "1", "60", "BLOCK", "5", "block", "6"], "ERR BLOCK is given more than once"),
        (&["RL.SLIDE", "k", "1", "60", "BLOCK", "-1"], "ERR BLOCK must be an integer from 1 to 315360000 (seconds)"),
        (&["RL.SLICE", "k", "1", "60", "6", "1", "BLOCK", "5", "BLOCK", "5"], "ERR BLOCK is given more than once"),
        (&["RL.QUOTA", "k", "1", "DAY", "BLOCK", "0"], "ERR BLOCK must be an integer from 1 to 315360000 (seconds)"),
        (&["RL.LEASE", "k", "1", "60", "id", "BLOCK", "5"], "ERR LEASE takes no BLOCK"),
        (&["RL.LEASE", "k", "1", "60", "id", "1", "block", "5"], "ERR LEASE takes no BLOCK"),
        (&["RL.ALLOW", "1", "k", "SLIDE", "1", "60", "BLOCK", "0"], "ERR spec 1 (SLIDE): BLOCK must be an integer from 1 to 315360000 (seconds)"),
        (&["RL.ALLOW", "2", "a", "b", "THROTTLE", "1", "1", "60", "SLIDE", "1", "60", "BLOCK", "5", "BLOCK", "5"], "ERR spec 2 (SLIDE): BLOCK is given more than once"),
        (&["RL.ALLOW", "1", "k", "LEASE", "1", "60", "BLOCK", "5", "ID", "x"], "ERR spec 1 (LEASE): LEASE takes no BLOCK"),
        (&["RL.PEEK", "2", "a", "b", "THROTTLE", "1", "1", "60", "LEASE", "1", "60", "BLOCK", "5"], "ERR spec 2 (LEASE): LEASE takes no BLOCK"),
        (&["RL.REFUND", "k", "THROTTLE", "1", "1", "60", "BLOCK", "5", "1"], "ERR unknown argument 'BLOCK'"),
        (&["RL.REFUND", "k", "THROTTLE", "1", "1", "60", "1", "BLOCK", "5"], "ERR unknown argument 'BLOCK'"),
        (&["RL.CHARGE", "k", "SLIDE", "1", "60", "block", "5", "1"], "ERR unknown argument 'block'"),
    ];
    assert_errors(&mut con, table);
    // MS's maximum is the same time in milliseconds.
    five(
        &mut con,
        &[
            "RL.THROTTLE",
            "ok",
            "1",
            "1",
            "60",
            "MS",
            "BLOCK",
            "315360000000",
        ],
    );
    assert_eq!(dbsize(&mut con), 1, "only the valid call made a key");
}

#[test]
fn a_throttle_refusal_blocks_its_key() {
    let server = Server::start();
    let mut con = server.conn();
    // One unit a minute, BLOCK 600 s.
    let call = ["RL.THROTTLE", "k", "0", "1", "60", "1", "BLOCK", "600"];
    assert_eq!(five(&mut con, &call), [0, 1, 0, -1, 60]);
    let sent = unix_ns();
    // The refusal blocks the key until now + 600 s; its own retry (60 s)
    // is earlier, so the block's end answers.
    assert_eq!(five(&mut con, &call), [1, 1, 0, 600, 600]);
    let until = inspect_int(&mut con, "k", "blocked_until");
    let received = unix_ns();
    assert!(
        (ceil_to(sent + 600 * NS_PER_S, NS_PER_MS)..=ceil_to(received + 600 * NS_PER_S, NS_PER_MS))
            .contains(&until),
        "blocked_until {until}"
    );
    // The key lives as long as its block.
    assert_eq!(pexpiretime(&mut con, "k"), until);
    // Every request is refused, with or without BLOCK, with any
    // parameters; refusals do not extend the block; a peek answers the
    // block's end and changes nothing.
    for args in [
        &call[..],
        &["RL.THROTTLE", "k", "100", "100", "1"][..],
        &["RL.THROTTLE", "k", "0", "1", "60", "1", "BLOCK", "6000"][..],
    ] {
        let r = five(&mut con, args);
        assert_eq!((r[0], r[2], r[3]), (1, 0, 600), "{args:?}: {r:?}");
    }
    assert_eq!(
        five(&mut con, &["RL.THROTTLE", "k", "0", "1", "60", "0"]),
        [1, 1, 0, 600, 600]
    );
    assert_eq!(inspect_int(&mut con, "k", "blocked_until"), until);
    assert_eq!(pexpiretime(&mut con, "k"), until);
    // A quantity that can never fit: -1, as ever.
    assert_eq!(
        five(&mut con, &["RL.THROTTLE", "k", "0", "1", "60", "2"]),
        [1, 1, 0, -1, 600]
    );
    // RL.REFUND and RL.CHARGE keep the block (and answer it).
    assert_eq!(
        five(
            &mut con,
            &["RL.REFUND", "k", "THROTTLE", "0", "1", "60", "1"]
        ),
        [1, 1, 0, 600, 600]
    );
    assert_eq!(
        five(
            &mut con,
            &["RL.CHARGE", "k", "THROTTLE", "0", "1", "60", "1"]
        ),
        [1, 1, 0, 600, 600]
    );
    assert_eq!(inspect_int(&mut con, "k", "blocked_until"), until);
    // DEL lifts it (and resets the limit).
    let _: i64 = redis::cmd("DEL").arg("k").query(&mut con).unwrap();
    assert_eq!(five(&mut con, &call), [0, 1, 0, -1, 60]);
    assert!(inspect(&mut con, "k")
        .unwrap()
        .iter()
        .all(|(name, _)| name != "blocked_until"));
}

#[test]
fn a_refusal_that_can_never_fit_blocks_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    assert_eq!(
        five(
            &mut con,
            &["RL.THROTTLE", "k", "0", "1", "60", "2", "BLOCK", "600"]
        ),
        [1, 1, 1, -1, 0]
    );
    assert!(!exists(&mut con, "k"));
    assert_eq!(
        five(&mut con, &["RL.SLIDE", "k", "3", "60", "4", "BLOCK", "600"]),
        [1, 3, 3, -1, 0]
    );
    assert!(!exists(&mut con, "k"));
}

#[test]
fn milliseconds_block_in_milliseconds() {
    let server = Server::start();
    let mut con = server.conn();
    let call = ["RL.SLIDE", "k", "1", "60000", "1", "MS", "BLOCK", "900000"];
    assert_eq!(five(&mut con, &call)[0], 0);
    let r = five(&mut con, &call);
    assert_eq!((r[0], r[2]), (1, 0));
    assert!((899_000..=900_000).contains(&r[3]), "{r:?}");
    assert_eq!(r[3], r[4], "{r:?}");
}

#[test]
fn every_kind_but_lease_blocks() {
    let server = Server::start();
    let mut con = server.conn();
    // Each call fills its limit, then is refused and blocks for an hour.
    #[rustfmt::skip]
    let kinds: &[&[&str]] = &[
        &["RL.SLIDE", "slide", "2", "60", "2", "BLOCK", "3600"],
        &["RL.SLICE", "slice", "2", "60", "6", "2", "BLOCK", "3600"],
        &["RL.QUOTA", "quota", "2", "MINUTE", "2", "BLOCK", "3600"],
        &["RL.THROTTLE", "throttle", "1", "1", "60", "2", "BLOCK", "3600"],
    ];
    for call in kinds {
        assert_eq!(five(&mut con, call)[0], 0, "{call:?}");
        let r = five(&mut con, call);
        assert_eq!(
            (r[0], r[2], r[3], r[4]),
            (1, 0, 3600, 3600),
            "{call:?}: {r:?}"
        );
        // Blocked: refused with any quantity, even one that would fit
        // long after the limiter's own window.
        let mut one = call.to_vec();
        let q = one.len() - 3;
        one[q] = "1";
        let r = five(&mut con, &one);
        assert_eq!((r[0], r[3]), (1, 3600), "{one:?}: {r:?}");
        let key = call[1];
        let until = inspect_int(&mut con, key, "blocked_until");
        assert_eq!(pexpiretime(&mut con, key), until, "{key}");
    }
    assert_eq!(
        info_field(&mut con, "ratelimit", "ratelimit_blocks_started"),
        "4"
    );
    assert_eq!(
        info_field(&mut con, "ratelimit", "ratelimit_blocked_refusals"),
        "4"
    );
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .unwrap();
    assert_eq!(
        info_field(&mut con, "ratelimit", "ratelimit_blocks_started"),
        "0"
    );
}

#[test]
fn a_quota_blocked_past_its_period_keeps_the_later_expiry() {
    let server = Server::start();
    let mut con = server.conn();
    let call = ["RL.QUOTA", "q", "1", "MINUTE", "1", "BLOCK", "7200"];
    assert_eq!(five(&mut con, &call)[0], 0);
    let period_end = pexpiretime(&mut con, "q");
    let r = five(&mut con, &call);
    assert_eq!((r[0], r[3], r[4]), (1, 7200, 7200), "{r:?}");
    let until = inspect_int(&mut con, "q", "blocked_until");
    assert!(until > period_end + 7_000_000);
    assert_eq!(pexpiretime(&mut con, "q"), until);
}

#[test]
fn allow_blocks_every_refusing_limit_and_only_those() {
    let server = Server::start();
    let mut con = server.conn();
    let specs = |q: &'static str| -> Vec<&'static str> {
        vec![
            "RL.ALLOW", "3", "{u}a", "{u}b", "{u}c", "THROTTLE", "9", "10", "60", // allows
            "SLIDE", "1", "60", "BLOCK", "600", // refuses the second call
            "SLICE", "1", "60", "6", "BLOCK", "300", // refuses the second call
            "QUANTITY", q,
        ]
    };
    assert_eq!(seven(&mut con, &specs("1")).binding[0], 0);
    // RL.PEEK answers what RL.ALLOW would, the blocks included, and
    // starts none.
    let peek = {
        let mut p = specs("1");
        p[0] = "RL.PEEK";
        seven(&mut con, &p)
    };
    assert_eq!(peek.binding, [1, 1, 0, 600, 600]);
    assert_eq!(peek.index, 2);
    assert!(inspect(&mut con, "{u}b")
        .unwrap()
        .iter()
        .all(|(n, _)| n != "blocked_until"));
    let refused = seven(&mut con, &specs("1"));
    assert_eq!(refused.binding, [1, 1, 0, 600, 600]);
    assert_eq!(refused.index, 2);
    assert_eq!(refused.limits[0][0], 0, "the THROTTLE allowed");
    assert_eq!(refused.limits[2], [1, 1, 0, 300, 300]);
    assert_eq!(
        refused.limits, peek.limits,
        "RL.PEEK said what RL.ALLOW did"
    );
    let blocked = |con: &mut Connection, key: &str| {
        inspect(con, key)
            .unwrap()
            .iter()
            .any(|(n, _)| n == "blocked_until")
    };
    assert!(!blocked(&mut con, "{u}a"));
    assert!(blocked(&mut con, "{u}b"));
    assert!(blocked(&mut con, "{u}c"));
    // A blocked key refuses the whole call, even where its own limit
    // would allow (a wider SLIDE).
    let r = seven(
        &mut con,
        &[
            "RL.ALLOW", "2", "{u}a", "{u}c", "THROTTLE", "9", "10", "60", "SLICE", "100", "60", "6",
        ],
    );
    assert_eq!((r.binding[0], r.index, r.binding[3]), (1, 2, 300));
    assert_eq!(r.limits[0][0], 0);
    // The single command sees the same block.
    assert_eq!(five(&mut con, &["RL.SLIDE", "{u}b", "100", "60"])[3], 600);
    assert_eq!(
        info_field(&mut con, "ratelimit", "ratelimit_blocks_started"),
        "2"
    );
    assert_eq!(
        info_field(&mut con, "ratelimit", "ratelimit_blocked_refusals"),
        "2"
    );
}

/// Blocked keys of each kind, one call each, long-lived (a ten-year
/// block on keys whose limit is refused at once).
fn blocked_workload(con: &mut Connection) {
    #[rustfmt::skip]
    let calls: &[&[&str]] = &[
        &["RL.THROTTLE", "t:b", "0", "1", "60", "1"],
        &["RL.THROTTLE", "t:b", "0", "1", "60", "1", "BLOCK", "315360000"],
        &["RL.SLIDE", "l:b", "1", "60", "1", "PRECISION", "1"],
        &["RL.SLIDE", "l:b", "1", "60", "1", "BLOCK", "3600"],
        &["RL.SLICE", "s:b", "1", "60", "6", "1"],
        &["RL.SLICE", "s:b", "1", "60", "6", "1", "BLOCK", "3600"],
        &["RL.QUOTA", "q:b", "1", "DAY", "1", "TZ", "Europe/Paris"],
        &["RL.QUOTA", "q:b", "1", "DAY", "1", "TZ", "Europe/Paris", "BLOCK", "3600"],
        &["RL.THROTTLE", "t:free", "5", "1", "60", "1", "BLOCK", "3600"],
    ];
    for call in calls {
        five(con, call);
    }
    let r = seven(
        con,
        &[
            "RL.ALLOW", "2", "a:t", "a:q", "THROTTLE", "0", "1", "60", "QUOTA", "5", "DAY",
            "BLOCK", "60",
        ],
    );
    assert_eq!(r.binding[0], 0);
    let r = seven(
        con,
        &[
            "RL.ALLOW", "2", "a:t", "a:q", "THROTTLE", "0", "1", "60", "BLOCK", "3600", "QUOTA",
            "5", "DAY", "BLOCK", "60",
        ],
    );
    assert_eq!(r.binding[0], 1);
}

const BLOCKED_KEYS: [&str; 5] = ["t:b", "l:b", "s:b", "q:b", "a:t"];

#[test]
fn a_replica_and_the_aof_reach_the_masters_blocks() {
    let mut master = start_synced_aof_server("no");
    let (_replica, mut rcon) = start_replica(&master);
    let mut con = master.conn();
    blocked_workload(&mut con);
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    let want = dataset(&mut con);
    assert_same_dataset(&dataset(&mut rcon), &want, 7, "replica");
    for key in BLOCKED_KEYS {
        assert_eq!(
            digest_value(&mut rcon, key),
            digest_value(&mut con, key),
            "{key}"
        );
        assert_eq!(
            inspect_int(&mut rcon, key, "blocked_until"),
            inspect_int(&mut con, key, "blocked_until"),
            "{key}"
        );
    }
    // The AOF replays the commands with the master's clock.
    master.restart();
    let mut con = master.conn();
    assert_same_dataset(&dataset(&mut con), &want, 7, "AOF replay");
    // Rewritten, it holds the states, trailer and all.
    let _: String = redis::cmd("BGREWRITEAOF").query(&mut con).unwrap();
    wait_until(20, "the rewrite", || {
        info_field(&mut con, "persistence", "aof_rewrite_in_progress") == "0"
            && info_field(&mut con, "persistence", "aof_rewrite_scheduled") == "0"
    });
    master.restart();
    let mut con = master.conn();
    assert_same_dataset(&dataset(&mut con), &want, 7, "rewritten AOF");
}

#[test]
fn rdb_dump_restore_copy_and_reload_keep_blocks() {
    let mut server = Server::start();
    let mut con = server.conn();
    blocked_workload(&mut con);
    let want = dataset(&mut con);
    let untils: Vec<i64> = BLOCKED_KEYS
        .iter()
        .map(|k| inspect_int(&mut con, k, "blocked_until"))
        .collect();
    for key in BLOCKED_KEYS {
        let payload: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut con).unwrap();
        let restored = format!("{key}:restored");
        let _: () = redis::cmd("RESTORE")
            .arg(&restored)
            .arg(0)
            .arg(&payload)
            .query(&mut con)
            .unwrap();
        let copied = format!("{key}:copied");
        let _: i64 = redis::cmd("COPY")
            .arg(key)
            .arg(&copied)
            .query(&mut con)
            .unwrap();
        for other in [&restored, &copied] {
            assert_eq!(
                inspect_int(&mut con, other, "blocked_until"),
                inspect_int(&mut con, key, "blocked_until"),
                "{other}"
            );
        }
        let _: i64 = redis::cmd("DEL")
            .arg(&restored)
            .arg(&copied)
            .query(&mut con)
            .unwrap();
    }
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    assert_same_dataset(&dataset(&mut con), &want, 7, "DEBUG RELOAD");
    let _: () = redis::cmd("SAVE").query(&mut con).unwrap();
    server.restart();
    let mut con = server.conn();
    assert_same_dataset(&dataset(&mut con), &want, 7, "RDB restart");
    for (key, until) in BLOCKED_KEYS.iter().zip(untils) {
        assert_eq!(inspect_int(&mut con, key, "blocked_until"), until, "{key}");
    }
}

#[test]
fn a_key_not_blocked_dumps_as_before_and_a_blocked_one_with_the_trailer() {
    let server = Server::start();
    let mut con = server.conn();
    five(
        &mut con,
        &["RL.THROTTLE", "plain", "0", "1", "60", "1", "BLOCK", "60"],
    );
    five(&mut con, &["RL.THROTTLE", "blocked", "0", "1", "60", "1"]);
    five(
        &mut con,
        &["RL.THROTTLE", "blocked", "0", "1", "60", "1", "BLOCK", "60"],
    );
    // The module value in DUMP: the type's id (today's version, 1), then
    // the value as one string (`common::dump::dump_body`).
    let encoding = |con: &mut Connection, key: &str| -> Vec<u8> {
        let payload: Vec<u8> = redis::cmd("DUMP").arg(key).query(con).unwrap();
        let body = common::dump::body_of(&payload);
        let encoding = body[12..body.len() - 1].to_vec();
        assert_eq!(
            body,
            common::dump::dump_body(common::dump::module_id("rl-gcra--", 1), &encoding),
            "{key}"
        );
        encoding
    };
    let plain = encoding(&mut con, "plain");
    let blocked = encoding(&mut con, "blocked");
    // Today's 16-byte GCRA encoding; blocked: the same, then the block's
    // end (u64 ns, little-endian) and the trailer's 0.
    assert_eq!(plain.len(), 16);
    assert_eq!(blocked.len(), 16 + 9);
    assert_eq!(blocked.last(), Some(&0));
    let until = inspect_int(&mut con, "blocked", "blocked_until");
    let end = u64::from_le_bytes(blocked[16..24].try_into().unwrap());
    assert_eq!(i64::try_from(end.div_ceil(1_000_000)).unwrap(), until);
}

fn inspect_int(con: &mut Connection, key: &str, name: &str) -> i64 {
    let fields = inspect(con, key).unwrap_or_else(|| panic!("{key} is missing"));
    match fields.iter().find(|(n, _)| n == name) {
        Some((_, Value::Int(n))) => *n,
        other => panic!("{key}: {name} is {other:?} in {fields:?}"),
    }
}

/// The blocked keys of `tests/fixtures/blocked` (made by
/// `tests/fixtures/make-blocked.sh` with Redis 7.0.15): each key's
/// `blocked_until` (Unix ms) and the module value of its DUMP (the payload
/// without the server's RDB version and CRC): today's encoding of the
/// state, then the block's end (u64 ns) and the trailer's 0.
#[rustfmt::skip]
const BLOCKED_FIXTURES: &[(&str, i64, &str, &[&str])] = &[
    ("b:t", 2_111_532_231_376, "0781ae5fa072b6bef8010519fb229ab32e49ed1800000000010000009940ed8660ab4d1d0000",
     &["RL.THROTTLE", "b:t", "0", "1", "60"]),
    ("b:l", 2_111_532_231_468, "0781ae5fac96275ef802051401d6def8fcfde6b006cb03229b638c60ab4d1d0000",
     &["RL.SLIDE", "b:l", "1", "60"]),
    ("b:s", 2_111_532_231_548, "0781ae5fac96271ef801053d005847f80d0000000600000000000000c7bdb40a000000000000000000000000000000000000000000000000000000000100000088572f9160ab4d1d0000",
     &["RL.SLICE", "b:s", "1", "60", "6"]),
    ("b:q", 2_111_532_232_190, "0781ae5faaba8b5af801052f010060a2e37543ed188080bc8ac9d2130080e889edaeb501020c4575726f70652f50617269731a0e71b760ab4d1d0000",
     &["RL.QUOTA", "b:q", "1", "DAY", "TZ", "Europe/Paris"]),
];

fn check_blocked_fixtures(con: &mut Connection, what: &str) {
    for &(key, until, body, call) in BLOCKED_FIXTURES {
        assert_eq!(
            inspect_int(con, key, "blocked_until"),
            until,
            "{what}: {key}"
        );
        assert_eq!(pexpiretime(con, key), until, "{what}: {key}");
        let payload: Vec<u8> = redis::cmd("DUMP").arg(key).query(con).unwrap();
        let got: String = common::dump::body_of(&payload)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, body, "{what}: DUMP of {key}");
        // Refused, until the block's end (rounded up to the second).
        let before = unix_ns();
        let r = five(con, call);
        let after = unix_ns();
        // `blocked_until` is the end in ms rounded up: the end itself is
        // within the millisecond before it.
        let end = i128::from(until) * NS_PER_MS;
        let earliest_end = end - NS_PER_MS + 1;
        assert_eq!((r[0], r[2]), (1, 0), "{what}: {key}: {r:?}");
        assert!(
            (ceil_to(earliest_end - after, NS_PER_S)..=ceil_to(end - before, NS_PER_S))
                .contains(&r[3]),
            "{what}: {key}: {r:?}"
        );
    }
}

#[test]
fn blocked_fixtures_load() {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/blocked");
    for (fixture, extra) in [
        (
            "rdb",
            &["--appendonly", "no", "--dbfilename", "dump.rdb"][..],
        ),
        (
            "aof-rewritten",
            &["--appendonly", "yes", "--aof-use-rdb-preamble", "no"][..],
        ),
    ] {
        let from = source.join(fixture);
        let mut args = vec!["--save", "", "--rdbcompression", "no"];
        args.extend_from_slice(extra);
        let server = Server::start_prepared(|dir| copy_dir(&from, dir), &args);
        let mut con = server.conn();
        assert_eq!(dbsize(&mut con), 4, "{fixture}");
        check_blocked_fixtures(&mut con, fixture);
        let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
        check_blocked_fixtures(&mut con, &format!("{fixture}, after DEBUG RELOAD"));
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("fixture dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy fixture");
        }
    }
}
