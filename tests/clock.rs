//! The module's clock is the server's: under libfaketime (which shifts the
//! server's clock, but not a direct `clock_gettime` from the module) an
//! RL.THROTTLE key expires on the server's faked time; a replica of a
//! faked master keeps the master's time; and inside a transaction or a
//! script the module reads one instant, the server's own TIME (on servers
//! with `RedisModule_CachedMicroseconds`: Redis 7.2+, Valkey).
//!
//! The faked-clock tests always run Valkey 8.1.8 from `tmp/` (its libc
//! malloc works under libfaketime; jemalloc builds hang at start), whatever
//! `$REDIS_SERVER` says; a missing libfaketime or server fails them, naming
//! the command that installs it.

mod common;
use common::*;

use std::path::{Path, PathBuf};

const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
const INSTALL: &str = "scripts/deps.sh --test (or make test, which runs it)";

/// The faked start: 2026-03-28 22:59:50 UTC, in seconds since the epoch.
const FAKE_START: &str = "@2026-03-28 22:59:50";
const FAKE_START_S: i128 = 1_774_738_790;

/// The server binary these tests run under libfaketime.
fn faked_server_binary() -> PathBuf {
    let binary = Path::new(env!("CARGO_MANIFEST_DIR")).join("tmp/bin/valkey-server-8.1");
    assert!(
        binary.exists(),
        "{} is missing: run {INSTALL}, which installs Valkey 8.1.8 there",
        binary.display()
    );
    assert!(
        Path::new(LIBFAKETIME).exists(),
        "{LIBFAKETIME} is missing: run {INSTALL}, which installs Debian's faketime"
    );
    binary
}

/// Valkey 8.1.8 with libfaketime's `FAKETIME` set to `faketime`, in UTC.
fn faked_server(faketime: &str, extra: &[&str]) -> Server {
    Server::start_env(
        &faked_server_binary(),
        &[
            ("LD_PRELOAD", LIBFAKETIME),
            ("FAKETIME", faketime),
            ("TZ", "UTC"),
        ],
        extra,
    )
}

/// The server's TIME, in µs since the epoch.
fn server_time_us(con: &mut Connection) -> i128 {
    let (s, us): (i128, i128) = redis::cmd("TIME").query(con).expect("TIME");
    s * 1_000_000 + us
}

/// The PEXPIRETIME that RL.THROTTLE `key 0 1 60` gives a new key at `us`:
/// its one unit comes back 60 s later, rounded up to the millisecond.
fn expiry_of_one_unit_at(us: i128) -> i64 {
    ceil_to(us * 1_000 + 60 * NS_PER_S, NS_PER_MS)
}

#[test]
fn an_expiry_follows_the_servers_faked_clock() {
    let server = faked_server(FAKE_START, &["--save", "", "--appendonly", "no"]);
    let mut con = server.conn();
    let before = server_time_us(&mut con);
    assert!(
        (FAKE_START_S * 1_000_000..(FAKE_START_S + 60) * 1_000_000).contains(&before),
        "the server's TIME {before} µs is not seconds after FAKETIME={FAKE_START}: is libfaketime working?"
    );
    let reply = five(&mut con, &["RL.THROTTLE", "k", "0", "1", "60"]);
    let after = server_time_us(&mut con);
    assert_eq!(reply, [0, 1, 0, -1, 60]);
    let at = pexpiretime(&mut con, "k");
    let (earliest, latest) = (expiry_of_one_unit_at(before), expiry_of_one_unit_at(after));
    assert!(
        (earliest..=latest).contains(&at),
        "PEXPIRETIME {at} is not 60 s after the server's clock ({earliest}..={latest}); \
         the real clock gives {}: the module read another clock than the server's",
        ceil_to(unix_ns() + 60 * NS_PER_S, NS_PER_MS)
    );
    // The server itself agrees that the key lives 60 s on its clock (the
    // expiry is rounded up to the millisecond, PTTL's clock down).
    let pttl: i64 = redis::cmd("PTTL").arg("k").query(&mut con).unwrap();
    assert!((59_000..=60_001).contains(&pttl), "PTTL {pttl}");
}

