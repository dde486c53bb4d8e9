//! The benchmark's smoke run: `python3 scripts/bench.py --quick --json <tmp>`
//! must exit 0 and report every row with a positive throughput in every
//! regime and a positive memory figure. No timing assertions: the figures
//! of a quick run on a shared machine mean nothing, only their presence.
//!
//! python3, redis-server (`$REDIS_SERVER`) and redis-benchmark
//! (`$REDIS_BENCHMARK`) are required: a missing one fails the test.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const ROWS: &[&str] = &[
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
];
const REGIMES: &[&str] = &["hot_P16", "rand_P16", "hot_P1", "rand_P1"];

fn require(program: &str) {
    match Command::new(program).arg("--version").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "`{program} --version` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "{program} is required by the benchmark smoke test and was not found ({e}); \
             on Debian: apt-get install python3 redis-server redis-tools"
        ),
    }
}

#[test]
fn quick_benchmark_reports_every_row() {
    require("python3");
    require(&std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into()));
    require(&std::env::var("REDIS_BENCHMARK").unwrap_or_else(|_| "redis-benchmark".into()));

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("temp dir");
    let json_path = tmp.path().join("bench.json");
    let out = Command::new("python3")
        .arg("scripts/bench.py")
        .arg("--quick")
        .arg("--json")
        .arg(&json_path)
        .current_dir(root)
        .output()
        .expect("run python3 scripts/bench.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "bench.py --quick failed ({}):\n{stdout}\n{stderr}",
        out.status
    );

    let text = std::fs::read_to_string(&json_path).expect("bench.py wrote no JSON");
    let report = Json::parse(&text).unwrap_or_else(|e| panic!("bad JSON ({e}):\n{text}"));
    let rows = report.get("rows").and_then(Json::array).expect("rows");
    let by_name: BTreeMap<&str, &Json> = rows
        .iter()
        .map(|r| (r.get("name").and_then(Json::str).expect("row name"), r))
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
            let t = row
                .get("throughput")
                .and_then(|t| t.get(regime))
                .unwrap_or_else(|| panic!("{name}: no {regime} figures"));
            let rps = t.get("rps_median").and_then(Json::num);
            assert!(rps.is_some_and(|x| x > 0.0), "{name} {regime}: rps {rps:?}");
            let errors = t.get("errors").and_then(Json::num);
            assert_eq!(errors, Some(0.0), "{name} {regime}: error replies");
        }
        let bytes = row.get("bytes_per_key").and_then(Json::num);
        let check = row.get("limit_check").and_then(Json::str);
        if name == "PING" {
            assert_eq!(bytes, None, "PING has no key");
            continue;
        }
        assert!(
            bytes.is_some_and(|x| x > 0.0),
            "{name}: bytes per key {bytes:?}"
        );
        let memory = row.get("memory").expect("memory");
        assert_eq!(
            memory.get("dbsize").and_then(Json::num),
            memory.get("keys").and_then(Json::num),
            "{name}: the memory fill did not create one key per call"
        );
        if name != "INCR" {
            assert_eq!(check, Some("ok"), "{name}: does not limit as expected");
        }
    }

    // The other sections are present and positive.
    let per_unit = report
        .get("memory_per_unit")
        .and_then(|m| m.get("marginal_bytes_per_unit"))
        .expect("memory per unit");
    for name in ["RL.SLIDE", "lua:zset_log"] {
        let v = per_unit.get(name).and_then(Json::num);
        assert!(v.is_some_and(|x| x > 0.0), "{name}: bytes per unit {v:?}");
    }
    let slices = report.get("memory_slices60").expect("60-slice memory");
    for name in ["RL.SLICE", "lua:hash_slices"] {
        let v = slices
            .get(name)
            .and_then(|s| s.get("memory_usage"))
            .and_then(Json::num);
        assert!(v.is_some_and(|x| x > 0.0), "{name}: memory usage {v:?}");
    }
    for family in ["RL.SLIDE", "RL.SLICE"] {
        let v = report
            .get("scaling")
            .and_then(|s| s.get(family))
            .and_then(|s| s.get("largest_over_smallest_median"))
            .and_then(Json::num);
        assert!(v.is_some_and(|x| x > 0.0), "{family}: scaling ratio {v:?}");
    }
    let targets = report
        .get("targets")
        .and_then(Json::array)
        .expect("targets");
    assert!(!targets.is_empty(), "no targets reported");
    assert!(
        stdout.contains("| command |"),
        "no Markdown table:\n{stdout}"
    );
}

/// Just enough JSON to read the report (no dependency for it).
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(BTreeMap<String, Json>),
}

impl Json {
    fn parse(text: &str) -> Result<Json, String> {
        let mut p = Parser {
            text,
            s: text.as_bytes(),
            i: 0,
        };
        let v = p.value()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("trailing data at {}", p.i));
        }
        Ok(v)
    }

    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.get(key),
            _ => None,
        }
    }

    fn num(&self) -> Option<f64> {
        match self {
            Json::Num(x) => Some(*x),
            _ => None,
        }
    }

    fn str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    fn array(&self) -> Option<&Vec<Json>> {
        match self {
            Json::Arr(a) => Some(a),
            _ => None,
        }
    }
}

struct Parser<'a> {
    text: &'a str,
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at {}", c as char, self.i))
        }
    }

    fn literal(&mut self, word: &str, v: Json) -> Result<Json, String> {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(format!("bad literal at {}", self.i))
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.ws();
        match self.s.get(self.i) {
            None => Err("unexpected end".into()),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'N') => self.literal("NaN", Json::Num(f64::NAN)),
            Some(b'"') => self.string().map(Json::Str),
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Json::Arr(items));
                }
                loop {
                    items.push(self.value()?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Arr(items));
                        }
                        _ => return Err(format!("bad array at {}", self.i)),
                    }
                }
            }
            Some(b'{') => {
                self.i += 1;
                let mut map = BTreeMap::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(map));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.eat(b':')?;
                    let v = self.value()?;
                    map.insert(k, v);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(map));
                        }
                        _ => return Err(format!("bad object at {}", self.i)),
                    }
                }
            }
            Some(_) => {
                let start = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || b"+-.".contains(&self.s[self.i]))
                {
                    self.i += 1;
                }
                let word = &self.text[start..self.i];
                word.parse::<f64>()
                    .map(Json::Num)
                    .map_err(|_| format!("bad number {word:?} at {start}"))
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.eat(b'"')?;
        let mut out = String::new();
        loop {
            let c = self.text[self.i..]
                .chars()
                .next()
                .ok_or("unterminated string")?;
            self.i += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let e = self.s.get(self.i).copied().ok_or("bad escape")?;
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hex = self.text.get(self.i..self.i + 4).ok_or("bad \\u")?;
                            let code = u32::from_str_radix(hex, 16).map_err(|e| e.to_string())?;
                            self.i += 4;
                            out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                        }
                        _ => return Err(format!("bad escape at {}", self.i)),
                    }
                }
                c => out.push(c),
            }
        }
    }
}
