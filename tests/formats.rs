//! Saved formats are a promise: an RDB file or an AOF written by this build
//! must load, with the same meaning, in every later build. Round trips
//! cannot show that (a changed encoding round-trips too), so these tests
//! load byte fixtures checked in under tests/fixtures and assert what they
//! decode to.
//!
//! The fixtures were made once, by `tests/fixtures/make.sh`, with Redis
//! 7.0.15 and this module as of the commit that added them (see
//! tests/fixtures/README.md): one dataset of six keys, saved as
//!
//! - `rdb/dump.rdb`: SAVE;
//! - `aof-commands/appendonlydir`: the AOF before any rewrite
//!   (aof-use-rdb-preamble no), holding the commands as replicated,
//!   `RL.X <arguments> AT <master's clock in ns>`;
//! - `aof-rewritten/appendonlydir`: the AOF after BGREWRITEAOF (preamble
//!   no), holding `RL.STATE key <payload>` and `PEXPIREAT`.
//!
//! Every key lives for years (ten-year windows and periods; the first
//! expires in 2036), so the replies of peeks are computed here, exactly,
//! from the recorded states and the wall clock around each call.
//!
//! What is pinned, per key: the encoding the fixture files hold (field
//! order, widths, little-endian byte order; built below from the state's
//! numbers), the `RL.STATE` payload (a type tag, then that encoding), the
//! module value in DUMP once loaded (the type's module id, which carries
//! the type name and today's encoding version, then today's encoding as
//! one string), DEBUG DIGEST-VALUE, PEXPIRETIME, TYPE, MEMORY USAGE and
//! the peek replies. The same fixtures load on every server of the test
//! matrix alike (Redis 8.2 and Valkey 8.1 and 9 read Redis 7.0's RDB and
//! multi-part AOF).
//!
//! The two slide logs were saved in SLIDE's first format (encoding version
//! 1, tag `L`: one u64 of ns per unit). Today's build reads them into its
//! own (version 2, tag `M`: entries of µs and the log's clock in ns, as
//! varints), rounding each instant up to the microsecond but the newest,
//! which becomes the clock, exactly; the replies and leave times below
//! account for it: the same units, the same expiries, the same answers (to
//! the microsecond for the older units). Their DUMP, digests and the
//! dataset's digest are those of the new format, recorded from this build;
//! the loaded state writes and reads back itself (DEBUG RELOAD).
//!
//! If a test here fails after a format change, the change broke every
//! saved dataset: add a new encoding version and keep loading this one;
//! never remake the fixtures to make the test pass.

mod common;
use common::dump::{dump_body, module_id, varint};
use common::*;

use std::path::{Path, PathBuf};

/// Ten years of 365 days, in ns: the window and the period of the keys.
const W: u128 = 315_360_000 * NS_PER_S as u128;

/// The master's clock (ns since the epoch) for each call that made the
/// fixture dataset, as the AOF fixture carries it (`AT`), in order.
const AT_T_A: u64 = 1_795_316_901_051_061_883;
const AT_T_B: u64 = 1_795_316_901_058_209_693;
const AT_L_A: [u64; 2] = [1_795_316_901_063_624_171, 1_795_316_901_069_337_444];
const AT_L_E: [u64; 2] = [1_795_316_901_073_647_850, 1_795_316_901_079_246_659];
const AT_S_A: [u64; 2] = [1_795_316_901_084_409_004, 1_795_316_901_088_452_850];
const AT_S_B: u64 = 1_795_316_901_092_116_118;

/// DEBUG DIGEST of the dataset once loaded by this build, the slide logs
/// in their second format (recorded from this build with Redis 7.0.15;
/// when the fixtures were made, with the first format, it was
/// 45631f3bf40e1b63122d024c195c7006801b005c).
const DATASET_DIGEST: &str = "3fcc3441cae62f746166dc8278aea7f60003df62";

