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
pub fn git_diff_stat(cwd: &Path) -> Option<String> {
    if !cwd.is_dir() {
        return None;
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(["--no-pager", "diff", "--stat", "--no-color", "HEAD"])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    // Read on a thread so a large diff cannot fill the pipe and stall git.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < GIT_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let text = reader.join().ok()?;
    if !status?.success() || text.trim().is_empty() {
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
