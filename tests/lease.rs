//! RL.LEASE and RL.RELEASE against a real server (issue 23): grants,
//! renewals, weights, the limit, releases; a crashed holder's slot freed
//! exactly at its lease's expiry, and the key gone with its last lease;
//! RL.INSPECT; LEASE specs in RL.ALLOW and RL.PEEK beside the four rate
//! kinds; bad input; replicas, the AOF, a failover, RDB, DUMP/RESTORE and
//! hostile payloads; cluster routing; INFO.
//!
//! Times in seconds use long ttls (minutes), so that every reply is exact:
//! a time counts down from a grant made after the test's `since`, so it can
//! be lower than the ttl only by the whole seconds elapsed since then (none
//! while a test takes less than a second; `assert_five` allows exactly
//! that). Only the tests of expiry itself use `MS` and short ttls, and wait
//! for the clock with bounded loops.

mod common;
use common::dump::{body_of, dump_body, module_id, rdb_version, reseal, varint};
use common::*;

use std::time::{Duration, Instant};

use redis::ConnectionLike;

/// The arity error of a command, as the server words it.
fn arity(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

const LEASE_ID_ERROR: &str = "ERR lease_id must be 1 to 128 bytes";
const AT_ERROR: &str =
    "ERR AT is accepted only from the master or the AOF: it carries the master's clock";

/// Asserts a five-field reply whose times are in seconds: limited, limit
/// and remaining exactly, and -1 and 0 as they are; any other time exactly
/// or less by at most the whole seconds elapsed since `since` (before the
/// grant that the time counts down to).
fn assert_five(got: [i64; 5], want: [i64; 5], since: Instant, what: &str) {
    let slack = since.elapsed().as_secs() as i64;
    assert_eq!(&got[..3], &want[..3], "{what}: {got:?}, want {want:?}");
    for i in 3..5 {
        let ok = match want[i] {
            -1 | 0 => got[i] == want[i],
            w => (w - slack..=w).contains(&got[i]),
        };
        assert!(ok, "{what}: {got:?}, want {want:?} (slack {slack} s)");
    }
}

/// Runs RL.LEASE calls in order, each reply checked by `assert_five`. A
/// table of cases, one row a call:
/// (RL.LEASE's arguments: key limit ttl lease_id [quantity],
///  [limited, limit, remaining, retry_after, reset_after]).
fn check(con: &mut Connection, since: Instant, calls: &[(&[&str], [i64; 5])]) {
    for (args, want) in calls {
        let args: Vec<&str> = ["RL.LEASE"].iter().chain(*args).copied().collect();
        assert_five(five(con, &args), *want, since, &format!("{args:?}"));
    }
}

/// `assert_five` for RL.ALLOW and RL.PEEK: every limit, the binding one
/// and its index.
fn assert_seven(got: &Seven, limits: &[[i64; 5]], index: i64, since: Instant, what: &str) {
    assert_eq!(got.index, index, "{what}: {got:?}");
    assert_eq!(got.limits.len(), limits.len(), "{what}: {got:?}");
    for (g, w) in got.limits.iter().zip(limits) {
        assert_five(*g, *w, since, what);
    }
    assert_eq!(
        got.binding,
        got.limits[index as usize - 1],
        "{what}: {got:?}"
    );
}

/// The five fields of a command sent through any connection (the cluster
/// client included), with arguments of any bytes.
fn five_bytes(con: &mut impl ConnectionLike, args: &[&[u8]]) -> [i64; 5] {
    let mut c = redis::cmd(std::str::from_utf8(args[0]).unwrap());
    for a in &args[1..] {
        c.arg(*a);
    }
    let v: Vec<i64> = c.query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    v.try_into()
        .unwrap_or_else(|v| panic!("{args:?}: not five integers: {v:?}"))
}

fn five_on(con: &mut impl ConnectionLike, args: &[&str]) -> [i64; 5] {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    five_bytes(con, &args)
}

/// RL.RELEASE's reply: 1 released, 0 not.
fn release(con: &mut impl ConnectionLike, key: &str, id: &[u8]) -> i64 {
    redis::cmd("RL.RELEASE")
        .arg(key)
        .arg(id)
        .query(con)
        .unwrap_or_else(|e| panic!("RL.RELEASE {key} {id:?}: {e}"))
}

/// An integer field of RL.INSPECT's reply.
fn int(fields: &[(String, Value)], name: &str) -> i64 {
    match fields.iter().find(|(n, _)| n == name) {
        Some((_, Value::Int(n))) => *n,
        other => panic!("{name}: {other:?} in {fields:?}"),
    }
}

/// One holder as RL.INSPECT lists it: id, weight, ms left.
type Holder = (Vec<u8>, i64, i64);

/// RL.INSPECT's `holders` of a lease key, soonest to expire first.
fn holders_of(fields: &[(String, Value)]) -> Vec<Holder> {
    let Some((_, Value::Array(items))) = fields.iter().find(|(n, _)| n == "holders") else {
        panic!("no holders in {fields:?}")
    };
    items
        .iter()
        .map(|h| match h {
            Value::Array(t) => match t.as_slice() {
                [Value::BulkString(id), Value::Int(w), Value::Int(ms)] => (id.clone(), *w, *ms),
                other => panic!("a holder: {other:?}"),
            },
            other => panic!("a holder: {other:?}"),
        })
        .collect()
}

fn holders(con: &mut Connection, key: &str) -> Vec<Holder> {
    let fields = inspect(con, key).unwrap_or_else(|| panic!("{key} is missing"));
    holders_of(&fields)
}

/// The holders' ids and weights, without the time left.
fn ids_and_weights(con: &mut Connection, key: &str) -> Vec<(Vec<u8>, i64)> {
    holders(con, key)
        .into_iter()
        .map(|(id, w, _)| (id, w))
        .collect()
}

/// A key's value and expiry, to tell that a call changed nothing.
fn state(con: &mut Connection, key: &str) -> (String, i64) {
    (digest_value(con, key), pexpiretime(con, key))
}

/// Sleeps until the wall clock reaches `ns` (since the epoch).
fn sleep_until(ns: i128) {
    let now = unix_ns();
    if ns > now {
        std::thread::sleep(Duration::from_nanos((ns - now) as u64));
    }
}

#[test]
fn grant_renew_weights_and_the_limit() {
    let server = Server::start();
    let mut con = server.conn();
    let since = Instant::now();
    check(
        &mut con,
        since,
        &[
            // A new lease: remaining = limit - held, reset_after = its ttl.
            (&["k", "3", "600", "a"], [0, 3, 2, -1, 600]),
            // The same id again renews it: never two slots.
            (&["k", "3", "600", "a"], [0, 3, 2, -1, 600]),
            (&["k", "3", "600", "a"], [0, 3, 2, -1, 600]),
            // A weight of 2 for five minutes: full. The reset is a's, the
            // latest.
            (&["k", "3", "300", "b", "2"], [0, 3, 0, -1, 600]),
            // Full: a new lease waits until enough of the others expire;
            // one unit must free up, b's two do first, in 300 s.
            (&["k", "3", "600", "c"], [1, 3, 0, 300, 600]),
            (&["k", "3", "600", "c", "3"], [1, 3, 0, 600, 600]),
            // More than the limit can never fit.
            (&["k", "3", "600", "c", "4"], [1, 3, 0, -1, 600]),
            // A refused renewal (a's one and b's three would be four)
            // leaves b's lease as it was: its own units free nothing for
            // itself, a's do.
            (&["k", "3", "900", "b", "3"], [1, 3, 0, 600, 600]),
        ],
    );
    assert_eq!(
        ids_and_weights(&mut con, "k"),
        [(b"b".to_vec(), 2), (b"a".to_vec(), 1)],
        "b's refused renewal changed it"
    );
    let b_left = holders(&mut con, "k")[0].2;
    assert!(
        (300_000 - ms_since(since)..=300_000).contains(&b_left),
        "{b_left}"
    );
    check(
        &mut con,
        since,
        &[
            (&["k", "3", "600", "c"], [1, 3, 0, 300, 600]),
            // A renewal with less weight fits, and takes the new ttl.
            (&["k", "3", "600", "b", "1"], [0, 3, 1, -1, 600]),
        ],
    );
    assert_eq!(
        ids_and_weights(&mut con, "k"),
        [(b"a".to_vec(), 1), (b"b".to_vec(), 1)]
    );
    // Peeks (quantity 0) answer and change nothing.
    let before = state(&mut con, "k");
    check(
        &mut con,
        since,
        &[
            (&["k", "3", "600", "c", "0"], [0, 3, 1, -1, 600]),
            (&["k", "3", "600", "a", "0"], [0, 3, 1, -1, 600]),
        ],
    );
    assert_eq!(state(&mut con, "k"), before, "a peek changed the key");
    check(
        &mut con,
        since,
        &[
            // A renewal with more weight fits when the others leave room.
            (&["k", "3", "900", "a", "2"], [0, 3, 0, -1, 900]),
            (&["k", "3", "900", "c"], [1, 3, 0, 600, 900]),
        ],
    );
    assert_eq!(
        ids_and_weights(&mut con, "k"),
        [(b"b".to_vec(), 1), (b"a".to_vec(), 2)]
    );

    check(
        &mut con,
        since,
        &[
            // A lease may weigh the whole limit.
            (&["w", "5", "600", "big", "5"], [0, 5, 0, -1, 600]),
            (&["w", "5", "600", "small"], [1, 5, 0, 600, 600]),
            (&["w", "5", "600", "big", "4"], [0, 5, 1, -1, 600]),
            (&["w", "5", "600", "small"], [0, 5, 0, -1, 600]),
            // The largest limit.
            (
                &["m", "1000000", "600", "all", "1000000"],
                [0, 1_000_000, 0, -1, 600],
            ),
            (&["m", "1000000", "600", "one"], [1, 1_000_000, 0, 600, 600]),
            // A peek on a missing key: the whole limit, nothing held, no
            // key made.
            (&["none", "3", "600", "a", "0"], [0, 3, 3, -1, 0]),
            (&["none", "3", "600", "a", "4"], [1, 3, 3, -1, 0]),
        ],
    );
    assert!(!exists(&mut con, "none"));
    // MS: the same in milliseconds.
    let since_ms = Instant::now();
    let r = five(&mut con, &["RL.LEASE", "ms", "2", "90000", "a", "1", "MS"]);
    assert_eq!(r, [0, 2, 1, -1, 90_000]);
    let r = five(&mut con, &["RL.LEASE", "ms", "2", "30000", "b", "1", "MS"]);
    assert_eq!(&r[..4], &[0, 2, 0, -1], "{r:?}");
    assert!(
        (90_000 - ms_since(since_ms)..=90_000).contains(&r[4]),
        "{r:?}"
    );
    let r = five(&mut con, &["RL.LEASE", "ms", "2", "30000", "c", "1", "MS"]);
    assert_eq!(&r[..3], &[1, 2, 0], "{r:?}");
    assert!(
        (30_000 - ms_since(since_ms)..=30_000).contains(&r[3]),
        "{r:?}"
    );
    assert!(
        (90_000 - ms_since(since_ms)..=90_000).contains(&r[4]),
        "{r:?}"
    );
}

#[test]
fn release_once_then_zero_never_below_zero_and_never_creating() {
    let server = Server::start();
    let mut con = server.conn();
    let since = Instant::now();
    check(
        &mut con,
        since,
        &[
            (&["k", "2", "600", "a"], [0, 2, 1, -1, 600]),
            (&["k", "2", "300", "b"], [0, 2, 0, -1, 600]),
        ],
    );
    assert_eq!(release(&mut con, "k", b"a"), 1);
    // Twice is safe: nothing more is given back.
    assert_eq!(release(&mut con, "k", b"a"), 0);
    assert_eq!(release(&mut con, "k", b"a"), 0);
    check(
        &mut con,
        since,
        &[
            // Only b holds: one slot free, not two. The key's expiry never
            // moves earlier, and a release records nothing new.
            (&["k", "2", "600", "c", "0"], [0, 2, 1, -1, 300]),
            // Two units do not fit beside b.
            (&["k", "2", "600", "c", "2"], [1, 2, 1, 300, 300]),
        ],
    );
    // An id never granted, or released already: 0, and nothing changes:
    // not the key, not the dirty counter, not a WATCH on the key.
    let before = state(&mut con, "k");
    let changes = dirty(&mut con);
    let _: () = redis::cmd("WATCH").arg("k").query(&mut con).unwrap();
    assert_eq!(release(&mut con, "k", b"never"), 0);
    assert_eq!(release(&mut con, "k", b"A"), 0);
    assert_eq!(release(&mut con, "k", b"a"), 0);
    let _: () = redis::cmd("MULTI").query(&mut con).unwrap();
    let _: String = redis::cmd("PING").query(&mut con).unwrap();
    let exec: Value = redis::cmd("EXEC").query(&mut con).unwrap();
    assert_eq!(
        exec,
        Value::Array(vec![Value::SimpleString("PONG".into())]),
        "a release that found nothing touched the WATCHed key"
    );
    assert_eq!(dirty(&mut con), changes, "a release that found nothing");
    assert_eq!(state(&mut con, "k"), before);
    // A released id can take a lease again.
    check(
        &mut con,
        since,
        &[(&["k", "2", "600", "a"], [0, 2, 0, -1, 600])],
    );
    assert_eq!(release(&mut con, "k", b"a"), 1);
    // Releasing the last lease deletes the key.
    assert_eq!(release(&mut con, "k", b"b"), 1);
    assert!(!exists(&mut con, "k"));
    assert_eq!(pexpiretime(&mut con, "k"), -2);
    assert_eq!(release(&mut con, "k", b"b"), 0);
    // A missing key: 0, and no key is made.
    assert_eq!(release(&mut con, "missing", b"a"), 0);
    assert_eq!(dbsize(&mut con), 0);
    // Held never went below 0: the whole limit, and no more.
    check(
        &mut con,
        since,
        &[
            (&["k", "2", "600", "x", "2"], [0, 2, 0, -1, 600]),
            (&["k", "2", "600", "y"], [1, 2, 0, 600, 600]),
        ],
    );
}

#[test]
fn a_key_of_another_type_is_wrongtype_and_unchanged() {
    let server = Server::start();
    let mut con = server.conn();
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    let _: () = redis::cmd("SET").arg("s").arg("x").query(&mut con).unwrap();
    five(&mut con, &["RL.SLIDE", "l", "5", "600"]);
    five(&mut con, &["RL.LEASE", "e", "5", "600", "a"]);
    for key in ["s", "l"] {
        let before = state(&mut con, key);
        assert_errors(
            &mut con,
            &[
                (&["RL.RELEASE", key, "a"], wrongtype),
                (&["RL.LEASE", key, "5", "600", "a"], wrongtype),
                (&["RL.LEASE", key, "5", "600", "a", "0"], wrongtype),
                (
                    &["RL.ALLOW", "1", key, "LEASE", "5", "600", "ID", "a"],
                    wrongtype,
                ),
                (&["RL.PEEK", "1", key, "LEASE", "5", "600"], wrongtype),
            ],
        );
        assert_eq!(state(&mut con, key), before, "{key}");
    }
    // A lease key under another kind's command or spec.
    let before = state(&mut con, "e");
    assert_errors(
        &mut con,
        &[
            (&["RL.SLIDE", "e", "5", "600"], wrongtype),
            (&["RL.THROTTLE", "e", "5", "1", "600"], wrongtype),
            (&["RL.ALLOW", "1", "e", "SLICE", "5", "600", "6"], wrongtype),
            (&["RL.REFUND", "e", "SLIDE", "5", "600", "1"], wrongtype),
        ],
    );
    assert_eq!(state(&mut con, "e"), before);
}

#[test]
fn a_crashed_holder_frees_its_slot_exactly_at_its_expiry() {
    let server = Server::start();
    let mut con = server.conn();
    // The holder takes the only slot for 1.5 s and never comes back.
    let ttl = 1_500 * NS_PER_MS;
    let (r, sent, received) = timed_five(
        &mut con,
        &["RL.LEASE", "c", "1", "1500", "crashed", "1", "MS"],
    );
    assert_eq!(r, [0, 1, 0, -1, 1500]);
    // Its lease expires at E, between sent and received plus 1.5 s; the
    // key's expiry is E rounded up to the ms.
    let p = pexpiretime(&mut con, "c");
    let range = ceil_to(sent + ttl, NS_PER_MS)..=ceil_to(received + ttl, NS_PER_MS);
    assert!(range.contains(&p), "PEXPIRETIME {p} not in {range:?}");
    let holders = holders(&mut con, "c");
    assert_eq!(holders.len(), 1);
    assert_eq!((&holders[0].0[..], holders[0].1), (&b"crashed"[..], 1));
    assert!((1..=1500).contains(&holders[0].2), "{holders:?}");
    // E is in ((p - 1) ms, p ms]. Other holders are refused while it
    // counts: each call decided before (p - 1) ms, closer and closer to it,
    // is told to retry exactly when E comes (rounded up to the ms).
    let p_ns = p as i128 * NS_PER_MS;
    let mut refused = 0;
    for lead_ms in [1000, 300, 100, 30, 10] {
        sleep_until(p_ns - lead_ms * NS_PER_MS);
        let (r, sent, received) =
            timed_five(&mut con, &["RL.LEASE", "c", "1", "1500", "next", "1", "MS"]);
        if received >= p_ns - NS_PER_MS {
            println!("the call {lead_ms} ms ahead was answered too late to count");
            continue;
        }
        assert_eq!(&r[..3], &[1, 1, 0], "{lead_ms} ms ahead: {r:?}");
        let retry =
            ceil_to(p_ns - NS_PER_MS - received, NS_PER_MS)..=ceil_to(p_ns - sent, NS_PER_MS);
        assert!(
            retry.contains(&r[3]),
            "{lead_ms} ms ahead: {r:?}, not in {retry:?}"
        );
        assert_eq!(r[4], r[3], "one lease: it is the reset too");
        refused += 1;
    }
    assert!(
        refused >= 3,
        "only {refused} calls before the expiry: is the machine overloaded?"
    );
    // The refusals changed nothing.
    assert_eq!(pexpiretime(&mut con, "c"), p);
    // From E on the slot is free: granted, for the new holder's own ttl.
    sleep_until(p_ns + NS_PER_MS);
    let r = five(&mut con, &["RL.LEASE", "c", "1", "1500", "next", "1", "MS"]);
    assert_eq!(r, [0, 1, 0, -1, 1500]);
    assert_eq!(ids_and_weights(&mut con, "c"), [(b"next".to_vec(), 1)]);
    // The crashed holder's lease is gone: releasing it gives nothing back.
    assert_eq!(release(&mut con, "c", b"crashed"), 0);
    assert_eq!(ids_and_weights(&mut con, "c"), [(b"next".to_vec(), 1)]);
    assert_eq!(release(&mut con, "c", b"next"), 1);
    assert!(!exists(&mut con, "c"));
}

#[test]
fn the_key_expires_with_its_last_lease_and_its_release() {
    let server = Server::start();
    let mut con = server.conn();
    let (r, ..) = timed_five(&mut con, &["RL.LEASE", "k", "5", "800", "a", "1", "MS"]);
    assert_eq!(r, [0, 5, 4, -1, 800]);
    let (r, sent_b, received_b) =
        timed_five(&mut con, &["RL.LEASE", "k", "5", "2500", "b", "2", "MS"]);
    assert_eq!(r, [0, 5, 2, -1, 2500]);
    // The key's expiry is the latest lease's: b's.
    let ttl_b = 2_500 * NS_PER_MS;
    let p = pexpiretime(&mut con, "k");
    let range = ceil_to(sent_b + ttl_b, NS_PER_MS)..=ceil_to(received_b + ttl_b, NS_PER_MS);
    assert!(range.contains(&p), "PEXPIRETIME {p} not in {range:?}");
    // a renews for less time: the key's expiry stays b's (it only moves
    // later), and the reply's reset is b's.
    let (r, _, received_a) = timed_five(&mut con, &["RL.LEASE", "k", "5", "300", "a", "1", "MS"]);
    assert_eq!(&r[..4], &[0, 5, 2, -1], "{r:?}");
    assert!((1..=2500).contains(&r[4]), "{r:?}");
    assert_eq!(pexpiretime(&mut con, "k"), p);
    // Once a expired, the key holds b alone, until p.
    sleep_until(received_a + 300 * NS_PER_MS + NS_PER_MS);
    let fields = inspect(&mut con, "k").expect("k lives until b expires");
    assert_eq!(
        (int(&fields, "held"), int(&fields, "leases")),
        (2, 1),
        "{fields:?}"
    );
    assert_eq!(
        holders_of(&fields)
            .into_iter()
            .map(|(id, w, _)| (id, w))
            .collect::<Vec<_>>(),
        [(b"b".to_vec(), 2)]
    );
    let r = five(&mut con, &["RL.LEASE", "k", "5", "2500", "c", "0", "MS"]);
    assert_eq!(&r[..4], &[0, 5, 3, -1], "{r:?}");
    // Then the key disappears by itself, at p and not before.
    let p_ns = p as i128 * NS_PER_MS;
    sleep_until(p_ns - 200 * NS_PER_MS);
    let sent = unix_ns();
    let there = exists(&mut con, "k");
    if unix_ns() < p_ns {
        assert!(there, "k was gone before {p} (asked at {sent} ns)");
    }
    wait_until(10, "k to expire with its last lease", || {
        !exists(&mut con, "k")
    });
    assert!(unix_ns() > p_ns, "k was gone before its expiry {p}");
    assert_eq!(pexpiretime(&mut con, "k"), -2);
    assert!(inspect(&mut con, "k").is_none());
    assert_eq!(dbsize(&mut con), 0);

    // Releasing the last unexpired lease deletes the key, even while it
    // keeps expired leases not yet dropped.
    let r = five(&mut con, &["RL.LEASE", "r", "5", "100", "short", "1", "MS"]);
    assert_eq!(r, [0, 5, 4, -1, 100]);
    let (r, ..) = timed_five(
        &mut con,
        &["RL.LEASE", "r", "5", "600000", "long", "1", "MS"],
    );
    assert_eq!(r, [0, 5, 3, -1, 600_000]);
    std::thread::sleep(Duration::from_millis(150));
    let fields = inspect(&mut con, "r").unwrap();
    assert_eq!(
        (int(&fields, "held"), int(&fields, "leases")),
        (1, 1),
        "{fields:?}"
    );
    assert_eq!(
        release(&mut con, "r", b"short"),
        0,
        "expired: nothing to release"
    );
    assert_eq!(release(&mut con, "r", b"long"), 1);
    assert!(!exists(&mut con, "r"));
    assert_eq!(dbsize(&mut con), 0);
}

#[test]
fn inspect_lists_the_holders_soonest_first_and_at_most_100() {
    let server = Server::start();
    let mut con = server.conn();
    let since = Instant::now();
    five(&mut con, &["RL.LEASE", "i", "10", "300", "a", "2"]);
    five(&mut con, &["RL.LEASE", "i", "10", "600", "b"]);
    five(&mut con, &["RL.LEASE", "i", "10", "100", "c"]);
    // Any bytes make an id.
    let binary: &[u8] = b"\x00\xff id\r\n";
    five_bytes(&mut con, &[b"RL.LEASE", b"i", b"10", b"450", binary, b"3"]);
    let fields = inspect(&mut con, "i").unwrap();
    let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["type", "ttl", "memory", "held", "leases", "holders"]
    );
    assert_eq!(text(&fields[0].1), "lease");
    let elapsed = ms_since(since);
    let ttl = int(&fields, "ttl");
    assert!((600_000 - elapsed..=600_000).contains(&ttl), "{fields:?}");
    assert_eq!(int(&fields, "memory"), memory_usage(&mut con, "i"));
    assert_eq!((int(&fields, "held"), int(&fields, "leases")), (7, 4));
    let holders = holders_of(&fields);
    let want: [(&[u8], i64, i64); 4] = [
        (b"c", 1, 100_000),
        (b"a", 2, 300_000),
        (binary, 3, 450_000),
        (b"b", 1, 600_000),
    ];
    assert_eq!(holders.len(), 4, "{holders:?}");
    for ((id, w, ms), (want_id, want_w, want_ms)) in holders.iter().zip(want) {
        assert_eq!((&id[..], *w), (want_id, want_w), "{holders:?}");
        assert!((want_ms - elapsed..=want_ms).contains(ms), "{holders:?}");
    }
    // The binary id is released by its bytes.
    assert_eq!(release(&mut con, "i", binary), 1);
    assert_eq!(release(&mut con, "i", b"\x00\xff id"), 0);
    assert_eq!(int(&inspect(&mut con, "i").unwrap(), "held"), 4);

    // 150 leases, the n-th for 1000 + n seconds: 100 holders listed, the
    // soonest, in order.
    let mut pipe = redis::pipe();
    for n in 0..150 {
        pipe.cmd("RL.LEASE")
            .arg("cap")
            .arg(1000)
            .arg(1000 + n)
            .arg(format!("h{n:03}"))
            .ignore();
    }
    let _: () = pipe.query(&mut con).unwrap();
    let fields = inspect(&mut con, "cap").unwrap();
    assert_eq!((int(&fields, "held"), int(&fields, "leases")), (150, 150));
    let listed: Vec<(Vec<u8>, i64)> = holders_of(&fields)
        .into_iter()
        .map(|(id, w, _)| (id, w))
        .collect();
    let want: Vec<(Vec<u8>, i64)> = (0..100)
        .map(|n| (format!("h{n:03}").into_bytes(), 1))
        .collect();
    assert_eq!(listed, want);
    // Without the 50 soonest, the other 100, all of them.
    for n in 0..50 {
        assert_eq!(release(&mut con, "cap", format!("h{n:03}").as_bytes()), 1);
    }
    let fields = inspect(&mut con, "cap").unwrap();
    assert_eq!((int(&fields, "held"), int(&fields, "leases")), (100, 100));
    let listed: Vec<Vec<u8>> = holders_of(&fields).into_iter().map(|h| h.0).collect();
    let want: Vec<Vec<u8>> = (50..150).map(|n| format!("h{n:03}").into_bytes()).collect();
    assert_eq!(listed, want);
    // A missing key is nil.
    assert!(inspect(&mut con, "none").is_none());
}

