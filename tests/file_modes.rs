//! A store is its owner's alone: every folder 0700 and every file 0600,
//! whatever the umask the commands run under (the store, the hooks' files,
//! the archive, `export --out`); a store made loose (an older release, a
//! loose umask, a `chmod`) is reported by `verify` and tightened by its next
//! write.

#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::TestStore;

/// Runs `knowledge-db --store <store> ARGS` under `umask 022`, as a user's
/// shell usually has it; stdin from `stdin`.
fn under_loose_umask(store: &TestStore, args: &str, stdin: &str) -> std::process::Output {
    let binary = assert_cmd::cargo::cargo_bin("knowledge-db");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 022; exec '{}' --store '{}' {args}",
            binary.display(),
            store.path().display()
        ))
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .env_remove("KNOWLEDGE_DB_HOME")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sh");
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("stdin");
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{args}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every path under `root` (itself included) with group or other bits.
fn loose(root: &Path) -> Vec<(PathBuf, u32)> {
    let mut out = Vec::new();
    let meta = std::fs::symlink_metadata(root).expect("stat");
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        out.push((root.to_path_buf(), mode));
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(root).expect("dir").flatten() {
            out.extend(loose(&entry.path()));
        }
    }
    out
}

#[test]
fn every_file_a_store_gets_is_owner_only_whatever_the_umask() {
    let store = TestStore::uninitialised();
    under_loose_umask(&store, "init", "");
    let samples = common::samples();
    under_loose_umask(
        &store,
        &format!("add '{}' --embed later", samples.display()),
        "",
    );
    under_loose_umask(
        &store,
        &format!(
            "ingest '{}' --embed later",
            samples.join("transcripts").display()
        ),
        "",
    );
    // A hook's files: state, the captured messages.
    let transcript = store.write(
        "s.jsonl",
        b"{\"type\":\"user\",\"sessionId\":\"m1\",\"uuid\":\"u1\",\"message\":{\"role\":\"user\",\"content\":\"hello there\"}}\n",
    );
    let input = format!(
        "{{\"session_id\":\"m1\",\"transcript_path\":\"{}\",\"cwd\":\"/tmp\"}}",
        transcript.display()
    );
    under_loose_umask(&store, "hook stop", &input);
    under_loose_umask(&store, "hook pre-compact", &input);
    under_loose_umask(&store, "archive --session m1", "");
    let export = store.dir.path().join("backup.jsonl");
    under_loose_umask(&store, &format!("export --out '{}'", export.display()), "");
    assert_eq!(loose(&store.path()), Vec::new());
    assert_eq!(
        std::fs::metadata(&export)
            .expect("export")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    for dir in ["hooks", "archive", "text", "ingest"] {
        assert!(store.path().join(dir).is_dir(), "{dir} was not made");
    }
}

#[test]
fn a_loose_store_is_reported_then_tightened_by_its_next_write() {
    let store = TestStore::new();
    store.add_samples();
    Command::new("chmod")
        .args(["-R", "go+rX"])
        .arg(store.path())
        .status()
        .expect("chmod");
    assert!(!loose(&store.path()).is_empty());
    // verify: a warning naming the fix, exit 0 (nothing is damaged).
    let out = store.cmd().arg("verify").output().expect("verify");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("file modes"))
        .expect("a file modes line");
    assert!(line.starts_with("warn"), "{line}");
    assert!(line.contains("the next write"), "{line}");
    // The next write tightens everything.
    let note = store.write("n.json", b"{\"id\":\"n1\",\"text\":\"tighten the store\"}");
    store.cmd().arg("add").arg(&note).assert().success();
    assert_eq!(loose(&store.path()), Vec::new());
    let out = store.cmd().arg("verify").output().expect("verify");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("ok") && l.contains("file modes")),
        "{text}"
    );
}
