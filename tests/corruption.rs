//! Damage to the files of a store, and what `verify` finds and `repair` brings
//! back: truncated, byte-flipped and deleted text-index files (postings, terms,
//! fast fields, the document store, `meta.json`) and a deleted `vectors/`.
//! Derived files are rebuilt with every record; when the document store itself
//! is damaged, every record it still holds comes back and the others are named.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::TestStore;
use serde_json::Value;

/// A store of 3 segments (one per `add`) with embeddings, and its records by id.
fn store() -> (TestStore, BTreeMap<String, String>) {
    let store = TestStore::new();
    for batch in 0..3 {
        let lines: String = (0..60)
            .map(|i| {
                serde_json::json!({
                    "id": format!("c{batch}-{i}"),
                    "title": format!("note {i} of batch {batch}"),
                    "text": format!("batch {batch} record {i}: retry the flaky upload with backoff {}", i * 7),
                })
                .to_string()
                    + "\n"
            })
            .collect();
        let input = store.write(&format!("b{batch}.jsonl"), lines.as_bytes());
        store.cmd().arg("add").arg(&input).assert().success();
    }
    let records = contents(&store);
    assert_eq!(records.len(), 180);
    (store, records)
}

/// Every record's id and content, read through the CLI's own `export`-free path:
/// a BM25 search would miss records, so the library reads them all.
fn contents(store: &TestStore) -> BTreeMap<String, String> {
    let opened = knowledge_db::Store::open(&store.path()).unwrap();
    let searcher = opened.reader().unwrap().searcher();
    opened
        .l2_records(&searcher, |_| true)
        .unwrap()
        .into_iter()
        .map(|r| (r.record.id, r.record.fields.content))
        .collect()
}

