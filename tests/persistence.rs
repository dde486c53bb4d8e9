//! State survives everything a database must survive, for all three types:
//! DEBUG RELOAD, DUMP/RESTORE, COPY, RENAME, RDB and AOF restarts (with and
//! without the RDB preamble, before and after a rewrite), replicas, and
//! hostile RESTORE payloads.
//!
//! Windows are long (minutes), so no key expires while a test runs. Every
//! comparison covers the values (`DEBUG DIGEST`) and the expiry of every
//! key (`PEXPIRETIME`): the digest mixes in only whether a key has an
//! expiry, not when.

mod common;
use common::dump::reseal;
use common::*;

use std::collections::BTreeMap;

/// Calls on keys of all three types: plain, quantities, MS, limited
/// requests and peeks.
fn workload(con: &mut Connection, round: usize) {
    let calls: &[&[&str]] = &[
        &["RL.THROTTLE", "t:a", "15", "30", "60"],
        &["RL.THROTTLE", "t:a", "15", "30", "60", "7"],
        // T = 200 s, then 85.7.. s: a fraction of a ns, another count.
        &["RL.THROTTLE", "t:b", "2", "3", "600000", "1", "MS"],
        &["RL.THROTTLE", "t:b", "9", "7", "600000", "3", "MS"],
        &["RL.THROTTLE", "t:a", "15", "30", "60", "0"],
        &["RL.SLIDE", "l:a", "10", "300"],
        &["RL.SLIDE", "l:a", "10", "300", "4"],
        &["RL.SLIDE", "l:b", "1000", "600000", "250", "MS"],
        &["RL.SLIDE", "l:a", "10", "300", "20"],
        &["RL.SLIDE", "l:a", "10", "300", "0"],
        // Limited under a longer window: the key's expiry grows with it.
        &["RL.SLIDE", "l:a", "5", "900", "1"],
        &["RL.SLICE", "s:b", "2", "840000", "14", "1", "MS"],
        &["RL.SLICE", "s:a", "100", "300", "60"],
        &["RL.SLICE", "s:a", "100", "300", "60", "30"],
        &["RL.SLICE", "s:b", "7", "420000", "7", "2", "MS"],
        &["RL.SLICE", "s:a", "100", "300", "60", "0"],
    ];
    for i in 0..round {
        for call in calls {
            five(con, call);
        }
        five(con, &["RL.SLIDE", &format!("l:n{i}"), "5", "120", "2"]);
    }
}

fn keys_of_each_type() -> [&'static str; 3] {
    ["t:a", "l:a", "s:a"]
}

#[test]
fn debug_reload_keeps_every_state() {
    let server = Server::start();
    let mut con = server.conn();
    workload(&mut con, 3);
    let before = dataset(&mut con);
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    assert_same_dataset(&dataset(&mut con), &before, 9, "DEBUG RELOAD");
    // The reloaded keys keep answering as before.
    let r = five(&mut con, &["RL.SLIDE", "l:a", "10", "300", "0"]);
    assert_eq!(
        &r[..3],
        &[0, 10, 0],
        "a full log: a peek fits, nothing remains"
    );
}

