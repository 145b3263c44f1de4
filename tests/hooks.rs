//! The Claude Code hooks run as Claude Code runs them: the built binary with the
//! hook JSON on stdin, on temporary stores, over transcripts written from
//! interop.md (`data-samples/hooks/*.jsonl.gz`, made by `make_fixtures.py`).

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::TestStore;
use serde_json::{json, Value};

const TASKS_SESSION: &str = "5b1f0c2e-7a4d-4c3e-9d2b-1e8f6a7c9b01";
const PLAIN_SESSION: &str = "9e3d2c1b-0a4f-4b5e-8c7d-6f5e4d3c2b10";

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data-samples/hooks")
        .join(name)
}

/// A sample transcript's lines (the samples are gzipped, so `add data-samples/` skips them).
fn sample_bytes(name: &str) -> Vec<u8> {
    use std::io::Read;
    let raw = fs::read(sample(&format!("{name}.gz"))).expect("sample");
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&raw[..])
        .read_to_end(&mut out)
        .expect("gunzip");
    out
}

/// A sample transcript decompressed into the test's folder, as Claude Code
/// writes it (plain JSONL; the hooks read it as it grows).
fn transcript(store: &TestStore, name: &str) -> PathBuf {
    let path = store.dir.path().join(name);
    fs::write(&path, sample_bytes(name)).expect("write transcript");
    path
}

fn hook_input(event: &str, session: &str, transcript: &Path, extra: Value) -> String {
    let mut input = json!({
        "session_id": session,
        "transcript_path": transcript,
        "cwd": "/home/dev/httpkit",
        "permission_mode": "default",
        "hook_event_name": event,
    });
    if let (Value::Object(map), Value::Object(more)) = (&mut input, extra) {
        map.extend(more);
    }
    input.to_string()
}

fn post_tool_use_input(session: &str, transcript: &Path) -> String {
    hook_input(
        "PostToolUse",
        session,
        transcript,
        json!({"tool_name": "Edit", "tool_input": {"file_path": "/home/dev/httpkit/src/cli/args.rs"},
               "tool_response": {"success": true}, "tool_use_id": "toolu_x", "duration_ms": 9}),
    )
}

