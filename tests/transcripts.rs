//! Transcript readers on the fixtures in `data-samples/transcripts/` and on real
//! sessions, and `knowledge-db ingest` end to end (incremental re-ingest included).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::{samples, shared_eval, TestStore};
use knowledge_db::transcript::{read_file, Block, Format, ReadFrom, Role, Transcript};

const CC_SESSION: &str = "7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47";

fn fixture(name: &str) -> PathBuf {
    samples().join("transcripts").join(name)
}

fn read(path: &Path) -> Transcript {
    read_file(path, None, ReadFrom::default()).expect("transcript reads")
}

fn by_uuid<'a>(t: &'a Transcript, uuid: &str) -> &'a knowledge_db::transcript::Message {
    t.messages
        .iter()
        .find(|m| m.uuid.as_deref() == Some(uuid))
        .unwrap_or_else(|| panic!("no message {uuid}"))
}

#[test]
fn claude_code_fixture_reads_every_feature() {
    let t = read(&fixture(&format!("{CC_SESSION}.jsonl.gz")));
    assert_eq!(t.format, Format::ClaudeCode);
    assert_eq!(t.session_id, CC_SESSION);
    assert_eq!(t.titles, vec!["Fix the flaky tokenizer test"]);
    assert_eq!(t.skipped.non_json, 1);
    assert_eq!(t.skipped.unknown_types.get("mystery-line-type"), Some(&1));
    assert_eq!(
        t.skipped.not_messages.get("file-history-snapshot"),
        Some(&1)
    );
    assert_eq!(
        t.skipped.not_messages.get("system:stop_hook_summary"),
        Some(&1)
    );
    assert_eq!(t.messages.len(), 16);

    // The user's prompt, given as a plain string.
    let prompt = by_uuid(&t, "m01");
    assert_eq!(prompt.role, Role::User);
    assert!(prompt.text().contains("tests/lexer.rs"));

    // One API response over two lines: thinking, then the TaskCreate call.
    let response = by_uuid(&t, "m02");
    assert_eq!(response.role, Role::Assistant);
    assert_eq!(response.response_id.as_deref(), Some("msg_p1:req_p1"));
    assert!(matches!(response.content[0], Block::Thinking { .. }));
    assert!(
        matches!(&response.content[1], Block::ToolUse { name, id, input } if name == "TaskCreate" && id == "toolu_p01" && input["subject"] == "Make lexer test deterministic")
    );
    assert_eq!(response.usage.unwrap().output_tokens, 112);
    assert_eq!(response.usage.unwrap().context_tokens(), 6 + 12000 + 900);
    assert!(t.messages.iter().all(|m| m.uuid.as_deref() != Some("m03")));

    // The TaskCreate result keeps Claude Code's structured output.
    let created = by_uuid(&t, "m04");
    assert_eq!(created.role, Role::Tool);
    assert_eq!(created.tool_use_result.as_ref().unwrap()["task"]["id"], "1");

    // TaskUpdate spelled with `id`; its result is an error with block-array content.
    let update = by_uuid(&t, "m05");
    assert!(
        matches!(&update.content[0], Block::ToolUse { name, input, .. } if name == "TaskUpdate" && input["id"] == "1")
    );
    let failed = by_uuid(&t, "m06");
    assert!(
        matches!(&failed.content[0], Block::ToolResult { is_error: true, content, tool_use_id, .. } if content == "Error: task id missing\nhint: pass taskId" && tool_use_id == "toolu_p02")
    );
    assert_eq!(failed.error_lines(), vec!["Error: task id missing"]);

    let todo = by_uuid(&t, "m07");
    assert_eq!(todo.tool_names(), vec!["TodoWrite"]);

    // Files and commands touched.
    let edit = by_uuid(&t, "m11");
    assert_eq!(edit.tool_names(), vec!["Edit", "Bash"]);
    assert_eq!(edit.files(), vec!["/home/ana/parser/src/lexer/keywords.rs"]);
    assert_eq!(
        edit.commands(),
        vec!["cargo test --test lexer -- --test-threads 1"]
    );
    assert_eq!(
        by_uuid(&t, "m10").files(),
        vec!["/home/ana/parser/src/lexer/keywords.rs"]
    );

    // Compaction: the boundary, then the summary.
    let boundary = by_uuid(&t, "cb1");
    assert!(boundary.is_compact_boundary);
    assert_eq!(boundary.role, Role::System);
    assert!(boundary.text().contains("161200"));
    assert_eq!(boundary.parent_uuid.as_deref(), Some("m13"));
    let summary = by_uuid(&t, "cs1");
    assert!(summary.is_compact_summary && !summary.is_prompt());

    // A sidechain line from a subagent.
    let side = by_uuid(&t, "m15");
    assert!(side.is_sidechain);
    assert_eq!(side.agent_id.as_deref(), Some("a9f3c21"));
    assert_eq!(side.model.as_deref(), Some("claude-haiku-4-5-20251001"));

    // Turns count user prompts: m01 is turn 0, m14 (after the summary) turn 1.
    assert_eq!(by_uuid(&t, "m13").turn_index, 0);
    assert_eq!(by_uuid(&t, "m14").turn_index, 1);
    assert_eq!(t.tool_calls(), 6);
}

