//! A server scoped to one namespace answers as if no other namespace existed
//! (issue 38): bob's searches, recalls and refusals are byte for byte the
//! same on a store holding bob's records only and on one where alice holds
//! many records sharing bob's words. BM25's statistics (record count, field
//! lengths, each word's document frequency) are bob's own, so alice's
//! records move no score, no snippet, no order and no "nothing relevant".
//! (`HOSTILE_BIN=<another build>` runs it against that build.)

mod common;
mod hostile_support;

use std::path::Path;
use std::time::Duration;

use common::TestStore;
use hostile_support::{kdb, mcp_with_env, run, Mcp};
use serde_json::{json, Value};

/// Bob's notes: distinct lengths, so no two tie on a query.
fn bob() -> Vec<Value> {
    let texts = [
        ("bob-parser", "Parser rewrite", "the parser now rejects a trailing comma in the config file"),
        ("bob-migration", "Migration rollback", "rolled back the database migration after the index build timed out on staging"),
        ("bob-tokenizer", "Tokenizer", "split camelCase identifiers in the tokenizer, then the parser tests passed"),
        ("bob-cache", "Cache", "the query cache is keyed by the parser's normalised query and cleared on every migration"),
        ("bob-deploy", "Deploy notes", "deploy with the blue green switch; a failed migration leaves the old pods serving"),
        ("bob-flaky", "Flaky test", "the flaky parser test depended on the order of a hash map iteration"),
    ];
    texts
        .iter()
        .map(
            |(id, title, text)| json!({"id": id, "namespace": "bob", "title": title, "text": text}),
        )
        .collect()
}

/// Many records of alice's sharing bob's words, in other proportions.
fn alice() -> Vec<Value> {
    (0..300)
        .map(|i| {
            let text = match i % 3 {
                0 => format!("alice parser parser notes {i} about the tokenizer and the parser"),
                1 => format!("alice migration {i} of the billing schema, migration done"),
                _ => format!("alice unrelated gardening note {i}: tomatoes, basil, zucchini"),
            };
            json!({"id": format!("alice-{i}"), "namespace": "alice", "title": "", "text": text})
        })
        .collect()
}

/// The real model's location when it is installed, to run the hybrid path too.
fn model() -> Option<knowledge_db::embed::ModelLocation> {
    let model = knowledge_db::embed::ModelLocation::locate();
    (model.model_dir.exists() && model.runtime.exists()).then_some(model)
}

/// A store holding `records`, embedded by the model when there is one.
fn store_of(records: &[Vec<Value>]) -> TestStore {
    let store = TestStore::uninitialised();
    let mut init = kdb(&store);
    init.arg("init");
    let ran = run(init, b"", Duration::from_secs(60));
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    for (n, batch) in records.iter().enumerate() {
        let lines: String = batch.iter().map(|r| format!("{r}\n")).collect();
        let input = store.write(&format!("batch{n}.jsonl"), lines.as_bytes());
        let mut cmd = kdb(&store);
        match model() {
            Some(m) => cmd
                .env("KNOWLEDGE_DB_MODEL_DIR", &m.model_dir)
                .env("ORT_DYLIB_PATH", &m.runtime)
                .arg("add"),
            None => cmd.args(["add", "--embed", "later"]),
        };
        cmd.arg(&input);
        let ran = run(cmd, b"", Duration::from_secs(300));
        assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    }
    store
}

/// A server scoped to bob, with or without the model.
fn server(store: &TestStore, with_model: bool) -> Mcp {
    match (with_model, model()) {
        (true, Some(m)) => mcp_with_env(
            store,
            &["--namespace", "bob"],
            &[
                ("KNOWLEDGE_DB_MODEL_DIR", &m.model_dir),
                ("ORT_DYLIB_PATH", &m.runtime),
            ],
        ),
        _ => mcp_with_env(store, &["--namespace", "bob"], &[]),
    }
}

/// `value` without its timings, and with the test store's temporary folder
/// (named in "the model is not installed" messages) written `<dir>`.
fn untimed(mut value: Value, dir: &Path) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("took_ms");
                // When the record was added: the two stores are made apart.
                map.remove("added_at");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            // A tool's text content holding the same JSON.
            Value::String(text) if text.starts_with('{') => {
                if let Ok(mut inner) = serde_json::from_str::<Value>(text) {
                    strip(&mut inner);
                    *text = inner.to_string();
                }
            }
            _ => {}
        }
    }
    strip(&mut value);
    let text = value.to_string().replace(&*dir.to_string_lossy(), "<dir>");
    serde_json::from_str(&text).expect("JSON")
}

/// What bob asks, every answer of it (results, refusals) without timings.
fn answers(server: &mut Mcp, dir: &Path) -> Vec<Value> {
    let mut calls: Vec<(&str, Value)> = Vec::new();
    for query in [
        "parser",
        "migration rollback",
        "why did the parser tests fail",
        "tokenizer camelCase identifiers",
        "tomatoes basil",
        "billing schema migration",
        "kubernetes",
    ] {
        calls.push(("memory_search", json!({"query": query})));
        calls.push((
            "memory_search",
            json!({"query": query, "minScore": 0, "maxResults": 20}),
        ));
        calls.push(("memory_search", json!({"query": query, "tier": "all"})));
        calls.push(("memory_recall", json!({"prompt": query})));
    }
    calls.push((
        "memory_recall",
        json!({"prompt": "we rolled back the migration after the index build timed out"}),
    ));
    calls.push(("memory_get", json!({"id": "alice-0"})));
    // Counts and writes (issue 52): no size on disk that grows with alice's
    // records, and an id alice uses is taken as a free one is.
    calls.push(("memory_stats", json!({})));
    calls.push((
        "memory_add",
        json!({"records": [{"id": "alice-0", "text": "bob's parser note"}]}),
    ));
    calls.push(("memory_get", json!({"id": "alice-0"})));
    calls.push(("memory_stats", json!({})));
    calls
        .into_iter()
        .map(|(name, arguments)| {
            let answer = server.call("tools/call", json!({"name": name, "arguments": arguments}));
            json!({"call": name, "arguments": arguments, "answer": untimed(answer, dir)})
        })
        .collect()
}

#[test]
fn a_scoped_server_answers_the_same_whatever_other_namespaces_hold() {
    let alone = store_of(&[bob()]);
    let shared = store_of(&[
        alice(),
        bob(),
        alice()
            .into_iter()
            .take(30)
            .map(|mut r| {
                r["id"] = json!(format!("{}-again", r["id"].as_str().unwrap_or_default()));
                r
            })
            .collect(),
    ]);
    let variants: &[bool] = if model().is_some() {
        &[false, true]
    } else {
        &[false]
    };
    for &with_model in variants {
        let expected = answers(&mut server(&alone, with_model), alone.dir.path());
        let got = answers(&mut server(&shared, with_model), shared.dir.path());
        // Something was found, so the comparison is not of empty answers.
        let found = expected.iter().any(|a| {
            a["answer"]["result"]["structuredContent"]["results"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
        });
        assert!(found, "bob's searches found nothing: {expected:?}");
        for (e, g) in expected.iter().zip(&got) {
            assert_eq!(
                e, g,
                "with_model={with_model}: bob's answer changed when alice's records were added"
            );
        }
    }
}
