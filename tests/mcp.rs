//! The MCP server spoken to as a client would: JSON-RPC over the real binary's
//! stdin/stdout. initialize, tools/list, tools/call for every tool, concurrent
//! calls, errors for bad arguments, and records written by the CLI while the
//! server runs.

mod common;

use common::mcp::{self, Mcp};
use common::TestStore;
use serde_json::{json, Value};

/// A server on `store` (with `env` added), before its handshake.
fn server(store: &TestStore, env: &[(&str, &std::path::Path)]) -> Mcp {
    let mut cmd = mcp::command(store, &[]);
    for (key, value) in env {
        cmd.env(key, value);
    }
    Mcp::spawn(cmd)
}

/// A session's messages (turns 1 to 8) and a segment summarising turns 3 to 6.
fn drilldown_fixture(store: &TestStore) {
    let mut lines = String::new();
    for turn in 1..=8 {
        let role = if turn % 2 == 1 { "user" } else { "assistant" };
        lines.push_str(
            &json!({
                "kind": "message", "session_id": "s-drill", "turn_index": turn, "role": role,
                "text": format!("turn {turn} of the flaky websocket reconnect investigation")
            })
            .to_string(),
        );
        lines.push('\n');
    }
    lines.push_str(
        &json!({
            "segment_id": "seg-drill", "session_id": "s-drill", "start_turn": 3, "end_turn": 6,
            "topic": "Websocket reconnect loop",
            "compressed_content": "The client retried without backoff; added jittered exponential backoff in ws_client.ts.",
            "key_files": ["src/net/ws_client.ts"]
        })
        .to_string(),
    );
    let file = store.write("drill.jsonl", lines.as_bytes());
    store.cmd().arg("add").arg(file).assert().success();
}

/// A call refused for its arguments: JSON-RPC error -32602 naming the problem.
fn assert_rejected(response: &Value, named: &str) {
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert!(response["result"].is_null(), "{response}");
    let message = response["error"]["message"].to_string();
    assert!(message.contains(named), "{named} not in {message}");
}

fn text_of(result: &Value) -> String {
    let text = mcp::text_of(result);
    assert!(!text.is_empty(), "no text content: {result}");
    text
}

