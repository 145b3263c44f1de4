//! Commands built from input, numbers from the command line, and messages
//! that must be true: `pre-compact` in a repository whose config names
//! programs, a session id that would forge a `hooks.log` line, `-k` at its
//! extremes, the lock timeout as asked, `delete`'s note, `verify` after an
//! interrupted archive, and the archive rewrite's file mode.
//! (`HOSTILE_BIN=<another build>` runs these against it.)

mod common;
mod hostile_support;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::TestStore;
use hostile_support::{kdb, run};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(60);

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A script that leaves `marker` behind when run (and passes its input on).
fn trap(dir: &Path, name: &str, marker: &Path) -> String {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("#!/bin/sh\ntouch '{}'\ncat\n", marker.display()),
    )
    .expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.display().to_string()
}

#[test]
fn pre_compact_runs_no_program_a_repository_config_names() {
    let store = TestStore::new();
    let scripts = store.dir.path().join("scripts");
    std::fs::create_dir_all(&scripts).expect("mkdir");
    let repo = store.dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "a@b.c"]);
    git(&repo, &["config", "user.name", "a"]);
    std::fs::write(repo.join("main.rs"), "fn main() {}\n").expect("write");
    std::fs::write(repo.join(".gitattributes"), "* filter=evil diff=evil\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "init"]);
    let marker = |name: &str| store.dir.path().join(format!("ran-{name}"));
    for (key, name) in [
        ("core.fsmonitor", "fsmonitor"),
        ("filter.evil.clean", "clean"),
        ("filter.evil.smudge", "smudge"),
        ("filter.evil.process", "process"),
        ("diff.evil.textconv", "textconv"),
        ("diff.evil.command", "diff-driver"),
        ("diff.external", "external-diff"),
        ("core.pager", "pager"),
    ] {
        let script = trap(&scripts, name, &marker(name));
        git(&repo, &["config", key, &script]);
    }
    std::fs::write(
        repo.join("main.rs"),
        "fn main() { println!(\"changed\"); }\n",
    )
    .expect("write");
    let transcript = store.write(
        "s-git.jsonl",
        format!(
            "{}\n",
            json!({"type":"user","sessionId":"s-git","uuid":"u1","cwd": repo,
                   "message":{"role":"user","content":"change main"}})
        )
        .as_bytes(),
    );
    let mut cmd = kdb(&store);
    cmd.args(["hook", "pre-compact"]);
    cmd.env("HOME", store.dir.path());
    let input = json!({"session_id": "s-git", "transcript_path": transcript, "cwd": repo});
    let ran = run(cmd, input.to_string().as_bytes(), DEADLINE);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    let ran_programs: Vec<String> = std::fs::read_dir(store.dir.path())
        .expect("read dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("ran-"))
        .collect();
    assert!(ran_programs.is_empty(), "pre-compact ran {ran_programs:?}");
    // The block still has the change.
    let block = std::fs::read_to_string(store.path().join("hooks/s-git.preserve.json"))
        .expect("saved block");
    assert!(block.contains("main.rs"), "{block}");
}

#[test]
fn a_session_id_with_a_newline_cannot_forge_a_hooks_log_line() {
    let store = TestStore::new();
    let forged = "s1\n2026-01-01T00:00:00Z post-tool-use session=admin all good";
    let mut cmd = kdb(&store);
    cmd.args(["hook", "post-tool-use"]);
    let input = json!({"session_id": forged, "transcript_path": "/nonexistent/t.jsonl"});
    let ran = run(cmd, input.to_string().as_bytes(), DEADLINE);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    let log = std::fs::read_to_string(store.path().join("hooks/hooks.log")).expect("log");
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(log.contains("session=s1\\n2026-01-01T00:00:00Z"), "{log}");
}

#[test]
fn search_limits_are_clamped_with_a_note() {
    let store = TestStore::new();
    store.add_later(
        "notes.jsonl",
        b"{\"id\": \"n1\", \"text\": \"clamp the limit\"}\n",
    );
    for k in ["18446744073709551615", "100000000"] {
        let mut cmd = kdb(&store);
        cmd.args(["search", "--mode", "bm25", "--json", "-k", k, "clamp"]);
        // A search that reserved memory for 1e8 results (7.2 GB) fails under
        // this cap; one that is bounded does not come near it.
        // SAFETY: setrlimit in the child before exec touches no shared state.
        unsafe {
            cmd.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 3 << 30,
                    rlim_max: 3 << 30,
                };
                libc::setrlimit(libc::RLIMIT_AS, &limit);
                Ok(())
            });
        }
        let ran = run(cmd, b"", DEADLINE);
        assert_eq!(ran.code(), Some(0), "-k {k}: {}", ran.stderr());
        assert!(
            ran.stderr().contains(&format!(
                "-k {k} is more than the 1000 results a search returns"
            )),
            "{}",
            ran.stderr()
        );
        assert!(ran.stdout().contains("\"n1\""), "{}", ran.stdout());
    }
    let mut cmd = kdb(&store);
    cmd.args(["qmd", "search", "-n", "18446744073709551615", "clamp"]);
    cmd.env("QMD_CONFIG_DIR", store.dir.path());
    let ran = run(cmd, b"", DEADLINE);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    assert!(
        ran.stderr()
            .contains("-n 18446744073709551615 is more than"),
        "{}",
        ran.stderr()
    );
}