#[test]
fn a_replica_keeps_the_faked_masters_time() {
    // The master a year ahead of the replica, which runs on the real clock.
    let master = faked_server(
        "+365d",
        &[
            "--save",
            "",
            "--appendonly",
            "no",
            "--repl-diskless-sync-delay",
            "0",
        ],
    );
    let mut con = master.conn();
    let replica = Server::start_env(
        &faked_server_binary(),
        &[],
        &[
            "--save",
            "",
            "--replicaof",
            "127.0.0.1",
            &master.port.to_string(),
        ],
    );
    let mut rcon = replica.conn();
    wait_until(20, "the replica to sync", || {
        info_field(&mut rcon, "replication", "master_link_status") == "up"
    });
    let before = server_time_us(&mut con);
    assert!(
        before > (unix_ns() / 1_000) + 300 * 86_400 * 1_000_000,
        "the master's TIME {before} µs is not a year ahead: is libfaketime working?"
    );
    five(&mut con, &["RL.THROTTLE", "k", "0", "1", "60"]);
    let after = server_time_us(&mut con);
    assert_eq!(wait_replicas(&mut con, 1, 5_000), 1, "WAIT");
    let at = pexpiretime(&mut con, "k");
    assert!(
        (expiry_of_one_unit_at(before)..=expiry_of_one_unit_at(after)).contains(&at),
        "the master's PEXPIRETIME {at} is not 60 s after its clock ({before}..={after} µs)"
    );
    assert_eq!(
        pexpiretime(&mut rcon, "k"),
        at,
        "the replica's PEXPIRETIME: the replicated command must carry the master's time"
    );
    assert_eq!(digest_value(&mut rcon, "k"), digest_value(&mut con, "k"));
}

/// True when the server under test gives modules its per-command time
/// (`RedisModule_CachedMicroseconds`: Redis 7.2 and newer, Valkey).
fn has_cached_microseconds(con: &mut Connection) -> bool {
    let info: String = redis::cmd("INFO").arg("server").query(con).unwrap();
    info.contains("valkey") || !info.contains("redis_version:7.0.")
}

#[test]
fn a_transaction_reads_one_instant_the_servers() {
    let server = Server::start();
    let mut con = server.conn();
    let cached = has_cached_microseconds(&mut con);
    // Two calls 20 ms apart inside one MULTI/EXEC, then the server's TIME.
    let sent = unix_ns() / 1_000;
    let (_, _, _, time): ([i64; 5], (), [i64; 5], (i128, i128)) = redis::pipe()
        .atomic()
        .cmd("RL.THROTTLE")
        .arg(&["a", "0", "1", "60"])
        .cmd("DEBUG")
        .arg(&["SLEEP", "0.02"])
        .cmd("RL.THROTTLE")
        .arg(&["b", "0", "1", "60"])
        .cmd("TIME")
        .query(&mut con)
        .expect("MULTI/EXEC");
    let received = unix_ns() / 1_000;
    let time = time.0 * 1_000_000 + time.1;
    let (a, b) = (pexpiretime(&mut con, "a"), pexpiretime(&mut con, "b"));
    if cached {
        // The module's now is the transaction's instant, to the µs: the one
        // TIME reports and the server expires keys by.
        assert_eq!(
            (a, b),
            (expiry_of_one_unit_at(time), expiry_of_one_unit_at(time))
        );
    } else {
        // Redis 7.0: the module reads the wall clock at each call.
        println!("no RedisModule_CachedMicroseconds: each call reads the wall clock");
        assert!(b - a >= 19, "{a} then {b}: 20 ms apart");
        assert!(expiry_of_one_unit_at(sent) <= a && b <= expiry_of_one_unit_at(received));
    }
}

#[test]
fn a_script_reads_one_instant_the_servers() {
    let server = Server::start();
    let mut con = server.conn();
    let cached = has_cached_microseconds(&mut con);
    // Two calls with some work between them inside one script, then the
    // server's TIME as the script sees it.
    let script = "redis.call('RL.THROTTLE', KEYS[1], 0, 1, 60) \
                  local x = 0 for i = 1, 1000000 do x = x + i end \
                  redis.call('RL.THROTTLE', KEYS[2], 0, 1, 60) \
                  return redis.call('TIME')";
    let (s, us): (i128, i128) = redis::cmd("EVAL")
        .arg(script)
        .arg(2)
        .arg("a")
        .arg("b")
        .query(&mut con)
        .expect("EVAL");
    let time = s * 1_000_000 + us;
    let (a, b) = (pexpiretime(&mut con, "a"), pexpiretime(&mut con, "b"));
    if cached {
        assert_eq!(
            (a, b),
            (expiry_of_one_unit_at(time), expiry_of_one_unit_at(time))
        );
    } else {
        println!("no RedisModule_CachedMicroseconds: each call reads the wall clock");
        assert!(a <= b, "{a} then {b}");
    }
}