/// The four rate kinds as RL.ALLOW specs, each of capacity 5.
fn rate_specs() -> [(&'static str, Vec<&'static str>); 4] {
    [
        // capacity max_burst + 1 = 5, one unit per 120 s
        ("throttle", vec!["THROTTLE", "4", "5", "600"]),
        ("slide", vec!["SLIDE", "5", "600"]),
        ("slice", vec!["SLICE", "5", "600", "6"]),
        ("quota", vec!["QUOTA", "5", "YEAR"]),
    ]
}

/// `RL.ALLOW` or `RL.PEEK` of two keys: a rate key under `rate` and a
/// lease key under `LEASE lease...`, then `tail`.
fn allow2<'a>(
    command: &'a str,
    rate_key: &'a str,
    lease_key: &'a str,
    rate: &[&'a str],
    lease: &[&'a str],
    tail: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![command, "2", rate_key, lease_key];
    args.extend_from_slice(rate);
    args.push("LEASE");
    args.extend_from_slice(lease);
    args.extend_from_slice(tail);
    args
}

#[test]
fn allow_takes_a_rate_limit_and_a_slot_together_or_neither() {
    let server = Server::start();
    let mut con = server.conn();
    let since = Instant::now();
    let kinds = rate_specs();
    let rate_keys: Vec<String> = kinds
        .iter()
        .map(|(k, _)| format!("{{m}}rate:{k}"))
        .collect();

    // Each kind beside one pool of four slots: both take, one call each.
    for (n, ((kind, spec), rate_key)) in kinds.iter().zip(&rate_keys).enumerate() {
        let id = format!("job{n}");
        let call = allow2(
            "RL.ALLOW",
            rate_key,
            "{m}pool",
            spec,
            &["4", "600"],
            &["ID", &id],
        );
        let r = seven(&mut con, &call);
        assert_eq!(&r.limits[0][..4], &[0, 5, 4, -1], "{kind}: {r:?}");
        // The pool has the least remaining: it binds.
        assert_five(r.limits[1], [0, 4, 3 - n as i64, -1, 600], since, kind);
        assert_eq!((r.index, r.binding), (2, r.limits[1]), "{kind}: {r:?}");
    }
    assert_eq!(
        ids_and_weights(&mut con, "{m}pool"),
        (0..4)
            .map(|n| (format!("job{n}").into_bytes(), 1))
            .collect::<Vec<_>>()
    );
    // The pool is full: a fifth job is refused, and no rate key records a
    // unit (nor is a new one made).
    for ((kind, spec), rate_key) in kinds.iter().zip(&rate_keys) {
        let before = state(&mut con, rate_key);
        let call = allow2(
            "RL.ALLOW",
            rate_key,
            "{m}pool",
            spec,
            &["4", "600"],
            &["ID", "job9"],
        );
        let r = seven(&mut con, &call);
        assert_eq!(&r.limits[0][..4], &[0, 5, 3, -1], "{kind}: {r:?}");
        assert_seven(&r, &[r.limits[0], [1, 4, 0, 600, 600]], 2, since, kind);
        assert_eq!(
            state(&mut con, rate_key),
            before,
            "{kind}: a unit was taken"
        );
        let fresh = format!("{{m}}fresh:{kind}");
        let call = allow2(
            "RL.ALLOW",
            &fresh,
            "{m}pool",
            spec,
            &["4", "600"],
            &["ID", "job9"],
        );
        let r = seven(&mut con, &call);
        assert_eq!(&r.limits[0][..4], &[0, 5, 4, -1], "{kind}: {r:?}");
        assert_eq!(r.limits[1][..3], [1, 4, 0], "{kind}: {r:?}");
        assert!(
            !exists(&mut con, &fresh),
            "{kind}: {fresh} made by a refused call"
        );
    }
    // A holder renews through RL.ALLOW, which takes its rate unit too.
    let call = allow2(
        "RL.ALLOW",
        &rate_keys[1],
        "{m}pool",
        &kinds[1].1,
        &["4", "900"],
        &["ID", "job1"],
    );
    let r = seven(&mut con, &call);
    assert_seven(
        &r,
        &[[0, 5, 3, -1, 600], [0, 4, 0, -1, 900]],
        2,
        since,
        "renewal",
    );
    assert_eq!(
        ids_and_weights(&mut con, "{m}pool"),
        [0, 2, 3, 1]
            .map(|n| (format!("job{n}").into_bytes(), 1))
            .to_vec()
    );
    let left = pexpiretime(&mut con, "{m}pool") - (unix_ns() / NS_PER_MS) as i64;
    assert!(
        left > 600_000,
        "the pool lives as long as job1's renewal: {left} ms"
    );

    // A refused rate limit takes no slot: each kind full, beside a new
    // lease key and beside one with a holder.
    five(&mut con, &["RL.LEASE", "{m}held", "3", "600", "owner"]);
    for (kind, spec) in &kinds {
        let full = format!("{{m}}full:{kind}");
        let mut fill = vec!["RL.ALLOW", "1", &full];
        fill.extend_from_slice(spec);
        fill.extend_from_slice(&["QUANTITY", "5"]);
        assert_eq!(seven(&mut con, &fill).binding[..3], [0, 5, 0], "{kind}");
        let slots = format!("{{m}}slots:{kind}");
        let r = seven(
            &mut con,
            &allow2("RL.ALLOW", &full, &slots, spec, &["3", "600"], &["ID", "w"]),
        );
        assert_eq!(
            (r.index, r.limits[0][..3].to_vec()),
            (1, vec![1, 5, 0]),
            "{kind}: {r:?}"
        );
        assert_five(r.limits[1], [0, 3, 2, -1, 600], since, kind);
        assert!(
            !exists(&mut con, &slots),
            "{kind}: {slots} made by a refused call"
        );
        // Neither a new lease nor a renewal on a key with a holder.
        let before = state(&mut con, "{m}held");
        // (id, ttl, what the lease key would leave if the call were allowed)
        for (id, ttl, remaining) in [("w", "600", 1), ("owner", "900", 2)] {
            let r = seven(
                &mut con,
                &allow2("RL.ALLOW", &full, "{m}held", spec, &["3", ttl], &["ID", id]),
            );
            assert_eq!(r.index, 1, "{kind}: {r:?}");
            assert_eq!(r.limits[1][..4], [0, 3, remaining, -1], "{kind}: {r:?}");
        }
        assert_eq!(
            state(&mut con, "{m}held"),
            before,
            "{kind}: the lease key changed"
        );
    }
    assert_eq!(
        ids_and_weights(&mut con, "{m}held"),
        [(b"owner".to_vec(), 1)]
    );

    // QUANTITY is the lease's weight; 0 peeks; more than the limit never
    // fits. A table of cases, one row a call of
    // `RL.ALLOW 1 {m}w LEASE 5 600 ID x QUANTITY q`:
    // (q, the lease limit's [limited, limit, remaining, retry_after, reset_after]).
    let weighted = |con: &mut Connection, cases: &[(&str, [i64; 5])]| {
        for (q, want) in cases {
            let args = [
                "RL.ALLOW", "1", "{m}w", "LEASE", "5", "600", "ID", "x", "QUANTITY", q,
            ];
            assert_seven(&seven(con, &args), &[*want], 1, since, q);
        }
    };
    weighted(&mut con, &[("3", [0, 5, 2, -1, 600])]);
    let before = state(&mut con, "{m}w");
    weighted(
        &mut con,
        &[("0", [0, 5, 2, -1, 600]), ("6", [1, 5, 2, -1, 600])],
    );
    assert_eq!(state(&mut con, "{m}w"), before);
    weighted(&mut con, &[("5", [0, 5, 0, -1, 600])]);
    assert_eq!(ids_and_weights(&mut con, "{m}w"), [(b"x".to_vec(), 5)]);
}

#[test]
fn id_rules_peek_and_refund() {
    let server = Server::start();
    let mut con = server.conn();
    let since = Instant::now();
    let long_id = "i".repeat(129);
    assert_errors(
        &mut con,
        &[
            (
                &["RL.ALLOW", "1", "c", "LEASE", "1", "600"],
                "ERR a LEASE spec needs the ID option: ID lease_id",
            ),
            (
                &["RL.ALLOW", "2", "r", "c", "SLIDE", "5", "60", "LEASE", "1", "600", "QUANTITY", "1"],
                "ERR a LEASE spec needs the ID option: ID lease_id",
            ),
            (
                &["RL.ALLOW", "1", "r", "SLIDE", "5", "60", "ID", "x"],
                "ERR ID is given but no spec takes it",
            ),
            (
                &["RL.PEEK", "1", "r", "SLIDE", "5", "60", "ID", "x"],
                "ERR ID is given but no spec takes it",
            ),
            (
                &["RL.ALLOW", "1", "c", "LEASE", "1", "600", "ID", "x", "ID", "y"],
                "ERR ID is given more than once",
            ),
            (&["RL.ALLOW", "1", "c", "LEASE", "1", "600", "ID", ""], LEASE_ID_ERROR),
            (&["RL.ALLOW", "1", "c", "LEASE", "1", "600", "ID", &long_id], LEASE_ID_ERROR),
            (&["RL.PEEK", "1", "c", "LEASE", "1", "600", "ID", ""], LEASE_ID_ERROR),
            (
                &["RL.ALLOW", "1", "c", "LEASE", "0", "600", "ID", "x"],
                "ERR spec 1 (LEASE): limit must be an integer from 1 to 1000000",
            ),
            (
                &["RL.ALLOW", "2", "r", "c", "SLIDE", "5", "60", "LEASE", "1", "0", "ID", "x"],
                "ERR spec 2 (LEASE): ttl must be an integer from 1 to 315360000 (seconds)",
            ),
            (
                &["RL.PEEK", "1", "c", "LEASE", "1", "315360000001", "MS"],
                "ERR spec 1 (LEASE): ttl must be an integer from 1 to 315360000000 (milliseconds, with MS)",
            ),
            (
                &["RL.ALLOW", "2", "r", "c", "SLIDE", "5", "60", "LEASE", "1"],
                "ERR spec 2 (LEASE): expects limit ttl",
            ),
            (
                &["RL.REFUND", "c", "LEASE", "1", "600", "1"],
                "ERR RL.REFUND does not take a LEASE spec",
            ),
            (
                &["RL.REFUND", "c", "LEASE", "1", "600", "0"],
                "ERR RL.REFUND does not take a LEASE spec",
            ),
        ],
    );
    assert_eq!(dbsize(&mut con), 0, "an error made a key");

    // job1 holds the only slot.
    check(
        &mut con,
        since,
        &[(&["{p}c", "1", "600", "job1"], [0, 1, 0, -1, 600])],
    );
    let before = state(&mut con, "{p}c");
    let full = [1, 1, 0, 600, 600];
    let renewal = [0, 1, 0, -1, 600];
    let held = [0, 1, 0, -1, 600];
    // A table of cases, one row a call of `RL.PEEK 1 {p}c LEASE 1 600`
    // with the options `tail`: (tail, the lease limit's [limited, limit,
    // remaining, retry_after, reset_after]).
    let alone: [(&[&str], [i64; 5]); 4] = [
        // Without ID, the question is a new lease: refused until job1
        // expires.
        (&[], full),
        (&["ID", "job2"], full),
        // With the holder's id, a renewal: it fits.
        (&["ID", "job1"], renewal),
        // QUANTITY 0: what is held now.
        (&["QUANTITY", "0"], held),
    ];
    for (tail, want) in alone {
        let mut args = vec!["RL.PEEK", "1", "{p}c", "LEASE", "1", "600"];
        args.extend_from_slice(tail);
        let what = format!("{tail:?}");
        assert_seven(&seven(&mut con, &args), &[want], 1, since, &what);
    }
    // Beside a rate limit, `SLIDE 5 60` on {p}r: (tail, the rate limit's
    // five fields and the lease limit's; the lease limit binds).
    let beside: [(&[&str], [[i64; 5]; 2]); 2] = [
        (&["ID", "job1"], [[0, 5, 4, -1, 60], renewal]),
        (&[], [[0, 5, 4, -1, 60], full]),
    ];
    for (tail, want) in beside {
        let args = allow2(
            "RL.PEEK",
            "{p}r",
            "{p}c",
            &["SLIDE", "5", "60"],
            &["1", "600"],
            tail,
        );
        let what = format!("peek beside SLIDE, {tail:?}");
        assert_seven(&seven(&mut con, &args), &want, 2, since, &what);
    }
    // Nothing changed, nothing was made.
    assert_eq!(state(&mut con, "{p}c"), before);
    assert!(!exists(&mut con, "{p}r"));
    // A missing key: a new lease fits, and stays missing.
    let r = seven(&mut con, &["RL.PEEK", "1", "{p}none", "LEASE", "3", "600"]);
    assert_seven(&r, &[[0, 3, 2, -1, 600]], 1, since, "missing key");
    assert!(!exists(&mut con, "{p}none"));
    // RL.PEEK runs where writes are refused: in a read-only script.
    let r: Value = redis::cmd("EVAL_RO")
        .arg("return redis.call('RL.PEEK', 1, KEYS[1], 'LEASE', 1, 600, 'ID', 'job1')")
        .arg(1)
        .arg("{p}c")
        .query(&mut con)
        .unwrap();
    let r = parse_seven(&r).expect("seven fields");
    assert_seven(&r, &[renewal], 1, since, "EVAL_RO");
}

#[test]
fn bad_input_names_each_argument() {
    let server = Server::start();
    let mut con = server.conn();
    let limit = "ERR limit must be an integer from 1 to 1000000";
    let ttl = "ERR ttl must be an integer from 1 to 315360000 (seconds)";
    let ttl_ms = "ERR ttl must be an integer from 1 to 315360000000 (milliseconds, with MS)";
    let quantity = "ERR quantity must be an integer from 0 to 1000000000000";
    let long_id = "i".repeat(129);
    let lease_arity = arity("RL.LEASE");
    let release_arity = arity("RL.RELEASE");
    assert_errors(
        &mut con,
        &[
            (&["RL.LEASE", "k", "0", "60", "a"], limit),
            (&["RL.LEASE", "k", "1000001", "60", "a"], limit),
            (&["RL.LEASE", "k", "-1", "60", "a"], limit),
            (&["RL.LEASE", "k", "x", "60", "a"], limit),
            (&["RL.LEASE", "k", "1.5", "60", "a"], limit),
            (&["RL.LEASE", "k", "1", "0", "a"], ttl),
            (&["RL.LEASE", "k", "1", "315360001", "a"], ttl),
            (&["RL.LEASE", "k", "1", "-5", "a"], ttl),
            (&["RL.LEASE", "k", "1", "0", "a", "1", "MS"], ttl_ms),
            (
                &["RL.LEASE", "k", "1", "315360000001", "a", "1", "MS"],
                ttl_ms,
            ),
            (&["RL.LEASE", "k", "1", "60", ""], LEASE_ID_ERROR),
            (&["RL.LEASE", "k", "1", "60", &long_id], LEASE_ID_ERROR),
            (&["RL.LEASE", "k", "1", "60", "a", "-1"], quantity),
            (
                &["RL.LEASE", "k", "1", "60", "a", "1000000000001"],
                quantity,
            ),
            (
                &["RL.LEASE", "k", "1", "60", "a", "1", "MS", "MS"],
                "ERR MS is given more than once",
            ),
            (
                &["RL.LEASE", "k", "1", "60", "a", "1", "FOO"],
                "ERR unknown argument 'FOO'",
            ),
            (&["RL.LEASE", "k", "1", "60", "a", "1", "AT", "5"], AT_ERROR),
            (&["RL.LEASE", "k", "1", "60"], &lease_arity),
            (&["RL.LEASE", "k"], &lease_arity),
            (&["RL.RELEASE", "k"], &release_arity),
            (&["RL.RELEASE", "k", "a", "b"], &release_arity),
            (
                &["RL.RELEASE", "k", "a", "b", "c"],
                "ERR unknown argument 'b'",
            ),
            (&["RL.RELEASE", "k", ""], LEASE_ID_ERROR),
            (&["RL.RELEASE", "k", &long_id], LEASE_ID_ERROR),
            (&["RL.RELEASE", "k", "a", "AT", "5"], AT_ERROR),
            (
                &[
                    "RL.ALLOW", "1", "k", "LEASE", "1", "60", "ID", "a", "AT", "5",
                ],
                AT_ERROR,
            ),
            (
                &["RL.PEEK", "1", "k", "LEASE", "1", "60", "AT", "5"],
                AT_ERROR,
            ),
        ],
    );
    assert_eq!(dbsize(&mut con), 0, "an error made a key");
    // AT is refused on a key that exists too, and changes nothing.
    five(&mut con, &["RL.LEASE", "k", "1", "60", "a"]);
    let before = state(&mut con, "k");
    assert_errors(
        &mut con,
        &[
            (&["RL.RELEASE", "k", "a", "AT", "5"], AT_ERROR),
            (
                &[
                    "RL.LEASE",
                    "k",
                    "1",
                    "60",
                    "b",
                    "1",
                    "AT",
                    "99999999999999999",
                ],
                AT_ERROR,
            ),
        ],
    );
    assert_eq!(state(&mut con, "k"), before);
    // The bounds themselves are accepted: 128 bytes of id, the longest
    // ttl, the largest limit.
    let id = "j".repeat(128);
    let r = five(&mut con, &["RL.LEASE", "max", "1000000", "315360000", &id]);
    assert_eq!(r, [0, 1_000_000, 999_999, -1, 315_360_000]);
    assert_eq!(
        ids_and_weights(&mut con, "max"),
        [(id.clone().into_bytes(), 1)]
    );
    assert_eq!(release(&mut con, "max", id.as_bytes()), 1);
}

/// Lease traffic of every sort, with long ttls: grants, renewals (longer,
/// shorter, heavier), refusals, peeks, ids of several lengths and any
/// bytes, MS, releases (1, 0, of a missing key, of the last lease), LEASE
/// specs in RL.ALLOW beside rate kinds; inside MULTI and a Lua script too.
/// Keys of round `round` are new; the others see renewals.
fn workload(con: &mut Connection, round: usize) {
    let id16 = "0123456789abcdef";
    let id128 = "L".repeat(128);
    let calls: &[&[&str]] = &[
        &["RL.LEASE", "e:a", "5", "600", "x", "2"],
        &["RL.LEASE", "e:a", "5", "300", "y"],
        &["RL.LEASE", "e:a", "5", "900", "x", "3"],
        &["RL.LEASE", "e:a", "5", "600", "z", "2"],
        &["RL.LEASE", "e:a", "5", "600", "z", "0"],
        &["RL.LEASE", "e:b", "1000", "600000", "1", "1", "MS"],
        &["RL.LEASE", "e:b", "1000", "450000", id16, "7", "MS"],
        &["RL.LEASE", "e:b", "1000", "500000", &id128, "3", "MS"],
        &["RL.LEASE", "e:b", "1000", "400000", "1", "2", "MS"],
        &[
            "RL.ALLOW", "2", "{j}r", "{j}c", "SLIDE", "10", "600", "LEASE", "3", "600", "ID",
            "job", "QUANTITY", "2",
        ],
        &[
            "RL.ALLOW", "2", "{j}t", "{j}c", "THROTTLE", "0", "1", "600", "LEASE", "3", "600",
            "ID", "job2",
        ],
        &["RL.ALLOW", "1", "{j}c", "LEASE", "3", "600", "ID", "job3"],
        &[
            "RL.ALLOW", "2", "{j}q", "{j}c", "QUOTA", "100", "YEAR", "LEASE", "3", "700", "ID",
            "job", "QUANTITY", "2",
        ],
        &[
            "RL.ALLOW", "2", "{j}s", "{j}c", "SLICE", "10", "600", "6", "LEASE", "3", "600", "ID",
            "job", "QUANTITY", "0",
        ],
    ];
    for call in calls {
        let _: Value = cmd(call)
            .query(con)
            .unwrap_or_else(|e| panic!("{call:?}: {e}"));
    }
    let binary: &[u8] = b"\x00\xfe\xff";
    five_bytes(con, &[b"RL.LEASE", b"e:b", b"1000", b"600", binary, b"5"]);
    assert_eq!(release(con, "e:a", b"y"), 1);
    assert_eq!(release(con, "e:a", b"y"), 0);
    assert_eq!(release(con, "e:missing", b"y"), 0);
    assert_eq!(release(con, "e:b", b"nobody"), 0);
    let gone = format!("e:gone{round}");
    five(con, &["RL.LEASE", &gone, "2", "600", "solo"]);
    assert_eq!(release(con, &gone, b"solo"), 1);
    // A key of this round that stays.
    five(con, &["RL.LEASE", &format!("e:n{round}"), "2", "600", "a"]);

    // MULTI/EXEC
    let (mk, mr) = (format!("{{m}}e:{round}"), format!("{{m}}r:{round}"));
    let _: () = redis::cmd("MULTI").query(con).unwrap();
    let queued: &[&[&str]] = &[
        &["RL.LEASE", &mk, "3", "600", "m1", "2"],
        &["RL.LEASE", &mk, "3", "600", "m2", "2"],
        &["RL.RELEASE", &mk, "m1"],
        &[
            "RL.ALLOW", "2", &mr, &mk, "THROTTLE", "5", "1", "600", "LEASE", "3", "600", "ID",
            "m2", "QUANTITY", "2",
        ],
        &["RL.RELEASE", &mk, "nobody"],
        &["RL.LEASE", &mk, "3", "800", "m3"],
    ];
    for call in queued {
        let q: String = cmd(call).query(con).unwrap();
        assert_eq!(q, "QUEUED");
    }
    let replies: Vec<Value> = redis::cmd("EXEC").query(con).unwrap();
    let limited = |v: &Value| match v {
        Value::Array(items) => items[0].clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        [
            limited(&replies[0]),
            limited(&replies[1]),
            replies[2].clone(),
            limited(&replies[3]),
            replies[4].clone(),
            limited(&replies[5]),
        ],
        [0, 1, 1, 0, 0, 0].map(Value::Int),
        "{replies:?}"
    );

    // Lua
    let script = "local out = {} \
        out[#out + 1] = redis.call('RL.LEASE', KEYS[1], 2, 600, 'lua-a')[1] \
        out[#out + 1] = redis.call('RL.LEASE', KEYS[1], 2, 900, 'lua-b')[1] \
        out[#out + 1] = redis.call('RL.LEASE', KEYS[1], 2, 600, 'lua-c')[1] \
        out[#out + 1] = redis.call('RL.RELEASE', KEYS[1], 'lua-a') \
        out[#out + 1] = redis.call('RL.ALLOW', 2, KEYS[2], KEYS[1], 'SLIDE', 10, 600, \
            'LEASE', 2, 600, 'ID', 'lua-c')[1] \
        out[#out + 1] = redis.call('RL.RELEASE', KEYS[1], 'lua-a') \
        return out";
    let out: Vec<i64> = redis::cmd("EVAL")
        .arg(script)
        .arg(2)
        .arg(format!("{{lua}}e:{round}"))
        .arg(format!("{{lua}}r:{round}"))
        .query(con)
        .unwrap();
    assert_eq!(out, [0, 0, 1, 1, 0, 0]);
}

/// The lease keys `workload` leaves after `rounds` rounds, each with its
/// holders' ids and weights.
fn lease_keys(rounds: usize) -> Vec<String> {
    let mut keys: Vec<String> = ["e:a", "e:b", "{j}c"].map(String::from).to_vec();
    for round in 0..rounds {
        keys.push(format!("e:n{round}"));
        keys.push(format!("{{m}}e:{round}"));
        keys.push(format!("{{lua}}e:{round}"));
    }
    keys
}

fn holders_by_key(con: &mut Connection, keys: &[String]) -> Vec<Vec<(Vec<u8>, i64)>> {
    keys.iter().map(|k| ids_and_weights(con, k)).collect()
}

#[test]
fn replicas_and_the_aof_reach_the_masters_leases() {
    let mut master = Server::start_with(&[
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--aof-use-rdb-preamble",
        "no",
    ]);
    let (_replica, mut rcon) = start_replica(&master);
    let mut con = master.conn();
    workload(&mut con, 0);
    workload(&mut con, 1);
    let keys = lease_keys(2);
    // What the workload left, as the master holds it.
    assert_eq!(
        ids_and_weights(&mut con, "e:a"),
        [(b"x".to_vec(), 3)],
        "y released"
    );
    assert_eq!(
        ids_and_weights(&mut con, "{j}c"),
        [(b"job2".to_vec(), 1), (b"job".to_vec(), 2)]
    );
    assert_eq!(
        ids_and_weights(&mut con, "{m}e:0"),
        [(b"m2".to_vec(), 2), (b"m3".to_vec(), 1)]
    );
    assert_eq!(
        ids_and_weights(&mut con, "{lua}e:1"),
        [(b"lua-c".to_vec(), 1), (b"lua-b".to_vec(), 1)]
    );
    assert!(!exists(&mut con, "e:gone0") && !exists(&mut con, "e:missing"));

    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    let on_master = dataset(&mut con);
    let min_keys = keys.len() + 5;
    assert_same_dataset(&dataset(&mut rcon), &on_master, min_keys, "the replica");
    let holders = holders_by_key(&mut con, &keys);
    assert_eq!(
        holders_by_key(&mut rcon, &keys),
        holders,
        "the replica's holders"
    );

    // The AOF replays the same calls with the master's clock.
    master.restart();
    let mut con = master.conn();
    assert_same_dataset(&dataset(&mut con), &on_master, min_keys, "the AOF");
    assert_eq!(
        holders_by_key(&mut con, &keys),
        holders,
        "the AOF's holders"
    );
}

/// A release drops the leases expired at its instant, even when it finds
/// nothing to release: that change reaches the replica too, which then
/// holds the same leases (a release that changes nothing is not sent).
#[test]
fn a_release_changes_the_key_only_when_it_releases() {
    let master = Server::start();
    let (_replica, mut rcon) = start_replica(&master);
    let mut con = master.conn();
    let r = five(&mut con, &["RL.LEASE", "x", "5", "100", "short", "1", "MS"]);
    assert_eq!(r, [0, 5, 4, -1, 100]);
    let r = five(
        &mut con,
        &["RL.LEASE", "x", "5", "600000", "long", "2", "MS"],
    );
    assert_eq!(r, [0, 5, 2, -1, 600_000]);
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    std::thread::sleep(Duration::from_millis(150));
    // Nothing released: nothing changes, nothing is sent (nor counted as a
    // change, which every propagated call is), even with an expired lease
    // kept in the key.
    let r = five(&mut con, &["RL.LEASE", "y", "5", "600", "a"]);
    assert_eq!(r, [0, 5, 4, -1, 600]);
    let changes = dirty(&mut con);
    assert_eq!(release(&mut con, "y", b"nobody"), 0);
    let before = digest_value(&mut con, "x");
    assert_eq!(release(&mut con, "x", b"nobody"), 0);
    assert_eq!(release(&mut con, "x", b"short"), 0, "short has expired");
    assert_eq!(digest_value(&mut con, "x"), before, "nothing was released");
    assert_eq!(dirty(&mut con), changes, "releases that changed nothing");
    // A release drops the expired lease with it, on both.
    assert_eq!(release(&mut con, "x", b"long"), 1);
    assert_ne!(dirty(&mut con), changes, "a release is a change");
    assert!(!exists(&mut con, "x"), "nothing unexpired is left");
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    assert_same_dataset(&dataset(&mut rcon), &dataset(&mut con), 1, "the replica");
}

#[test]
fn a_renewed_lease_keeps_its_slot_after_a_failover() {
    let master = Server::start();
    let (replica, mut rcon) = start_replica(&master);
    let mut con = master.conn();
    let since = Instant::now();
    check(
        &mut con,
        since,
        &[
            (&["f", "2", "60", "a"], [0, 2, 1, -1, 60]),
            (&["f", "2", "600", "b"], [0, 2, 0, -1, 600]),
            // a renews for 15 minutes, on the master's clock.
            (&["f", "2", "900", "a"], [0, 2, 0, -1, 900]),
            (&["f", "2", "600", "c"], [1, 2, 0, 600, 900]),
        ],
    );
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    let on_master = state(&mut con, "f");
    assert_eq!(
        state(&mut rcon, "f"),
        on_master,
        "the replica before the failover"
    );

    // The master is gone; its replica takes over.
    drop(con);
    drop(master);
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut rcon)
        .unwrap();
    assert_eq!(info_field(&mut rcon, "replication", "role"), "master");
    assert_eq!(state(&mut rcon, "f"), on_master, "the promoted replica");
    let holders = holders(&mut rcon, "f");
    let listed: Vec<(Vec<u8>, i64)> = holders.iter().map(|(id, w, _)| (id.clone(), *w)).collect();
    assert_eq!(listed, [(b"b".to_vec(), 1), (b"a".to_vec(), 1)]);
    let elapsed = ms_since(since);
    assert!(
        (900_000 - elapsed..=900_000).contains(&holders[1].2),
        "{holders:?}"
    );
    check(
        &mut rcon,
        since,
        &[
            // Full still: a new id waits for b; a and b renew.
            (&["f", "2", "600", "c"], [1, 2, 0, 600, 900]),
            (&["f", "2", "900", "a"], [0, 2, 0, -1, 900]),
            (&["f", "2", "600", "b"], [0, 2, 0, -1, 900]),
            (&["f", "2", "600", "c"], [1, 2, 0, 600, 900]),
        ],
    );
    assert_eq!(release(&mut rcon, "f", b"b"), 1);
    check(
        &mut rcon,
        since,
        &[(&["f", "2", "600", "c"], [0, 2, 0, -1, 900])],
    );
    drop(replica);
}

