//! A store written in format 2 (by the release before projects) is upgraded
//! in place on first open: every record, vector and archived record kept, the
//! new fields filled, and a crash at any step finished by the next open.
//!
//! The fixture (`tests/fixtures/format2-store`) was made by the format-2
//! binary: `init`, `add data-samples/` (with the model: 10 vectors), `archive
//! --session` of one session (4 records to L3), `ingest
//! data-samples/transcripts/` (31 messages); its derived vector files removed.

mod common;

use std::path::Path;

use common::TestStore;

/// A copy of the format-2 fixture as the test store.
fn format2_store() -> TestStore {
    let store = TestStore::uninitialised();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format2-store"),
        &store.path(),
    );
    store
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn format_version(store: &TestStore) -> String {
    let config = std::fs::read_to_string(store.path().join("config.toml")).unwrap();
    config
        .lines()
        .find(|l| l.starts_with("format_version"))
        .unwrap()
        .to_string()
}

/// What the upgraded store must hold, whatever path the upgrade took.
fn assert_upgraded(store: &TestStore) {
    let stats = store.json(&["stats"]);
    assert_eq!(stats["format_version"], 3, "{stats}");
    assert_eq!(stats["records"], 41, "{stats}");
    assert_eq!(stats["by_tier"]["l3"], 4, "{stats}");
    assert_eq!(
        stats["by_project"][""], 41,
        "old records have no project: {stats}"
    );
    assert_eq!(stats["by_origin"]["local"], 41, "{stats}");
    // Every vector kept: nothing waits for the model.
    assert_eq!(stats["vectors"]["without_vector"], 0, "{stats}");
    assert_eq!(format_version(store), "format_version = 3");
    store.cmd().arg("verify").assert().success();
    // L2 and the rebuilt L3 index both answer.
    let ids = store.search_ids(&["conversation compacted", "--all-namespaces"]);
    assert!(!ids.is_empty());
    let archived = store.json(&[
        "search",
        "parseConfig E0502",
        "--tier",
        "l3",
        "--all-namespaces",
    ]);
    assert!(
        !archived["results"].as_array().unwrap().is_empty(),
        "{archived}"
    );
    for dir in ["text.rebuild", "text.rebuild.tmp", "text.format2"] {
        assert!(!store.path().join(dir).exists(), "{dir} left behind");
    }
}

#[test]
fn a_format2_store_is_upgraded_on_first_open_and_keeps_everything() {
    let store = format2_store();
    assert_eq!(format_version(&store), "format_version = 2");
    let before = std::fs::read_to_string(store.path().join("config.toml")).unwrap();
    assert_upgraded(&store);
    // Only the version line of the config changed (user settings kept).
    let after = std::fs::read_to_string(store.path().join("config.toml")).unwrap();
    let changed: Vec<_> = before
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(changed, vec![("format_version = 2", "format_version = 3")]);
    // A transcript ingested into the upgraded store carries its project.
    let line = serde_json::json!({"type": "user", "sessionId": "after-upgrade", "uuid": "u1",
        "cwd": "/home/ana/parser", "timestamp": "2026-06-01T10:00:00Z",
        "message": {"role": "user", "content": "rename the tokenizer module"}});
    let transcript = store.write("after-upgrade.jsonl", format!("{line}\n").as_bytes());
    store
        .cmd()
        .arg("ingest")
        .arg(&transcript)
        .assert()
        .success();
    let stats = store.json(&["stats"]);
    let projects = stats["by_project"].as_object().unwrap();
    assert!(projects.keys().any(|p| !p.is_empty()), "{stats}");
}

#[test]
fn an_upgrade_killed_after_the_text_index_finishes_on_the_next_open() {
    // Killed before config.toml said 3: the text index already has the new
    // fields, the L3 index not yet.
    let store = format2_store();
    assert_upgraded(&store);
    std::fs::remove_dir_all(store.path().join("archive/index")).unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format2-store/archive/index"),
        &store.path().join("archive/index"),
    );
    let config = store.path().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("format_version = 3", "format_version = 2"),
    )
    .unwrap();
    assert_upgraded(&store);
}

#[test]
fn an_upgrade_killed_between_its_renames_finishes_on_the_next_open() {
    // Killed after `text/` was renamed aside and before `text.rebuild/` took
    // its place; also a half-built `text.rebuild.tmp/` of an earlier try.
    let fresh = format2_store();
    assert_upgraded(&fresh);
    let store = format2_store();
    let root = store.path();
    std::fs::rename(root.join("text"), root.join("text.format2")).unwrap();
    copy_dir(&fresh.path().join("text"), &root.join("text.rebuild"));
    std::fs::create_dir_all(root.join("text.rebuild.tmp")).unwrap();
    std::fs::write(root.join("text.rebuild.tmp/junk"), b"half built").unwrap();
    assert_upgraded(&store);
}
