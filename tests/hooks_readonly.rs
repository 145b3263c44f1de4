//! A session during which the store cannot be written is not lost without a
//! trace (issue 51). The store is put on a real read-only mount (as root: a
//! bind mount remounted read-only, in a private mount namespace of the hook's
//! own, `unshare -m`), and the real hooks run there with Claude Code's event
//! JSON on stdin:
//! - each exits 0 (a hook never fails the agent) and says the truth: the
//!   capture failed on a read-only file system, the store's log could not be
//!   written (`could not log to …: read-only file system`), and where the
//!   line and the marker went instead (the user's state folder);
//! - the next capturing hook that can write (another session's `stop`)
//!   stores what the read-only session missed and removes the marker: the
//!   store then holds exactly what an `ingest` of both transcripts holds;
//! - where the state folder cannot be written either, the message says what
//!   was missed and the command that stores it.
//!
//! Skipped, saying why, where mounting is not permitted.

mod common;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::TestStore;
use serde_json::{json, Value};

fn sample_transcript(dir: &Path, sample: &str, name: &str) -> PathBuf {
    let mut text = String::new();
    flate2::read::GzDecoder::new(
        fs::File::open(common::samples().join("transcripts").join(sample)).expect("sample"),
    )
    .read_to_string(&mut text)
    .expect("gunzip");
    let path = dir.join(name);
    fs::write(&path, text).expect("transcript");
    path
}

fn input(event: &str, session: &str, transcript: &Path) -> String {
    json!({
        "session_id": session,
        "transcript_path": transcript,
        "cwd": "/home/dev/httpkit",
        "hook_event_name": event,
        "prompt": "why did the tokenizer test fail?",
        "source": "startup",
    })
    .to_string()
}

/// `knowledge-db --store S hook EVENT` with `stdin`; with `read_only`, in a
/// private mount namespace where the store is a read-only bind mount.
fn hook(store: &TestStore, state: &Path, event: &str, stdin: &str, read_only: bool) -> Output {
    let bin = assert_cmd::cargo::cargo_bin("knowledge-db");
    let root = store.path();
    let mut cmd = if read_only {
        let mut cmd = Command::new("unshare");
        cmd.args(["-m", "--propagation", "private", "sh", "-c"])
            .arg(
                "mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro \"$1\" \"$1\" \
                 && shift && exec \"$@\"",
            )
            .arg("sh")
            .arg(&root)
            .arg(&bin);
        cmd
    } else {
        Command::new(&bin)
    };
    cmd.arg("--store")
        .arg(&root)
        .args(["hook", event])
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .env("XDG_STATE_HOME", state)
        .env_remove("KNOWLEDGE_DB_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn hook");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), stdin.as_bytes())
        .expect("write input");
    child.wait_with_output().expect("hook")
}

/// Whether this process may make a private mount namespace with a
/// read-only bind mount in it; why not, when it may not.
fn mounts_allowed(dir: &Path) -> Result<(), String> {
    let probe = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg("mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro \"$1\" \"$1\" && ! touch \"$1/x\" 2>/dev/null")
        .arg("sh")
        .arg(dir)
        .output()
        .map_err(|e| format!("unshare cannot be run: {e}"))?;
    if probe.status.success() {
        Ok(())
    } else {
        Err(format!(
            "a read-only bind mount in a private namespace is not permitted here: {}",
            String::from_utf8_lossy(&probe.stderr).trim()
        ))
    }
}

fn message_ids(store: &TestStore) -> Vec<String> {
    let out = store
        .cmd()
        .args(["export", "--no-vectors"])
        .output()
        .expect("export");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "message")
        .map(|v| v["id"].as_str().unwrap_or_default().to_string())
        .collect();
    ids.sort();
    ids
}