#[test]
fn debug_reload_and_an_rdb_restart_keep_the_leases() {
    let mut server = Server::start_with(&["--save", "", "--appendonly", "no"]);
    let mut con = server.conn();
    workload(&mut con, 0);
    workload(&mut con, 1);
    let keys = lease_keys(2);
    let before = dataset(&mut con);
    let holders = holders_by_key(&mut con, &keys);
    let min_keys = keys.len() + 5;

    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    assert_same_dataset(&dataset(&mut con), &before, min_keys, "DEBUG RELOAD");
    assert_eq!(holders_by_key(&mut con, &keys), holders, "DEBUG RELOAD");

    let _: () = redis::cmd("SAVE").query(&mut con).unwrap();
    server.restart();
    let mut con = server.conn();
    assert_same_dataset(&dataset(&mut con), &before, min_keys, "RDB restart");
    assert_eq!(holders_by_key(&mut con, &keys), holders, "RDB restart");
    // The leases still decide: e:a holds x's 3 of 5.
    let r = five(&mut con, &["RL.LEASE", "e:a", "5", "600", "z", "3"]);
    assert_eq!(&r[..3], &[1, 5, 2], "{r:?}");
    let r = five(&mut con, &["RL.LEASE", "e:a", "5", "600", "z", "2"]);
    assert_eq!(&r[..4], &[0, 5, 0, -1], "{r:?}");
}

