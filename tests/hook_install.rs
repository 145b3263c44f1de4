//! `knowledge-db hook install`: hooks, skill and MCP registration merged into
//! Claude Code's configuration files, for a project and for the user.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{json, Value};

/// The settings.json hooks block of interop.md section 2, with the matcher of
/// issue 18 (Bash and TodoWrite added).
fn interop_hooks() -> Value {
    json!({"PostToolUse":[{"matcher":"Bash|Write|Edit|TaskCreate|TaskUpdate|TodoWrite","hooks":[{"type":"command","command":"knowledge-db hook post-tool-use","timeout":30}]}],
     "PreCompact":[{"matcher":"auto|manual","hooks":[{"type":"command","command":"knowledge-db hook pre-compact"}]}],
     "SessionStart":[{"matcher":"compact","hooks":[{"type":"command","command":"knowledge-db hook session-start"}]}]})
}

fn skill_template() -> String {
    fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/integrations/skill/SKILL.md"),
    )
    .expect("template")
}

fn install(home: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("knowledge-db")
        .expect("binary")
        .args(["hook", "install"])
        .args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .assert()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).expect("file")).expect("JSON")
}

fn snapshot(paths: &[PathBuf]) -> Vec<Option<Vec<u8>>> {
    paths.iter().map(|p| fs::read(p).ok()).collect()
}

