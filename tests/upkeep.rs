//! The background upkeep, end to end with the real binary and model: a write
//! starts one worker that computes the missing vectors, folds the access log
//! and applies the retention policy, then exits; a worker killed with SIGKILL
//! at any moment loses nothing and the next one resumes; a large backlog is
//! drafted by the int8 model and the drafts replaced by the full model's
//! vectors, even after a kill; one worker at a time; a failing worker backs
//! off; off means off.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{now_rfc3339, samples, upkeep_env, wait_for_worker, TestStore, WORKER_BOUND};
use serde_json::Value;

/// `knowledge-db --store S` with the upkeep on (the other tests turn it off),
/// its worker at normal priority so that a busy machine runs it.
fn on(store: &TestStore) -> assert_cmd::Command {
    let mut cmd = store.cmd();
    upkeep_env(&mut cmd);
    cmd
}

fn status(store: &TestStore) -> Value {
    store.json(&["upkeep", "--status"])
}

/// Polls until `done` holds, or fails after [`WORKER_BOUND`]: for a worker
/// this test started as its child (at normal priority), to kill it once it
/// got somewhere. A worker a command started is waited for by its own
/// signal ([`wait_for_worker`]).
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < WORKER_BOUND,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn vectors_waiting(store: &TestStore) -> u64 {
    store.json(&["stats"])["vectors"]["without_vector"]
        .as_u64()
        .unwrap()
}

