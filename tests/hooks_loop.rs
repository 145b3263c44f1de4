//! The compression loop end to end, as Claude Code and Claude would run it: a
//! real-format session (`data-samples/hooks/`) written line by line, the hooks
//! binary called after each tool call the installed matcher fires on; the
//! reminder read, its commands run as written, a segment saved the way Claude
//! saves it (`add -` with the JSON on stdin, or MCP `memory_add`), and the
//! queue checked. Also: the environment switches, mistakes in a segment, and
//! the hooks log.

mod common;

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::mcp;
use common::TestStore;
use knowledge_db::context::tokens::Tokenizer;
use serde_json::{json, Value};

const TASKS_SESSION: &str = "5b1f0c2e-7a4d-4c3e-9d2b-1e8f6a7c9b01";
const PLAIN_SESSION: &str = "9e3d2c1b-0a4f-4b5e-8c7d-6f5e4d3c2b10";
/// The tools the installed PostToolUse matcher fires on.
const MATCHER: &[&str] = &[
    "Bash",
    "Write",
    "Edit",
    "TaskCreate",
    "TaskUpdate",
    "TodoWrite",
];

fn sample_lines(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data-samples/hooks")
        .join(name);
    let mut text = String::new();
    flate2::read::GzDecoder::new(fs::File::open(path).expect("sample"))
        .read_to_string(&mut text)
        .expect("gunzip");
    text.lines().map(str::to_string).collect()
}

/// The tool a main-chain assistant line calls, if the matcher fires on it.
fn fires(line: &str) -> Option<String> {
    let entry: Value = serde_json::from_str(line).ok()?;
    if entry["type"] != "assistant" || entry["isSidechain"] == true {
        return None;
    }
    entry["message"]["content"]
        .as_array()?
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .filter_map(|b| b["name"].as_str())
        .find(|name| MATCHER.contains(name))
        .map(str::to_string)
}

fn hook_input(session: &str, transcript: &Path, tool: &str) -> String {
    json!({
        "session_id": session,
        "transcript_path": transcript,
        "cwd": "/home/dev/httpkit",
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": {},
        "tool_response": {"success": true},
    })
    .to_string()
}

