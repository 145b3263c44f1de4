//! `hook doctor`: checks an installed Claude Code setup end to end, the way
//! Claude Code will use it.
//!
//! It reads what `hook install` wrote and runs it: each hook command through
//! `sh -c` with a hook's JSON on stdin (a throw-away session, cleaned up
//! after), the skill's search command, the MCP server through an
//! `initialize` and `tools/list` exchange; then opens and verifies the store
//! the commands name, loads the model, and reads the upkeep's state and the
//! last errors in `hooks.log`. Each check says ok, warn or fail, and for
//! anything not ok what to do.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use super::claude_code::{is_our_hook, shell_words, Install, Targets, HOOKS, NAME};
use super::registration::{PluginState, Registrations};
use crate::store::Store;

mod plugin;

/// Longest a checked command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// As it should be.
    Ok,
    /// Works, but needs attention; `fix` says what to do.
    Warn,
    /// Does not work; the report is not ok.
    Fail,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// How it came out.
    pub outcome: Outcome,
    /// What was found.
    pub detail: String,
    /// What to do, when not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// Every check, and whether none failed.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    /// Whether no check failed (warnings allowed).
    pub ok: bool,
    /// The store the installed commands use.
    pub store: Option<PathBuf>,
    /// The checks, in the order they ran.
    pub checks: Vec<Check>,
}

pub(super) struct Checks(Vec<Check>);

impl Checks {
    pub(super) fn push(
        &mut self,
        name: &str,
        outcome: Outcome,
        detail: String,
        fix: Option<String>,
    ) {
        self.0.push(Check {
            name: name.to_string(),
            outcome,
            detail,
            fix,
        });
    }

    pub(super) fn ok(&mut self, name: &str, detail: String) {
        self.push(name, Outcome::Ok, detail, None);
    }

    pub(super) fn warn(&mut self, name: &str, detail: String, fix: &str) {
        self.push(name, Outcome::Warn, detail, Some(fix.to_string()));
    }

    pub(super) fn fail(&mut self, name: &str, detail: String, fix: &str) {
        self.push(name, Outcome::Fail, detail, Some(fix.to_string()));
    }
}

const REINSTALL: &str =
    "run `knowledge-db --store <store> hook install` (with --user for the user's settings)";

/// Checks the setup installed into `targets`. `fallback_store` is used when
/// no installed command names one.
pub fn doctor(targets: &Targets, fallback_store: &Path) -> DoctorReport {
    let mut checks = Checks(Vec::new());
    let registrations = Registrations::find(targets.project.as_deref());
    let by_install = registrations
        .install
        .iter()
        .any(|(file, _)| *file == targets.settings);
    let plugin = registrations.plugin.clone().filter(PluginState::active);
    let elsewhere = !by_install && !registrations.install.is_empty();
    match (by_install || elsewhere, &plugin) {
        (false, None) => {
            checks.fail(
                "installed",
                registrations.describe(),
                "`knowledge-db hook install` (--user for every project), or the plugin: \
                 `claude plugin install knowledge-db@knowledge-db`",
            );
            return DoctorReport {
                ok: false,
                store: None,
                checks: checks.0,
            };
        }
        // The plugin's hooks cannot be given --store: they use
        // $KNOWLEDGE_DB_HOME, else the default store.
        (false, Some(plugin)) => {
            return plugin::doctor_plugin(plugin, &registrations, &crate::store::default_root())
        }
        (true, Some(_)) => checks.warn(
            "installed",
            registrations.describe(),
            "keep one: `knowledge-db hook uninstall`, or `claude plugin uninstall knowledge-db@knowledge-db`",
        ),
        (true, None) if elsewhere => checks.warn(
            "installed",
            format!(
                "{}; not in {}, where this scope's install puts them",
                registrations.describe(),
                targets.settings.display()
            ),
            "run `knowledge-db hook install` (it moves hooks an earlier release put in a shared file)",
        ),
        (true, None) => checks.ok("installed", registrations.describe()),
    }
    let commands = check_settings(targets, &mut checks);
    let store = commands
        .iter()
        .find_map(|(_, words)| store_of(words))
        .unwrap_or_else(|| fallback_store.to_path_buf());
    check_store(&store, &mut checks);
    for (event, words) in &commands {
        check_hook_runs(event, words, &store, &mut checks);
    }
    check_skill(targets, &mut checks);
    check_mcp(targets, &mut checks);
    check_model(&mut checks);
    if let Ok(opened) = Store::open(&store) {
        check_upkeep(&opened, &mut checks);
        check_sync(&opened, &mut checks);
    }
    check_hooks_log(&store, &mut checks);
    check_missed_captures(&store, &mut checks);
    DoctorReport {
        ok: checks.0.iter().all(|c| c.outcome != Outcome::Fail),
        store: Some(store),
        checks: checks.0,
    }
}

