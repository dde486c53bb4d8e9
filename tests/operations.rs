//! Operating the module: INFO counters, configuration, the redis-cell alias,
//! keyspace notifications on rejections, ACL categories.

mod common;
use common::*;

fn info_u64(con: &mut Connection, field: &str) -> u64 {
    info_field(con, "ratelimit", &format!("ratelimit_{field}"))
        .parse()
        .unwrap_or_else(|_| panic!("INFO ratelimit has no {field}"))
}

#[test]
fn info_counts_calls_outcomes_and_keys_and_resetstat_clears_them() {
    let server = Server::start();
    let mut con = server.conn();
    for _ in 0..3 {
        five(&mut con, &["RL.THROTTLE", "t", "1", "1", "60"]);
    }
    five(&mut con, &["RL.SLIDE", "l1", "5", "60"]);
    five(&mut con, &["RL.SLIDE", "l2", "5", "60", "0"]);
    five(&mut con, &["RL.SLICE", "s", "1", "60", "6", "2"]);
    error(&mut con, &["RL.SLICE", "s", "x", "60", "6"]);

    assert_eq!(info_u64(&mut con, "throttle_calls"), 3);
    assert_eq!(info_u64(&mut con, "throttle_allowed"), 2);
    assert_eq!(info_u64(&mut con, "throttle_limited"), 1);
    assert_eq!(info_u64(&mut con, "throttle_errors"), 0);
    assert_eq!(info_u64(&mut con, "slide_calls"), 2);
    assert_eq!(info_u64(&mut con, "slide_allowed"), 2);
    assert_eq!(info_u64(&mut con, "slice_calls"), 2);
    assert_eq!(info_u64(&mut con, "slice_limited"), 1);
    assert_eq!(info_u64(&mut con, "slice_errors"), 1);
    // Keys per type: the peek and the refused SLICE created nothing.
    assert_eq!(info_u64(&mut con, "throttle_keys"), 1);
    assert_eq!(info_u64(&mut con, "slide_keys"), 1);
    assert_eq!(info_u64(&mut con, "slice_keys"), 0);

    // Keys are counted through copies, reloads, deletions and flushes.
    five(&mut con, &["RL.SLICE", "s", "5", "60", "6"]);
    let _: i64 = redis::cmd("COPY")
        .arg("t")
        .arg("t2")
        .query(&mut con)
        .unwrap();
    assert_eq!(info_u64(&mut con, "throttle_keys"), 2);
    // DEBUG RELOAD may free the values it replaces on a background
    // thread, as FLUSHALL below: the counts settle when it is done.
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    wait_until(10, "the replaced keys uncounted after DEBUG RELOAD", || {
        info_u64(&mut con, "throttle_keys") == 2
    });
    assert_eq!(info_u64(&mut con, "throttle_keys"), 2);
    assert_eq!(info_u64(&mut con, "slice_keys"), 1);
    let _: i64 = redis::cmd("DEL").arg("t").query(&mut con).unwrap();
    assert_eq!(info_u64(&mut con, "throttle_keys"), 1);
    // FLUSHALL may free the values on a background thread (Valkey 8+
    // flushes lazily by default): the counts reach zero when it is done.
    let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    wait_until(10, "every key uncounted after FLUSHALL", || {
        ["throttle", "slide", "slice"]
            .iter()
            .all(|kind| info_u64(&mut con, &format!("{kind}_keys")) == 0)
    });
    for kind in ["throttle", "slide", "slice"] {
        assert_eq!(info_u64(&mut con, &format!("{kind}_keys")), 0, "{kind}");
    }

    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .unwrap();
    for field in [
        "throttle_calls",
        "throttle_limited",
        "slide_calls",
        "slice_errors",
    ] {
        assert_eq!(info_u64(&mut con, field), 0, "{field}");
    }
    five(&mut con, &["RL.THROTTLE", "t", "1", "1", "60"]);
    assert_eq!(info_u64(&mut con, "throttle_calls"), 1);
}