#[test]
fn mcp_session_over_stdio() {
    let store = TestStore::new();
    store.add_samples();
    drilldown_fixture(&store);
    let mut server = server(&store, &[]);

    let init = server.initialize();
    assert_eq!(
        init["result"]["serverInfo"]["name"], "knowledge-db",
        "{init}"
    );
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    assert!(init["result"]["protocolVersion"].is_string());

    let listed = server.call("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().expect("tools");
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "memory_add",
            "memory_get",
            "memory_recall",
            "memory_search",
            "memory_stats"
        ]
    );
    let search_tool = tools
        .iter()
        .find(|t| t["name"] == "memory_search")
        .expect("memory_search");
    let schema = &search_tool["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["query"]));
    for field in [
        "query",
        "maxResults",
        "minScore",
        "namespace",
        "session",
        "tier",
    ] {
        assert!(schema["properties"][field].is_object(), "{field}: {schema}");
    }

    // memory_search: structured results and text, BM25 alone without a model.
    let found = server.tool(
        "memory_search",
        json!({"query": "oauth2.py refresh", "maxResults": 3}),
    );
    assert_eq!(found["isError"], false);
    let results = found["structuredContent"]["results"]
        .as_array()
        .expect("results");
    assert_eq!(results[0]["id"], "seg-auth-0001", "{found}");
    assert!(results.len() <= 3);
    assert!(found["structuredContent"]["vector"]
        .as_str()
        .expect("vector")
        .starts_with("unavailable"));
    assert!(text_of(&found).contains("seg-auth-0001"));
    // A word no record holds is named, in the structure and in the text.
    let unheard = server.tool(
        "memory_search",
        json!({"query": "oauth2.py refresh Kubernetes", "maxResults": 3}),
    );
    assert_eq!(
        unheard["structuredContent"]["unknownWords"],
        json!(["Kubernetes"]),
        "{unheard}"
    );
    assert!(
        text_of(&unheard).contains("no record holds \"Kubernetes\""),
        "{unheard}"
    );

    // memory_recall: usually nothing, and it says why.
    let recalled = server.tool(
        "memory_recall",
        json!({"prompt": "a recipe for banana bread with walnuts", "project": "*"}),
    );
    assert_eq!(recalled["isError"], false, "{recalled}");
    assert_eq!(recalled["structuredContent"]["memories"], json!([]));
    assert!(
        recalled["structuredContent"]["whyNot"]
            .as_str()
            .is_some_and(|w| w.contains("nothing confident")),
        "{recalled}"
    );
    assert!(
        text_of(&recalled).starts_with("nothing recalled"),
        "{recalled}"
    );

    // Filters: session and minScore.
    let scoped = server.tool(
        "memory_search",
        json!({"query": "websocket reconnect", "session": "s-drill", "maxResults": 20}),
    );
    let scoped = scoped["structuredContent"]["results"]
        .as_array()
        .expect("results")
        .clone();
    assert!(!scoped.is_empty());
    assert!(scoped.iter().all(|r| r["session_id"] == "s-drill"));
    let high = server.tool(
        "memory_search",
        json!({"query": "websocket reconnect", "minScore": 1.0e9}),
    );
    assert_eq!(high["structuredContent"]["results"], json!([]));
    let l3 = server.tool(
        "memory_search",
        json!({"query": "websocket reconnect", "tier": "l3"}),
    );
    assert_eq!(l3["structuredContent"]["results"], json!([]));

    // memory_get: the segment and its messages, two at a time, by turn.
    let page = server.tool("memory_get", json!({"id": "seg-drill", "lines": 2}));
    let body = &page["structuredContent"];
    assert_eq!(body["record"]["id"], "seg-drill", "{page}");
    let turns: Vec<u64> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["turn_index"].as_u64().expect("turn"))
        .collect();
    assert_eq!(turns, [3, 4]);
    assert_eq!(body["nextFrom"], 5);
    assert_eq!(body["truncated"], true);
    let next = server.tool(
        "memory_get",
        json!({"id": "seg-drill", "from": 5, "lines": 2}),
    );
    let turns: Vec<u64> = next["structuredContent"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["turn_index"].as_u64().expect("turn"))
        .collect();
    assert_eq!(turns, [5, 6]);
    assert!(next["structuredContent"].get("nextFrom").is_none());

    // memory_add, then found by the next search.
    let added = server.tool(
        "memory_add",
        json!({"records": [{"id": "note-mcp-1", "title": "Deploy freeze", "text": "No deploys on Fridays after 15:00 (zanzibar policy)."}]}),
    );
    assert_eq!(added["structuredContent"]["added"], 1, "{added}");
    let found = server.tool("memory_search", json!({"query": "zanzibar"}));
    assert_eq!(found["structuredContent"]["results"][0]["id"], "note-mcp-1");

    // A record written by the CLI while the server holds the store open.
    let file = store.write(
        "late.jsonl",
        br#"{"id": "note-cli-1", "text": "quokka migration checklist"}"#,
    );
    store.cmd().arg("add").arg(file).assert().success();
    let found = server.tool("memory_search", json!({"query": "quokka"}));
    assert_eq!(
        found["structuredContent"]["results"][0]["id"], "note-cli-1",
        "{found}"
    );

    // memory_stats.
    let stats = server.tool("memory_stats", json!({}));
    assert_eq!(stats["structuredContent"]["records"], 21, "{stats}");
    assert!(text_of(&stats).contains("21 records"));

    // Concurrent calls: all sent before any answer is read.
    let ids: Vec<u64> = (0..6)
        .map(|i| {
            let query = if i % 2 == 0 {
                "invoices index"
            } else {
                "websocket"
            };
            server.request(
                "tools/call",
                json!({"name": "memory_search", "arguments": {"query": query}}),
            )
        })
        .collect();
    let mut answered = Vec::new();
    while answered.len() < ids.len() {
        let message = server.next();
        assert_eq!(message["result"]["isError"], false, "{message}");
        answered.push(message["id"].as_u64().expect("id"));
    }
    answered.sort();
    assert_eq!(answered, ids);
}

