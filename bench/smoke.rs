//! The benchmark's smoke run: `python3 bench --quick --module
//! <the .so this cargo test built> --json <tmp>` must exit 0 and report every
//! row with a positive throughput in every regime and a positive memory
//! figure, the expirations of every run, and, for the kept-state regimes,
//! every row's random keys still there and every call allowed; the
//! machine in the header, the instruction counts (when valgrind is
//! installed, else the reason they are missing) and the targets, each with
//! a verdict, PASS and FAIL nowhere else. No timing assertions: the figures
//! of a quick run on a shared machine mean nothing, only their presence.
//!
//! The benchmark builds nothing when given `--module`, so this test starts no
//! nested release build. python3, redis-server (`$REDIS_SERVER`) and
//! redis-benchmark (`$REDIS_BENCHMARK`) are required: a missing one fails
//! the test with the command that installs it.

#[path = "../tests/common/mod.rs"]
mod common;
use common::module_path;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const ROWS: &[&str] = &[
    "FLOOR.THROTTLE",
    "FLOOR.KEEP",
    "RL.ALLOW",
    "PING",
    "INCR",
    "RL.THROTTLE",
    "RL.SLIDE",
    "RL.SLICE",
    "lua:zset_log",
    "lua:hash_slices",
    "lua:token_bucket",
    "lua:gcra",
    "lua:fixed_window",
    "lua:zset_semaphore",
    "RL.LEASE",
    "backend:RL.THROTTLE",
    "backend:RL.SLIDE",
    "backend:RL.SLICE",
    "backend:RL.QUOTA",
    "backend:RL.LEASE",
    "backend:RL.ALLOW",
];
/// The kinds of the section on the module, its Lua backend and the peers.
const BACKEND_KINDS: &[&str] = &[
    "RL.THROTTLE",
    "RL.SLIDE",
    "RL.SLICE",
    "RL.QUOTA",
    "RL.LEASE",
    "RL.ALLOW",
];
/// In the order the benchmark runs them (`REGIMES` in bench/harness/regimes.py).
const REGIMES: &[&str] = &["hot_P16", "rand_P16", "rand_churn_P16", "hot_P1", "rand_P1"];
/// The regimes on random keys that keep their state between calls.
const KEPT: &[&str] = &["rand_P16", "rand_P1"];

fn require(program: &str) {
    match Command::new(program).arg("--version").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "`{program} --version` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "{program} is required by the benchmark smoke test and was not found ({e}): \
             run `scripts/deps.sh --test` (or `make test`, which runs it) from the \
             repository root, or set REDIS_SERVER / REDIS_BENCHMARK"
        ),
    }
}

/// The number at `path` (object keys) in `v`, if there is one.
fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

