//! The replay of every corpus and saved crash input through the targets'
//! entry points (`make test`, stable toolchain), and the seed writer.

use std::path::{Path, PathBuf};

use super::*;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// Every corpus input and every saved crash of every target, through
/// the function the target calls: a fixed crash stays fixed.
#[test]
fn corpora_and_crashes_replay() {
    let dir = fuzz_dir();
    let mut total = 0;
    for (name, target) in TARGETS {
        let started = std::time::Instant::now();
        let corpus = files(&dir.join("corpus").join(name));
        assert!(
            !corpus.is_empty(),
            "fuzz/corpus/{name}/ is empty: its seeds are made by `make fuzz-seeds`"
        );
        let mut inputs = corpus;
        inputs.extend(files(&dir.join("regressions").join(name)));
        inputs.extend(files(&dir.join("artifacts").join(name)));
        for path in &inputs {
            let data = std::fs::read(path).expect("an input");
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name} panics on {}", path.display());
        }
        total += inputs.len();
        eprintln!(
            "{name}: {} inputs in {:.1} s",
            inputs.len(),
            started.elapsed().as_secs_f64()
        );
    }
    assert!(total > 0);
    // No folder names a target that is not in the table.
    for folder in ["corpus", "regressions", "artifacts"] {
        let Ok(entries) = std::fs::read_dir(dir.join(folder)) else {
            continue;
        };
        for entry in entries {
            let name = entry.expect("an entry").file_name();
            let name = name.to_string_lossy();
            assert!(
                TARGETS.iter().any(|(t, _)| *t == name),
                "fuzz/{folder}/{name} is no target"
            );
        }
    }
}

/// Every target has its file in fuzz/fuzz_targets/, which calls it.
#[test]
fn every_target_has_its_file() {
    for (name, _) in TARGETS {
        let path = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            text.contains(&format!("fuzzing::{name}(")),
            "{}",
            path.display()
        );
    }
}

/// A small deterministic generator (xorshift64*), for the seeds.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// The RL.STATE payloads of the AOF fixture (tests/fixtures), read
/// from its RESP commands.
fn fixture_payloads() -> Vec<Vec<u8>> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/aof-rewritten/appendonlydir");
    let mut out = Vec::new();
    for path in files(&dir) {
        let bytes = std::fs::read(&path).expect("an AOF file");
        let mut rest = bytes.as_slice();
        let mut command: Vec<Vec<u8>> = Vec::new();
        // Bulk strings one after another; an array header starts a
        // new command.
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            let line = &rest[..pos.saturating_sub(1)];
            rest = &rest[pos + 1..];
            match line.first() {
                Some(b'*') => {
                    if command.len() == 3 && command[0] == b"RL.STATE" {
                        out.push(command[2].clone());
                    }
                    command.clear();
                }
                Some(b'$') => {
                    let len: usize = std::str::from_utf8(&line[1..])
                        .expect("a length")
                        .parse()
                        .expect("a length");
                    command.push(rest[..len].to_vec());
                    rest = &rest[len + 2..];
                }
                _ => {}
            }
        }
        if command.len() == 3 && command[0] == b"RL.STATE" {
            out.push(command[2].clone());
        }
    }
    out
}

/// Saved states of `L` made by running random scripts on a new one,
/// each as today's encoding, up to 12 distinct ones.
fn made_states<L: Kind + PartialEq>(
    rng: &mut Rng,
    release: impl Fn(&mut L, Nanos, &[u8]) -> bool + Copy,
) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for _ in 0..400 {
        let script = rng.bytes(200);
        let state = exercise(L::default(), &mut Script { bytes: &script }, release);
        let bytes = state.encode();
        // Within libFuzzer's default input length (4,096 bytes).
        if state != L::default() && bytes.len() < 3_000 && !out.contains(&bytes) {
            out.push(bytes);
        }
        if out.len() == 12 {
            break;
        }
    }
    out
}

