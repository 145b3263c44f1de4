//! The MCP server against a hostile client: over-long request lines, too
//! many records in one call, a server scoped to one namespace asked to read
//! and write another's records, QMD file reads outside a collection's mask.
//! (`HOSTILE_BIN=<another build>` runs these against it.)

mod common;
mod hostile_support;

use std::time::Duration;

use common::TestStore;
use hostile_support::{is_error, kdb, mcp, mcp_with_env, peak_rss, run, text_of};
use serde_json::{json, Value};

const DEADLINE: Duration = Duration::from_secs(60);

#[test]
fn an_over_long_request_is_answered_naming_the_limit_and_not_held() {
    let store = TestStore::new();
    let mut server = mcp(&store, &[]);
    let baseline = peak_rss(server.child.id());
    // 17 MiB, over the 16 MiB default: answered with its own id.
    let text = "x".repeat(17 << 20);
    let line = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "memory_add", "arguments": {"records": [{"id": "big", "text": text}]}}});
    server.raw(line.to_string().as_bytes());
    let answer = server.answer(&json!(99));
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("over the limit of 16.0 MiB")
            && message.contains("limits.max_mcp_request_bytes"),
        "{message}"
    );
    drop(text);
    // 100 MiB with no newline, then one: read past, never held.
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..100 {
        server.partial(&chunk);
    }
    server.raw(b"");
    let answer = server
        .receive(DEADLINE)
        .expect("an answer to the 100 MiB line");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");
    // The connection goes on.
    let pong = server.call("ping", json!({}));
    assert!(pong.get("result").is_some(), "{pong}");
    let grown = peak_rss(server.child.id()).saturating_sub(baseline);
    // The 16 MiB kept of the first line, and not much more.
    assert!(
        grown < 32 << 20,
        "peak RSS grew by {} MiB reading 117 MiB of over-long lines",
        grown >> 20
    );
    // Nothing was written.
    let stats = server.tool("memory_stats", json!({}));
    assert_eq!(stats["structuredContent"]["records"], 0, "{stats}");
}

#[test]
fn memory_add_is_capped_per_call_in_records_and_bytes() {
    let store = TestStore::new();
    store.set_config(&[("max_add_bytes_per_call", "2000")]);
    let mut server = mcp(&store, &[]);
    let many: Vec<Value> = (0..1001)
        .map(|i| json!({"id": format!("n{i}"), "text": "t"}))
        .collect();
    let refused = server.tool("memory_add", json!({"records": many}));
    assert!(is_error(&refused), "{refused}");
    let text = text_of(&refused);
    assert!(
        text.contains("1001 records in one call, over the limit of 1000")
            && text.contains("limits.max_add_records_per_call"),
        "{text}"
    );
    let long = "long text ".repeat(120);
    let heavy = json!({"records": [{"id": "h1", "text": long}, {"id": "h2", "text": long}]});
    let refused = server.tool("memory_add", heavy);
    assert!(is_error(&refused), "{refused}");
    assert!(
        text_of(&refused).contains("limits.max_add_bytes_per_call"),
        "{refused}"
    );
    let stats = server.tool("memory_stats", json!({}));
    assert_eq!(stats["structuredContent"]["records"], 0, "{stats}");
    // Within both, the call goes through.
    let fine = server.tool(
        "memory_add",
        json!({"records": [{"id": "ok", "text": "fits"}]}),
    );
    assert!(!is_error(&fine), "{fine}");
}

