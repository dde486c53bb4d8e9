//! RL.CHARGE against a real server: a cost recorded unconditionally, the
//! debt that follows (per kind, exact retry_after), keys created and
//! expiring when the debt is paid, the only refusals (LEASE, a counter's
//! maximum, bad arguments: nothing recorded), INFO, key specs and COMMAND
//! DOCS, replicas and the AOF reaching the master's state, and PREFIX.

mod common;
use common::*;

#[test]
fn a_charge_records_past_the_limit_and_the_debt_is_exact() {
    let server = Server::start();
    let mut con = server.conn();
    // THROTTLE, 1 per 6 s, capacity 10 (τ = 60 s): 12 units put the TAT
    // 72 s ahead; a request then waits until TAT + 6 s - 60 s = 18 s.
    assert_eq!(
        five(
            &mut con,
            &["RL.CHARGE", "t", "THROTTLE", "9", "1", "6", "12"]
        ),
        [1, 10, 0, 12, 72]
    );
    assert_eq!(
        five(&mut con, &["RL.THROTTLE", "t", "9", "1", "6"]),
        [1, 10, 0, 18, 72]
    );
    let ttl: i64 = cmd(&["PTTL", "t"]).query(&mut con).unwrap();
    assert!(
        (71_000..=72_001).contains(&ttl),
        "expires with its TAT: {ttl}"
    );
    // Within the limit a charge is an allowed request's record.
    assert_eq!(
        five(
            &mut con,
            &["RL.CHARGE", "t2", "THROTTLE", "9", "1", "6", "3"]
        ),
        five(&mut con, &["RL.THROTTLE", "t3", "9", "1", "6", "3"])
    );

    // SLIDE: 5 per 60 s; 8 charged: limited until all 8 leave, as one entry.
    assert_eq!(
        five(&mut con, &["RL.CHARGE", "l", "SLIDE", "5", "60", "8"]),
        [1, 5, 0, 60, 60]
    );
    assert_eq!(
        five(&mut con, &["RL.SLIDE", "l", "5", "60"]),
        [1, 5, 0, 60, 60]
    );
    let fields = inspect(&mut con, "l").unwrap();
    assert!(
        fields.contains(&("units".to_string(), Value::Int(8))),
        "{fields:?}"
    );

    // SLICE in MS, and QUOTA: used past the limit until the period ends.
    let r = five(
        &mut con,
        &["RL.CHARGE", "s", "SLICE", "5", "60000", "6", "9", "MS"],
    );
    assert_eq!(r[..3], [1, 5, 0]);
    let r = five(&mut con, &["RL.CHARGE", "q", "QUOTA", "5", "DAY", "7"]);
    assert_eq!(r[..3], [1, 5, 0]);
    assert_eq!(r[3], r[4], "in debt until the day ends");
    let q = five(&mut con, &["RL.QUOTA", "q", "5", "DAY"]);
    assert_eq!(q[..3], [1, 5, 0]);
    assert_eq!(q[3], r[4], "limited until the day ends");
    // A charge publishes no rl.limited: it is never refused.
    assert_eq!(
        info_field(&mut con, "ratelimit", "ratelimit_charge_calls"),
        "5"
    );
    assert_eq!(
        info_field(&mut con, "ratelimit", "ratelimit_charge_limited"),
        "4"
    );
    assert_eq!(
        info_field(&mut con, "ratelimit", "ratelimit_charge_allowed"),
        "1"
    );
}

#[test]
fn charge_bad_input_records_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    let _: () = cmd(&["SET", "str", "1"]).query(&mut con).unwrap();
    five(&mut con, &["RL.SLICE", "s", "5", "60", "6"]);
    let before = digest(&mut con);
    #[rustfmt::skip]
    let table: &[(&[&str], &str)] = &[
        // The server checks the arity: not a call of the module's.
        (&["RL.CHARGE", "l", "SLIDE", "5", "60"], "ERR wrong number of arguments for 'RL.CHARGE' command"),
        (&["RL.CHARGE", "l", "LEASE", "5", "60", "1"], "ERR RL.CHARGE does not take a LEASE spec"),
        (&["RL.CHARGE", "l", "SLIDE", "5", "60", "0"], "ERR quantity must be an integer from 1 to 1000000000000"),
        (&["RL.CHARGE", "l", "SLIDE", "5", "60", "1", "AT", "5"], "ERR AT is accepted only from the master or the AOF: it carries the master's clock"),
        (&["RL.CHARGE", "l", "THROTTLE", "0", "1", "10", "31536001"], "ERR quantity would put the TAT more than 315360000 seconds (10 years) ahead of now"),
        (&["RL.CHARGE", "s", "SLIDE", "5", "60", "1"], "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (&["RL.CHARGE", "str", "SLIDE", "5", "60", "1"], "WRONGTYPE Operation against a key holding the wrong kind of value"),
    ];
    assert_errors(&mut con, table);
    for _ in 0..4 {
        five(
            &mut con,
            &["RL.CHARGE", "big", "SLICE", "5", "60", "6", "1000000000"],
        );
    }
    let at_max = digest(&mut con);
    assert_eq!(
        error(
            &mut con,
            &["RL.CHARGE", "big", "SLICE", "5", "60", "6", "294967296"]
        ),
        "ERR quantity would take the units a SLICE key holds past 4294967295"
    );
    assert_eq!(digest(&mut con), at_max);
    let _: i64 = cmd(&["DEL", "big"]).query(&mut con).unwrap();
    assert_eq!(digest(&mut con), before);
    assert!(!exists(&mut con, "l"));
    assert_eq!(
        info_field(&mut con, "ratelimit", "ratelimit_charge_errors"),
        "7"
    );
}