/// A state target's input: a script, then the payload in the format
/// `format` picks (0: today's).
fn state_input(rng: &mut Rng, format: u8, payload: &[u8]) -> Vec<u8> {
    let mut script = rng.bytes(60);
    script[0] = format;
    let mut out = vec![script.len() as u8];
    out.extend_from_slice(&script);
    out.extend_from_slice(payload);
    out
}

fn lines(first: u8, words: &[&str]) -> Vec<u8> {
    let mut out = vec![first];
    out.extend_from_slice(words.join("\n").as_bytes());
    out
}

/// Writes the seed corpora into fuzz/corpus/<target>/seed-*: states
/// the fixtures hold and states random scripts build, and arguments
/// of every command, valid and not. Run by `make fuzz-seeds`.
#[test]
#[ignore]
fn write_seeds() {
    let mut rng = Rng(0x5eed_1234_5678_9abc);
    let mut seeds: Vec<(&str, Vec<u8>)> = Vec::new();
    for payload in fixture_payloads() {
        seeds.push(("rl_state", payload.clone()));
        let target = match payload[0] {
            b'G' => "state_throttle",
            b'M' => "state_slide",
            b'S' => "state_slice",
            _ => continue,
        };
        seeds.push((target, state_input(&mut rng, 0, &payload[1..])));
    }
    let kinds: [(&str, u8, Vec<Vec<u8>>); 5] = [
        (
            "state_throttle",
            ThrottleState::TAG,
            made_states::<ThrottleState>(&mut rng, no_release),
        ),
        (
            "state_slide",
            SlideState::TAG,
            made_states::<SlideState>(&mut rng, no_release),
        ),
        (
            "state_slice",
            SliceState::TAG,
            made_states::<SliceState>(&mut rng, no_release),
        ),
        (
            "state_lease",
            LeaseState::TAG,
            made_states::<LeaseState>(&mut rng, lease_release),
        ),
        (
            "state_quota",
            QuotaState::TAG,
            made_states::<QuotaState>(&mut rng, no_release),
        ),
    ];
    for (target, tag, states) in kinds {
        assert!(!states.is_empty(), "no state made for {target}");
        for payload in states {
            seeds.push((target, state_input(&mut rng, 0, &payload)));
            let mut tagged = vec![tag];
            tagged.extend_from_slice(&payload);
            seeds.push(("rl_state", tagged));
        }
    }
    // RL.SLIDE's first format (tag L): a count, then one instant per
    // unit.
    let mut v1 = Vec::new();
    v1.extend_from_slice(&2u64.to_le_bytes());
    v1.extend_from_slice(&TODAY.to_le_bytes());
    v1.extend_from_slice(&(TODAY + 5).to_le_bytes());
    seeds.push(("state_slide", state_input(&mut rng, 1, &v1)));
    let mut tagged = vec![b'L'];
    tagged.extend_from_slice(&v1);
    seeds.push(("rl_state", tagged));

    // RL.<NAME>: the first byte picks the kind (its value mod 5) and
    // the flags (0x10: from the master, 0x20: the hard bounds).
    for (first, words) in [
        (0u8, &["15", "30", "60"][..]),
        (0, &["0", "1", "1", "1", "MS"]),
        (0x10, &["15", "30", "60", "3", "AT", "1700000000000000000"]),
        (
            0x30,
            &["1000000000000", "4294967295", "315360000", "1000000000000"],
        ),
        (1, &["5", "60"]),
        (1, &["5", "60", "2", "MS", "PRECISION", "100"]),
        (0x21, &["100000000", "315360000", "0", "PRECISION", "0"]),
        (2, &["10", "60", "6"]),
        (2, &["10", "60", "6", "3", "MS"]),
        (0x22, &["4294967295", "315360000", "1000000"]),
        (3, &["5", "30", "worker-1"]),
        (3, &["5", "30", "worker-1", "2", "MS"]),
        (3, &["1000000", "315360000", "\u{0}\u{ff}"]),
        (4, &["100", "DAY"]),
        (4, &["100", "MONTH", "1", "TZ", "Europe/Paris"]),
        (4, &["1000000000000000", "YEAR", "TZ", "+05:30", "MS"]),
        (0x14, &["5", "WEEK", "0", "AT", "18446744073709551615"]),
    ] {
        seeds.push(("args_limiter", lines(first, words)));
    }
    // RL.ALLOW (odd first byte) and RL.PEEK (even).
    for (first, words) in [
        (1u8, &["1", "k", "THROTTLE", "10", "5", "60"][..]),
        (
            1,
            &[
                "2", "a", "b", "SLIDE", "5", "60", "SLICE", "10", "60", "6", "QUANTITY", "2",
            ],
        ),
        (
            1,
            &[
                "2", "a", "b", "LEASE", "5", "30", "QUOTA", "9", "DAY", "TZ", "UTC", "ID", "w",
            ],
        ),
        (0, &["1", "k", "lease", "5", "30"]),
        (
            0,
            &[
                "3",
                "a",
                "b",
                "c",
                "throttle",
                "1",
                "1",
                "1",
                "slide",
                "1",
                "1",
                "PRECISION",
                "1",
                "quota",
                "1",
                "HOUR",
                "MS",
            ],
        ),
        (
            0x11,
            &[
                "1",
                "k",
                "SLIDE",
                "5",
                "60",
                "AT",
                "1700000000000000000",
                "QUANTITY",
                "0",
            ],
        ),
        (
            1,
            &[
                "2", "k", "k", "THROTTLE", "1", "1", "1", "THROTTLE", "1", "1", "1",
            ],
        ),
    ] {
        seeds.push(("args_several", lines(first, words)));
    }
    // RL.REFUND (first byte 0 or 1), then the small readers.
    for (first, words) in [
        (0u8, &["THROTTLE", "10", "5", "60", "1"][..]),
        (0, &["SLIDE", "5", "60", "2", "MS"]),
        (0, &["SLICE", "10", "60", "6", "1"]),
        (0, &["QUOTA", "100", "DAY", "TZ", "Asia/Kathmandu", "3"]),
        (0, &["LEASE", "5", "30", "1"]),
        (
            0x10,
            &["SLIDE", "5", "60", "PRECISION", "1", "1", "AT", "5"],
        ),
        (2, &["16"]),
        (3, &["18446744073709551615"]),
        (4, &["9223372036854775807"]),
        (5, &["worker-1"]),
        (6, &["a\u{7f}b c"]),
        (7, &["1700000000000000000"]),
    ] {
        seeds.push(("args_keys", lines(first, words)));
    }
    for name in [
        "UTC",
        "utc",
        "+05:30",
        "-18:00",
        "+18:01",
        "Europe/Paris",
        "europe/PARIS",
        "America/Argentina/ComodRivadavia",
        "Etc/GMT+12",
        "Australia/Lord_Howe",
        "-00:00",
        "Etc/Unknown",
    ] {
        seeds.push(("zone", name.as_bytes().to_vec()));
    }
    for n in [1usize, 5, 40] {
        let mut input = Vec::new();
        for i in 0..n {
            let len = [1usize, 2, 8, 127, 128, 129, 0, 16][i % 8];
            input.push(len as u8);
            input.extend(rng.bytes(len));
            input.push(i as u8);
        }
        seeds.push(("lease_ids", input));
    }

    let dir = fuzz_dir().join("corpus");
    for (target, _) in TARGETS {
        for path in files(&dir.join(target)) {
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("seed-"))
            {
                std::fs::remove_file(&path).expect("an old seed removed");
            }
        }
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (target, bytes) in seeds {
        let n = counts.entry(target).or_default();
        *n += 1;
        let folder = dir.join(target);
        std::fs::create_dir_all(&folder).expect("a corpus folder");
        std::fs::write(folder.join(format!("seed-{n:03}")), &bytes).expect("a seed");
        // Each seed passes its target.
        let run = TARGETS
            .iter()
            .find(|(t, _)| *t == target)
            .expect("a target")
            .1;
        run(&bytes);
    }
    eprintln!("seeds: {counts:?}");
}