/// Alice's records (a note, an archived note, a session's messages) and Bob's note.
fn two_tenants(store: &TestStore) {
    let lines = [
        json!({"id": "victim-note", "namespace": "alice", "text": "alice secret plan zebra",
               "project": "/home/alice/acquisition-plans"}),
        json!({"id": "alice-old", "namespace": "alice", "text": "alice archived zebra",
               "timestamp": "2020-01-01T00:00:00Z"}),
        json!({"id": "bob-note", "namespace": "bob", "text": "bob zebra notes"}),
        json!({"kind": "segment", "segment_id": "bob-seg", "namespace": "bob",
               "session_id": "s-alice", "start_turn": 0, "end_turn": 5,
               "topic": "a segment naming another tenant's session", "compressed_content": "zebra"}),
    ];
    let records: String = lines.iter().map(|l| format!("{l}\n")).collect();
    store.add_later("tenants.jsonl", records.as_bytes());
    let transcript: String = [
        json!({"type":"user","sessionId":"s-alice","uuid":"u1",
               "message":{"role":"user","content":"alice private question about zebra"}}),
        json!({"type":"assistant","sessionId":"s-alice","uuid":"a1",
               "message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"alice private answer zebra"}]}}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect();
    let path = store.write("s-alice.jsonl", transcript.as_bytes());
    let mut cmd = kdb(store);
    cmd.args(["ingest", "--embed", "later", "--namespace", "alice"])
        .arg(&path);
    let ran = run(cmd, b"", DEADLINE);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    let mut cmd = kdb(store);
    cmd.args(["archive", "--older-than", "365d"]);
    let ran = run(cmd, b"", DEADLINE);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
}

#[test]
fn a_server_scoped_to_a_namespace_neither_reads_nor_writes_outside_it() {
    let store = TestStore::new();
    two_tenants(&store);
    let before = store.json(&["get", "victim-note"]);
    let mut server = mcp(&store, &["--namespace", "bob"]);

    // Reads: search within bob only; `*` and other namespaces refused.
    let found = server.tool("memory_search", json!({"query": "zebra", "minScore": 0}));
    let ids: Vec<&str> = found["structuredContent"]["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert!(
        !ids.is_empty() && ids.iter().all(|id| id.starts_with("bob")),
        "{ids:?}"
    );
    for namespace in ["*", "alice"] {
        let refused = server.tool(
            "memory_search",
            json!({"query": "zebra", "namespace": namespace, "minScore": 0}),
        );
        assert!(is_error(&refused), "{namespace}: {refused}");
        assert!(
            text_of(&refused).contains("scoped to namespace `bob`"),
            "{refused}"
        );
    }
    let archived = server.tool(
        "memory_search",
        json!({"query": "zebra", "tier": "all", "minScore": 0}),
    );
    let namespaces: Vec<&Value> = archived["structuredContent"]["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| &r["namespace"])
        .collect();
    assert!(
        namespaces.iter().all(|ns| **ns == json!("bob")),
        "the archive search leaked: {archived}"
    );
    // Get by id: alice's live and archived records do not exist for bob.
    for id in ["victim-note", "alice-old"] {
        let refused = server.tool("memory_get", json!({"id": id}));
        assert!(is_error(&refused), "{id}: {refused}");
        assert!(!refused.to_string().contains("secret"), "{refused}");
    }
    // Session reads: alice's session, directly or through bob's segment.
    let refused = server.tool("memory_get", json!({"session": "s-alice", "from": 1}));
    assert!(is_error(&refused), "{refused}");
    assert!(!refused.to_string().contains("private"), "{refused}");
    let segment = server.tool("memory_get", json!({"id": "bob-seg"}));
    assert!(!is_error(&segment), "{segment}");
    assert!(!segment.to_string().contains("private"), "{segment}");
    // Counts: bob's only.
    let stats = server.tool("memory_stats", json!({}));
    assert_eq!(
        stats["structuredContent"]["by_namespace"],
        json!({"bob": 2}),
        "{stats}"
    );
    assert_eq!(stats["structuredContent"]["records"], 2, "{stats}");
    // Nor alice's projects, nor the store's vector coverage.
    assert!(!stats.to_string().contains("acquisition-plans"), "{stats}");
    let vectors = &stats["structuredContent"]["vectors"];
    assert_eq!(
        vectors["with_vector"]
            .as_u64()
            .zip(vectors["without_vector"].as_u64()),
        Some((0, 2)),
        "bob's 2 live records, stored without vectors: {stats}"
    );

    // Writes: no record of another namespace; an id another namespace holds
    // (live or archived) is stored under bob's own (`bob/<id>`), answered
    // exactly as a free id is, and alice's record is left alone.
    let free = server.tool(
        "memory_add",
        json!({"records": [{"id": "never-used", "text": "taken over"}]}),
    );
    assert!(!is_error(&free), "{free}");
    for id in ["victim-note", "alice-old"] {
        let added = server.tool(
            "memory_add",
            json!({"records": [{"id": id, "text": "taken over"}]}),
        );
        assert_eq!(added, free, "{id}: the answer tells the id is taken");
        let got = server.tool("memory_get", json!({"id": id}));
        assert_eq!(
            got["structuredContent"]["record"]["id"],
            format!("bob/{id}"),
            "{got}"
        );
        assert_eq!(
            got["structuredContent"]["record"]["namespace"], "bob",
            "{got}"
        );
    }
    let added = server.tool(
        "memory_add",
        json!({"records": [{"id": "victim-note", "namespace": "bob", "text": "taken over"}]}),
    );
    assert!(!is_error(&added), "{added}");
    let refused = server.tool(
        "memory_add",
        json!({"records": [{"id": "planted", "namespace": "alice", "text": "planted"}]}),
    );
    assert!(is_error(&refused), "{refused}");
    assert!(
        text_of(&refused).contains("cannot add a record to namespace `alice`"),
        "{refused}"
    );
    let added = server.tool(
        "memory_add",
        json!({"records": [{"id": "bob-2", "text": "bob's own"}]}),
    );
    assert!(!is_error(&added), "{added}");
    drop(server);
    let after = store.json(&["get", "victim-note"]);
    assert_eq!(
        (&after["source"], &after["namespace"]),
        (&before["source"], &before["namespace"])
    );
    assert_eq!(store.json(&["get", "bob/bob-2"])["namespace"], "bob");
    let planted = store.cmd().args(["get", "planted"]).output().expect("get");
    assert!(!planted.status.success(), "a record was planted in alice");
    // Unscoped, the server is the whole store.
    let mut whole = mcp(&store, &[]);
    let all = whole.tool(
        "memory_search",
        json!({"query": "zebra", "namespace": "*", "minScore": 0}),
    );
    assert!(all.to_string().contains("victim-note"), "{all}");
}

#[test]
fn qmd_memory_get_serves_only_files_the_collection_mask_matches() {
    let store = TestStore::new();
    let config = store.dir.path().join("qmd-config");
    let workspace = store.dir.path().join("ws");
    std::fs::create_dir_all(workspace.join("memory")).expect("mkdir");
    std::fs::write(workspace.join("memory/day.md"), "# Day\nrouter notes\n").expect("write");
    std::fs::write(workspace.join(".env"), "API_KEY=hunter2\n").expect("write");
    std::fs::write(workspace.join("config.yaml"), "password: hunter2\n").expect("write");
    std::os::unix::fs::symlink(workspace.join(".env"), workspace.join("memory/env.md"))
        .expect("symlink");
    let mut cmd = kdb(&store);
    cmd.env("QMD_CONFIG_DIR", &config);
    cmd.args(["qmd", "collection", "add"])
        .arg(&workspace)
        .args(["--name", "ws", "--mask", "memory/**/*.md"]);
    let ran = run(cmd, b"", DEADLINE);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    let mut server = mcp_with_env(&store, &[], &[("QMD_CONFIG_DIR", &config)]);
    let served = server.tool("memory_get", json!({"path": "qmd://ws/memory/day.md"}));
    assert!(!is_error(&served), "{served}");
    assert!(served.to_string().contains("router notes"), "{served}");
    let env = workspace.join(".env").display().to_string();
    for path in [
        "qmd://ws/.env",
        "qmd://ws/config.yaml",
        "qmd://ws/memory/env.md",
        "qmd://ws/memory/../.env",
        env.as_str(),
    ] {
        let refused = server.tool("memory_get", json!({"path": path}));
        assert!(is_error(&refused), "{path}: {refused}");
        assert!(
            !refused.to_string().contains("hunter2"),
            "{path}: {refused}"
        );
    }
}

/// `value` without the fields that hold a timing (`took_ms`, `tookMs`), and
/// its text content with them dropped too.
fn without_timings(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !k.to_ascii_lowercase().contains("took"))
                .map(|(k, v)| (k.clone(), without_timings(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_timings).collect()),
        Value::String(text) => Value::String(
            text.split(['\n'])
                .filter(|line| !line.contains(" ms"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        other => other.clone(),
    }
}

/// A server scoped to a namespace answers exactly as if the other namespaces
/// did not exist (issue 38): the explanation of an empty answer, the words no
/// record holds, recall's `why_not` and the archive's answer are the same,
/// byte for byte, on a store where another namespace holds the words and on
/// one where no namespace does. (Before: "3 records match the query, but the
/// filters exclude all of them (--namespace bob keeps 0)".)
#[test]
fn a_scoped_server_answers_as_if_other_namespaces_did_not_exist() {
    let bob = [
        json!({"id": "bob-1", "namespace": "bob", "text": "bob zebra notes about the garden",
               "timestamp": "2026-01-02T10:00:00Z"}),
        json!({"id": "bob-2", "namespace": "bob", "text": "bob waters the tomatoes on sunday",
               "timestamp": "2026-01-03T10:00:00Z"}),
    ];
    let alice = [
        json!({"id": "alice-1", "namespace": "alice", "text": "alice zanzibar quokka acquisition plans",
               "timestamp": "2026-01-02T11:00:00Z"}),
        json!({"id": "alice-2", "namespace": "alice", "text": "zanzibar quokka budget for alice",
               "timestamp": "2026-01-02T12:00:00Z"}),
        json!({"id": "alice-3", "namespace": "alice", "text": "quokka zanzibar zebra offsite",
               "timestamp": "2026-01-02T13:00:00Z"}),
    ];
    let store_of = |lines: Vec<&Value>| {
        let store = TestStore::new();
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        store.add_later("records.jsonl", text.as_bytes());
        store
    };
    let lonely = store_of(bob.iter().collect());
    let crowded = store_of(bob.iter().chain(alice.iter()).collect());
    let calls = [
        ("memory_search", json!({"query": "zanzibar"})),
        (
            "memory_search",
            json!({"query": "zanzibar quokka", "minScore": 0}),
        ),
        (
            "memory_search",
            json!({"query": "zanzibar", "tier": "all", "minScore": 0}),
        ),
        (
            "memory_search",
            json!({"query": "zanzibar", "tier": "l3", "minScore": 0}),
        ),
        (
            "memory_search",
            json!({"query": "zebra zanzibar", "session": "none", "minScore": 0}),
        ),
        (
            "memory_search",
            json!({"query": "tomatoes zanzibar", "minScore": 0}),
        ),
        (
            "memory_recall",
            json!({"prompt": "zanzibar quokka plans?", "project": "*"}),
        ),
        (
            "memory_recall",
            json!({"prompt": "zanzibar", "project": "*"}),
        ),
    ];
    let answers = |store: &TestStore| -> Vec<Value> {
        let mut server = mcp(store, &["--namespace", "bob"]);
        calls
            .iter()
            .map(|(tool, arguments)| server.tool(tool, arguments.clone()))
            .collect()
    };
    // The stores' own folders differ (named in the model's status).
    let local = |store: &TestStore, answer: &Value| {
        let dir = store.dir.path().display().to_string();
        let text = without_timings(answer).to_string().replace(&dir, "<dir>");
        serde_json::from_str::<Value>(&text).expect("JSON")
    };
    let (alone, beside) = (answers(&lonely), answers(&crowded));
    for (((tool, arguments), alone), beside) in calls.iter().zip(&alone).zip(&beside) {
        let (a, b) = (local(&lonely, alone), local(&crowded, beside));
        if tool == &"memory_search" && a["structuredContent"]["results"] != json!([]) {
            // Hits carry BM25 scores, whose word weights are the whole
            // index's (docs/privacy.md): compare what explains the answer.
            for field in ["explanation", "unknownWords", "unknown_words"] {
                assert_eq!(
                    a["structuredContent"][field], b["structuredContent"][field],
                    "{tool} {arguments}: {field}"
                );
            }
            continue;
        }
        assert_eq!(
            a.to_string(),
            b.to_string(),
            "{tool} {arguments}: the answer tells that another namespace holds the words"
        );
    }
    // And what it says is true for bob.
    let why = alone[0]["structuredContent"]["explanation"]
        .as_str()
        .unwrap_or("");
    assert!(why.contains("namespace `bob`"), "{}", alone[0]);
    assert!(
        !beside
            .iter()
            .any(|a| a.to_string().contains("--namespace bob keeps")),
        "{beside:?}"
    );
}