/// The calls that made the dataset (as a client sent them) and the clock
/// each ran at. The AOF fixture holds exactly these, with `AT <clock>`.
fn calls() -> Vec<(Vec<&'static str>, u64)> {
    vec![
        (
            vec!["RL.THROTTLE", "t:a", "4", "1", "315360000", "2"],
            AT_T_A,
        ),
        (
            vec!["RL.THROTTLE", "t:b", "13", "7", "315360000", "8"],
            AT_T_B,
        ),
        (vec!["RL.SLIDE", "l:a", "5", "315360000", "1"], AT_L_A[0]),
        (vec!["RL.SLIDE", "l:a", "5", "315360000", "2"], AT_L_A[1]),
        (vec!["RL.SLIDE", "l:e", "2", "31536000", "2"], AT_L_E[0]),
        // Limited under a ten times longer window: the expiry moves out.
        (vec!["RL.SLIDE", "l:e", "2", "315360000", "1"], AT_L_E[1]),
        (
            vec!["RL.SLICE", "s:a", "5", "315360000", "4", "2"],
            AT_S_A[0],
        ),
        (
            vec!["RL.SLICE", "s:a", "5", "315360000", "4", "1"],
            AT_S_A[1],
        ),
        (
            vec!["RL.SLICE", "s:b", "100", "315360000000", "7", "42", "MS"],
            AT_S_B,
        ),
    ]
}

/// The three encodings, written out field by field.
///
/// GCRA: the TAT as `whole` ns (u64) plus `frac / den` of a ns (u32, u32).
fn throttle_encoding(whole: u64, frac: u32, den: u32) -> Vec<u8> {
    let mut out = whole.to_le_bytes().to_vec();
    out.extend_from_slice(&frac.to_le_bytes());
    out.extend_from_slice(&den.to_le_bytes());
    out
}

/// SLIDE, first format (what the fixture files hold): the number of units
/// (u64), then each unit's timestamp in ns (u64), oldest first.
fn slide_encoding_v1(units: &[u64]) -> Vec<u8> {
    let mut out = (units.len() as u64).to_le_bytes().to_vec();
    for e in units {
        out.extend_from_slice(&e.to_le_bytes());
    }
    out
}

/// SLIDE, second format (what this build saves): the number of entries,
/// then per entry `(delta << 1) | counted` with delta in µs since the
/// previous entry (the first: since the epoch) and, when counted, its
/// count - 2; then the log's clock in ns after the first nanosecond of
/// the newest entry's µs; all varints. `entries`: (µs, count).
fn slide_encoding(entries: &[(u64, u64)], clock: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(&mut out, entries.len() as u64);
    let mut previous = 0;
    for &(t, count) in entries {
        varint(&mut out, ((t - previous) << 1) | u64::from(count > 1));
        if count > 1 {
            varint(&mut out, count - 2);
        }
        previous = t;
    }
    varint(&mut out, clock - ((previous - 1) * 1_000 + 1));
    out
}

/// An instant in ns rounded up to the µs, where a slide log keeps it.
fn micros_up(ns: u64) -> u64 {
    ns.div_ceil(1_000)
}

/// The instants (ns) a slide log made of units at `units` (ns, the last
/// one its clock) holds them at: their µs rounded up, but the clock in
/// the clock's µs.
fn slide_instants(units: &[u64]) -> Vec<u64> {
    let clock = *units.last().expect("a unit");
    units
        .iter()
        .map(|&ns| (micros_up(ns) * 1_000).min(clock))
        .collect()
}

/// SLICE: window in ns, slice count, head slice index (u64 each), then the
/// `slices + 1` counters (u32), oldest slice (`head - slices`) first.
fn slice_encoding(window: u64, slices: u64, head: u64, counters: &[u32]) -> Vec<u8> {
    assert_eq!(counters.len() as u64, slices + 1);
    let mut out = Vec::new();
    for field in [window, slices, head] {
        out.extend_from_slice(&field.to_le_bytes());
    }
    for c in counters {
        out.extend_from_slice(&c.to_le_bytes());
    }
    out
}

fn ceil_div(a: u128, b: u128) -> u128 {
    a.div_ceil(b)
}

/// A time in the reply: `ns` rounded up to the unit.
fn in_unit(ns: u128, unit_ns: u128) -> i64 {
    ceil_div(ns, unit_ns) as i64
}

