//! RL.TOP against a real server (docs/operations.md#who-is-being-limited):
//! refusals counted per refusing key, most first; COUNT; the summary
//! turned off and resized through CONFIG SET; the error texts; INFO's
//! fields; a replica and an AOF replay count nothing (the master decided);
//! a prefixed module answers `<word>.TOP`.

mod common;

use common::*;

/// RL.TOP's reply: (key, refusals, last refusal in Unix ms).
type Rows = Vec<(String, i64, i64)>;

fn top(con: &mut Connection, args: &[&str]) -> Rows {
    let mut line = vec!["RL.TOP"];
    line.extend_from_slice(args);
    cmd(&line)
        .query(con)
        .unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

/// The rows are `expected`'s keys in order, each with its count of
/// refusals or one less: RL.TOP rounds the decayed count down, and
/// refusals a few milliseconds old have decayed by a hair.
fn assert_counts(rows: &Rows, expected: &[(&str, i64)]) {
    let keys: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let want: Vec<&str> = expected.iter().map(|e| e.0).collect();
    assert_eq!(keys, want, "{rows:?}");
    for ((key, got, _), (_, n)) in rows.iter().zip(expected) {
        assert!(
            (n - 1..=*n).contains(got),
            "{key}: {got} refusals, expected {n}"
        );
    }
}

/// The slowest decay there is (a day), so that a test's seconds cost
/// less than one refusal of any count it makes.
fn slow_decay(con: &mut Connection) {
    cmd(&["CONFIG", "SET", "ratelimit.top-half-life", "86400"])
        .query::<()>(con)
        .unwrap();
}

fn now_ms(con: &mut Connection) -> i64 {
    let (secs, micros): (i64, i64) = cmd(&["TIME"]).query(con).unwrap();
    secs * 1000 + micros / 1000
}

/// `n` refused calls of RL.THROTTLE on `key` (a burst of 1 per day, taken
/// first), each answered limited.
fn refuse(con: &mut Connection, key: &str, n: usize) {
    five(con, &["RL.THROTTLE", key, "0", "1", "86400"]);
    for _ in 0..n {
        let reply = five(con, &["RL.THROTTLE", key, "0", "1", "86400"]);
        assert_eq!(reply[0], 1, "{key} limited");
    }
}

#[test]
fn refusals_are_counted_per_key_most_first() {
    let server = Server::start();
    let mut con = server.conn();
    assert_eq!(top(&mut con, &[]), Rows::new(), "nothing refused yet");
    slow_decay(&mut con);
    let before = now_ms(&mut con);
    refuse(&mut con, "rl:a", 4);
    refuse(&mut con, "rl:b", 7);
    refuse(&mut con, "rl:c", 1);
    // A peek (quantity 0) on a limited key, and RL.PEEK, count nothing.
    five(&mut con, &["RL.THROTTLE", "rl:c", "0", "1", "86400", "0"]);
    let peek: Value = cmd(&["RL.PEEK", "1", "rl:c", "THROTTLE", "0", "1", "86400"])
        .query(&mut con)
        .unwrap();
    assert!(matches!(peek, Value::Array(_)));
    // Other kinds count too, and RL.ALLOW once per refusing key.
    five(&mut con, &["RL.SLIDE", "rl:s", "1", "3600"]);
    assert_eq!(five(&mut con, &["RL.SLIDE", "rl:s", "1", "3600"])[0], 1);
    let allow = &[
        "RL.ALLOW", "2", "rl:c", "rl:free", "THROTTLE", "0", "1", "86400", "SLIDE", "5", "60",
    ];
    let reply: Value = cmd(allow).query(&mut con).unwrap();
    assert!(matches!(reply, Value::Array(_)));
    let after = now_ms(&mut con);

    let rows = top(&mut con, &[]);
    assert_counts(&rows, &[("rl:b", 7), ("rl:a", 4), ("rl:c", 2), ("rl:s", 1)]);
    for (key, _, last) in &rows {
        assert!((before..=after).contains(last), "{key}: {last}");
    }
    // rl:c's last refusal is RL.ALLOW's, after rl:b's.
    assert!(rows[2].2 >= rows[0].2);
    assert_eq!(top(&mut con, &["COUNT", "2"]), rows[..2].to_vec());
    assert_eq!(top(&mut con, &["count", "128"]), rows);
}

#[test]
fn count_and_errors() {
    let server = Server::start();
    let mut con = server.conn();
    for i in 0..12 {
        refuse(&mut con, &format!("rl:{i:02}"), 1);
    }
    assert_eq!(top(&mut con, &[]).len(), 10, "COUNT defaults to 10");
    assert_eq!(top(&mut con, &["COUNT", "11"]).len(), 11);
    assert_eq!(top(&mut con, &["COUNT", "128"]).len(), 12);
    for bad in ["0", "129", "x", "-1"] {
        assert_eq!(
            error(&mut con, &["RL.TOP", "COUNT", bad]),
            "ERR COUNT must be an integer from 1 to 128"
        );
    }
    assert_eq!(
        error(&mut con, &["RL.TOP", "COUNT", "1", "COUNT", "2"]),
        "ERR COUNT is given more than once"
    );
    assert_eq!(
        error(&mut con, &["RL.TOP", "LIMIT", "2"]),
        "ERR unknown argument 'LIMIT'"
    );
    let docs: Value = cmd(&["COMMAND", "INFO", "RL.TOP"]).query(&mut con).unwrap();
    let text = format!("{docs:?}");
    assert!(text.contains("readonly") && text.contains("fast"), "{text}");
    let keys: redis::RedisResult<Vec<String>> =
        cmd(&["COMMAND", "GETKEYS", "RL.TOP", "COUNT", "1"]).query(&mut con);
    assert!(keys.is_err(), "RL.TOP has no keys: {keys:?}");
}

#[test]
fn config_set_resizes_and_turns_it_off() {
    let server = Server::start();
    let mut con = server.conn();
    let info = |con: &mut Connection, f: &str| info_field(con, "ratelimit", f);
    assert_eq!(info(&mut con, "ratelimit_top_size"), "128");
    assert_eq!(info(&mut con, "ratelimit_top_half_life_seconds"), "60");
    assert_eq!(info(&mut con, "ratelimit_top_keys"), "0");
    refuse(&mut con, "rl:x", 1);
    refuse(&mut con, "rl:y", 6);
    refuse(&mut con, "rl:z", 3);
    assert_eq!(info(&mut con, "ratelimit_top_keys"), "3");
    slow_decay(&mut con);

    // Shrinking keeps the heaviest.
    cmd(&["CONFIG", "SET", "ratelimit.top-size", "2"])
        .query::<()>(&mut con)
        .unwrap();
    let rows = top(&mut con, &[]);
    let keys: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(keys, ["rl:y", "rl:z"], "{rows:?}");
    assert_eq!(info(&mut con, "ratelimit_top_keys"), "2");
    assert_eq!(
        error(&mut con, &["RL.TOP", "COUNT", "3"]),
        "ERR COUNT must be an integer from 1 to 2"
    );

    // Off: an error, and nothing kept.
    cmd(&["CONFIG", "SET", "ratelimit.top-size", "0"])
        .query::<()>(&mut con)
        .unwrap();
    assert_eq!(
        error(&mut con, &["RL.TOP"]),
        "ERR RL.TOP is off: ratelimit.top-size is 0"
    );
    assert_eq!(
        error(&mut con, &["RL.TOP", "COUNT", "1"]),
        "ERR RL.TOP is off: ratelimit.top-size is 0"
    );
    refuse(&mut con, "rl:w", 2);
    assert_eq!(info(&mut con, "ratelimit_top_keys"), "0");
    assert_eq!(info(&mut con, "ratelimit_top_size"), "0");

    // Back on: empty, then counting again.
    cmd(&["CONFIG", "SET", "ratelimit.top-size", "16384"])
        .query::<()>(&mut con)
        .unwrap();
    assert_eq!(top(&mut con, &[]), Rows::new());
    refuse(&mut con, "rl:w", 2);
    assert_counts(&top(&mut con, &[]), &[("rl:w", 2)]);

    for (value, message) in [("16385", "top-size"), ("-1", "top-size")] {
        let e = error(&mut con, &["CONFIG", "SET", "ratelimit.top-size", value]);
        assert!(e.contains(message), "{e}");
    }
    for value in ["0", "86401"] {
        let e = error(
            &mut con,
            &["CONFIG", "SET", "ratelimit.top-half-life", value],
        );
        assert!(e.contains("top-half-life"), "{e}");
    }
    cmd(&["CONFIG", "SET", "ratelimit.top-half-life", "3600"])
        .query::<()>(&mut con)
        .unwrap();
    assert_eq!(info(&mut con, "ratelimit_top_half_life_seconds"), "3600");
    assert_counts(&top(&mut con, &[]), &[("rl:w", 2)]);
}

#[test]
fn load_arguments_set_the_summary() {
    let server =
        Server::start_with_module_args(&["top-size", "0", "top-half-life", "5"], &["--save", ""]);
    let mut con = server.conn();
    assert_eq!(
        error(&mut con, &["RL.TOP"]),
        "ERR RL.TOP is off: ratelimit.top-size is 0"
    );
    assert_eq!(
        info_field(&mut con, "ratelimit", "ratelimit_top_half_life_seconds"),
        "5"
    );
}

/// A refusal that moves the key's expiry out (a longer window) is
/// propagated; the replica and the AOF replay it without counting it.
fn replicated_refusal(con: &mut Connection) {
    five(con, &["RL.SLIDE", "rl:r", "1", "60"]);
    let reply = five(con, &["RL.SLIDE", "rl:r", "1", "3600"]);
    assert_eq!(reply[0], 1, "refused");
}

#[test]
fn a_replica_answers_its_own_empty_summary() {
    let master = Server::start();
    let mut con = master.conn();
    let (replica, mut rcon) = start_replica(&master);
    replicated_refusal(&mut con);
    refuse(&mut con, "rl:m", 2);
    cluster::wait_caught_up(master.port, replica.port);
    let ttl: i64 = cmd(&["TTL", "rl:r"]).query(&mut rcon).unwrap();
    assert!(ttl > 60, "the refusal reached the replica: ttl {ttl}");
    assert_counts(&top(&mut con, &[]), &[("rl:m", 2), ("rl:r", 1)]);
    assert_eq!(top(&mut rcon, &[]), Rows::new(), "read-only, its own");
    assert_eq!(
        info_field(&mut rcon, "ratelimit", "ratelimit_top_keys"),
        "0"
    );
}

#[test]
fn an_aof_replay_counts_nothing_and_nothing_persists() {
    let mut server = start_aof_server();
    let mut con = server.conn();
    replicated_refusal(&mut con);
    assert_counts(&top(&mut con, &[]), &[("rl:r", 1)]);
    drop(con);
    server.restart();
    let mut con = server.conn();
    let ttl: i64 = cmd(&["TTL", "rl:r"]).query(&mut con).unwrap();
    assert!(ttl > 60, "the refusal was replayed: ttl {ttl}");
    assert_eq!(top(&mut con, &[]), Rows::new());
}

#[test]
fn a_prefixed_module_answers_word_top() {
    let server = Server::start_with_module_args(&["PREFIX", "my_rl"], &["--save", ""]);
    let mut con = server.conn();
    five(&mut con, &["my_rl.THROTTLE", "k", "0", "1", "86400"]);
    five(&mut con, &["my_rl.THROTTLE", "k", "0", "1", "86400"]);
    let rows: Rows = cmd(&["my_rl.TOP", "COUNT", "1"]).query(&mut con).unwrap();
    assert_counts(&rows, &[("k", 1)]);
    let e = error(&mut con, &["RL.TOP"]);
    assert!(e.contains("unknown command"), "{e}");
}
