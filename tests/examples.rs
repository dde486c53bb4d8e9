//! The Python client examples under `examples/python`, run for real: the
//! redis-py scripts against a test server, and their HTTP
//! middlewares with real HTTP requests, against one server and, with a list
//! of limits, against a cluster of three masters (tests/common/cluster.rs).
//!
//! The set-up (`scripts/deps.sh --test`, which `make test` runs) installs the
//! client libraries into `tmp/examples/` (gitignored); this file installs
//! nothing. A missing python3 or node, or libraries missing or older than
//! the requirement files, fail the test with the command to run: it never
//! skips. (The Node example, an Express app on the redis-ratelimit
//! package, is run by that package's tests: clients/node/test.)

mod common;
use common::cluster::{self, Cluster};
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
/// it printed each of its seven commands followed by its reply: 20 lines.
fn run_commands(cmd: &mut Command, what: &str) -> Vec<String> {
    let out = run(cmd, what, 30);
    let text = String::from_utf8(out.stdout).expect("utf-8 output");
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(
        lines.len(),
        20,
        "{what}: expected 7 commands and their replies:\n{text}"
    );
    lines
}

/// The `name=value` fields of a reply line (after an optional `limit i:`).
fn fields(line: &str) -> Vec<(String, String)> {
    let line = match line.trim().strip_prefix("limit ") {
        Some(rest) => rest.split_once(':').expect("limit i:").1,
        None => line,
    };
    line.split_whitespace()
        .map(|f| {
            let (name, value) = f.split_once('=').unwrap_or_else(|| panic!("field {f:?}"));
            (name.to_string(), value.to_string())
        })
        .collect()
}

/// The five integer fields of a reply line, by name and in order, then
/// any further ones.
fn five_fields(line: &str, what: &str) -> ([i64; 5], Vec<(String, String)>) {
    let names = [
        "limited",
        "limit",
        "remaining",
        "retry_after",
        "reset_after",
    ];
    let f = fields(line);
    assert!(f.len() >= 5, "{what}: {line:?}");
    let got: Vec<&str> = f[..5].iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(got, names, "{what}: field names in {line:?}");
    let values: Vec<i64> = f[..5]
        .iter()
        .map(|(_, v)| v.parse().expect("integer field"))
        .collect();
    (values.try_into().expect("five"), f[5..].to_vec())
}

fn check_commands(lines: &[String], prefix: &str, run: usize, what: &str) {
    let expect = |line: &String, values: [i64; 4]| -> i64 {
        let (got, rest) = five_fields(line, what);
        assert!(rest.is_empty(), "{what}: {line:?}");
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
    // 10 per 60 s in 6 slices: counted until 7 slices after the unit's slice
    // began. Each run gives its unit back at the end, so every run sees 9.
    assert_eq!(
        lines[4],
        format!("RL.SLICE {prefix}slice 10 60 6"),
        "{what}"
    );
    let reset = expect(&lines[5], [0, 10, 9, -1]);
    assert!((59..=70).contains(&reset), "{what}: {}", lines[5]);

    // RL.ALLOW of three layered limits, then RL.PEEK of the same.
    let s = format!("{prefix}{{user:42}}:");
    let args = format!("3 {s}s {s}m {s}h SLIDE 10 1 SLICE 100 60 12 SLICE 1000 3600 60");
    for (at, command) in [(6, "RL.ALLOW"), (11, "RL.PEEK")] {
        assert_eq!(lines[at], format!("{command} {args}"), "{what}");
        // The peek asks for one more unit than the allow took, and took
        // nothing itself: run n's allow sees n units of the minute and of
        // the hour (the second only those of the runs within a second).
        let taken = if command == "RL.ALLOW" { n } else { n + 1 };
        let (headline, rest) = five_fields(&lines[at + 1], what);
        assert_eq!(
            rest,
            [("binding".to_string(), "1".to_string())],
            "{what}: {}",
            lines[at + 1]
        );
        let per: Vec<[i64; 5]> = (0..3)
            .map(|i| {
                let line = &lines[at + 2 + i];
                assert!(
                    line.starts_with(&format!("  limit {}: ", i + 1)),
                    "{what}: {line:?}"
                );
                five_fields(line, what).0
            })
            .collect();
        // The binding limit is the per-second one: the least remaining.
        assert_eq!(headline, per[0], "{what}: {}", lines[at + 1]);
        let second = per[0];
        assert_eq!(second[..2], [0, 10], "{what}: {second:?}");
        assert!(
            (10 - taken..=9).contains(&second[2]) && second[3] == -1 && second[4] == 1,
            "{what}: {second:?}"
        );
        let minute = per[1];
        assert_eq!(minute[..4], [0, 100, 100 - taken, -1], "{what}: {minute:?}");
        assert!((60..=65).contains(&minute[4]), "{what}: {minute:?}");
        let hour = per[2];
        assert_eq!(hour[..4], [0, 1000, 1000 - taken, -1], "{what}: {hour:?}");
        assert!((3600..=3660).contains(&hour[4]), "{what}: {hour:?}");
    }

    // RL.INSPECT of the sliding log: n units, recorded within this test.
    assert_eq!(lines[16], format!("RL.INSPECT {prefix}slide"), "{what}");
    let f: Vec<(String, String)> = fields(&lines[17]);
    let names: Vec<&str> = f.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "type",
            "ttl",
            "memory",
            "units",
            "entries",
            "oldest_age_ms",
            "newest_age_ms"
        ],
        "{what}: {}",
        lines[17]
    );
    let int = |i: usize| -> i64 { f[i].1.parse().expect("integer") };
    assert_eq!(f[0].1, "slide", "{what}");
    assert!((50_000..=60_000).contains(&int(1)), "{what}: {}", lines[17]);
    assert!(int(2) > 0, "{what}: {}", lines[17]);
    assert_eq!(int(3), n, "{what}: {}", lines[17]);
    assert!((1..=n).contains(&int(4)), "{what}: {}", lines[17]);
    assert!(int(5) >= int(6) && int(5) < 30_000, "{what}: {}", lines[17]);

    // RL.REFUND gives back the slice's unit: full again, nothing to wait for.
    assert_eq!(
        lines[18],
        format!("RL.REFUND {prefix}slice SLICE 10 60 6 1"),
        "{what}"
    );
    assert_eq!(expect(&lines[19], [0, 10, 10, -1]), 0, "{what}");
}