#[test]
fn quick_benchmark_reports_every_row() {
    require("python3");
    require(&std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into()));
    require(&std::env::var("REDIS_BENCHMARK").unwrap_or_else(|_| "redis-benchmark".into()));

    let module = module_path();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("temp dir");
    let json_path = tmp.path().join("bench.json");
    // The floor module, which this `cargo test` built as an example.
    let floor = module
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("examples").join("libfloor.so"))
        .expect("target dir");
    assert!(
        floor.exists(),
        "{} not found: run `cargo build --example floor` (make test does)",
        floor.display()
    );
    let out = Command::new("python3")
        .arg("bench")
        .arg("--quick")
        .arg("--module")
        .arg(&module)
        .arg("--floor")
        .arg(&floor)
        .arg("--json")
        .arg(&json_path)
        .current_dir(root)
        .output()
        .expect("run python3 bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "bench --quick failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        !stderr.contains("cargo build"),
        "bench built the module although it was given one:\n{stderr}"
    );
    assert!(
        stdout.contains(&module.display().to_string()),
        "the report does not name the module it was given:\n{stdout}"
    );

    let text = std::fs::read_to_string(&json_path).expect("bench wrote no JSON");
    let report: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON ({e}):\n{text}"));
    let regimes: Vec<&str> = report["regimes"]
        .as_array()
        .expect("regimes")
        .iter()
        .map(|r| r["id"].as_str().expect("regime id"))
        .collect();
    assert_eq!(regimes, REGIMES, "the regimes and their order");
    for regime in report["regimes"].as_array().expect("regimes") {
        let id = regime["id"].as_str().expect("regime id");
        let kept = regime["keys"].as_str() == Some("kept");
        assert_eq!(kept, KEPT.contains(&id), "{id}: keys {}", regime["keys"]);
    }
    let rows = report["rows"].as_array().expect("rows");
    let by_name: BTreeMap<&str, &Value> = rows
        .iter()
        .map(|r| (r["name"].as_str().expect("row name"), r))
        .collect();

    let mut expected: Vec<&str> = ROWS.to_vec();
    if std::env::var_os("REDIS_CELL_SO").is_some() {
        expected.push("CL.THROTTLE");
    }
    for name in expected {
        let row = by_name
            .get(name)
            .unwrap_or_else(|| panic!("no row {name} in {:?}", by_name.keys()));
        for regime in REGIMES {
            let rps = num(row, &["throughput", regime, "rps_median"]);
            assert!(rps.is_some_and(|x| x > 0.0), "{name} {regime}: rps {rps:?}");
            let errors = num(row, &["throughput", regime, "errors"]);
            assert_eq!(errors, Some(0.0), "{name} {regime}: error replies");
            let usec = num(row, &["throughput", regime, "usec_per_call_median"]);
            assert!(
                usec.is_some_and(|x| x >= 0.0),
                "{name} {regime}: commandstats usec_per_call {usec:?}"
            );
            let expired = num(row, &["throughput", regime, "expired_per_call_median"]);
            assert!(
                expired.is_some_and(|x| x >= 0.0),
                "{name} {regime}: expired per call {expired:?}"
            );
        }
        for regime in REGIMES {
            let floor = num(row, &["throughput", regime, "ratio_to_floor_median"]);
            assert!(
                floor.is_some_and(|x| x > 0.0),
                "{name} {regime}: x floor {floor:?}"
            );
        }
        if !["INCR", "PING", "FLOOR.THROTTLE", "FLOOR.KEEP"].contains(&name) {
            assert_eq!(
                row["limit_check"].as_str(),
                Some("ok"),
                "{name}: does not limit as expected"
            );
        }
        // Every random key of the kept-state regimes still there after the
        // repetitions and (limiters) every one with units left.
        let kept = if ["PING", "FLOOR.THROTTLE"].contains(&name) {
            "n/a"
        } else {
            "ok"
        };
        assert_eq!(
            row["kept_check"].as_str(),
            Some(kept),
            "{name}: kept state {}",
            row["kept_state"]
        );
        let bytes = row["bytes_per_key"].as_f64();
        if [
            "PING",
            "FLOOR.THROTTLE",
            "FLOOR.KEEP",
            "RL.ALLOW",
            "backend:RL.ALLOW",
        ]
        .contains(&name)
        {
            // No key, or three keys per call: no figure per key.
            assert_eq!(bytes, None, "{name}: bytes per key");
            continue;
        }
        assert!(
            bytes.is_some_and(|x| x > 0.0),
            "{name}: bytes per key {bytes:?}"
        );
        assert_eq!(
            num(row, &["memory", "dbsize"]),
            num(row, &["memory", "keys"]),
            "{name}: the memory fill did not create one key per call"
        );
    }
    // Kept state: the keys' state outlives the benchmark, so hardly any key
    // expires during those runs (in the churn regime a GCRA key expires
    // after nearly every call).
    let expired = num(&report, &["kept_state", "expired_during_runs"]);
    let calls = num(&report, &["kept_state", "calls"]);
    assert!(
        expired
            .zip(calls)
            .is_some_and(|(e, c)| c > 0.0 && e * 10.0 < c),
        "kept-state runs: {expired:?} keys expired in {calls:?} calls"
    );
    let allow = num(&report, &["allow_vs_singles", "ratio_median"]);
    assert!(
        allow.is_some_and(|x| x > 0.0),
        "RL.ALLOW vs singles: {allow:?}"
    );

    // The other sections are present and positive.
    for name in ["RL.SLIDE", "lua:zset_log"] {
        let v = num(
            &report,
            &["memory_per_unit", "marginal_bytes_per_unit", name],
        );
        assert!(v.is_some_and(|x| x > 0.0), "{name}: bytes per unit {v:?}");
    }
    for name in ["RL.SLICE", "lua:hash_slices"] {
        let v = num(&report, &["memory_slices60", name, "memory_usage"]);
        assert!(v.is_some_and(|x| x > 0.0), "{name}: memory usage {v:?}");
    }
    for path in [
        &["memory_precision", "p:prec", "memory_usage"][..],
        &["memory_precision", "p:prec", "entries"],
        &["memory_precision", "p:exact", "memory_usage"],
        &["memory_precision", "scaled_minute", "memory_usage"],
        &["memory_precision", "scaled_minute", "entries"],
    ] {
        let v = num(&report, path);
        assert!(v.is_some_and(|x| x > 0.0), "{path:?}: {v:?}");
    }
    for family in ["RL.SLIDE", "RL.SLICE", "RL.ALLOW"] {
        for figure in [
            "largest_over_smallest_median",
            "cost_largest_over_smallest_median",
        ] {
            let v = num(&report, &["scaling", family, figure]);
            assert!(v.is_some_and(|x| x > 0.0), "{family}: {figure} {v:?}");
        }
    }
    // Each command against the script doing the same job, in every regime.
    let pairs = report["same_job"].as_array().expect("same_job");
    let named: Vec<(&str, &str)> = pairs
        .iter()
        .map(|p| {
            (
                p["command"].as_str().expect("command"),
                p["script"].as_str().expect("script"),
            )
        })
        .collect();
    assert_eq!(
        named,
        [
            ("RL.THROTTLE", "lua:gcra"),
            ("RL.THROTTLE", "lua:token_bucket"),
            ("RL.SLIDE", "lua:zset_log"),
            ("RL.SLICE", "lua:hash_slices"),
        ]
    );
    for (pair, (command, script)) in pairs.iter().zip(&named) {
        for regime in REGIMES {
            let v = num(pair, &["ratio_median", regime]);
            assert!(
                v.is_some_and(|x| x > 0.0),
                "{command} / {script} {regime}: {v:?}"
            );
        }
    }
    // The module, its Lua backend and the fastest peer, every regime.
    let kinds = report["lua_backend"].as_array().expect("lua_backend");
    let names: Vec<&str> = kinds
        .iter()
        .map(|k| k["command"].as_str().expect("command"))
        .collect();
    assert_eq!(names, BACKEND_KINDS);
    for k in kinds {
        let name = k["command"].as_str().unwrap_or("");
        for regime in REGIMES {
            for figure in ["lua_over_peer_median", "module_over_lua_median"] {
                let v = num(k, &["regimes", regime, figure]);
                assert!(
                    v.is_some_and(|x| x > 0.0),
                    "{name} {regime}: {figure} {v:?}"
                );
            }
        }
        let usage = num(k, &["memory", "lua", "memory_usage"]);
        if name == "RL.ALLOW" {
            assert_eq!(usage, None, "{name}: three keys, no figure per key");
        } else {
            assert!(
                usage.is_some_and(|x| x > 0.0),
                "{name}: MEMORY USAGE {usage:?}"
            );
        }
    }
    assert!(
        stdout.contains("## The module, its Lua backend and the peer scripts"),
        "no Lua backend section:\n{stdout}"
    );
    assert!(
        stdout.contains("| command |"),
        "no Markdown table:\n{stdout}"
    );
    machine_and_instructions(&report);
    targets(&report, &stdout);
}

