mod common;
use common::cluster::*;
use common::*;

// Redis Cluster: three masters with one replica each, formed with
// `redis-cli --cluster create` (tests/common/cluster.rs). Through a
// cluster-aware client the three commands route by their key (so keys
// spread over every master), hash tags keep related keys together for a Lua
// script and for one RL.ALLOW of layered windows (routed by its keys,
// refused across slots, answered as RL.PEEK by the replica), and a manual
// failover keeps every limiter exactly where it was: the promoted replica
// holds the same state (`DEBUG DIGEST-VALUE` equal, and the same
// `PEXPIRETIME` for every key, which the digest does not cover) and a full
// limiter stays full.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use redis::cluster::ClusterConnection;
use redis::ConnectionLike;

/// The five-integer reply of a command sent through any connection (the
/// cluster client included).
fn reply5(con: &mut impl ConnectionLike, args: &[&str]) -> [i64; 5] {
    let v: Vec<i64> = cmd(args)
        .query(con)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    v.try_into()
        .unwrap_or_else(|v| panic!("{args:?}: not five integers: {v:?}"))
}

/// `got` equals `want` on limited, limit and remaining; the two times may
/// be at most `slack` seconds below `want` (time passes between calls and
/// they are rounded up), never above.
fn assert_reply(got: [i64; 5], want: [i64; 5], slack: i64, what: &str) {
    assert_eq!(&got[..3], &want[..3], "{what}: {got:?} vs {want:?}");
    for i in 3..5 {
        if want[i] == -1 {
            assert_eq!(got[i], -1, "{what}: {got:?} vs {want:?}");
        } else {
            assert!(
                got[i] <= want[i] && got[i] >= want[i] - slack,
                "{what}: {got:?} vs {want:?} (slack {slack})"
            );
        }
    }
}

/// The error a call must answer, as its code (MOVED, CROSSSLOT) and the
/// rest of the message.
fn refused(con: &mut impl ConnectionLike, args: &[&str]) -> (String, String) {
    match cmd(args).query::<Value>(con) {
        Ok(v) => panic!("{args:?}: expected an error, got {v:?}"),
        Err(e) => (
            e.code().unwrap_or_default().to_string(),
            e.detail().unwrap_or_default().to_string(),
        ),
    }
}

/// `command numkeys key... spec...`
fn several<'a>(command: &'a str, keys: &[&'a str], specs: &[&'a str]) -> Vec<&'a str> {
    let numkeys = ["0", "1", "2", "3"][keys.len()];
    let mut args = vec![command, numkeys];
    args.extend_from_slice(keys);
    args.extend_from_slice(specs);
    args
}

/// CLUSTER COUNTKEYSINSLOT on one node: the keys of `slot` it holds.
fn keys_in_slot(con: &mut Connection, slot: u16) -> i64 {
    redis::cmd("CLUSTER")
        .arg("COUNTKEYSINSLOT")
        .arg(slot)
        .query(con)
        .expect("CLUSTER COUNTKEYSINSLOT")
}

/// RL.PEEK on the master, on the replica, and on the master again, until
/// the master answers the same twice (a second boundary can fall between);
/// returns (master, replica). With no write in between, each field can
/// only move one way as time passes, so a replica holding the same state
/// must answer what the master answered on both sides of it.
fn peek_on_both(
    master: &mut Connection,
    replica: &mut Connection,
    peek: &[&str],
) -> (Seven, Seven) {
    for _ in 0..10 {
        let before = seven(master, peek);
        let on_replica = seven(replica, peek);
        let after = seven(master, peek);
        if before == after {
            return (before, on_replica);
        }
    }
    panic!("{peek:?}: the master's answer changed in each of ten tries");
}