/// Runs `hook post-tool-use --json` (the report instead of the hook output).
fn post_tool_use(store: &TestStore, input: &str, args: &[&str]) -> Value {
    let out = store
        .cmd()
        .args(["hook", "post-tool-use", "--json"])
        .args(args)
        .write_stdin(input)
        .output()
        .expect("run");
    assert!(out.status.success(), "exit {:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("report JSON")
}

fn queue(store: &TestStore, session: &str) -> Value {
    let path = store
        .path()
        .join("hooks/context_queue")
        .join(format!("{session}_pending.json"));
    serde_json::from_str(&fs::read_to_string(path).expect("queue file")).expect("queue JSON")
}

#[test]
fn cold_task_is_stored_once_and_the_agent_is_told() {
    let store = TestStore::new();
    let path = transcript(&store, "tasks-session.jsonl");
    let input = post_tool_use_input(TASKS_SESSION, &path);

    // As Claude Code calls it: the hook output JSON on stdout.
    let out = store
        .cmd()
        .args(["hook", "post-tool-use"])
        .write_stdin(input.clone())
        .output()
        .expect("run");
    assert!(out.status.success());
    let output: Value = serde_json::from_slice(&out.stdout).expect("hook output JSON");
    assert_eq!(output["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    let context = output["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("additionalContext");
    assert!(
        context.contains("Add retry with exponential backoff"),
        "{context}"
    );
    assert!(
        !context.contains("--timeout flag"),
        "task 2 is in progress: {context}"
    );

    let id = format!("{TASKS_SESSION}:1");
    let record = store.json(&["get", &id]);
    let record = &record["source"];
    assert_eq!(record["subject"], "Add retry with exponential backoff");
    // Paths inside the session's project folder are shown relative to it.
    assert_eq!(
        record["files_modified"],
        json!(["src/http/client.rs", "src/http/retry.rs"])
    );
    assert_eq!(record["commands_run"], json!(["cargo test http::client"]));
    assert!(record["errors_resolved"][0]
        .as_str()
        .unwrap()
        .contains("E0425"));
    let decisions = record["key_decisions"].to_string();
    assert!(
        decisions.contains("root cause was a missing import"),
        "{decisions}"
    );
    assert!(
        decisions.contains("jittered exponential backoff"),
        "{decisions}"
    );
    let q = queue(&store, TASKS_SESSION);
    assert_eq!(q["pending"].as_array().unwrap().len(), 1);
    assert_eq!(q["pending"][0]["segment_id"], id.as_str());
    assert_eq!(q["last_check_turn"], 40);

    // Forced again: nothing new to read, the task is already summarized.
    let report = post_tool_use(&store, &input, &["--force"]);
    assert_eq!(report["read"]["bytes_read"], 0);
    assert_eq!(report["cold_tasks"], 0);
    assert_eq!(report["queued"], 0);
    // With the state gone, it is found again: stored unchanged, queued once.
    fs::remove_file(
        store
            .path()
            .join("hooks")
            .join(format!("{TASKS_SESSION}.json")),
    )
    .expect("remove state");
    let report = post_tool_use(&store, &input, &[]);
    assert_eq!(report["cold_tasks"], 1);
    assert_eq!(report["stored"], 0);
    assert_eq!(report["unchanged"], 1);
    assert_eq!(report["queued"], 0);
    assert_eq!(
        queue(&store, TASKS_SESSION)["pending"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // One summary, beside the session's messages the checks captured.
    let stats = store.json(&["stats"]);
    assert_eq!(stats["by_kind"]["task"], 1, "{stats}");
    assert_eq!(stats["by_kind"].as_object().unwrap().len(), 2, "{stats}");
}

#[test]
fn incremental_reads_only_the_new_bytes_and_a_fresh_task_is_not_cold() {
    let store = TestStore::new();
    let path = store.dir.path().join("session.jsonl");
    let part1 = sample_bytes("tasks-session.part1.jsonl");
    let whole = sample_bytes("tasks-session.jsonl");
    assert!(whole.starts_with(&part1));
    fs::write(&path, &part1).expect("write");
    let input = post_tool_use_input(TASKS_SESSION, &path);

    // Task 1 was completed on the last turns: forced or not, it is not cold yet.
    let report = post_tool_use(&store, &input, &["--force"]);
    assert_eq!(report["read"]["start_offset"], 0);
    assert_eq!(report["read"]["bytes_read"], part1.len());
    assert_eq!(report["assistant_turns"], 12);
    assert_eq!(report["checked"], true);
    assert_eq!(report["cold_tasks"], 0);

    // The session goes on; the next call reads only what was appended.
    fs::write(&path, &whole).expect("append");
    let report = post_tool_use(&store, &input, &[]);
    assert_eq!(report["read"]["start_offset"], part1.len());
    assert_eq!(report["read"]["bytes_read"], whole.len() - part1.len());
    assert_eq!(report["read"]["restarted"], false);
    assert_eq!(report["assistant_turns"], 40);
    assert_eq!(report["checked"], true);
    assert_eq!(report["cold_tasks"], 1);
    assert_eq!(report["queued"], 1);

    // A line still being written (no newline yet) is left for the next call.
    let mut grown = whole.clone();
    grown.extend_from_slice(b"{\"type\":\"user\",\"sessionId\":\"x\"");
    fs::write(&path, &grown).expect("partial line");
    let report = post_tool_use(&store, &input, &[]);
    assert_eq!(report["read"]["bytes_read"], 0);
    assert_eq!(report["assistant_turns"], 40);
}

#[test]
fn usage_below_the_threshold_skips_the_check() {
    let store = TestStore::new();
    let path = transcript(&store, "tasks-session.jsonl");
    let input = post_tool_use_input(TASKS_SESSION, &path);
    // 189k tokens of a 1M window: 19%, under 70%.
    let out = store
        .cmd()
        .args(["hook", "post-tool-use", "--context-window", "1000000"])
        .write_stdin(input.clone())
        .output()
        .expect("run");
    assert!(out.status.success());
    assert!(out.stdout.is_empty(), "nothing to tell the agent");
    let report = post_tool_use(&store, &input, &["--context-window", "1000000"]);
    assert_eq!(report["checked"], false);
    assert_eq!(report["usage"]["source"], "usage");
    let fraction = report["usage"]["fraction"].as_f64().unwrap();
    assert!((0.15..0.25).contains(&fraction), "{fraction}");
    // The threshold from config.toml works as the flag does.
    let config = store.path().join("config.toml");
    let mut text = fs::read_to_string(&config).expect("config");
    text.push_str("\n[hooks]\ncontext_window = 1000000\nusage_threshold = 0.15\n");
    fs::write(&config, text).expect("config");
    let report = post_tool_use(&store, &input, &[]);
    assert_eq!(report["checked"], true);
    assert_eq!(report["cold_tasks"], 1);
}

#[test]
fn sessions_without_tasks_get_cold_segments() {
    let store = TestStore::new();
    let path = transcript(&store, "plain-session.jsonl");
    let input = post_tool_use_input(PLAIN_SESSION, &path);
    let report = post_tool_use(&store, &input, &[]);
    assert_eq!(report["checked"], true);
    assert_eq!(report["cold_tasks"], 0);
    assert_eq!(report["cold_segments"], 1);
    let q = queue(&store, PLAIN_SESSION);
    let id = q["pending"][0]["segment_id"]
        .as_str()
        .expect("queued id")
        .to_string();
    assert_eq!(q["pending"][0]["kind"], "segment");
    let record = store.json(&["get", &id]);
    let record = &record["source"];
    assert!(record["topic"]
        .as_str()
        .unwrap()
        .contains("OAuth token refresh"));
    assert_eq!(record["key_files"], json!(["src/auth/oauth2.py"]));
    assert!(record["compressed_content"]
        .as_str()
        .unwrap()
        .contains("pytest tests/test_oauth2.py -q"));
    // Searchable at once (BM25; vectors come with `knowledge-db embed`),
    // beside the session's messages the check captured.
    assert_eq!(
        store.search_ids(&["invalid_grant refresh", "--kind", "segment"]),
        std::slice::from_ref(&id)
    );
    let messages = store.search_ids(&["invalid_grant refresh", "--kind", "message"]);
    assert!(
        !messages.is_empty(),
        "the check stored the session's messages"
    );
    // Idempotent: a second forced check finds nothing new.
    let report = post_tool_use(&store, &input, &["--force"]);
    assert_eq!(report["cold_segments"], 0);
}

#[test]
fn bad_input_exits_zero_and_is_logged() {
    let store = TestStore::new();
    for (input, expected) in [
        ("this is not json", "not the hook JSON"),
        ("{\"session_id\": \"s1\"}", "transcript_path"),
        (
            "{\"session_id\": \"s2\", \"transcript_path\": \"/nonexistent/x.jsonl\"}",
            "/nonexistent/x.jsonl",
        ),
    ] {
        let out = store
            .cmd()
            .args(["hook", "post-tool-use"])
            .write_stdin(input)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0), "{input}");
        assert!(out.stdout.is_empty(), "{input}");
        let log = fs::read_to_string(store.path().join("hooks/hooks.log")).expect("log");
        assert!(log.contains(expected), "{log}");
    }
    let log = fs::read_to_string(store.path().join("hooks/hooks.log")).expect("log");
    assert!(log.contains("post-tool-use session=s2 error"), "{log}");
    // The other hooks too.
    for hook in ["pre-compact", "session-start"] {
        let out = store
            .cmd()
            .args(["hook", hook])
            .write_stdin("[1, 2")
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stdout.is_empty());
    }
}

fn git(dir: &Path, args: &[&str]) -> bool {
    std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn pre_compact_block_comes_back_once_after_compaction() {
    let store = TestStore::new();
    let path = transcript(&store, "tasks-session.jsonl");
    // A git work tree with an uncommitted change, as the session's cwd.
    let repo = store.dir.path().join("httpkit");
    fs::create_dir_all(repo.join("src")).expect("mkdir");
    fs::write(repo.join("src/args.rs"), "struct Args;\n").expect("write");
    let has_git = git(&repo, &["init", "-q"])
        && git(&repo, &["add", "."])
        && git(&repo, &["commit", "-q", "-m", "init"]);
    fs::write(repo.join("src/args.rs"), "struct Args { timeout: u64 }\n").expect("write");

    let input = hook_input(
        "PreCompact",
        TASKS_SESSION,
        &path,
        json!({"cwd": repo, "trigger": "auto", "custom_instructions": ""}),
    );
    let out = store
        .cmd()
        .args(["hook", "pre-compact"])
        .write_stdin(input)
        .output()
        .expect("run");
    assert!(out.status.success());
    assert!(
        out.stdout.is_empty(),
        "PreCompact output is ignored by Claude Code"
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let start = |source: &str| {
        let input = hook_input(
            "SessionStart",
            TASKS_SESSION,
            &path,
            json!({"source": source, "model": "claude-sonnet-5"}),
        );
        let out = store
            .cmd()
            .args(["hook", "session-start"])
            .write_stdin(input)
            .output()
            .expect("run");
        assert!(out.status.success());
        out.stdout
    };
    assert!(start("startup").is_empty(), "only after a compaction");
    let stdout = start("compact");
    let output: Value = serde_json::from_slice(&stdout).expect("hook output JSON");
    assert_eq!(
        output["hookSpecificOutput"]["hookEventName"],
        "SessionStart"
    );
    let block = output["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("block");
    for expected in [
        "## Active tasks",
        "[in_progress] Add a --timeout flag to the CLI",
        "src/cli/args.rs",
        "`cargo test cli::args`",
        "jittered exponential backoff",
        "error[E0425]",
        "Add retry with exponential backoff",
    ] {
        assert!(
            block.contains(expected),
            "missing {expected:?} in:\n{block}"
        );
    }
    if has_git {
        assert!(block.contains("src/args.rs | 2"), "{block}");
    }
    assert!(block.chars().count() < 10_000);
    assert!(start("compact").is_empty(), "given once");
    // A compaction compresses nothing: the queued item waits for the agent's
    // segment.
    let q = queue(&store, TASKS_SESSION);
    assert_eq!(q["pending"][0]["segment_id"], format!("{TASKS_SESSION}:1"));
    assert_eq!(q["compressed"], json!([]));
}

/// Runs `hook COMMAND` with EVENT's input for SESSION; it must exit 0.
fn run_hook(store: &TestStore, event: &str, command: &str, session: &str, transcript: &Path) {
    let input = hook_input(event, session, transcript, json!({}));
    store
        .cmd()
        .args(["hook", command])
        .write_stdin(input)
        .assert()
        .success();
}

/// The hooks' log holds no error line.
fn assert_no_hook_error(store: &TestStore) {
    let log = store.path().join("hooks/hooks.log");
    let logged = fs::read_to_string(&log).unwrap_or_default();
    assert!(!logged.contains("error"), "{logged}");
}

/// A transcript path whose folder does not exist is a wrong path, not a
/// transcript still to be written: `Stop` and `SessionEnd` log it as an
/// error, as `PostToolUse` does, exit 0 and store nothing.
#[test]
fn stop_with_a_transcript_in_a_missing_folder_logs_the_error() {
    let store = TestStore::new();
    for (command, session) in [("stop", "s-stop"), ("session-end", "s-end")] {
        let input = format!(
            "{{\"session_id\": \"{session}\", \"transcript_path\": \"/nonexistent/{session}.jsonl\"}}"
        );
        let out = store
            .cmd()
            .args(["hook", command])
            .write_stdin(input)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0), "{command}");
        let log = fs::read_to_string(store.path().join("hooks/hooks.log")).expect("log");
        assert!(
            log.contains(&format!("{command} session={session} error"))
                && log.contains(&format!("/nonexistent/{session}.jsonl")),
            "{log}"
        );
    }
    let stats = store.json(&["stats"]);
    assert_eq!(stats["records"], 0, "{stats}");
}

/// Claude Code 2.1.328 can fire `Stop` before it has written a short
/// session's transcript (seen in tests/claude/): that is not an error, and
/// nothing is stored until the file is there.
#[test]
fn stop_before_the_transcript_is_written_is_quiet_and_stores_nothing() {
    let store = TestStore::new();
    let missing = store.dir.path().join("not-yet-written.jsonl");
    run_hook(&store, "Stop", "stop", "early-stop", &missing);
    assert_no_hook_error(&store);
    let stats = store.json(&["stats"]);
    assert_eq!(stats["records"], 0, "{stats}");
}

/// The same for `PostToolUse` and `PreCompact`, whose hook fired before the
/// transcript existed in the real Claude Code's compaction test once the
/// hook binary got faster: they log no error, and the session's first later
/// call reads the whole file.
#[test]
fn tool_and_compact_hooks_before_the_transcript_is_written_are_quiet() {
    let store = TestStore::new();
    let missing = store.dir.path().join("not-yet-written.jsonl");
    for (event, command) in [
        ("PostToolUse", "post-tool-use"),
        ("PreCompact", "pre-compact"),
    ] {
        run_hook(&store, event, command, "early-hooks", &missing);
    }
    assert_no_hook_error(&store);
    // Once written, the next call reads it from the start.
    fs::write(&missing, sample_bytes("tasks-session.jsonl")).expect("write transcript");
    let report = post_tool_use(&store, &post_tool_use_input("early-hooks", &missing), &[]);
    assert_eq!(report["read"]["start_offset"], 0, "{report}");
    assert!(
        report["read"]["messages"].as_u64().unwrap_or(0) > 0,
        "{report}"
    );
}