/// One key of the fixture dataset and everything pinned about it.
struct Key {
    name: &'static str,
    type_name: &'static str,
    /// The tag and encoding the fixture files hold.
    saved_tag: u8,
    saved: Vec<u8>,
    /// Today's encoding version and encoding of the same state (what DUMP
    /// shows once loaded).
    version: u64,
    encoding: Vec<u8>,
    /// What the state's `mem_usage` computes: the struct and its buffer,
    /// once loaded from a saved state...
    memory: i64,
    /// ...and once made by replaying the commands (a buffer grown call by
    /// call may be larger).
    memory_replayed: i64,
    pexpiretime: i64,
    digest: &'static str,
    /// A peek with the key's own parameters...
    peek: Vec<&'static str>,
    /// ...and its exact reply at an instant (ns since the epoch).
    reply: Box<dyn Fn(u128) -> [i64; 5]>,
}

impl Key {
    fn module_id(&self) -> u64 {
        module_id(self.type_name, self.version)
    }
}

/// The six keys, their states computed from the calls that made them
/// (the formulas of docs/DESIGN.md), and the values recorded when the fixtures were made.
fn keys() -> Vec<Key> {
    let s = NS_PER_S as u128;
    let ms = NS_PER_MS as u128;

    // GCRA, in units of 1/count ns: T = period, τ = (max_burst + 1) × period.
    // A peek at `now`: ttl = tat - now, remaining = floor((τ - ttl) / T),
    // reset_after = ttl.
    let throttle = |burst: u128, count: u128, period: u128, tat_scaled: u128, unit: u128| {
        move |now: u128| {
            let tolerance = (burst + 1) * period;
            let ttl = tat_scaled.saturating_sub(now * count);
            let remaining = (tolerance.saturating_sub(ttl) / period).min(burst + 1);
            [
                0,
                (burst + 1) as i64,
                remaining as i64,
                -1,
                in_unit(ceil_div(ttl, count), unit),
            ]
        }
    };
    // t:a: 1 per ten years, burst 4; two units at AT_T_A.
    let t_a = u128::from(AT_T_A) + 2 * W;
    // t:b: 7 per ten years, burst 13; eight units: a TAT with a fraction.
    let t_b = u128::from(AT_T_B) * 7 + 8 * W;
    assert_ne!(t_b % 7, 0, "the fixture pins a fraction of a ns");

    // SLIDE at `now`: the units counted are those at instants e (ns,
    // `slide_instants`) with e + window > now; reset_after is the newest
    // counted unit's leave time.
    let slide = |limit: i64, window: u128, units: Vec<u64>, unit: u128| {
        move |now: u128| {
            let counted: Vec<u128> = slide_instants(&units)
                .into_iter()
                .map(u128::from)
                .filter(|&e| e + window > now)
                .collect();
            let reset = counted.last().map_or(0, |&e| e + window - now);
            [
                0,
                limit,
                limit - counted.len() as i64,
                -1,
                in_unit(reset, unit),
            ]
        }
    };

    // SLICE: idx(t) = floor(t × S / W), start(j) = ceil(j × W / S); units
    // of slice `head` are counted until slice head + S + 1 starts.
    let slice_head = |t: u64, slices: u128| u128::from(t) * slices / W;
    let slice_start = |j: u128, slices: u128| ceil_div(j * W, slices);
    let slice = |limit: i64, slices: u128, head: u128, units: i64, unit: u128| {
        move |now: u128| {
            let end = slice_start(head + slices + 1, slices);
            let counted = if now < end { units } else { 0 };
            let reset = end.saturating_sub(now);
            [0, limit, limit - counted, -1, in_unit(reset, unit)]
        }
    };
    let s_a_head = slice_head(AT_S_A[0], 4);
    assert_eq!(
        s_a_head,
        slice_head(AT_S_A[1], 4),
        "both calls in one slice"
    );
    let s_b_head = slice_head(AT_S_B, 7);

    vec![
        Key {
            name: "t:a",
            type_name: "rl-gcra--",
            saved_tag: b'G',
            saved: throttle_encoding(t_a as u64, 0, 1),
            version: 1,
            encoding: throttle_encoding(t_a as u64, 0, 1),
            memory: 16,
            memory_replayed: 16,
            pexpiretime: 2_426_036_901_052,
            digest: "bfd91fb48e893fda70bb24d7db4e444d74bfa422",
            peek: vec!["RL.THROTTLE", "t:a", "4", "1", "315360000", "0"],
            reply: Box::new(throttle(4, 1, W, t_a, s)),
        },
        Key {
            name: "t:b",
            type_name: "rl-gcra--",
            saved_tag: b'G',
            saved: throttle_encoding((t_b / 7) as u64, (t_b % 7) as u32, 7),
            version: 1,
            encoding: throttle_encoding((t_b / 7) as u64, (t_b % 7) as u32, 7),
            memory: 16,
            memory_replayed: 16,
            pexpiretime: 2_155_728_329_630,
            digest: "d1e0e4f34c4092ffb81302752573e91040d527d4",
            peek: vec!["RL.THROTTLE", "t:b", "13", "7", "315360000000", "0", "MS"],
            reply: Box::new(throttle(13, 7, W, t_b, ms)),
        },
        Key {
            name: "l:a",
            type_name: "rl-slide-",
            saved_tag: b'L',
            saved: slide_encoding_v1(&[AT_L_A[0], AT_L_A[1], AT_L_A[1]]),
            version: 2,
            // Three entries: two units in one µs are two entries.
            encoding: slide_encoding(
                &[
                    (micros_up(AT_L_A[0]), 1),
                    (micros_up(AT_L_A[1]), 1),
                    (micros_up(AT_L_A[1]), 1),
                ],
                AT_L_A[1],
            ),
            // The struct (64 bytes), its tail holding the newest entry and
            // a ring the 2 others, as loaded; replayed, the ring took 4
            // entries when the tail first moved there.
            memory: 72 + 2 * 4,
            memory_replayed: 72 + 4 * 4,
            pexpiretime: 2_110_676_901_070,
            digest: "6191c633694949011778aeb7705492a642b9c244",
            peek: vec!["RL.SLIDE", "l:a", "5", "315360000", "0"],
            reply: Box::new(slide(5, W, vec![AT_L_A[0], AT_L_A[1], AT_L_A[1]], s)),
        },
        Key {
            name: "l:e",
            type_name: "rl-slide-",
            saved_tag: b'L',
            saved: slide_encoding_v1(&[AT_L_E[0], AT_L_E[0]]),
            version: 2,
            encoding: slide_encoding(
                &[(micros_up(AT_L_E[0]), 1), (micros_up(AT_L_E[0]), 1)],
                AT_L_E[0],
            ),
            // The struct, its tail holding the 2 entries: no ring.
            memory: 72,
            memory_replayed: 72,
            // Ten years after its units, not one: the limited call moved it.
            pexpiretime: 2_110_676_901_074,
            digest: "d2f1bae1a3af673659e2a6490d73112cb34b32c9",
            peek: vec!["RL.SLIDE", "l:e", "2", "315360000000", "0", "MS"],
            reply: Box::new(slide(2, W, vec![AT_L_E[0], AT_L_E[0]], ms)),
        },
        Key {
            name: "s:a",
            type_name: "rl-slice-",
            saved_tag: b'S',
            saved: slice_encoding(W as u64, 4, s_a_head as u64, &[0, 0, 0, 0, 3]),
            version: 1,
            encoding: slice_encoding(W as u64, 4, s_a_head as u64, &[0, 0, 0, 0, 3]),
            // The struct (56 bytes) and 5 counters of 4 bytes.
            memory: 64 + 5 * 4,
            memory_replayed: 64 + 5 * 4,
            pexpiretime: 2_128_680_000_000,
            digest: "6ea4d8ce5b362d15278bc0c9015f83ccc8f5e72c",
            peek: vec!["RL.SLICE", "s:a", "5", "315360000", "4", "0"],
            reply: Box::new(slice(5, 4, s_a_head, 3, s)),
        },
        Key {
            name: "s:b",
            type_name: "rl-slice-",
            saved_tag: b'S',
            saved: slice_encoding(W as u64, 7, s_b_head as u64, &[0, 0, 0, 0, 0, 0, 0, 42]),
            version: 1,
            encoding: slice_encoding(W as u64, 7, s_b_head as u64, &[0, 0, 0, 0, 0, 0, 0, 42]),
            memory: 64 + 8 * 4,
            memory_replayed: 64 + 8 * 4,
            pexpiretime: 2_117_417_142_858,
            digest: "202983b25125bc8a0ed3795e249cbdc3d698b58e",
            peek: vec!["RL.SLICE", "s:b", "100", "315360000000", "7", "0", "MS"],
            reply: Box::new(slice(100, 7, s_b_head, 42, ms)),
        },
    ]
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("fixture dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy fixture");
        }
    }
}

