//! A new user's first hour, scripted (issue 50): the README's first-use
//! commands in order on real Claude Code sessions: `init`, `ingest` with a
//! Ctrl-C in the middle and the same command again, `search` (short session
//! ids, turns from 1), `show`, the viewer's sessions, and the quick start's
//! `add` of the data samples. The interrupted ingest must keep what it
//! committed, say so, exit 130, and the rerun must end with exactly what one
//! uninterrupted ingest stores.

#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

/// Transcripts taken from the real sessions: enough for several commit steps.
const TRANSCRIPTS: usize = 20;
/// Records per commit step in this test (`KNOWLEDGE_DB_INGEST_STEP`).
const STEP: &str = "400";

fn kdb(store: &Path) -> Command {
    let mut cmd = Command::cargo_bin("knowledge-db").expect("binary");
    cmd.arg("--store")
        .arg(store)
        .env_remove("KNOWLEDGE_DB_HOME")
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .env("KNOWLEDGE_DB_INGEST_STEP", STEP);
    cmd
}

fn json(store: &Path, args: &[&str]) -> Value {
    let out = kdb(store).args(args).arg("--json").output().expect("run");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The real sessions (`../shared/eval`, beside the checkout or, from a
/// worktree, one level up); `None` when the data is not there.
fn real_sessions() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    [root.join(".."), root.join("../..")]
        .iter()
        .map(|p| p.join("shared/eval/transcripts/claude-code-entire-cli"))
        .find(|p| p.is_dir())
}

/// A folder of `n` transcripts copied from the real sessions, as a user's
/// `~/.claude/projects` holds them.
fn history(dir: &Path, from: &Path, n: usize) -> PathBuf {
    let folder = dir.join("projects/-home-me-proj");
    std::fs::create_dir_all(&folder).expect("mkdir");
    let mut names: Vec<PathBuf> = std::fs::read_dir(from)
        .expect("read")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl.gz"))
        .collect();
    names.sort();
    for path in names.iter().step_by(3).take(n) {
        std::fs::copy(path, folder.join(path.file_name().expect("name"))).expect("copy");
    }
    dir.join("projects")
}

/// Every record id of a store, sorted.
fn ids(store: &Path) -> Vec<String> {
    let out = kdb(store).arg("export").output().expect("export");
    assert!(out.status.success());
    let mut ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["id"].as_str().map(str::to_string))
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_new_user_ingests_is_interrupted_resumes_and_finds_the_work() {
    let Some(sessions) = real_sessions() else {
        eprintln!("skipped: ../shared/eval is not there");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let projects = history(dir.path(), &sessions, TRANSCRIPTS);
    let store = dir.path().join("memory");

    // init: the retention policy is said.
    let out = kdb(&store).arg("init").output().expect("init");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Retention"));

    // ingest, and Ctrl-C once the first step is committed (its read
    // positions are saved right after its commit).
    let binary = assert_cmd::cargo::cargo_bin("knowledge-db");
    let mut child = Process::new(&binary)
        .arg("--store")
        .arg(&store)
        .args(["ingest", "--embed", "later"])
        .arg(&projects)
        .env_remove("KNOWLEDGE_DB_HOME")
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .env("KNOWLEDGE_DB_INGEST_STEP", STEP)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let positions = store.join("ingest");
    let started = Instant::now();
    while !std::fs::read_dir(&positions).is_ok_and(|mut d| d.next().is_some()) {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "ingest ended before its first commit"
        );
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no commit in 5 minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signals our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().expect("wait");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read");
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted:")
            && stderr.contains("stored and searchable")
            && stderr.contains("Run the same command again"),
        "{stderr}"
    );
    let kept = json(&store, &["stats"])["records"]
        .as_u64()
        .expect("records");
    assert!(kept > 0, "the committed steps were lost");
    assert_eq!(
        kdb(&store)
            .arg("verify")
            .output()
            .expect("verify")
            .status
            .code(),
        Some(0)
    );

    // The same command again goes on and finishes.
    let rerun = kdb(&store)
        .args(["ingest", "--embed", "later"])
        .arg(&projects)
        .output()
        .expect("rerun");
    assert!(
        rerun.status.success(),
        "{}",
        String::from_utf8_lossy(&rerun.stderr)
    );
    // Exactly what one uninterrupted ingest stores: nothing lost, nothing twice.
    let clean = dir.path().join("clean");
    kdb(&clean).arg("init").assert().success();
    kdb(&clean)
        .args(["ingest", "--embed", "later"])
        .arg(&projects)
        .assert()
        .success();
    let (resumed, whole) = (ids(&store), ids(&clean));
    assert!(resumed.len() as u64 > kept, "the rerun added nothing");
    assert_eq!(
        resumed, whole,
        "the resumed store differs from a clean ingest"
    );

    // search: a session id shortened to its first 8 characters narrows to
    // that session, and a session's first prompt is turn 1.
    let hits = json(
        &store,
        &[
            "search",
            "error",
            "--all-projects",
            "--mode",
            "bm25",
            "-k",
            "20",
        ],
    );
    let hit = hits["results"]
        .as_array()
        .and_then(|r| r.iter().find(|h| h["session_id"].is_string()))
        .expect("a hit with a session")
        .clone();
    let session = hit["session_id"].as_str().expect("session").to_string();
    let short = &session[..8];
    let narrowed = json(
        &store,
        &[
            "search",
            "error",
            "--all-projects",
            "--mode",
            "bm25",
            "--session",
            short,
        ],
    );
    let results = narrowed["results"].as_array().expect("results");
    assert!(!results.is_empty(), "--session {short} kept nothing");
    assert!(results.iter().all(|h| h["session_id"] == session.as_str()));
    let turns: Vec<u64> = results
        .iter()
        .filter_map(|h| h["start_turn"].as_u64())
        .collect();
    assert!(
        turns.iter().all(|&t| t >= 1),
        "a turn 0 is cited: {turns:?}"
    );

    // show with the short id reads the session, from turn 1; an old
    // citation's `0-0` is read as turn 1, with a note.
    let show = kdb(&store)
        .args(["show", "--session", short, "--turns", "1"])
        .output()
        .expect("show");
    assert!(
        show.status.success(),
        "{}",
        String::from_utf8_lossy(&show.stderr)
    );
    let old = kdb(&store)
        .args(["show", "--session", short, "--turns", "0-0"])
        .output()
        .expect("show 0-0");
    assert!(
        old.status.success(),
        "{}",
        String::from_utf8_lossy(&old.stderr)
    );
    assert!(String::from_utf8_lossy(&old.stderr).contains("turns count from 1"));
    assert_eq!(show.stdout, old.stdout);

    // The viewer lists the sessions by their first prompt.
    let mut ui = Process::new(&binary)
        .arg("--store")
        .arg(&store)
        .args(["ui", "--no-vectors"])
        .env_remove("KNOWLEDGE_DB_HOME")
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ui");
    let mut line = String::new();
    BufReader::new(ui.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("url");
    let url = line.trim().to_string();
    let sessions = get(&url, "api/sessions?limit=100");
    let _ = ui.kill();
    let _ = ui.wait();
    let listed = sessions["sessions"].as_array().expect("sessions");
    assert!(!listed.is_empty());
    let titled = listed.iter().filter(|s| s["title"].is_string()).count();
    assert_eq!(titled, listed.len(), "untitled sessions: {sessions}");
}

/// GET under the viewer's token URL; the JSON answer.
fn get(base: &str, path: &str) -> Value {
    use std::io::Write;
    let url = url_parts(base);
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", url.0)).expect("connect");
    write!(
        stream,
        "GET {}{path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
        url.1, url.0
    )
    .expect("write");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("read");
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The port and path of `http://127.0.0.1:PORT/t/TOKEN/`.
fn url_parts(url: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://127.0.0.1:").expect("loopback URL");
    let (port, path) = rest.split_once('/').expect("path");
    (port.parse().expect("port"), format!("/{path}"))
}

/// The README's quick start adds the data samples by their real names; a
/// missing file is named as missing, not as an invalid record.
#[test]
fn the_quick_starts_add_works_and_a_missing_file_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("memory");
    kdb(&store).arg("init").assert().success();
    let samples = common::samples();
    kdb(&store)
        .arg("add")
        .arg(samples.join("tasks.jsonl"))
        .arg(samples.join("notes.jsonl"))
        .assert()
        .success();
    let out = kdb(&store)
        .arg("add")
        .arg(samples.join("notes.json"))
        .output()
        .expect("add");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no such file or folder") && err.contains("notes.json"),
        "{err}"
    );
    assert!(!err.contains("invalid input record"), "{err}");
}