/// RL.ALLOW and RL.PEEK of layered windows on one subject, three keys with
/// one hash tag: one slot, one master.
///
/// - The keys come after `numkeys`, and the command answers the server's
///   key-position request: every node lists them for `COMMAND GETKEYS`, a
///   master that does not own the slot answers MOVED to the one that does
///   (which is how the cluster client finds it), and keys of two slots are
///   refused with CROSSSLOT by every master, changing nothing.
/// - The keys live on the owner. Its replica, after READONLY, answers the
///   read-only RL.PEEK exactly as the master does, and holds the same values
///   and expiries: the master's clock travelled with the writes.
fn allow_and_peek(
    cluster: &Cluster,
    topo: &BTreeMap<u16, Node>,
    cc: &mut ClusterConnection,
    any: &mut Connection,
) {
    let keys = ["{user:42}:s", "{user:42}:m", "{user:42}:h"];
    // 10 per second and 100 per minute (exact logs), 1,000 per hour in
    // slices of a minute.
    let specs = [
        "SLIDE", "10", "1", "SLIDE", "100", "60", "SLICE", "1000", "3600", "60",
    ];
    let allow = several("RL.ALLOW", &keys, &specs);
    let peek = several("RL.PEEK", &keys, &specs);
    let slot = keyslot(any, keys[0]);
    for key in keys {
        assert_eq!(keyslot(any, key), slot, "{key}");
    }
    let owner = owner_of(topo, slot);
    let replica = replica_of(topo, owner);
    let masters: Vec<u16> = topo.values().filter(|n| n.master).map(|n| n.port).collect();
    let others: Vec<u16> = masters.iter().copied().filter(|&m| m != owner).collect();
    let moved = ("MOVED".to_string(), format!("{slot} 127.0.0.1:{owner}"));
    println!("{keys:?}: slot {slot}, master {owner}, replica {replica}");

    // Every node names the keys; the options after the specs are not keys.
    for &port in &cluster.ports {
        let mut con = cluster.con(port);
        for call in [&allow, &peek] {
            let mut c = redis::cmd("COMMAND");
            c.arg("GETKEYS").arg(call.as_slice()).arg("QUANTITY").arg(1);
            let got: Vec<String> = c.query(&mut con).expect("COMMAND GETKEYS");
            assert_eq!(got, keys, "COMMAND GETKEYS {} on {port}", call[0]);
        }
    }

    // A master that does not own the slot sends the caller to the one that
    // does, and records nothing anywhere.
    for &m in &others {
        let mut con = cluster.con(m);
        for call in [&allow, &peek] {
            assert_eq!(refused(&mut con, call), moved, "{} on {m}", call[0]);
        }
    }
    for &m in &masters {
        let n = keys_in_slot(&mut cluster.con(m), slot);
        assert_eq!(n, 0, "slot {slot} on {m} before any RL.ALLOW");
    }

    // Through the cluster client. redis-rs takes the first argument ("3")
    // for the key, so it asks the master of that slot, and follows its
    // MOVED when that is another master.
    let first = owner_of(topo, keyslot(any, "3"));
    println!("the cluster client sends RL.ALLOW to {first} first (owner {owner})");
    let started = Instant::now();
    let r = seven(cc, &allow);
    // The per-second limit has the least remaining: it binds. A unit of the
    // hour is counted until the 61st slice after its own begins.
    assert_eq!(r.index, 1, "{r:?}");
    assert_eq!(r.limits[0], [0, 10, 9, -1, 1], "{r:?}");
    assert_eq!(r.limits[1], [0, 100, 99, -1, 60], "{r:?}");
    assert_eq!(&r.limits[2][..4], &[0, 1000, 999, -1], "{r:?}");
    assert!((3601..=3660).contains(&r.limits[2][4]), "{r:?}");
    assert_eq!(r.binding, r.limits[0], "{r:?}");
    println!("{allow:?} through the cluster client -> {r:?}");
    // The keys are on the owner, and only there.
    let mut direct = cluster.con(owner);
    for (key, type_name) in keys.iter().zip(["rl-slide-", "rl-slide-", "rl-slice-"]) {
        let t: String = redis::cmd("TYPE").arg(key).query(&mut direct).unwrap();
        assert_eq!(t, type_name, "{key} on {owner}");
    }
    assert_eq!(keys_in_slot(&mut direct, slot), 3, "slot {slot} on {owner}");
    for &m in &others {
        assert_eq!(
            keys_in_slot(&mut cluster.con(m), slot),
            0,
            "slot {slot} on {m}"
        );
    }

    // Keys of two slots, the second on another master: refused by every
    // master and through the cluster client, and no key changes.
    let other = (43..)
        .map(|n| format!("{{user:{n}}}:s"))
        .find(|k| owner_of(topo, keyslot(any, k)) != owner)
        .unwrap();
    let other_owner = owner_of(topo, keyslot(any, &other));
    let cross_keys = [keys[0], other.as_str()];
    let cross_specs = ["SLIDE", "10", "1", "SLIDE", "10", "1"];
    let state = |con: &mut Connection, key: &str| (digest_value(con, key), pexpiretime(con, key));
    let before = state(&mut direct, keys[0]);
    for command in ["RL.ALLOW", "RL.PEEK"] {
        let call = several(command, &cross_keys, &cross_specs);
        for &m in &masters {
            let (code, detail) = refused(&mut cluster.con(m), &call);
            assert_eq!(code, "CROSSSLOT", "{call:?} on {m}: {detail}");
        }
        let (code, detail) = refused(cc, &call);
        assert_eq!(code, "CROSSSLOT", "{call:?}, cluster client: {detail}");
    }
    assert_eq!(state(&mut direct, keys[0]), before, "{}", keys[0]);
    let mut con = cluster.con(other_owner);
    assert!(!exists(&mut con, &other), "{other} on {other_owner}");
    println!("{cross_keys:?} on {owner} and {other_owner}: CROSSSLOT on every master");

    // The replica sends a reader to its master, unless it said READONLY;
    // writes go to the master either way.
    let mut rcon = cluster.con(replica);
    assert_eq!(refused(&mut rcon, &peek), moved, "RL.PEEK on {replica}");
    let _: () = redis::cmd("READONLY").query(&mut rcon).unwrap();
    assert_eq!(refused(&mut rcon, &allow), moved, "RL.ALLOW on {replica}");

    // The owner takes another unit, and the replica applies it. The
    // per-second key lives one second after that: a comparison counts when
    // it ended by then, else it is made again after one more unit.
    for attempt in 1..=5 {
        let r = seven(&mut direct, &allow);
        let taken = attempt + 1;
        assert_eq!(r.limits[1], [0, 100, 100 - taken, -1, 60], "{r:?}");
        assert_eq!(&r.limits[2][..4], &[0, 1000, 1000 - taken, -1], "{r:?}");
        let second = r.limits[0];
        if attempt == 1 && started.elapsed() < Duration::from_millis(900) {
            assert_eq!(second, [0, 10, 8, -1, 1], "{r:?}");
        } else {
            assert!((10 - taken..=9).contains(&second[2]), "{r:?}");
        }
        assert_eq!(wait_replicas(&mut direct, 1, 5000), 1, "WAIT on {owner}");
        let lives_until = pexpiretime(&mut direct, keys[0]);
        let on_master = keys.map(|k| state(&mut direct, k));
        let on_replica = keys.map(|k| state(&mut rcon, k));
        let (master_peek, replica_peek) = peek_on_both(&mut direct, &mut rcon, &peek);
        if (unix_ns() / NS_PER_MS) as i64 >= lives_until {
            println!("attempt {attempt} outlived the per-second key: again");
            continue;
        }
        println!("{peek:?} on {owner} and on replica {replica} -> {master_peek:?}");
        assert_eq!(
            on_replica, on_master,
            "digest and expiry, replica {replica}"
        );
        assert_eq!(replica_peek, master_peek, "RL.PEEK on replica {replica}");
        // The peek asks for one more unit, and took none.
        assert_eq!(master_peek.limits[1][2], 100 - taken - 1, "{master_peek:?}");
        assert_eq!(
            master_peek.limits[2][2],
            1000 - taken - 1,
            "{master_peek:?}"
        );
        assert_eq!(
            seven(&mut direct, &peek),
            master_peek,
            "RL.PEEK took a unit"
        );

        // Reset is DEL: the failover below compares whole datasets, and a
        // key that expires in a second would come and go in between.
        let n: i64 = cmd(&["DEL", keys[0], keys[1], keys[2]])
            .query(&mut direct)
            .unwrap();
        assert_eq!(n, 3);
        return;
    }
    panic!("five attempts each took over a second: is the machine overloaded?");
}