/// The `--store` argument of a command's words.
fn store_of(words: &[String]) -> Option<PathBuf> {
    words
        .windows(2)
        .find(|w| w[0] == "--store")
        .map(|w| PathBuf::from(&w[1]))
}

/// Reads settings.json: each of our hooks present, its binary there, its
/// matcher covering what the install's does. Returns (event, command words).
fn check_settings(targets: &Targets, checks: &mut Checks) -> Vec<(String, Vec<String>)> {
    let path = &targets.settings;
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            checks.fail("settings", format!("{}: {e}", path.display()), REINSTALL);
            return Vec::new();
        }
    };
    let settings: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            checks.fail(
                "settings",
                format!(
                    "{}: not valid JSON at line {}: {e}",
                    path.display(),
                    e.line()
                ),
                "fix the JSON (Claude Code ignores a file it cannot read)",
            );
            return Vec::new();
        }
    };
    checks.ok("settings", format!("{} parses", path.display()));
    let mut found = Vec::new();
    for (event, matcher, subcommand, _) in HOOKS {
        let name = format!("hook {subcommand}");
        let groups = settings["hooks"][event]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let entry = groups.iter().find_map(|group| {
            let hooks = group["hooks"].as_array()?;
            let command = hooks
                .iter()
                .filter_map(|h| h["command"].as_str())
                .find(|c| is_our_hook(c, subcommand))?;
            Some((
                group["matcher"].as_str().unwrap_or_default().to_string(),
                command.to_string(),
            ))
        });
        let Some((group_matcher, command)) = entry else {
            checks.fail(
                &name,
                format!("no {event} hook runs knowledge-db"),
                REINSTALL,
            );
            continue;
        };
        let words = shell_words(&command);
        let binary = PathBuf::from(&words[0]);
        if !binary.is_absolute() {
            checks.fail(
                &name,
                format!("`{command}` names the binary without its path: it runs only if it is on the PATH Claude Code has"),
                REINSTALL,
            );
        } else if !binary.is_file() {
            checks.fail(
                &name,
                format!("{} does not exist", binary.display()),
                REINSTALL,
            );
        }
        let missing: Vec<&str> = matcher
            .unwrap_or_default()
            .split('|')
            .filter(|tool| !tool.is_empty() && !group_matcher.split('|').any(|m| m == *tool))
            .collect();
        if !missing.is_empty() {
            checks.warn(
                &name,
                format!(
                    "its matcher `{group_matcher}` misses {}",
                    missing.join(", ")
                ),
                REINSTALL,
            );
        }
        if store_of(&words).is_none() {
            checks.warn(
                &name,
                format!(
                    "`{command}` names no --store: it uses $KNOWLEDGE_DB_HOME or the default store"
                ),
                REINSTALL,
            );
        }
        found.push((event.to_string(), words));
    }
    found
}

pub(super) fn check_store(store: &Path, checks: &mut Checks) {
    if !store.join("config.toml").is_file() {
        return checks.warn(
            "store",
            format!("no store at {} yet", store.display()),
            "the first hook creates it; or run `knowledge-db --store <store> init`",
        );
    }
    let modes = crate::tiers::verify::file_modes(store);
    if modes.warning && store.exists() {
        checks.warn(
            "file modes",
            modes.detail.clone(),
            "run any write (e.g. `knowledge-db --store <store> upkeep`), or `chmod -R go-rwx <store>`",
        );
    } else if store.exists() {
        checks.ok("file modes", modes.detail.clone());
    }
    match crate::tiers::verify::verify_root(store, &mut |_, _| {}) {
        Ok(report) if report.ok => checks.ok(
            "store",
            format!(
                "{} opens and verifies ({} records)",
                store.display(),
                report.records
            ),
        ),
        Ok(report) => {
            let problems: Vec<String> = report
                .checks
                .iter()
                .filter(|c| !c.ok)
                .map(|c| format!("{}: {}", c.name, c.detail))
                .collect();
            checks.fail(
                "store",
                format!("{}: {}", store.display(), problems.join("; ")),
                "run `knowledge-db --store <store> repair`",
            );
        }
        Err(crate::Error::NoStore { .. }) => checks.warn(
            "store",
            format!("no store at {} yet", store.display()),
            "the first hook creates it; or run `knowledge-db --store <store> init`",
        ),
        Err(e) => checks.fail("store", e.to_string(), "see the error above"),
    }
}

