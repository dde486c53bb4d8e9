//! A real redis-server with the freshly built module, on a free loopback
//! port, stopped when dropped.
//!
//! The server binary is `$REDIS_SERVER` (default `redis-server` on PATH),
//! or one that a test names with extra environment (`Server::start_env`:
//! a server under libfaketime).
//! The module is the `.so` that this very `cargo test` built, next to the
//! test binary; a missing server or module, or a module older than the
//! sources, fails the test loudly rather than skipping it.
//!
//! `cluster` forms a Redis Cluster of three masters and their replicas out
//! of such servers; `dump` builds DUMP payloads by hand.

#![allow(dead_code)]

pub mod cluster;
pub mod dump;

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use redis::{Connection, Value};

/// The module built by this `cargo test` invocation, or the one that
/// `RATELIMIT_MODULE` names (make test's smoke run of the module that
/// make dist built: an absolute path, which must exist).
pub fn module_path() -> PathBuf {
    if let Some(given) = std::env::var_os("RATELIMIT_MODULE") {
        let so = PathBuf::from(given);
        assert!(
            so.is_absolute() && so.is_file(),
            "RATELIMIT_MODULE={} is not an absolute path to a file: run make dist, or unset it to test cargo's build",
            so.display()
        );
        return so;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let so = exe
        .parent()
        .expect("deps dir")
        .join("libredis_ratelimit.so");
    assert!(
        so.exists(),
        "module not found at {}: run the tests through cargo test, which builds it",
        so.display()
    );
    let built = modified(&so);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let newest = newest_source(&src);
    assert!(
        built >= newest,
        "{} is older than the sources: rebuild before testing",
        so.display()
    );
    so
}

fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime")
}

fn newest_source(dir: &Path) -> SystemTime {
    let mut newest = SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir).expect("src dir").flatten() {
        let path = entry.path();
        let t = if path.is_dir() {
            newest_source(&path)
        } else {
            modified(&path)
        };
        newest = newest.max(t);
    }
    newest
}