#[test]
fn configuration_bounds_client_arguments() {
    let server = Server::start_with(&["--save", "", "--appendonly", "no"]);
    let mut con = server.conn();
    let get = |con: &mut Connection, name: &str| -> String {
        let v: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query(con)
            .unwrap();
        v[1].clone()
    };
    assert_eq!(get(&mut con, "ratelimit.max-slide-limit"), "1000000");
    assert_eq!(get(&mut con, "ratelimit.max-slices"), "86400");
    assert_eq!(get(&mut con, "ratelimit.cell-alias"), "no");

    let set = |con: &mut Connection, name: &str, value: &str| -> redis::RedisResult<()> {
        redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query(con)
    };
    set(&mut con, "ratelimit.max-slide-limit", "10").unwrap();
    assert_eq!(
        error(&mut con, &["RL.SLIDE", "k", "11", "60"]),
        "ERR limit must be an integer from 1 to 10"
    );
    five(&mut con, &["RL.SLIDE", "k", "10", "60"]);
    set(&mut con, "ratelimit.max-slices", "4").unwrap();
    assert_eq!(
        error(&mut con, &["RL.SLICE", "k2", "1", "60", "5"]),
        "ERR slices must be an integer from 1 to 4"
    );
    // Out of range, and immutable at run time.
    assert!(set(&mut con, "ratelimit.max-slide-limit", "0").is_err());
    assert!(set(&mut con, "ratelimit.max-slide-limit", "100000001").is_err());
    assert!(set(&mut con, "ratelimit.max-slices", "1000001").is_err());
    assert!(set(&mut con, "ratelimit.cell-alias", "yes").is_err());
    assert_eq!(get(&mut con, "ratelimit.max-slide-limit"), "10");
}

#[test]
fn load_arguments_set_the_configuration() {
    let server = Server::start_with(&["--save", "", "--ratelimit.max-slices", "7"]);
    let mut con = server.conn();
    assert_eq!(
        error(&mut con, &["RL.SLICE", "k", "1", "60", "8"]),
        "ERR slices must be an integer from 1 to 7"
    );
}

#[test]
fn cell_alias_answers_cl_throttle_and_adopts_redis_cell_keys() {
    let server = Server::start_with_module_args(&["cell-alias", "yes"], &["--save", ""]);
    let mut con = server.conn();
    // Same reply as RL.THROTTLE for the same calls.
    for _ in 0..3 {
        let cl = five(&mut con, &["CL.THROTTLE", "cl", "1", "1", "60"]);
        let rl = five(&mut con, &["RL.THROTTLE", "rl", "1", "1", "60"]);
        assert_eq!(cl, rl);
    }
    let kind: String = redis::cmd("TYPE").arg("cl").query(&mut con).unwrap();
    assert_eq!(kind, "rl-gcra--");

    // A key redis-cell left behind: the TAT in ns since the epoch, as a
    // string. 100 s ahead, with T = 10 s and capacity 10: exactly full.
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let tat = now_ns + 100_000_000_000;
    let _: () = redis::cmd("SET")
        .arg("cell")
        .arg(tat.to_string())
        .arg("EX")
        .arg(200)
        .query(&mut con)
        .unwrap();
    let r = five(&mut con, &["CL.THROTTLE", "cell", "9", "1", "10"]);
    assert_eq!(
        &r[..3],
        &[1, 10, 0],
        "the limit redis-cell recorded still holds"
    );
    let kind: String = redis::cmd("TYPE").arg("cell").query(&mut con).unwrap();
    assert_eq!(kind, "string", "a limited request changes nothing");
    // With more room, the first allowed call takes the key over.
    let r = five(&mut con, &["CL.THROTTLE", "cell", "19", "1", "10"]);
    assert_eq!(&r[..3], &[0, 20, 9]);
    let kind: String = redis::cmd("TYPE").arg("cell").query(&mut con).unwrap();
    assert_eq!(kind, "rl-gcra--");
    // Other strings are still the wrong type.
    let _: () = redis::cmd("SET")
        .arg("text")
        .arg("hello")
        .query(&mut con)
        .unwrap();
    assert!(error(&mut con, &["CL.THROTTLE", "text", "1", "1", "1"]).starts_with("WRONGTYPE"));
}

#[test]
fn without_the_alias_cl_throttle_is_unknown() {
    let server = Server::start();
    let mut con = server.conn();
    let e = error(&mut con, &["CL.THROTTLE", "k", "1", "1", "1"]);
    assert!(e.contains("unknown command"), "{e}");
}

/// Reads what `pubsub` receives up to the next message on the channel
/// `marker`, which `con` publishes now: every notification published
/// before it arrives before it, so this sees all of them without waiting
/// on a clock. Returns (channel, payload) pairs.
fn messages_until_marker(
    pubsub: &mut redis::PubSub,
    con: &mut Connection,
) -> Vec<(String, String)> {
    let n: i64 = redis::cmd("PUBLISH")
        .arg("marker")
        .arg("m")
        .query(con)
        .unwrap();
    assert_eq!(n, 1, "the subscriber listens to the marker");
    let mut out = Vec::new();
    loop {
        let msg = pubsub.get_message().expect("a message within 5 s");
        let channel = msg.get_channel_name().to_string();
        if channel == "marker" {
            return out;
        }
        out.push((channel, msg.get_payload::<String>().unwrap()));
    }
}

