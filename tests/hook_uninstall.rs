//! The way in and out (issue 53, and issue 50 item 8): `hook install` writes
//! nothing machine-specific into files a team commits, lists the six hooks,
//! never imports the history without being asked, and counts truly on a
//! reinstall; `hook uninstall` takes out exactly what it put in, restores
//! an untouched file byte for byte, keeps the store unless `--purge`; `hook
//! doctor` then says nothing is installed; the plugin and `hook install`
//! never run the same hook twice.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{json, Value};

fn binary() -> PathBuf {
    assert_cmd::cargo::cargo_bin("knowledge-db")
}

/// `knowledge-db --store HOME/store ARGS` with HOME as the home, in `cwd`.
fn kdb(home: &Path, cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("knowledge-db").expect("binary");
    cmd.current_dir(cwd)
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("XDG_STATE_HOME")
        .env_remove("KNOWLEDGE_DB_HOME")
        .env_remove("KNOWLEDGE_DB_VIA_PLUGIN")
        .env_remove("CLAUDE_PROJECT_DIR")
        .arg("--store")
        .arg(home.join("store"))
        .args(args);
    cmd
}

fn stdout(mut cmd: impl std::borrow::BorrowMut<Command>) -> String {
    let out = cmd.borrow_mut().output().expect("run");
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Every file under `dir` (but `.git/objects` and the store) with its bytes.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).expect("read_dir").flatten() {
            let path = entry.path();
            if path.ends_with("objects") || path.ends_with("store") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), fs::read(&path).expect("read")));
            }
        }
    }
    out.sort();
    out
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn git_project(home: &Path) -> PathBuf {
    let project = home.join("proj");
    fs::create_dir_all(&project).expect("mkdir");
    git(&project, &["init", "-q"]);
    fs::write(project.join("README.md"), "# proj\n").expect("readme");
    project
}

