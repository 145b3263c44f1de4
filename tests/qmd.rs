//! OpenClaw's side of the QMD exchange, played against `scripts/qmd`.
//!
//! OpenClaw (extensions/memory-core `qmd-manager.ts`, see interop.md section 3)
//! spawns its `memory.qmd.command` in the workspace with a per-agent
//! `XDG_CONFIG_HOME`, `QMD_CONFIG_DIR`, `XDG_CACHE_HOME` and `NO_COLOR=1`, lists
//! and adds collections, runs `update` and `embed`, reads `Vectors: N` from
//! `status`, and searches with `--json -n N -c COL`. It then reads each hit's
//! lines from the real file under the collection root (its `memory_get`).

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// An OpenClaw agent's world: a workspace, its qmd folders, and our store.
struct Agent {
    dir: tempfile::TempDir,
}

impl Agent {
    fn new() -> Agent {
        let agent = Agent {
            dir: tempfile::tempdir().expect("tmp"),
        };
        let ws = agent.workspace();
        fs::create_dir_all(ws.join("memory/projects")).expect("mkdir");
        fs::write(
            ws.join("MEMORY.md"),
            "# Long-term memory\n\nThe user prefers short answers.\n\n## Network\n\nRouter: use mesh node kestrel-2 for the office; the old access point drops IPv6.\n",
        )
        .expect("write");
        fs::write(
            ws.join("memory/2026-08-01.md"),
            "# 2026-08-01\n\n## Deploy\n\nFroze deploys after the billing incident.\nRollback used `kubectl rollout undo deploy/billing`.\n\n## Lunch\n\nTried the new ramen place; the miso was good.\n",
        )
        .expect("write");
        fs::write(
            ws.join("memory/projects/invoices.md"),
            "# Invoices\n\nAdded index (customer_id, issued_at); the invoices page went from 9 s to 120 ms.\n",
        )
        .expect("write");
        fs::write(ws.join("memory/scratch.txt"), "kestrel-2 in a text file\n").expect("write");
        agent
    }

    fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    fn qmd_dir(&self) -> PathBuf {
        self.dir.path().join("agents/main/qmd")
    }

