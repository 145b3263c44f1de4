//! The preservation block: what the agent must not lose when its context is
//! compacted.
//!
//! Built by `hook pre-compact` from the session's state and the store: the
//! active tasks, the files modified, the test commands, key decisions, recent
//! errors, the uncommitted changes (`git diff --stat` of the working folder,
//! bounded in time), and the summaries already stored for the session's cold
//! work. `hook session-start` gives it back to the model after the compaction.
//! Claude Code caps hook output strings at 10,000 characters, so the block is
//! kept under [`MAX_BLOCK_CHARS`].

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::queue::Queue;
use super::session::{cut, SessionState};
use crate::store::Store;

/// Longest preservation block, in characters (Claude Code caps hook output at 10,000).
pub const MAX_BLOCK_CHARS: usize = 9_500;
/// Longest `git diff --stat` may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(2);
const GIT_MAX_LINES: usize = 40;
/// Stored summaries read into the block, newest first.
const MAX_SUMMARIES: usize = 12;

/// The block, as markdown.
pub fn build(
    state: &SessionState,
    queue: &Queue,
    store_root: &Path,
    cwd: Option<&Path>,
    trigger: Option<&str>,
) -> String {
    let mut out = format!(
        "# Preserved by knowledge-db before compaction\nSession {}, {} assistant turns{}.\n",
        state.session_id,
        state.turn(),
        trigger
            .map(|t| format!(", {t} compaction"))
            .unwrap_or_default()
    );
    let active: Vec<String> = state
        .active_tasks()
        .map(|t| format!("[{}] {} (task {})", t.status, t.subject, t.id))
        .collect();
    section(&mut out, "Active tasks", &active);
    let files: Vec<String> = state.modified_files.iter().rev().cloned().collect();
    section(&mut out, "Modified files (latest first)", &files);
    let tests: Vec<String> = state
        .test_commands
        .iter()
        .rev()
        .map(|c| format!("`{c}`"))
        .collect();
    section(&mut out, "Test commands", &tests);
    let decisions: Vec<String> = state.decisions.iter().rev().cloned().collect();
    section(&mut out, "Key decisions", &decisions);
    let errors: Vec<String> = state.errors.iter().rev().take(5).cloned().collect();
    section(&mut out, "Recent errors", &errors);
    if let Some(diff) = cwd.and_then(git_diff_stat) {
        out.push_str("\n## Uncommitted changes (git diff --stat)\n```\n");
        out.push_str(&diff);
        out.push_str("```\n");
    }
    let summaries = stored_summaries(queue, store_root);
    if !summaries.is_empty() {
        section(
            &mut out,
            "Finished work stored in knowledge-db (`knowledge-db get <id>` for details)",
            &summaries,
        );
    }
    cut(&out, MAX_BLOCK_CHARS)
}

fn section(out: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    out.push_str(&format!("\n## {title}\n"));
    for item in items {
        out.push_str(&format!("- {}\n", cut(item, 400)));
    }
}

/// One line per summary the hooks stored for the session, from the store.
fn stored_summaries(queue: &Queue, store_root: &Path) -> Vec<String> {
    let ids: Vec<&str> = queue
        .pending
        .iter()
        .map(|e| e.segment_id.as_str())
        .chain(queue.compressed.iter().map(|e| e.segment_id.as_str()))
        .rev()
        .take(MAX_SUMMARIES)
        .collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let Ok(store) = Store::open(store_root) else {
        return Vec::new();
    };
    ids.iter()
        .filter_map(|id| {
            let record = store.get(id).ok()??;
            Some(summary_line(id, &record.source))
        })
        .collect()
}

/// A stored task or segment summary in one line.
fn summary_line(id: &str, record: &Value) -> String {
    let s = |key: &str| record.get(key).and_then(Value::as_str).unwrap_or_default();
    let list = |key: &str, n: usize| -> String {
        record
            .get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .take(n)
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .unwrap_or_default()
    };
    let turns = format!(
        "turns {}-{}",
        record
            .get("start_turn")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        record.get("end_turn").and_then(Value::as_u64).unwrap_or(0)
    );
    if record.get("task_id").is_some() {
        let mut line = format!("task `{id}` \"{}\" ({turns})", s("subject"));
        let outcomes = list("key_outcomes", 2);
        if !outcomes.is_empty() {
            line.push_str(&format!(": {outcomes}"));
        }
        let files = list("files_modified", 5);
        if !files.is_empty() {
            line.push_str(&format!(" [files: {files}]"));
        }
        line
    } else {
        format!(
            "segment `{id}` ({turns}): {}",
            cut(s("compressed_content"), 300)
        )
    }
}

