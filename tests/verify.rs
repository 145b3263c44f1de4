//! `verify` and `repair` on damaged stores: every kind of damage to derived files
//! is found and rebuilt from the stored embeddings; damage to the text index is
//! found and the index rebuilt from its documents (more in `tests/corruption.rs`);
//! records are never lost.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::TestStore;
use serde_json::Value;

/// A store with the data samples and a graph on every segment.
fn store() -> TestStore {
    let store = TestStore::new();
    store
        .cmd()
        .env("KNOWLEDGE_DB_HNSW_MIN_ROWS", "1")
        .arg("add")
        .arg(common::samples())
        .assert()
        .success();
    store
}

fn files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == extension))
        .collect()
}

fn verify(store: &TestStore) -> (bool, Value) {
    let out = store
        .cmd()
        .env("KNOWLEDGE_DB_HNSW_MIN_ROWS", "1")
        .args(["verify", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.success(), report["ok"].as_bool().unwrap());
    (out.status.success(), report)
}

fn failing(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["ok"].as_bool().unwrap())
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

fn repair(store: &TestStore) -> Value {
    let out = store
        .cmd()
        .env("KNOWLEDGE_DB_HNSW_MIN_ROWS", "1")
        .args(["repair", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn record_count(store: &TestStore) -> u64 {
    store.json(&["stats"])["records"].as_u64().unwrap()
}

#[test]
fn a_sound_store_verifies() {
    let store = store();
    let (ok, report) = verify(&store);
    assert!(ok, "{report}");
    assert!(report["records"].as_u64().unwrap() > 0);
    assert!(!files(&store.path().join("vectors"), "hnsw").is_empty());
}

#[test]
fn damaged_missing_and_stray_vector_files_are_rebuilt() {
    let store = store();
    let records = record_count(&store);
    let vectors = store.path().join("vectors");
    let vec_file = files(&vectors, "vec").remove(0);
    let mut bytes = fs::read(&vec_file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    fs::write(&vec_file, bytes).unwrap();
    fs::write(vectors.join("0000stray.vec"), b"left by a removed segment").unwrap();
    let (ok, report) = verify(&store);
    assert!(!ok);
    assert_eq!(failing(&report), ["vector files"], "{report}");

    let repaired = repair(&store);
    assert!(repaired["after"]["ok"].as_bool().unwrap(), "{repaired}");
    assert_eq!(repaired["removed"].as_array().unwrap().len(), 2);
    assert!(!vectors.join("0000stray.vec").exists());

    fs::remove_dir_all(&vectors).unwrap();
    assert!(!verify(&store).0);
    assert!(repair(&store)["after"]["ok"].as_bool().unwrap());
    assert_eq!(record_count(&store), records);
}

#[test]
fn damaged_graphs_are_found_and_rebuilt() {
    let store = store();
    let graph = files(&store.path().join("vectors"), "hnsw").remove(0);
    let mut bytes = fs::read(&graph).unwrap();
    // A neighbour slot past the header and counts pointing outside the segment.
    let at = bytes.len() - 8;
    bytes[at..at + 4].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    fs::write(&graph, bytes).unwrap();
    let (ok, report) = verify(&store);
    assert!(!ok);
    assert_eq!(failing(&report), ["vector graphs"], "{report}");
    assert!(repair(&store)["after"]["ok"].as_bool().unwrap());
}

#[test]
fn text_index_damage_is_found_and_the_index_rebuilt_from_its_documents() {
    let store = store();
    let records = record_count(&store);
    let text = store.path().join("text");
    let postings = files(&text, "idx").remove(0);
    let mut bytes = fs::read(&postings).unwrap();
    bytes[10] ^= 0xff;
    fs::write(&postings, bytes).unwrap();
    let (ok, report) = verify(&store);
    assert!(!ok);
    assert_eq!(failing(&report), ["text index"], "{report}");
    let repaired = repair(&store);
    assert!(repaired["after"]["ok"].as_bool().unwrap(), "{repaired}");
    assert_eq!(
        repaired["text_rebuilt"]["records_recovered"].as_u64(),
        Some(records),
        "{repaired}"
    );
    assert_eq!(record_count(&store), records);
    assert!(verify(&store).0);
}
