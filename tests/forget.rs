//! `knowledge-db forget`: a record, a session, or every record holding some
//! words, gone from both tiers and from the files on disk; kept out of later
//! ingests by tombstones until `--undo`; a forget killed midway finished by
//! the next one.

mod common;

use std::path::Path;

use common::TestStore;
use knowledge_db::store::Store;
use serde_json::{json, Value};

const SESSION: &str = "forget-session-1";
const OTHER: &str = "forget-session-2";
/// A word nothing else holds: its postings and stored text are looked for on disk.
const MARKER: &str = "zqxjvmarmot";

/// A Claude Code transcript: a prompt holding the marker, a reply that
/// carries that prompt as its conversation context, and an unrelated turn.
fn transcript(store: &TestStore, session: &str, marker: &str) -> std::path::PathBuf {
    let line = |uuid: &str, kind: &str, content: Value, at: &str| {
        json!({"type": kind, "sessionId": session, "uuid": uuid, "timestamp": at, "cwd": "/tmp/proj",
               "message": {"role": kind, "content": content}})
        .to_string()
    };
    let lines = [
        line(
            "u1",
            "user",
            json!(format!(
                "the staging password rotation uses {marker} as the vault path"
            )),
            "2026-05-01T10:00:00Z",
        ),
        line(
            "a1",
            "assistant",
            json!([{"type": "text", "text": "Rotated the credentials and updated the deploy config."}]),
            "2026-05-01T10:01:00Z",
        ),
        line(
            "u2",
            "user",
            json!("now fix the flaky login test in auth_test.go"),
            "2026-05-01T10:02:00Z",
        ),
    ];
    store.write(
        &format!("{session}.jsonl"),
        (lines.join("\n") + "\n").as_bytes(),
    )
}

/// Every byte of every file under `dir`.
fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(all_bytes(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.extend(bytes);
        }
    }
    out
}