#[test]
fn project_install_merges_shows_a_diff_and_is_idempotent() {
    let dir = tempfile::tempdir().expect("tmp");
    let project = dir.path().join("project");
    fs::create_dir_all(project.join(".claude")).expect("mkdir");
    let settings = project.join(".claude/settings.json");
    let mcp = project.join(".mcp.json");
    let skill = project.join(".claude/skills/knowledge-db/SKILL.md");
    // Pretty-printed with two spaces, as Claude Code writes its settings.
    let existing = json!({
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
        }
    });
    fs::write(
        &settings,
        serde_json::to_string_pretty(&existing).expect("json") + "\n",
    )
    .expect("settings");
    fs::write(
        &mcp,
        serde_json::to_string_pretty(
            &json!({"mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}}}),
        )
        .expect("json"),
    )
    .expect("mcp");
    let files = [settings.clone(), mcp.clone(), skill.clone()];
    let project_arg = project.to_str().expect("utf-8");

    // --dry-run: a diff of all three files, nothing written.
    let before = snapshot(&files);
    let out = install(
        dir.path(),
        &["--project", "--dir", project_arg, "--dry-run"],
    )
    .success()
    .get_output()
    .stdout
    .clone();
    let diff = String::from_utf8(out).expect("utf-8");
    assert!(
        diff.contains(&format!("+++ {}", settings.display())),
        "{diff}"
    );
    assert!(
        diff.contains("+            \"command\": \"knowledge-db hook pre-compact\""),
        "{diff}"
    );
    assert!(
        diff.contains(&format!("--- /dev/null\n+++ {}", skill.display())),
        "{diff}"
    );
    assert!(diff.contains("+name: knowledge-db"), "{diff}");
    assert!(diff.contains("+    \"knowledge-db\": {"), "{diff}");
    // Existing lines stay; at most one gains a comma before a new entry.
    let added: Vec<&str> = diff.lines().filter(|l| l.starts_with('+')).collect();
    for removed in diff
        .lines()
        .filter(|l| l.starts_with('-') && !l.starts_with("---"))
    {
        let with_comma = format!("+{},", &removed[1..]);
        assert!(
            added.contains(&with_comma.as_str()),
            "{removed} removed: {diff}"
        );
    }
    assert_eq!(snapshot(&files), before, "--dry-run wrote something");

    install(dir.path(), &["--dir", project_arg]).success();
    let merged = read_json(&settings);
    assert_eq!(merged["permissions"]["allow"][0], "Bash(npm test)");
    assert_eq!(
        merged["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
    let post = merged["hooks"]["PostToolUse"].as_array().expect("list");
    assert_eq!(post[0]["hooks"][0]["command"], "./lint.sh");
    assert_eq!(post[1], interop_hooks()["PostToolUse"][0]);
    assert_eq!(merged["hooks"]["PreCompact"], interop_hooks()["PreCompact"]);
    assert_eq!(
        merged["hooks"]["SessionStart"],
        interop_hooks()["SessionStart"]
    );
    let servers = read_json(&mcp)["mcpServers"].clone();
    assert_eq!(servers["github"]["command"], "gh-mcp");
    assert_eq!(
        servers["knowledge-db"],
        json!({"type": "stdio", "command": "knowledge-db", "args": ["mcp"], "env": {}})
    );
    assert_eq!(fs::read_to_string(&skill).expect("skill"), skill_template());

    // Twice changes nothing, byte for byte.
    let installed = snapshot(&files);
    let out = install(dir.path(), &["--dir", project_arg, "--json"])
        .success()
        .get_output()
        .stdout
        .clone();
    let report: Value = serde_json::from_slice(&out).expect("json");
    assert_eq!(report["changed"], json!([]));
    assert_eq!(report["unchanged"].as_array().expect("list").len(), 3);
    assert_eq!(snapshot(&files), installed);
    install(dir.path(), &["--dir", project_arg, "--dry-run"])
        .success()
        .stdout(predicates::str::contains("nothing to change"));
}

#[test]
fn fresh_project_gets_exactly_the_interop_block() {
    let dir = tempfile::tempdir().expect("tmp");
    let project = dir.path().join("p");
    fs::create_dir_all(&project).expect("mkdir");
    install(dir.path(), &["--dir", project.to_str().expect("utf-8")]).success();
    let settings = read_json(&project.join(".claude/settings.json"));
    assert_eq!(settings, json!({"hooks": interop_hooks()}));
    let skill =
        fs::read_to_string(project.join(".claude/skills/knowledge-db/SKILL.md")).expect("skill");
    assert!(skill.starts_with("---\nname: knowledge-db\ndescription: "));
    assert!(skill.contains("allowed-tools: Bash(knowledge-db *)"));
    assert!(skill.contains("$ARGUMENTS"));
}

#[test]
fn user_install_honours_home_and_claude_config_dir() {
    let dir = tempfile::tempdir().expect("tmp");
    let home = dir.path().join("home");
    fs::create_dir_all(&home).expect("mkdir");
    fs::write(
        home.join(".claude.json"),
        r#"{"numStartups": 7, "projects": {"/x": {"allowedTools": []}}, "mcpServers": {"knowledge-db": {"type": "stdio", "command": "/opt/kdb", "args": ["--store", "/data", "mcp"]}}}"#,
    )
    .expect("claude.json");
    install(&home, &["--user"]).success();
    let config = read_json(&home.join(".claude.json"));
    assert_eq!(config["numStartups"], 7);
    assert!(config["projects"]["/x"].is_object());
    // The user's own registration of the server is kept as it is.
    assert_eq!(config["mcpServers"]["knowledge-db"]["command"], "/opt/kdb");
    assert_eq!(
        read_json(&home.join(".claude/settings.json"))["hooks"],
        interop_hooks()
    );
    assert!(home.join(".claude/skills/knowledge-db/SKILL.md").is_file());

    let moved = dir.path().join("claude-config");
    Command::cargo_bin("knowledge-db")
        .expect("binary")
        .args(["hook", "install", "--user"])
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", &moved)
        .assert()
        .success();
    assert!(moved.join("settings.json").is_file());
    assert!(moved.join("skills/knowledge-db/SKILL.md").is_file());
    assert_eq!(
        read_json(&moved.join(".claude.json"))["mcpServers"]["knowledge-db"]["args"],
        json!(["mcp"])
    );
}

#[test]
fn invalid_json_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("tmp");
    let project = dir.path().join("p");
    fs::create_dir_all(project.join(".claude")).expect("mkdir");
    let settings = project.join(".claude/settings.json");
    fs::write(&settings, "{\n  \"hooks\": {,\n}\n").expect("write");
    install(dir.path(), &["--dir", project.to_str().expect("utf-8")])
        .code(1)
        .stderr(predicates::str::contains("settings.json"))
        .stderr(predicates::str::contains("line 2"));
    assert_eq!(
        fs::read_to_string(&settings).expect("kept"),
        "{\n  \"hooks\": {,\n}\n"
    );
    assert!(!project.join(".mcp.json").exists());
    assert!(!project.join(".claude/skills").exists());
}

/// Every hook command the install registers is one the binary runs, the way
/// Claude Code runs it: stdin JSON in, exit 0, and quiet when there is nothing
/// to say.
#[test]
fn installed_hook_commands_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let project = dir.path().join("project");
    fs::create_dir_all(&project).expect("mkdir");
    install(dir.path(), &["--dir", project.to_str().expect("utf-8")]).success();
    let settings = read_json(&project.join(".claude/settings.json"));
    let transcript = dir.path().join("session.jsonl");
    fs::write(
        &transcript,
        "{\"type\":\"user\",\"sessionId\":\"s1\",\"uuid\":\"u1\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .expect("transcript");
    let store = dir.path().join("store");
    let mut commands = 0;
    for (event, groups) in settings["hooks"].as_object().expect("hooks") {
        for group in groups.as_array().expect("groups") {
            for hook in group["hooks"].as_array().expect("hooks") {
                let command = hook["command"].as_str().expect("command");
                let mut words = command.split_whitespace();
                assert_eq!(words.next(), Some("knowledge-db"));
                let input = json!({"session_id": "s1", "transcript_path": transcript,
                    "cwd": dir.path(), "hook_event_name": event, "source": "compact",
                    "trigger": "manual", "tool_name": "Write"});
                let out = Command::cargo_bin("knowledge-db")
                    .expect("binary")
                    .arg("--store")
                    .arg(&store)
                    .args(words)
                    .write_stdin(input.to_string())
                    .output()
                    .expect("run");
                assert!(out.status.success(), "{command}");
                assert!(
                    out.stderr.is_empty(),
                    "{command}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                // PreCompact ran before and saved a block; SessionStart gives it back.
                if event == "SessionStart" {
                    let output: Value = serde_json::from_slice(&out.stdout).expect("hook output");
                    assert_eq!(
                        output["hookSpecificOutput"]["hookEventName"],
                        "SessionStart"
                    );
                } else {
                    assert!(out.stdout.is_empty(), "{command}");
                }
                commands += 1;
            }
        }
    }
    assert_eq!(commands, 3);
    assert!(!store.join("hooks/hooks.log").exists(), "no hook failed");
}
