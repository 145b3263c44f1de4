//! `knowledge-db hook install`: hooks, skill and MCP registration merged into
//! Claude Code's configuration files, for a project and for the user; and
//! `hook uninstall`, which takes out exactly that.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{json, Value};

/// The settings.json hooks block of interop.md section 2 with the matcher of
/// issue 18 (Bash and TodoWrite added): what installs before absolute paths wrote.
fn interop_hooks() -> Value {
    json!({"PostToolUse":[{"matcher":"Bash|Write|Edit|TaskCreate|TaskUpdate|TodoWrite","hooks":[{"type":"command","command":"knowledge-db hook post-tool-use","timeout":30}]}],
     "PreCompact":[{"matcher":"auto|manual","hooks":[{"type":"command","command":"knowledge-db hook pre-compact"}]}],
     "SessionStart":[{"matcher":"compact","hooks":[{"type":"command","command":"knowledge-db hook session-start"}]}]})
}

/// The block an install writes: one group per entry of `HOOKS`, every
/// command running the built binary by its absolute path on `store`.
fn installed_hooks(store: &Path) -> Value {
    let prefix = format!("{} --store {}", binary().display(), store.display());
    let mut hooks = json!({});
    for (event, matcher, subcommand, timeout) in knowledge_db::integrations::claude_code::HOOKS {
        let mut hook = json!({"type": "command", "command": format!("{prefix} hook {subcommand}")});
        if let Some(secs) = timeout {
            hook["timeout"] = json!(secs);
        }
        let mut group = json!({});
        if let Some(m) = matcher {
            group["matcher"] = json!(m);
        }
        group["hooks"] = json!([hook]);
        hooks[event] = json!([group]);
    }
    hooks
}

fn binary() -> PathBuf {
    assert_cmd::cargo::cargo_bin("knowledge-db")
}

/// `knowledge-db --store HOME/store hook install ARGS` with HOME as the home.
fn install(home: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("knowledge-db")
        .expect("binary")
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .arg("--store")
        .arg(home.join("store"))
        .args(["hook", "install"])
        .args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("XDG_STATE_HOME")
        .assert()
}

/// The key Claude Code files `project` under in `~/.claude.json`.
fn key(project: &Path) -> String {
    knowledge_db::integrations::claude_code::project_key(project)
}

