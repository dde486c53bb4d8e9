//! The documentation's command examples, run for real.
//!
//! Every fenced block tagged `redis-cli` in README.md and in docs/*.md is a
//! session at a `redis-cli` prompt. Each file's blocks run in order against
//! one fresh server with the module this `cargo test` built (a missing
//! server or module fails the test, as everywhere in tests/), and every
//! reply must read exactly as the file shows it. The format:
//!
//! ```text
//! > RL.SLIDE rl:demo 10 60
//! 1) (integer) 0      # allowed: 10 per minute
//! 2) (integer) 10
//! 3) (integer) 9
//! 4) (integer) -1
//! 5) (integer) 60
//! > RL.INSPECT rl:demo
//!  1) type
//!  2) slide
//!  3) ttl
//!  4) (integer) 59000..60000
//! ...
//! ```
//!
//! - A line that starts with `> ` is a command; the lines after it, up to
//!   the next command or the end of the block, are its reply as redis-cli
//!   prints it in a terminal (RESP2: `(integer) 5`, `(nil)`, `(error) ERR
//!   ...`, bulk strings quoted, simple strings not, nested arrays indented).
//! - From two spaces followed by `#` to the end of a reply line is a
//!   comment. A command line has none: it is pasted into redis-cli as it
//!   is, and a comment there fails the test.
//! - Words are split at spaces; `"double quotes"` keep one word together.
//! - `N..M` where a reply shows an integer matches any integer from N to M.
//!   The files say next to each one what it depends on.
//! - A line `...` matches any number of reply lines, up to the first one
//!   that matches the line after it (or to the end of the reply).
//! - Lines that are empty once their comment is removed are skipped.
//! - `INFO` prints its text as redis-cli does, line by line, unquoted.
//!
//! Blocks tagged otherwise (`text`, `sh`, `console`) are not run: keep
//! there only what cannot run on a single fresh server (a replica, a
//! cluster, a configuration given at start-up, shell loops).

mod common;
use common::*;

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One `> command` of a block, with the reply lines shown under it.
#[derive(Debug)]
struct Step {
    /// 1-based line of the command in its file.
    line: usize,
    command: String,
    expected: Vec<String>,
}

/// The steps of every `redis-cli` block of `text`, in order.
fn steps(text: &str) -> Vec<Step> {
    #[derive(PartialEq)]
    enum In {
        Text,
        OtherBlock,
        Session,
    }
    let mut state = In::Text;
    let mut steps: Vec<Step> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(tag) = line.trim_start().strip_prefix("```") {
            state = match state {
                In::Text if tag.trim() == "redis-cli" => In::Session,
                In::Text => In::OtherBlock,
                In::OtherBlock | In::Session => In::Text,
            };
            continue;
        }
        if state != In::Session {
            continue;
        }
        if let Some(command) = line.strip_prefix("> ") {
            assert!(
                strip_comment(command) == command,
                "line {}: a comment on a command line: pasted into redis-cli it is sent as arguments \
                 (ERR unknown argument '#'); put it on a reply line",
                i + 1
            );
            steps.push(Step {
                line: i + 1,
                command: command.trim().to_string(),
                expected: Vec::new(),
            });
            continue;
        }
        let reply = strip_comment(line);
        if reply.trim().is_empty() {
            continue;
        }
        let step = steps
            .last_mut()
            .unwrap_or_else(|| panic!("line {}: a reply line before any `> ` command", i + 1));
        step.expected.push(reply.trim_end().to_string());
    }
    assert!(state == In::Text, "a fenced block is not closed");
    for step in &steps {
        assert!(
            !step.expected.is_empty(),
            "line {}: `{}` shows no reply",
            step.line,
            step.command
        );
    }
    steps
}

/// `line` without its comment: from two spaces followed by `#` on.
fn strip_comment(line: &str) -> &str {
    match line.find("  #") {
        Some(at) => &line[..at],
        None => line,
    }
}

/// A command line's words: split at spaces, `"..."` kept together (with
/// `\"` and `\\` inside).
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = command.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return out;
        };
        let mut word = String::new();
        if first == '"' {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => word.extend(chars.next()),
                    Some(c) => word.push(c),
                    None => panic!("unclosed quote in `{command}`"),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ' ' {
                    break;
                }
                word.push(c);
                chars.next();
            }
        }
        out.push(word);
    }
}

/// A reply as redis-cli prints it in a terminal (its `cliFormatReplyTTY`
/// for RESP2 replies), one string per line.
fn render(v: &Value) -> Vec<String> {
    let mut out = String::new();
    render_into(v, "", &mut out);
    out.lines().map(str::to_string).collect()
}