fn machine_and_instructions(report: &Value) {
    let model = report["machine_info"]["cpu_model"].as_str().unwrap_or("");
    assert!(
        !model.is_empty(),
        "no CPU model: {}",
        report["machine_info"]
    );
    let cores = num(report, &["machine_info", "cores"]);
    assert!(cores.is_some_and(|x| x >= 1.0), "cores {cores:?}");
    let instructions = &report["instructions"];
    if instructions["available"].as_bool() == Some(true) {
        for name in [
            "FLOOR.THROTTLE",
            "FLOOR.KEEP",
            "FLOOR.ALLOW",
            "INCR",
            "RL.THROTTLE",
            "RL.SLIDE",
            "RL.SLICE",
            "RL.ALLOW",
            "RL.PEEK",
        ] {
            let v = num(instructions, &["per_call", name]);
            assert!(v.is_some_and(|x| x > 0.0), "{name}: instructions {v:?}");
        }
    } else {
        // valgrind missing: the counts are left out, with the reason.
        let reason = instructions["reason"].as_str().unwrap_or("");
        assert!(
            !reason.is_empty(),
            "no instructions and no reason: {instructions}"
        );
    }
}

/// Every target judged or said not measured (with why), the commands not
/// in the module yet among them; PASS and FAIL only in the targets section.
fn targets(report: &Value, stdout: &str) {
    let targets = report["targets"].as_array().expect("targets");
    for group in ["1", "2", "3", "4", "RL.QUOTA", "RL.LEASE"] {
        assert!(
            targets.iter().any(|t| match &t["group"] {
                Value::Number(n) => n.to_string() == group,
                v => v.as_str() == Some(group),
            }),
            "no target of group {group}: {targets:?}"
        );
    }
    for t in targets {
        let verdict = t["verdict"].as_str().expect("verdict");
        assert!(
            verdict == "PASS" || verdict == "FAIL" || verdict.starts_with("not measured"),
            "verdict {verdict:?} of {t}"
        );
        let text = t["target"].as_str().unwrap_or("");
        let measured = t["measured"].as_str().unwrap_or("");
        assert!(!text.is_empty() && !measured.is_empty(), "{t}");
    }
    let section = stdout
        .split("## Targets")
        .nth(1)
        .and_then(|rest| rest.split("## Details").next())
        .unwrap_or_else(|| panic!("no targets section:\n{stdout}"));
    for line in stdout.lines() {
        if line.contains("PASS") || line.contains("FAIL") {
            assert!(
                section.contains(line),
                "PASS or FAIL outside the targets section: {line}"
            );
        }
    }
}
