//! The load-time `PREFIX` (docs/DESIGN.md#loading): a prefixed module
//! answers under its prefix only, replicas and the AOF replay what a
//! prefixed master wrote, and a name the server has already, or a bad
//! word, stops the load with one log line.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// One call of every command, under `p`'s names: changes on every kind
/// (RL.QUOTA's reaches replicas and the AOF as `<p>.STATE`), a lease
/// released, a refund, a charge, a several-limit call.
fn workload(con: &mut Connection, p: &str) {
    let c = |name: &str| format!("{p}.{name}");
    let calls: &[Vec<String>] = &[
        vec![
            c("THROTTLE"),
            "t".into(),
            "5".into(),
            "10".into(),
            "60".into(),
        ],
        vec![c("SLIDE"), "w".into(), "10".into(), "60".into(), "2".into()],
        vec![c("SLICE"), "s".into(), "10".into(), "60".into(), "6".into()],
        vec![
            c("QUOTA"),
            "q".into(),
            "100".into(),
            "DAY".into(),
            "3".into(),
            "TZ".into(),
            "Europe/Berlin".into(),
        ],
        vec![
            c("LEASE"),
            "l".into(),
            "3".into(),
            "60".into(),
            "job-1".into(),
            "2".into(),
        ],
        vec![
            c("LEASE"),
            "l".into(),
            "3".into(),
            "60".into(),
            "job-2".into(),
        ],
        vec![
            c("REFUND"),
            "w".into(),
            "SLIDE".into(),
            "10".into(),
            "60".into(),
            "1".into(),
        ],
        vec![
            c("CHARGE"),
            "w".into(),
            "SLIDE".into(),
            "10".into(),
            "60".into(),
            "3".into(),
        ],
    ];
    for args in calls {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply: Vec<i64> = cmd(&args)
            .query(con)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(reply.len(), 5, "{args:?}");
    }
    let released: i64 = cmd(&[&c("RELEASE"), "l", "job-1"]).query(con).unwrap();
    assert_eq!(released, 1);
    let allow = seven(
        con,
        &[
            &c("ALLOW"),
            "2",
            "a1",
            "a2",
            "THROTTLE",
            "5",
            "10",
            "60",
            "QUOTA",
            "7",
            "HOUR",
        ],
    );
    assert_eq!(allow.binding[0], 0, "allowed");
}

/// Every command the module registers, without its prefix.
const NAMES: [&str; 13] = [
    "THROTTLE", "SLIDE", "SLICE", "LEASE", "QUOTA", "ALLOW", "PEEK", "INSPECT", "REFUND", "CHARGE",
    "RELEASE", "STATE", "TOP",
];

/// Whether the server has a command of this name.
fn has_command(con: &mut Connection, name: &str) -> bool {
    let info: Value = cmd(&["COMMAND", "INFO", name]).query(con).unwrap();
    match info {
        Value::Array(items) => items.first().is_some_and(|v| !matches!(v, Value::Nil)),
        _ => false,
    }
}

#[test]
fn a_prefixed_module_answers_under_its_prefix_only() {
    let server = Server::start_with_module_args(&["PREFIX", "my_rl"], &["--save", ""]);
    let mut con = server.conn();
    for name in NAMES {
        assert!(
            has_command(&mut con, &format!("my_rl.{name}")),
            "my_rl.{name}"
        );
        assert!(!has_command(&mut con, &format!("RL.{name}")), "RL.{name}");
    }
    let reply = five(&mut con, &["my_rl.THROTTLE", "k", "5", "10", "60"]);
    assert_eq!(reply[..3], [0, 6, 5], "allowed, limit 6, remaining 5");
    let e = error(&mut con, &["RL.THROTTLE", "k", "5", "10", "60"]);
    assert!(e.contains("unknown command"), "{e}");
    // The commands are found in any case, as every command is; the data
    // type names do not change.
    assert_eq!(
        five(&mut con, &["MY_RL.throttle", "k", "5", "10", "60"])[0],
        0
    );
    let kind: String = cmd(&["TYPE", "k"]).query(&mut con).unwrap();
    assert_eq!(kind, "rl-gcra--");
    workload(&mut con, "my_rl");
    // The keyword in any case.
    let server = Server::start_with_module_args(&["prefix", "X1"], &["--save", ""]);
    let mut con = server.conn();
    assert!(has_command(&mut con, "X1.ALLOW"));
    assert!(!has_command(&mut con, "RL.ALLOW"));
}