#[test]
fn dump_restore_copy_rename() {
    let server = Server::start();
    let mut con = server.conn();
    workload(&mut con, 1);
    for key in keys_of_each_type() {
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
        assert_eq!(
            digest_value(&mut con, &restored),
            digest_value(&mut con, key),
            "{key}"
        );
        assert_eq!(pexpiretime(&mut con, &restored), expire_at, "{key}");

        let copied = format!("{key}:copied");
        let n: i64 = redis::cmd("COPY")
            .arg(key)
            .arg(&copied)
            .query(&mut con)
            .unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            digest_value(&mut con, &copied),
            digest_value(&mut con, key),
            "{key}"
        );
        assert_eq!(pexpiretime(&mut con, &copied), expire_at, "{key}");

        let renamed = format!("{key}:renamed");
        let before = digest_value(&mut con, key);
        let _: () = redis::cmd("RENAME")
            .arg(key)
            .arg(&renamed)
            .query(&mut con)
            .unwrap();
        assert_eq!(digest_value(&mut con, &renamed), before, "{key}");
        assert_eq!(pexpiretime(&mut con, &renamed), expire_at, "{key}");

        // MEMORY USAGE is computed from the state: nonzero and sane.
        let usage = memory_usage(&mut con, &renamed);
        assert!(usage > 0 && usage < 10_000, "{key}: {usage}");
    }
    // The copy is independent of the original.
    let before = digest_value(&mut con, "l:a:copied");
    five(&mut con, &["RL.SLIDE", "l:a:renamed", "100", "300", "5"]);
    assert_eq!(digest_value(&mut con, "l:a:copied"), before);
}

#[test]
fn rdb_restart() {
    let mut server = Server::start_with(&["--save", "", "--appendonly", "no"]);
    let mut con = server.conn();
    workload(&mut con, 3);
    let before = dataset(&mut con);
    let _: () = redis::cmd("SAVE").query(&mut con).unwrap();
    server.restart();
    let mut con = server.conn();
    assert_same_dataset(&dataset(&mut con), &before, 9, "RDB restart");
}