#[test]
fn install_keeps_machine_paths_out_of_what_git_would_commit_and_uninstall_restores_every_byte() {
    let home = tempfile::tempdir().expect("home");
    let project = git_project(home.path());
    // The team's settings and this machine's, written by hand in a style
    // serde would not reproduce (four spaces, a trailing key order).
    fs::create_dir_all(project.join(".claude")).expect("mkdir");
    fs::write(
        project.join(".claude/settings.json"),
        "{\"permissions\": {\"allow\": [\"Bash(make)\"]}}",
    )
    .expect("shared");
    let local = project.join(".claude/settings.local.json");
    let local_text = "{\n    \"model\": \"opus\",\n    \"hooks\": {\n        \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send done\"}]}]\n    }\n}\n";
    fs::write(&local, local_text).expect("local");
    let claude_json = home.path().join(".claude.json");
    fs::write(&claude_json, "{\"numStartups\": 3}\n").expect("claude.json");
    let before = tree(home.path());
    let git_before = git(
        &project,
        &["status", "--porcelain", "--untracked-files=all"],
    );

    let out = stdout(kdb(
        home.path(),
        &project,
        &["hook", "install", "--no-history"],
    ));
    assert!(out.contains("the six hooks"), "{out}");
    // Nothing git would pick up names this machine's binary or store.
    let git_after = git(
        &project,
        &["status", "--porcelain", "--untracked-files=all"],
    );
    // Nothing new for git; the machine's settings file is ignored from now on.
    for line in git_after.lines() {
        assert!(
            git_before.lines().any(|l| l == line),
            "git sees {line}: {git_after}"
        );
    }
    assert!(!git_after.contains("settings.local.json"), "{git_after}");
    let store = home.path().join("store");
    for (path, bytes) in tree(&project) {
        let ignored = std::process::Command::new("git")
            .args(["check-ignore", "-q"])
            .arg(&path)
            .current_dir(&project)
            .status()
            .expect("git")
            .success();
        let text = String::from_utf8_lossy(&bytes);
        if !ignored && !path.starts_with(project.join(".git")) {
            assert!(
                !text.contains(&*binary().to_string_lossy())
                    && !text.contains(&*store.to_string_lossy()),
                "{} (not ignored by git) holds a machine path",
                path.display()
            );
        }
    }
    let settings: Value = serde_json::from_slice(&fs::read(&local).expect("local")).expect("json");
    assert_eq!(settings["model"], "opus");
    assert_eq!(settings["hooks"]["Stop"].as_array().expect("stop").len(), 2);

    // doctor: installed by `hook install`.
    let doctor = stdout(kdb(home.path(), &project, &["hook", "doctor"]));
    assert!(doctor.contains("active: `hook install`"), "{doctor}");

    // Something that lands in the store meanwhile stays there.
    kdb(home.path(), &project, &["add", "-"])
        .write_stdin("{\"id\":\"n1\",\"text\":\"keep this note\"}\n")
        .assert()
        .success();

    let out = stdout(kdb(home.path(), &project, &["hook", "uninstall"]));
    assert!(
        out.contains("restored as it was before the install"),
        "{out}"
    );
    assert!(out.contains("removed the skill"), "{out}");
    assert!(
        out.contains(&format!("the store {} is kept: 1 records", store.display())),
        "{out}"
    );
    // Every file as it was, byte for byte; no folder of the install left.
    let after = tree(home.path());
    let strip = |t: Vec<(PathBuf, Vec<u8>)>| -> Vec<(PathBuf, Vec<u8>)> {
        t.into_iter()
            .filter(|(p, _)| !p.starts_with(home.path().join(".local")))
            .collect()
    };
    assert_eq!(
        strip(after),
        strip(before.clone()),
        "files differ after uninstall"
    );
    assert_eq!(fs::read_to_string(&local).expect("local"), local_text);
    assert!(!project.join(".claude/skills").exists());
    // The store is intact.
    let stats: Value =
        serde_json::from_str(&stdout(kdb(home.path(), &project, &["stats", "--json"])))
            .expect("stats");
    assert_eq!(stats["records"], 1, "{stats}");

    // doctor now says nothing is installed.
    let out = kdb(home.path(), &project, &["hook", "doctor"])
        .output()
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("nothing is installed"), "{text}");
    // A second uninstall finds nothing to take out.
    let again = stdout(kdb(home.path(), &project, &["hook", "uninstall"]));
    assert!(again.contains("nothing to take out"), "{again}");
}

#[test]
fn uninstall_after_other_changes_keeps_them_and_takes_only_ours() {
    let home = tempfile::tempdir().expect("home");
    let project = git_project(home.path());
    stdout(kdb(
        home.path(),
        &project,
        &["hook", "install", "--no-history"],
    ));
    let local = project.join(".claude/settings.local.json");
    let mut settings: Value =
        serde_json::from_slice(&fs::read(&local).expect("local")).expect("json");
    settings["permissions"] = json!({"allow": ["Bash(cargo test)"]});
    settings["hooks"]["Stop"][0]["hooks"]
        .as_array_mut()
        .expect("hooks")
        .push(json!({"type": "command", "command": "say done"}));
    fs::write(
        &local,
        serde_json::to_string_pretty(&settings).expect("json"),
    )
    .expect("write");

    let out = stdout(kdb(home.path(), &project, &["hook", "uninstall", "--json"]));
    let report: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        report["hooks_removed"][0]["hooks"]
            .as_array()
            .expect("hooks")
            .len(),
        6,
        "{report}"
    );
    let left: Value = serde_json::from_slice(&fs::read(&local).expect("kept")).expect("json");
    assert_eq!(
        left,
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
               "permissions": {"allow": ["Bash(cargo test)"]}})
    );
    // ~/.claude.json, which the install created and nothing changed since, is gone again.
    assert!(!home.path().join(".claude.json").exists());
    let exclude = fs::read_to_string(project.join(".git/info/exclude")).expect("exclude");
    assert!(!exclude.contains("knowledge-db"), "{exclude}");
}

