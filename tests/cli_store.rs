//! The store lifecycle from the command line: init, add, upsert, get, delete, stats.

mod common;

use common::{samples, TestStore};
use predicates::prelude::*;
use serde_json::json;

#[test]
fn init_creates_a_store_and_refuses_to_overwrite_it() {
    let store = TestStore::new();
    assert!(store.path().join("config.toml").is_file());
    assert!(store.path().join("text/meta.json").is_file());
    store
        .cmd()
        .arg("init")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("a store already exists"));
}

#[test]
fn knowledge_db_home_chooses_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home-store");
    let mut cmd = assert_cmd::Command::cargo_bin("knowledge-db").unwrap();
    cmd.env("KNOWLEDGE_DB_HOME", &home)
        .arg("init")
        .assert()
        .success();
    assert!(home.join("config.toml").is_file());
}

#[test]
fn a_missing_store_says_how_to_create_one() {
    let store = TestStore::uninitialised();
    store
        .cmd()
        .args(["search", "x"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("knowledge-db init --store"));
}

#[test]
fn a_store_of_another_format_version_is_refused() {
    let store = TestStore::new();
    let old = store.set_config(&[("format_version", "99")]);
    assert_eq!(old, ["3"]);
    store.cmd().arg("stats").assert().code(1).stderr(
        predicate::str::contains("format version 99")
            .and(predicate::str::contains("reads version 3")),
    );
}

#[test]
fn adding_the_same_files_twice_is_a_no_op() {
    let store = TestStore::new();
    let first = store.json(&["add", samples().to_str().unwrap()]);
    assert_eq!(first["added"], 10);
    let before = store.snapshot();
    let second = store.json(&["add", samples().to_str().unwrap()]);
    assert_eq!(
        (second["added"].as_u64(), second["unchanged"].as_u64()),
        (Some(0), Some(10))
    );
    assert_eq!(before, store.snapshot(), "a no-op add must not write");
}

#[test]
fn a_changed_record_replaces_the_old_one() {
    let store = TestStore::new();
    let v1 = store.write(
        "v1.json",
        br#"{"id": "n1", "title": "Cache", "text": "we use memcached"}"#,
    );
    let v2 = store.write(
        "v2.json",
        br#"{"id": "n1", "title": "Cache", "text": "we moved to valkey"}"#,
    );
    store.cmd().arg("add").arg(&v1).assert().success();
    let report = store.json(&["add", v2.to_str().unwrap()]);
    assert_eq!(report["updated"], 1);
    assert_eq!(store.json(&["stats"])["records"], 1);
    assert_eq!(store.search_ids(&["valkey"]), ["n1"]);
    assert!(store.search_ids(&["memcached"]).is_empty());
}

#[test]
fn stdin_takes_json_and_jsonl() {
    let store = TestStore::new();
    store
        .cmd()
        .args(["add", "-"])
        .write_stdin(r#"{"id": "a", "text": "alpha release notes"}"#)
        .assert()
        .success();
    store
        .cmd()
        .args(["add", "-"])
        .write_stdin("{\"id\": \"b\", \"text\": \"beta\"}\n{\"id\": \"c\", \"text\": \"gamma\"}\n")
        .assert()
        .success();
    assert_eq!(store.json(&["stats"])["records"], 3);
}

#[test]
fn segment_and_task_json_round_trip_verbatim() {
    let store = TestStore::new();
    store.add_samples();
    let original: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(samples().join("compressed_context/seg-auth-0001.json")).unwrap(),
    )
    .unwrap();
    let got = store.json(&["get", "seg-auth-0001"]);
    assert_eq!(got["source"], original);
    assert_eq!(got["kind"], "segment");
    let task = store.json(&["get", "9b7e11d0-55aa-4c1e-8f0e-6a2d4b9c0f33:1"]);
    assert_eq!(task["kind"], "task");
    assert_eq!(
        task["source"]["subject"],
        "Fix flaky webhook signature test"
    );
}

#[test]
fn namespace_flags_place_records() {
    let store = TestStore::new();
    let corpus = store.write(
        "corpus.jsonl",
        b"{\"_id\": \"c1|1\", \"text\": \"hiking trip\", \"metadata\": {\"conv\": \"c1\"}}\n\
          {\"_id\": \"c2|1\", \"text\": \"hiking boots\", \"metadata\": {\"conv\": \"c2\"}}\n",
    );
    store
        .cmd()
        .args(["add", "--format", "beir", "--namespace-field", "conv"])
        .arg(&corpus)
        .assert()
        .success();
    assert_eq!(
        store.json(&["stats"])["by_namespace"],
        json!({"c1": 1, "c2": 1})
    );
    assert_eq!(store.search_ids(&["hiking", "--namespace", "c2"]), ["c2|1"]);
    assert_eq!(store.search_ids(&["hiking", "--all-namespaces"]).len(), 2);
    let note = store.write("n.json", br#"{"id": "p1", "text": "project note"}"#);
    store
        .cmd()
        .args(["add", "--namespace", "proj"])
        .arg(&note)
        .assert()
        .success();
    assert_eq!(
        store.search_ids(&["project", "--namespace", "proj"]),
        ["p1"]
    );
}

#[test]
fn get_and_delete_report_missing_ids() {
    let store = TestStore::new();
    store.add_samples();
    store
        .cmd()
        .args(["get", "nope"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no record with id nope"));
    let out = store
        .cmd()
        .args(["delete", "note-style", "nope", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report,
        json!({"deleted": ["note-style"], "missing": ["nope"]})
    );
    assert_eq!(store.json(&["stats"])["records"], 9);
    assert!(store
        .search_ids(&["ruff format"])
        .iter()
        .all(|id| id != "note-style"));
}

#[test]
fn stats_counts_by_kind_tier_and_namespace() {
    let store = TestStore::new();
    store.add_samples();
    let stats = store.json(&["stats"]);
    assert_eq!(stats["records"], 10);
    assert_eq!(
        stats["by_kind"],
        json!({"message": 2, "note": 2, "segment": 3, "task": 3})
    );
    assert_eq!(stats["by_tier"], json!({"l2": 10}));
    assert_eq!(stats["format_version"], 3);
    assert!(stats["text_index_bytes"].as_u64().unwrap() > 0);
    assert_eq!(stats["oldest"], "2026-01-05T10:42:00Z");
}

#[test]
fn dry_run_validates_without_writing() {
    let store = TestStore::new();
    let before = store.snapshot();
    store
        .cmd()
        .args(["add", "--dry-run"])
        .arg(samples())
        .assert()
        .success();
    assert_eq!(before, store.snapshot());
}

#[test]
fn help_shows_examples_and_usage_errors_exit_2() {
    let store = TestStore::new();
    store
        .cmd()
        .args(["search", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Examples:"));
    store.cmd().arg("search").assert().code(2);
    store
        .cmd()
        .args(["search", "x", "--since", "soon"])
        .assert()
        .code(2);
    store.cmd().arg("frobnicate").assert().code(2);
}

#[test]
fn config_can_make_adds_embed_later() {
    let store = TestStore::new();
    let old = store.set_config(&[("on_add", "\"later\"")]);
    assert_eq!(old, ["\"now\""]);
    store
        .cmd()
        .args(["add", "-"])
        .write_stdin(r#"{"id":"n1","text":"deferred vector"}"#)
        .assert()
        .success();
    let stats = store.json(&["stats"]);
    assert_eq!(stats["vectors"]["without_vector"], 1, "{stats}");
    assert_eq!(stats["vector_graphs"], 0);
}
