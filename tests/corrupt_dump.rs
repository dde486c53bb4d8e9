//! Corrupt DUMP payloads, in the style of Redis's corrupt-dump fuzzer: the
//! payloads of keys of every kind in varied states (made by the commands;
//! blocked keys among them, whose payload ends with the block trailer),
//! mutated (bits flipped, cut short, runs inserted, deleted and duplicated,
//! integers at their extremes), and RESTOREd with checksum validation off
//! (`DEBUG SET-SKIP-CHECKSUM-VALIDATION 1`). The server refuses a payload
//! or accepts it; on what it accepts, every command of the kind, RL.PEEK,
//! RL.ALLOW, RL.REFUND, RL.INSPECT, DUMP, COPY, MEMORY USAGE and DEBUG
//! RELOAD run: the server stays up (PING), every reply keeps its bounds
//! (`0 <= remaining <= limit`, ...), no command answers an error, and a
//! value survives COPY and DEBUG RELOAD unchanged (DEBUG DIGEST-VALUE).
//!
//! The random choices come from a fixed seed, so a run is repeatable.
//! `CORRUPT_DUMP_ITERATIONS` sets the mutations per kind (default 1000,
//! a few seconds a server); `CORRUPT_DUMP_SEED` another seed. The counts
//! of payloads tried, accepted and refused per kind are printed.

mod common;
use common::dump::{dump_body, reseal};
use common::*;

use std::io::Write;