fn check_key_types(server: &Server, prefix: &str) {
    let mut con = server.conn();
    for (key, ty) in [
        ("throttle", "rl-gcra--"),
        ("slide", "rl-slide-"),
        // RL.REFUND emptied it, so it is gone.
        ("slice", "none"),
        ("{user:42}:m", "rl-slice-"),
        ("{user:42}:h", "rl-slice-"),
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

/// One HTTP/1.1 request for `/hello` on its own connection.
fn request(port: u16, method: &str, client_id: Option<&str>, body: &str) -> Response {
    request_to(port, method, "/hello", client_id, body)
}

/// One HTTP/1.1 request for `path` on its own connection.
fn request_to(
    port: u16,
    method: &str,
    path: &str,
    client_id: Option<&str>,
    body: &str,
) -> Response {
    let stream = send_request(port, method, path, client_id, body);
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    read_response(stream)
}

/// Sends one HTTP/1.1 request for `path` on its own connection and returns
/// the connection, its response unread: `read_response` reads it, dropping
/// the connection is a client that goes away.
fn send_request(
    port: u16,
    method: &str,
    path: &str,
    client_id: Option<&str>,
    body: &str,
) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the middleware");
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    if let Some(id) = client_id {
        req.push_str(&format!("X-Client-Id: {id}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    stream.write_all(req.as_bytes()).expect("send request");
    stream
}

/// The response on `stream`, read to the end of the connection (the
/// requests say `Connection: close`) within its read timeout.
fn read_response(mut stream: TcpStream) -> Response {
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

/// `"<name>";r=<remaining>;t=<reset>` → (name, remaining, reset).
fn ratelimit_item(value: &str) -> (String, i64, i64) {
    let (name, params) = value
        .strip_prefix('"')
        .and_then(|v| v.split_once("\";"))
        .unwrap_or_else(|| panic!("RateLimit {value:?} is not \"<name>\";r=..;t=.."));
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
        name.to_string(),
        r.unwrap_or_else(|| panic!("no r in {value:?}")),
        t.unwrap_or_else(|| panic!("no t in {value:?}")),
    )
}

/// `"default";r=<remaining>;t=<seconds>` → (remaining, t).
fn ratelimit_field(value: &str) -> (i64, i64) {
    let (name, r, t) = ratelimit_item(value);
    assert_eq!(name, "default", "RateLimit {value:?}");
    (r, t)
}

/// The rate limit fields that a response of the limiter carries: the
/// draft's two, the X- trio, and Retry-After on a 429. No others (not the
/// earlier drafts' RateLimit-Limit, -Remaining, -Reset).
const DECIDED_FIELDS: [&str; 5] = [
    "RateLimit-Policy",
    "RateLimit",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
];

/// The names of the response's rate limit fields (any name with
/// "ratelimit" in it, and Retry-After), lowercase and sorted, repeats
/// included.
fn rate_limit_fields(r: &Response) -> Vec<String> {
    let mut names: Vec<String> = r
        .headers
        .iter()
        .map(|(n, _)| n.to_ascii_lowercase())
        .filter(|n| n.contains("ratelimit") || n == "retry-after")
        .collect();
    names.sort();
    names
}

/// Asserts that the response's rate limit fields are exactly `want`, each
/// once.
fn assert_rate_limit_fields(r: &Response, want: &[&str], ctx: &str) {
    let mut want: Vec<String> = want.iter().map(|n| n.to_ascii_lowercase()).collect();
    want.sort();
    assert_eq!(rate_limit_fields(r), want, "the rate limit fields: {ctx}");
}

/// The binding limit's fields in the response, after checking that it
/// carries exactly the rate limit fields of a decision: its name and
/// remaining from RateLimit, and X-RateLimit-Reset (seconds until the
/// limiter is full again). X-RateLimit-Limit is `limit` and
/// X-RateLimit-Remaining RateLimit's r. RateLimit's t is X-RateLimit-Reset,
/// except on a 429, where it is Retry-After (no later than the reset).
fn binding_headers(r: &Response, limit: i64, ctx: &str) -> (String, i64, i64) {
    let mut want = DECIDED_FIELDS.to_vec();
    if r.status == 429 {
        want.push("Retry-After");
    }
    assert_rate_limit_fields(r, &want, ctx);
    let (name, remaining, t) = ratelimit_item(r.header("RateLimit").expect("RateLimit"));
    let int = |h: &str| -> i64 {
        r.header(h)
            .unwrap_or_else(|| panic!("no {h}: {ctx}"))
            .parse()
            .unwrap_or_else(|e| panic!("{h}: {e}: {ctx}"))
    };
    assert_eq!(int("X-RateLimit-Limit"), limit, "{ctx}");
    assert_eq!(int("X-RateLimit-Remaining"), remaining, "{ctx}");
    let reset = int("X-RateLimit-Reset");
    if r.status == 429 {
        let retry = int("Retry-After");
        assert_eq!(t, retry, "RateLimit's t is Retry-After on a 429: {ctx}");
        assert!(retry <= reset, "{ctx}");
    } else {
        assert_eq!(t, reset, "RateLimit's t is X-RateLimit-Reset: {ctx}");
    }
    (name, remaining, reset)
}

/// The middleware contract, with 1 request per 60 s and a burst of 2
/// (capacity 3, one unit every 60 s): per client, three requests pass, then
/// 429 with Retry-After; every response carries exactly the rate limit
/// fields of a decision. The policy's window is the 180 s that the capacity
/// takes to refill (3 per 180 s is the rate, 1 per 60 s), not the period.
/// A 5xx of the application keeps its unit (the give-back is an option,
/// off by default).
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
    let policy = "\"default\";q=3;w=180";

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
        binding_headers(&r, 3, &ctx(&r));
        assert_eq!(r.header("Retry-After"), None, "{}", ctx(&r));
        assert_eq!(r.body, "ok\n", "{}", ctx(&r));
    }
    // Used up: 429, the next unit in (at most) 60 s, which is RateLimit's
    // t; full again in 180 s, X-RateLimit-Reset.
    for _ in 0..2 {
        let r = request(port, "GET", Some("alice"), "");
        assert_eq!(r.status, 429, "{}", ctx(&r));
        assert_eq!(r.header("RateLimit-Policy"), Some(policy), "{}", ctx(&r));
        let (remaining, t) = ratelimit_field(r.header("RateLimit").expect("RateLimit"));
        assert_eq!(remaining, 0, "{}", ctx(&r));
        assert!((59..=60).contains(&t), "{}", ctx(&r));
        let (_, _, reset) = binding_headers(&r, 3, &ctx(&r));
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
    assert_eq!(binding_headers(&r, 3, &ctx(&r)).1, 2, "{}", ctx(&r));
    // Every method costs a unit, OPTIONS and PURGE as well as GET.
    for (method, remaining) in [("OPTIONS", 2), ("PURGE", 1)] {
        let r = request(port, method, Some("carol"), "");
        assert_eq!(r.status, 200, "{method}: {}", ctx(&r));
        assert_eq!(r.header("RateLimit-Policy"), Some(policy), "{}", ctx(&r));
        assert_eq!(
            binding_headers(&r, 3, &ctx(&r)).1,
            remaining,
            "{method}: {}",
            ctx(&r)
        );
    }
    // Without X-Client-Id, the peer address is the client.
    let r = request(port, "GET", None, "");
    assert_eq!(r.status, 200, "{}", ctx(&r));
    assert_eq!(binding_headers(&r, 3, &ctx(&r)).1, 2, "{}", ctx(&r));
    // The application's 500 passes through with the headers, and the unit
    // stays taken: the next request of that client sees one less.
    let r = request_to(port, "GET", "/status/500", Some("dan"), "");
    assert_eq!(r.status, 500, "{}", ctx(&r));
    assert_eq!(r.body, "status 500\n", "{}", ctx(&r));
    assert_eq!(binding_headers(&r, 3, &ctx(&r)).1, 2, "{}", ctx(&r));
    let r = request(port, "GET", Some("dan"), "");
    assert_eq!(r.status, 200, "{}", ctx(&r));
    assert_eq!(binding_headers(&r, 3, &ctx(&r)).1, 1, "{}", ctx(&r));

    // The limiters are RL.THROTTLE keys on the server.
    let mut con = server.conn();
    for client in ["alice", "bob", "carol", "dan", "127.0.0.1"] {
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

/// The limiter's timeout of the tests of what the middlewares answer when
/// Redis works: one that no loaded test machine reaches (the tests of
/// failures set their own).
const FUNCTIONAL_TIMEOUT_MS: &str = "10000";

fn limits(cmd: &mut Command, server: &Server, prefix: &str) {
    cmd.env("REDIS_URL", format!("redis://127.0.0.1:{}", server.port))
        .env("RL_TIMEOUT_MS", FUNCTIONAL_TIMEOUT_MS)
        .env("RL_MAX_BURST", "2")
        .env("RL_COUNT", "1")
        .env("RL_PERIOD", "60")
        .env("RL_KEY_PREFIX", prefix);
}

fn python_middleware_command(libs: &PathBuf) -> Command {
    let mut cmd = Command::new("python3");
    cmd.arg(root().join("examples/python/middleware.py"))
        .env("PYTHONPATH", libs)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    cmd
}

#[test]
fn python_middleware() {
    let libs = python_libs();
    let server = Server::start();
    let prefix = "http-py:";
    let mut cmd = python_middleware_command(&libs);
    limits(&mut cmd, &server, prefix);
    let mw = Middleware::start(cmd, "examples/python/middleware.py");
    check_middleware(&mw, &server, prefix, "middleware.py");
}

// ---------------------------------------------------------------------------
// When Redis fails: the middlewares answer within their timeout, 503 or
// (failing open) the application's answer, and log one line per burst

/// The middlewares' RL_TIMEOUT_MS in these tests.
const TIMEOUT_MS: u64 = 200;
/// What each request may take when Redis fails: the timeout and a generous
/// margin (before the timeout, the Node middleware took 10 to 42 s).
const BOUND: Duration = Duration::from_secs(2);
/// Requests per failure burst.
const BURST: usize = 5;

/// A middleware from `command` with one limit against `url`, the timeout
/// of these tests, and failing open or closed.
fn start_against(mut command: Command, url: &str, fail_open: bool, what: &str) -> Middleware {
    command
        .env("REDIS_URL", url)
        .env("RL_KEY_PREFIX", "down:")
        .env("RL_TIMEOUT_MS", TIMEOUT_MS.to_string())
        .env("RL_FAIL_OPEN", if fail_open { "yes" } else { "no" });
    Middleware::start(command, what)
}

/// The log's lines, checked to be `want` in number, the first containing
/// each of `first`.
fn log_lines(mw: &Middleware, want: usize, first: &[&str], what: &str) -> Vec<String> {
    let log = mw.log();
    let lines: Vec<String> = log.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), want, "{what}: the log:\n{log}");
    if let Some(line) = lines.first() {
        for part in first {
            assert!(line.contains(part), "{what}: {part:?} not in {line:?}");
        }
    }
    lines
}

/// BURST requests at once, each answered within BOUND: 503 without rate
/// limit fields, or when failing open the application's 200, also without.
fn burst(mw: &Middleware, fail_open: bool, what: &str) {
    let port = mw.port;
    let requests: Vec<_> = (0..BURST)
        .map(|i| {
            std::thread::spawn(move || {
                let started = Instant::now();
                let r = request(port, "GET", Some(&format!("client{i}")), "");
                (r, started.elapsed())
            })
        })
        .collect();
    for handle in requests {
        let (r, took) = handle.join().expect("request thread");
        let ctx = format!(
            "{what}: {} {:?} {:?} in {took:?}",
            r.status, r.headers, r.body
        );
        assert!(took < BOUND, "{ctx}: over {BOUND:?}\n{}", mw.log());
        if fail_open {
            assert_eq!((r.status, r.body.as_str()), (200, "ok\n"), "{ctx}");
        } else {
            assert_eq!(
                (r.status, r.body.as_str()),
                (503, "rate limiter unavailable\n"),
                "{ctx}"
            );
        }
        assert_rate_limit_fields(&r, &[], &ctx);
    }
}

/// One request that the limiter decides: 200, and the fields of a decision.
fn decided(mw: &Middleware, what: &str) {
    let started = Instant::now();
    let r = request(mw.port, "GET", Some("fine"), "");
    let ctx = format!(
        "{what}: {} {:?} in {:?}\n{}",
        r.status,
        r.headers,
        started.elapsed(),
        mw.log()
    );
    assert_eq!(r.status, 200, "{ctx}");
    binding_headers(&r, 10, &ctx);
}

/// Sends `signal` to the server's process.
fn signal(server: &Server, signal: libc::c_int) {
    let pid = server.pid().expect("the server runs") as libc::pid_t;
    // SAFETY: kill(2) with the pid of a child process this test started.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill {pid}");
}

/// A listener whose accept queue is full: connection attempts to its port
/// neither succeed nor fail, as with a host that drops the packets. (Linux
/// takes a new backlog from a second listen(); with 0 it queues one
/// connection, which `_filler` is.)
struct Unanswered {
    listener: std::net::TcpListener,
    _filler: TcpStream,
}

impl Unanswered {
    fn new() -> Unanswered {
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        // SAFETY: listen(2) on the listener's own socket.
        assert_eq!(
            unsafe { libc::listen(listener.as_raw_fd(), 0) },
            0,
            "listen"
        );
        let port = listener.local_addr().expect("address").port();
        let filler = TcpStream::connect(("127.0.0.1", port)).expect("fill the queue");
        Unanswered {
            listener,
            _filler: filler,
        }
    }

    fn url(&self) -> String {
        let port = self.listener.local_addr().expect("address").port();
        format!("redis://127.0.0.1:{port}")
    }
}

/// The failure contract of a middleware (`command` makes one) with
/// RL_TIMEOUT_MS=200: whether Redis is gone (connections refused), hangs
/// (connected, no answers), or its host does not answer (connection
/// attempts time out), every request of a burst is answered within 2 s,
/// with 503, and the log has one line for the burst; once Redis answers
/// again, requests pass and the log says so in one more line. Failing open,
/// the requests reach the application.
fn check_redis_failures(mut command: impl FnMut() -> Command, what: &str) {
    let url = |server: &Server| format!("redis://127.0.0.1:{}", server.port);

    // Redis goes away: SHUTDOWN, then connections are refused.
    let mut server = Server::start();
    let mw = start_against(command(), &url(&server), false, what);
    let what_now = format!("{what}, Redis shut down");
    decided(&mw, &what_now);
    server.shutdown();
    burst(&mw, false, &what_now);
    burst(&mw, false, &what_now);
    log_lines(
        &mw,
        1,
        &["rate limiter unavailable", "answering 503"],
        &what_now,
    );
    drop(mw);

    // Failing open, the same: the application answers, without a limit.
    let mw = start_against(command(), &url(&server), true, what);
    let what_now = format!("{what}, Redis shut down, failing open");
    burst(&mw, true, &what_now);
    log_lines(
        &mw,
        1,
        &["rate limiter unavailable", "RL_FAIL_OPEN=yes"],
        &what_now,
    );
    drop(mw);

    // Redis hangs (SIGSTOP): connected, and no answer comes. Then it goes
    // on (SIGCONT), and the next request passes.
    let server = Server::start();
    let mw = start_against(command(), &url(&server), false, what);
    let what_now = format!("{what}, Redis stopped");
    decided(&mw, &what_now);
    signal(&server, libc::SIGSTOP);
    burst(&mw, false, &what_now);
    burst(&mw, false, &what_now);
    log_lines(&mw, 1, &["rate limiter unavailable"], &what_now);
    signal(&server, libc::SIGCONT);
    decided(&mw, &format!("{what}, Redis going on"));
    let lines = log_lines(&mw, 2, &[], &what_now);
    assert!(
        lines[1].contains("rate limiter available again"),
        "{what_now}: {lines:?}"
    );
    drop(mw);

    // Nothing answers the connection attempts.
    let unanswered = Unanswered::new();
    let mw = start_against(command(), &unanswered.url(), false, what);
    let what_now = format!("{what}, no answer to connecting");
    burst(&mw, false, &what_now);
    burst(&mw, false, &what_now);
    log_lines(&mw, 1, &["rate limiter unavailable"], &what_now);
}

#[test]
fn python_middleware_when_redis_fails() {
    let libs = python_libs();
    check_redis_failures(
        || python_middleware_command(&libs),
        "examples/python/middleware.py",
    );
}

// ---------------------------------------------------------------------------
// Several limits: the middlewares with a list of limits

/// Where the middlewares' keys live: one server, or a cluster whose masters
/// each hold the keys of their slots.
enum Store<'a> {
    Server(&'a Server),
    Cluster(&'a Cluster),
}

impl Store<'_> {
    /// The middleware's REDIS_URL: the server, or one node of the cluster.
    fn url(&self) -> String {
        let port = match self {
            Store::Server(server) => server.port,
            Store::Cluster(cluster) => cluster.ports[0],
        };
        format!("redis://127.0.0.1:{port}")
    }

    /// The master that holds `key`: the server, or the master that owns the
    /// key's slot, as the cluster says now (CLUSTER KEYSLOT, CLUSTER NODES).
    fn port_for(&self, key: &str) -> u16 {
        match self {
            Store::Server(server) => server.port,
            Store::Cluster(cluster) => {
                let slot = cluster::keyslot(&mut cluster.con(cluster.ports[0]), key);
                cluster::owner_of(&cluster.topology(), slot)
            }
        }
    }

    /// A connection to the master that holds `key`.
    fn con_for(&self, key: &str) -> Connection {
        let port = self.port_for(key);
        match self {
            Store::Server(server) => server.conn(),
            Store::Cluster(cluster) => cluster.con(port),
        }
    }
}

/// RL.INSPECT's field-value pairs, asked of the master that holds the
/// key; `None` for a missing key.
fn inspect(store: &Store, key: &str) -> Option<Vec<(String, Value)>> {
    common::inspect(&mut store.con_for(key), key)
}

/// One integer field of RL.INSPECT's reply.
fn inspect_int(store: &Store, key: &str, name: &str) -> i64 {
    let fields = inspect(store, key).unwrap_or_else(|| panic!("RL.INSPECT {key}: no such key"));
    match fields.iter().find(|(n, _)| n == name) {
        Some((_, Value::Int(v))) => *v,
        other => panic!("RL.INSPECT {key}: {name} is {other:?}"),
    }
}

/// The policy of the several-limit tests: per client (GCRA, 1 per 60 s,
/// burst 1: capacity 2), per peer address (exact log, 10 per 60 s) and per
/// path (10 per 60 s counted in one slice: a unit counts until the slice
/// after the next begins, between 60 and 120 s).
fn several_limits(prefix: &str) -> String {
    format!(
        "user {prefix}user:$client THROTTLE 1 1 60; \
         ip {prefix}ip:$ip SLIDE 10 60; \
         endpoint {prefix}ep:$path SLICE 3 60 1"
    )
}

/// The policy's three keys for one request of `client` on `path`.
fn several_keys(prefix: &str, client: &str, path: &str) -> [String; 3] {
    [
        format!("{prefix}user:{client}"),
        format!("{prefix}ip:127.0.0.1"),
        format!("{prefix}ep:{path}"),
    ]
}

/// The contract of a middleware configured with `several_limits` and the
/// give-back of 5xx: the binding limit's headers on every response (the
/// one with least remaining, ties to the longer reset; when refused, the
/// refusing one), every limit in RateLimit-Policy, and all or nothing: a
/// request refused by one limit leaves no unit in the others, also when
/// `grouped` (one RL.ALLOW per hash slot, then RL.REFUND of what the
/// earlier groups took).
fn check_several(mw: &Middleware, store: &Store, prefix: &str, grouped: bool, what: &str) {
    let what = &format!("{what}{}", if grouped { " grouped by slot" } else { "" });
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
    // The user's THROTTLE 1 1 60 refills its capacity of 2 in 120 s.
    let policy = "\"user\";q=2;w=120, \"ip\";q=10;w=60, \"endpoint\";q=3;w=60";
    let ip = format!("{prefix}ip:127.0.0.1");
    // A key's value, expiry and units, on the master that holds it.
    let state = |key: &str| {
        let mut con = store.con_for(key);
        (
            digest_value(&mut con, key),
            pexpiretime(&mut con, key),
            inspect_int(store, key, "units"),
        )
    };
    // A key whose unit of a request was given back, a 60 s window, the
    // request answered at `done_ns`: the same units as `before` (the log's
    // own clock moved to the give-back, so its bytes differ), and an expiry
    // no earlier (its units count until then) and no later than the unit
    // taken would have kept it. RL.REFUND never moves an expiry earlier: it
    // cannot know under which window the units it keeps were taken.
    let given_back = |key: &str, before: &(String, i64, i64), done_ns: i128| {
        let (_, expiry, units) = state(key);
        let latest = ceil_to(done_ns + 60 * NS_PER_S, NS_PER_MS);
        assert_eq!(units, before.2, "{what}: {key} holds other units");
        assert!(
            (before.1..=latest).contains(&expiry),
            "{what}: {key} expires at {expiry}, was {}, at the latest {latest}",
            before.1
        );
    };

    // The keys of one request live in three slots: a cluster needs three
    // RL.ALLOW, which `grouped` makes (also on a single server).
    let keys = several_keys(prefix, "carol", "/a");
    let slots: Vec<u16> = keys.iter().map(|k| keyslot(k)).collect();
    assert!(
        slots[0] != slots[1] && slots[1] != slots[2] && slots[0] != slots[2],
        "{what}: pick keys in three slots: {keys:?} {slots:?}"
    );

    // Requests of the same address, and what each must answer.
    struct Step {
        client: &'static str,
        path: &'static str,
        status: u16,
        // The binding limit: its name, limit and remaining, and the range
        // of its reset.
        name: &'static str,
        limit: i64,
        remaining: i64,
        reset: (i64, i64),
    }
    let step = |client, path, status, name, limit, remaining, reset| Step {
        client,
        path,
        status,
        name,
        limit,
        remaining,
        reset,
    };
    let steps = [
        // user 1 left of 2, ip 9 of 10, endpoint 2 of 3: the user binds.
        step("alice", "/a", 200, "user", 2, 1, (59, 60)),
        step("alice", "/b", 200, "user", 2, 0, (119, 120)),
        // alice's own limit refuses; Retry-After is its 60 s.
        step("alice", "/c", 429, "user", 2, 0, (119, 120)),
        // user 1 left, endpoint /a 1 left: a tie, and the endpoint's
        // reset (over 60 s) is longer than the user's (60 s).
        step("bob", "/a", 200, "endpoint", 3, 1, (61, 120)),
        step("dave", "/a", 200, "endpoint", 3, 0, (61, 120)),
    ];
    for Step {
        client,
        path,
        status,
        name,
        limit,
        remaining,
        reset: (lo, hi),
    } in steps
    {
        let r = request_to(port, "GET", path, Some(client), "");
        assert_eq!(r.status, status, "{client} {path}: {}", ctx(&r));
        assert_eq!(r.header("RateLimit-Policy"), Some(policy), "{}", ctx(&r));
        let (got_name, got_remaining, reset) = binding_headers(&r, limit, &ctx(&r));
        assert_eq!(
            (got_name.as_str(), got_remaining),
            (name, remaining),
            "{client} {path}: {}",
            ctx(&r)
        );
        assert!((lo..=hi).contains(&reset), "{client} {path}: {}", ctx(&r));
        if status == 429 {
            let retry: i64 = r
                .header("Retry-After")
                .expect("Retry-After")
                .parse()
                .unwrap();
            assert!((59..=60).contains(&retry), "{}", ctx(&r));
        } else {
            assert_eq!(r.header("Retry-After"), None, "{}", ctx(&r));
        }
    }
    // alice's refused request on /c recorded nothing: no endpoint key, and
    // the address's log holds the four allowed requests.
    assert!(
        inspect(store, &format!("{prefix}ep:/c")).is_none(),
        "{what}"
    );
    assert_eq!(inspect_int(store, &ip, "units"), 4, "{what}");

    // carol on /a: her own limit and the address's would allow, the third
    // limit, the endpoint's, refuses. It binds, with its Retry-After.
    let ip_before = state(&ip);
    let endpoint_before = state(&keys[2]);
    let r = request_to(port, "GET", "/a", Some("carol"), "");
    let carol_done = unix_ns();
    assert_eq!(r.status, 429, "{}", ctx(&r));
    assert_eq!(r.header("RateLimit-Policy"), Some(policy), "{}", ctx(&r));
    let (name, remaining, reset) = binding_headers(&r, 3, &ctx(&r));
    assert_eq!((name.as_str(), remaining), ("endpoint", 0), "{}", ctx(&r));
    let retry: i64 = r
        .header("Retry-After")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=120).contains(&retry) && retry <= reset, "{}", ctx(&r));
    // The first two limits are as they were: carol has no key, the
    // address's log still holds four units.
    assert!(inspect(store, &keys[0]).is_none(), "{what}: {}", keys[0]);
    assert_eq!(inspect_int(store, &ip, "units"), 4, "{what}");
    assert_eq!(inspect_int(store, &keys[2], "units"), 3, "{what}");
    // The endpoint's key as it was, value and expiry: a refused request
    // records nothing. So the address's, in one RL.ALLOW; grouped, its
    // group took a unit and gave it back.
    assert_eq!(state(&keys[2]), endpoint_before, "{what}: {}", keys[2]);
    if grouped {
        given_back(&ip, &ip_before, carol_done);
    } else {
        assert_eq!(state(&ip), ip_before, "{what}: {ip} changed");
    }
    // One RL.PEEK per key (a cluster holds them on different masters):
    // carol's limit is fresh, 1 left after this request; the address 5
    // of 10.
    for (key, spec, want) in [
        (&keys[0], &["THROTTLE", "1", "1", "60"][..], [0, 2, 1, -1]),
        (&keys[1], &["SLIDE", "10", "60"][..], [0, 10, 5, -1]),
    ] {
        let args = [&["RL.PEEK", "1", key.as_str()][..], spec].concat();
        let v: Vec<Value> = cmd(&args).query(&mut store.con_for(key)).expect("RL.PEEK");
        let got: Vec<&Value> = v.iter().take(4).collect();
        let want: Vec<Value> = want.into_iter().map(Value::Int).collect();
        assert_eq!(got, want.iter().collect::<Vec<_>>(), "{what}: {args:?}");
    }

    // The application fails with 503: the headers of the decision, and the
    // units go back (RL_REFUND_5XX=yes): no key for eve or the path, and
    // the address's log is as it was, four units.
    let ip_before = state(&ip);
    let r = request_to(port, "GET", "/status/503", Some("eve"), "");
    let eve_done = unix_ns();
    assert_eq!(r.status, 503, "{}", ctx(&r));
    assert_eq!(r.body, "status 503\n", "{}", ctx(&r));
    let (name, remaining, _) = binding_headers(&r, 2, &ctx(&r));
    assert_eq!((name.as_str(), remaining), ("user", 1), "{}", ctx(&r));
    for key in several_keys(prefix, "eve", "/status/503") {
        if key == ip {
            assert_eq!(inspect_int(store, &key, "units"), 4, "{what}");
            given_back(&key, &ip_before, eve_done);
        } else {
            assert!(inspect(store, &key).is_none(), "{what}: {key}");
        }
    }
    // A successful request keeps its units.
    let r = request_to(port, "GET", "/status/201", Some("eve"), "");
    assert_eq!(r.status, 201, "{}", ctx(&r));
    assert_eq!(inspect_int(store, &ip, "units"), 5, "{what}");
    assert_eq!(
        inspect(store, &format!("{prefix}user:eve"))
            .expect("eve's key")
            .first()
            .map(|(n, v)| (n.clone(), text(v))),
        Some(("type".to_string(), "throttle".to_string())),
        "{what}"
    );
}

/// The middleware's environment for `check_several`: against a cluster,
/// REDIS_CLUSTER=yes, which implies the grouping by slot.
fn several(cmd: &mut Command, store: &Store, prefix: &str, grouped: bool) {
    cmd.env("REDIS_URL", store.url())
        .env("RL_TIMEOUT_MS", FUNCTIONAL_TIMEOUT_MS)
        .env("RL_LIMITS", several_limits(prefix))
        .env("RL_REFUND_5XX", "yes");
    match store {
        Store::Server(_) => {
            cmd.env("RL_GROUP_BY_SLOT", if grouped { "yes" } else { "no" });
        }
        Store::Cluster(_) => {
            assert!(grouped, "a cluster needs the grouping by slot");
            cmd.env("REDIS_CLUSTER", "yes");
        }
    }
}

/// A middleware with the several-limit policy on one server, in one
/// RL.ALLOW call and grouped by slot (two key prefixes).
fn several_limits_on_one_server(
    mut command: impl FnMut() -> Command,
    script: &str,
    prefixes: [&str; 2],
) {
    let server = Server::start();
    for (prefix, grouped) in [(prefixes[0], false), (prefixes[1], true)] {
        let mut cmd = command();
        several(&mut cmd, &Store::Server(&server), prefix, grouped);
        let mw = Middleware::start(cmd, script);
        let what = script.rsplit('/').next().unwrap_or(script);
        check_several(&mw, &Store::Server(&server), prefix, grouped, what);
    }
}

#[test]
fn python_middleware_several_limits() {
    let libs = python_libs();
    several_limits_on_one_server(
        || python_middleware_command(&libs),
        "examples/python/middleware.py",
        ["py1:", "py2:"],
    );
}

/// A key prefix for `several_limits` on `cluster`: the first of `base0:`,
/// `base1:`, ... with which carol's request on /a (refused by its third
/// limit) has its three keys on three masters, and eve's (given back) on
/// more than one; as CLUSTER KEYSLOT and CLUSTER NODES say.
fn spread_prefix(cluster: &Cluster, base: &str) -> String {
    let mut con = cluster.con(cluster.ports[0]);
    let topo = cluster.topology();
    let mut masters = |keys: [String; 3]| -> Vec<(String, u16)> {
        keys.into_iter()
            .map(|key| {
                let master = cluster::owner_of(&topo, cluster::keyslot(&mut con, &key));
                (key, master)
            })
            .collect()
    };
    let distinct = |placed: &[(String, u16)]| {
        let mut ports: Vec<u16> = placed.iter().map(|(_, p)| *p).collect();
        ports.sort();
        ports.dedup();
        ports.len()
    };
    for n in 0..100 {
        let prefix = format!("{base}{n}:");
        let carol = masters(several_keys(&prefix, "carol", "/a"));
        let eve = masters(several_keys(&prefix, "eve", "/status/503"));
        if distinct(&carol) == 3 && distinct(&eve) >= 2 {
            println!("{prefix} carol's keys on {carol:?}, eve's on {eve:?}");
            return prefix;
        }
    }
    panic!("no prefix {base}0: to {base}99: spreads the keys over the masters");
}

/// The Python middleware with REDIS_CLUSTER=yes against a cluster of three
/// masters, a request's three keys on three of them: the checks of the
/// single server, where now each slot group is one RL.ALLOW on its own
/// master, and a refusal or a 5xx gives units back on the others.
#[test]
fn middlewares_several_limits_on_a_cluster() {
    let started = Instant::now();
    let middlewares = [
        (
            "cpy",
            python_middleware_command(&python_libs()),
            "middleware.py",
        ),
    ];
    let cluster = Cluster::start();
    let store = Store::Cluster(&cluster);
    println!("cluster up in {:?}", started.elapsed());
    for (base, mut cmd, what) in middlewares {
        let prefix = spread_prefix(&cluster, base);
        several(&mut cmd, &store, &prefix, true);
        let mw = Middleware::start(cmd, &format!("examples/{}", what));
        check_several(&mw, &store, &prefix, true, &format!("{what} on a cluster"));
    }
    println!("took {:?}", started.elapsed());
}

// ---------------------------------------------------------------------------
// Concurrency: a LEASE limit in the policy, released when the response ends

/// How long the request that finishes by itself stays in flight: the 429
/// of a third request must come within it, which takes milliseconds.
const SLOW_MS: u64 = 5000;

/// The concurrency policy: per client, 100 requests per minute, at most 2
/// in flight (leases of 60 s, far longer than any wait below: a lease that
/// goes is released, not expired) and 5 requests per minute. Three keys in
/// three slots: grouped by slot, three RL.ALLOW calls, so that a lease
/// refused after a rate limit took a unit gives the unit back, and a rate
/// limit refusing after the lease was granted releases it.
fn concurrency_limits(prefix: &str) -> String {
    format!(
        "total {prefix}t:$client SLIDE 100 60; \
         inflight {prefix}c:$client LEASE 2 60; \
         minute {prefix}m:$client SLIDE 5 60"
    )
}

/// RL.RELEASE calls the server has run, as INFO counts them.
fn release_calls(con: &mut Connection) -> i64 {
    info_field(con, "ratelimit", "ratelimit_release_calls")
        .parse()
        .expect("ratelimit_release_calls")
}

/// The leases a LEASE key holds: RL.INSPECT's `held`, 0 without the key.
fn held(con: &mut Connection, key: &str) -> i64 {
    match common::inspect(con, key) {
        None => 0,
        Some(fields) => match fields.iter().find(|(n, _)| n == "held") {
            Some((_, Value::Int(n))) => *n,
            other => panic!("RL.INSPECT {key}: held is {other:?}"),
        },
    }
}

/// The concurrency contract of a middleware with `concurrency_limits`:
/// with two requests of a client in flight, a third gets 429 from the
/// concurrency limit (Retry-After at most the lease's 60 s) and takes
/// nothing; once one finishes, a request passes; a client that goes away
/// gives its slot back within a bounded time, a 5xx gives its slot back
/// too (and, with RL_REFUND_5XX=yes, its units); a rate limit refusing
/// after the lease (`grouped`: in a later RL.ALLOW) leaves no lease. Each
/// granted lease is released exactly once, and in the end the lease key
/// is gone.
fn check_concurrency(mw: &Middleware, server: &Server, prefix: &str, grouped: bool, what: &str) {
    let what = &format!("{what}{}", if grouped { " grouped by slot" } else { "" });
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
    let policy = "\"total\";q=100;w=60, \"inflight\";q=2;qu=\"concurrent-requests\", \
                  \"minute\";q=5;w=60";
    let [total, inflight, minute] = ["t", "c", "m"].map(|k| format!("{prefix}{k}:alice"));
    let slots = [&total, &inflight, &minute].map(|k| keyslot(k));
    assert!(
        slots[0] != slots[1] && slots[1] != slots[2] && slots[0] != slots[2],
        "{what}: pick keys in three slots: {slots:?}"
    );
    let store = Store::Server(server);
    let mut con = server.conn();
    let releases_before = release_calls(&mut con);
    let held_now = || held(&mut server.conn(), &inflight);
    let units = |key: &str| inspect_int(&store, key, "units");

    // A: in flight until its client goes away (the application would take
    // 60 s). B: in flight for SLOW_MS.
    let a = send_request(port, "GET", "/slow/60000", Some("alice"), "");
    wait_until(10, "A's lease", || held_now() == 1);
    let b_sent = Instant::now();
    let b = send_request(port, "GET", &format!("/slow/{SLOW_MS}"), Some("alice"), "");
    b.set_read_timeout(Some(
        Duration::from_millis(SLOW_MS) + Duration::from_secs(20),
    ))
    .expect("timeout");
    wait_until(10, "B's lease", || held_now() == 2);

    // C: the concurrency limit refuses, and binds. Its Retry-After is the
    // time until the oldest lease would expire, if nobody released it.
    let r = request(port, "GET", Some("alice"), "");
    let c_took = b_sent.elapsed();
    assert!(
        c_took < Duration::from_millis(SLOW_MS),
        "{what}: B ({SLOW_MS} ms) must be in flight while C is decided, yet C was answered \
         {c_took:?} after B was sent"
    );
    assert_eq!(r.status, 429, "{}", ctx(&r));
    assert_eq!(r.header("RateLimit-Policy"), Some(policy), "{}", ctx(&r));
    let (name, remaining, reset) = binding_headers(&r, 2, &ctx(&r));
    assert_eq!((name.as_str(), remaining), ("inflight", 0), "{}", ctx(&r));
    assert!((1..=60).contains(&reset), "{}", ctx(&r));
    // C took nothing: two units in each rate limit (grouped, the first
    // group took one and gave it back), and the same two leases.
    assert_eq!((units(&total), units(&minute)), (2, 2), "{what}");
    assert_eq!(held_now(), 2, "{what}");

    // B finishes (with the headers of its decision: the second slot taken,
    // none left); its slot comes back, and the next request passes.
    let r = read_response(b);
    assert_eq!(
        (r.status, r.body.as_str()),
        (200, "waited 5000 ms\n"),
        "{}",
        ctx(&r)
    );
    let (name, remaining, _) = binding_headers(&r, 2, &ctx(&r));
    assert_eq!((name.as_str(), remaining), ("inflight", 0), "{}", ctx(&r));
    wait_until(10, "B's release", || held_now() == 1);
    let r = request(port, "GET", Some("alice"), "");
    assert_eq!(r.status, 200, "{}", ctx(&r));
    let (name, remaining, _) = binding_headers(&r, 2, &ctx(&r));
    assert_eq!((name.as_str(), remaining), ("inflight", 0), "{}", ctx(&r));
    wait_until(10, "D's release", || held_now() == 1);

    // A's client goes away: the slot comes back though the application
    // would still be at work for a minute, and the key with it.
    drop(a);
    wait_until(10, "A's release, its client gone", || held_now() == 0);
    assert!(common::inspect(&mut con, &inflight).is_none(), "{what}");

    // A 5xx: decided (the fields of a decision), its slot released and,
    // with RL_REFUND_5XX=yes, its units given back.
    let r = request_to(port, "GET", "/status/503", Some("alice"), "");
    assert_eq!(
        (r.status, r.body.as_str()),
        (503, "status 503\n"),
        "{}",
        ctx(&r)
    );
    assert_eq!(r.header("RateLimit-Policy"), Some(policy), "{}", ctx(&r));
    assert_rate_limit_fields(&r, &DECIDED_FIELDS, &ctx(&r));
    wait_until(10, "the 5xx's release", || held_now() == 0);
    assert_eq!((units(&total), units(&minute)), (3, 3), "{what}");

    // Two more pass (the minute's fifth unit binds the second), and the
    // minute refuses the next; after the lease was granted when grouped.
    for _ in 0..2 {
        let r = request(port, "GET", Some("alice"), "");
        assert_eq!(r.status, 200, "{}", ctx(&r));
    }
    let r = request(port, "GET", Some("alice"), "");
    assert_eq!(r.status, 429, "{}", ctx(&r));
    let (name, remaining, _) = binding_headers(&r, 5, &ctx(&r));
    assert_eq!((name.as_str(), remaining), ("minute", 0), "{}", ctx(&r));
    assert_eq!((units(&total), units(&minute)), (5, 5), "{what}");

    // Every slot is back: no lease key. One RL.RELEASE per granted lease
    // (A, B, D, the 5xx and the two after it), and grouped, one for the
    // lease the last request's minute refused.
    wait_until(10, "every release", || {
        common::inspect(&mut server.conn(), &inflight).is_none()
    });
    let want = 6 + i64::from(grouped);
    wait_until(10, "the count of releases", || {
        release_calls(&mut server.conn()) - releases_before >= want
    });
    // Nothing released twice (a second release would follow the first at
    // once): the count stays, also after one more request of another client.
    let r = request(port, "GET", Some("bob"), "");
    assert_eq!(r.status, 200, "{}", ctx(&r));
    let bob = format!("{prefix}c:bob");
    wait_until(10, "bob's release", || {
        common::inspect(&mut server.conn(), &bob).is_none()
    });
    assert_eq!(
        release_calls(&mut con) - releases_before,
        want + 1,
        "{what}: RL.RELEASE calls"
    );
    assert!(mw.log().is_empty(), "{what}: the log:\n{}", mw.log());
}

/// A middleware with `concurrency_limits` and RL_REFUND_5XX=yes against a
/// server of its own, in one RL.ALLOW call or grouped by slot; both at
/// once, on two servers (each counts its own RL.RELEASE calls).
fn concurrency_on_one_server(command: impl Fn() -> Command, script: &str, prefix: &str) {
    std::thread::scope(|scope| {
        for grouped in [false, true] {
            let mut cmd = command();
            scope.spawn(move || {
                let server = Server::start();
                cmd.env("REDIS_URL", format!("redis://127.0.0.1:{}", server.port))
                    .env("RL_TIMEOUT_MS", FUNCTIONAL_TIMEOUT_MS)
                    .env("RL_LIMITS", concurrency_limits(prefix))
                    .env("RL_REFUND_5XX", "yes")
                    .env("RL_GROUP_BY_SLOT", if grouped { "yes" } else { "no" });
                let mw = Middleware::start(cmd, script);
                let what = script.rsplit('/').next().unwrap_or(script);
                check_concurrency(&mw, &server, prefix, grouped, what);
            });
        }
    });
}

#[test]
fn python_middleware_concurrency() {
    let libs = python_libs();
    concurrency_on_one_server(
        || python_middleware_command(&libs),
        "examples/python/middleware.py",
        "cpy:",
    );
}

/// The leases' ttl in `check_lease_failures`, in seconds: what a lease
/// that nobody released lasts.
const LEASE_TTL: u64 = 2;

/// When leases cannot be released. Redis hangs (SIGSTOP) while two
/// requests are in flight: their responses still come at once (the
/// release is not waited for, and fails within RL_TIMEOUT_MS=200), and
/// the failed releases and the failed decisions after them are one log
/// line; once Redis goes on, requests pass, and every lease is gone within
/// its ttl. The middleware dies (SIGKILL) with two requests in flight:
/// nobody releases them, and their leases expire after the ttl.
fn check_lease_failures(mut command: impl FnMut() -> Command, what: &str) {
    let server = Server::start();
    let mut con = server.conn();
    let start = |command: Command, prefix: &str| {
        let mut command = command;
        command
            .env("REDIS_URL", format!("redis://127.0.0.1:{}", server.port))
            .env("RL_TIMEOUT_MS", TIMEOUT_MS.to_string())
            .env(
                "RL_LIMITS",
                format!("inflight {prefix}$client LEASE 2 {LEASE_TTL}"),
            );
        Middleware::start(command, what)
    };
    let gone_within_ttl = |key: &str, what: &str| {
        wait_until(LEASE_TTL + 10, what, || {
            common::inspect(&mut server.conn(), key).is_none()
        });
    };

    // Redis hangs while two requests are in flight.
    let mw = start(command(), "hang:");
    let what_now = format!("{what}, Redis stopped with requests in flight");
    let key = "hang:alice";
    let slow = 1500;
    let sent = Instant::now();
    let in_flight: Vec<TcpStream> = (0..2)
        .map(|_| {
            let s = send_request(mw.port, "GET", &format!("/slow/{slow}"), Some("alice"), "");
            s.set_read_timeout(Some(Duration::from_secs(20)))
                .expect("timeout");
            s
        })
        .collect();
    wait_until(10, "two leases", || held(&mut server.conn(), key) == 2);
    signal(&server, libc::SIGSTOP);
    for stream in in_flight {
        let r = read_response(stream);
        let took = sent.elapsed();
        let ctx = format!("{what_now}: {} {:?} in {took:?}", r.status, r.headers);
        assert_eq!(r.status, 200, "{ctx}");
        assert!(
            took < Duration::from_millis(slow) + BOUND,
            "{ctx}: the response waited for the release\n{}",
            mw.log()
        );
    }
    // The releases fail within RL_TIMEOUT_MS: one line, and the decisions
    // that fail after them add none.
    wait_until(10, "the log line", || !mw.log().is_empty());
    burst(&mw, false, &what_now);
    log_lines(
        &mw,
        1,
        &["rate limiter unavailable", "answering 503"],
        &what_now,
    );
    signal(&server, libc::SIGCONT);
    // Another client's request passes; the log says the limiter is back.
    let r = request(mw.port, "GET", Some("fine"), "");
    assert_eq!(r.status, 200, "{what_now}: {} {:?}", r.status, r.headers);
    wait_until(10, "the log line of the limiter back", || {
        mw.log()
            .lines()
            .any(|l| l.contains("rate limiter available again"))
    });
    // Redis ran the releases when it went on, or the leases expired: alice
    // has her two slots back within the ttl, as have the clients of the
    // burst (whose RL.ALLOW Redis may have run late).
    gone_within_ttl(key, "alice's leases");
    for i in 0..BURST {
        gone_within_ttl(&format!("hang:client{i}"), "the burst's leases");
    }
    drop(mw);

    // The middleware dies with two requests in flight: nothing releases
    // them (the count of RL.RELEASE stays), the ttl does.
    let mw = start(command(), "crash:");
    let key = "crash:alice";
    let in_flight: Vec<TcpStream> = (0..2)
        .map(|_| send_request(mw.port, "GET", "/slow/60000", Some("alice"), ""))
        .collect();
    wait_until(10, "two leases", || held(&mut server.conn(), key) == 2);
    let releases = release_calls(&mut con);
    drop(mw);
    gone_within_ttl(key, "the dead middleware's leases to expire");
    assert_eq!(
        release_calls(&mut con),
        releases,
        "{what}: RL.RELEASE calls"
    );
    drop(in_flight);
}

#[test]
fn python_middleware_leases_when_things_fail() {
    let libs = python_libs();
    check_lease_failures(
        || python_middleware_command(&libs),
        "examples/python/middleware.py",
    );
}

// ---------------------------------------------------------------------------
// Hash slots: the grouping helper of limits.py and limits.js

/// The Redis Cluster hash slot of a key, computed here independently of the
/// examples: CRC16 (XMODEM) of the hash tag, or of the key without one.
fn keyslot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let tagged = bytes.iter().position(|&b| b == b'{').and_then(|open| {
        let close = open + 1 + bytes[open + 1..].iter().position(|&b| b == b'}')?;
        (close > open + 1).then(|| &bytes[open + 1..close])
    });
    crc::Crc::<u16>::new(&crc::CRC_16_XMODEM).checksum(tagged.unwrap_or(bytes)) % 16384
}