#[test]
fn rejections_publish_a_keyspace_event_when_configured() {
    let server = Server::start();
    let mut con = server.conn();
    let mut sub = server.conn();
    let mut pubsub = sub.as_pubsub();
    pubsub.psubscribe("__key*@*__:*").unwrap();
    pubsub.subscribe("marker").unwrap();
    pubsub
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    // Calls that each command limits: the second unit over a limit of 1,
    // and a quantity that can never fit.
    let limited: [&[&str]; 4] = [
        &["RL.THROTTLE", "t", "0", "1", "60"],
        &["RL.SLIDE", "l", "1", "60"],
        &["RL.SLICE", "s", "1", "60", "6"],
        &["RL.SLIDE", "l", "1", "60", "5"],
    ];
    let fill = |con: &mut Connection, key: &str| -> [i64; 5] {
        match key {
            "t" => five(con, &["RL.THROTTLE", "t", "0", "1", "60"]),
            "l" => five(con, &["RL.SLIDE", "l", "1", "60"]),
            _ => five(con, &["RL.SLICE", "s", "1", "60", "6"]),
        }
    };

    // Off by default: nothing configured, nothing published.
    let v: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("notify-keyspace-events")
        .query(&mut con)
        .unwrap();
    assert_eq!(v, vec!["notify-keyspace-events", ""], "the default");
    for key in ["t", "l", "s"] {
        assert_eq!(fill(&mut con, key)[0], 0, "{key}");
    }
    for args in limited {
        assert_eq!(five(&mut con, args)[0], 1, "{args:?}");
    }
    assert_eq!(messages_until_marker(&mut pubsub, &mut con), vec![]);

    // Every class but module events: still nothing (rl.limited is a module
    // event, class d).
    let set = |con: &mut Connection, flags: &str| {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("notify-keyspace-events")
            .arg(flags)
            .query(con)
            .unwrap();
    };
    set(&mut con, "KEg$lshzxet");
    for args in limited {
        assert_eq!(five(&mut con, args)[0], 1, "{args:?}");
    }
    assert_eq!(messages_until_marker(&mut pubsub, &mut con), vec![]);

    // All classes: an allowed call publishes nothing of its own; each
    // limited call publishes rl.limited, once on the key's channel and
    // once on the event's, naming the key.
    set(&mut con, "KEA");
    let _: i64 = redis::cmd("DEL")
        .arg("t")
        .arg("l")
        .arg("s")
        .query(&mut con)
        .unwrap();
    let deleted = messages_until_marker(&mut pubsub, &mut con);
    assert_eq!(deleted.len(), 6, "DEL's own notifications: {deleted:?}");
    for key in ["t", "l", "s"] {
        assert_eq!(fill(&mut con, key)[0], 0, "{key}");
        assert_eq!(
            messages_until_marker(&mut pubsub, &mut con),
            vec![],
            "an allowed call on {key}"
        );
    }
    for args in limited {
        assert_eq!(five(&mut con, args)[0], 1, "{args:?}");
        let key = args[1].to_string();
        assert_eq!(
            messages_until_marker(&mut pubsub, &mut con),
            vec![
                (format!("__keyspace@0__:{key}"), "rl.limited".to_string()),
                ("__keyevent@0__:rl.limited".to_string(), key),
            ],
            "{args:?}"
        );
    }
}

#[test]
fn acl_categories_where_the_server_supports_them() {
    let server = Server::start();
    let mut con = server.conn();
    let info: String = redis::cmd("INFO").arg("server").query(&mut con).unwrap();
    let redis_7_0 = info.contains("redis_version:7.0.") && !info.contains("valkey");
    for category in ["write", "fast"] {
        let commands: Vec<String> = redis::cmd("ACL")
            .arg("CAT")
            .arg(category)
            .query(&mut con)
            .unwrap();
        let has = commands
            .iter()
            .any(|c| c.eq_ignore_ascii_case("rl.throttle"));
        // Redis 7.0 has no API for module command categories.
        assert_eq!(has, !redis_7_0, "@{category} on this server");
    }
    // On every server, a user can be allowed exactly the module's commands.
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("app")
        .arg("on")
        .arg("nopass")
        .arg("~*")
        .arg("-@all")
        .arg("+rl.throttle")
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("AUTH")
        .arg("app")
        .arg("x")
        .query(&mut con)
        .unwrap();
    five(&mut con, &["RL.THROTTLE", "k", "1", "1", "60"]);
    assert!(error(&mut con, &["RL.SLIDE", "k2", "1", "60"]).starts_with("NOPERM"));
}