/// xorshift64*: the test's one source of choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One kind: the calls that build its source keys (`{k}` is the key), the
/// calls run on an accepted key (the same form), and its spec words for
/// RL.PEEK / RL.ALLOW / RL.REFUND.
struct Kind {
    name: &'static str,
    /// Its data type's name, as TYPE answers.
    type_name: &'static str,
    build: &'static [&'static [&'static str]],
    calls: &'static [&'static [&'static str]],
    specs: &'static [&'static [&'static str]],
    refunds: bool,
    ids: &'static [&'static str],
}

const KINDS: &[Kind] = &[
    Kind {
        name: "THROTTLE",
        type_name: "rl-gcra--",
        build: &[
            &["RL.THROTTLE", "{k}", "15", "30", "60"],
            &["RL.THROTTLE", "{k}", "15", "30", "60", "9"],
            &["RL.THROTTLE", "{k}", "2", "7", "600000", "3", "MS"],
            // Refused: blocked (the block trailer, docs/DESIGN.md#block).
            &["RL.THROTTLE", "{k}", "0", "1", "3600", "1", "BLOCK", "3600"],
        ],
        calls: &[
            &["RL.THROTTLE", "{k}", "15", "30", "60"],
            &["RL.THROTTLE", "{k}", "0", "1", "1", "0"],
            &[
                "RL.THROTTLE",
                "{k}",
                "1000000000000",
                "4294967295",
                "1",
                "7",
            ],
            &["RL.THROTTLE", "{k}", "100", "1000", "1", "5", "MS"],
            &["RL.THROTTLE", "{k}", "0", "1", "60", "1", "BLOCK", "60"],
        ],
        specs: &[
            &["THROTTLE", "15", "30", "60"],
            &["THROTTLE", "1", "1", "1"],
        ],
        refunds: true,
        ids: &[],
    },
    Kind {
        name: "SLIDE",
        type_name: "rl-slide-",
        build: &[
            &["RL.SLIDE", "{k}", "100", "300"],
            &["RL.SLIDE", "{k}", "100", "300", "4"],
            &["RL.SLIDE", "{k}", "1000", "600000", "250", "MS"],
            &["RL.SLIDE", "{k}", "100", "300", "3", "PRECISION", "10"],
            &["RL.SLIDE", "{k}", "1", "300", "1", "BLOCK", "3600"],
        ],
        calls: &[
            &["RL.SLIDE", "{k}", "100", "300"],
            &["RL.SLIDE", "{k}", "5", "1", "2"],
            &[
                "RL.SLIDE",
                "{k}",
                "1000000",
                "315360000",
                "1000",
                "PRECISION",
                "60",
            ],
            &["RL.SLIDE", "{k}", "10", "60000", "0", "MS"],
            &["RL.SLIDE", "{k}", "1", "60", "1", "BLOCK", "60"],
        ],
        specs: &[
            &["SLIDE", "100", "300"],
            &["SLIDE", "3", "1", "PRECISION", "1"],
        ],
        refunds: true,
        ids: &[],
    },
    Kind {
        name: "SLICE",
        type_name: "rl-slice-",
        build: &[
            &["RL.SLICE", "{k}", "10", "60", "6"],
            &["RL.SLICE", "{k}", "10", "60", "6", "3"],
            &["RL.SLICE", "{k}", "100", "315360000000", "7", "42", "MS"],
            &["RL.SLICE", "{k}", "1", "60", "6", "1", "BLOCK", "3600"],
        ],
        calls: &[
            &["RL.SLICE", "{k}", "10", "60", "6"],
            &["RL.SLICE", "{k}", "4294967295", "315360000", "1000", "9"],
            &["RL.SLICE", "{k}", "1", "1", "1", "0"],
            &["RL.SLICE", "{k}", "100", "1000", "10", "3", "MS"],
            &["RL.SLICE", "{k}", "1", "60", "6", "1", "BLOCK", "60"],
        ],
        specs: &[&["SLICE", "10", "60", "6"], &["SLICE", "5", "10", "2"]],
        refunds: true,
        ids: &[],
    },
    Kind {
        name: "LEASE",
        type_name: "rl-lease-",
        build: &[
            &["RL.LEASE", "{k}", "50", "300", "a"],
            &["RL.LEASE", "{k}", "50", "300", "worker-17", "3"],
            &[
                "RL.LEASE",
                "{k}",
                "50",
                "600000",
                "a-much-longer-lease-id-of-the-third-class",
                "2",
                "MS",
            ],
        ],
        calls: &[
            &["RL.LEASE", "{k}", "50", "300", "a"],
            &["RL.LEASE", "{k}", "1", "1", "b", "0"],
            &["RL.LEASE", "{k}", "1000000", "315360000", "worker-17", "7"],
            &["RL.RELEASE", "{k}", "a"],
            &["RL.RELEASE", "{k}", "worker-17"],
        ],
        specs: &[&["LEASE", "50", "300"], &["LEASE", "2", "1"]],
        refunds: false,
        ids: &["a", "worker-17", "z"],
    },
    Kind {
        name: "QUOTA",
        type_name: "rl-quota-",
        build: &[
            &["RL.QUOTA", "{k}", "100", "DAY"],
            &["RL.QUOTA", "{k}", "100", "MONTH", "5", "TZ", "Europe/Paris"],
            &["RL.QUOTA", "{k}", "1000", "YEAR", "7", "TZ", "+05:30"],
            &["RL.QUOTA", "{k}", "1", "DAY", "1", "BLOCK", "3600"],
        ],
        calls: &[
            &["RL.QUOTA", "{k}", "100", "DAY"],
            &["RL.QUOTA", "{k}", "5", "MONTH", "TZ", "Europe/Paris"],
            &[
                "RL.QUOTA",
                "{k}",
                "1000000000000000",
                "YEAR",
                "3",
                "TZ",
                "Australia/Lord_Howe",
            ],
            &["RL.QUOTA", "{k}", "1", "HOUR", "0"],
            &["RL.QUOTA", "{k}", "1", "HOUR", "1", "BLOCK", "60"],
        ],
        specs: &[
            &["QUOTA", "100", "DAY"],
            &["QUOTA", "9", "WEEK", "TZ", "-03:30"],
        ],
        refunds: true,
        ids: &[],
    },
];

fn with_key<'a>(call: &[&'a str], key: &'a str) -> Vec<&'a str> {
    call.iter()
        .map(|&a| if a == "{k}" { key } else { a })
        .collect()
}

/// The payloads of one kind's keys in varied states: each prefix of its
/// build calls, repeated a number of times, as DUMP gives them.
fn payloads(con: &mut Connection, kind: &Kind) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (n, repeat) in [
        (1, 1),
        (2, 1),
        (3, 2),
        (kind.build.len(), 5),
        (kind.build.len(), 40),
    ] {
        let key = format!("src:{}:{n}:{repeat}", kind.name);
        for _ in 0..repeat {
            for call in &kind.build[..n] {
                let _: Value = cmd(&with_key(call, &key)).query(con).expect("a build call");
            }
        }
        let payload: Vec<u8> = redis::cmd("DUMP").arg(&key).query(con).expect("DUMP");
        out.push(payload);
    }
    out
}

