//! A reader that goes away (`knowledge-db search … | head -1`) ends a command's
//! output quietly: no panic ("failed printing to stdout: Broken pipe", exit
//! 101), no "error: Broken pipe", whichever command and output format.

mod common;

use std::process::Stdio;

use common::{samples, TestStore};

/// Runs `args` with a stdout pipe whose read end is closed before the command
/// writes anything, and returns the exit status and stderr.
fn run_with_closed_stdout(store: &TestStore, args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("knowledge-db"))
        .arg("--store")
        .arg(store.path())
        .env_remove("KNOWLEDGE_DB_HOME")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // The reader leaves at once, as `head` does once it has its line.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Ended by SIGPIPE's default action (what `cat` and `grep` do), or exited 0.
fn ended_quietly(status: std::process::ExitStatus) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if status.signal() == Some(13) {
            return true;
        }
    }
    status.success()
}

#[test]
fn a_closed_pipe_ends_every_output_quietly() {
    let store = TestStore::new();
    store.add_samples();
    let transcript = samples().join("transcripts/uncompacted-session.jsonl.gz");
    let transcript = transcript.to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["search", "resume session", "-k", "20", "--mode", "bm25"],
        vec![
            "search",
            "resume session",
            "-k",
            "20",
            "--mode",
            "bm25",
            "--json",
        ],
        vec![
            "search",
            "tokenizer",
            "--mode",
            "bm25",
            "--format",
            "openclaw",
        ],
        vec!["stats"],
        vec!["stats", "--json"],
        vec!["get", "seg-auth-0001"],
        vec!["tokens", transcript],
        vec!["tokens", transcript, "--json"],
        vec!["ingest", "--dry-run", transcript],
        vec!["verify"],
        vec!["--help"],
    ];
    for args in commands {
        let (status, stderr) = run_with_closed_stdout(&store, &args);
        assert!(
            ended_quietly(status),
            "{args:?} ended with {status:?}: {stderr}"
        );
        assert!(
            !stderr.contains("panicked")
                && !stderr.contains("Broken pipe")
                && !stderr.contains("error:"),
            "{args:?} printed: {stderr}"
        );
    }
}

#[test]
fn what_a_command_stores_is_committed_before_its_output_is_cut() {
    let store = TestStore::new();
    let transcript = samples().join("transcripts/uncompacted-session.jsonl.gz");
    let (status, stderr) = run_with_closed_stdout(
        &store,
        &[
            "evict",
            "--transcript",
            transcript.to_str().unwrap(),
            "--context-window",
            "700",
            "--min-keep",
            "4",
            "--overhead",
            "0",
        ],
    );
    assert!(ended_quietly(status), "{status:?}: {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    // The evicted messages were stored before the kept ones were printed.
    let record = store.json(&["get", "7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47:m01"]);
    assert!(record["source"]["text"]
        .as_str()
        .unwrap()
        .contains("tests/lexer.rs"));
}