/// The commands of an AOF file (RESP arrays of bulk strings).
fn aof_commands(path: &Path) -> Vec<Vec<Vec<u8>>> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut at = 0;
    let line = |at: &mut usize, prefix: u8| -> usize {
        assert_eq!(bytes[*at], prefix, "at byte {at} of {}", path.display());
        let end = *at + bytes[*at..].windows(2).position(|w| w == b"\r\n").unwrap();
        let n = std::str::from_utf8(&bytes[*at + 1..end])
            .unwrap()
            .parse()
            .unwrap();
        *at = end + 2;
        n
    };
    let mut out = Vec::new();
    while at < bytes.len() {
        let argc = line(&mut at, b'*');
        let mut args = Vec::new();
        for _ in 0..argc {
            let len = line(&mut at, b'$');
            args.push(bytes[at..at + len].to_vec());
            assert_eq!(&bytes[at + len..at + len + 2], b"\r\n");
            at += len + 2;
        }
        out.push(args);
    }
    out
}

fn words(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

#[test]
fn the_aof_fixture_holds_the_commands_as_replicated() {
    let dir = fixtures().join("aof-commands/appendonlydir");
    assert_eq!(
        std::fs::read_to_string(dir.join("appendonly.aof.manifest")).unwrap(),
        "file appendonly.aof.1.base.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    assert!(aof_commands(&dir.join("appendonly.aof.1.base.aof")).is_empty());
    let mut expected = vec![words(&["SELECT", "0"])];
    for (args, at) in calls() {
        let at = at.to_string();
        expected.push(words(&[args.as_slice(), &["AT", &at]].concat()));
    }
    assert_eq!(
        aof_commands(&dir.join("appendonly.aof.1.incr.aof")),
        expected
    );
}

#[test]
fn the_rewritten_aof_fixture_holds_each_state_and_its_expiry() {
    let dir = fixtures().join("aof-rewritten/appendonlydir");
    assert_eq!(
        std::fs::read_to_string(dir.join("appendonly.aof.manifest")).unwrap(),
        "file appendonly.aof.2.base.aof seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
    );
    assert!(aof_commands(&dir.join("appendonly.aof.2.incr.aof")).is_empty());
    let commands = aof_commands(&dir.join("appendonly.aof.2.base.aof"));
    assert_eq!(commands[0], words(&["SELECT", "0"]));
    let rest = &commands[1..];
    let keys = keys();
    assert_eq!(rest.len(), 2 * keys.len(), "RL.STATE and PEXPIREAT per key");
    for pair in rest.chunks(2) {
        let key = keys
            .iter()
            .find(|k| pair[0].get(1).map(Vec::as_slice) == Some(k.name.as_bytes()))
            .unwrap_or_else(|| panic!("unexpected command {:?}", pair[0]));
        let mut payload = vec![key.saved_tag];
        payload.extend_from_slice(&key.saved);
        assert_eq!(
            pair[0],
            vec![b"RL.STATE".to_vec(), key.name.as_bytes().to_vec(), payload],
            "{}",
            key.name
        );
        assert_eq!(
            pair[1],
            words(&["PEXPIREAT", key.name, &key.pexpiretime.to_string()]),
            "{}",
            key.name
        );
    }
}

/// Everything the fixture dataset must read as, on a server that loaded
/// it (and runs with `rdbcompression no`, so that DUMP shows the bytes);
/// `replayed`: made by replaying the commands rather than loading states.
fn assert_fixture_dataset(con: &mut Connection, what: &str, replayed: bool) {
    let keys = keys();
    assert_eq!(dbsize(con), keys.len() as i64, "{what}");
    for key in &keys {
        let name = key.name;
        let t: String = redis::cmd("TYPE").arg(name).query(con).unwrap();
        assert_eq!(t, key.type_name, "{what}: {name}");
        assert_eq!(pexpiretime(con, name), key.pexpiretime, "{what}: {name}");
        assert_eq!(digest_value(con, name), key.digest, "{what}: {name}");
        let dump: Vec<u8> = redis::cmd("DUMP").arg(name).query(con).unwrap();
        let body = &dump[..dump.len() - 10];
        assert_eq!(
            hex(body),
            hex(&dump_body(key.module_id(), &key.encoding)),
            "{what}: DUMP of {name}"
        );

        let sent = unix_ns() as u128;
        let got = five(con, &key.peek);
        let received = unix_ns() as u128;
        let (early, late) = ((key.reply)(sent), (key.reply)(received));
        for i in 0..5 {
            let (lo, hi) = (early[i].min(late[i]), early[i].max(late[i]));
            assert!(
                (lo..=hi).contains(&got[i]),
                "{what}: {:?} replied {got:?}; computed {early:?} to {late:?}",
                key.peek
            );
        }
    }
    assert_eq!(digest(con), DATASET_DIGEST, "{what}: DEBUG DIGEST");
    let memory = |k: &Key| {
        if replayed {
            k.memory_replayed
        } else {
            k.memory
        }
    };
    let usage: Vec<(&str, i64)> = keys.iter().map(|k| (k.name, memory(k))).collect();
    assert_memory_usage(con, &usage);

    // A limited request on the loaded log: it must wait for the oldest of
    // its two units, ten years after they came (exactly: they are in the
    // log's clock's µs), and changes nothing.
    let sent = unix_ns() as u128;
    let r = five(con, &["RL.SLIDE", "l:e", "2", "315360000", "1"]);
    let received = unix_ns() as u128;
    let leave = u128::from(slide_instants(&[AT_L_E[0], AT_L_E[0]])[0]) + W;
    assert_eq!(leave, u128::from(AT_L_E[0]) + W);
    let range =
        in_unit(leave - received, NS_PER_S as u128)..=in_unit(leave - sent, NS_PER_S as u128);
    assert_eq!(&r[..3], &[1, 2, 0], "{what}: {r:?}");
    assert!(range.contains(&r[3]) && r[4] == r[3], "{what}: {r:?}");
    let e = keys.iter().find(|k| k.name == "l:e").unwrap();
    assert_eq!(digest_value(con, "l:e"), e.digest, "{what}");
    assert_eq!(pexpiretime(con, "l:e"), e.pexpiretime, "{what}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Starts a server on a copy of a fixture, checks the dataset, then checks
/// it again after the server saved and reloaded it itself (DEBUG RELOAD):
/// what this build writes reads back the same.
fn load(fixture: &str, extra: &[&str]) {
    let source = fixtures().join(fixture);
    let mut args = vec!["--save", "", "--rdbcompression", "no"];
    args.extend_from_slice(extra);
    let server = Server::start_prepared(|dir| copy_dir(&source, dir), &args);
    let mut con = server.conn();
    assert_fixture_dataset(&mut con, fixture, fixture == "aof-commands");
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    assert_fixture_dataset(&mut con, &format!("{fixture}, after DEBUG RELOAD"), false);
}

#[test]
fn an_rdb_of_redis_7_0_loads() {
    load("rdb", &["--appendonly", "no", "--dbfilename", "dump.rdb"]);
}

#[test]
fn an_aof_of_time_carrying_commands_loads() {
    load(
        "aof-commands",
        &["--appendonly", "yes", "--aof-use-rdb-preamble", "no"],
    );
}

#[test]
fn a_rewritten_aof_of_states_loads() {
    load(
        "aof-rewritten",
        &["--appendonly", "yes", "--aof-use-rdb-preamble", "no"],
    );
}