/// An RDB length at `at`: its value and the bytes it took.
fn rdb_length(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let first = *bytes.get(at)?;
    match first >> 6 {
        0 => Some((usize::from(first & 0x3f), 1)),
        1 => Some((
            (usize::from(first & 0x3f) << 8) | usize::from(*bytes.get(at + 1)?),
            2,
        )),
        _ if first == 0x80 => {
            let b = bytes.get(at + 1..at + 5)?;
            Some((u32::from_be_bytes(b.try_into().ok()?) as usize, 5))
        }
        _ => None,
    }
}

/// A DUMP payload of a module value as its parts: the type's module id,
/// the value's encoding, and the RDB version of the trailer.
fn parts(payload: &[u8]) -> Option<(u64, Vec<u8>, [u8; 2])> {
    if payload.len() < 12 || payload[0] != 7 || payload[1] != 0x81 {
        return None;
    }
    let id = u64::from_be_bytes(payload[2..10].try_into().ok()?);
    if payload[10] != 5 {
        return None;
    }
    let (len, took) = rdb_length(payload, 11)?;
    let start = 11 + took;
    let encoding = payload.get(start..start + len)?.to_vec();
    let n = payload.len();
    Some((id, encoding, [payload[n - 10], payload[n - 9]]))
}

/// Integers at their extremes, as the formats hold them: fixed-width
/// little-endian and varints.
const EXTREMES: &[&[u8]] = &[
    &[0; 8],
    &[0xff; 8],
    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
    &[0, 0, 0, 0, 0, 0, 0, 0x80],
    &[0xff, 0xff, 0xff, 0xff],
    &[0, 0, 0, 0x80],
    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
    &[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02],
    &[0x80, 0x00],
    &[0x7f],
    &[0x00],
    &[0xff],
];

/// One to three mutations of `bytes`.
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(3) {
        let len = bytes.len();
        let at = rng.below(len + 1);
        match rng.below(8) {
            // Bit flips.
            0 | 1 => {
                for _ in 0..1 + rng.below(3) {
                    if !bytes.is_empty() {
                        let i = rng.below(bytes.len());
                        bytes[i] ^= 1 << rng.below(8);
                    }
                }
            }
            // Cut short.
            2 => bytes.truncate(at),
            // A run of random bytes inserted.
            3 => {
                let run: Vec<u8> = (0..1 + rng.below(16)).map(|_| rng.next() as u8).collect();
                bytes.splice(at..at, run);
            }
            // A run deleted.
            4 => {
                let end = (at + 1 + rng.below(16)).min(len);
                bytes.drain(at.min(end)..end);
            }
            // A run duplicated in place.
            5 => {
                let end = (at + 1 + rng.below(24)).min(len);
                let run = bytes[at.min(end)..end].to_vec();
                bytes.splice(at..at, run);
            }
            // An integer at an extreme, over what is there.
            6 => {
                let value = EXTREMES[rng.below(EXTREMES.len())];
                for (i, &b) in value.iter().enumerate() {
                    if let Some(slot) = bytes.get_mut(at + i) {
                        *slot = b;
                    }
                }
            }
            // A byte set to a random value.
            _ => {
                if !bytes.is_empty() {
                    let i = rng.below(bytes.len());
                    bytes[i] = rng.next() as u8;
                }
            }
        }
    }
}

