//! The client examples under `examples/`, run for real: the Python (redis-py)
//! and Node.js (ioredis) scripts against a test server, and their HTTP
//! middlewares with real HTTP requests.
//!
//! The set-up (`scripts/deps.sh --test`, which `make test` runs) installs the
//! client libraries into `tmp/examples/` (gitignored); this file installs
//! nothing. A missing python3 or node, or libraries missing or older than
//! the requirement files, fail the test with the command to run: it never
//! skips.

mod common;
use common::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------
// Tools and libraries, installed by the set-up

/// What to run when something the set-up provides is missing.
const SETUP: &str = "run `scripts/deps.sh --test` (or `make test`, which runs it) \
                     from the repository root";

/// Runs `program --version` to see that it is there, or panics saying what to run.
fn require(program: &str) {
    let out = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("`{program}` is needed by tests/examples.rs and cannot run ({e}): {SETUP}")
        });
    assert!(
        out.status.success(),
        "`{program} --version` failed, needed by tests/examples.rs: {SETUP}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The set-up's install `tmp/examples/<name>`, checked to be complete
/// (`proof` exists) and made from the current `requirements` file (the
/// set-up leaves a copy of it as `.installed-from`).
fn installed(name: &str, requirements: &str, proof: &str) -> PathBuf {
    let dir = root().join("tmp/examples").join(name);
    let wanted = std::fs::read(root().join(requirements))
        .unwrap_or_else(|e| panic!("cannot read {requirements}: {e}"));
    let from = std::fs::read(dir.join(".installed-from")).ok();
    assert!(
        dir.join(proof).exists() && from.is_some(),
        "the {name} client library of examples/ is not installed in {}: {SETUP}",
        dir.display()
    );
    assert!(
        from.as_deref() == Some(wanted.as_slice()),
        "{} was installed from another {requirements} than the current one: {SETUP}",
        dir.display()
    );
    dir
}

/// redis-py, from examples/python/requirements.txt; the PYTHONPATH to use.
fn python_libs() -> PathBuf {
    require("python3");
    installed(
        "python",
        "examples/python/requirements.txt",
        "redis/__init__.py",
    )
}

/// ioredis, from examples/node/package.json; the NODE_PATH to use.
fn node_libs() -> PathBuf {
    require("node");
    installed(
        "node",
        "examples/node/package.json",
        "node_modules/ioredis/package.json",
    )
    .join("node_modules")
}

/// Runs a command to completion within `secs`, or panics with its output.
fn run(cmd: &mut Command, what: &str, secs: u64) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {secs} s, killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = Output {
        status,
        stdout: out_reader.join().expect("stdout reader"),
        stderr: err_reader.join().expect("stderr reader"),
    };
    assert!(
        output.status.success(),
        "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

// ---------------------------------------------------------------------------
// The command examples

/// Runs commands.py or commands.js and returns its output, checking that
/// it printed each command followed by its five named fields.
fn run_commands(cmd: &mut Command, what: &str) -> Vec<String> {
    let out = run(cmd, what, 30);
    let text = String::from_utf8(out.stdout).expect("utf-8 output");
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(
        lines.len(),
        6,
        "{what}: expected 3 commands and 3 replies:\n{text}"
    );
    lines
}

/// The reply line's `name=value` fields.
fn fields(line: &str) -> Vec<(String, i64)> {
    line.split_whitespace()
        .map(|f| {
            let (name, value) = f.split_once('=').unwrap_or_else(|| panic!("field {f:?}"));
            (name.to_string(), value.parse().expect("integer field"))
        })
        .collect()
}

fn check_commands(lines: &[String], prefix: &str, run: usize, what: &str) {
    let names = [
        "limited",
        "limit",
        "remaining",
        "retry_after",
        "reset_after",
    ];
    let expect = |line: &String, values: [i64; 4]| -> i64 {
        let f = fields(line);
        let got: Vec<&str> = f.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(got, names, "{what}: field names in {line:?}");
        let got: Vec<i64> = f.iter().map(|(_, v)| *v).collect();
        assert_eq!(got[..4], values, "{what}: {line:?}");
        got[4]
    };
    let n = run as i64;
    // 30 per 60 s, burst 15: T = 2 s, capacity 16; each run costs 1.
    assert_eq!(
        lines[0],
        format!("RL.THROTTLE {prefix}throttle 15 30 60"),
        "{what}"
    );
    let reset = expect(&lines[1], [0, 16, 16 - n, -1]);
    assert!((2 * n - 1..=2 * n).contains(&reset), "{what}: {}", lines[1]);
    // 10 per 60 s, exact log: the newest unit leaves after 60 s.
    assert_eq!(lines[2], format!("RL.SLIDE {prefix}slide 10 60"), "{what}");
    let reset = expect(&lines[3], [0, 10, 10 - n, -1]);
    assert!((59..=60).contains(&reset), "{what}: {}", lines[3]);
    // 10 per 60 s in 6 slices: counted until 7 slices after the unit's slice began.
    assert_eq!(
        lines[4],
        format!("RL.SLICE {prefix}slice 10 60 6"),
        "{what}"
    );
    let reset = expect(&lines[5], [0, 10, 10 - n, -1]);
    assert!((59..=70).contains(&reset), "{what}: {}", lines[5]);
}

fn check_key_types(server: &Server, prefix: &str) {
    let mut con = server.conn();
    for (key, ty) in [
        ("throttle", "rl-gcra--"),
        ("slide", "rl-slide-"),
        ("slice", "rl-slice-"),
    ] {
        let got: String = cmd(&["TYPE", &format!("{prefix}{key}")])
            .query(&mut con)
            .expect("TYPE");
        assert_eq!(got, ty, "TYPE {prefix}{key}");
    }
}

#[test]
fn python_commands() {
    let libs = python_libs();
    let server = Server::start();
    let prefix = "py:";
    for run in 1..=2 {
        let lines = run_commands(
            Command::new("python3")
                .arg(root().join("examples/python/commands.py"))
                .env("PYTHONPATH", &libs)
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .env("REDIS_URL", format!("redis://127.0.0.1:{}", server.port))
                .env("KEY_PREFIX", prefix),
            "examples/python/commands.py",
        );
        check_commands(&lines, prefix, run, "commands.py");
    }
    check_key_types(&server, prefix);
}

#[test]
fn node_commands() {
    let libs = node_libs();
    let server = Server::start();
    let prefix = "js:";
    for run in 1..=2 {
        let lines = run_commands(
            Command::new("node")
                .arg(root().join("examples/node/commands.js"))
                .env("NODE_PATH", &libs)
                .env("REDIS_URL", format!("redis://127.0.0.1:{}", server.port))
                .env("KEY_PREFIX", prefix),
            "examples/node/commands.js",
        );
        check_commands(&lines, prefix, run, "commands.js");
    }
    check_key_types(&server, prefix);
}

// ---------------------------------------------------------------------------
// The HTTP middlewares

/// A running middleware, killed when dropped (also when a test panics).
struct Middleware {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Middleware {
    /// Starts `cmd` with PORT=0 and waits for its "listening on
    /// http://127.0.0.1:<port>" line, which names the port the system chose.
    fn start(mut cmd: Command, what: &str) -> Middleware {
        let dir = tempfile::Builder::new()
            .prefix("rl-example-")
            .tempdir()
            .expect("temp dir");
        let log = dir.path().join("stderr.log");
        let mut child = cmd
            .env("HOST", "127.0.0.1")
            .env("PORT", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Reads every line, so the child never blocks on a full pipe.
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut middleware = Middleware {
            child,
            port: 0,
            log,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("listening on http://127.0.0.1:") {
                        let port = rest.split(|c: char| !c.is_ascii_digit()).next();
                        middleware.port = port
                            .and_then(|p| p.parse().ok())
                            .unwrap_or_else(|| panic!("{what}: no port in {line:?}"));
                        return middleware;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if let Ok(Some(status)) = middleware.child.try_wait() {
                panic!("{what}: exited with {status}:\n{}", middleware.log());
            }
        }
        panic!(
            "{what}: did not say it was listening:\n{}",
            middleware.log()
        );
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Middleware {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on its own connection.
fn request(port: u16, method: &str, client_id: Option<&str>, body: &str) -> Response {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the middleware");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut req =
        format!("{method} /hello HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    if let Some(id) = client_id {
        req.push_str(&format!("X-Client-Id: {id}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    stream.write_all(req.as_bytes()).expect("send request");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read response");
    let text = String::from_utf8(raw).expect("utf-8 response");
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of headers in {text:?}"));
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers = lines
        .map(|l| {
            let (n, v) = l
                .split_once(':')
                .unwrap_or_else(|| panic!("bad header {l:?}"));
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    Response {
        status,
        headers,
        body: body.to_string(),
    }
}

/// `"default";r=<remaining>;t=<reset>` → (remaining, reset).
fn ratelimit_field(value: &str) -> (i64, i64) {
    let params = value
        .strip_prefix("\"default\";")
        .unwrap_or_else(|| panic!("RateLimit {value:?} does not start with \"default\";"));
    let mut r = None;
    let mut t = None;
    for p in params.split(';') {
        match p.split_once('=') {
            Some(("r", v)) => r = v.parse().ok(),
            Some(("t", v)) => t = v.parse().ok(),
            _ => panic!("unexpected parameter {p:?} in RateLimit {value:?}"),
        }
    }
    (
        r.unwrap_or_else(|| panic!("no r in {value:?}")),
        t.unwrap_or_else(|| panic!("no t in {value:?}")),
    )
}

/// The middleware contract, with 1 request per 60 s and a burst of 2
/// (capacity 3, one unit every 60 s): per client, three requests pass, then
/// 429 with Retry-After; every response carries both RateLimit fields.
fn check_middleware(mw: &Middleware, server: &Server, prefix: &str, what: &str) {
    let port = mw.port;
    let ctx = |r: &Response| {
        format!(
            "{what}: {} {:?} {:?}\n{}",
            r.status,
            r.headers,
            r.body,
            mw.log()
        )
    };
    let policy = "\"default\";q=3;w=60";

    // A burst of three: remaining 2, 1, 0; the limiter is full again after
    // 60, 120, 180 s (rounded up; the requests are well within a second).
    for (i, remaining) in [2, 1, 0].into_iter().enumerate() {
        let r = request(port, "GET", Some("alice"), "");
        assert_eq!(r.status, 200, "{}", ctx(&r));
        assert_eq!(r.header("RateLimit-Policy"), Some(policy), "{}", ctx(&r));
        let (got_remaining, reset) = ratelimit_field(r.header("RateLimit").expect("RateLimit"));
        assert_eq!(got_remaining, remaining, "{}", ctx(&r));
        let full = 60 * (i as i64 + 1);
        assert!((full - 1..=full).contains(&reset), "{}", ctx(&r));
        assert_eq!(r.header("Retry-After"), None, "{}", ctx(&r));
        assert_eq!(r.body, "ok\n", "{}", ctx(&r));
    }
    // Used up: 429, the next unit in (at most) 60 s.
    for _ in 0..2 {
        let r = request(port, "GET", Some("alice"), "");
        assert_eq!(r.status, 429, "{}", ctx(&r));
        assert_eq!(r.header("RateLimit-Policy"), Some(policy), "{}", ctx(&r));
        let (remaining, reset) = ratelimit_field(r.header("RateLimit").expect("RateLimit"));
        assert_eq!(remaining, 0, "{}", ctx(&r));
        assert!((179..=180).contains(&reset), "{}", ctx(&r));
        let retry: i64 = r
            .header("Retry-After")
            .unwrap_or_else(|| panic!("no Retry-After: {}", ctx(&r)))
            .parse()
            .expect("Retry-After seconds");
        assert!((59..=60).contains(&retry), "{}", ctx(&r));
    }
    // Another client has its own limiter; a request body is read and ignored.
    let r = request(port, "POST", Some("bob"), "{\"some\":\"body\"}");
    assert_eq!(r.status, 200, "{}", ctx(&r));
    assert_eq!(r.header("RateLimit-Policy"), Some(policy), "{}", ctx(&r));
    assert_eq!(
        ratelimit_field(r.header("RateLimit").unwrap()).0,
        2,
        "{}",
        ctx(&r)
    );
    // Every method costs a unit, OPTIONS and PURGE as well as GET.
    for (method, remaining) in [("OPTIONS", 2), ("PURGE", 1)] {
        let r = request(port, method, Some("carol"), "");
        assert_eq!(r.status, 200, "{method}: {}", ctx(&r));
        assert_eq!(r.header("RateLimit-Policy"), Some(policy), "{}", ctx(&r));
        assert_eq!(
            ratelimit_field(r.header("RateLimit").unwrap()).0,
            remaining,
            "{method}: {}",
            ctx(&r)
        );
    }
    // Without X-Client-Id, the peer address is the client.
    let r = request(port, "GET", None, "");
    assert_eq!(r.status, 200, "{}", ctx(&r));
    assert_eq!(
        ratelimit_field(r.header("RateLimit").unwrap()).0,
        2,
        "{}",
        ctx(&r)
    );

    // The limiters are RL.THROTTLE keys on the server.
    let mut con = server.conn();
    for client in ["alice", "bob", "carol", "127.0.0.1"] {
        let key = format!("{prefix}{client}");
        let ty: String = cmd(&["TYPE", &key]).query(&mut con).expect("TYPE");
        assert_eq!(ty, "rl-gcra--", "{what}: TYPE {key}");
    }
    // A peek (quantity 0) at alice's limiter: nothing left, full in 3 min.
    let alice = format!("{prefix}alice");
    let r = five(&mut con, &["RL.THROTTLE", &alice, "2", "1", "60", "0"]);
    assert_eq!(r[..4], [0, 3, 0, -1], "{what}: peek {alice}");
    assert!((178..=180).contains(&r[4]), "{what}: peek {alice}: {r:?}");
}

fn limits(cmd: &mut Command, server: &Server, prefix: &str) {
    cmd.env("REDIS_URL", format!("redis://127.0.0.1:{}", server.port))
        .env("RL_MAX_BURST", "2")
        .env("RL_COUNT", "1")
        .env("RL_PERIOD", "60")
        .env("RL_KEY_PREFIX", prefix);
}

#[test]
fn python_middleware() {
    let libs = python_libs();
    let server = Server::start();
    let prefix = "http-py:";
    let mut cmd = Command::new("python3");
    cmd.arg(root().join("examples/python/middleware.py"))
        .env("PYTHONPATH", &libs)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    limits(&mut cmd, &server, prefix);
    let mw = Middleware::start(cmd, "examples/python/middleware.py");
    check_middleware(&mw, &server, prefix, "middleware.py");
}

#[test]
fn node_middleware() {
    let libs = node_libs();
    let server = Server::start();
    let prefix = "http-js:";
    let mut cmd = Command::new("node");
    cmd.arg(root().join("examples/node/middleware.js"))
        .env("NODE_PATH", &libs);
    limits(&mut cmd, &server, prefix);
    let mw = Middleware::start(cmd, "examples/node/middleware.js");
    check_middleware(&mw, &server, prefix, "middleware.js");
}