fn text_files(store: &TestStore, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(store.path().join("text"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(extension))
        .collect();
    files.sort();
    files
}

fn verify(store: &TestStore) -> (bool, Value) {
    let out = store.cmd().args(["verify", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verify printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(out.status.success(), report["ok"].as_bool().unwrap());
    (out.status.success(), report)
}

fn repair(store: &TestStore) -> (bool, Value) {
    let out = store.cmd().args(["repair", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "repair printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), report)
}

fn truncate(path: &Path) {
    let bytes = fs::read(path).unwrap();
    fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
}

fn flip(path: &Path, at: usize) {
    let mut bytes = fs::read(path).unwrap();
    let at = at.min(bytes.len() - 1);
    bytes[at] ^= 0xa5;
    fs::write(path, bytes).unwrap();
}

/// Damage that leaves every document store readable: `verify` fails, `repair`
/// re-indexes every record, `verify` passes, and search works again.
fn fully_recovered(what: &str, damage: impl FnOnce(&TestStore)) {
    let (store, before) = store();
    damage(&store);
    let (ok, report) = verify(&store);
    assert!(!ok, "{what}: verify did not notice: {report}");
    let (ok, repaired) = repair(&store);
    assert!(ok, "{what}: repair failed: {repaired}");
    assert!(
        repaired["after"]["ok"].as_bool().unwrap(),
        "{what}: {repaired}"
    );
    assert_eq!(contents(&store), before, "{what}: records changed");
    assert!(verify(&store).0, "{what}: verify fails after repair");
    let hits = store.search_ids(&["flaky upload backoff", "--limit", "5"]);
    assert_eq!(hits.len(), 5, "{what}: search after repair");
    eprintln!(
        "{what}: found by verify, {} records back after repair",
        before.len()
    );
}

#[test]
fn truncated_postings_are_reindexed() {
    fully_recovered("truncated .idx", |s| truncate(&text_files(s, ".idx")[0]));
}

#[test]
fn flipped_term_dictionary_bytes_are_reindexed() {
    fully_recovered("flipped .term byte", |s| {
        flip(&text_files(s, ".term")[1], 100)
    });
}

#[test]
fn deleted_segment_files_are_reindexed() {
    fully_recovered("deleted .fast", |s| {
        fs::remove_file(&text_files(s, ".fast")[2]).unwrap()
    });
    fully_recovered("deleted .pos", |s| {
        fs::remove_file(&text_files(s, ".pos")[0]).unwrap()
    });
}

#[test]
fn a_deleted_meta_json_is_rebuilt_from_the_segments() {
    fully_recovered("deleted meta.json", |s| {
        fs::remove_file(s.path().join("text").join("meta.json")).unwrap()
    });
}

#[test]
fn a_deleted_vectors_folder_is_rebuilt() {
    fully_recovered("deleted vectors/", |s| {
        fs::remove_dir_all(s.path().join("vectors")).unwrap()
    });
}

/// A damaged document store: the records it still holds come back, the others
/// are named as lost, and the damaged index is kept beside the store.
fn partly_recovered(what: &str, damage: impl FnOnce(&Path)) -> usize {
    let (store, before) = store();
    let doc_store = text_files(&store, ".store")[0].clone();
    damage(&doc_store);
    let (ok, report) = verify(&store);
    assert!(!ok, "{what}: verify did not notice: {report}");
    let (ok, repaired) = repair(&store);
    let rebuilt = &repaired["text_rebuilt"];
    assert!(rebuilt.is_object(), "{what}: {repaired}");
    let lost = rebuilt["lost"].as_array().unwrap();
    // Exit 1 exactly when something could not be brought back.
    assert_eq!(ok, lost.is_empty(), "{what}: {repaired}");
    let after = contents(&store);
    for (id, content) in &after {
        assert_eq!(before.get(id), Some(content), "{what}: {id} changed");
    }
    // Every record is either back, unchanged, or named as lost.
    let missing: Vec<&String> = before
        .keys()
        .filter(|id| !after.contains_key(*id))
        .collect();
    for id in &missing {
        assert!(
            lost.iter()
                .any(|l| l.as_str().unwrap().starts_with(&format!("id {id} "))),
            "{what}: {id} lost without being named: {repaired}"
        );
    }
    let kept = PathBuf::from(rebuilt["damaged_index"].as_str().unwrap());
    assert!(
        kept.join("meta.json").exists(),
        "{what}: damaged index not kept"
    );
    assert!(verify(&store).0, "{what}: verify fails after repair");
    eprintln!(
        "{what}: {} of {} records back, {} named as lost",
        after.len(),
        before.len(),
        missing.len()
    );
    missing.len()
}

#[test]
fn a_truncated_document_store_loses_only_its_segment_and_names_the_ids() {
    // The segment's records are lost (and named), the other segments' come back.
    let lost = partly_recovered("truncated .store", truncate);
    assert!(lost > 0 && lost < 180, "{lost}");
}

#[test]
fn a_flipped_document_store_byte_loses_at_most_its_block() {
    let lost = partly_recovered("flipped .store byte", |path| flip(path, 40));
    assert!(lost < 180, "{lost}");
}

/// `repair` itself killed at random moments (SIGKILL) while it rebuilds the text
/// index: the next `repair` finishes the job and every record is back.
#[test]
fn a_repair_killed_midway_is_finished_by_the_next() {
    let (store, before) = store();
    fs::remove_file(store.path().join("text").join("meta.json")).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("knowledge-db");
    for (round, delay_ms) in [5u64, 40, 90, 150, 250, 400].into_iter().enumerate() {
        let mut child = std::process::Command::new(&bin)
            .env("KNOWLEDGE_DB_UPKEEP", "off")
            .arg("--store")
            .arg(store.path())
            .arg("repair")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        // Whatever the kill left, the store is repairable and nothing is lost.
        let (ok, repaired) = repair(&store);
        assert!(ok, "round {round}: {repaired}");
        assert_eq!(contents(&store), before, "round {round}");
        assert!(verify(&store).0, "round {round}");
        // Damage it again for the next round.
        fs::remove_file(store.path().join("text").join("meta.json")).unwrap();
    }
}

/// A damaged deletes file: its segment is read whole rather than trusting the
/// file, so no live record is dropped; the replaced version that comes back
/// with it loses to the newer copy.
#[test]
fn a_damaged_deletes_file_drops_no_live_record() {
    let (store, mut before) = store();
    // Replace a record of the first batch: its old version is marked deleted.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let update = store.write(
        "update.jsonl",
        br#"{"id": "c0-3", "title": "note 3 of batch 0", "text": "the updated version of c0-3"}"#,
    );
    store.cmd().arg("add").arg(&update).assert().success();
    before.insert("c0-3".into(), "the updated version of c0-3".into());
    assert_eq!(contents(&store), before);
    let deletes = text_files(&store, ".del");
    assert!(!deletes.is_empty(), "no deletes file was written");
    flip(&deletes[0], 3);
    let (ok, report) = verify(&store);
    assert!(!ok, "{report}");
    let (ok, repaired) = repair(&store);
    assert!(ok, "{repaired}");
    assert_eq!(contents(&store), before);
    assert!(
        repaired["text_rebuilt"]["notes"]
            .to_string()
            .contains("fails its checksum"),
        "{repaired}"
    );
}

/// Issue 51: a segment file cut to 7 bytes (longer than tantivy's 4-byte
/// check, shorter than the 8 bytes its footer reader takes) made the index
/// library panic (`assertion failed: start <= orig_range.end`) in `verify`,
/// `repair` (exit 101: the commands the message tells the user to run) and
/// every hook. Now every command names the file and exits 1, a hook logs
/// the same and exits 0, and `repair` rebuilds the index: every record back.
#[test]
fn a_segment_file_cut_to_seven_bytes_is_named_never_a_panic() {
    for extension in [".idx", ".store"] {
        let (store, before) = store();
        let file = text_files(&store, extension)[0].clone();
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        fs::write(&file, b"1234567").unwrap();
        for args in [
            vec!["verify"],
            vec!["search", "--mode", "bm25", "flaky upload"],
            vec!["get", "c1-1"],
        ] {
            let out = store.cmd().args(&args).output().unwrap();
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
            assert!(!said.contains("panicked"), "{args:?}: {said}");
            assert!(
                said.contains(&format!("{name} is 7 bytes long")),
                "{args:?}: {said}"
            );
        }
        let hook = store
            .cmd()
            .args(["hook", "user-prompt-submit"])
            .write_stdin(r#"{"session_id":"s1","prompt":"how did we retry the flaky upload?"}"#)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&hook.stderr);
        assert!(hook.status.success(), "{said}");
        assert!(!said.contains("panicked") && said.contains(&name), "{said}");
        let (ok, repaired) = repair(&store);
        let lost = repaired["text_rebuilt"]["lost"].as_array().unwrap().len();
        assert_eq!(ok, lost == 0, "{repaired}");
        if extension == ".idx" {
            assert!(ok, "{repaired}");
            assert_eq!(contents(&store), before);
        }
        assert!(verify(&store).0, "{extension}: verify after repair");
    }
}