pub fn server_binary() -> String {
    std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A running server. Its data directory lives as long as it does, and is
/// kept across `restart`.
pub struct Server {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    extra: Vec<String>,
    module_args: Vec<String>,
    binary: String,
    env: Vec<(String, String)>,
}

impl Server {
    /// A server without persistence.
    pub fn start() -> Server {
        Server::start_with(&["--save", "", "--appendonly", "no"])
    }

    /// A server with extra configuration arguments.
    pub fn start_with(extra: &[&str]) -> Server {
        Server::start_with_module_args(&[], extra)
    }

    /// A server whose `loadmodule` line passes `module_args`.
    pub fn start_with_module_args(module_args: &[&str], extra: &[&str]) -> Server {
        Server::start_full(module_args, extra, |_| {}, server_binary(), &[])
    }

    /// A server started on data that `prepare` puts into its (empty) data
    /// directory first: an RDB file, an AOF directory.
    pub fn start_prepared(prepare: impl FnOnce(&Path), extra: &[&str]) -> Server {
        Server::start_full(&[], extra, prepare, server_binary(), &[])
    }

    /// The server `binary` (whatever `$REDIS_SERVER` says) with `env` added
    /// to its environment, and extra configuration arguments; kept across
    /// `restart`.
    pub fn start_env(binary: &Path, env: &[(&str, &str)], extra: &[&str]) -> Server {
        let binary = binary.to_string_lossy().into_owned();
        Server::start_full(&[], extra, |_| {}, binary, env)
    }

    fn start_full(
        module_args: &[&str],
        extra: &[&str],
        prepare: impl FnOnce(&Path),
        binary: String,
        env: &[(&str, &str)],
    ) -> Server {
        let tmp = tempfile::Builder::new()
            .prefix("rl-test-")
            .tempdir()
            .expect("temp dir");
        let dir = tmp.path().to_path_buf();
        prepare(&dir);
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let mut server = Server {
            child: None,
            port: 0,
            dir,
            _tmp: Some(tmp),
            extra,
            module_args: module_args.iter().map(|s| s.to_string()).collect(),
            binary,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        server.launch();
        server
    }

    fn launch(&mut self) {
        let so = module_path();
        let mut last_log = String::new();
        for _attempt in 0..5 {
            let port = free_port();
            let mut cmd = Command::new(&self.binary);
            cmd.arg("--port")
                .arg(port.to_string())
                .args(["--bind", "127.0.0.1", "--daemonize", "no"])
                .arg("--dir")
                .arg(&self.dir)
                .arg("--logfile")
                .arg(self.dir.join("server.log"))
                .arg("--loadmodule")
                .arg(&so)
                .args(&self.module_args)
                .args(["--enable-debug-command", "yes"])
                .args(&self.extra)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = cmd.spawn().unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}. Run `scripts/deps.sh --test` (or `make test`, which runs it), which installs redis-server and the other servers into tmp/, or set REDIS_SERVER",
                    self.binary
                )
            });
            self.child = Some(child);
            self.port = port;
            if self.wait_ready() {
                return;
            }
            last_log = self.log();
            self.kill();
        }
        panic!("the server did not start; its log:\n{last_log}");
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(_)) = child.try_wait() {
                    return false;
                }
            }
            if let Ok(mut con) = self.try_connect() {
                // Ready once the dataset is loaded.
                match redis::cmd("PING").query::<String>(&mut con) {
                    Ok(_) => return true,
                    Err(e) if e.to_string().contains("LOADING") => {}
                    Err(_) => {}
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn try_connect(&self) -> redis::RedisResult<Connection> {
        connect(self.port, Duration::from_secs(30))
    }

    pub fn conn(&self) -> Connection {
        self.try_connect().expect("connect")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// Stops the server the way an operator does (SHUTDOWN, which saves
    /// what the configuration says) and starts it again on the same data.
    pub fn restart(&mut self) {
        self.shutdown();
        self.launch();
    }

    /// Restarts with other configuration arguments, on the same data.
    pub fn restart_with(&mut self, extra: &[&str]) {
        self.shutdown();
        self.extra = extra.iter().map(|s| s.to_string()).collect();
        self.launch();
    }

    pub fn shutdown(&mut self) {
        if let Ok(mut con) = self.try_connect() {
            let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").query(&mut con);
        }
        if let Some(mut child) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The server process's id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// True while the server process runs.
    pub fn alive(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A replica of `master` (no RDB saves), once its link is up, and a
/// connection to it.
pub fn start_replica(master: &Server) -> (Server, Connection) {
    let replica = Server::start_with(&[
        "--save",
        "",
        "--replicaof",
        "127.0.0.1",
        &master.port.to_string(),
    ]);
    let mut rcon = replica.conn();
    wait_until(20, "the replica to sync", || {
        info_field(&mut rcon, "replication", "master_link_status") == "up"
    });
    (replica, rcon)
}

/// A server that writes every change to the AOF, without the RDB preamble
/// (so a restart replays the commands as replicated).
pub fn start_aof_server() -> Server {
    Server::start_with(&[
        "--save",
        "",
        "--appendonly",
        "yes",
        "--aof-use-rdb-preamble",
        "no",
    ])
}

/// A server that writes every change to the AOF and syncs it at once,
/// with the RDB preamble or without (`preamble` "yes" or "no").
pub fn start_synced_aof_server(preamble: &str) -> Server {
    Server::start_with(&[
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--aof-use-rdb-preamble",
        preamble,
    ])
}

/// A connection to the server on loopback `port`: 2 s to connect, then
/// `read_timeout` for each reply.
pub fn connect(port: u16, read_timeout: Duration) -> redis::RedisResult<Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?;
    let con = client.get_connection_with_timeout(Duration::from_secs(2))?;
    con.set_read_timeout(Some(read_timeout))?;
    Ok(con)
}

/// Runs a command and returns the five-integer reply.
pub fn five(con: &mut Connection, args: &[&str]) -> [i64; 5] {
    let v: Vec<i64> = cmd(args)
        .query(con)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    v.try_into()
        .unwrap_or_else(|v| panic!("{args:?}: not five integers: {v:?}"))
}

/// Runs a command that must fail and returns the error text.
pub fn error(con: &mut Connection, args: &[&str]) -> String {
    match cmd(args).query::<Value>(con) {
        Ok(v) => panic!("{args:?}: expected an error, got {v:?}"),
        Err(e) => error_text(&e),
    }
}

/// Runs each call of `table`, which must fail with the error given next to
/// it (compared case-insensitively).
pub fn assert_errors(con: &mut Connection, table: &[(&[&str], &str)]) {
    for (args, expected) in table {
        assert_eq!(
            error(con, args).to_lowercase(),
            expected.to_lowercase(),
            "{args:?}"
        );
    }
}

/// An error as the server sent it: code and message.
pub fn error_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

pub fn cmd(args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

pub fn digest(con: &mut Connection) -> String {
    redis::cmd("DEBUG")
        .arg("DIGEST")
        .query(con)
        .expect("DEBUG DIGEST")
}

pub fn info_field(con: &mut Connection, section: &str, field: &str) -> String {
    let info: String = redis::cmd("INFO").arg(section).query(con).expect("INFO");
    info_value(&info, field)
}

/// The value of `field` in an INFO-style text of `field:value` lines
/// (INFO, CLUSTER INFO); empty when absent.
pub fn info_value(info: &str, field: &str) -> String {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Waits until `f` holds, up to `secs` seconds.
pub fn wait_until(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for {what}");
}

pub const NS_PER_MS: i128 = 1_000_000;
pub const NS_PER_S: i128 = 1_000_000_000;

/// The wall clock in ns since the epoch: the server reads the same clock.
pub fn unix_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as i128
}

/// Runs `f` until every call it makes falls within one wall-clock second,
/// so that replies in seconds, rounded up, are exact. `f` gets a fresh key
/// suffix per attempt; returns that second (since the epoch) and `f`'s
/// result.
pub fn in_one_second<T>(mut f: impl FnMut(&str) -> T) -> (i64, T) {
    for attempt in 0..10 {
        // Start early in a second: the calls take a few milliseconds.
        while unix_ns() % NS_PER_S > 500 * NS_PER_MS {
            std::thread::sleep(Duration::from_millis(5));
        }
        let before = unix_ns();
        let out = f(&format!(":{attempt}"));
        if unix_ns() / NS_PER_S == before / NS_PER_S {
            return ((before / NS_PER_S) as i64, out);
        }
    }
    panic!("ten attempts each crossed a second boundary: is the machine overloaded?");
}

/// Runs `table` with its keys (the second word) suffixed, all calls within
/// one second; returns that second and the replies.
pub fn run_in_one_second(con: &mut Connection, table: &[&[&str]]) -> (i64, Vec<[i64; 5]>) {
    let (second, replies, _) = run_in_one_second_suffixed(con, table);
    (second, replies)
}

/// `run_in_one_second`, also returning the suffix the keys got.
pub fn run_in_one_second_suffixed(
    con: &mut Connection,
    table: &[&[&str]],
) -> (i64, Vec<[i64; 5]>, String) {
    let (second, (replies, suffix)) = in_one_second(|suffix| {
        let replies = table
            .iter()
            .map(|args| {
                let key = format!("{}{suffix}", args[1]);
                let mut args = args.to_vec();
                args[1] = &key;
                five(con, &args)
            })
            .collect();
        (replies, suffix.to_string())
    });
    (second, replies, suffix)
}

/// `ns` rounded up to whole `unit_ns` (a time as replies and expiries
/// round it).
pub fn ceil_to(ns: i128, unit_ns: i128) -> i64 {
    ns.div_euclid(unit_ns) as i64 + i64::from(ns.rem_euclid(unit_ns) != 0)
}

/// A five-integer reply and the client's wall clock (ns since the epoch)
/// just before the request and just after the reply: the server, which
/// reads the same clock, decided in between.
pub fn timed_five(con: &mut Connection, args: &[&str]) -> ([i64; 5], i128, i128) {
    let sent = unix_ns();
    let reply = five(con, args);
    (reply, sent, unix_ns())
}

/// Milliseconds elapsed since `t`, rounded up.
pub fn ms_since(t: Instant) -> i64 {
    let ns = t.elapsed().as_nanos() as i64;
    (ns + 999_999) / 1_000_000
}

/// EXISTS for one key.
pub fn exists(con: &mut Connection, key: &str) -> bool {
    let n: i64 = redis::cmd("EXISTS").arg(key).query(con).expect("EXISTS");
    n == 1
}

/// DBSIZE: the number of keys in the selected database.
pub fn dbsize(con: &mut Connection) -> i64 {
    redis::cmd("DBSIZE").query(con).expect("DBSIZE")
}

/// PEXPIRETIME: the key's expiry in ms since the epoch (-1 none, -2 no key).
pub fn pexpiretime(con: &mut Connection, key: &str) -> i64 {
    redis::cmd("PEXPIRETIME")
        .arg(key)
        .query(con)
        .expect("PEXPIRETIME")
}

/// The dirty counter: changes since the last save, as INFO reports it.
pub fn dirty(con: &mut Connection) -> String {
    info_field(con, "persistence", "rdb_changes_since_last_save")
}

/// MEMORY USAGE of a key, in bytes.
pub fn memory_usage(con: &mut Connection, key: &str) -> i64 {
    redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .query(con)
        .expect("MEMORY USAGE")
}

/// DEBUG DIGEST-VALUE of one key: its value and TTL as a digest.
pub fn digest_value(con: &mut Connection, key: &str) -> String {
    let v: Vec<String> = redis::cmd("DEBUG")
        .arg("DIGEST-VALUE")
        .arg(key)
        .query(con)
        .expect("DEBUG DIGEST-VALUE");
    v[0].clone()
}

/// WAIT: blocks until `replicas` replicas acknowledged every write made so
/// far on `con`, or `timeout_ms` passed; returns how many did.
pub fn wait_replicas(con: &mut Connection, replicas: i64, timeout_ms: i64) -> i64 {
    redis::cmd("WAIT")
        .arg(replicas)
        .arg(timeout_ms)
        .query(con)
        .expect("WAIT")
}

/// The value after `name` in a reply of name/value pairs (RESP2 array or
/// RESP3 map), the name compared case-insensitively.
pub fn field<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    match v {
        Value::Array(items) => items
            .chunks(2)
            .find(|pair| text(&pair[0]).eq_ignore_ascii_case(name))
            .and_then(|pair| pair.get(1)),
        Value::Map(pairs) => pairs
            .iter()
            .find(|(k, _)| text(k).eq_ignore_ascii_case(name))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// A seven-element reply of RL.ALLOW or RL.PEEK: the binding limit's five
/// fields, its 1-based index, and every limit's own five.
#[derive(Debug, Clone, PartialEq)]
pub struct Seven {
    pub binding: [i64; 5],
    pub index: i64,
    pub limits: Vec<[i64; 5]>,
}

/// Runs `args` (RL.ALLOW or RL.PEEK) and reads its seven-element reply.
pub fn seven(con: &mut impl redis::ConnectionLike, args: &[&str]) -> Seven {
    let v: Value = cmd(args)
        .query(con)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    parse_seven(&v).unwrap_or_else(|| panic!("{args:?}: not a seven-element reply: {v:?}"))
}

/// A seven-element reply, or `None` for any other shape.
pub fn parse_seven(v: &Value) -> Option<Seven> {
    let int = |v: &Value| match v {
        Value::Int(n) => Some(*n),
        _ => None,
    };
    let five = |f: &[Value]| -> Option<[i64; 5]> {
        f.iter()
            .map(int)
            .collect::<Option<Vec<_>>>()?
            .try_into()
            .ok()
    };
    let Value::Array(items) = v else { return None };
    let [head @ .., index, Value::Array(limits)] = items.as_slice() else {
        return None;
    };
    Some(Seven {
        binding: five(head)?,
        index: int(index)?,
        limits: limits
            .iter()
            .map(|l| match l {
                Value::Array(f) => five(f),
                _ => None,
            })
            .collect::<Option<_>>()?,
    })
}

/// RL.INSPECT's field-value pairs (RESP2: a flat array); `None` for a
/// missing key.
pub fn inspect(con: &mut Connection, key: &str) -> Option<Vec<(String, Value)>> {
    let v: Value = redis::cmd("RL.INSPECT")
        .arg(key)
        .query(con)
        .unwrap_or_else(|e| panic!("RL.INSPECT {key}: {e}"));
    match v {
        Value::Nil => None,
        Value::Array(items) => Some(
            items
                .chunks(2)
                .map(|pair| (text(&pair[0]), pair[1].clone()))
                .collect(),
        ),
        other => panic!("RL.INSPECT {key}: {other:?}"),
    }
}

/// A scalar reply as text (other replies in their debug form).
pub fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        Value::Okay => "OK".to_string(),
        other => format!("{other:?}"),
    }
}

/// An array or set reply as texts (a scalar as a list of one).
pub fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) | Value::Set(items) => items.iter().map(text).collect(),
        other => vec![text(other)],
    }
}

/// Checks a module command's metadata as the server reports it:
/// - COMMAND GETKEYS finds the key (the second word) of each of
///   `getkeys_calls`;
/// - COMMAND INFO: the name, `arity`, the flags write, denyoom and fast,
///   and first key, last key and step 1, 1, 1;
/// - COMMAND DOCS: a summary containing each of `summary_words` (as
///   written), module "ratelimit", and exactly `expected_args`, each as
///   (name, type, optional, token).
pub fn assert_command_metadata(
    con: &mut Connection,
    name: &str,
    arity: i64,
    summary_words: &[&str],
    getkeys_calls: &[&[&str]],
    expected_args: &[(&str, &str, bool, Option<&str>)],
) {
    for args in getkeys_calls {
        let mut c = redis::cmd("COMMAND");
        c.arg("GETKEYS").arg(*args);
        let keys: Vec<String> = c.query(con).unwrap();
        assert_eq!(keys, vec![args[1]], "{args:?}");
    }

    let info: Value = redis::cmd("COMMAND")
        .arg("INFO")
        .arg(name)
        .query(con)
        .unwrap();
    let Value::Array(entries) = &info else {
        panic!("COMMAND INFO: {info:?}")
    };
    let Some(Value::Array(entry)) = entries.first() else {
        panic!("COMMAND INFO: {info:?}")
    };
    assert!(text(&entry[0]).eq_ignore_ascii_case(name), "{entry:?}");
    assert_eq!(entry[1], Value::Int(arity), "arity");
    let flags = strings(&entry[2]);
    for flag in ["write", "denyoom", "fast"] {
        assert!(flags.iter().any(|f| f == flag), "{flag} missing: {flags:?}");
    }
    assert_eq!(&entry[3..6], &[Value::Int(1), Value::Int(1), Value::Int(1)]);

    let docs: Value = redis::cmd("COMMAND")
        .arg("DOCS")
        .arg(name)
        .query(con)
        .unwrap();
    let doc = field(&docs, name).unwrap_or_else(|| panic!("COMMAND DOCS: {docs:?}"));
    let summary = text(field(doc, "summary").expect("summary"));
    for word in summary_words {
        assert!(
            summary.contains(word),
            "{word:?} missing from the summary: {summary}"
        );
    }
    assert_eq!(text(field(doc, "module").expect("module")), "ratelimit");
    let Some(Value::Array(arguments)) = field(doc, "arguments") else {
        panic!("arguments: {doc:?}")
    };
    // name, type, optional, token
    let got: Vec<(String, String, bool, Option<String>)> = arguments
        .iter()
        .map(|a| {
            (
                text(field(a, "name").expect("name")),
                text(field(a, "type").expect("type")),
                field(a, "flags").is_some_and(|f| strings(f).iter().any(|s| s == "optional")),
                field(a, "token").map(text),
            )
        })
        .collect();
    let expected: Vec<(String, String, bool, Option<String>)> = expected_args
        .iter()
        .map(|(n, t, o, k)| (n.to_string(), t.to_string(), *o, k.map(str::to_string)))
        .collect();
    assert_eq!(got, expected);
}

/// What two servers holding the same data must agree on. `DEBUG DIGEST`
/// covers every value but mixes in only *whether* a key has an expiry
/// (Redis's `xorObjectDigest`), so every key's `PEXPIRETIME` is compared
/// as well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    pub digest: String,
    /// `db:key` -> PEXPIRETIME (ms since the epoch; -1 for no expiry).
    pub expiries: BTreeMap<String, i64>,
}