/// Runs a hook command as Claude Code does (`sh -c`, JSON on stdin) on a
/// throw-away session, then removes that session's files.
pub(super) fn check_hook_runs(event: &str, words: &[String], store: &Path, checks: &mut Checks) {
    let name = format!("{} runs", words[words.len() - 2..].join(" "));
    let Ok(dir) = tempfile::tempdir() else {
        checks.warn(
            &name,
            "no temporary folder to run it in".into(),
            "free some disk space",
        );
        return;
    };
    let session = format!("knowledge-db-doctor-{}", std::process::id());
    let transcript = dir.path().join("session.jsonl");
    let line = json!({"type": "user", "sessionId": session, "uuid": "doctor-1",
        "message": {"role": "user", "content": "knowledge-db hook doctor"}});
    if std::fs::write(&transcript, format!("{line}\n")).is_err() {
        checks.warn(
            &name,
            "cannot write a test transcript".into(),
            "free some disk space",
        );
        return;
    }
    let input = json!({"session_id": session, "transcript_path": transcript, "cwd": dir.path(),
        "hook_event_name": event, "tool_name": "Write", "source": "startup", "trigger": "manual",
        "prompt": "knowledge-db hook doctor: does recall answer?", "reason": "other"});
    let command = words
        .iter()
        .map(|w| super::claude_code::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    let started = Instant::now();
    let result = run_shell(&command, dir.path(), &input.to_string());
    remove_session_files(&store.join("hooks"), &session);
    forget_test_session(store, &session, &transcript);
    match result {
        Ok((code, _, stderr)) if code == Some(0) && stderr.trim().is_empty() => checks.ok(
            &name,
            format!("exit 0 in {} ms", started.elapsed().as_millis()),
        ),
        Ok((code, _, stderr)) => checks.fail(
            &name,
            format!("exit {code:?}: {}", stderr.trim()),
            "see hooks.log in the store's hooks/ folder",
        ),
        Err(why) => checks.fail(&name, why, REINSTALL),
    }
}

/// Removes what a capturing hook stored of the throw-away session (its one
/// message and the transcript's read position), so a check leaves the
/// user's store as it was. Best effort.
fn forget_test_session(store: &Path, session: &str, transcript: &Path) {
    let Ok(opened) = crate::store::Store::open(store) else {
        return;
    };
    let id = format!("{session}:doctor-1");
    let _ = opened.delete(&[id], std::time::Duration::from_secs(5));
    crate::transcript::ingest::forget_read_position(&opened, transcript);
}

/// `sh -c COMMAND` in `dir` with `stdin`: (exit code, stdout, stderr), or why
/// it could not run in time.
fn run_shell(
    command: &str,
    dir: &Path,
    stdin: &str,
) -> Result<(Option<i32>, String, String), String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `sh -c {command}`: {e}"))?;
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.as_bytes());
    }
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(child.wait_with_output());
    });
    match receive.recv_timeout(COMMAND_TIMEOUT) {
        Ok(Ok(out)) => Ok((
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )),
        Ok(Err(e)) => Err(format!("`{command}` failed to run: {e}")),
        Err(_) => Err(format!(
            "`{command}` took more than {} s",
            COMMAND_TIMEOUT.as_secs()
        )),
    }
}

/// Removes every file under `dir` whose name holds `session`.
fn remove_session_files(dir: &Path, session: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            remove_session_files(&path, session);
        } else if entry.file_name().to_string_lossy().contains(session) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The skill is there, is the one this install writes, and its search runs.