    /// Runs `scripts/qmd ARGS` the way OpenClaw spawns its QMD command.
    fn qmd(&self, args: &[&str]) -> Output {
        let binary = assert_cmd::cargo::cargo_bin("knowledge-db");
        let shim = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/qmd");
        let path = format!(
            "{}:{}",
            binary.parent().expect("bin dir").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        std::process::Command::new(shim)
            .args(args)
            .current_dir(self.workspace())
            .env("PATH", path)
            .env("XDG_CONFIG_HOME", self.qmd_dir().join("xdg-config"))
            .env("QMD_CONFIG_DIR", self.qmd_dir().join("xdg-config/qmd"))
            .env("XDG_CACHE_HOME", self.qmd_dir().join("xdg-cache"))
            .env("NO_COLOR", "1")
            .env("KNOWLEDGE_DB_UPKEEP", "off")
            .env("KNOWLEDGE_DB_HOME", self.dir.path().join("store"))
            .env("KNOWLEDGE_DB_MODELS", self.dir.path().join("no-models"))
            .env_remove("KNOWLEDGE_DB_MODEL_DIR")
            .output()
            .expect("run qmd shim")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.qmd(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// A search as OpenClaw parses it: a JSON array, or "No results found".
    fn search(&self, mode: &str, query: &str, collections: &[&str]) -> Vec<Value> {
        let mut args = vec![mode, query, "--json", "-n", "6"];
        for c in collections {
            args.extend_from_slice(&["-c", c]);
        }
        let stdout = self.ok(&args);
        if stdout.contains("No results found") {
            return Vec::new();
        }
        serde_json::from_str::<Vec<Value>>(&stdout)
            .unwrap_or_else(|e| panic!("not a JSON array ({e}): {stdout}"))
    }
}

/// OpenClaw's reading of a hit: collection root + the `qmd://` path, lines from
/// `start_line` to `end_line`; the snippet's `@@ -start,count @@` header agrees.
fn check_hit_points_at_real_lines(agent: &Agent, hit: &Value) {
    assert!(
        hit.get("docid").is_none(),
        "docid would send OpenClaw to QMD's SQLite: {hit}"
    );
    let collection = hit["collection"].as_str().expect("collection");
    let file = hit["file"].as_str().expect("file");
    let relative = file
        .strip_prefix(&format!("qmd://{collection}/"))
        .unwrap_or_else(|| panic!("file {file} is not under qmd://{collection}/"));
    let list: Vec<Value> =
        serde_json::from_str(&agent.ok(&["collection", "list", "--json"])).expect("list");
    let root = list
        .iter()
        .find(|c| c["name"] == collection)
        .and_then(|c| c["path"].as_str())
        .expect("collection root");
    let text = fs::read_to_string(Path::new(root).join(relative)).expect("hit file exists");
    let lines: Vec<&str> = text.lines().collect();
    let start = hit["start_line"].as_u64().expect("start_line") as usize;
    let end = hit["end_line"].as_u64().expect("end_line") as usize;
    assert!(1 <= start && start <= end && end <= lines.len(), "{hit}");
    let snippet = hit["snippet"].as_str().expect("snippet");
    let (header, body) = snippet.split_once('\n').expect("header line");
    let count = body.lines().count();
    assert_eq!(header, format!("@@ -{start},{count} @@"));
    assert_eq!(body, lines[start - 1..start - 1 + count].join("\n"));
    let score = hit["score"].as_f64().expect("score");
    assert!(score > 0.0 && score <= 1.0, "score {score} outside (0, 1]");
}

#[test]
fn openclaw_drives_the_qmd_surface() {
    let agent = Agent::new();
    let ws = agent.workspace();

    // First contact: no collections yet (and no store: it is created).
    assert_eq!(agent.ok(&["collection", "list", "--json"]).trim(), "[]");
    agent.ok(&[
        "collection",
        "add",
        ws.to_str().expect("utf-8"),
        "--name",
        "memory-root",
        "--mask",
        "MEMORY.md",
    ]);
    agent.ok(&[
        "collection",
        "add",
        "memory",
        "--name",
        "memory-dir",
        "--glob",
        "**/*.md",
    ]);
    let list: Vec<Value> =
        serde_json::from_str(&agent.ok(&["collection", "list", "--json"])).expect("list");
    assert_eq!(list.len(), 2);
    assert_eq!(list[1]["name"], "memory-dir");
    assert_eq!(list[1]["pattern"], "**/*.md");
    assert!(Path::new(list[1]["path"].as_str().expect("path")).is_absolute());
    // The list lives in the agent's QMD_CONFIG_DIR, as OpenClaw isolates agents.
    assert!(agent.qmd_dir().join("xdg-config/qmd").read_dir().is_ok());

    let update = agent.ok(&["update"]);
    assert!(update.contains("memory-dir: 2 files"), "{update}");
    // No model here: embed succeeds without vectors and status says so.
    agent.ok(&["embed"]);
    let status = agent.ok(&["status"]);
    assert!(status.contains("Vectors: 0"), "{status}");
    assert!(status.contains("Collections: 2"), "{status}");

    // Hits point at real files and lines, in every search mode.
    for mode in ["search", "query"] {
        let hits = agent.search(mode, "mesh node kestrel", &["memory-root", "memory-dir"]);
        assert!(!hits.is_empty(), "{mode}");
        assert_eq!(hits[0]["collection"], "memory-root");
        assert_eq!(hits[0]["file"], "qmd://memory-root/MEMORY.md");
        assert_eq!(hits[0]["start_line"], 5);
        assert_eq!(hits[0]["end_line"], 7);
        for hit in &hits {
            check_hit_points_at_real_lines(&agent, hit);
        }
    }
    let hits = agent.search("search", "rollout undo billing", &["memory-dir"]);
    assert_eq!(hits[0]["file"], "qmd://memory-dir/2026-08-01.md");
    check_hit_points_at_real_lines(&agent, &hits[0]);
    // -c scopes the search: the text file is not indexed, MEMORY.md is not in memory-dir.
    assert!(agent
        .search("search", "kestrel", &["memory-dir"])
        .is_empty());
    assert!(agent.search("search", "xylophone", &[]).is_empty());

    // Edits and removals are picked up by the next update.
    fs::write(
        ws.join("memory/2026-08-01.md"),
        "# 2026-08-01\n\n## Deploy\n\nFroze deploys after the billing incident.\n",
    )
    .expect("edit");
    fs::remove_file(ws.join("memory/projects/invoices.md")).expect("remove");
    let update = agent.ok(&["update", "--json"]);
    let reports: Vec<Value> = serde_json::from_str(&update).expect("update json");
    let dir_report = reports
        .iter()
        .find(|r| r["collection"] == "memory-dir")
        .expect("report");
    assert_eq!(dir_report["files"], 1);
    assert!(
        dir_report["removed"].as_u64().expect("removed") >= 2,
        "{update}"
    );
    assert!(agent.search("search", "ramen miso", &[]).is_empty());
    assert!(agent
        .search("search", "customer_id issued_at", &[])
        .is_empty());
    let hits = agent.search("search", "froze deploys", &["memory-dir"]);
    check_hit_points_at_real_lines(&agent, &hits[0]);

    // Removing a collection forgets its chunks.
    agent.ok(&["collection", "remove", "memory-root"]);
    assert!(agent.search("query", "kestrel", &[]).is_empty());
    let unknown = agent.qmd(&["search", "x", "--json", "-c", "memory-root"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("memory-root"));
}