/// Keys whose slots Redis documents, and hash-tag edge cases, with the
/// slot `CLUSTER KEYSLOT` answers (the ones known) or the key whose slot
/// they share.
const SLOT_VECTORS: &[(&str, Option<u16>, &str)] = &[
    ("123456789", Some(12739), "123456789"),
    ("foo", Some(12182), "foo"),
    ("bar", Some(5061), "bar"),
    // The hash tag decides: between the first { and the first } after it.
    ("{user1000}.following", None, "user1000"),
    ("{user1000}.followers", None, "user1000"),
    ("foo{bar}{zap}", None, "bar"),
    ("foo{{bar}}zap", None, "{bar"),
    // An empty tag is no tag: the whole key.
    ("foo{}{bar}", Some(8363), "foo{}{bar}"),
    ("{}", Some(15257), "{}"),
    // No closing brace: the whole key.
    ("a{b", Some(13340), "a{b"),
    ("rl:{user:42}:s", None, "user:42"),
    ("rl:{user:42}:h", None, "user:42"),
    ("rl:ip:203.0.113.7", None, "rl:ip:203.0.113.7"),
    ("rl:endpoint:/search", None, "rl:endpoint:/search"),
];

/// Checks the output of a helper that printed, for every key of
/// SLOT_VECTORS, `<slot>` on its own line, then the groups of the keys of
/// `GROUPED` as `0,1,2|3|4`.
fn check_slots(output: &Output, what: &str) {
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), SLOT_VECTORS.len() + 1, "{what}:\n{text}");
    for ((key, known, same_as), line) in SLOT_VECTORS.iter().zip(&lines) {
        let slot: u16 = line.parse().unwrap_or_else(|_| panic!("{what}: {line:?}"));
        assert_eq!(slot, keyslot(key), "{what}: slot of {key:?}");
        assert_eq!(slot, keyslot(same_as), "{what}: slot of {key:?}");
        if let Some(known) = known {
            assert_eq!(slot, *known, "{what}: slot of {key:?}");
        }
    }
    // Grouped: the three layered keys of {user:42} together, in their
    // order; the address and the endpoint each alone, in order of first
    // appearance.
    assert_eq!(lines[SLOT_VECTORS.len()], "0,1,4|2|3", "{what}");
}

/// Keys for the grouping check: two of {user:42}, an address, an endpoint,
/// the third of {user:42}.
const GROUPED: [&str; 5] = [
    "rl:{user:42}:s",
    "rl:{user:42}:m",
    "rl:ip:203.0.113.7",
    "rl:endpoint:/search",
    "rl:{user:42}:h",
];

#[test]
fn python_keyslot_and_groups() {
    let libs = python_libs();
    let script = "import sys, limits\n\
                  keys, grouped = sys.argv[1:-5], sys.argv[-5:]\n\
                  for key in keys: print(limits.keyslot(key))\n\
                  print('|'.join(','.join(map(str, g)) for g in limits.slot_groups(grouped)))\n";
    let paths = std::env::join_paths([root().join("examples/python"), libs]).expect("PYTHONPATH");
    let out = run(
        Command::new("python3")
            .arg("-c")
            .arg(script)
            .args(SLOT_VECTORS.iter().map(|v| v.0))
            .args(GROUPED)
            .env("PYTHONPATH", paths)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        "limits.py keyslot",
        30,
    );
    check_slots(&out, "limits.py");
}