/// The dataset of the server behind `con`: its digest and the expiry of
/// every key of every database. Leaves database 0 selected.
pub fn dataset(con: &mut Connection) -> Dataset {
    Dataset {
        digest: digest(con),
        expiries: expiries(con),
    }
}

/// PEXPIRETIME of every key of every database, as `db:key -> ms`, found
/// with SCAN in each database that INFO keyspace lists. Leaves database 0
/// selected.
pub fn expiries(con: &mut Connection) -> BTreeMap<String, i64> {
    let keyspace: String = redis::cmd("INFO")
        .arg("keyspace")
        .query(con)
        .expect("INFO keyspace");
    let dbs: Vec<i64> = keyspace
        .lines()
        .filter_map(|l| l.strip_prefix("db")?.split_once(':')?.0.parse().ok())
        .collect();
    let mut out = BTreeMap::new();
    for db in dbs {
        let _: () = redis::cmd("SELECT").arg(db).query(con).expect("SELECT");
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("COUNT")
                .arg(1000)
                .query(con)
                .expect("SCAN");
            for key in keys {
                let at = pexpiretime(con, &key);
                out.insert(format!("{db}:{key}"), at);
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    let _: () = redis::cmd("SELECT").arg(0).query(con).expect("SELECT 0");
    out
}

/// Asserts that the two datasets are equal, and that they are worth
/// comparing: `min_keys` keys or more, every one of them with an expiry.
pub fn assert_same_dataset(got: &Dataset, want: &Dataset, min_keys: usize, what: &str) {
    assert!(
        want.expiries.len() >= min_keys,
        "{what}: only {} keys: {want:?}",
        want.expiries.len()
    );
    assert!(
        want.expiries.values().all(|&at| at > 0),
        "{what}: a key without an expiry: {want:?}"
    );
    assert_eq!(got.digest, want.digest, "{what}: DEBUG DIGEST");
    assert_eq!(
        got.expiries, want.expiries,
        "{what}: PEXPIRETIME of the keys"
    );
}

/// What MEMORY USAGE may add to a module value's own figure (`mem_usage`)
/// for a key whose name has at most five bytes: the key's name, its entry
/// in the keyspace, its expiry. Measured on the servers of the test matrix;
/// `None` on others, where only the relation below is checked.
///
/// - Redis 7.0 (jemalloc): 32 bytes, always.
/// - Redis 8.2 (jemalloc) embeds the key and its expiry in the value's
///   object: 32 bytes too, for names of at most five bytes (a six-byte
///   name costs 8 bytes more).
/// - Valkey 8.1 and 9.1 embed the key and its expiry in the value's
///   object, and the builds used here allocate with libc malloc (INFO:
///   `malloc=libc`), whose usable size for that object is 40 bytes or,
///   depending on the heap (a realloc when the expiry is set), 16 bytes
///   more.
pub fn known_key_overheads(con: &mut Connection) -> Option<Vec<i64>> {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(con)
        .expect("INFO server");
    if info.contains("valkey_version:9.1.") || info.contains("valkey_version:8.1.") {
        Some(vec![40, 56])
    } else if !info.contains("valkey")
        && (info.contains("redis_version:7.0.") || info.contains("redis_version:8.2."))
    {
        Some(vec![32])
    } else {
        None
    }
}

/// Asserts MEMORY USAGE of each key against the bytes its state computes
/// (`computed`). On a known server, MEMORY USAGE minus `computed` must be
/// one of the server's known overheads, so with Redis 7.0 and 8.2 every
/// key's figure is exact; on another server it must at least be the same for
/// every key (names of at most five bytes cost a server the same), so every
/// difference between two keys equals the difference of their computed
/// figures.
pub fn assert_memory_usage(con: &mut Connection, keys: &[(&str, i64)]) {
    assert!(keys.len() >= 2, "compare at least two keys");
    let known = known_key_overheads(con);
    let mut overheads = Vec::new();
    for &(key, computed) in keys {
        assert!(key.len() <= 5, "{key}: use names of at most five bytes");
        let usage = memory_usage(con, key);
        println!("MEMORY USAGE {key}: {usage} bytes, computed {computed}");
        overheads.push((key, usage - computed));
    }
    match known {
        Some(known) => assert!(
            overheads.iter().all(|(_, o)| known.contains(o)),
            "MEMORY USAGE minus the computed figure is not the server's overhead {known:?}: {overheads:?}"
        ),
        None => assert!(
            overheads.iter().all(|&(_, o)| o == overheads[0].1),
            "MEMORY USAGE minus the computed figure differs between keys: {overheads:?}"
        ),
    }
}