/// The MCP entry of `project`'s local scope in HOME/.claude.json.
fn local_mcp(home: &Path, project: &Path) -> Value {
    read_json(&home.join(".claude.json"))["projects"][key(project)]["mcpServers"].clone()
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
    let shared = project.join(".claude/settings.json");
    let settings = project.join(".claude/settings.local.json");
    let mcp = project.join(".mcp.json");
    let claude_json = dir.path().join(".claude.json");
    let skill = project.join(".claude/skills/knowledge-db/SKILL.md");
    // The team's files, which they commit: never written.
    fs::write(
        &shared,
        "{\n  \"permissions\": {\"allow\": [\"Bash(make)\"]}\n}\n",
    )
    .expect("shared");
    fs::write(
        &mcp,
        serde_json::to_string_pretty(
            &json!({"mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}}}),
        )
        .expect("json"),
    )
    .expect("mcp");
    // This machine's settings: pretty-printed with two spaces, as Claude Code writes them.
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
    let files = [
        settings.clone(),
        shared.clone(),
        mcp.clone(),
        skill.clone(),
        claude_json.clone(),
    ];
    let project_arg = project.to_str().expect("utf-8");

    // --dry-run: a diff of the files, nothing written.
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
        diff.contains(&format!(
            "+            \"command\": \"{} --store {} hook pre-compact\"",
            binary().display(),
            dir.path().join("store").display()
        )),
        "{diff}"
    );
    assert!(
        diff.contains(&format!("--- /dev/null\n+++ {}", skill.display())),
        "{diff}"
    );
    assert!(diff.contains("+name: knowledge-db"), "{diff}");
    assert!(
        diff.contains(&format!("+++ {}", claude_json.display())),
        "{diff}"
    );
    assert!(diff.contains("\"knowledge-db\": {"), "{diff}");
    assert!(
        !diff.contains(&format!("+++ {}", shared.display())),
        "{diff}"
    );
    assert!(!diff.contains(&format!("+++ {}", mcp.display())), "{diff}");
    // Existing lines stay; at most one gains a comma before a new entry.
    let settings_diff = &diff[diff
        .find(&format!("+++ {}", settings.display()))
        .expect("settings diff")..];
    let settings_diff = &settings_diff[..settings_diff[4..]
        .find("\n--- ")
        .map_or(settings_diff.len(), |i| i + 4)];
    let added: Vec<&str> = settings_diff
        .lines()
        .filter(|l| l.starts_with('+'))
        .collect();
    for removed in settings_diff
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

    let out = install(dir.path(), &["--dir", project_arg])
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).expect("utf-8");
    // The output names the six hooks it registered, not only the files.
    for (event, ..) in knowledge_db::integrations::claude_code::HOOKS {
        assert!(text.contains(&format!("  {event}")), "{event}: {text}");
    }
    assert!(text.contains("the six hooks"), "{text}");
    let merged = read_json(&settings);
    assert_eq!(merged["permissions"]["allow"][0], "Bash(npm test)");
    assert_eq!(
        merged["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
    let post = merged["hooks"]["PostToolUse"].as_array().expect("list");
    let store = dir.path().join("store");
    assert_eq!(post[0]["hooks"][0]["command"], "./lint.sh");
    assert_eq!(post[1], installed_hooks(&store)["PostToolUse"][0]);
    assert_eq!(
        merged["hooks"]["PreCompact"],
        installed_hooks(&store)["PreCompact"]
    );
    assert_eq!(
        merged["hooks"]["SessionStart"],
        installed_hooks(&store)["SessionStart"]
    );
    // The MCP server is in this project's local scope of ~/.claude.json.
    assert_eq!(
        local_mcp(dir.path(), &project)["knowledge-db"],
        json!({"type": "stdio", "command": binary(), "args": ["--store", store, "mcp"], "env": {}})
    );
    // The files a team commits are as they were.
    assert_eq!(snapshot(&files)[1..3], before[1..3]);
    let installed_skill = fs::read_to_string(&skill).expect("skill");
    assert!(
        installed_skill.contains(&format!(
            "{} --store {} search ",
            binary().display(),
            store.display()
        )),
        "{installed_skill}"
    );
    // The install created the store the commands name.
    assert!(store.join("config.toml").is_file());

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
    assert_eq!(report["hooks"].as_array().expect("hooks").len(), 6);
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
    let settings = read_json(&project.join(".claude/settings.local.json"));
    let store = dir.path().join("store");
    assert_eq!(settings, json!({"hooks": installed_hooks(&store)}));
    assert!(!project.join(".claude/settings.json").exists());
    assert!(!project.join(".mcp.json").exists());
    let skill =
        fs::read_to_string(project.join(".claude/skills/knowledge-db/SKILL.md")).expect("skill");
    assert!(skill.starts_with("---\nname: knowledge-db\ndescription: "));
    assert!(skill.contains(&format!(
        "allowed-tools: Bash({} --store {} *)",
        binary().display(),
        store.display()
    )));
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
        installed_hooks(&home.join("store"))
    );
    assert!(home.join(".claude/skills/knowledge-db/SKILL.md").is_file());

    let moved = dir.path().join("claude-config");
    Command::cargo_bin("knowledge-db")
        .expect("binary")
        .env("KNOWLEDGE_DB_HOME", home.join("store"))
        .args(["hook", "install", "--user"])
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", &moved)
        .env_remove("XDG_STATE_HOME")
        .assert()
        .success();
    assert!(moved.join("settings.json").is_file());
    assert!(moved.join("skills/knowledge-db/SKILL.md").is_file());
    // The store came from $KNOWLEDGE_DB_HOME.
    assert_eq!(
        read_json(&moved.join(".claude.json"))["mcpServers"]["knowledge-db"]["args"],
        json!(["--store", home.join("store"), "mcp"])
    );
}

#[test]
fn invalid_json_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("tmp");
    let project = dir.path().join("p");
    fs::create_dir_all(project.join(".claude")).expect("mkdir");
    let settings = project.join(".claude/settings.local.json");
    fs::write(&settings, "{\n  \"hooks\": {,\n}\n").expect("write");
    install(dir.path(), &["--dir", project.to_str().expect("utf-8")])
        .code(1)
        .stderr(predicates::str::contains("settings.local.json"))
        .stderr(predicates::str::contains("line 2"));
    assert_eq!(
        fs::read_to_string(&settings).expect("kept"),
        "{\n  \"hooks\": {,\n}\n"
    );
    assert!(!project.join(".mcp.json").exists());
    assert!(!dir.path().join(".claude.json").exists());
    assert!(!project.join(".claude/skills").exists());
}

