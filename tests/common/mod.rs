//! A real redis-server with the freshly built module, on a free loopback
//! port, stopped when dropped.
//!
//! The server binary is `$REDIS_SERVER` (default `redis-server` on PATH).
//! The module is the `.so` that this very `cargo test` built, next to the
//! test binary; a missing server or module, or a module older than the
//! sources, fails the test loudly rather than skipping it.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

pub use redis::{Connection, Value};

/// The module built by this `cargo test` invocation.
pub fn module_path() -> PathBuf {
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
        let tmp = tempfile::Builder::new()
            .prefix("rl-test-")
            .tempdir()
            .expect("temp dir");
        let dir = tmp.path().to_path_buf();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let mut server = Server {
            child: None,
            port: 0,
            dir,
            _tmp: Some(tmp),
            extra,
            module_args: module_args.iter().map(|s| s.to_string()).collect(),
        };
        server.launch();
        server
    }

    fn launch(&mut self) {
        let so = module_path();
        let mut last_log = String::new();
        for _attempt in 0..5 {
            let port = free_port();
            let mut cmd = Command::new(server_binary());
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
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = cmd.spawn().unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}. Install redis-server (make test does) or set REDIS_SERVER",
                    server_binary()
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
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?;
        let con = client.get_connection_with_timeout(Duration::from_secs(2))?;
        con.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(con)
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