#[test]
fn subagent_file_reads() {
    let t = read(&fixture(&format!(
        "{CC_SESSION}/subagents/agent-a9f3c21.jsonl.gz"
    )));
    assert_eq!(t.format, Format::ClaudeCode);
    assert_eq!(t.messages.len(), 3);
    assert!(t.messages.iter().all(|m| m.is_sidechain));
    assert_eq!(t.messages[1].files(), vec!["/home/ana/parser/src/lexer"]);
}

#[test]
fn openclaw_fixture_reads() {
    let t = read(&fixture("openclaw-session.jsonl.gz"));
    assert_eq!(t.format, Format::Openclaw);
    assert_eq!(t.session_id, "3b8d0c55-61f2-4e0a-b7c9-8d2e4f6a1c30");
    let roles: Vec<Role> = t.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::User,
            Role::User
        ]
    );
    let call = &t.messages[1];
    assert!(
        matches!(&call.content[1], Block::ToolUse { id, name, input } if id == "call_b1" && name == "memory_search" && input["maxResults"] == 3)
    );
    let usage = call.usage.unwrap();
    assert_eq!(
        (usage.input_tokens, usage.cache_read_input_tokens),
        (800, 6400)
    );
    assert!(
        matches!(&t.messages[2].content[0], Block::ToolResult { tool_use_id, name: Some(n), is_error: false, .. } if tool_use_id == "call_b1" && n == "memory_search")
    );
    assert_eq!(
        t.messages[4].error_lines(),
        vec!["rsync: connection refused"]
    );
    assert!(t.messages[5].is_compact_summary);
    assert!(t.messages[5].text().contains("Falkenstein"));
    assert_eq!(t.skipped.unknown_types.get("new_entry_kind"), Some(&1));
    assert_eq!(t.skipped.not_messages.get("model_change"), Some(&1));
    assert_eq!(t.skipped.not_messages.get("custom"), Some(&1));
    assert!(t
        .messages
        .iter()
        .all(|m| m.session_id.as_deref() == Some(t.session_id.as_str())));
}

#[test]
fn generic_fixture_reads() {
    let t = read(&fixture("generic-session.jsonl.gz"));
    assert_eq!(t.format, Format::Generic);
    assert_eq!(t.session_id, "generic-session");
    assert_eq!(t.messages[0].role, Role::System);
    assert_eq!(t.messages[3].role, Role::Tool);
    assert_eq!(
        t.messages[2].commands(),
        vec!["git tag v0.4.2 && git push origin v0.4.2"]
    );
    assert_eq!(
        t.messages[4].timestamp.as_deref(),
        Some("2026-05-01T12:00:15Z")
    );
    assert_eq!(t.messages[4].uuid.as_deref(), Some("g4"));
}