fn aof_restart(preamble: &str) {
    let mut server = start_synced_aof_server(preamble);
    let mut con = server.conn();
    workload(&mut con, 0);
    workload(&mut con, 1);
    let keys = lease_keys(2);
    let min_keys = keys.len() + 5;
    let before = dataset(&mut con);
    let holders = holders_by_key(&mut con, &keys);
    server.restart();
    let mut con = server.conn();
    assert_same_dataset(&dataset(&mut con), &before, min_keys, "replaying the AOF");
    assert_eq!(
        holders_by_key(&mut con, &keys),
        holders,
        "replaying the AOF"
    );

    let _: String = redis::cmd("BGREWRITEAOF").query(&mut con).unwrap();
    wait_until(30, "the AOF rewrite", || {
        info_field(&mut con, "persistence", "aof_rewrite_in_progress") == "0"
            && info_field(&mut con, "persistence", "aof_rewrite_scheduled") == "0"
    });
    workload(&mut con, 2);
    let keys = lease_keys(3);
    let rewritten = dataset(&mut con);
    let holders = holders_by_key(&mut con, &keys);
    server.restart();
    let mut con = server.conn();
    assert_same_dataset(
        &dataset(&mut con),
        &rewritten,
        keys.len() + 5,
        "loading the rewritten AOF and the commands after it",
    );
    assert_eq!(
        holders_by_key(&mut con, &keys),
        holders,
        "the rewritten AOF"
    );
}