fn check_skill(targets: &Targets, checks: &mut Checks) {
    let path = &targets.skill;
    let Ok(text) = std::fs::read_to_string(path) else {
        checks.fail("skill", format!("{} is missing", path.display()), REINSTALL);
        return;
    };
    let Some(prefix) = text
        .lines()
        .find_map(|l| l.strip_prefix("allowed-tools: Bash(")?.strip_suffix(" *)"))
    else {
        checks.fail(
            "skill",
            format!("{}: no `allowed-tools: Bash(...)` line", path.display()),
            REINSTALL,
        );
        return;
    };
    let words = shell_words(prefix);
    let installed = match (words.first(), store_of(&words)) {
        (Some(binary), Some(store)) => Install {
            binary: PathBuf::from(binary),
            store,
        },
        _ => {
            checks.fail(
                "skill",
                format!(
                    "{}: its commands (`{prefix}`) name no binary path and store",
                    path.display()
                ),
                REINSTALL,
            );
            return;
        }
    };
    if installed.skill() != text {
        checks.warn(
            "skill",
            format!(
                "{} differs from what this knowledge-db installs",
                path.display()
            ),
            REINSTALL,
        );
    }
    let command = format!("{prefix} search --all-namespaces -k 1 --json 'hook doctor'");
    let dir = std::env::temp_dir();
    match run_shell(&command, &dir, "") {
        Ok((Some(0), stdout, _)) if serde_json::from_str::<Value>(&stdout).is_ok() => {
            checks.ok("skill", format!("{} runs its search", path.display()))
        }
        Ok((code, _, stderr)) => checks.fail(
            "skill",
            format!("`{command}` exited {code:?}: {}", stderr.trim()),
            REINSTALL,
        ),
        Err(why) => checks.fail("skill", why, REINSTALL),
    }
}

/// The MCP registration is there and its server answers initialize and
/// tools/list.
fn check_mcp(targets: &Targets, checks: &mut Checks) {
    let path = &targets.mcp;
    let entry = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| targets.mcp_servers(&v)?.get(NAME)?.as_object().cloned());
    let Some(entry) = entry else {
        checks.fail(
            "mcp",
            format!("{}: no mcpServers.{NAME}", targets.mcp_place()),
            REINSTALL,
        );
        return;
    };
    check_mcp_entry(&entry, &[], checks);
}

/// Starts the server an `mcpServers` entry names (with `env` added to its
/// environment) and lists its tools.
pub(super) fn check_mcp_entry(
    entry: &serde_json::Map<String, Value>,
    env: &[(&str, &Path)],
    checks: &mut Checks,
) {
    let command = entry
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let args: Vec<String> = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    match list_tools(command, &args, env) {
        Ok(tools) if tools.iter().any(|t| t == "memory_search") => checks.ok(
            "mcp",
            format!("`{command}` answers tools/list: {}", tools.join(", ")),
        ),
        Ok(tools) => checks.fail(
            "mcp",
            format!(
                "`{command}` lists no memory_search (tools: {})",
                tools.join(", ")
            ),
            REINSTALL,
        ),
        Err(why) => checks.fail("mcp", why, REINSTALL),
    }
}

/// Starts an MCP server over stdio, initializes it and lists its tools.
fn list_tools(
    command: &str,
    args: &[String],
    env: &[(&str, &Path)],
) -> Result<Vec<String>, String> {
    let mut child = Command::new(command)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        return Err("no stdio pipes to the server".into());
    };
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "knowledge-db hook doctor", "version": env!("CARGO_PKG_VERSION")}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    let mut outcome = Err(format!(
        "`{command}` did not answer tools/list within {} s",
        COMMAND_TIMEOUT.as_secs()
    ));
    for message in &messages {
        if writeln!(stdin, "{message}").is_err() {
            outcome = Err(format!("`{command}` closed its input"));
            break;
        }
    }
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok(line) = receive.recv_timeout(left) else {
            break;
        };
        let Ok(reply) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if reply["id"] == 2 {
            outcome = reply["result"]["tools"]
                .as_array()
                .map(|tools| {
                    tools
                        .iter()
                        .filter_map(|t| t["name"].as_str().map(str::to_string))
                        .collect()
                })
                .ok_or_else(|| format!("tools/list answered {reply}"));
            break;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    outcome
}

pub(super) fn check_model(checks: &mut Checks) {
    use crate::embed::{Embedder, OnnxEmbedder, Workload};
    let started = Instant::now();
    match OnnxEmbedder::load_default(Workload::Queries).and_then(|mut e| e.embed(&["hook doctor"]))
    {
        Ok(_) => checks.ok(
            "model",
            format!(
                "all-MiniLM-L6-v2 loads and embeds ({} ms)",
                started.elapsed().as_millis()
            ),
        ),
        Err(e) => checks.warn(
            "model",
            format!("{e}; search runs on words (BM25) alone"),
            "run `knowledge-db setup` (from a checkout, scripts/setup-model.sh does the same)",
        ),
    }
}