/// A five-integer reply keeps its bounds: limited is 0 or 1, the limit
/// positive, `0 <= remaining <= limit`, retry_after -1 when allowed and
/// at least -1, reset_after not negative.
/// RL.PEEK's and RL.ALLOW's reply starts with the binding limit's five.
fn assert_five(v: &Value, what: &str) {
    let Value::Array(items) = v else {
        panic!("{what}: not an array: {v:?}");
    };
    let five: Vec<i64> = items
        .iter()
        .take(5)
        .map(|i| match i {
            Value::Int(n) => *n,
            _ => panic!("{what}: not integers: {v:?}"),
        })
        .collect();
    let [limited, limit, remaining, retry, reset] = five[..] else {
        panic!("{what}: not five integers: {five:?}");
    };
    assert!(limited == 0 || limited == 1, "{what}: {five:?}");
    assert!(limit > 0, "{what}: {five:?}");
    assert!(0 <= remaining && remaining <= limit, "{what}: {five:?}");
    assert!(
        retry >= -1 && (limited == 1 || retry == -1),
        "{what}: {five:?}"
    );
    assert!(reset >= 0, "{what}: {five:?}");
}

fn query(con: &mut Connection, args: &[&str]) -> Value {
    cmd(args)
        .query(con)
        .unwrap_or_else(|e| panic!("{args:?}: {}", error_text(&e)))
}

fn digest_of(con: &mut Connection, key: &str) -> Value {
    query(con, &["DEBUG", "DIGEST-VALUE", key])
}

/// Everything a client can do with an accepted key of `kind`.
fn exercise(con: &mut Connection, kind: &Kind, key: &str, copy: &str) {
    let _ = query(con, &["TYPE", key]);
    let digest = digest_of(con, key);
    let _: Vec<u8> = cmd(&["DUMP", key]).query(con).expect("DUMP");
    let _ = query(con, &["MEMORY", "USAGE", key]);
    let _ = query(con, &["COPY", key, copy, "REPLACE"]);
    assert_eq!(digest_of(con, copy), digest, "COPY changed the value");
    let _ = query(con, &["RL.INSPECT", key]);
    for spec in kind.specs {
        let mut peek = vec!["RL.PEEK", "1", key];
        peek.extend_from_slice(spec);
        assert_five(&query(con, &peek), "RL.PEEK");
        let mut allow = vec!["RL.ALLOW", "1", key];
        allow.extend_from_slice(spec);
        if !kind.ids.is_empty() {
            allow.extend_from_slice(&["ID", kind.ids[0]]);
        }
        assert_five(&query(con, &allow), "RL.ALLOW");
        if kind.refunds {
            let mut refund = vec!["RL.REFUND", key];
            refund.extend_from_slice(spec);
            refund.push("2");
            assert_five(&query(con, &refund), "RL.REFUND");
        }
    }
    for call in kind.calls {
        let args = with_key(call, key);
        let reply = query(con, &args);
        if args[0] == "RL.RELEASE" {
            assert!(matches!(reply, Value::Int(0 | 1)), "{args:?}: {reply:?}");
        } else {
            assert_five(&reply, &args.join(" "));
        }
    }
    let _ = query(con, &["RL.INSPECT", key]);
    let _ = query(con, &["MEMORY", "USAGE", copy]);
}

#[derive(Default)]
struct Counts {
    tried: usize,
    accepted: usize,
    refused: usize,
    /// Accepted as a value of no type of this module: a mutation of the
    /// frame that made it a server type (a string, say).
    other: usize,
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {text:?}")),
        Err(_) => default,
    }
}