fn aof_restart(preamble: &str) {
    let mut server = start_synced_aof_server(preamble);
    let mut con = server.conn();
    workload(&mut con, 2);
    let before = dataset(&mut con);
    server.restart();
    let mut con = server.conn();
    assert_same_dataset(
        &dataset(&mut con),
        &before,
        8,
        "replaying the time-carrying commands",
    );

    let _: String = redis::cmd("BGREWRITEAOF").query(&mut con).unwrap();
    wait_until(30, "the AOF rewrite", || {
        info_field(&mut con, "persistence", "aof_rewrite_in_progress") == "0"
            && info_field(&mut con, "persistence", "aof_rewrite_scheduled") == "0"
    });
    workload(&mut con, 1);
    let rewritten = dataset(&mut con);
    server.restart();
    let mut con = server.conn();
    assert_same_dataset(
        &dataset(&mut con),
        &rewritten,
        8,
        "loading the rewritten AOF and the commands after it",
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

/// A replica of `master`, without persistence, and a connection to it once
/// its link to the master is up.
#[test]
fn replica_reaches_the_masters_exact_state() {
    let master = Server::start();
    let (_replica, mut rcon) = start_replica(&master);
    let mut con = master.conn();
    workload(&mut con, 2);

    // MULTI/EXEC
    let _: () = redis::cmd("MULTI").query(&mut con).unwrap();
    for _ in 0..3 {
        let _: String = cmd(&["RL.THROTTLE", "t:multi", "5", "1", "60"])
            .query(&mut con)
            .unwrap();
        let _: String = cmd(&["RL.SLIDE", "l:multi", "5", "60", "2"])
            .query(&mut con)
            .unwrap();
        let _: String = cmd(&["RL.SLICE", "s:multi", "5", "60", "10", "2"])
            .query(&mut con)
            .unwrap();
    }
    let replies: Vec<Vec<i64>> = redis::cmd("EXEC").query(&mut con).unwrap();
    assert_eq!(replies.len(), 9);
    assert_eq!(
        replies[8][0], 1,
        "the third SLICE call of 2 units over limit 5 is limited"
    );

    // Lua
    let script = "local out = {} \
        for i = 1, 4 do \
          out[#out + 1] = redis.call('RL.THROTTLE', KEYS[1], 2, 1, 60)[1] \
          out[#out + 1] = redis.call('RL.SLIDE', KEYS[2], 3, 60)[1] \
          out[#out + 1] = redis.call('RL.SLICE', KEYS[3], 3, 60, 6)[1] \
        end \
        return out";
    let limited: Vec<i64> = redis::cmd("EVAL")
        .arg(script)
        .arg(3)
        .arg("{lua}t")
        .arg("{lua}l")
        .arg("{lua}s")
        .query(&mut con)
        .unwrap();
    assert_eq!(limited, vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1]);

    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    assert_same_dataset(
        &dataset(&mut rcon),
        &dataset(&mut con),
        14,
        "replica fed by plain calls, MULTI and EVAL",
    );
}

/// A limited request under a longer window than the key was written with
/// moves the key's expiry out to the new reset moment (docs/DESIGN.md#lifetime). The replica and the AOF must hold that very expiry, whether
/// the request came alone, inside MULTI or from a script; digests alone
/// would not tell, as they only mix in that a key has an expiry.
#[test]
fn a_longer_window_moves_the_expiry_on_the_replica_and_in_the_aof() {
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
    let ways = ["plain", "multi", "lua"];
    // Full under a one-minute window.
    for way in ways {
        assert_eq!(
            five(&mut con, &["RL.SLIDE", &format!("{way}:l"), "2", "60", "2"]),
            [0, 2, 0, -1, 60]
        );
        let r = five(
            &mut con,
            &["RL.SLICE", &format!("{way}:s"), "2", "60", "6", "2"],
        );
        assert_eq!(&r[..4], &[0, 2, 0, -1], "{r:?}");
        assert_eq!(
            five(
                &mut con,
                &["RL.THROTTLE", &format!("{way}:t"), "1", "1", "60", "2"]
            ),
            [0, 2, 0, -1, 120]
        );
    }
    let before = expiries(&mut con);
    assert_eq!(before.len(), 9, "{before:?}");

    // Then the same keys under a ten-minute window: limited, recording
    // nothing, but counting the recorded units for ten minutes.
    let longer: [(&str, &str, &[&str]); 3] = [
        ("RL.SLIDE", "l", &["2", "600", "1"]),
        ("RL.SLICE", "s", &["2", "600", "6", "1"]),
        // The same rate, T = 60 s, under a ten-minute period.
        ("RL.THROTTLE", "t", &["1", "10", "600", "1"]),
    ];
    let args = |way: &str, name: &'static str, kind: &str, rest: &[&'static str]| {
        let mut v = vec![name.to_string(), format!("{way}:{kind}")];
        v.extend(rest.iter().map(|s| s.to_string()));
        v
    };
    let mut replies: Vec<Vec<i64>> = Vec::new();
    for (name, kind, rest) in longer {
        let call = args("plain", name, kind, rest);
        let call: Vec<&str> = call.iter().map(String::as_str).collect();
        replies.push(five(&mut con, &call).to_vec());
    }
    let _: () = redis::cmd("MULTI").query(&mut con).unwrap();
    for (name, kind, rest) in longer {
        let call = args("multi", name, kind, rest);
        let queued: String = redis::cmd(name).arg(&call[1..]).query(&mut con).unwrap();
        assert_eq!(queued, "QUEUED");
    }
    let in_multi: Vec<Vec<i64>> = redis::cmd("EXEC").query(&mut con).unwrap();
    replies.extend(in_multi);
    let script = "return {redis.call('RL.SLIDE', KEYS[1], 2, 600, 1), \
                  redis.call('RL.SLICE', KEYS[2], 2, 600, 6, 1), \
                  redis.call('RL.THROTTLE', KEYS[3], 1, 10, 600, 1)}";
    let in_lua: Vec<Vec<i64>> = redis::cmd("EVAL")
        .arg(script)
        .arg(3)
        .arg("lua:l")
        .arg("lua:s")
        .arg("lua:t")
        .query(&mut con)
        .unwrap();
    replies.extend(in_lua);
    assert_eq!(replies.len(), 9);
    for r in &replies {
        assert_eq!(&r[..3], &[1, 2, 0], "limited: {replies:?}");
    }

    let after = expiries(&mut con);
    for way in ways {
        let at = |m: &BTreeMap<String, i64>, kind: &str| m[&format!("0:{way}:{kind}")];
        // The log's units were recorded at one instant: its expiry moves
        // by exactly the difference of the windows.
        assert_eq!(at(&after, "l") - at(&before, "l"), 540_000, "{way}");
        // Six slices of 100 s count the units until 600 to 700 s after
        // they came, six slices of 10 s until 60 to 70 s after.
        let moved = at(&after, "s") - at(&before, "s");
        assert!((530_000..640_000).contains(&moved), "{way}: {moved}");
        // GCRA's state is a time, whatever the period: nothing moves.
        assert_eq!(at(&after, "t"), at(&before, "t"), "{way}");
    }

    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    let on_master = dataset(&mut con);
    assert_eq!(on_master.expiries, after);
    assert_same_dataset(&dataset(&mut rcon), &on_master, 9, "the replica");

    // The AOF replays the limited requests with the master's clock.
    master.restart();
    let mut con = master.conn();
    assert_same_dataset(&dataset(&mut con), &on_master, 9, "the AOF");
}

