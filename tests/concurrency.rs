//! Many readers, two writers and an MCP server on one store at once, each in its
//! own process, for a bounded time. Every write that returned success must be
//! readable by every process started after it (the CLI readers, and the MCP
//! server after its next reload) and, at the end, present and intact.
//!
//! CI runs 4 seconds; `KNOWLEDGE_DB_CONCURRENCY_SECS=60` runs longer locally.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::mcp::Mcp;
use common::TestStore;
use serde_json::json;

const READERS: usize = 4;
const WRITERS: usize = 2;

/// (id, text) of every acknowledged record, in the order the writes returned.
type Acknowledged = Arc<Mutex<Vec<(String, String)>>>;

fn run_secs() -> u64 {
    std::env::var("KNOWLEDGE_DB_CONCURRENCY_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4)
}

fn command(store: &TestStore) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("knowledge-db"));
    cmd.arg("--store").arg(store.path());
    cmd.env_remove("KNOWLEDGE_DB_HOME");
    cmd.env("KNOWLEDGE_DB_UPKEEP", "off");
    cmd
}

/// Adds batch after batch until `deadline`; each batch is acknowledged when
/// `add` exits 0. Half the writers embed (model permitting), half do not.
fn writer(store: &TestStore, w: usize, deadline: Instant, acknowledged: &Acknowledged) -> usize {
    let mut batches = 0;
    while Instant::now() < deadline {
        let notes: Vec<(String, String)> = (0..25)
            .map(|i| {
                let id = format!("w{w}-b{batches}-{i}");
                let text = format!("writer{w} batch{batches} note {i} token{w}x{batches}");
                (id, text)
            })
            .collect();
        let lines: String = notes
            .iter()
            .map(|(id, text)| json!({"id": id, "text": text}).to_string() + "\n")
            .collect();
        let input = store.write(&format!("w{w}-{batches}.jsonl"), lines.as_bytes());
        let mut cmd = command(store);
        cmd.args(["add", "--lock-timeout", "120"]).arg(&input);
        if w % 2 == 1 {
            cmd.args(["--embed", "later"]);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "writer {w} batch {batches}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        acknowledged.lock().unwrap().extend(notes);
        batches += 1;
    }
    batches
}

/// Reads the newest acknowledged record by `get` and by a BM25 search, again
/// and again until `deadline`: both must find it.
fn reader(store: &TestStore, deadline: Instant, acknowledged: &Acknowledged, reads: &AtomicUsize) {
    let mut n = 0usize;
    while Instant::now() < deadline {
        let newest = acknowledged.lock().unwrap().last().cloned();
        let Some((id, text)) = newest else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        let out = if n.is_multiple_of(2) {
            command(store)
                .args(["get", &id, "--json"])
                .output()
                .unwrap()
        } else {
            let token = text.split(' ').next_back().unwrap().to_string();
            command(store)
                .args([
                    "search", &token, "--mode", "bm25", "--limit", "50", "--json",
                ])
                .output()
                .unwrap()
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "reader: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains(&id), "a reader did not see {id}: {stdout}");
        reads.fetch_add(1, Ordering::Relaxed);
        n += 1;
    }
}

#[test]
fn readers_writers_and_an_mcp_server_at_once() {
    let store = TestStore::new();
    let mut mcp = Mcp::start(&store, &[]);
    let acknowledged: Acknowledged = Arc::default();
    let reads = AtomicUsize::new(0);
    let deadline = Instant::now() + Duration::from_secs(run_secs());
    let mut mcp_checks = 0;
    let batches: Vec<usize> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (store, acknowledged) = (&store, &acknowledged);
                scope.spawn(move || writer(store, w, deadline, acknowledged))
            })
            .collect();
        for _ in 0..READERS {
            let (store, acknowledged, reads) = (&store, &acknowledged, &reads);
            scope.spawn(move || reader(store, deadline, acknowledged, reads));
        }
        // The MCP server holds the store open: each call must see every record
        // acknowledged before it was sent.
        while Instant::now() < deadline {
            let newest = acknowledged.lock().unwrap().last().cloned();
            if let Some((id, _)) = newest {
                let got = mcp.tool("memory_get", json!({"id": id}));
                assert_eq!(
                    got["isError"], false,
                    "the MCP server did not see {id}: {got}"
                );
                assert!(got.to_string().contains(&id), "{got}");
                mcp_checks += 1;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    // Every acknowledged record is there and intact.
    let acknowledged = acknowledged.lock().unwrap().clone();
    let opened = knowledge_db::Store::open(&store.path()).unwrap();
    let searcher = opened.reader().unwrap().searcher();
    let stored: std::collections::BTreeMap<String, String> = opened
        .l2_records(&searcher, |_| true)
        .unwrap()
        .into_iter()
        .map(|r| (r.record.id, r.record.fields.content))
        .collect();
    assert_eq!(stored.len(), acknowledged.len());
    for (id, text) in &acknowledged {
        assert_eq!(stored.get(id), Some(text), "{id}");
    }
    let stats = mcp.tool("memory_stats", json!({}));
    assert_eq!(
        stats["structuredContent"]["records"].as_u64(),
        Some(acknowledged.len() as u64),
        "{stats}"
    );
    store.cmd().arg("verify").assert().success();
    assert!(
        batches.iter().all(|&b| b > 0),
        "a writer never wrote: {batches:?}"
    );
    assert!(mcp_checks > 0 && reads.load(Ordering::Relaxed) > 0);
    eprintln!(
        "{}s: {WRITERS} writers acknowledged {batches:?} batches ({} records), {READERS} readers made {} reads, the MCP server {} gets; every record present",
        run_secs(),
        acknowledged.len(),
        reads.load(Ordering::Relaxed),
        mcp_checks
    );
}

/// `repair` swaps in a rebuilt text index; an MCP server that held the old one
/// open must see the rebuilt index (and records written after it) on its next call.
#[test]
fn an_mcp_server_follows_a_rebuilt_text_index() {
    let store = TestStore::new();
    let first = store.write(
        "a.jsonl",
        br#"{"id": "before", "text": "axolotl before the rebuild"}"#,
    );
    store
        .cmd()
        .args(["add", "--embed", "later"])
        .arg(&first)
        .assert()
        .success();
    let mut mcp = Mcp::start(&store, &[]);
    let found = mcp.tool("memory_search", json!({"query": "axolotl"}));
    assert!(found.to_string().contains("before"), "{found}");
    // Damage the text index (delete its meta.json) and rebuild it.
    std::fs::remove_file(store.path().join("text").join("meta.json")).unwrap();
    store.cmd().arg("repair").assert().success();
    let second = store.write(
        "b.jsonl",
        br#"{"id": "after", "text": "axolotl after the rebuild"}"#,
    );
    store
        .cmd()
        .args(["add", "--embed", "later"])
        .arg(&second)
        .assert()
        .success();
    let found = mcp.tool("memory_search", json!({"query": "axolotl"}));
    let text = found.to_string();
    assert!(
        text.contains("\"before\"") && text.contains("\"after\""),
        "{found}"
    );
}
