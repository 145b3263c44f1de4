//! `export` and `add` of an export: every record of every kind, live and
//! archived (pruned too), comes back unchanged in another store, with its
//! vector, access counts and archiving note; loading it twice changes nothing.

mod common;

use std::collections::BTreeSet;

use common::{samples, TestStore};
use serde_json::Value;

const SESSION: &str = "7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47";

/// A store with every kind in both tiers: samples (embedded), an ingested
/// transcript, a note in another namespace; reads; one session archived and
/// pruned, then more archived unpruned.
fn populated() -> TestStore {
    let store = TestStore::new();
    store.cmd().arg("add").arg(samples()).assert().success();
    store
        .cmd()
        .args(["ingest", "--embed", "later"])
        .arg(samples().join("transcripts"))
        .assert()
        .success();
    let other = store.write(
        "other.json",
        br#"{"id":"n-other","title":"Release notes","text":"ship the invoices export on Friday","namespace":"other"}"#,
    );
    store.cmd().arg("add").arg(&other).assert().success();
    store.search_ids(&["refresh token oauth2.py"]);
    store.json(&["get", "seg-build-0002"]);
    store.json(&["archive", "--session", SESSION]);
    store.json(&["prune", "--older-than", "0s"]);
    store.json(&["archive", "--older-than", "1d", "--namespace", "default"]);
    store
}