#[test]
fn a_replica_loaded_with_the_same_prefix_reaches_the_masters_state() {
    let master = Server::start_with_module_args(&["PREFIX", "xy"], &["--save", ""]);
    let port = master.port.to_string();
    let replica = Server::start_with_module_args(
        &["PREFIX", "xy"],
        &["--save", "", "--replicaof", "127.0.0.1", &port],
    );
    let mut rcon = replica.conn();
    wait_until(20, "the replica to sync", || {
        info_field(&mut rcon, "replication", "master_link_status") == "up"
    });
    let mut con = master.conn();
    workload(&mut con, "xy");
    assert_eq!(wait_replicas(&mut con, 1, 5_000), 1);
    assert_eq!(dbsize(&mut rcon), dbsize(&mut con));
    assert!(dbsize(&mut con) >= 6);
    assert_eq!(digest(&mut rcon), digest(&mut con));
}

/// Every file of the server's AOF, as text.
fn aof_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir.join("appendonlydir"))
        .expect("appendonlydir")
        .flatten()
    {
        text.push_str(&String::from_utf8_lossy(
            &std::fs::read(entry.path()).unwrap(),
        ));
    }
    text
}

#[test]
fn an_aof_written_with_a_prefix_replays() {
    let mut server = Server::start_with_module_args(
        &["PREFIX", "xy", "cell-alias", "yes"],
        &[
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--aof-use-rdb-preamble",
            "no",
        ],
    );
    let mut con = server.conn();
    workload(&mut con, "xy");
    // The alias keeps its name; what it writes carries the prefix.
    assert_eq!(
        five(&mut con, &["CL.THROTTLE", "cl", "5", "10", "60"])[0],
        0
    );
    let text = aof_text(server.dir());
    for name in [
        "xy.THROTTLE",
        "xy.SLIDE",
        "xy.STATE",
        "xy.ALLOW",
        "xy.RELEASE",
        "xy.REFUND",
        "xy.CHARGE",
    ] {
        assert!(text.contains(name), "the AOF names {name}");
    }
    assert!(!text.contains("RL."), "no RL. name in the AOF");
    assert!(
        !text.contains("CL.THROTTLE"),
        "the alias's calls are written as xy.THROTTLE"
    );
    let before = dataset(&mut con);
    server.restart();
    let mut con = server.conn();
    assert_same_dataset(
        &dataset(&mut con),
        &before,
        8,
        "replaying the prefixed commands",
    );

    let _: String = cmd(&["BGREWRITEAOF"]).query(&mut con).unwrap();
    wait_until(30, "the AOF rewrite", || {
        info_field(&mut con, "persistence", "aof_rewrite_in_progress") == "0"
            && info_field(&mut con, "persistence", "aof_rewrite_scheduled") == "0"
    });
    let text = aof_text(server.dir());
    assert!(
        text.contains("xy.STATE"),
        "the rewritten AOF holds xy.STATE"
    );
    assert!(!text.contains("RL.STATE"));
    let rewritten = dataset(&mut con);
    server.restart();
    let mut con = server.conn();
    assert_same_dataset(
        &dataset(&mut con),
        &rewritten,
        8,
        "loading the rewritten AOF",
    );
}