#[test]
fn purge_deletes_the_store_only_when_asked() {
    let home = tempfile::tempdir().expect("home");
    let project = git_project(home.path());
    stdout(kdb(
        home.path(),
        &project,
        &["hook", "install", "--no-history"],
    ));
    let out = stdout(kdb(
        home.path(),
        &project,
        &["hook", "uninstall", "--dry-run"],
    ));
    assert!(out.contains("would remove 6 hooks"), "{out}");
    assert!(
        project.join(".claude/settings.local.json").exists(),
        "--dry-run wrote"
    );
    stdout(kdb(
        home.path(),
        &project,
        &["hook", "install", "--no-history"],
    ));
    let out = stdout(kdb(
        home.path(),
        &project,
        &["hook", "uninstall", "--purge"],
    ));
    assert!(out.contains("deleted the store"), "{out}");
    assert!(!home.path().join("store").exists());
}

fn write_transcript(path: &Path, session: &str, prompts: &[&str]) {
    let mut text = String::new();
    for (i, prompt) in prompts.iter().enumerate() {
        text.push_str(
            &json!({"type": "user", "sessionId": session, "uuid": format!("{session}-u{i}"),
                "timestamp": format!("2026-11-0{}T10:00:00Z", i + 1),
                "message": {"role": "user", "content": prompt}})
            .to_string(),
        );
        text.push('\n');
    }
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("transcript");
}

#[test]
fn history_needs_a_yes_without_a_terminal_and_a_reinstall_counts_truly() {
    let home = tempfile::tempdir().expect("home");
    let project = git_project(home.path());
    let history = home.path().join(".claude/projects/-proj");
    let first = history.join("s1.jsonl");
    write_transcript(
        &first,
        "s1",
        &[
            "why does the retry test fail",
            "fix the backoff import",
            "run it again",
        ],
    );

    // No terminal (the test's stdin is not one), no --yes: not ingested, and said so.
    let out = stdout(kdb(home.path(), &project, &["hook", "install"]));
    assert!(out.contains("history: not ingested"), "{out}");
    assert!(out.contains("--yes"), "{out}");
    let stats: Value =
        serde_json::from_str(&stdout(kdb(home.path(), &project, &["stats", "--json"])))
            .expect("stats");
    assert_eq!(stats["records"], 0, "{stats}");

    let out = stdout(kdb(home.path(), &project, &["hook", "install", "--yes"]));
    assert!(
        out.contains("history: 1 transcripts, 3 messages read, 3 stored"),
        "{out}"
    );
    // A reinstall reads what the transcript gained, and says so.
    write_transcript(
        &first,
        "s1",
        &[
            "why does the retry test fail",
            "fix the backoff import",
            "run it again",
            "and commit",
        ],
    );
    let out = stdout(kdb(home.path(), &project, &["hook", "install", "--yes"]));
    assert!(
        out.contains("history: 1 transcripts (1 read by an earlier ingest: only what they gained since was read), "),
        "{out}"
    );
    assert!(out.contains("the store holds 4 messages"), "{out}");
}

#[test]
fn install_refuses_next_to_the_enabled_plugin() {
    let home = tempfile::tempdir().expect("home");
    let project = git_project(home.path());
    fs::create_dir_all(home.path().join(".claude")).expect("mkdir");
    fs::write(
        home.path().join(".claude/settings.json"),
        r#"{"enabledPlugins": {"knowledge-db@knowledge-db": true}}"#,
    )
    .expect("settings");
    kdb(home.path(), &project, &["hook", "install", "--no-history"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "the knowledge-db plugin (knowledge-db@knowledge-db) is enabled",
        ))
        .stderr(predicates::str::contains(
            "claude plugin uninstall knowledge-db@knowledge-db",
        ));
    assert!(!project.join(".claude").exists(), "something was written");
}