/// How many documents of the text index, and of the L3 index, hold `term` in
/// their content, deleted ones included (a term's document frequency counts
/// deleted documents until their segment is rewritten).
fn postings(store: &TestStore, term: &str) -> (u64, u64) {
    let opened = Store::open(&store.path()).expect("open");
    let l2 = opened.reader().expect("reader").searcher();
    let t = tantivy::Term::from_field_text(opened.fields().content, term);
    let in_l2 = l2.doc_freq(&t).expect("doc_freq");
    let archive = knowledge_db::archive::Archive::new(&store.path());
    let in_l3 = match knowledge_db::archive::l3::L3Index::open_existing(&archive).expect("l3") {
        Some(l3) => l3
            .reader()
            .expect("reader")
            .searcher()
            .doc_freq(&t)
            .expect("doc_freq"),
        None => 0,
    };
    (in_l2, in_l3)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_query_forgets_both_tiers_and_the_words_leave_the_disk() {
    let store = TestStore::new();
    let first = transcript(&store, SESSION, MARKER);
    let second = transcript(&store, OTHER, "keepthisword");
    store
        .cmd()
        .args(["ingest", "--embed", "later"])
        .arg(&first)
        .arg(&second)
        .assert()
        .success();
    // One session's copy goes to the archive: the query must reach L3 too.
    store
        .cmd()
        .args(["archive", "--session", OTHER])
        .assert()
        .success();
    let reply = store.json(&["get", &format!("{SESSION}:a1")]);
    assert!(
        reply["context"]
            .as_str()
            .is_some_and(|c| c.contains(MARKER)),
        "the reply carries its prompt as context: {reply}"
    );
    assert_eq!(
        postings(&store, MARKER).0,
        2,
        "the prompt and its reply's context"
    );

    // A dry run lists and changes nothing.
    let dry = store.json(&[
        "forget",
        "--query",
        "staging password rotation",
        "--dry-run",
    ]);
    assert_eq!(dry["l2"], json!([format!("{SESSION}:u1")]), "{dry}");
    assert_eq!(dry["l3"], json!([format!("{OTHER}:u1")]), "{dry}");
    // Without --yes and no terminal to ask on, a query forgets nothing.
    store
        .cmd()
        .args(["forget", "--query", "staging password rotation"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--yes"));
    let report = store.json(&["forget", "--query", "staging password rotation", "--yes"]);
    assert_eq!(report["l2"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["l3"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["contexts_cleared"], 1, "{report}");

    // Gone from search, get, export, the postings and the bytes on disk.
    assert!(store.search_ids(&[MARKER, "--tier", "all"]).is_empty());
    store
        .cmd()
        .args(["get", &format!("{SESSION}:u1")])
        .assert()
        .code(1);
    let reply = store.json(&["get", &format!("{SESSION}:a1")]);
    assert!(reply["context"].is_null(), "{reply}");
    let export = store.cmd().arg("export").output().expect("export");
    assert!(!contains(&export.stdout, MARKER));
    assert_eq!(postings(&store, MARKER), (0, 0));
    assert!(!contains(&all_bytes(&store.path()), MARKER));
    // The other records stay.
    assert!(!store
        .search_ids(&["flaky login test", "--tier", "all"])
        .is_empty());

    // Ingesting the transcripts again, whole, brings nothing back.
    let again = store.json(&[
        "ingest",
        "--full",
        "--embed",
        "later",
        first.to_str().unwrap(),
    ]);
    assert_eq!(again["store"]["forgotten"], 1, "{again}");
    assert!(store.search_ids(&[MARKER]).is_empty());
    store.cmd().arg("verify").assert().success();
}

#[test]
fn a_session_is_forgotten_with_its_hook_files_and_undo_lets_it_back() {
    let store = TestStore::new();
    let path = transcript(&store, SESSION, MARKER);
    store
        .cmd()
        .args(["ingest", "--embed", "later"])
        .arg(&path)
        .assert()
        .success();
    // The hooks' files of the session (a Stop hook wrote its state).
    let input = json!({"session_id": SESSION, "transcript_path": path, "cwd": "/tmp/proj"});
    store
        .cmd()
        .args(["hook", "stop"])
        .write_stdin(input.to_string())
        .assert()
        .success();
    assert!(store.path().join(format!("hooks/{SESSION}.json")).exists());

    let report = store.json(&["forget", "--session", SESSION]);
    assert_eq!(report["l2"].as_array().unwrap().len(), 3, "{report}");
    assert!(
        report["hook_files_removed"].as_u64().unwrap() >= 1,
        "{report}"
    );
    assert!(!store.path().join(format!("hooks/{SESSION}.json")).exists());
    assert_eq!(store.json(&["stats"])["records"], 0);
    // The capture hooks leave it out too.
    store
        .cmd()
        .args(["hook", "stop"])
        .write_stdin(input.to_string())
        .assert()
        .success();
    assert_eq!(store.json(&["stats"])["records"], 0);
    // Ingesting the transcript again adds nothing and keeps none of its
    // words in the read position (issue 52: `ingest/<hash>.json` kept the
    // forgotten session's last prompt).
    store
        .cmd()
        .args(["ingest", "--embed", "later"])
        .arg(&path)
        .assert()
        .success();
    assert_eq!(store.json(&["stats"])["records"], 0);
    let bytes = all_bytes(&store.path());
    assert!(
        !contains(&bytes, "flaky login test") && !contains(&bytes, MARKER),
        "a file of the store holds the forgotten session's words"
    );

    let listed = store.json(&["forget", "--list"]);
    assert_eq!(listed["sessions"][0][0], SESSION, "{listed}");
    let undone = store.json(&["forget", "--undo", "--session", SESSION]);
    assert_eq!(undone["lifted"], json!([SESSION]));
    store
        .cmd()
        .args(["ingest", "--embed", "later"])
        .arg(&path)
        .assert()
        .success();
    assert_eq!(store.json(&["stats"])["records"], 3);
}

#[test]
fn a_forget_killed_midway_is_finished_by_the_next_and_never_lets_the_records_back() {
    for point in ["forget-tombstoned", "forget-l2-deleted"] {
        let store = TestStore::new();
        let path = transcript(&store, SESSION, MARKER);
        store
            .cmd()
            .args(["ingest", "--embed", "later"])
            .arg(&path)
            .assert()
            .success();
        let out = store
            .cmd()
            .args(["forget", "--session", SESSION])
            .env("KNOWLEDGE_DB_CRASH_AT", point)
            .output()
            .expect("run");
        assert!(
            !out.status.success(),
            "{point}: the crash point was not reached"
        );
        // Tombstoned before anything else: a re-ingest brings nothing back.
        let again = store.json(&[
            "ingest",
            "--full",
            "--embed",
            "later",
            path.to_str().unwrap(),
        ]);
        assert_eq!(again["store"]["added"], 0, "{point}: {again}");
        // The next forget (of anything) finishes the job.
        store.json(&["forget", "nothing-by-this-id"]);
        assert_eq!(store.json(&["stats"])["records"], 0, "{point}");
        assert_eq!(postings(&store, MARKER), (0, 0), "{point}");
        store.cmd().arg("verify").assert().success();
    }
}

/// Every hook, replayed on a forgotten session's transcript (under its own
/// session id and under another id that reads the same transcript), leaves
/// no word of it in any file of the store (issue 38: the next hook run
/// rebuilt `hooks/<S>.json` with term lists of the forgotten words, and state
/// filed under another id kept them).
#[test]
fn hook_replays_of_a_forgotten_session_leave_no_word_of_it() {
    let store = TestStore::new();
    let path = transcript(&store, SESSION, MARKER);
    let input = |id: &str| {
        json!({"session_id": id, "transcript_path": path, "cwd": "/tmp/proj",
               "tool_name": "Bash", "prompt": "what was the vault path again?",
               "trigger": "manual", "source": "resume", "reason": "clear"})
        .to_string()
    };
    let hooks = [
        "post-tool-use",
        "pre-compact",
        "stop",
        "user-prompt-submit",
        "session-start",
        "session-end",
    ];
    let replay = |id: &str| {
        for hook in hooks {
            store
                .cmd()
                .args(["hook", hook])
                .write_stdin(input(id))
                .assert()
                .success();
        }
    };
    // Before the forget: the hooks of both ids read the transcript.
    replay(SESSION);
    replay("another-hook-id");
    assert!(
        contains(&all_bytes(&store.path()), MARKER),
        "the hooks kept it"
    );
    store.json(&["forget", "--session", SESSION]);
    // After: every hook again, under both ids.
    replay(SESSION);
    replay("another-hook-id");
    let log = std::fs::read_to_string(store.path().join("hooks/hooks.log")).unwrap_or_default();
    assert!(!log.contains("error"), "{log}");
    for (path, bytes) in files_under(&store.path()) {
        assert!(
            !contains(&bytes, MARKER),
            "{} holds a word of the forgotten session",
            path.display()
        );
    }
    assert_eq!(store.json(&["stats"])["records"], 0);
    let dry = store.json(&["scrub", "--dry-run"]);
    assert_eq!(dry["forgotten_files"], json!([]), "{dry}");
    // What an older build's hooks left: scrub finds it (by name, or by the
    // transcript it names) and removes it.
    let left = [
        (format!("hooks/{SESSION}.json"), "{}".to_string()),
        (
            "hooks/older-id.json".to_string(),
            json!({"transcript": path}).to_string(),
        ),
    ];
    for (name, text) in &left {
        std::fs::write(store.path().join(name), text).unwrap();
    }
    let dry = store.json(&["scrub", "--dry-run"]);
    let expected = json!(["hooks/forget-session-1.json", "hooks/older-id.json"]);
    assert_eq!(dry["forgotten_files"], expected, "{dry}");
    assert!(store.path().join(&left[0].0).exists());
    let done = store.json(&["scrub"]);
    assert_eq!(done["forgotten_files"], expected, "{done}");
    assert!(!store.path().join(&left[0].0).exists());
    assert!(!store.path().join(&left[1].0).exists());
}

/// Every file under `dir`, with its bytes.
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
    out
}