/// The stored JSON of every record, by id (what a crash must not change).
fn contents(store: &TestStore) -> Vec<(String, Value)> {
    let lines = store
        .cmd()
        .args(["export", "--no-vectors", "--tier", "l2"])
        .output()
        .unwrap();
    assert!(lines.status.success());
    let mut out: Vec<(String, Value)> = String::from_utf8(lines.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["id"].as_str().unwrap().to_string(), v["source"].clone())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Adds `n` notes without vectors (`add --embed later`), each text made by `text`.
fn add_notes_later(
    store: &TestStore,
    n: usize,
    text: impl Fn(usize) -> String,
) -> std::path::PathBuf {
    let mut lines = String::new();
    for i in 0..n {
        let note = serde_json::json!({"id": format!("n{i}"), "title": format!("note {i}"), "text": text(i)});
        lines.push_str(&format!("{note}\n"));
    }
    store.add_later("notes.jsonl", lines.as_bytes())
}

/// A worker started as a write starts one (`upkeep --background`), not waited for.
fn spawn_worker(store: &TestStore) -> std::process::Child {
    Command::new(assert_cmd::cargo::cargo_bin("knowledge-db"))
        .arg("--store")
        .arg(store.path())
        .args(["upkeep", "--background"])
        .env_remove("KNOWLEDGE_DB_HOME")
        .env("KNOWLEDGE_DB_UPKEEP_PRIORITY", "normal")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_write_starts_one_worker_that_computes_the_vectors_and_exits() {
    let store = TestStore::new();
    let since = now_rfc3339();
    on(&store)
        .args(["add", "--embed", "later"])
        .arg(samples())
        .assert()
        .success();
    let waiting_at_first = store.json(&["stats"])["records"].as_u64().unwrap();
    assert!(waiting_at_first > 0);
    wait_for_worker(&store.path(), &since, "the vectors", || {
        vectors_waiting(&store) == 0
    });
    let status = status(&store);
    let run = &status["last_run"];
    assert_eq!(run["embedded"].as_u64(), Some(waiting_at_first), "{status}");
    assert!(status["last_error"].is_null(), "{status}");
    store.cmd().arg("verify").assert().success();
    // Hybrid search now covers every record.
    let found = store.json(&["search", "users kept getting signed out"]);
    assert!(found["records_without_vector"].is_null(), "{found}");
}

#[test]
fn reads_are_folded_and_the_policy_applied_without_cron() {
    let store = TestStore::new();
    store
        .cmd()
        .args(["add", "--embed", "later"])
        .arg(samples())
        .assert()
        .success();
    // A big access log (as after many searches) is folded in the background.
    let line = format!("{}\tseg-auth-0001\n", 1_767_609_720_000_i64);
    std::fs::write(store.path().join("access.log"), line.repeat(3000)).unwrap();
    let since = now_rfc3339();
    on(&store)
        .args(["search", "--mode", "bm25", "oauth2.py"])
        .assert()
        .success();
    wait_for_worker(&store.path(), &since, "the fold", || {
        !store.path().join("access.log").exists()
    });
    let record = store.json(&["get", "seg-auth-0001"]);
    assert_eq!(record["access_count"].as_u64(), Some(3001), "{record}");

    // A policy that makes everything due: the next write's worker archives.
    store.set_config(&[
        ("archive_idle_for", "\"0s\""),
        ("archive_older_than", "\"0s\""),
    ]);
    let note = store.write("n.json", br#"{"id":"late","text":"a late note"}"#);
    let since = now_rfc3339();
    on(&store)
        .args(["add", "--embed", "later"])
        .arg(&note)
        .assert()
        .success();
    wait_for_worker(&store.path(), &since, "the archive", || {
        store.json(&["stats"])["by_tier"]["l2"].is_null()
    });
    assert_eq!(store.json(&["get", "late"])["tier"], "l3");
    store.cmd().arg("verify").assert().success();
}

#[test]
fn a_worker_killed_at_any_moment_loses_nothing_and_the_next_resumes() {
    let store = TestStore::new();
    // Enough records that kills land while batches are embedded and committed.
    add_notes_later(&store, 300, |i| {
        format!("retry the sync worker {i} with backoff; cache key {i} expired")
    });
    store.set_config(&[("embed_batch", "32")]);
    let before = contents(&store);
    let rounds: u64 = std::env::var("KNOWLEDGE_DB_CRASH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(6);
    let mut seed = 0x51ed_270b_u64;
    let mut progressed = Vec::new();
    for round in 0..rounds {
        let waiting = vectors_waiting(&store);
        if waiting == 0 {
            break;
        }
        let mut worker = spawn_worker(&store);
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Half the kills land early (loading the model, the first batch);
        // the others after the worker has committed a batch, whatever the
        // machine's speed, at a random moment of a later batch.
        if round % 2 == 1 {
            wait_until("a committed batch", || vectors_waiting(&store) < waiting);
        }
        std::thread::sleep(Duration::from_millis(seed % 1500));
        let _ = worker.kill(); // SIGKILL
        let _ = worker.wait();
        let context = format!("round {round}");
        // A kill between a commit and its vector files leaves those files to
        // build: the next worker (or a hybrid search) builds them from the
        // stored embeddings; nothing else may be wrong.
        let verified = store.cmd().args(["verify", "--json"]).output().unwrap();
        let report: Value = serde_json::from_slice(&verified.stdout).unwrap();
        for check in report["checks"].as_array().unwrap() {
            let pending = check["name"] == "vector files"
                && check["detail"].as_str().unwrap().starts_with("0 damaged");
            assert!(check["ok"] == true || pending, "{context}: {check}");
        }
        assert_eq!(contents(&store), before, "{context}: a record changed");
        let stats = store.json(&["stats"]);
        let (with, without) = (
            stats["vectors"]["with_vector"].as_u64().unwrap(),
            stats["vectors"]["without_vector"].as_u64().unwrap(),
        );
        assert_eq!(with + without, 300, "{context}: {stats}");
        progressed.push(waiting - without);
    }
    // The status of a killed worker says it is not running (the lock says so).
    assert_eq!(status(&store)["running"], false);
    // The next worker finishes the job, vector files included: no repair.
    on(&store).arg("upkeep").assert().success();
    assert_eq!(vectors_waiting(&store), 0);
    store.cmd().arg("verify").assert().success();
    assert_eq!(contents(&store), before);
    assert!(
        progressed.iter().any(|&n| n > 0),
        "no round got anywhere: {progressed:?}"
    );
    eprintln!("vectors committed per killed worker: {progressed:?}");
}

#[test]
fn one_worker_at_a_time() {
    let store = TestStore::new();
    store.add_later("a.json", br#"{"id":"a","text":"first note"}"#);
    // Stand in for a running worker by holding its lock (a real worker may
    // finish before the test looks, which made this test flaky on CI).
    std::fs::create_dir_all(store.path().join("upkeep")).unwrap();
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(store.path().join("upkeep/worker.lock"))
        .unwrap();
    held.lock().unwrap();
    assert_eq!(status(&store)["running"], true);
    let second = store.json(&["upkeep"]);
    assert_eq!(second["another_worker"], true, "{second}");
    // A nudge while it runs starts nobody: it leaves the mark the running
    // worker looks for before it exits.
    on(&store)
        .args(["add", "--embed", "later"])
        .arg(store.write("x.json", br#"{"id":"x","text":"one more"}"#))
        .assert()
        .success();
    std::thread::sleep(Duration::from_millis(500));
    assert!(status(&store)["pid"].is_null(), "{}", status(&store));
    assert!(store.path().join("upkeep/wanted").exists());
    assert_eq!(vectors_waiting(&store), 2);
    drop(held);
    // The next run does both records and clears the mark.
    on(&store).arg("upkeep").assert().success();
    assert_eq!(vectors_waiting(&store), 0);
    assert!(!store.path().join("upkeep/wanted").exists());
}

#[test]
fn a_worker_that_fails_is_not_restarted_at_every_write() {
    let store = TestStore::new();
    // A model folder whose files are there but unreadable as a model.
    let fake = store.dir.path().join("fake-model");
    std::fs::create_dir_all(&fake).unwrap();
    for file in ["model.onnx", "tokenizer.json", "tokenizer_config.json"] {
        std::fs::write(fake.join(file), b"not a model").unwrap();
    }
    let with_fake = |cmd: &mut assert_cmd::Command| {
        cmd.env("KNOWLEDGE_DB_MODEL_DIR", &fake);
    };
    let mut add = on(&store);
    with_fake(&mut add);
    let since = now_rfc3339();
    add.args(["add", "--embed", "later"])
        .arg(store.write("a.json", br#"{"id":"a","text":"first"}"#))
        .assert()
        .success();
    wait_for_worker(&store.path(), &since, "the failure", || {
        !status(&store)["last_error"].is_null()
    });
    let failed = status(&store);
    assert!(
        failed["last_error"]["message"]
            .as_str()
            .unwrap()
            .contains("embedding model"),
        "{failed}"
    );
    let mut again = on(&store);
    with_fake(&mut again);
    again
        .args(["add", "--embed", "later"])
        .arg(store.write("b.json", br#"{"id":"b","text":"second"}"#))
        .assert()
        .success();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        status(&store)["started_at"],
        failed["started_at"],
        "a worker was started again"
    );
    // `stats` says why the vectors wait.
    let text = store.cmd().arg("stats").output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("last run failed"), "{text}");
}

#[test]
fn off_means_off() {
    let store = TestStore::new();
    store
        .cmd()
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .args(["add", "--embed", "later"])
        .arg(samples())
        .assert()
        .success();
    std::thread::sleep(Duration::from_millis(500));
    let status = status(&store);
    assert!(status["last_run"].is_null(), "{status}");
    assert!(vectors_waiting(&store) > 0);
    assert!(!store.path().join("upkeep/worker.lock").exists());
}

#[test]
fn a_store_made_under_older_embedding_text_rules_is_brought_up_to_date() {
    let store = TestStore::new();
    store
        .cmd()
        .args(["ingest", "--embed", "now"])
        .arg(samples().join("transcripts/uncompacted-session.jsonl.gz"))
        .assert()
        .success();
    let current = store.json(&["stats"])["vector_text_rules"]
        .as_u64()
        .unwrap();
    assert!(current >= 2, "a new store is at the current rules");
    // A store written before the rules file existed.
    std::fs::remove_file(store.path().join("embedding-rules")).unwrap();
    assert_eq!(
        store.json(&["stats"])["vector_text_rules"].as_u64(),
        Some(1)
    );
    let text = store.cmd().arg("stats").output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains(&format!("text rules 1 of {current}")),
        "stats says the vectors are outdated: {text}"
    );
    let with_vectors = store.json(&["stats"])["vectors"]["with_vector"].clone();

    // The next write's worker checks every vector; these texts were embedded
    // under the current rules already, so none is made again.
    let note = store.write("n.json", br#"{"id":"late","text":"a late note"}"#);
    let since = now_rfc3339();
    on(&store).args(["add"]).arg(&note).assert().success();
    wait_for_worker(&store.path(), &since, "the rules check", || {
        store.json(&["stats"])["vector_text_rules"].as_u64() == Some(current)
    });
    let status = status(&store);
    assert!(status["last_error"].is_null(), "{status}");
    assert!(status["last_run"]["reembedded"].is_null(), "{status}");
    let stats = store.json(&["stats"]);
    assert_eq!(stats["vectors"]["without_vector"].as_u64(), Some(0));
    assert_eq!(
        stats["vectors"]["with_vector"].as_u64(),
        with_vectors.as_u64().map(|n| n + 1)
    );
    store.cmd().arg("verify").assert().success();
}

/// The vector of each record, by id, as `export` writes it.
fn vectors(store: &TestStore) -> Vec<(String, Vec<f64>)> {
    let lines = store
        .cmd()
        .args(["export", "--tier", "l2"])
        .output()
        .unwrap();
    assert!(lines.status.success());
    let mut out: Vec<(String, Vec<f64>)> = String::from_utf8(lines.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            use base64::Engine;
            assert!(v["vector"].get("draft").is_none(), "a draft left: {l}");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(
                    v["vector"]["f32le"]
                        .as_str()
                        .unwrap_or_else(|| panic!("no vector in {l}")),
                )
                .unwrap();
            let vector = bytes
                .chunks(4)
                .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                .collect();
            (v["id"].as_str().unwrap().to_string(), vector)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn a_large_backlog_is_drafted_first_and_the_drafts_replaced_even_after_a_kill() {
    let store = TestStore::new();
    let input = add_notes_later(&store, 120, |i| {
        format!("the deploy of service {i} failed until the cache key {i} was rotated")
    });
    // Drafted from 50 records waiting, committed 16 at a time.
    store.set_config(&[("embed_batch", "16"), ("draft_from", "50")]);
    let before = contents(&store);
    let mut worker = spawn_worker(&store);
    // Killed once every record has a vector, some of them drafts.
    wait_until("every record drafted", || {
        let stats = store.json(&["stats"]);
        stats["vectors"]["without_vector"] == 0 && stats["vectors"]["drafts"].as_u64() > Some(0)
    });
    let _ = worker.kill(); // SIGKILL
    let _ = worker.wait();
    let stats = store.json(&["stats"]);
    let drafts = stats["vectors"]["drafts"].as_u64().unwrap();
    assert!(drafts > 0, "{stats}");
    let text = store.cmd().arg("stats").output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains(&format!("({drafts} drafts by the int8 model")),
        "stats says which vectors are drafts: {text}"
    );
    // Drafts are searched like any vector meanwhile.
    let found = store.json(&[
        "search",
        "--mode",
        "vector",
        "rotating the cache key of a failed deploy",
    ]);
    assert!(
        !found["results"].as_array().unwrap().is_empty(),
        "drafts are searched: {found}"
    );
    assert_eq!(contents(&store), before, "a record changed");

    // The next run makes every draft again with the full model.
    let report = store.json(&["upkeep"]);
    assert!(report["reembedded"].as_u64() > Some(0), "{report}");
    let stats = store.json(&["stats"]);
    assert_eq!(stats["vectors"]["drafts"], 0, "{stats}");
    assert_eq!(stats["vectors"]["without_vector"], 0, "{stats}");
    store.cmd().arg("verify").assert().success();
    assert_eq!(contents(&store), before);

    // The same vectors as a store embedded by the full model alone.
    let reference = TestStore::new();
    reference
        .cmd()
        .args(["add", "--embed", "now"])
        .arg(&input)
        .assert()
        .success();
    let (ours, theirs) = (vectors(&store), vectors(&reference));
    assert_eq!(ours.len(), 120);
    for ((id, a), (_, b)) in ours.iter().zip(&theirs) {
        let cosine: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        assert!(
            cosine > 0.9999,
            "{id}: cosine {cosine} to the full model's vector"
        );
    }
}