#[test]
fn a_plugin_hook_steps_aside_for_the_same_hook_of_hook_install() {
    let home = tempfile::tempdir().expect("home");
    let project = git_project(home.path());
    stdout(kdb(
        home.path(),
        &project,
        &["hook", "install", "--no-history"],
    ));
    let transcript = home.path().join("t/s1.jsonl");
    write_transcript(&transcript, "s1", &["remember the plugin"]);
    let input = json!({"session_id": "s1", "transcript_path": transcript, "cwd": project,
        "hook_event_name": "Stop"})
    .to_string();
    let records = |home: &Path| -> u64 {
        let stats: Value = serde_json::from_str(&stdout(kdb(home, &project, &["stats", "--json"])))
            .expect("stats");
        stats["records"].as_u64().expect("records")
    };
    // As the plugin runs it: nothing stored, since `hook install`'s Stop runs too.
    kdb(home.path(), &project, &["hook", "stop"])
        .env("KNOWLEDGE_DB_VIA_PLUGIN", "1")
        .env("CLAUDE_PROJECT_DIR", &project)
        .write_stdin(input.clone())
        .assert()
        .success()
        .stdout("");
    assert_eq!(records(home.path()), 0);
    // As `hook install`'s entry runs it: stored.
    kdb(home.path(), &project, &["hook", "stop"])
        .env("CLAUDE_PROJECT_DIR", &project)
        .write_stdin(input.clone())
        .assert()
        .success();
    assert_eq!(records(home.path()), 1);
    // Without `hook install`, the plugin's hook does the work.
    stdout(kdb(home.path(), &project, &["hook", "uninstall"]));
    write_transcript(&transcript, "s1", &["remember the plugin", "and this"]);
    kdb(home.path(), &project, &["hook", "stop"])
        .env("KNOWLEDGE_DB_VIA_PLUGIN", "1")
        .env("CLAUDE_PROJECT_DIR", &project)
        .write_stdin(input)
        .assert()
        .success();
    assert_eq!(records(home.path()), 2);
}

/// Claude Code's record of the plugin installed from this checkout (what
/// `claude plugin install knowledge-db@knowledge-db` writes), by hand.
fn fake_plugin(home: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin");
    let plugins = home.join(".claude/plugins");
    fs::create_dir_all(&plugins).expect("mkdir");
    fs::write(
        plugins.join("installed_plugins.json"),
        json!({"version": 2, "plugins": {"knowledge-db@knowledge-db": [
            {"scope": "user", "installPath": root, "version": "0.1.0"}]}})
        .to_string(),
    )
    .expect("installed_plugins");
    fs::write(
        home.join(".claude/settings.json"),
        r#"{"enabledPlugins": {"knowledge-db@knowledge-db": true}}"#,
    )
    .expect("settings");
    root
}

#[test]
fn doctor_checks_the_plugin_when_it_is_what_runs_the_hooks() {
    let home = tempfile::tempdir().expect("home");
    let project = git_project(home.path());
    fake_plugin(home.path());
    let bin_dir = binary().parent().expect("bin dir").to_path_buf();
    let path = format!("{}:/usr/bin:/bin", bin_dir.display());
    let out = kdb(home.path(), &project, &["hook", "doctor", "--json"])
        .env("PATH", &path)
        .env("KNOWLEDGE_DB_MODELS", home.path().join("no-models"))
        .output()
        .expect("doctor");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let outcome = |name: &str| {
        report["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["outcome"].as_str().expect("outcome").to_string())
            .unwrap_or_else(|| panic!("no check {name}: {report}"))
    };
    assert!(out.status.success(), "{report}");
    assert!(report["checks"][0]["detail"]
        .as_str()
        .expect("detail")
        .starts_with("active: the plugin knowledge-db@knowledge-db 0.1.0"));
    for name in [
        "plugin",
        "binary",
        "hook stop runs",
        "hook user-prompt-submit runs",
        "skill",
        "mcp",
    ] {
        assert_eq!(outcome(name), "ok", "{name}: {report}");
    }
    // Without a binary the launcher can find, the plugin does nothing: a failure.
    let out = kdb(home.path(), &project, &["hook", "doctor", "--json"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("doctor");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.to_string().contains("finds no knowledge-db binary"),
        "{report}"
    );
}