#[test]
fn mcp_errors_are_reported_not_fatal() {
    let store = TestStore::new();
    store.add_samples();
    let mut server = server(&store, &[]);
    server.initialize();

    // Arguments that do not fit the schema: JSON-RPC -32602 (invalid params),
    // with a message naming the field or the bad value.
    let cases = [
        (json!({"maxResults": 3}), "query"),
        (json!({"query": "x", "maxResults": "ten"}), "ten"),
        (json!({"query": "x", "tier": "l9"}), "l9"),
    ];
    for (arguments, named) in cases {
        let response = server.call(
            "tools/call",
            json!({"name": "memory_search", "arguments": arguments}),
        );
        assert_rejected(&response, named);
    }
    for (tool, arguments, named) in [
        (
            "memory_add",
            json!({"records": "not a list"}),
            "expected a sequence",
        ),
        ("memory_get", json!({"id": "x", "lines": -1}), "memory_get"),
    ] {
        let response = server.call("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_rejected(&response, named);
    }

    // Well-formed calls that fail: results with isError.
    let missing_record = server.tool("memory_get", json!({"id": "no-such-id"}));
    assert_eq!(missing_record["isError"], true);
    assert!(text_of(&missing_record).contains("no-such-id"));
    let neither = server.tool("memory_get", json!({}));
    assert_eq!(neither["isError"], true);
    let empty_query = server.tool("memory_search", json!({"query": "  "}));
    assert_eq!(empty_query["isError"], true);

    // Invalid records: every problem named, nothing written.
    let before = store.snapshot();
    let bad = server.tool(
        "memory_add",
        json!({"records": [
            {"id": "ok-1", "text": "fine"},
            {"segment_id": "s", "compressed_content": "x", "key_files": [1]}
        ]}),
    );
    assert_eq!(bad["isError"], true, "{bad}");
    let message = text_of(&bad);
    assert!(
        message.contains("records[1]") && message.contains("key_files"),
        "{message}"
    );
    assert_eq!(
        store.snapshot(),
        before,
        "a rejected batch changed the store"
    );

    // The server still answers after all of that.
    let found = server.tool("memory_search", json!({"query": "oauth2.py"}));
    assert_eq!(found["isError"], false);
}

#[test]
fn mcp_memory_get_reads_qmd_file_hits() {
    let store = TestStore::new();
    let notes = store.dir.path().join("notes");
    std::fs::create_dir_all(&notes).expect("mkdir");
    let text: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    std::fs::write(notes.join("log.md"), &text).expect("write");
    std::fs::write(store.dir.path().join("outside.md"), "secret\n").expect("write");
    let config = store.dir.path().join("qmd-config");
    store
        .cmd()
        .args(["qmd", "collection", "add"])
        .arg(&notes)
        .args(["--name", "notes"])
        .env("QMD_CONFIG_DIR", &config)
        .assert()
        .success();
    let mut server = server(&store, &[("QMD_CONFIG_DIR", &config)]);
    server.initialize();

    let page = server.tool(
        "memory_get",
        json!({"path": "qmd://notes/log.md", "from": 3, "lines": 4}),
    );
    assert_eq!(
        page["structuredContent"],
        json!({"path": "qmd://notes/log.md", "text": "line 3\nline 4\nline 5\nline 6",
               "truncated": true, "from": 3, "lines": 4, "nextFrom": 7}),
        "{page}"
    );
    assert_eq!(text_of(&page), "line 3\nline 4\nline 5\nline 6");
    let whole = server.tool("memory_get", json!({"path": "log.md"}));
    assert_eq!(whole["structuredContent"]["text"], text.trim_end());
    // Paths outside every collection root are not read.
    let outside = server.tool("memory_get", json!({"path": "qmd://notes/../outside.md"}));
    assert_eq!(outside["isError"], true, "{outside}");
    assert!(text_of(&outside).contains("neither"));
}

/// Sends raw lines (not necessarily JSON) and collects one answer per line.
fn raw_answers(server: &mut Mcp, lines: &[&str]) -> Vec<Value> {
    for line in lines {
        server.raw(line.as_bytes());
    }
    (0..lines.len()).map(|_| server.next()).collect()
}

#[test]
fn mcp_answers_every_line_with_the_right_json_rpc_error() {
    let store = TestStore::new();
    let mut server = server(&store, &[]);
    server.initialize();
    let answers = raw_answers(
        &mut server,
        &[
            "this is not json",
            "[1, 2]",
            r#"{"jsonrpc":"2.0","id":41,"method":"tools/call"}"#,
        ],
    );
    let codes: Vec<(i64, Value)> = answers
        .iter()
        .map(|a| (a["error"]["code"].as_i64().expect("code"), a["id"].clone()))
        .collect();
    assert!(codes.contains(&(-32700, Value::Null)), "{answers:?}");
    assert!(codes.contains(&(-32600, Value::Null)), "{answers:?}");
    assert!(codes.contains(&(-32602, json!(41))), "{answers:?}");
    // Still serving.
    let listed = server.call("tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array());
}

#[test]
fn mcp_integer_arguments_are_plain_bounded_integers() {
    let store = TestStore::new();
    store.add_samples();
    let mut server = server(&store, &[]);
    server.initialize();
    let listed = server.call("tools/list", json!({}));
    for tool in listed["result"]["tools"].as_array().expect("tools") {
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
        let no_properties = serde_json::Map::new();
        let properties = tool["inputSchema"]["properties"]
            .as_object()
            .unwrap_or(&no_properties);
        for (name, property) in properties {
            assert!(property.get("format").is_none(), "{name}: {property}");
            assert!(!property["type"].is_array(), "{name}: {property}");
        }
    }
    let search = &listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "memory_search")
        .expect("memory_search")["inputSchema"]["properties"]["maxResults"];
    assert_eq!(
        search,
        &json!({"description": "Number of results (default 8, at most 100)", "type": "integer", "minimum": 1, "maximum": 100})
    );
    // A numeric string (what MCP Inspector sends) is the number.
    let two = server.tool(
        "memory_search",
        json!({"query": "oauth2.py refresh", "maxResults": "2"}),
    );
    assert_eq!(
        two["structuredContent"]["results"]
            .as_array()
            .expect("results")
            .len(),
        2
    );
    // Zero (and past the maximum) is refused, not answered with one result:
    // the schema says at least 1, and an empty answer would read as "nothing found".
    for bad in [json!(0), json!("0"), json!(101)] {
        let response = server.call(
            "tools/call",
            json!({"name": "memory_search", "arguments": {"query": "oauth", "maxResults": bad}}),
        );
        assert_rejected(&response, "maxResults");
    }
}

#[test]
fn mcp_negotiates_2025_11_25_by_handshake_and_2026_07_28_by_discovery() {
    let store = TestStore::new();
    store.add_samples();
    let handshake = |version: &str| {
        let mut server = server(&store, &[]);
        let answer = server.call(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        );
        answer["result"]["protocolVersion"]
            .as_str()
            .expect("version")
            .to_string()
    };
    assert_eq!(handshake("2025-11-25"), "2025-11-25");
    assert_eq!(handshake("2025-06-18"), "2025-06-18");
    // 2026-07-28 has no initialize: a client asking for it there gets the newest
    // revision that has one.
    assert_eq!(handshake("2026-07-28"), "2025-11-25");

    // 2026-07-28: no handshake; server/discover, then requests carrying the
    // revision in _meta.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    });
    let mut server = server(&store, &[]);
    let discovered = server.call("server/discover", json!({"_meta": meta}));
    let versions = discovered["result"]["supportedVersions"].clone();
    assert!(
        versions
            .as_array()
            .expect("supportedVersions")
            .contains(&json!("2026-07-28"))
            && versions
                .as_array()
                .expect("supportedVersions")
                .contains(&json!("2025-11-25")),
        "{discovered}"
    );
    let found = server.call(
        "tools/call",
        json!({"_meta": meta, "name": "memory_search", "arguments": {"query": "oauth2.py", "maxResults": 1}}),
    );
    assert_eq!(
        found["result"]["structuredContent"]["results"][0]["id"], "seg-auth-0001",
        "{found}"
    );
}

/// memory_search answers a question about nothing stored with no results and
/// says why (with the best score seen); `minScore: 0` shows the weak matches;
/// after every record is archived it points at the archive, and `tier: "l3"`
/// searches it (issues 17 and 20).
#[test]
fn mcp_search_abstains_and_points_at_the_archive() {
    let store = TestStore::new();
    store.add_samples();
    // With the embedding model: the default minimum applies to scores that
    // the vector side took part in.
    let models = std::env::var_os("KNOWLEDGE_DB_MODELS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                .join(".cache/knowledge-db")
        });
    let mut server = server(&store, &[("KNOWLEDGE_DB_MODELS", models.as_path())]);
    server.initialize();

    let query = "what is the best way to brew a Belgian ale at home";
    let none = server.tool("memory_search", json!({"query": query}));
    let body = &none["structuredContent"];
    assert_eq!(body["results"], json!([]), "{none}");
    let why = body["explanation"].as_str().expect("explanation");
    assert!(why.starts_with("nothing relevant"), "{why}");
    assert!(body["bestScore"].as_f64().expect("best") < body["minScore"].as_f64().expect("min"));
    assert!(text_of(&none).contains("nothing relevant"), "{none}");
    let weak = server.tool("memory_search", json!({"query": query, "minScore": 0}));
    let results = weak["structuredContent"]["results"]
        .as_array()
        .expect("results");
    assert!(!results.is_empty(), "{weak}");
    assert!(results.iter().all(|r| r["weak"] == true), "{weak}");

    store
        .cmd()
        .args(["archive", "--older-than", "0s"])
        .assert()
        .success();
    let gone = server.tool("memory_search", json!({"query": "oauth2.py refresh"}));
    let why = gone["structuredContent"]["explanation"]
        .as_str()
        .expect("why");
    assert!(
        why.contains("archived in L3") && why.contains("tier: \"l3\""),
        "{why}"
    );
    let archived = server.tool(
        "memory_search",
        json!({"query": "oauth2.py refresh", "tier": "l3"}),
    );
    let hit = &archived["structuredContent"]["results"][0];
    assert_eq!(
        (hit["id"].as_str(), hit["tier"].as_str()),
        (Some("seg-auth-0001"), Some("l3")),
        "{archived}"
    );
}

