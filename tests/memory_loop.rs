//! The memory loop end to end, as an installed user gets it: `hook install`
//! into a project, then a real-format Claude Code session
//! (`data-samples/hooks/tasks-session.jsonl.gz`, its working directory moved
//! into the project) written line by line while the commands the install
//! wrote run through `sh -c` as Claude Code runs them: PostToolUse after each
//! tool call the matcher fires on, Stop at the end of each turn, SessionEnd
//! at the end. Then, in a new session of the same project: the startup brief
//! names the work, a question about it gets it recalled, an off-topic prompt
//! gets nothing, and nothing is recalled twice.

mod common;

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{json, Value};

const SESSION: &str = "5b1f0c2e-7a4d-4c3e-9d2b-1e8f6a7c9b01";
const SAMPLE_CWD: &str = "/home/dev/httpkit";

/// A temporary home with a project (a git repository) and the store.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().expect("tmp");
        fs::create_dir_all(dir.path().join("proj/.git")).expect("project");
        fs::create_dir_all(dir.path().join("home")).expect("home");
        Setup { dir }
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn store(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    fn knowledge_db(&self) -> Command {
        let mut cmd = Command::cargo_bin("knowledge-db").expect("binary");
        with_model(&mut cmd);
        cmd.arg("--store")
            .arg(self.store())
            .env("HOME", self.dir.path().join("home"))
            .env("KNOWLEDGE_DB_UPKEEP", "off")
            .env_remove("KNOWLEDGE_DB_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("XDG_STATE_HOME");
        cmd
    }

    /// `hook install --dir proj`; the hook commands it wrote, by event.
    fn install(&self) -> Vec<(String, String)> {
        self.knowledge_db()
            .args(["hook", "install", "--no-history", "--dir"])
            .arg(self.project())
            .assert()
            .success();
        let text = fs::read_to_string(self.project().join(".claude/settings.local.json"))
            .expect("settings");
        let settings: Value = serde_json::from_str(&text).expect("settings JSON");
        let mut commands = Vec::new();
        for (event, groups) in settings["hooks"].as_object().expect("hooks") {
            for group in groups.as_array().expect("groups") {
                for hook in group["hooks"].as_array().expect("hooks") {
                    commands.push((
                        event.clone(),
                        hook["command"].as_str().expect("command").to_string(),
                    ));
                }
            }
        }
        commands
    }
}

/// The embedding model of the real user's cache, for commands run with the
/// temporary HOME (a user's hooks find it in their own cache).
fn with_model(cmd: &mut Command) {
    let model = knowledge_db::embed::ModelLocation::locate();
    cmd.env("KNOWLEDGE_DB_MODEL_DIR", model.model_dir)
        .env("ORT_DYLIB_PATH", model.runtime);
}

/// Runs an installed hook command through `sh -c` with `input` on stdin, as
/// Claude Code does; it must exit 0 and print nothing on stderr. Returns stdout.
fn run_hook(setup: &Setup, commands: &[(String, String)], event: &str, input: &Value) -> String {
    let (_, command) = commands
        .iter()
        .find(|(e, _)| e == event)
        .unwrap_or_else(|| panic!("no {event} hook installed"));
    let mut sh = Command::new("sh");
    with_model(&mut sh);
    let out = sh
        .args(["-c", command])
        .env("HOME", setup.dir.path().join("home"))
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .env("PATH", "/usr/bin:/bin")
        .env_remove("KNOWLEDGE_DB_HOME")
        .write_stdin(input.to_string())
        .output()
        .expect("run hook");
    assert!(out.status.success(), "{event}: {command}");
    assert!(
        out.stderr.is_empty(),
        "{event}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The sample session's lines, its working directory moved into `project`.
fn session_lines(project: &Path) -> Vec<String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/hooks/tasks-session.jsonl.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(fs::File::open(path).expect("sample"))
        .read_to_string(&mut text)
        .expect("gunzip");
    let project = project.display().to_string();
    text.lines()
        .map(|l| l.replace(SAMPLE_CWD, &project))
        .collect()
}

/// Whether a line ends a turn (an assistant reply that is not a tool call)
/// and which tool the PostToolUse matcher fires on, if any.
fn turn_events(line: &str) -> (bool, Option<String>) {
    let Ok(entry) = serde_json::from_str::<Value>(line) else {
        return (false, None);
    };
    if entry["type"] != "assistant" || entry["isSidechain"] == true {
        return (false, None);
    }
    let blocks = entry["message"]["content"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let tool = blocks
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .filter_map(|b| b["name"].as_str())
        .find(|n| {
            [
                "Bash",
                "Write",
                "Edit",
                "TaskCreate",
                "TaskUpdate",
                "TodoWrite",
            ]
            .contains(n)
        })
        .map(str::to_string);
    let ends_turn = blocks.iter().any(|b| b["type"] == "text");
    (ends_turn, tool)
}

/// Writes the session line by line, running the hooks Claude Code would.
fn replay(setup: &Setup, commands: &[(String, String)]) -> PathBuf {
    let transcript = setup.dir.path().join(format!("{SESSION}.jsonl"));
    fs::write(&transcript, "").expect("transcript");
    let input = |event: &str, extra: Value| {
        let mut v = json!({"session_id": SESSION, "transcript_path": transcript,
            "cwd": setup.project(), "hook_event_name": event});
        for (k, x) in extra.as_object().expect("object") {
            v[k] = x.clone();
        }
        v
    };
    for line in session_lines(&setup.project()) {
        let mut file = fs::OpenOptions::new()
            .append(true)
            .open(&transcript)
            .expect("open");
        writeln!(file, "{line}").expect("append");
        drop(file);
        let (ends_turn, tool) = turn_events(&line);
        if let Some(tool) = tool {
            run_hook(
                setup,
                commands,
                "PostToolUse",
                &input("PostToolUse", json!({"tool_name": tool})),
            );
        }
        if ends_turn {
            run_hook(
                setup,
                commands,
                "Stop",
                &input("Stop", json!({"stop_hook_active": false})),
            );
        }
    }
    run_hook(
        setup,
        commands,
        "SessionEnd",
        &input("SessionEnd", json!({"reason": "prompt_input_exit"})),
    );
    transcript
}

/// The ids of the message records a plain `ingest` of `transcript` stores.
fn ingested_ids(transcript: &Path) -> Vec<String> {
    let store = common::TestStore::new();
    store
        .cmd()
        .args(["ingest", "--embed", "later"])
        .arg(transcript)
        .assert()
        .success();
    let out = store
        .cmd()
        .args(["export", "--no-vectors"])
        .output()
        .expect("export");
    let mut ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "message")
        .map(|v| v["id"].as_str().unwrap_or_default().to_string())
        .collect();
    ids.sort();
    ids
}

fn stored_message_ids(setup: &Setup) -> Vec<String> {
    let out = setup
        .knowledge_db()
        .args(["export", "--no-vectors"])
        .output()
        .expect("export");
    let mut ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "message")
        .map(|v| v["id"].as_str().unwrap_or_default().to_string())
        .collect();
    ids.sort();
    ids
}

/// The `additionalContext` a hook printed, or "" when it printed nothing.
fn context_of(stdout: &str) -> String {
    if stdout.trim().is_empty() {
        return String::new();
    }
    let v: Value = serde_json::from_str(stdout).expect("hook output JSON");
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("additionalContext")
        .to_string()
}

#[test]
fn an_installed_user_gets_sessions_stored_and_recalled_unasked() {
    let setup = Setup::new();
    let commands = setup.install();
    for event in [
        "PostToolUse",
        "PreCompact",
        "SessionStart",
        "Stop",
        "SessionEnd",
        "UserPromptSubmit",
    ] {
        assert!(
            commands.iter().any(|(e, _)| e == event),
            "{event} not installed"
        );
    }
    let transcript = replay(&setup, &commands);

    // Capture: every message a plain ingest stores, stored by the hooks alone.
    let expected = ingested_ids(&transcript);
    assert!(expected.len() > 50, "{}", expected.len());
    assert_eq!(stored_message_ids(&setup), expected);
    // The upkeep (background in real use) gives the messages their vectors.
    setup.knowledge_db().arg("upkeep").assert().success();

    let new_session = |id: &str, event: &str, extra: Value| {
        let mut v = json!({"session_id": id, "transcript_path": setup.dir.path().join(format!("{id}.jsonl")),
            "cwd": setup.project(), "hook_event_name": event});
        for (k, x) in extra.as_object().expect("object") {
            v[k] = x.clone();
        }
        v
    };
    // The startup brief names the earlier session and what it did.
    let brief = context_of(&run_hook(
        &setup,
        &commands,
        "SessionStart",
        &new_session("next-1", "SessionStart", json!({"source": "startup"})),
    ));
    assert!(brief.contains(SESSION), "{brief}");
    assert!(
        brief.contains("Add retry with exponential backoff"),
        "{brief}"
    );
    assert!(brief.chars().count() <= 1500, "{}", brief.chars().count());

    // A question about that work, as a new session's first prompt.
    let ask = |session: &str, prompt: &str| {
        context_of(&run_hook(
            &setup,
            &commands,
            "UserPromptSubmit",
            &new_session(session, "UserPromptSubmit", json!({"prompt": prompt})),
        ))
    };
    let recalled = ask(
        "next-1",
        "what was the root cause when the HTTP client retry tests failed?",
    );
    assert!(recalled.contains(SESSION), "{recalled}");
    assert!(
        recalled.contains("missing import of the backoff module"),
        "{recalled}"
    );
    assert!(
        recalled.contains(" get "),
        "a command reads it whole: {recalled}"
    );
    assert!(recalled.contains("memory_get"), "{recalled}");
    assert!(recalled.chars().count() <= 8000);
    // Never the same memory twice in one session.
    let again = ask(
        "next-1",
        "what was the root cause when the HTTP client retry tests failed?",
    );
    for line in again.lines().filter(|l| l.contains(" id ")) {
        assert!(!recalled.contains(line), "recalled twice: {line}");
    }
    // Off-topic prompts get nothing.
    for prompt in [
        "give me a recipe for banana bread",
        "write a terraform module for an s3 bucket with versioning",
        "what is the capital of australia",
    ] {
        assert_eq!(ask("next-2", prompt), "", "{prompt}");
    }
    // The live session's own turns are never recalled to it.
    let own = ask(
        SESSION,
        "what was the root cause when the HTTP client retry tests failed?",
    );
    assert!(!own.contains(&format!("session {SESSION}")), "{own}");
    // `[recall] prompt = false` turns recall off.
    let config = setup.store().join("config.toml");
    let mut text = fs::read_to_string(&config).expect("config");
    text.push_str("\n[recall]\nprompt = false\n");
    fs::write(&config, text).expect("config");
    assert_eq!(
        ask(
            "next-3",
            "what was the root cause when the HTTP client retry tests failed?"
        ),
        ""
    );
    assert!(
        !setup.store().join("hooks/hooks.log").exists(),
        "no hook failed"
    );
}