/// Starts a server that is expected to stop while loading the module with
/// `module_args`; its log once it has stopped.
fn failed_load(module_args: &[&str], extra: &[&str]) -> String {
    let dir = tempfile::Builder::new()
        .prefix("rl-test-")
        .tempdir()
        .expect("temp dir");
    let log = dir.path().join("server.log");
    let binary = server_binary();
    let mut child = Command::new(&binary)
        .arg("--port")
        .arg(free_port().to_string())
        .args(["--bind", "127.0.0.1", "--daemonize", "no", "--save", ""])
        .arg("--dir")
        .arg(dir.path())
        .arg("--logfile")
        .arg(&log)
        .args(extra)
        .arg("--loadmodule")
        .arg(module_path())
        .args(module_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {binary}: {e}. Run `scripts/deps.sh --test` (or `make test`), or set REDIS_SERVER"));
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the server kept running with {module_args:?}; its log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success(), "the server stops: {status}");
    std::fs::read_to_string(&log).unwrap_or_default()
}

/// A port free on loopback now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// The log's lines from the module.
fn module_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains("ratelimit: ")).collect()
}

#[test]
fn bad_prefix_words_stop_the_load_with_one_line() {
    let table: &[(&[&str], &str)] = &[
        (
            &["PREFIX"],
            "ratelimit: PREFIX needs a word: loadmodule <path> PREFIX <word>",
        ),
        (
            &["max-slices", "10", "PREFIX"],
            "ratelimit: PREFIX needs a word",
        ),
        (
            &["PREFIX", "a.b"],
            "ratelimit: PREFIX must be 1 to 32 ASCII letters, digits or underscores (got 'a.b')",
        ),
        (&["PREFIX", "a-b"], "(got 'a-b')"),
        (
            &["PREFIX", &"x".repeat(33)],
            "ratelimit: PREFIX must be 1 to 32",
        ),
        (
            &["PREFIX", "a", "prefix", "b"],
            "ratelimit: PREFIX is given more than once",
        ),
    ];
    for (args, expected) in table {
        let log = failed_load(args, &[]);
        let lines = module_lines(&log);
        assert_eq!(lines.len(), 1, "{args:?}: one line from the module:\n{log}");
        assert!(
            lines[0].contains(expected),
            "{args:?}: {expected:?} in:\n{log}"
        );
    }
    // The longest word loads.
    let word = "A".repeat(32);
    let server = Server::start_with_module_args(&["PREFIX", &word], &["--save", ""]);
    let mut con = server.conn();
    assert_eq!(
        five(&mut con, &[&format!("{word}.THROTTLE"), "k", "1", "1", "1"])[0],
        0
    );
}

#[test]
fn a_name_the_server_has_already_stops_the_load_with_one_line() {
    // A core command under one of the module's names, as a server with a
    // rate limiter of its own would have it.
    let log = failed_load(&[], &["--rename-command", "SET", "RL.THROTTLE"]);
    let lines = module_lines(&log);
    assert_eq!(lines.len(), 1, "one line from the module:\n{log}");
    assert!(
        lines[0].contains(
            "ratelimit: the command RL.THROTTLE already exists on this server (a core command or another module's): load ratelimit with PREFIX <word> to name its commands <word>.THROTTLE, <word>.ALLOW and so on"
        ),
        "{log}"
    );
    let log = failed_load(&["PREFIX", "xy"], &["--rename-command", "GET", "xy.ALLOW"]);
    let lines = module_lines(&log);
    assert_eq!(lines.len(), 1, "one line from the module:\n{log}");
    assert!(
        lines[0].contains("ratelimit: the command xy.ALLOW already exists on this server (a core command or another module's): load ratelimit with another PREFIX word"),
        "{log}"
    );
    // With a prefix the module loads beside that command.
    let server = Server::start_with_module_args(
        &["PREFIX", "mine"],
        &["--save", "", "--rename-command", "SET", "RL.THROTTLE"],
    );
    let mut con = server.conn();
    let ok: String = cmd(&["RL.THROTTLE", "k", "v"]).query(&mut con).unwrap();
    assert_eq!(ok, "OK", "RL.THROTTLE is the server's own command");
    assert_eq!(
        five(&mut con, &["mine.THROTTLE", "t", "5", "10", "60"])[0],
        0
    );
}