#[test]
fn aof_restart_without_preamble() {
    aof_restart("no");
}

#[test]
fn aof_restart_with_preamble() {
    aof_restart("yes");
}

#[test]
fn dump_restore_and_copy_round_trip() {
    let server = Server::start();
    let mut con = server.conn();
    workload(&mut con, 0);
    for key in ["e:a", "e:b", "{j}c"] {
        let payload: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut con).unwrap();
        let expire_at = pexpiretime(&mut con, key);
        let restored = format!("{key}:restored");
        let _: () = redis::cmd("RESTORE")
            .arg(&restored)
            .arg(expire_at)
            .arg(&payload)
            .arg("ABSTTL")
            .query(&mut con)
            .unwrap();
        let copied = format!("{key}:copied");
        let n: i64 = redis::cmd("COPY")
            .arg(key)
            .arg(&copied)
            .query(&mut con)
            .unwrap();
        assert_eq!(n, 1);
        for other in [&restored, &copied] {
            assert_eq!(state(&mut con, other), state(&mut con, key), "{other}");
            assert_eq!(
                ids_and_weights(&mut con, other),
                ids_and_weights(&mut con, key),
                "{other}"
            );
            let t: String = redis::cmd("TYPE").arg(other).query(&mut con).unwrap();
            assert_eq!(t, "rl-lease-");
        }
    }
    // The restored key decides as the original: e:a holds 3 of 5.
    for key in ["e:a", "e:a:restored"] {
        let r = five(&mut con, &["RL.LEASE", key, "5", "600", "z", "3"]);
        assert_eq!(&r[..3], &[1, 5, 2], "{key}: {r:?}");
    }
    // The copy is its own: a release there leaves the original.
    let before = state(&mut con, "e:a");
    assert_eq!(release(&mut con, "e:a:copied", b"x"), 1);
    assert!(!exists(&mut con, "e:a:copied"));
    assert_eq!(state(&mut con, "e:a"), before);
}

