//! `hook post-tool-use`, the compression loop: after the agent's tool calls,
//! read the transcript's new bytes into the session's state; when a check is
//! due (every `check_every_turns` turns, the context at least
//! `usage_threshold` full), store and queue the rule-based summaries of what
//! went cold and ask the agent to compress them; remind it of a batch still
//! pending after `remind_after_turns` turns.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::queue::{self, Queue};
use super::summarize::{is_hook_summary, summarize_cold};
use super::{
    capture, context_usage, reminder, save_state, update_state, ContextUsage, HookFiles, HookInput,
    HookSettings, ReadReport,
};
use crate::error::Result;
use crate::store::Store;

/// What `hook post-tool-use` did.
#[derive(Debug, Clone, Serialize)]
pub struct PostToolUseReport {
    /// The session the hook ran for.
    pub session_id: String,
    /// `false` when another hook of this session held its lock (nothing done).
    pub ran: bool,
    /// What reading the transcript's new bytes did (default when the hook did not run).
    pub read: ReadReport,
    /// Assistant turns in the session so far.
    pub assistant_turns: u64,
    /// How full the context is; `None` when the hook did not run.
    pub usage: Option<ContextUsage>,
    /// Whether the cold check ran (due by turns and over the usage threshold).
    pub checked: bool,
    /// Cold tasks found by the check.
    pub cold_tasks: usize,
    /// Cold topic segments found by the check.
    pub cold_segments: usize,
    /// Records written (added or updated).
    pub stored: usize,
    /// Records already stored as given (left unchanged).
    pub unchanged: usize,
    /// Items queued for the first time.
    pub queued: usize,
    /// Items waiting in the queue now.
    pub pending: usize,
    /// Whether the agent was asked (again) to compress the pending items.
    pub reminded: bool,
    /// The queue file.
    pub queue: PathBuf,
    /// What to tell the agent, if anything.
    pub message: Option<String>,
    /// What capturing the transcript's new messages stored (at the checks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captured: Option<crate::flows::capture::CaptureReport>,
    /// Wall-clock time the hook took, in seconds.
    pub seconds: f64,
}

/// Which gates a `post-tool-use` call skips.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gates {
    /// Check now, whatever the turn count and the context usage (`--force`).
    pub force: bool,
    /// Skip only the every-N-turns gate (`FORCE_COMPRESSION_CHECK=1`).
    pub ignore_turns: bool,
}

/// `hook post-tool-use`: update the session; when due, summarize cold items,
/// store and queue them and ask the agent to compress them; remind it of a
/// batch still pending after `remind_after_turns` turns.
pub fn post_tool_use(
    store_root: &Path,
    input: &HookInput,
    settings: &HookSettings,
    gates: Gates,
) -> Result<PostToolUseReport> {
    let started = Instant::now();
    let files = HookFiles::new(store_root);
    let queue_path = queue::queue_path(store_root, settings, &input.session_id);
    let mut report = PostToolUseReport {
        session_id: input.session_id.clone(),
        ran: false,
        read: ReadReport::default(),
        assistant_turns: 0,
        usage: None,
        checked: false,
        cold_tasks: 0,
        cold_segments: 0,
        stored: 0,
        unchanged: 0,
        queued: 0,
        pending: 0,
        reminded: false,
        queue: queue_path.clone(),
        message: None,
        captured: None,
        seconds: 0.0,
    };
    let Some(_lock) = files.try_lock(&input.session_id)? else {
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    };
    report.ran = true;
    let (mut state, read) = update_state(&files, input, settings)?;
    report.read = read;
    report.assistant_turns = state.turn();
    let usage = context_usage(&state, settings);
    report.usage = Some(usage);
    let due = gates.ignore_turns
        || state.turn().saturating_sub(state.last_check_turn) >= settings.check_every_turns.max(1);
    let mut queue = Queue::load(&queue_path, &input.session_id)?;
    let queue_before = queue.clone();
    if gates.force || (due && usage.fraction >= settings.usage_threshold) {
        report.checked = true;
        let outcome = summarize_cold(store_root, &mut queue, &mut state, settings);
        // The state is saved even when storing failed: the items stay unsummarized
        // and are found again at the next check.
        save_state(&files, &input.session_id, &state)?;
        let summary = outcome?;
        report.cold_tasks = summary.items.iter().filter(|i| i.kind == "task").count();
        report.cold_segments = summary.items.iter().filter(|i| i.kind == "segment").count();
        report.stored = summary.written;
        report.unchanged = summary.unchanged;
        report.queued = summary.queued;
        report.captured =
            match capture::capture_session(store_root, input, settings, settings.lock_wait()) {
                Ok(captured) => captured,
                Err(e) => {
                    files.log_line(
                        "post-tool-use",
                        Some(&input.session_id),
                        &format!("capture: {e}"),
                    );
                    None
                }
            };
    } else {
        save_state(&files, &input.session_id, &state)?;
    }
    let now = state.turn();
    let quiet_for = now.saturating_sub(
        queue
            .last_reminder_turn
            .or_else(|| queue.pending.iter().map(|e| e.queued_at_turn).min())
            .unwrap_or(now),
    );
    let remind = report.queued > 0
        || (!queue.pending.is_empty() && quiet_for >= settings.remind_after_turns.max(1));
    if remind && report.queued == 0 {
        // Before asking again: a segment may have arrived without the queue
        // hearing of it (a writer killed between its commit and the queue).
        settle_arrived(store_root, &mut queue, now);
    }
    if remind && !queue.pending.is_empty() {
        let prefix = reminder::command_prefix(store_root);
        report.message = reminder::reminder(&queue, Some(usage), settings, &prefix);
        report.reminded = report.message.is_some();
        queue.last_reminder_turn = Some(now);
    }
    report.pending = queue.pending.len();
    if queue != queue_before {
        save_queue(&files, &queue, &queue_path)?;
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Saves the queue; the first time, removes the session's queue file of the
/// first layout (its items are found again with the right turns).
pub(super) fn save_queue(files: &HookFiles, queue: &Queue, path: &Path) -> Result<()> {
    queue.save(path)?;
    let old = files.old_queue(&queue.session_id);
    if old.exists() && std::fs::remove_file(&old).is_ok() {
        files.log_line(
            "queue",
            Some(&queue.session_id),
            &format!(
                "replaced {} (first queue layout) by {}",
                old.display(),
                path.display()
            ),
        );
    }
    Ok(())
}

/// Moves pending entries whose record in the store is no longer the hooks'
/// rule-based summary (the agent's segment replaced it) to `compressed`.
/// Best effort: a store that cannot be opened leaves the queue as it is.
fn settle_arrived(store_root: &Path, queue: &mut Queue, turn: u64) {
    let Ok(store) = Store::open(store_root) else {
        return;
    };
    let ids: Vec<String> = queue.pending.iter().map(|e| e.segment_id.clone()).collect();
    for id in ids {
        let Ok(Some(record)) = store.get(&id) else {
            continue;
        };
        if record.kind == crate::record::Kind::Segment && !is_hook_summary(&record.source) {
            let location = format!("{}#{id}", store_root.display());
            queue.compress(&id, &record.source, Some(turn), location);
        }
    }
}