pub(super) fn check_upkeep(store: &Store, checks: &mut Checks) {
    let status = crate::upkeep::status(store);
    let waiting = store.records_without_vector().unwrap_or(0);
    match &status.last_error {
        Some(error) => checks.warn(
            "upkeep",
            format!(
                "the last background run failed at {}: {}",
                error.at, error.message
            ),
            "run `knowledge-db --store <store> upkeep` to see it fail in the foreground",
        ),
        None if !crate::upkeep::enabled(store) => {
            let why = crate::upkeep::disabled_by(store).unwrap_or_default();
            let fix = upkeep_off_fix(&why);
            checks.warn(
                "upkeep",
                format!("background upkeep is off ({why}); {waiting} records wait for a vector"),
                fix,
            )
        }
        None => checks.ok(
            "upkeep",
            if status.running {
                format!(
                    "a worker is running: {} vectors computed, {waiting} waiting",
                    status.embedded
                )
            } else {
                format!("idle; {waiting} records wait for a vector")
            },
        ),
    }
}

/// What turns a disabled upkeep back on, for the switch that turned it off
/// (`why`, as [`crate::upkeep::disabled_by`] says it).
fn upkeep_off_fix(why: &str) -> &'static str {
    if why.starts_with("KNOWLEDGE_DB_UPKEEP") {
        "unset KNOWLEDGE_DB_UPKEEP (or set it to on) where the hooks run, or run `knowledge-db upkeep` from cron"
    } else {
        "set [upkeep] enabled = true in the store's config.toml, or run `knowledge-db upkeep` from cron"
    }
}

/// The sync state (see `crate::sync`), when a server is named.
pub(super) fn check_sync(store: &Store, checks: &mut Checks) {
    let status = match crate::sync::status(store) {
        Ok(status) => status,
        Err(e) => {
            return checks.warn(
                "sync",
                format!("the sync settings cannot be read: {e}"),
                "fix [sync] in the store's config.toml",
            )
        }
    };
    if !status.configured && status.last_sync.is_none() {
        return checks.ok("sync", "off (no server named)".into());
    }
    let remote = status
        .remote_records
        .map_or(String::new(), |n| format!(", the server held {n} records"));
    let summary = format!(
        "last sync {}{remote}; {} changes to push",
        status.last_sync.as_deref().unwrap_or("never"),
        status.pending_pushes
    );
    match &status.last_error {
        Some(error) => checks.warn(
            "sync",
            format!(
                "{summary}; the last sync failed at {}: {}",
                error.at, error.message
            ),
            "run `knowledge-db --store <store> sync` to see it fail in the foreground",
        ),
        None => checks.ok("sync", summary),
    }
}

/// Captures the hooks could not write (a read-only or full store), waiting
/// in the user's state folder for the next hook that can write.
fn check_missed_captures(store: &Path, checks: &mut Checks) {
    let missed = crate::integrations::hooks::missed::markers(store);
    if missed.is_empty() {
        checks.ok(
            "missed captures",
            "every session's capture was written".into(),
        );
        return;
    }
    let lines: Vec<String> = missed
        .iter()
        .map(|(path, m)| {
            format!(
                "session {} ({}) since {}: {} [{}]",
                m.session_id,
                m.transcript.display(),
                m.since,
                m.error,
                path.display()
            )
        })
        .collect();
    checks.warn(
        "missed captures",
        format!(
            "{} session(s) could not be stored:\n{}",
            missed.len(),
            lines.join("\n")
        ),
        "the next hook that can write stores them; or run `knowledge-db ingest <transcript>` once the store is writable",
    );
}

/// The last errors the hooks logged.
pub(super) fn check_hooks_log(store: &Path, checks: &mut Checks) {
    let log = store.join("hooks").join("hooks.log");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let errors: Vec<&str> = text.lines().filter(|l| l.contains("error")).collect();
    if errors.is_empty() {
        checks.ok("hooks.log", "no errors logged".into());
        return;
    }
    let last: Vec<&str> = errors.iter().rev().take(5).rev().copied().collect();
    checks.warn(
        "hooks.log",
        format!(
            "{} error line(s) in {}; the last:\n{}",
            errors.len(),
            log.display(),
            last.join("\n")
        ),
        "the hooks carried on (they never fail Claude's tool call); fix what the lines name",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With `KNOWLEDGE_DB_UPKEEP=off`, the fix is to unset it, not to set
    /// `enabled = true` (already set).
    #[test]
    fn the_fix_for_an_upkeep_turned_off_names_the_switch_that_did_it() {
        let env = upkeep_off_fix("KNOWLEDGE_DB_UPKEEP=off is set in the environment");
        assert!(
            env.contains("unset KNOWLEDGE_DB_UPKEEP") && !env.contains("enabled = true"),
            "{env}"
        );
        let config = upkeep_off_fix("`[upkeep] enabled = false` in /s/config.toml");
        assert!(config.contains("enabled = true"), "{config}");
    }
}