#[test]
fn charge_metadata() {
    let server = Server::start();
    let mut con = server.conn();
    assert_command_metadata(
        &mut con,
        "RL.CHARGE",
        -6,
        &["unconditionally", "debt"],
        &[
            &["RL.CHARGE", "user:7", "SLIDE", "5", "60", "3"],
            &[
                "RL.CHARGE",
                "user:7",
                "THROTTLE",
                "5",
                "10",
                "60000",
                "3",
                "MS",
            ],
        ],
        &[
            ("key", "key", false, None),
            ("spec", "oneof", false, None),
            ("quantity", "integer", false, None),
            ("ms", "pure-token", true, Some("MS")),
        ],
    );
}

#[test]
fn charges_replicate_and_persist_with_the_masters_clock() {
    let mut master = start_aof_server();
    let (_replica, mut rcon) = start_replica(&master);
    let mut con = master.conn();
    for round in 0..4u64 {
        let q = (round * 7 + 2).to_string();
        five(
            &mut con,
            &["RL.CHARGE", "t", "THROTTLE", "20", "3", "60", &q],
        );
        five(&mut con, &["RL.CHARGE", "l", "SLIDE", "3", "600", &q]);
        five(
            &mut con,
            &[
                "RL.CHARGE",
                "p",
                "SLIDE",
                "3",
                "600",
                "PRECISION",
                "100",
                &q,
            ],
        );
        five(
            &mut con,
            &["RL.CHARGE", "s", "SLICE", "30", "600", "60", &q],
        );
        five(
            &mut con,
            &[
                "RL.CHARGE",
                "q",
                "QUOTA",
                "10",
                "MONTH",
                "TZ",
                "Asia/Kolkata",
                &q,
            ],
        );
        five(&mut con, &["RL.SLIDE", "l", "3", "600"]);
    }
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    let want = dataset(&mut con);
    assert_same_dataset(&dataset(&mut rcon), &want, 5, "the replica");
    master.restart();
    let mut con = master.conn();
    assert_same_dataset(&dataset(&mut con), &want, 5, "after AOF replay");
}

#[test]
fn charged_keys_survive_dump_restore_copy_and_reload() {
    let server = Server::start();
    let mut con = server.conn();
    // Debts past what allowed requests can hold: more units than any
    // SLIDE limit, a QUOTA's used past any limit.
    five(
        &mut con,
        &["RL.CHARGE", "l", "SLIDE", "5", "600", "4000000000"],
    );
    five(
        &mut con,
        &["RL.CHARGE", "q", "QUOTA", "5", "MONTH", "999999999999"],
    );
    five(
        &mut con,
        &["RL.CHARGE", "t", "THROTTLE", "0", "1", "1", "86400"],
    );
    for key in ["l", "q", "t"] {
        let dump: Vec<u8> = cmd(&["DUMP", key]).query(&mut con).unwrap();
        // With the key's expiry, which DEBUG DIGEST-VALUE mixes in.
        let at = pexpiretime(&mut con, key).to_string();
        let mut restore = cmd(&["RESTORE", &format!("{key}-r"), &at]);
        restore.arg(dump).arg("ABSTTL");
        let _: () = restore.query(&mut con).unwrap();
        let copied: i64 = cmd(&["COPY", key, &format!("{key}-c")])
            .query(&mut con)
            .unwrap();
        assert_eq!(copied, 1);
        let value = digest_value(&mut con, key);
        assert_eq!(digest_value(&mut con, &format!("{key}-r")), value, "{key}");
        assert_eq!(digest_value(&mut con, &format!("{key}-c")), value, "{key}");
    }
    let before = digest(&mut con);
    let _: () = cmd(&["DEBUG", "RELOAD"]).query(&mut con).unwrap();
    assert_eq!(digest(&mut con), before);
    let fields = inspect(&mut con, "l").unwrap();
    assert!(
        fields.contains(&("units".to_string(), Value::Int(4_000_000_000))),
        "{fields:?}"
    );
}