fn render_into(v: &Value, prefix: &str, out: &mut String) {
    match v {
        Value::Nil => out.push_str("(nil)\n"),
        Value::Int(n) => out.push_str(&format!("(integer) {n}\n")),
        Value::Okay => out.push_str("OK\n"),
        Value::SimpleString(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::BulkString(b) => {
            out.push_str(&repr(b));
            out.push('\n');
        }
        Value::ServerError(e) => {
            out.push_str(&format!("(error) {}", e.code()));
            if let Some(detail) = e.details() {
                out.push_str(&format!(" {detail}"));
            }
            out.push('\n');
        }
        Value::Array(items) if items.is_empty() => out.push_str("(empty array)\n"),
        Value::Array(items) => {
            let width = items.len().to_string().len();
            let nested = format!("{prefix}{}", " ".repeat(width + 2));
            for (i, item) in items.iter().enumerate() {
                let head = if i == 0 { "" } else { prefix };
                out.push_str(&format!("{head}{:>width$}) ", i + 1));
                render_into(item, &nested, out);
            }
        }
        other => panic!("a RESP3-only reply in a RESP2 session: {other:?}"),
    }
}

/// A bulk string quoted as redis-cli quotes it (`sdscatrepr`).
fn repr(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for &b in bytes {
        match b {
            b'\\' | b'"' => {
                s.push('\\');
                s.push(b as char);
            }
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x07 => s.push_str("\\a"),
            0x08 => s.push_str("\\b"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s.push('"');
    s
}

/// Runs one command line and renders its reply, or its error, as
/// redis-cli would.
fn run(con: &mut Connection, command: &str) -> Vec<String> {
    let words = words(command);
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    match redis::ConnectionLike::req_command(con, &cmd(&args)) {
        Ok(Value::BulkString(text)) if args[0].eq_ignore_ascii_case("INFO") => {
            String::from_utf8_lossy(&text)
                .lines()
                .map(str::to_string)
                .collect()
        }
        Ok(v) => render(&v),
        Err(e) => vec![format!("(error) {}", error_text(&e))],
    }
}

/// Whether `actual` reads as `expected`, where each `N..M` of `expected`
/// stands for an integer from N to M.
fn line_matches(expected: &str, actual: &str) -> bool {
    let (e, a) = (expected.as_bytes(), actual.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < e.len() {
        let after_word = i > 0 && (e[i - 1].is_ascii_alphanumeric() || e[i - 1] == b'.');
        if !after_word {
            if let Some((low, high, len)) = range_at(&e[i..]) {
                let Some((n, n_len)) = integer_at(&a[j..]) else {
                    return false;
                };
                if n < low || n > high {
                    return false;
                }
                i += len;
                j += n_len;
                continue;
            }
        }
        if j >= a.len() || e[i] != a[j] {
            return false;
        }
        i += 1;
        j += 1;
    }
    j == a.len()
}

/// `N..M` at the start of `s`: its bounds and length.
fn range_at(s: &[u8]) -> Option<(i64, i64, usize)> {
    let (low, low_len) = integer_at(s)?;
    let rest = s[low_len..].strip_prefix(b"..")?;
    let (high, high_len) = integer_at(rest)?;
    let len = low_len + 2 + high_len;
    let followed_by_word = s.get(len).is_some_and(|c| c.is_ascii_alphanumeric());
    (low <= high && !followed_by_word).then_some((low, high, len))
}

/// An integer (an optional `-`, then digits) at the start of `s`, and its
/// length.
fn integer_at(s: &[u8]) -> Option<(i64, usize)> {
    let sign = usize::from(s.first() == Some(&b'-'));
    let digits = s[sign..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let len = sign + digits;
    let n = std::str::from_utf8(&s[..len]).ok()?.parse().ok()?;
    Some((n, len))
}

/// Whether the reply `actual` reads as the lines `expected`, with `...`
/// standing for any lines up to the next expected one.
fn reply_matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == "..." => {
            (0..=actual.len()).any(|skip| reply_matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => {
            !actual.is_empty()
                && line_matches(first, &actual[0])
                && reply_matches(rest, &actual[1..])
        }
    }
}

/// Runs every redis-cli block of `file` on a fresh server; returns how many
/// commands ran and a description of each reply that differed.
fn check_file(file: &Path) -> (usize, Vec<String>) {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let steps = steps(&text);
    if steps.is_empty() {
        return (0, Vec::new());
    }
    let server = Server::start();
    let mut con = server.conn();
    let mut failures = Vec::new();
    for step in &steps {
        let actual = run(&mut con, &step.command);
        if !reply_matches(&step.expected, &actual) {
            failures.push(format!(
                "{}:{}: > {}\n  the file shows:\n    {}\n  the server replied:\n    {}",
                file.display(),
                step.line,
                step.command,
                step.expected.join("\n    "),
                actual.join("\n    ")
            ));
        }
    }
    (steps.len(), failures)
}

#[test]
fn the_documentation_shows_what_the_server_replies() {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .map(|dir| {
            dir.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md"))
                .collect()
        })
        .unwrap_or_default();
    docs.sort();
    files.extend(docs);

    let mut failures = Vec::new();
    for file in &files {
        let (ran, failed) = check_file(file);
        println!(
            "{}: {ran} commands, {} differ",
            file.display(),
            failed.len()
        );
        if file.ends_with("README.md") {
            assert!(
                ran >= 10,
                "README.md has only {ran} commands in redis-cli blocks: has its format changed?"
            );
        }
        failures.extend(failed);
    }
    assert!(
        failures.is_empty(),
        "{} replies differ from the documentation:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

// The checker's own rules, on made-up text.

#[test]
fn blocks_are_read_as_commands_and_replies() {
    let text = "intro\n```sh\n> not a command  # c\n```\n```redis-cli\n> RL.SLIDE \"a b\" 1 60\n1) (integer) 0    # allowed\n\n   # a note\n2) (integer) 1\n```\n";
    let s = steps(text);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].line, 6);
    assert_eq!(words(&s[0].command), ["RL.SLIDE", "a b", "1", "60"]);
    assert_eq!(s[0].expected, ["1) (integer) 0", "2) (integer) 1"]);
}

#[test]
#[should_panic(expected = "line 2: a comment on a command line")]
fn a_command_line_with_a_comment_is_refused() {
    steps("```redis-cli\n> RL.SLIDE k 1 60  # one per minute\n1) (integer) 0\n```\n");
}

#[test]
fn replies_render_as_redis_cli_prints_them() {
    let five = |n: i64| Value::Array((0..5).map(|i| Value::Int(n + i)).collect());
    let v = Value::Array(vec![
        Value::Int(0),
        Value::SimpleString("type".into()),
        Value::BulkString(b"a\"b\n".to_vec()),
        Value::Nil,
        Value::Array(vec![]),
        Value::Okay,
        Value::Array(vec![five(1), five(6)]),
        Value::Int(8),
        Value::Int(9),
        Value::Array((0..10).map(Value::Int).collect()),
    ]);
    let want = [
        " 1) (integer) 0",
        " 2) type",
        " 3) \"a\\\"b\\n\"",
        " 4) (nil)",
        " 5) (empty array)",
        " 6) OK",
        " 7) 1) 1) (integer) 1",
        "       2) (integer) 2",
        "       3) (integer) 3",
        "       4) (integer) 4",
        "       5) (integer) 5",
        "    2) 1) (integer) 6",
        "       2) (integer) 7",
        "       3) (integer) 8",
        "       4) (integer) 9",
        "       5) (integer) 10",
        " 8) (integer) 8",
        " 9) (integer) 9",
        "10)  1) (integer) 0",
        "     2) (integer) 1",
        "     3) (integer) 2",
        "     4) (integer) 3",
        "     5) (integer) 4",
        "     6) (integer) 5",
        "     7) (integer) 6",
        "     8) (integer) 7",
        "     9) (integer) 8",
        "    10) (integer) 9",
    ];
    assert_eq!(render(&v), want);
}

#[test]
fn ranges_and_ellipses_match_what_they_stand_for() {
    assert!(line_matches(
        "4) (integer) 59000..60000",
        "4) (integer) 59998"
    ));
    assert!(!line_matches(
        "4) (integer) 59000..60000",
        "4) (integer) 60001"
    ));
    assert!(line_matches("5) (integer) -1..1", "5) (integer) -1"));
    assert!(line_matches("(integer) 5", "(integer) 5"));
    assert!(!line_matches("(integer) 5", "(integer) 50"));
    assert!(!line_matches("(integer) 1..9", "(integer) 1..9x"));
    let lines = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let actual = lines(&["a", "b", "c", "d"]);
    assert!(reply_matches(&lines(&["a", "...", "d"]), &actual));
    assert!(reply_matches(&lines(&["a", "..."]), &actual));
    assert!(reply_matches(&lines(&["...", "c", "d"]), &actual));
    assert!(!reply_matches(&lines(&["a", "...", "x"]), &actual));
    assert!(!reply_matches(&lines(&["a", "b"]), &actual));
}