#[test]
fn the_lock_timeout_message_shows_what_was_asked() {
    let store = TestStore::new();
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(store.path().join("LOCK"))
        .expect("LOCK");
    lock.lock().expect("hold the writer lock");
    let input = store.write("n.jsonl", b"{\"id\": \"n\", \"text\": \"t\"}\n");
    let mut cmd = kdb(&store);
    cmd.args(["add", "--embed", "later", "--lock-timeout", "0.05"])
        .arg(&input);
    let ran = run(cmd, b"", DEADLINE);
    assert_eq!(ran.code(), Some(1), "{}", ran.stderr());
    assert!(
        ran.stderr().contains("for the 0.05 s this command waits"),
        "{}",
        ran.stderr()
    );
    assert!(!ran.stderr().contains("0.1s"), "{}", ran.stderr());
}

#[test]
fn delete_says_the_text_stays_on_disk_until_merged() {
    let store = TestStore::new();
    store.add_later(
        "n.jsonl",
        b"{\"id\": \"gone\", \"text\": \"a deleted secret\"}\n",
    );
    let mut cmd = kdb(&store);
    cmd.args(["delete", "gone"]);
    let ran = run(cmd, b"", DEADLINE);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    assert!(
        ran.stdout().contains("deleted 1 record"),
        "{}",
        ran.stdout()
    );
    let note = ran.stderr();
    assert!(
        note.contains("stays in the index's segment files until they are merged")
            && note.contains("knowledge-db forget"),
        "{note}"
    );
}

#[test]
fn verify_reports_an_interrupted_archive_as_one_pending_item() {
    let store = TestStore::new();
    let lines: String = (0..40)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("old-{i}"), "text": format!("old note {i}"),
                       "timestamp": "2020-01-01T00:00:00Z"})
            )
        })
        .collect();
    store.add_later("old.jsonl", lines.as_bytes());
    let mut cmd = kdb(&store);
    cmd.args(["archive", "--older-than", "1d"]);
    cmd.env("KNOWLEDGE_DB_CRASH_AT", "archive-l3-index");
    let ran = run(cmd, b"", DEADLINE);
    assert_ne!(ran.code(), Some(0), "the archive was not interrupted");
    let mut cmd = kdb(&store);
    cmd.arg("verify");
    let ran = run(cmd, b"", DEADLINE);
    let stdout = ran.stdout();
    assert_eq!(ran.code(), Some(0), "{stdout}{}", ran.stderr());
    assert!(!stdout.contains("FAIL"), "{stdout}");
    assert!(
        stdout.contains("pending operation      an archive of 40 records was interrupted at ")
            && stdout.contains(
                "; the next write to the store finishes it, or run `knowledge-db upkeep` now"
            ),
        "{stdout}"
    );
    // As it says: upkeep finishes it, and nothing is pending after.
    let mut cmd = kdb(&store);
    cmd.arg("upkeep");
    let ran = run(cmd, b"", DEADLINE);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    let mut cmd = kdb(&store);
    cmd.args(["verify", "--json"]);
    let report: serde_json::Value =
        serde_json::from_str(&run(cmd, b"", DEADLINE).stdout()).expect("verify");
    assert_eq!(report["ok"], true, "{report}");
    assert!(report.get("pending").is_none(), "{report}");
}

#[test]
fn an_archive_file_rewritten_by_restore_is_owner_only_whatever_the_umask() {
    let store = TestStore::new();
    let lines: String = (0..4)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("old-{i}"), "text": format!("old note {i}"),
                       "timestamp": "2020-01-01T00:00:00Z"})
            )
        })
        .collect();
    store.add_later("old.jsonl", lines.as_bytes());
    let with_umask = |args: &[&str]| {
        let mut cmd = kdb(&store);
        cmd.args(args);
        // SAFETY: umask in the child before exec touches no shared state.
        unsafe {
            cmd.pre_exec(|| {
                libc::umask(0o022);
                Ok(())
            });
        }
        let ran = run(cmd, b"", DEADLINE);
        assert_eq!(ran.code(), Some(0), "{args:?}: {}", ran.stderr());
    };
    with_umask(&["archive", "--older-than", "1d"]);
    // Restoring one record rewrites the month file without it.
    with_umask(&["restore", "old-0"]);
    let file = store.path().join("archive/2020-01.jsonl.zst");
    let mode = std::fs::metadata(&file)
        .expect("archive file")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600, "{} is {mode:o}", file.display());
}