/// Every hook command the install registers runs as Claude Code runs it:
/// through `sh -c` exactly as written, stdin JSON in, exit 0, and quiet when
/// there is nothing to say; with no `knowledge-db` on the PATH.
#[test]
fn installed_hook_commands_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let project = dir.path().join("project");
    fs::create_dir_all(&project).expect("mkdir");
    install(dir.path(), &["--dir", project.to_str().expect("utf-8")]).success();
    let settings = read_json(&project.join(".claude/settings.local.json"));
    let transcript = dir.path().join("session.jsonl");
    fs::write(
        &transcript,
        "{\"type\":\"user\",\"sessionId\":\"s1\",\"uuid\":\"u1\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
    )
    .expect("transcript");
    let store = dir.path().join("store");
    let mut commands = 0;
    for (event, ..) in knowledge_db::integrations::claude_code::HOOKS {
        for group in settings["hooks"][event].as_array().expect("groups") {
            for hook in group["hooks"].as_array().expect("hooks") {
                let command = hook["command"].as_str().expect("command");
                let input = json!({"session_id": "s1", "transcript_path": transcript,
                    "cwd": dir.path(), "hook_event_name": event, "source": "compact",
                    "trigger": "manual", "tool_name": "Write", "prompt": "hi"});
                let out = Command::new("sh")
                    .args(["-c", command])
                    .env("KNOWLEDGE_DB_UPKEEP", "off")
                    .env("PATH", "/usr/bin:/bin")
                    .env_remove("KNOWLEDGE_DB_HOME")
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
    assert_eq!(commands, 6);
    assert!(!store.join("hooks/hooks.log").exists(), "no hook failed");
    // The capturing hooks stored the session's one message.
    let stats: Value = serde_json::from_slice(
        &Command::cargo_bin("knowledge-db")
            .expect("binary")
            .arg("--store")
            .arg(&store)
            .args(["stats", "--json"])
            .output()
            .expect("stats")
            .stdout,
    )
    .expect("stats JSON");
    assert_eq!(stats["by_kind"]["message"], 1, "{stats}");
}

#[test]
fn an_earlier_install_is_brought_up_to_date() {
    let dir = tempfile::tempdir().expect("tmp");
    let project = dir.path().join("p");
    fs::create_dir_all(project.join(".claude")).expect("mkdir");
    // What installs wrote before commands named the binary and the store.
    fs::write(
        project.join(".claude/settings.json"),
        json!({"hooks": interop_hooks()}).to_string(),
    )
    .expect("settings");
    fs::write(
        project.join(".mcp.json"),
        r#"{"mcpServers":{"knowledge-db":{"type":"stdio","command":"knowledge-db","args":["mcp"],"env":{}}}}"#,
    )
    .expect("mcp");
    install(dir.path(), &["--dir", project.to_str().expect("utf-8")]).success();
    let store = dir.path().join("store");
    let settings = read_json(&project.join(".claude/settings.local.json"));
    assert_eq!(
        settings["hooks"],
        installed_hooks(&store),
        "replaced, not added beside"
    );
    // Moved out of the files teams commit (they held nothing else).
    assert!(!project.join(".claude/settings.json").exists());
    assert!(!project.join(".mcp.json").exists());
    assert_eq!(
        local_mcp(dir.path(), &project)["knowledge-db"]["args"],
        json!(["--store", store, "mcp"])
    );
}

#[test]
fn install_refuses_a_binary_that_does_not_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let project = dir.path().join("p");
    fs::create_dir_all(&project).expect("mkdir");
    let p = project.to_str().expect("utf-8");
    install(
        dir.path(),
        &["--dir", p, "--binary", "/nowhere/knowledge-db"],
    )
    .code(2)
    .stderr(predicates::str::contains("--binary"));
    install(dir.path(), &["--dir", p, "--binary", "/bin/true"])
        .code(2)
        .stderr(predicates::str::contains("does not run as knowledge-db"));
    assert!(!project.join(".claude").exists(), "something was written");
}

#[test]
fn doctor_passes_a_fresh_install_and_names_what_breaks() {
    let dir = tempfile::tempdir().expect("tmp");
    let project = dir.path().join("p");
    fs::create_dir_all(&project).expect("mkdir");
    let p = project.to_str().expect("utf-8");
    install(dir.path(), &["--dir", p]).success();
    let doctor = |expect_ok: bool| -> Value {
        let out = Command::cargo_bin("knowledge-db")
            .expect("binary")
            .env("KNOWLEDGE_DB_UPKEEP", "off")
            .env("HOME", dir.path())
            .env_remove("XDG_STATE_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .args(["hook", "doctor", "--dir", p, "--json"])
            .output()
            .expect("run");
        assert_eq!(
            out.status.success(),
            expect_ok,
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "doctor --json: {e}; exit {:?}, stderr: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    };
    let outcome = |report: &Value, name: &str| -> String {
        report["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["outcome"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no check {name}: {report}"))
    };
    let healthy = doctor(true);
    assert_eq!(healthy["store"], json!(dir.path().join("store")));
    for name in [
        "installed",
        "settings",
        "store",
        "hook post-tool-use runs",
        "hook pre-compact runs",
        "hook session-start runs",
        "skill",
        "mcp",
        "hooks.log",
    ] {
        assert_eq!(outcome(&healthy, name), "ok", "{name}: {healthy}");
    }
    // The doctor's own session left nothing behind.
    let leftovers: Vec<_> = fs::read_dir(dir.path().join("store/hooks"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        leftovers
            .iter()
            .all(|n| !n.to_string_lossy().contains("doctor")),
        "{leftovers:?}"
    );

    // An error in hooks.log is shown; a missing skill and a hook whose binary
    // is gone fail.
    fs::write(
        dir.path().join("store/hooks/hooks.log"),
        "2026-11-24T10:00:00Z post-tool-use session=s error: disk full\n",
    )
    .expect("log");
    fs::remove_file(project.join(".claude/skills/knowledge-db/SKILL.md")).expect("rm");
    let settings = project.join(".claude/settings.local.json");
    let text = fs::read_to_string(&settings)
        .expect("settings")
        .replace(&binary().display().to_string(), "/gone/knowledge-db");
    fs::write(&settings, text).expect("write");
    let broken = doctor(false);
    assert_eq!(outcome(&broken, "skill"), "fail", "{broken}");
    assert_eq!(outcome(&broken, "hook pre-compact"), "fail", "{broken}");
    assert_eq!(outcome(&broken, "hooks.log"), "warn", "{broken}");
    assert!(broken.to_string().contains("disk full"), "{broken}");
}

#[test]
fn a_binary_under_another_name_is_installed_once_however_often_install_runs() {
    let home = tempfile::tempdir().expect("home");
    let project = home.path().join("proj");
    fs::create_dir_all(&project).expect("project");
    let renamed = home.path().join("kdb-copy");
    fs::copy(binary(), &renamed).expect("copy the binary");
    for _ in 0..3 {
        Command::new(&renamed)
            .env("KNOWLEDGE_DB_UPKEEP", "off")
            .arg("--store")
            .arg(home.path().join("store"))
            .args(["hook", "install", "--no-history", "--dir"])
            .arg(&project)
            .env("HOME", home.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("XDG_STATE_HOME")
            .assert()
            .success();
    }
    let settings = read_json(&project.join(".claude/settings.local.json"));
    for (event, groups) in settings["hooks"].as_object().expect("hooks") {
        let commands: usize = groups
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| g["hooks"].as_array().map_or(0, Vec::len))
            .sum();
        assert_eq!(commands, 1, "{event}: {groups}");
    }
}