/// Runs a hook as Claude Code does; returns its stdout (exit code must be 0).
fn run_hook(store: &TestStore, hook: &str, input: &str, env: &[(&str, &str)]) -> String {
    let mut cmd = store.cmd();
    cmd.args(["hook", hook]).write_stdin(input.to_string());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run hook");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The session written line by line, the hook run after every line the matcher
/// fires on; returns the reminders the agent was shown, with the turn count then.
fn replay(store: &TestStore, sample: &str, session: &str) -> (PathBuf, Vec<String>) {
    let path = store.dir.path().join(format!("{session}.jsonl"));
    fs::write(&path, "").expect("create transcript");
    let mut reminders = Vec::new();
    for line in sample_lines(sample) {
        let mut file = fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        writeln!(file, "{line}").expect("append");
        drop(file);
        let Some(tool) = fires(&line) else {
            continue;
        };
        let stdout = run_hook(
            store,
            "post-tool-use",
            &hook_input(session, &path, &tool),
            &[],
        );
        if stdout.trim().is_empty() {
            continue;
        }
        let output: Value = serde_json::from_str(&stdout).expect("hook output JSON");
        assert_eq!(output["hookSpecificOutput"]["hookEventName"], "PostToolUse");
        let text = output["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .expect("additionalContext")
            .to_string();
        reminders.push(text);
    }
    (path, reminders)
}

/// Sets `[hooks] remind_after_turns` in the store's config.toml.
fn remind_after(store: &TestStore, turns: u64) {
    let config = store.path().join("config.toml");
    let mut text = fs::read_to_string(&config).expect("config");
    text.push_str(&format!("\n[hooks]\nremind_after_turns = {turns}\n"));
    fs::write(&config, text).expect("config");
}

fn queue_file(store: &TestStore, session: &str) -> PathBuf {
    store
        .path()
        .join("hooks/context_queue")
        .join(format!("{session}_pending.json"))
}

fn queue(store: &TestStore, session: &str) -> Value {
    serde_json::from_str(&fs::read_to_string(queue_file(store, session)).expect("queue"))
        .expect("queue JSON")
}

/// The backquoted command of the reminder that starts with `prefix … verb`.
fn command_in(reminder: &str, verb: &str) -> String {
    reminder
        .split('`')
        .skip(1)
        .step_by(2)
        .find(|c| c.contains(&format!(" {verb} ")) || c.ends_with(&format!(" {verb} -")))
        .unwrap_or_else(|| panic!("no `{verb}` command in:\n{reminder}"))
        .to_string()
}

/// Runs a command line of the reminder through the shell, stdin given.
fn shell(command: &str, stdin: &str) -> std::process::Output {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env_remove("KNOWLEDGE_DB_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

#[test]
fn a_cold_task_is_queued_the_agent_compresses_it_and_the_queue_records_it() {
    let store = TestStore::new();
    let (_, reminders) = replay(&store, "tasks-session.jsonl.gz", TASKS_SESSION);
    // Once per batch: the one cold task is announced once over the whole replay.
    assert_eq!(reminders.len(), 1, "{reminders:#?}");
    let reminder = &reminders[0];
    let id = format!("{TASKS_SESSION}:1");
    for expected in [
        format!("session S = {TASKS_SESSION}:\n"),
        "\n1. S:1, turns 3-11, ~".to_string(),
        "Add retry with exponential backoff".to_string(),
        format!("show --session {TASKS_SESSION} --turns 3-11`"),
        "(MCP memory_get session/from/to)".into(),
        "Keep decisions, files changed, errors+fixes, outcomes, user preferences".into(),
        "Save: `".into(),
        "drop tool output, debugging, chatter, boilerplate (80-90% fewer tokens)".into(),
        "(MCP memory_add)".into(),
        format!("\"segment_id\":\"{id}\",\"session_id\":\"{TASKS_SESSION}\""),
        "Compressed N segments (X tokens → Y tokens)".into(),
    ] {
        assert!(
            reminder.contains(&expected),
            "missing {expected:?} in:\n{reminder}"
        );
    }
    let tokens = Tokenizer::O200k.count(reminder);
    assert!(tokens <= 400, "the reminder costs {tokens} tokens");

    // The queue, in the design's format.
    let q = queue(&store, TASKS_SESSION);
    let pending = &q["pending"][0];
    assert_eq!(pending["segment_id"], id.as_str());
    assert_eq!(
        (pending["start_turn"].as_u64(), pending["end_turn"].as_u64()),
        (Some(3), Some(11))
    );
    for key in [
        "topic",
        "message_count",
        "turns_since_mention",
        "queued_at_turn",
        "timestamp",
    ] {
        assert!(pending.get(key).is_some(), "{key} in {pending}");
    }
    let original = pending["original_tokens"]
        .as_u64()
        .expect("original_tokens");
    assert!(original > 0);

    // The fallback is stored at once under the queued id. Reading it counts as
    // an access; the access log folds into the record.
    store.cmd().args(["get", &id]).assert().success();
    store.cmd().args(["maintain", "--force"]).assert().success();
    assert_eq!(store.json(&["get", &id])["access_count"], 1);

    // The agent reads the turns with the reminder's own command…
    let show = shell(&command_in(reminder, "show"), "");
    assert!(
        show.status.success(),
        "{}",
        String::from_utf8_lossy(&show.stderr)
    );
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(shown.contains("── turn 7 ──"), "{shown}");
    assert!(shown.contains("jittered exponential backoff"), "{shown}");
    assert!(!shown.contains("── turn 12 ──"), "{shown}");

    // …and saves its segment with the reminder's `add -`, the JSON on stdin.
    let segment = json!({
        "segment_id": id, "session_id": TASKS_SESSION,
        "topic": "Retry with jittered exponential backoff in the HTTP client",
        "start_turn": 3, "end_turn": 11,
        "compressed_content": "Client::get retries transient 503s up to 5 times with jittered exponential backoff capped at 30 s (src/http/retry.rs). First test run failed with E0425: the backoff module was not imported.",
        "key_decisions": ["jittered exponential backoff instead of a fixed delay, capped at 30 s"],
        "key_files": ["src/http/client.rs", "src/http/retry.rs"]
    });
    let add = shell(&command_in(reminder, "add"), &segment.to_string());
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let printed = String::from_utf8_lossy(&add.stdout);
    assert!(
        printed.contains(&format!("queued segment {id} compressed: {original} → ")),
        "{printed}"
    );

    // The entry moved to `compressed` with its token figures.
    let q = queue(&store, TASKS_SESSION);
    assert_eq!(q["pending"], json!([]));
    let done = &q["compressed"][0];
    assert_eq!(done["segment_id"], id.as_str());
    assert_eq!(done["original_tokens"], original);
    let compressed = done["compressed_tokens"]
        .as_u64()
        .expect("compressed_tokens");
    assert!(compressed > 0 && compressed < original, "{done}");
    let ratio = done["compression_ratio"].as_f64().expect("ratio");
    assert!(
        (ratio - original as f64 / compressed as f64).abs() < 0.06,
        "{done}"
    );
    // At the turn the hooks last saw.
    let state: Value = serde_json::from_str(
        &fs::read_to_string(store.path().join(format!("hooks/{TASKS_SESSION}.json")))
            .expect("state"),
    )
    .expect("state JSON");
    assert_eq!(done["compressed_at_turn"], state["assistant_turns"]);
    assert!(done["storage_location"]
        .as_str()
        .unwrap()
        .ends_with(&format!("#{id}")));
    assert!(done["timestamp"].as_str().is_some());

    // The agent's segment replaced the fallback, keeping its access history:
    // the folded read and the `get` above, still in the access log.
    let record = store.json(&["get", &id]);
    assert_eq!(record["kind"], "segment");
    assert_eq!(record["source"]["topic"], segment["topic"]);
    assert_eq!(record["access_count"], 2);

    // Later checks neither store the fallback over it nor queue it again.
    let path = store.dir.path().join(format!("{TASKS_SESSION}.jsonl"));
    fs::remove_file(store.path().join(format!("hooks/{TASKS_SESSION}.json"))).expect("state");
    let out = store
        .cmd()
        .args(["hook", "post-tool-use", "--force", "--json"])
        .write_stdin(hook_input(TASKS_SESSION, &path, "Edit"))
        .output()
        .expect("run");
    let report: Value = serde_json::from_slice(&out.stdout).expect("report");
    assert_eq!(
        (report["queued"].as_u64(), report["reminded"].as_bool()),
        (Some(0), Some(false))
    );
    assert_eq!(
        store.json(&["get", &id])["source"]["topic"],
        segment["topic"]
    );
}

#[test]
fn a_cold_segment_is_announced_again_then_compressed_through_mcp() {
    let store = TestStore::new();
    remind_after(&store, 6);
    let (_, reminders) = replay(&store, "plain-session.jsonl.gz", PLAIN_SESSION);
    // Queued once, announced at once, and again when still pending 6+ turns on.
    // The hook runs every 3 turns (a Bash call each); the batch is queued near
    // turn 30 of 67: announced then and at most once per 6 turns after, not
    // at each of the 13 calls.
    assert!((2..=7).contains(&reminders.len()), "{reminders:#?}");
    // The same batch, unchanged but for the context figure of the first line.
    let body = |r: &str| r.split_once('\n').map(|(_, rest)| rest.to_string());
    assert_eq!(body(&reminders[0]), body(&reminders[1]));
    let q = queue(&store, PLAIN_SESSION);
    assert_eq!(q["pending"].as_array().map(Vec::len), Some(1));
    let entry = &q["pending"][0];
    let id = entry["segment_id"].as_str().expect("id").to_string();
    let (from, to) = (
        entry["start_turn"].as_u64().unwrap(),
        entry["end_turn"].as_u64().unwrap(),
    );
    let segment = json!({
        "segment_id": id, "session_id": PLAIN_SESSION, "topic": "OAuth refresh fixed",
        "start_turn": from, "end_turn": to,
        "compressed_content": "refresh() sent the expired access token; it now sends the refresh token and refreshes 60 s before expiry. tests/test_oauth2.py passes.",
        "key_decisions": ["refresh 60 s before expiry to absorb clock skew"],
        "key_files": ["src/auth/oauth2.py"]
    });
    let results = mcp::session(
        &store,
        &[
            (
                "memory_get",
                json!({"session": PLAIN_SESSION, "from": from, "to": to}),
            ),
            ("memory_add", json!({"records": [segment]})),
        ],
    );
    let read = &results[0]["structuredContent"];
    // The compression check captured the session: its turns are read from the store.
    assert_eq!(read["source"], "store");
    let texts: Vec<&str> = read["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert!(texts.iter().any(|t| t.contains("invalid_grant")), "{read}");
    let added = &results[1];
    assert_ne!(added["isError"], true, "{added}");
    let text = added["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(&format!("queued segment {id} compressed")),
        "{text}"
    );
    assert_eq!(
        added["structuredContent"]["compressed"][0]["segment_id"],
        id.as_str()
    );
    let q = queue(&store, PLAIN_SESSION);
    assert_eq!(q["pending"], json!([]));
    assert_eq!(q["compressed"][0]["segment_id"], id.as_str());
    assert!(q["compressed"][0]["compressed_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn a_segment_with_mistakes_is_refused_whole_with_the_field_and_a_valid_example() {
    let store = TestStore::new();
    let path = store.dir.path().join("t.jsonl");
    let raw = sample_lines("tasks-session.jsonl.gz").join("\n") + "\n";
    fs::write(&path, raw).expect("transcript");
    run_hook(
        &store,
        "post-tool-use",
        &hook_input(TASKS_SESSION, &path, "Edit"),
        &[],
    );
    let before = store.snapshot();
    let queue_before = fs::read(queue_file(&store, TASKS_SESSION)).expect("queue");
    for (bad, field) in [
        (
            json!({"session_id": TASKS_SESSION, "topic": "t", "compressed_content": "c"}),
            "segment_id",
        ),
        (
            json!({"segment_id": format!("{TASKS_SESSION}:1"), "compressed_content": "c", "key_files": "src/a.rs"}),
            "key_files",
        ),
        (
            json!({"segment_id": format!("{TASKS_SESSION}:1"), "compressed_content": "c", "start_turn": "3"}),
            "start_turn",
        ),
    ] {
        // With a valid record in the same batch: all or nothing.
        let batch = format!("{}\n{}\n", json!({"id": "n1", "text": "a note"}), bad);
        let out = store
            .cmd()
            .args(["add", "-"])
            .write_stdin(batch)
            .output()
            .expect("add");
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("field `{field}`")), "{err}");
        assert!(
            err.contains("expected a segment like {\"segment_id\":"),
            "{err}"
        );
        assert!(err.contains("nothing was written"), "{err}");
    }
    assert_eq!(store.snapshot(), before, "nothing was written");
    assert_eq!(
        fs::read(queue_file(&store, TASKS_SESSION)).expect("queue"),
        queue_before
    );
}

#[test]
fn the_environment_switches_turn_the_hooks_off_or_force_the_check() {
    let store = TestStore::new();
    let path = store.dir.path().join("t.jsonl");
    fs::write(
        &path,
        sample_lines("tasks-session.jsonl.gz").join("\n") + "\n",
    )
    .expect("write");
    let input = hook_input(TASKS_SESSION, &path, "Edit");
    for hook in ["post-tool-use", "pre-compact", "session-start"] {
        let out = run_hook(
            &store,
            hook,
            &input,
            &[("DISABLE_AUTO_CONTEXT_MANAGER", "1")],
        );
        assert!(out.is_empty(), "{hook}: {out}");
    }
    assert!(
        !store.path().join("hooks").exists(),
        "a silent no-op writes nothing"
    );
    // The every-N-turns gate: with a check due every 1000 turns, none is due…
    let report = |env: &[(&str, &str)]| -> Value {
        let mut cmd = store.cmd();
        cmd.args(["hook", "post-tool-use", "--json", "--check-every", "1000"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.write_stdin(input.clone()).output().expect("run");
        serde_json::from_slice(&out.stdout).expect("report")
    };
    assert_eq!(report(&[])["checked"], false);
    // …but FORCE_COMPRESSION_CHECK=1 checks anyway (the usage gate still holds).
    let forced = report(&[("FORCE_COMPRESSION_CHECK", "1")]);
    assert_eq!(forced["checked"], true);
    assert_eq!(forced["queued"], 1);
}

#[test]
fn the_hooks_log_says_each_error_once() {
    let store = TestStore::new();
    let input = json!({"session_id": "s9", "transcript_path": "/nonexistent/x.jsonl"}).to_string();
    let out = store
        .cmd()
        .args(["hook", "post-tool-use"])
        .write_stdin(input)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let log = fs::read_to_string(store.path().join("hooks/hooks.log")).expect("log");
    let line = log.lines().last().expect("a line");
    assert_eq!(
        line.matches("No such file or directory").count(),
        1,
        "{line}"
    );
    assert_eq!(line.matches("/nonexistent/x.jsonl").count(), 1, "{line}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "{stderr}"
    );
}

#[test]
fn show_says_how_to_make_an_unknown_session_readable() {
    let store = TestStore::new();
    let out = store
        .cmd()
        .args(["show", "--session", "nobody", "--turns", "1-3"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("knowledge-db ingest"), "{err}");
    // An ingested session is read from the store, turns as the hooks count them.
    let path = store.dir.path().join(format!("{TASKS_SESSION}.jsonl"));
    fs::write(
        &path,
        sample_lines("tasks-session.jsonl.gz").join("\n") + "\n",
    )
    .expect("write");
    store
        .cmd()
        .arg("ingest")
        .arg(&path)
        .args(["--embed", "later"])
        .assert()
        .success();
    // No hook state: the turn index comes from the transcript the stored
    // messages name, the messages from the store.
    let before_hooks = store.json(&["show", "--session", TASKS_SESSION, "--turns", "7"]);
    run_hook(
        &store,
        "post-tool-use",
        &hook_input(TASKS_SESSION, &path, "Edit"),
        &[],
    );
    let shown = store.json(&["show", "--session", TASKS_SESSION, "--turns", "7"]);
    assert_eq!(shown["messages"], before_hooks["messages"]);
    assert_eq!(shown["source"], "store", "{shown}");
    let messages = shown["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 1, "{shown}");
    assert!(messages[0]["text"].as_str().unwrap().contains("root cause"));
    assert_eq!(messages[0]["turn"], 7);
    // With the transcript gone, the store still answers.
    fs::remove_file(&path).expect("remove transcript");
    let gone = store.json(&["show", "--session", TASKS_SESSION, "--turns", "7"]);
    assert_eq!(gone["messages"], shown["messages"]);
    // The queue, as the skill lists it.
    let q = store.json(&["show", "--session", TASKS_SESSION, "--queue"]);
    assert_eq!(q["pending"][0]["segment_id"], format!("{TASKS_SESSION}:1"));
}

#[test]
fn a_segment_whose_queue_update_was_lost_is_settled_before_the_next_reminder() {
    let store = TestStore::new();
    remind_after(&store, 2);
    let path = store.dir.path().join("t.jsonl");
    let mut lines = sample_lines("tasks-session.jsonl.gz");
    fs::write(&path, lines.join("\n") + "\n").expect("write");
    let input = hook_input(TASKS_SESSION, &path, "Edit");
    run_hook(&store, "post-tool-use", &input, &[]);
    let queued = fs::read(queue_file(&store, TASKS_SESSION)).expect("queue");
    let id = format!("{TASKS_SESSION}:1");
    let segment = json!({"segment_id": id, "session_id": TASKS_SESSION, "topic": "Retry",
        "start_turn": 3, "end_turn": 11, "compressed_content": "Retry with jittered backoff."});
    store
        .cmd()
        .args(["add", "-"])
        .write_stdin(segment.to_string())
        .assert()
        .success();
    // As if the writer was killed between its commit and the queue update.
    fs::write(queue_file(&store, TASKS_SESSION), &queued).expect("restore queue");
    // The session goes on; when the batch is due to be announced again, the
    // store shows the agent's segment: settled, not announced.
    for n in 0..3 {
        lines.push(json!({"type":"assistant","sessionId":TASKS_SESSION,"uuid":format!("x{n}"),"requestId":format!("rx{n}"),
            "message":{"id":format!("mx{n}"),"role":"assistant","content":[{"type":"text","text":"Continuing with the CLI flag."}]}}).to_string());
    }
    fs::write(&path, lines.join("\n") + "\n").expect("grow");
    let out = run_hook(&store, "post-tool-use", &input, &[]);
    assert!(out.is_empty(), "nothing to announce: {out}");
    let q = queue(&store, TASKS_SESSION);
    assert_eq!(q["pending"], json!([]));
    assert_eq!(q["compressed"][0]["segment_id"], id.as_str());
}