/// A small deterministic generator for mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn hostile_restore_payloads_are_refused_without_a_crash() {
    let mut server = Server::start();
    let mut con = server.conn();
    workload(&mut con, 1);
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut refused = 0;
    let mut accepted = 0;
    for key in keys_of_each_type() {
        let payload: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut con).unwrap();
        // A payload with only the checksum recomputed is accepted as is.
        let n = payload.len();
        let (body, version) = (&payload[..n - 10], [payload[n - 10], payload[n - 9]]);
        assert_eq!(
            reseal(body, version),
            payload,
            "the CRC is recomputed correctly"
        );

        for i in 0..300 {
            let mut body = body.to_vec();
            // Most mutations hit the module's own bytes at the end of the body.
            let hot = body.len() / 2;
            match i % 5 {
                0 => {
                    let at = hot + rng.below(body.len() - hot);
                    body[at] ^= 1 << rng.below(8);
                }
                1 => {
                    let at = hot + rng.below(body.len() - hot);
                    body[at] = rng.next() as u8;
                }
                2 => body.truncate(1 + rng.below(body.len() - 1)),
                3 => {
                    let at = hot + rng.below(body.len() - hot);
                    for _ in 0..1 + rng.below(16) {
                        body.insert(at, rng.next() as u8);
                    }
                }
                _ => {
                    // Overwrite a run of bytes with extreme values.
                    let at = hot + rng.below(body.len() - hot);
                    let fill = [0x00, 0xff, 0x7f, 0x80][rng.below(4)];
                    for b in body.iter_mut().skip(at).take(1 + rng.below(9)) {
                        *b = fill;
                    }
                }
            }
            let target = format!("hostile:{i}");
            let result: redis::RedisResult<()> = redis::cmd("RESTORE")
                .arg(&target)
                .arg(0)
                .arg(reseal(&body, version))
                .arg("REPLACE")
                .query(&mut con);
            match result {
                Ok(()) => {
                    accepted += 1;
                    // Whatever was accepted must be usable without a crash.
                    for call in [
                        &["RL.THROTTLE", &target, "5", "1", "60"][..],
                        &["RL.SLIDE", &target, "5", "60"][..],
                        &["RL.SLICE", &target, "5", "60", "6"][..],
                    ] {
                        let _: redis::RedisResult<Value> = cmd(call).query(&mut con);
                    }
                    let _: redis::RedisResult<Value> = redis::cmd("MEMORY")
                        .arg("USAGE")
                        .arg(&target)
                        .query(&mut con);
                    let _: redis::RedisResult<Value> = redis::cmd("DEBUG")
                        .arg("DIGEST-VALUE")
                        .arg(&target)
                        .query(&mut con);
                }
                Err(e) => {
                    refused += 1;
                    let text = error_text(&e);
                    assert!(text.starts_with("ERR"), "{text}");
                }
            }
            let pong: String = redis::cmd("PING").query(&mut con).unwrap_or_else(|e| {
                panic!(
                    "server died after payload {i} of {key}: {e}\n{}",
                    server.log()
                )
            });
            assert_eq!(pong, "PONG");
        }
    }
    assert!(server.alive());
    assert!(refused > 100, "refused {refused}, accepted {accepted}");
    // The dataset survives a reload with whatever was accepted.
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    assert!(server.alive());
}