fn markers(state: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in fs::read_dir(state.join("knowledge-db/missed"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for file in fs::read_dir(dir.path()).into_iter().flatten().flatten() {
            found.push(file.path());
        }
    }
    found
}

#[test]
fn a_session_on_a_read_only_store_is_caught_up_by_the_next_hook_that_can_write() {
    let store = TestStore::new();
    if let Err(why) = mounts_allowed(store.dir.path()) {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let state = store.dir.path().join("state");
    let first = sample_transcript(store.dir.path(), "uncompacted-session.jsonl.gz", "s1.jsonl");
    let second = sample_transcript(
        store.dir.path(),
        "claude-code-2.1.328/-home-dev-httpkit/6acdeb09-9352-4057-997b-261220c30e85.jsonl.gz",
        "s2.jsonl",
    );
    let before = store.snapshot();

    // A whole session while the store is read-only: start, a prompt, stop, end.
    for (event, name) in [
        ("session-start", "SessionStart"),
        ("user-prompt-submit", "UserPromptSubmit"),
        ("stop", "Stop"),
        ("session-end", "SessionEnd"),
    ] {
        let out = hook(&store, &state, event, &input(name, "s1", &first), true);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{event}: a hook exits 0: {stderr}");
        assert!(
            !stderr.contains("panicked")
                && !stderr.contains("is damaged")
                && !stderr.contains("repair"),
            "{event}: {stderr}"
        );
        if !stderr.is_empty() {
            // The truth about the log: the store's could not be written.
            assert!(
                stderr.contains(&format!(
                    "could not log to {}: read-only file system; logged to {} instead",
                    store.path().join("hooks/hooks.log").display(),
                    state.join("knowledge-db/hooks.log").display()
                )),
                "{event}: {stderr}"
            );
        }
        if event == "stop" || event == "session-end" {
            assert!(
                stderr.contains("could not store session s1's new messages"),
                "{stderr}"
            );
            assert!(stderr.contains("read-only file system"), "{stderr}");
            assert!(
                stderr.contains("the next hook that can write stores them (marker: "),
                "{stderr}"
            );
        }
    }
    assert_eq!(
        store.snapshot(),
        before,
        "nothing was written to the read-only store"
    );
    let log = fs::read_to_string(state.join("knowledge-db/hooks.log")).expect("the fallback log");
    assert!(
        log.contains("stop session=s1 error: could not store session s1"),
        "{log}"
    );
    let marked = markers(&state);
    assert_eq!(marked.len(), 1, "{marked:?}");
    let marker: Value = serde_json::from_slice(&fs::read(&marked[0]).unwrap()).unwrap();
    assert_eq!(marker["session_id"], "s1");
    assert_eq!(marker["transcript"], json!(first));
    assert!(message_ids(&store).is_empty());

    // The store is writable again: the next session's stop stores its own
    // messages and the ones the read-only session missed.
    let out = hook(&store, &state, "stop", &input("Stop", "s2", &second), false);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        markers(&state).is_empty(),
        "the marker is removed once caught up"
    );
    let log = fs::read_to_string(store.path().join("hooks/hooks.log")).expect("the store's log");
    assert!(
        log.contains("session=s1 caught up a capture missed since"),
        "{log}"
    );

    // Exactly what an ingest of both transcripts stores.
    let reference = TestStore::new();
    reference
        .cmd()
        .args(["ingest", "--embed", "later"])
        .arg(&first)
        .arg(&second)
        .assert()
        .success();
    let (ours, theirs) = (message_ids(&store), message_ids(&reference));
    assert!(!theirs.is_empty());
    assert_eq!(ours, theirs, "the missed session was stored in full");
}

#[test]
fn where_no_marker_can_be_written_the_message_says_what_was_missed_and_what_to_run() {
    let store = TestStore::new();
    if let Err(why) = mounts_allowed(store.dir.path()) {
        eprintln!("SKIPPED: {why}");
        return;
    }
    // The state folder inside the read-only store: nothing can be written.
    let state = store.path().join("state");
    let transcript =
        sample_transcript(store.dir.path(), "uncompacted-session.jsonl.gz", "s1.jsonl");
    let out = hook(
        &store,
        &state,
        "stop",
        &input("Stop", "s1", &transcript),
        true,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("no marker could be written either"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "run `knowledge-db --store {} ingest --namespace default {}`",
            store.path().display(),
            transcript.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("could not log to"), "{stderr}");
    assert!(stderr.contains("; nor to "), "{stderr}");
    assert!(!state.exists());
    // What it says to run stores the session.
    store
        .cmd()
        .args(["ingest", "--namespace", "default", "--embed", "later"])
        .arg(&transcript)
        .assert()
        .success();
    assert!(!message_ids(&store).is_empty());
}