#[test]
fn corrupt_dump_payloads_are_refused_or_kept_sound() {
    let iterations = env_number("CORRUPT_DUMP_ITERATIONS", 1000) as usize;
    let seed = env_number("CORRUPT_DUMP_SEED", 0x00c0_ffee_d00d_f00d);
    let server =
        Server::start_with(&["--save", "", "--appendonly", "no", "--rdbcompression", "no"]);
    let mut con = server.conn();
    let _ = query(&mut con, &["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1"]);
    let mut rng = Rng(seed | 1);
    let mut report = String::new();
    for kind in KINDS {
        let sources = payloads(&mut con, kind);
        let _ = query(&mut con, &["FLUSHALL"]);
        let mut counts = Counts::default();
        // Kept accepted keys, checked across DEBUG RELOAD in batches.
        let mut kept: Vec<(String, Value)> = Vec::new();
        for i in 0..iterations {
            let source = &sources[rng.below(sources.len())];
            // Mostly the value's encoding, resealed in a sound frame; now
            // and then the whole payload, frame and trailer included.
            let payload = match parts(source) {
                Some((id, mut encoding, version)) if rng.below(4) != 0 => {
                    mutate(&mut rng, &mut encoding);
                    reseal(&dump_body(id, &encoding), version)
                }
                _ => {
                    let mut whole = source.clone();
                    mutate(&mut rng, &mut whole);
                    whole
                }
            };
            counts.tried += 1;
            let key = format!("k:{}:{i}", kind.name);
            let restored: redis::RedisResult<Value> = redis::cmd("RESTORE")
                .arg(&key)
                .arg(0)
                .arg(&payload)
                .arg("REPLACE")
                .query(&mut con);
            if restored.is_err() {
                counts.refused += 1;
                let _ = query(&mut con, &["PING"]);
                continue;
            }
            let type_name: String = cmd(&["TYPE", &key]).query(&mut con).expect("TYPE");
            // A mutated frame may name another kind's type, or a type of
            // the server's own: the key is what its type says.
            let Some(held) = KINDS.iter().find(|k| k.type_name == type_name) else {
                counts.other += 1;
                let _ = query(&mut con, &["DEL", &key]);
                continue;
            };
            counts.accepted += 1;
            let digest = digest_of(&mut con, &key);
            let copy = format!("{key}:copy");
            kept.push((key.clone(), digest));
            // The key as it was restored, kept for DEBUG RELOAD; the
            // commands run on a copy of it.
            let _ = query(&mut con, &["COPY", &key, &copy]);
            exercise(&mut con, held, &copy, &format!("{copy}:2"));
            let _ = query(&mut con, &["PING"]);
            if kept.len() == 20 {
                reload(&mut con, &mut kept);
            }
        }
        reload(&mut con, &mut kept);
        let _ = query(&mut con, &["FLUSHALL"]);
        report.push_str(&format!(
            "corrupt DUMP payloads of {:<8} on {}: tried {}, accepted {}, refused {}, another type {}\n",
            kind.name,
            server_binary(),
            counts.tried,
            counts.accepted,
            counts.refused,
            counts.other
        ));
        assert_eq!(
            counts.tried,
            counts.accepted + counts.refused + counts.other
        );
        assert!(counts.accepted > 0, "{}: nothing accepted", kind.name);
        assert!(counts.refused > 0, "{}: every mutation accepted", kind.name);
    }
    // Printed past the test harness's capture, so that make test shows it.
    let _ = std::io::stderr().write_all(report.as_bytes());
    let _ = query(&mut con, &["PING"]);
}

/// DEBUG RELOAD (save and load the RDB) with the kept keys in the
/// database: each comes back with the same value.
fn reload(con: &mut Connection, kept: &mut Vec<(String, Value)>) {
    let _ = query(con, &["DEBUG", "RELOAD"]);
    for (key, digest) in kept.drain(..) {
        assert_eq!(digest_of(con, &key), digest, "{key} after DEBUG RELOAD");
    }
}