#[test]
fn move_and_flushall_async() {
    let server = Server::start();
    let mut con = server.conn();
    workload(&mut con, 1);
    for key in keys_of_each_type() {
        let before = digest_value(&mut con, key);
        let expire_at = pexpiretime(&mut con, key);
        assert!(expire_at > 0, "{key}: {expire_at}");
        let moved: i64 = redis::cmd("MOVE").arg(key).arg(1).query(&mut con).unwrap();
        assert_eq!(moved, 1);
        let _: () = redis::cmd("SELECT").arg(1).query(&mut con).unwrap();
        assert_eq!(digest_value(&mut con, key), before, "{key}");
        assert_eq!(pexpiretime(&mut con, key), expire_at, "{key}");
        let _: () = redis::cmd("SELECT").arg(0).query(&mut con).unwrap();
    }
    // Many keys, and large ones, freed in the background.
    for i in 0..200 {
        five(
            &mut con,
            &["RL.SLIDE", &format!("big:{i}"), "10000", "600", "5000"],
        );
        five(
            &mut con,
            &["RL.SLICE", &format!("slices:{i}"), "10", "3600", "3600"],
        );
    }
    let _: () = redis::cmd("FLUSHALL").arg("ASYNC").query(&mut con).unwrap();
    assert_eq!(dbsize(&mut con), 0);
    let r = five(&mut con, &["RL.SLIDE", "big:0", "10000", "600", "1"]);
    assert_eq!(&r[..3], &[0, 10000, 9999]);
}

/// A master that served traffic with nothing replaying its stream, then
/// gets a replica: the replica must still reach its exact state, before
/// and after more traffic.
#[test]
fn replica_attached_after_traffic_reaches_the_same_state() {
    let master = Server::start();
    let mut con = master.conn();
    workload(&mut con, 2);
    let (_replica, mut rcon) = start_replica(&master);
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    assert_same_dataset(
        &dataset(&mut rcon),
        &dataset(&mut con),
        8,
        "after the full sync",
    );
    workload(&mut con, 2);
    assert_eq!(wait_replicas(&mut con, 1, 10_000), 1);
    assert_same_dataset(
        &dataset(&mut rcon),
        &dataset(&mut con),
        8,
        "after more traffic",
    );
}

/// AOF switched on at run time: the rewrite captures the state, later
/// changes carry the clock, a restart reproduces it all.
#[test]
fn aof_switched_on_at_run_time() {
    let mut server = Server::start_with(&[
        "--save",
        "",
        "--appendonly",
        "no",
        "--appendfsync",
        "always",
    ]);
    let mut con = server.conn();
    workload(&mut con, 2);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("appendonly")
        .arg("yes")
        .query(&mut con)
        .unwrap();
    wait_until(30, "the AOF to be enabled", || {
        info_field(&mut con, "persistence", "aof_enabled") == "1"
            && info_field(&mut con, "persistence", "aof_rewrite_in_progress") == "0"
            && info_field(&mut con, "persistence", "aof_rewrite_scheduled") == "0"
    });
    workload(&mut con, 2);
    let before = dataset(&mut con);
    // The restart must load the AOF: make it the configuration.
    let _: () = redis::cmd("CONFIG")
        .arg("REWRITE")
        .query(&mut con)
        .unwrap_or(());
    server.restart_with(&[
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]);
    let mut con = server.conn();
    assert_same_dataset(
        &dataset(&mut con),
        &before,
        8,
        "AOF switched on at run time",
    );
}