fn export_lines(store: &TestStore, args: &[&str]) -> Vec<Value> {
    let out = store.cmd().arg("export").args(args).output().expect("run");
    assert!(
        out.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

fn sorted(lines: &[Value]) -> Vec<String> {
    let mut text: Vec<String> = lines.iter().map(Value::to_string).collect();
    text.sort();
    text
}

fn count_where(lines: &[Value], key: &str, value: &str) -> usize {
    lines.iter().filter(|l| l[key] == value).count()
}

#[test]
fn an_export_loads_into_another_store_unchanged() {
    let a = populated();
    let lines = export_lines(&a, &[]);
    let stats = a.json(&["stats"]);
    assert_eq!(lines.len() as u64, stats["records"].as_u64().unwrap());
    for kind in ["segment", "task", "message", "note"] {
        assert!(count_where(&lines, "kind", kind) > 0, "no {kind} exported");
    }
    assert!(count_where(&lines, "tier", "l2") > 0 && count_where(&lines, "tier", "l3") > 0);
    assert!(
        lines.iter().any(|l| l["pruned"] == true),
        "no pruned record"
    );
    assert!(lines.iter().any(|l| l["vector"].is_object()), "no vector");
    assert!(
        lines.iter().any(|l| l["dropped"].is_array()),
        "no pruning note"
    );
    let read = lines.iter().find(|l| l["id"] == "seg-build-0002").unwrap();
    assert!(read["access_count"].as_u64().unwrap() >= 1, "{read}");

    let file = a.write(
        "backup.jsonl",
        a.cmd().arg("export").output().unwrap().stdout.as_slice(),
    );
    let b = TestStore::new();
    // `--embed later`: the samples' recent real Claude Code session stays in
    // L2 without vectors (ingested with `--embed later`); embedding it here
    // would add what the export did not hold.
    let added = b.json(&["add", "--embed", "later", file.to_str().unwrap()]);
    assert_eq!(
        added["added"].as_u64().unwrap() as usize,
        lines.len(),
        "{added}"
    );
    // Vectors came with the lines: the model ran for nothing.
    assert_eq!(added["embedded"], 0, "{added}");
    b.cmd().arg("verify").assert().success();

    let again = export_lines(&b, &[]);
    assert_eq!(sorted(&again), sorted(&lines));
    let (sa, sb) = (a.json(&["stats"]), b.json(&["stats"]));
    for key in ["records", "by_kind", "by_tier", "by_namespace"] {
        assert_eq!(sa[key], sb[key], "{key}");
    }
    // Loading it again changes nothing.
    let twice = b.json(&["add", file.to_str().unwrap()]);
    assert_eq!(
        (twice["added"].as_u64(), twice["updated"].as_u64()),
        (Some(0), Some(0)),
        "{twice}"
    );
    assert_eq!(sorted(&export_lines(&b, &[])), sorted(&lines));
    // `get` shows the same record in both stores, live or archived (each get
    // is a read in its own store, so both counts move alike).
    for id in ["seg-auth-0001", "seg-build-0002", "n-other"] {
        assert_eq!(a.json(&["get", id]), b.json(&["get", id]), "{id}");
    }
}

#[test]
fn filters_select_tier_kind_session_and_namespace() {
    let a = populated();
    let all = export_lines(&a, &[]);
    let l3 = export_lines(&a, &["--tier", "l3"]);
    assert!(!l3.is_empty() && l3.iter().all(|l| l["tier"] == "l3"));
    let l2 = export_lines(&a, &["--tier", "l2"]);
    assert_eq!(l2.len() + l3.len(), all.len());
    let segments = export_lines(&a, &["--kind", "segment"]);
    assert!(!segments.is_empty() && segments.iter().all(|l| l["kind"] == "segment"));
    let session = export_lines(&a, &["--session", SESSION]);
    assert!(!session.is_empty());
    assert!(
        session.iter().all(|l| l.to_string().contains(SESSION)),
        "a line of another session"
    );
    let other = export_lines(&a, &["--namespace", "other"]);
    let ids: BTreeSet<&str> = other.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(ids, BTreeSet::from(["n-other"]));
    let none = export_lines(&a, &["--namespace", "nope"]);
    assert!(none.is_empty());
}

#[test]
fn without_vectors_the_texts_are_embedded_again_later() {
    let a = populated();
    let lines = export_lines(&a, &["--tier", "l2", "--no-vectors"]);
    assert!(lines.iter().all(|l| l.get("vector").is_none()));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let b = TestStore::new();
    let file = b.write("no-vectors.jsonl", text.as_bytes());
    let added = b.json(&["add", "--embed", "later", file.to_str().unwrap()]);
    assert_eq!(
        added["without_vector"].as_u64().unwrap() as usize,
        lines.len()
    );
}

#[test]
fn draft_vectors_are_exported_marked_and_not_loaded_back() {
    let a = TestStore::new();
    a.cmd()
        .args(["ingest", "--embed", "later"])
        .arg(samples().join("transcripts"))
        .assert()
        .success();
    let drafted = a.json(&["embed", "--draft"]);
    let count = drafted["embedded"].as_u64().unwrap();
    assert!(count > 0 && drafted["drafts"] == true, "{drafted}");
    assert_eq!(
        a.json(&["stats"])["vectors"]["drafts"].as_u64(),
        Some(count)
    );
    let lines = export_lines(&a, &["--tier", "l2"]);
    assert!(
        lines.iter().all(|l| l["vector"]["draft"] == true),
        "every vector marked"
    );
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let b = TestStore::new();
    let file = b.write("drafts.jsonl", text.as_bytes());
    let added = b.json(&["add", "--embed", "later", file.to_str().unwrap()]);
    assert_eq!(
        added["without_vector"].as_u64().unwrap() as usize,
        lines.len()
    );
}

#[test]
fn a_bad_export_line_names_its_field_and_writes_nothing() {
    let a = populated();
    let mut lines = export_lines(&a, &["--tier", "l2"]);
    lines[1]["access_count"] = Value::from("many");
    lines[2]["source"] = Value::from(3);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let b = TestStore::new();
    let file = b.write("bad.jsonl", text.as_bytes());
    let before = b.snapshot();
    let out = b.cmd().arg("add").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.jsonl:2: field `access_count`"),
        "{stderr}"
    );
    assert!(stderr.contains("bad.jsonl:3: field `source`"), "{stderr}");
    assert_eq!(b.snapshot(), before, "the store changed");
}

#[test]
fn export_to_a_file_is_atomic_and_summarised() {
    let a = populated();
    let path = a.dir.path().join("out.jsonl");
    let report = a.json(&["export", "--out", path.to_str().unwrap()]);
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        written.lines().count() as u64,
        report["records"].as_u64().unwrap()
    );
    assert_eq!(
        report["l2"].as_u64().unwrap() + report["l3"].as_u64().unwrap(),
        report["records"].as_u64().unwrap()
    );
    // Nothing but the file is left in its folder.
    let leftovers: Vec<_> = std::fs::read_dir(a.dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