/// A lease key's encoding written field by field (src/core/lease/format.rs,
/// `LeaseState::encode`), with nothing checked: varints of the count, then per
/// lease the expiry's delta from the previous one (ns; the first since the
/// epoch), its weight and its id's length; then the ids end to end.
/// `leases`: (expiry delta, weight, id).
fn lease_encoding(leases: &[(u64, u64, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(&mut out, leases.len() as u64);
    for &(delta, weight, id) in leases {
        varint(&mut out, delta);
        varint(&mut out, weight);
        varint(&mut out, id.len() as u64);
    }
    for &(_, _, id) in leases {
        out.extend_from_slice(id);
    }
    out
}

#[test]
fn hostile_restore_payloads_are_refused_and_the_server_lives() {
    let mut server =
        Server::start_with(&["--save", "", "--appendonly", "no", "--rdbcompression", "no"]);
    let mut con = server.conn();
    five(&mut con, &["RL.LEASE", "real", "5", "600", "a"]);
    let real: Vec<u8> = redis::cmd("DUMP").arg("real").query(&mut con).unwrap();
    let version = rdb_version(&real);
    let id = module_id("rl-lease-", 1);
    let payload = |encoding: &[u8]| reseal(&dump_body(id, encoding), version);
    // The server's own DUMP is what the helpers build: this type and
    // encoding version, one string (a one-byte length: a lease of id "a"
    // takes 15 bytes at most), the end.
    let body = body_of(&real);
    let encoding = &body[12..body.len() - 1];
    assert_eq!(body[11] as usize, encoding.len(), "{real:?}");
    assert_eq!(body, dump_body(id, encoding), "{real:?}");

    // A valid payload: a (weight 2) expires in an hour, b (weight 1) an
    // hour later. It loads, DUMPs back byte for byte, and decides.
    let since = Instant::now();
    let hour = 3_600 * NS_PER_S as u64;
    let e1 = unix_ns() as u64 + hour;
    let valid = lease_encoding(&[(e1, 2, b"a"), (hour, 1, b"b")]);
    let _: () = redis::cmd("RESTORE")
        .arg("made")
        .arg(0)
        .arg(payload(&valid))
        .query(&mut con)
        .expect("a valid payload");
    let dumped: Vec<u8> = redis::cmd("DUMP").arg("made").query(&mut con).unwrap();
    assert_eq!(dumped, payload(&valid));
    let holders = holders(&mut con, "made");
    assert_eq!(holders.len(), 2, "{holders:?}");
    assert_eq!((&holders[0].0[..], holders[0].1), (&b"a"[..], 2));
    assert_eq!((&holders[1].0[..], holders[1].1), (&b"b"[..], 1));
    assert_five(
        five(&mut con, &["RL.LEASE", "made", "3", "600", "c"]),
        [1, 3, 0, 3_600, 7_200],
        since,
        "the restored leases",
    );

    let e2 = e1 + hour;
    let long_id = [b'x'; 129];
    let mut trailing = valid.clone();
    trailing.push(0);
    let mut truncated = valid.clone();
    truncated.pop();
    let mut count_only = Vec::new();
    varint(&mut count_only, 1_000);
    count_only.extend_from_slice(&[1, 1, 1, b'a']);
    let mut too_many = Vec::new();
    varint(&mut too_many, 1_000_001);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "one id twice, at two expiries",
            lease_encoding(&[(e1, 1, b"a"), (hour, 1, b"a")]),
        ),
        (
            "one id twice, at one expiry",
            lease_encoding(&[(e1, 1, b"a"), (0, 1, b"a")]),
        ),
        ("an id of 129 bytes", lease_encoding(&[(e1, 1, &long_id)])),
        ("an empty id", lease_encoding(&[(e1, 1, b"")])),
        (
            "weights summing over 1,000,000",
            lease_encoding(&[(e1, 600_000, b"a"), (hour, 400_001, b"b")]),
        ),
        (
            "a weight over 1,000,000",
            lease_encoding(&[(e1, 1_000_001, b"a")]),
        ),
        ("a weight of 0", lease_encoding(&[(e1, 0, b"a")])),
        (
            "unsorted: one expiry, ids decreasing",
            lease_encoding(&[(e1, 1, b"b"), (0, 1, b"a")]),
        ),
        (
            "unsorted: an expiry before the previous one (a delta past 2^64)",
            lease_encoding(&[(e2, 1, b"a"), (u64::MAX - hour + 1, 1, b"b")]),
        ),
        ("an expiry at the epoch", lease_encoding(&[(0, 1, b"a")])),
        ("trailing bytes", trailing),
        ("a missing id byte", truncated),
        ("more leases than the bytes hold", count_only),
        ("more leases than the largest limit", too_many),
        ("nothing at all", Vec::new()),
    ];
    for (what, encoding) in &cases {
        let result: redis::RedisResult<()> = redis::cmd("RESTORE")
            .arg("hostile")
            .arg(0)
            .arg(payload(encoding))
            .query(&mut con);
        match result {
            Ok(()) => panic!("{what}: accepted {encoding:?}"),
            Err(e) => {
                let text = error_text(&e);
                assert!(text.starts_with("ERR"), "{what}: {text}");
            }
        }
        let pong: String = redis::cmd("PING")
            .query(&mut con)
            .unwrap_or_else(|e| panic!("{what}: the server died: {e}\n{}", server.log()));
        assert_eq!(pong, "PONG");
        assert!(!exists(&mut con, "hostile"), "{what}");
    }
    // A version of the encoding this build does not know.
    let result: redis::RedisResult<()> = redis::cmd("RESTORE")
        .arg("hostile")
        .arg(0)
        .arg(reseal(
            &dump_body(module_id("rl-lease-", 2), &valid),
            version,
        ))
        .query(&mut con);
    assert!(result.is_err(), "encoding version 2: {result:?}");
    assert!(server.alive());
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    assert_eq!(dbsize(&mut con), 2);
    assert!(server.alive());
}