#[test]
fn mcp_search_and_recall_filter_by_origin() {
    let store = TestStore::new();
    let notes = [
        json!({"id": "mine", "kind": "note", "title": "how to patch the staging nodes",
               "content": "staging cluster: cordon and drain every node, then run the kernel upgrade script from the ops repo"}),
        json!({"id": "theirs", "kind": "note", "title": "maintenance window for staging",
               "content": "the kernel upgrade on staging needs a maintenance window agreed with the database team; drain cluster traffic to the standby region",
               "sync": {"origin": "bo@desktop", "version": "1", "written_ms": 1}}),
    ];
    let lines: Vec<String> = notes.iter().map(Value::to_string).collect();
    let file = store.write("notes.jsonl", (lines.join("\n") + "\n").as_bytes());
    store.cmd().arg("add").arg(file).assert().success();
    let mut server = server(&store, &[]);
    server.initialize();
    let ids = |answer: &Value, key: &str| -> Vec<String> {
        let mut ids: Vec<String> = answer["structuredContent"][key]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|r| r["id"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        ids.sort();
        ids
    };
    let query = |origin: Option<&str>| {
        let mut args =
            json!({"query": "staging cluster kernel upgrade drain", "minScore": 0, "project": "*"});
        if let Some(o) = origin {
            args["origin"] = json!(o);
        }
        args
    };
    assert_eq!(
        ids(&server.tool("memory_search", query(None)), "results"),
        ["mine", "theirs"]
    );
    assert_eq!(
        ids(
            &server.tool("memory_search", query(Some("bo@desktop"))),
            "results"
        ),
        ["theirs"]
    );
    assert_eq!(
        ids(
            &server.tool("memory_search", query(Some("local"))),
            "results"
        ),
        ["mine"]
    );
    let recalled = server.tool(
        "memory_recall",
        json!({"prompt": "staging cluster kernel upgrade drain", "project": "*", "origin": "nobody@nowhere"}),
    );
    assert_eq!(
        ids(&recalled, "memories"),
        Vec::<String>::new(),
        "{recalled}"
    );
}
