//! Every kind of the module's table is whole: registered as `RL.<NAME>`
//! with COMMAND DOCS, parsable as a spec of RL.ALLOW, shown by RL.INSPECT
//! under its name, and counted in INFO. The kinds are read from the server
//! itself (the spec alternatives COMMAND DOCS lists for RL.ALLOW, which
//! come from the table), so a kind added to the table is checked here
//! with nothing to write.

mod common;
use common::*;

/// A valid value for a parameter named `name`: what a user would write.
fn sample(name: &str) -> &'static str {
    match name {
        "max_burst" => "4",
        "count" | "limit" => "10",
        "slices" => "6",
        _ => "60", // period, window, ttl: seconds
    }
}

/// The fields of one COMMAND DOCS argument, by name.
fn doc_field<'a>(arg: &'a Value, name: &str) -> Option<&'a Value> {
    let Value::Array(items) = arg else {
        return field(arg, name);
    };
    items
        .chunks(2)
        .find(|pair| text(&pair[0]) == name)
        .map(|pair| &pair[1])
}

fn doc_args(arg: &Value) -> Vec<Value> {
    match doc_field(arg, "arguments") {
        Some(Value::Array(args)) => args.clone(),
        other => panic!("no arguments in {arg:?}: {other:?}"),
    }
}

/// Each kind's word and the words of one valid spec of it, built from
/// RL.ALLOW's COMMAND DOCS.
fn kinds_from_docs(con: &mut Connection) -> Vec<(String, Vec<String>)> {
    let docs: Value = cmd(&["COMMAND", "DOCS", "RL.ALLOW"]).query(con).unwrap();
    let Value::Array(top) = &docs else {
        panic!("{docs:?}")
    };
    let allow = &top[1];
    let spec = doc_args(allow)
        .into_iter()
        .find(|a| doc_field(a, "name").map(text).as_deref() == Some("spec"))
        .expect("RL.ALLOW documents its spec argument");
    let mut kinds = Vec::new();
    for block in doc_args(&spec) {
        let name = text(doc_field(&block, "name").unwrap());
        let mut words = Vec::new();
        for arg in doc_args(&block) {
            let optional = doc_field(&arg, "flags")
                .map(|f| strings(f).contains(&"optional".to_string()))
                .unwrap_or(false);
            if optional {
                continue;
            }
            match text(doc_field(&arg, "type").unwrap()).as_str() {
                "pure-token" => words.push(text(doc_field(&arg, "token").unwrap())),
                "oneof" => {
                    let first = doc_args(&arg).into_iter().next().unwrap();
                    words.push(text(doc_field(&first, "token").unwrap()));
                }
                _ => words.push(sample(&text(doc_field(&arg, "name").unwrap())).to_string()),
            }
        }
        kinds.push((name, words));
    }
    kinds
}

#[test]
fn every_kind_is_registered_parsed_inspected_and_counted() {
    let server = Server::start();
    let mut con = server.conn();
    let kinds = kinds_from_docs(&mut con);
    assert!(kinds.len() >= 3, "{kinds:?}");
    for (name, words) in &kinds {
        // Registered, with its documentation.
        let info: Value = cmd(&["COMMAND", "INFO", &format!("RL.{name}")])
            .query(&mut con)
            .unwrap();
        assert!(
            matches!(&info, Value::Array(a) if a.len() == 1 && !matches!(a[0], Value::Nil)),
            "RL.{name} is not registered: {info:?}"
        );
        // Parsable as a spec of RL.ALLOW, as its spec word says (words[0]).
        assert_eq!(&words[0], name, "{words:?}");
        let key = format!("kinds:{name}");
        let mut call = vec!["RL.ALLOW".to_string(), "1".into(), key.clone()];
        call.extend(words.iter().cloned());
        if name == "LEASE" {
            call.extend(["ID".to_string(), "worker-1".to_string()]);
        }
        let call: Vec<&str> = call.iter().map(String::as_str).collect();
        let reply = seven(&mut con, &call);
        assert_eq!(reply.binding[0], 0, "{call:?} was limited: {reply:?}");
        // Shown by RL.INSPECT under its name.
        let fields = inspect(&mut con, &key).expect("the key exists");
        assert_eq!(text(&fields[0].1), name.to_ascii_lowercase(), "{fields:?}");
        // Counted in INFO: its key, and its command's calls.
        let lower = name.to_ascii_lowercase();
        assert_eq!(
            info_field(&mut con, "ratelimit", &format!("ratelimit_{lower}_keys")),
            "1"
        );
        let _ = cmd(&["RL.INSPECT", &key]).query::<Value>(&mut con);
        let mut single = vec![format!("RL.{name}"), format!("{key}:single")];
        single.extend(words[1..].iter().cloned());
        if name == "LEASE" {
            single.push("worker-1".to_string());
        }
        let single: Vec<&str> = single.iter().map(String::as_str).collect();
        five(&mut con, &single);
        assert_eq!(
            info_field(&mut con, "ratelimit", &format!("ratelimit_{lower}_calls")),
            "1",
            "{single:?}"
        );
    }
}