#[test]
fn cluster_routes_lease_and_release_by_their_key() {
    use common::cluster::*;
    let cluster = Cluster::start();
    let topo = cluster.topology();
    let masters: Vec<u16> = topo.values().filter(|n| n.master).map(|n| n.port).collect();
    let mut cc = cluster.client();
    let mut any = cluster.con(cluster.ports[0]);
    let since = Instant::now();

    // Keys spread over every master; each lives on its slot's owner only.
    let mut per_master = std::collections::BTreeMap::<u16, usize>::new();
    for i in 0..30 {
        let key = format!("lease:{i}");
        assert_five(
            five_on(&mut cc, &["RL.LEASE", &key, "2", "600", "a"]),
            [0, 2, 1, -1, 600],
            since,
            &key,
        );
        assert_five(
            five_on(&mut cc, &["RL.LEASE", &key, "2", "600", "b"]),
            [0, 2, 0, -1, 600],
            since,
            &key,
        );
        let slot = keyslot(&mut any, &key);
        let owner = owner_of(&topo, slot);
        *per_master.entry(owner).or_default() += 1;
        for &m in &masters {
            let mut con = cluster.con(m);
            if m == owner {
                let t: String = redis::cmd("TYPE").arg(&key).query(&mut con).unwrap();
                assert_eq!(t, "rl-lease-", "{key} on {m}");
            } else {
                // Another master sends the caller to the owner.
                for call in [
                    &["RL.LEASE", &key, "2", "600", "a"][..],
                    &["RL.RELEASE", &key, "a"][..],
                ] {
                    let e = cmd(call).query::<Value>(&mut con).unwrap_err();
                    assert_eq!(e.code(), Some("MOVED"), "{call:?} on {m}: {e}");
                    assert_eq!(
                        e.detail(),
                        Some(format!("{slot} 127.0.0.1:{owner}").as_str()),
                        "{call:?} on {m}"
                    );
                }
            }
        }
    }
    println!("lease keys per master: {per_master:?}");
    assert_eq!(per_master.len(), 3, "{per_master:?}");
    // COMMAND GETKEYS names the key of both commands, on every node.
    for &port in &cluster.ports {
        let mut con = cluster.con(port);
        for call in [
            &["RL.LEASE", "lease:0", "2", "600", "a", "1", "MS"][..],
            &["RL.RELEASE", "lease:0", "a"][..],
        ] {
            let mut c = redis::cmd("COMMAND");
            c.arg("GETKEYS").arg(call);
            let keys: Vec<String> = c.query(&mut con).unwrap();
            assert_eq!(keys, ["lease:0"], "{call:?} on {port}");
        }
    }
    // Releases through the cluster client reach the owner.
    for i in 0..30 {
        let key = format!("lease:{i}");
        assert_eq!(release(&mut cc, &key, b"a"), 1, "{key}");
        assert_eq!(release(&mut cc, &key, b"a"), 0, "{key}");
        if i % 2 == 0 {
            assert_eq!(release(&mut cc, &key, b"b"), 1, "{key}");
        }
    }
    // Half the keys are gone from their owners, the others hold b alone,
    // and every replica holds what its master holds.
    let mut total = 0;
    for &m in &masters {
        let mut con = cluster.con(m);
        let n = dbsize(&mut con);
        total += n;
        let r = replica_of(&topo, m);
        wait_caught_up(m, r);
        let mut rcon = cluster.con(r);
        // Reads of keys on a replica, instead of a MOVED redirection.
        let _: () = redis::cmd("READONLY").query(&mut rcon).unwrap();
        assert_same_dataset(
            &dataset(&mut rcon),
            &dataset(&mut con),
            0,
            &format!("replica {r}"),
        );
    }
    assert_eq!(total, 15);
    let owner = owner_of(&topo, keyslot(&mut any, "lease:1"));
    assert_eq!(
        ids_and_weights(&mut cluster.con(owner), "lease:1"),
        [(b"b".to_vec(), 1)]
    );

    // RL.ALLOW with a LEASE spec: one slot through a hash tag, or CROSSSLOT.
    let r = seven(
        &mut cc,
        &[
            "RL.ALLOW",
            "2",
            "{t:1}:rate",
            "{t:1}:pool",
            "SLIDE",
            "5",
            "600",
            "LEASE",
            "2",
            "600",
            "ID",
            "w",
        ],
    );
    assert_seven(
        &r,
        &[[0, 5, 4, -1, 600], [0, 2, 1, -1, 600]],
        2,
        since,
        "one slot",
    );
    let other = (2..)
        .map(|n| format!("{{t:{n}}}:pool"))
        .find(|k| {
            owner_of(&topo, keyslot(&mut any, k))
                != owner_of(&topo, keyslot(&mut any, "{t:1}:rate"))
        })
        .unwrap();
    let cross = [
        "RL.ALLOW",
        "2",
        "{t:1}:rate",
        &other,
        "SLIDE",
        "5",
        "600",
        "LEASE",
        "2",
        "600",
        "ID",
        "w",
    ];
    for &m in &masters {
        let e = cmd(&cross).query::<Value>(&mut cluster.con(m)).unwrap_err();
        assert_eq!(e.code(), Some("CROSSSLOT"), "on {m}: {e}");
    }
    let e = cmd(&cross).query::<Value>(&mut cc).unwrap_err();
    assert_eq!(e.code(), Some("CROSSSLOT"), "cluster client: {e}");
    let other_owner = owner_of(&topo, keyslot(&mut any, &other));
    assert!(!exists(&mut cluster.con(other_owner), &other));
}