/// A sample of the real Claude Code sessions (every sixth file, and the ones with
/// torn lines and Gemini CLI documents) reads without error; all 288 are read by
/// `ingest --dry-run` in the README's measurement.
#[test]
fn real_sessions_read() {
    let dir = shared_eval("transcripts/claude-code-entire-cli");
    if !dir.is_dir() {
        eprintln!("skipped: {} is missing", dir.display());
        return;
    }
    let files = knowledge_db::transcript::find_files(&[dir]).unwrap();
    assert_eq!(files.len(), 288);
    let special = [
        "2026-01-06-3a782158",
        "2026-01-10-fa4593e0",
        "2026-01-15-b00b80af",
    ];
    let mut messages = 0;
    for (i, file) in files.iter().enumerate() {
        let name = file.file_name().unwrap().to_string_lossy();
        if i % 6 != 0 && !special.iter().any(|s| name.starts_with(s)) {
            continue;
        }
        let t = read(file);
        assert_eq!(t.skipped.skipped_lines(), 0, "{name}: {:?}", t.skipped);
        messages += t.messages.len();
    }
    assert!(messages > 5000, "{messages}");
}

#[test]
fn ingest_stores_messages_and_is_idempotent() {
    let store = TestStore::new();
    let dir = samples().join("transcripts");
    let first = store.json(&["ingest", dir.to_str().unwrap(), "--embed", "later"]);
    // uncompacted-session holds 14 messages of the 7c2e9f10 session again: the
    // copies of the larger file are the ones stored. The session the real
    // Claude Code 2.1.328 wrote (claude-code-2.1.328/) adds its own 14.
    assert_eq!(first["messages"], 45 + 14);
    assert_eq!(first["store"]["added"], 31 + 14);
    assert_eq!(first["superseded"], 14);
    let record = store.json(&["get", &format!("{CC_SESSION}:m11")])["source"].clone();
    assert_eq!(record["role"], "assistant");
    assert_eq!(record["turn_index"], 0);
    assert_eq!(record["tool_names"], serde_json::json!(["Edit", "Bash"]));
    assert_eq!(
        record["files"],
        serde_json::json!(["/home/ana/parser/src/lexer/keywords.rs"])
    );
    assert_eq!(record["timestamp"], "2026-03-02T09:00:14.000Z");
    assert_eq!(record["session_id"], CC_SESSION);
    let ids = store.search_ids(&["BTreeMap keyword table", "--kind", "message"]);
    assert!(ids.iter().any(|id| id.starts_with(CC_SESSION)), "{ids:?}");

    // Again: nothing new is read past the saved positions, nothing is written.
    let second = store.json(&["ingest", dir.to_str().unwrap(), "--embed", "later"]);
    assert_eq!(second["store"]["added"], 0);
    assert_eq!(second["store"]["updated"], 0);
    // And with --full every message is read again, still changing nothing.
    let full = store.json(&[
        "ingest",
        dir.to_str().unwrap(),
        "--full",
        "--embed",
        "later",
    ]);
    assert_eq!(full["messages"], 45 + 14);
    assert_eq!(full["store"]["unchanged"], 31 + 14);
    assert_eq!(full["superseded"], 14);
    let origin = store.json(&["get", &format!("{CC_SESSION}:m11")])["source"]["origin"].clone();
    assert!(origin["path"]
        .as_str()
        .unwrap()
        .ends_with(&format!("{CC_SESSION}.jsonl.gz")));
}

#[test]
fn ingest_reads_only_what_a_transcript_added() {
    let store = TestStore::new();
    let file = store.dir.path().join("chat.jsonl");
    let line = |i: usize| {
        format!(
            "{{\"role\":\"{}\",\"content\":\"message number {i} about zebra{i}\",\"id\":\"x{i}\",\"timestamp\":\"2026-05-01T12:00:{i:02}Z\"}}\n",
            if i.is_multiple_of(2) { "user" } else { "assistant" }
        )
    };
    std::fs::write(&file, (0..4).map(line).collect::<String>()).unwrap();
    let first = store.json(&["ingest", file.to_str().unwrap(), "--embed", "later"]);
    assert_eq!(first["store"]["added"], 4);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    for i in 4..7 {
        f.write_all(line(i).as_bytes()).unwrap();
    }
    drop(f);
    let second = store.json(&["ingest", file.to_str().unwrap(), "--embed", "later"]);
    assert!(second["files"][0]["start_offset"].as_u64().unwrap() > 0);
    // The last message read before is read again (it might have grown), then the 3 new ones.
    assert_eq!(second["messages"], 4);
    assert_eq!(second["store"]["added"], 3);
    assert_eq!(second["store"]["unchanged"], 1);
    let record = store.json(&["get", "chat:x6"])["source"].clone();
    assert_eq!(record["turn_index"], 3);
    // A rewritten file is read whole again.
    std::fs::write(&file, line(9)).unwrap();
    let third = store.json(&["ingest", file.to_str().unwrap(), "--embed", "later"]);
    assert_eq!(third["files"][0]["start_offset"], 0);
    assert_eq!(third["store"]["added"], 1);
}