#[test]
fn cluster_routing_hash_tags_and_failover() {
    let started = Instant::now();
    let cluster = Cluster::start();
    let topo = cluster.topology();
    println!("nodes: {:?}", cluster.ports);
    println!("before failover: {}", cluster.describe(&topo));
    let masters: Vec<u16> = topo.values().filter(|n| n.master).map(|n| n.port).collect();
    let mut cc = cluster.client();
    let mut any = cluster.con(cluster.ports[0]);

    // 1. Many keys through the cluster client, exact replies, spread over
    // every master.
    let kinds: [(&str, &str); 3] = [("t", "rl-gcra--"), ("l", "rl-slide-"), ("s", "rl-slice-")];
    let mut per_master: BTreeMap<(&str, u16), usize> = BTreeMap::new();
    for i in 0..100 {
        let k = format!("t:{i}");
        let first = reply5(&mut cc, &["RL.THROTTLE", &k, "4", "1", "600"]);
        assert_eq!(first, [0, 5, 4, -1, 600], "{k}");
        for (n, remaining) in [3, 2, 1, 0].into_iter().enumerate() {
            let r = reply5(&mut cc, &["RL.THROTTLE", &k, "4", "1", "600"]);
            let reset = 600 * (n as i64 + 2);
            assert_reply(r, [0, 5, remaining, -1, reset], 2, &k);
        }
        let r = reply5(&mut cc, &["RL.THROTTLE", &k, "4", "1", "600"]);
        assert_reply(r, [1, 5, 0, 600, 3000], 2, &k);

        let k = format!("l:{i}");
        let first = reply5(&mut cc, &["RL.SLIDE", &k, "3", "600"]);
        assert_eq!(first, [0, 3, 2, -1, 600], "{k}");
        for remaining in [1, 0] {
            let r = reply5(&mut cc, &["RL.SLIDE", &k, "3", "600"]);
            assert_eq!(r, [0, 3, remaining, -1, 600], "{k}");
        }
        let r = reply5(&mut cc, &["RL.SLIDE", &k, "3", "600"]);
        assert_reply(r, [1, 3, 0, 600, 600], 2, &k);

        // Slices of 100 s aligned to the epoch: a unit is counted until
        // 7 slices after the start of its own, 601 to 700 s from now.
        let k = format!("s:{i}");
        for remaining in [2, 1, 0] {
            let r = reply5(&mut cc, &["RL.SLICE", &k, "3", "600", "6"]);
            assert_eq!(&r[..4], &[0, 3, remaining, -1], "{k}: {r:?}");
            assert!((601..=700).contains(&r[4]), "{k}: {r:?}");
        }
        let r = reply5(&mut cc, &["RL.SLICE", &k, "3", "600", "6"]);
        assert_eq!(&r[..3], &[1, 3, 0], "{k}: {r:?}");
        assert!(
            (1..=700).contains(&r[3]) && (600..=700).contains(&r[4]),
            "{k}: {r:?}"
        );
    }
    for i in 0..100 {
        for (prefix, type_name) in kinds {
            let key = format!("{prefix}:{i}");
            let slot = keyslot(&mut any, &key);
            let owner = owner_of(&topo, slot);
            *per_master.entry((prefix, owner)).or_default() += 1;
            // The key lives on the master that owns its slot.
            let mut direct = cluster.con(owner);
            let t: String = redis::cmd("TYPE").arg(&key).query(&mut direct).unwrap();
            assert_eq!(t, type_name, "{key} on {owner}");
            let n: i64 = redis::cmd("CLUSTER")
                .arg("COUNTKEYSINSLOT")
                .arg(slot)
                .query(&mut direct)
                .unwrap();
            assert!(n >= 1, "{key}: slot {slot} empty on {owner}");
        }
    }
    println!("keys per (command, master): {per_master:?}");
    let mut total = 0;
    for &m in &masters {
        for (prefix, _) in kinds {
            assert!(
                per_master.get(&(prefix, m)).copied().unwrap_or(0) > 0,
                "no {prefix}: key on master {m}"
            );
        }
        let mut con = cluster.con(m);
        let n = dbsize(&mut con);
        assert!(n > 0, "master {m} is empty");
        total += n;
        // Replicas hold the same keys.
        let r = replica_of(&topo, m);
        wait_caught_up(m, r);
        assert_eq!(dbsize(&mut cluster.con(r)), n, "replica {r} of {m}");
    }
    assert_eq!(total, 300);

    // 2. Hash tags: both keys in one slot, and one script touches both.
    let (a, b) = ("{user:1}:a", "{user:1}:b");
    let slot = keyslot(&mut any, a);
    assert_eq!(slot, keyslot(&mut any, b));
    let script = "return {redis.call('RL.THROTTLE', KEYS[1], '4', '1', '600'), \
                  redis.call('RL.SLIDE', KEYS[2], '3', '600')}";
    let r: Vec<Vec<i64>> = redis::cmd("EVAL")
        .arg(script)
        .arg(2)
        .arg(a)
        .arg(b)
        .query(&mut cc)
        .expect("EVAL through the cluster client");
    assert_eq!(r, vec![vec![0, 5, 4, -1, 600], vec![0, 3, 2, -1, 600]]);
    let owner = owner_of(&topo, slot);
    let mut direct = cluster.con(owner);
    for (key, type_name) in [(a, "rl-gcra--"), (b, "rl-slide-")] {
        let t: String = redis::cmd("TYPE").arg(key).query(&mut direct).unwrap();
        assert_eq!(t, type_name, "{key} on {owner}");
    }
    println!("hash tag: {a} and {b} in slot {slot} on {owner}; EVAL replied {r:?}");
    // Keys of different slots in one script are refused.
    let cross: redis::RedisResult<Value> = redis::cmd("EVAL")
        .arg(script)
        .arg(2)
        .arg("{user:1}:a")
        .arg("{user:2}:b")
        .query(&mut cc);
    assert!(cross.is_err(), "cross-slot EVAL: {cross:?}");

    // 3. Several limits at once, on one subject's keys.
    allow_and_peek(&cluster, &topo, &mut cc, &mut any);

    // 4. Failover keeps limits. Three full limiters on one master.
    let master = masters[0];
    let replica = replica_of(&topo, master);
    let tag = (0..)
        .map(|n| format!("{{fo:{n}}}"))
        .find(|t| owner_of(&topo, keyslot(&mut any, t)) == master)
        .unwrap();
    let limiters: Vec<(String, Vec<&str>)> = vec![
        (
            format!("{tag}:throttle"),
            vec!["RL.THROTTLE", "", "2", "1", "600"],
        ),
        (format!("{tag}:slide"), vec!["RL.SLIDE", "", "3", "600"]),
        (
            format!("{tag}:slice"),
            vec!["RL.SLICE", "", "3", "600", "6"],
        ),
    ];
    let call = |cc: &mut ClusterConnection, key: &str, args: &[&str]| {
        let mut args = args.to_vec();
        args[1] = key;
        reply5(cc, &args)
    };
    let mut before = Vec::new();
    for (key, args) in &limiters {
        let mut allowed = 0;
        let limited = loop {
            let r = call(&mut cc, key, args);
            if r[0] == 1 {
                break r;
            }
            allowed += 1;
            assert!(allowed <= 3, "{key}: more than 3 allowed: {r:?}");
        };
        assert_eq!(allowed, 3, "{key}");
        assert_eq!(&limited[..3], &[1, 3, 0], "{key}: {limited:?}");
        println!("filled {key} on {master}: {allowed} allowed, then {limited:?}");
        before.push(limited);
    }
    let mut mcon = cluster.con(master);
    wait_caught_up(master, replica);
    let mut rcon = cluster.con(replica);
    // Reads of keys on a replica, instead of a MOVED redirection.
    let _: () = redis::cmd("READONLY").query(&mut rcon).unwrap();
    let mut digests = Vec::new();
    for (key, _) in &limiters {
        let dm = digest_value(&mut mcon, key);
        let dr = digest_value(&mut rcon, key);
        println!("digest {key}: master {master} {dm}, replica {replica} {dr}");
        assert_eq!(dm, dr, "{key}: replica differs before failover");
        assert_ne!(dm, "0".repeat(40), "{key} missing");
        digests.push(dm);
        let (em, er) = (pexpiretime(&mut mcon, key), pexpiretime(&mut rcon, key));
        assert_eq!(
            em, er,
            "{key}: the replica's expiry differs before failover"
        );
    }
    // Every key of that master: values and expiries.
    let on_master = dataset(&mut mcon);
    assert_same_dataset(
        &dataset(&mut rcon),
        &on_master,
        per_master
            .iter()
            .filter(|((_, m), _)| *m == master)
            .map(|(_, n)| n)
            .sum::<usize>()
            + 3,
        "the replica before failover",
    );

    let failover_started = Instant::now();
    let ok: String = redis::cmd("CLUSTER")
        .arg("FAILOVER")
        .query(&mut rcon)
        .expect("CLUSTER FAILOVER");
    assert_eq!(ok, "OK");
    wait_for(30, "the replica to become master", || {
        match try_field(replica, "replication", "role")?.as_str() {
            "master" => Ok(()),
            role => Err(format!("{replica} is {role}")),
        }
    });
    wait_for(30, "the cluster to settle after the failover", || {
        cluster_settled(&cluster.ports)
    });
    let after_topo = cluster.topology();
    assert!(after_topo[&replica].master, "{replica} not master");
    assert!(!after_topo[&master].master, "{master} still master");
    assert_eq!(replica_of(&after_topo, replica), master);
    println!(
        "failover took {:?}; after failover: {}",
        failover_started.elapsed(),
        cluster.describe(&after_topo)
    );

    // The promoted node holds the very same state...
    let mut promoted = cluster.con(replica);
    for ((key, _), d) in limiters.iter().zip(&digests) {
        let dp = digest_value(&mut promoted, key);
        println!("digest {key} on promoted {replica}: {dp} (old master had {d})");
        assert_eq!(&dp, d, "{key}: promoted node differs");
    }
    // ...and the limiters are still full: no reset, no burst.
    let elapsed = failover_started.elapsed().as_secs() as i64 + 2;
    for ((key, args), was) in limiters.iter().zip(&before) {
        let r = call(&mut cc, key, args);
        println!("after failover {} {key} -> {r:?} (before {was:?})", args[0]);
        assert_eq!(&r[..3], &was[..3], "{key}: {r:?} vs {was:?}");
        for i in 3..5 {
            assert!(
                r[i] <= was[i] && r[i] >= was[i] - elapsed,
                "{key}: {r:?} vs {was:?}"
            );
        }
        let peek = call(&mut cc, key, &[args.as_slice(), &["0"]].concat());
        assert_eq!(&peek[..3], &[0, 3, 0], "{key}: peek {peek:?}");
    }
    // A limited request and a peek change nothing: the promoted node still
    // holds exactly what the old master held, expiries included.
    for ((key, _), d) in limiters.iter().zip(&digests) {
        assert_eq!(&digest_value(&mut promoted, key), d, "{key}");
    }
    assert_same_dataset(
        &dataset(&mut promoted),
        &on_master,
        on_master.expiries.len(),
        "the promoted replica",
    );
    println!("cluster test took {:?}", started.elapsed());
}
