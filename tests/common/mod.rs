//! Helpers shared by the integration tests: a temporary store and the built binary.
#![allow(dead_code)]

pub mod mcp;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

/// A fresh store in a temporary folder, removed when dropped.
pub struct TestStore {
    pub dir: tempfile::TempDir,
}

impl TestStore {
    /// An initialised, empty store.
    pub fn new() -> TestStore {
        let store = TestStore::uninitialised();
        store.cmd().arg("init").assert().success();
        store
    }

    pub fn uninitialised() -> TestStore {
        TestStore {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    /// `knowledge-db --store <this store>`.
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("knowledge-db").expect("binary");
        cmd.arg("--store").arg(self.path());
        cmd.env_remove("KNOWLEDGE_DB_HOME");
        // No background upkeep: tests see exactly what their commands did
        // (tests/upkeep.rs turns it on).
        cmd.env("KNOWLEDGE_DB_UPKEEP", "off");
        // A hook that cannot write leaves its marker in the user's state
        // folder: the test's own, never the machine's.
        cmd.env("XDG_STATE_HOME", self.dir.path().join("state"));
        cmd
    }

    /// Runs a command that must succeed and returns its stdout as JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let out = self.cmd().args(args).arg("--json").output().expect("run");
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON output")
    }

    /// Adds the project's data samples.
    pub fn add_samples(&self) {
        self.cmd().arg("add").arg(samples()).assert().success();
    }

    /// Ids of a BM25 search's results, in rank order (exact-match semantics: the
    /// vector side always finds a nearest neighbour, so hybrid is tested apart).
    pub fn search_ids(&self, args: &[&str]) -> Vec<String> {
        let mut full = vec!["search", "--mode", "bm25"];
        full.extend_from_slice(args);
        self.json(&full)["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| r["id"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Every file of the store with its bytes: to prove a failed write changed nothing.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut files = BTreeMap::new();
        collect(&self.path(), &self.path(), &mut files);
        files
    }

    /// Sets `key = value` lines of the store's config.toml (values in TOML
    /// syntax, e.g. `"\"0s\""`) and returns the values they replace. Every key
    /// must already have a line (the store writes every setting with its default).
    pub fn set_config(&self, pairs: &[(&str, &str)]) -> Vec<String> {
        let path = self.path().join("config.toml");
        let text = std::fs::read_to_string(&path).expect("read config.toml");
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut old = Vec::with_capacity(pairs.len());
        for (key, value) in pairs {
            let prefix = format!("{key} = ");
            let line = lines
                .iter_mut()
                .find(|line| line.starts_with(&prefix))
                .unwrap_or_else(|| panic!("config.toml has no {key} line:\n{text}"));
            old.push(line[prefix.len()..].to_string());
            *line = format!("{prefix}{value}");
        }
        std::fs::write(&path, lines.join("\n") + "\n").expect("write config.toml");
        old
    }

    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, bytes).expect("write input");
        path
    }

    /// Writes `bytes` as the input file `name` and adds it without vectors
    /// (`add --embed later`), which must succeed; returns the file's path.
    pub fn add_later(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let input = self.write(name, bytes);
        self.cmd()
            .args(["add", "--embed", "later"])
            .arg(&input)
            .assert()
            .success();
        input
    }
}

fn collect(root: &Path, dir: &Path, files: &mut BTreeMap<PathBuf, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if !path.ends_with("LOCK") && !path.ends_with(".tantivy-writer.lock") {
            let rel = path.strip_prefix(root).expect("prefix").to_path_buf();
            files.insert(rel, std::fs::read(&path).expect("read"));
        }
    }
}

/// The longest a test waits for a background upkeep worker: the worker a
/// test starts runs at normal priority ([`upkeep_env`]), and on a machine at
/// load 15 on 2 cores the tests' work takes it well under a minute; the bound
/// only stops a test that would otherwise wait forever.
pub const WORKER_BOUND: std::time::Duration = std::time::Duration::from_secs(600);

/// The environment of a command whose background upkeep a test waits for:
/// upkeep on, and the worker at normal priority (at the lowest, on a busy
/// CI machine, it got no CPU for minutes: issue 51).
pub fn upkeep_env(cmd: &mut Command) -> &mut Command {
    cmd.env("KNOWLEDGE_DB_UPKEEP", "on")
        .env("KNOWLEDGE_DB_UPKEEP_PRIORITY", "normal")
}

/// The upkeep worker's own record of its state (`upkeep/status.json`), read
/// without touching its lock (`upkeep --status` takes the lock for an
/// instant, and costs a process per look).
pub fn upkeep_status_file(store: &Path) -> Value {
    std::fs::read(store.join("upkeep").join("status.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// Waits for a background worker's signal: its status file records a run
/// that ended after `since` (an RFC 3339 time taken before the command that
/// started it) and says no worker runs, and `done` holds. Fails after
/// [`WORKER_BOUND`] with the worker's status.
pub fn wait_for_worker(store: &Path, since: &str, what: &str, mut done: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    loop {
        let status = upkeep_status_file(store);
        let finished = status["last_run"]["finished_at"]
            .as_str()
            .is_some_and(|at| at >= since);
        if finished && status["running"] != true && done() {
            return;
        }
        assert!(
            started.elapsed() < WORKER_BOUND,
            "no worker finished {what} within {} s: {status}",
            WORKER_BOUND.as_secs()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Now, as the store writes times (RFC 3339, seconds): for [`wait_for_worker`].
pub fn now_rfc3339() -> String {
    knowledge_db::now_rfc3339()
}

pub fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples")
}

/// `../shared/eval/NAME` beside the checkout (real evaluation data).
pub fn shared_eval(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("shared")
        .join("eval")
        .join(name)
}