#[test]
fn ingest_of_a_missing_file_fails_and_writes_nothing() {
    let store = TestStore::new();
    store
        .cmd()
        .args(["ingest", "/no/such/transcript.jsonl"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("/no/such/transcript.jsonl"));
    let stats = store.json(&["stats"]);
    assert_eq!(stats["records"], 0);
}

#[test]
fn reingest_of_a_file_without_a_final_newline_changes_nothing() {
    let store = TestStore::new();
    // The last line (a prompt) has no newline: it may still be being written, so
    // the next read starts before it, and its turn index must not drift.
    let file = store.write(
        "open.jsonl",
        b"{\"role\":\"user\",\"content\":\"first ask\",\"id\":\"a\"}\n\
          {\"role\":\"assistant\",\"content\":\"done\",\"id\":\"b\"}\n\
          {\"role\":\"user\",\"content\":\"second ask\",\"id\":\"c\"}",
    );
    let first = store.json(&["ingest", file.to_str().unwrap(), "--embed", "later"]);
    assert_eq!(first["store"]["added"], 3);
    for _ in 0..3 {
        let again = store.json(&["ingest", file.to_str().unwrap(), "--embed", "later"]);
        assert_eq!(again["store"]["updated"], 0, "{again}");
        assert_eq!(again["store"]["added"], 0, "{again}");
        assert_eq!(store.json(&["get", "open:c"])["source"]["turn_index"], 1);
    }
}

#[test]
fn reingest_of_a_folder_with_a_session_in_two_files_changes_nothing() {
    let store = TestStore::new();
    let dir = store.dir.path().join("sessions");
    std::fs::create_dir(&dir).unwrap();
    // A checkpoint copy holds the first lines of the later, longer file.
    let line = |i: usize| {
        format!(
            "{{\"role\":\"{}\",\"content\":\"step {i} of the plan\",\"id\":\"m{i}\",\"session_id\":\"s1\"}}\n",
            if i.is_multiple_of(3) { "user" } else { "assistant" }
        )
    };
    let all: String = (0..9).map(line).collect();
    let part: String = (0..5).map(line).collect();
    std::fs::write(dir.join("a-checkpoint.jsonl"), &part).unwrap();
    std::fs::write(dir.join("b-later.jsonl"), &all).unwrap();
    let first = store.json(&["ingest", dir.to_str().unwrap(), "--embed", "later"]);
    assert_eq!(first["store"]["added"], 9);
    assert_eq!(first["superseded"], 5);
    for _ in 0..2 {
        let again = store.json(&["ingest", dir.to_str().unwrap(), "--embed", "later"]);
        assert_eq!(again["store"]["updated"], 0, "{again}");
        assert_eq!(again["store"]["added"], 0, "{again}");
    }
    let origin = store.json(&["get", "s1:m4"])["source"]["origin"]["path"].clone();
    assert!(
        origin.as_str().unwrap().ends_with("b-later.jsonl"),
        "{origin}"
    );
}

/// A partial copy of a session (its first lines, as a plain `.jsonl`, larger on
/// disk than the full `.jsonl.gz`) never replaces the full session's records,
/// whichever is ingested first; ingesting both again changes nothing.
#[test]
fn a_partial_copy_never_replaces_the_full_session_in_either_order() {
    let full = fixture("uncompacted-session.jsonl.gz");
    let bytes = knowledge_db::transcript::read_bytes(&full).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    // The first 12 lines: the copy ends inside the session (mid-response too).
    let partial_text: String = text.lines().take(12).map(|l| format!("{l}\n")).collect();
    let session = read(&full);
    for full_first in [true, false] {
        let store = TestStore::new();
        let partial = store.write("partial-copy.jsonl", partial_text.as_bytes());
        assert!(
            std::fs::metadata(&partial).unwrap().len() > std::fs::metadata(&full).unwrap().len()
        );
        let (a, b) = if full_first {
            (&full, &partial)
        } else {
            (&partial, &full)
        };
        let ingest =
            |path: &Path| store.json(&["ingest", path.to_str().unwrap(), "--embed", "later"]);
        let first = ingest(a);
        let second = ingest(b);
        if full_first {
            assert_eq!(second["store"]["added"], 0, "{second}");
            assert_eq!(second["store"]["updated"], 0, "{second}");
            assert_eq!(second["superseded"], second["messages"], "{second}");
        } else {
            // The full file takes over every message the partial copy wrote.
            assert!(
                second["store"]["updated"].as_u64().unwrap() > 0,
                "{first} {second}"
            );
            assert_eq!(second["superseded"], 0, "{second}");
        }
        for message in &session.messages {
            let id = knowledge_db::transcript::ingest::message_id(&session.session_id, message);
            let record = store.json(&["get", &id])["source"].clone();
            assert!(
                record["origin"]["path"]
                    .as_str()
                    .unwrap()
                    .ends_with("uncompacted-session.jsonl.gz"),
                "{id} kept from {} (full first: {full_first})",
                record["origin"]["path"]
            );
            assert_eq!(record["text"], message.text(), "{id}");
        }
        // Both again, whole, in one run and one by one: nothing changes.
        for args in [
            vec![full.to_str().unwrap(), partial.to_str().unwrap()],
            vec![partial.to_str().unwrap()],
            vec![full.to_str().unwrap()],
        ] {
            let mut command = vec!["ingest", "--full", "--embed", "later"];
            command.extend(args);
            let again = store.json(&command);
            assert_eq!(again["store"]["added"], 0, "{again}");
            assert_eq!(again["store"]["updated"], 0, "{again}");
        }
    }
}

/// A subagent's messages (its own file, written after the session's compaction)
/// take the turn of the session during which the subagent ran, not turn 0:
/// from the session's file beside it, else from the session already stored.
#[test]
fn subagent_messages_take_the_sessions_turn() {
    let store = TestStore::new();
    let dir = samples().join("transcripts");
    store.json(&["ingest", dir.to_str().unwrap(), "--embed", "later"]);
    let turn = |uuid: &str| {
        store.json(&["get", &format!("{CC_SESSION}:{uuid}")])["source"]["turn_index"].clone()
    };
    // m14 opened turn 1 after the compaction; the subagent it asked for ran then.
    assert_eq!(turn("m13"), 0);
    assert_eq!(turn("cs1"), 0);
    assert_eq!(turn("m14"), 1);
    for uuid in ["sa1", "sa2", "sa3"] {
        assert_eq!(turn(uuid), 1, "{uuid}");
    }
    // Alone, away from the session's file: the stored session gives the turn.
    let lone = TestStore::new();
    lone.json(&[
        "ingest",
        fixture(&format!("{CC_SESSION}.jsonl.gz")).to_str().unwrap(),
        "--embed",
        "later",
    ]);
    let copy = lone.write(
        "agent-a9f3c21.jsonl.gz",
        &std::fs::read(fixture(&format!(
            "{CC_SESSION}/subagents/agent-a9f3c21.jsonl.gz"
        )))
        .unwrap(),
    );
    lone.json(&["ingest", copy.to_str().unwrap(), "--embed", "later"]);
    let sa2 = lone.json(&["get", &format!("{CC_SESSION}:sa2")]);
    assert_eq!(sa2["source"]["turn_index"], 1, "{sa2}");
}

#[test]
fn an_assistants_words_carry_the_prompt_they_answer() {
    let store = TestStore::new();
    let file = fixture(&format!("{CC_SESSION}.jsonl.gz"));
    store.json(&["ingest", file.to_str().unwrap(), "--embed", "later"]);
    let get = |uuid: &str| store.json(&["get", &format!("{CC_SESSION}:{uuid}")]);
    let prompt =
        "The tokenizer test in tests/lexer.rs fails one run in ten. Find out why and fix it.";
    // Reasoning (m02) and text beside a tool call (m09) answer the prompt.
    assert_eq!(get("m02")["context"], prompt);
    assert_eq!(get("m09")["context"], prompt);
    // The prompt itself, tool calls alone (m05, m11) and tool outputs (m04,
    // m10) carry nothing.
    for uuid in ["m01", "m05", "m11", "m04", "m10"] {
        assert!(get(uuid)["context"].is_null(), "{uuid}: {}", get(uuid));
    }
    // A later prompt is what the words after it answer.
    assert_eq!(
        get("m15")["context"],
        "Ask a helper to double-check the other tables."
    );
    // The prompt's words find it first, then the two answers that carry it
    // among the next three: English word weights (issue 49) make `one`,
    // `in` and `ten` weigh little, so a short test output holding `running`
    // and `failed` (m13) may come between them.
    let ids = store.search_ids(&["fails one run in ten", "--kind", "message"]);
    assert_eq!(ids[0], format!("{CC_SESSION}:m01"), "{ids:?}");
    for answer in ["m02", "m09"] {
        assert!(
            ids[1..4].contains(&format!("{CC_SESSION}:{answer}")),
            "{answer}: {ids:?}"
        );
    }
}

/// A session the real Claude Code 2.1.328 wrote (the capture session of
/// `tests/claude/`, run against the scripted stand-in; paths moved to
/// /home/dev/httpkit): a prompt, Bash, Write, Edit and an `Agent` subagent.
/// Its transcript is mostly bookkeeping (`attachment`, `api-request-shape`,
/// `api-request-blob` holding a copy of the user's message, `cost-state`,
/// blank lines), and the subagent's transcript has an `agent-<id>.meta.json`
/// beside it, on which a folder ingest failed whole.
#[test]
fn a_real_claude_code_2_1_328_folder_ingests_the_conversation_only() {
    // The session's folder as Claude Code left it, `.meta.json` included (kept
    // out of data-samples/, where `add data-samples/` would read it as a record).
    let dir = tempfile::tempdir().expect("tmp");
    let project = dir.path().join("-home-dev-httpkit");
    let sample = fixture("claude-code-2.1.328/-home-dev-httpkit");
    let session = "6acdeb09-9352-4057-997b-261220c30e85";
    let subagents = project.join(session).join("subagents");
    std::fs::create_dir_all(&subagents).expect("folders");
    let main = format!("{session}.jsonl.gz");
    std::fs::copy(sample.join(&main), project.join(&main)).expect("copy");
    let agent = format!("{session}/subagents/agent-a4dc1debfca07b9b6.jsonl.gz");
    std::fs::copy(sample.join(&agent), project.join(&agent)).expect("copy");
    std::fs::write(
        subagents.join("agent-a4dc1debfca07b9b6.meta.json"),
        r#"{"agentType":"general-purpose","isBuiltIn":true,"description":"Review the retry fix","toolUseId":"toolu_standin000010","spawnDepth":1,"requestShape":"foreground","requestNonInteractive":true,"model":"claude-opus-5-5","pickedEffortModel":"claude-opus-5-5","finished":true}"#,
    )
    .expect("meta");
    let store = TestStore::new();
    store
        .cmd()
        .args(["ingest", "--embed", "later"])
        .arg(dir.path())
        .assert()
        .success();
    let out = store
        .cmd()
        .args(["export", "--no-vectors"])
        .output()
        .expect("export");
    let messages: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "message")
        .map(|v| v["source"].clone())
        .collect();
    assert_eq!(messages.len(), 14);
    assert!(messages.iter().all(|m| m["session_id"] == session));
    assert_eq!(
        messages
            .iter()
            .filter(|m| m["is_sidechain"] == true)
            .count(),
        4
    );
    let prompts: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user" && m["is_sidechain"] != true)
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(
        prompts,
        ["The HTTP client retry tests fail intermittently; find out why and fix it"]
    );
    let tools: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["tool_names"].as_array())
        .flatten()
        .filter_map(|t| t.as_str())
        .collect();
    for tool in ["Bash", "Write", "Edit", "Agent"] {
        assert!(tools.contains(&tool), "{tool} in {tools:?}");
    }
}