#[test]
fn info_counts_lease_and_release_calls() {
    let master = Server::start();
    let (_replica, mut rcon) = start_replica(&master);
    let mut con = master.conn();
    let info = |con: &mut Connection, field: &str| {
        info_field(con, "ratelimit", &format!("ratelimit_{field}"))
    };
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .unwrap();
    five(&mut con, &["RL.LEASE", "i", "2", "600", "a"]);
    five(&mut con, &["RL.LEASE", "i", "2", "600", "b"]);
    five(&mut con, &["RL.LEASE", "i", "2", "600", "c"]);
    five(&mut con, &["RL.LEASE", "i", "2", "600", "c", "0"]);
    error(&mut con, &["RL.LEASE", "i", "0", "600", "a"]);
    error(&mut con, &["RL.LEASE", "i", "2", "600", ""]);
    let counts = |con: &mut Connection| {
        ["calls", "allowed", "limited", "errors"].map(|f| info(con, &format!("lease_{f}")))
    };
    assert_eq!(counts(&mut con), ["6", "3", "1", "2"].map(String::from));
    assert_eq!(info(&mut con, "lease_keys"), "1");

    assert_eq!(release(&mut con, "i", b"a"), 1);
    assert_eq!(release(&mut con, "i", b"a"), 0);
    assert_eq!(release(&mut con, "missing", b"a"), 0);
    error(&mut con, &["RL.RELEASE", "i", ""]);
    error(&mut con, &["RL.RELEASE", "i"]);
    assert_eq!(
        info(&mut con, "release_calls"),
        "4",
        "the arity error is the server's"
    );
    assert_eq!(info(&mut con, "release_errors"), "1");
    // RL.RELEASE decides nothing: it has no allowed and limited fields.
    assert_eq!(info(&mut con, "release_allowed"), "");
    assert_eq!(info(&mut con, "release_limited"), "");

    // A LEASE spec counts in RL.ALLOW's row, and its key in lease_keys.
    seven(
        &mut con,
        &["RL.ALLOW", "1", "j", "LEASE", "1", "600", "ID", "x"],
    );
    seven(
        &mut con,
        &["RL.ALLOW", "1", "j", "LEASE", "1", "600", "ID", "y"],
    );
    assert_eq!(info(&mut con, "allow_calls"), "2");
    assert_eq!(info(&mut con, "allow_limited"), "1");
    assert_eq!(info(&mut con, "lease_calls"), "6");
    assert_eq!(info(&mut con, "lease_keys"), "2");
    // Keys are uncounted when a release empties one, when one is deleted,
    // and when one expires with its last lease.
    assert_eq!(release(&mut con, "i", b"b"), 1);
    assert_eq!(info(&mut con, "lease_keys"), "1");
    let _: i64 = redis::cmd("DEL").arg("j").query(&mut con).unwrap();
    assert_eq!(info(&mut con, "lease_keys"), "0");
    five(&mut con, &["RL.LEASE", "short", "1", "200", "x", "1", "MS"]);
    assert_eq!(info(&mut con, "lease_keys"), "1");
    wait_until(10, "the expired key to be freed", || {
        info(&mut con, "lease_keys") == "0"
    });

    // The replica counted the keys the master's commands made, not the calls.
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    wait_until(10, "the replica to free the expired key", || {
        info(&mut rcon, "lease_keys") == "0"
    });
    assert_eq!(info(&mut rcon, "lease_calls"), "0");
    assert_eq!(info(&mut rcon, "release_calls"), "0");

    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .unwrap();
    assert_eq!(counts(&mut con), ["0", "0", "0", "0"].map(String::from));
    assert_eq!(info(&mut con, "release_calls"), "0");
}