/// `git diff --stat HEAD` of `cwd` when it is a git work tree, within `GIT_TIMEOUT`.
///
/// `cwd` comes from the hook input, so the repository may be anyone's: git
/// runs with every program a repository's config can start turned off (see
/// `git_command`), in its own process group, killed with its children when
/// the time is up, and its output is read up to `GIT_MAX_OUTPUT`.
pub fn git_diff_stat(cwd: &Path) -> Option<String> {
    if !cwd.is_dir() {
        return None;
    }
    let deadline = Instant::now() + GIT_TIMEOUT;
    // Clean filters run on changed files; their names are only known from
    // the config, so each one found is emptied for the diff.
    let filters = run_git(
        cwd,
        &[
            "config",
            "--null",
            "--get-regexp",
            r"^filter\..*\.(clean|smudge|process)$",
        ],
        &[],
        deadline,
    )
    .unwrap_or_default();
    let mut overrides = Vec::new();
    for entry in filters.split('\0') {
        let key = entry.split('\n').next().unwrap_or_default();
        if let Some(driver) = key
            .strip_prefix("filter.")
            .and_then(|k| k.rsplit_once('.'))
            .map(|(driver, _)| driver)
        {
            if driver.contains('=') {
                // `-c filter.a=b.clean=` would set another key: such a
                // driver cannot be turned off, so git is not run.
                return None;
            }
            for part in ["clean", "smudge", "process"] {
                overrides.push(format!("filter.{driver}.{part}="));
            }
            overrides.push(format!("filter.{driver}.required=false"));
        }
    }
    let overrides: Vec<&str> = overrides.iter().map(String::as_str).collect();
    let text = run_git(
        cwd,
        &[
            "diff",
            "--stat",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--ignore-submodules=all",
            "HEAD",
        ],
        &overrides,
        deadline,
    )?;
    if text.trim().is_empty() {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    if lines.len() > GIT_MAX_LINES {
        // The files at the top, then git's total line.
        for line in &lines[..GIT_MAX_LINES - 2] {
            out.push_str(&format!("{line}\n"));
        }
        out.push_str(&format!(
            " … {} more files\n",
            lines.len() - GIT_MAX_LINES + 1
        ));
        out.push_str(&format!("{}\n", lines[lines.len() - 1]));
    } else {
        for line in &lines {
            out.push_str(&format!("{line}\n"));
        }
    }
    Some(out)
}

/// Most bytes of git's output read.
const GIT_MAX_OUTPUT: u64 = 1024 * 1024;

/// `git` in `cwd` with the programs a repository's config could run turned
/// off: the file-system monitor (`core.fsmonitor`), hooks (`core.hooksPath`),
/// the pager (`--no-pager`, `GIT_PAGER`), external diff and textconv drivers
/// (`--no-ext-diff --no-textconv`, given by the caller), and the clean/smudge
/// filters the caller names in `config` (`filter.<driver>.clean=` …).
/// Submodules are not entered (`--ignore-submodules=all`, given by the
/// caller), so their configs do not count either.
fn git_command(cwd: &Path, config: &[&str]) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(cwd)
        .args(["-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null"])
        .args(["-c", "core.pager=cat", "-c", "diff.external="]);
    for setting in config {
        command.args(["-c", setting]);
    }
    command
        .arg("--no-pager")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_EXTERNAL_DIFF")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group: a timeout kills whatever git started too.
        command.process_group(0);
    }
    command
}

/// Runs [`git_command`] with `args` until `deadline`; its stdout if it
/// succeeded in time, else `None` (killed with its process group).
fn run_git(cwd: &Path, args: &[&str], config: &[&str], deadline: Instant) -> Option<String> {
    let mut child = git_command(cwd, config).args(args).spawn().ok()?;
    let stdout = child.stdout.take()?;
    // Read on a thread so a large output cannot fill the pipe and stall git.
    let (send, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.take(GIT_MAX_OUTPUT).read_to_string(&mut text);
        let _ = send.send(text);
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                kill_group(&mut child);
                break None;
            }
        }
    };
    // A process git started may hold the pipe open: wait no longer than the
    // deadline for the text (the reading thread ends with the pipe).
    let wait = deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(50);
    let text = received.recv_timeout(wait).ok()?;
    status?.success().then_some(text)
}

/// Kills `child` and its process group.
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: signals the process group the child leads (it was
            // started with `process_group(0)`); no memory is involved.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
