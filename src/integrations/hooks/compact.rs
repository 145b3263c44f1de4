//! Keeping what matters across a compaction: `hook pre-compact` stores and
//! queues what went cold (without the gates), captures the transcript and
//! saves the preservation block ([`super::preserve`]); `hook session-start`
//! after the compaction gives the block back to the model, once (PreCompact
//! hooks cannot add context), and at a session's start the brief of the
//! project's recent work ([`super::brief`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::post_tool_use::save_queue;
use super::queue::{self, Queue};
use super::summarize::summarize_cold;
use super::{
    brief, capture, preserve, read_json, save_state, update_state, write_json_atomically,
    HookFiles, HookInput, HookSettings,
};
use crate::error::Result;

/// The preservation block saved by `pre-compact`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedBlock {
    /// The session the block was built for.
    pub session_id: String,
    /// When the block was saved (RFC 3339).
    pub created_at: String,
    /// PreCompact's trigger (`auto|manual`), if Claude Code sent one.
    pub trigger: Option<String>,
    /// The preservation block's text.
    pub block: String,
    /// Given back to the model already (it is given once).
    pub injected: bool,
}

/// What `hook pre-compact` did.
#[derive(Debug, Clone, Serialize)]
pub struct PreCompactReport {
    /// The session the hook ran for.
    pub session_id: String,
    /// Whether the hook ran: always `true` in a returned report (it waits for
    /// the session's lock, else fails).
    pub ran: bool,
    /// Cold items found before the block was built (0 when storing their
    /// summaries failed).
    pub cold_items: usize,
    /// Length of the preservation block, in characters.
    pub block_chars: usize,
    /// Where the block was saved (`<session>.preserve.json`); always set in a
    /// returned report.
    pub saved: Option<PathBuf>,
    /// What capturing the transcript's new messages stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captured: Option<crate::flows::capture::CaptureReport>,
    /// Wall-clock time the hook took, in seconds.
    pub seconds: f64,
}

/// `hook pre-compact`: update the session, summarize and queue what is cold (no
/// gates), build the preservation block and save it. The queue's pending items
/// stay pending: a compaction compresses nothing.
pub fn pre_compact(
    store_root: &Path,
    input: &HookInput,
    settings: &HookSettings,
) -> Result<PreCompactReport> {
    let started = Instant::now();
    let files = HookFiles::new(store_root);
    let mut report = PreCompactReport {
        session_id: input.session_id.clone(),
        ran: false,
        cold_items: 0,
        block_chars: 0,
        saved: None,
        captured: None,
        seconds: 0.0,
    };
    // A post-tool-use hook may be finishing: wait a little for it.
    let _lock = files.lock_waiting(&input.session_id, Duration::from_secs(5))?;
    report.ran = true;
    let (mut state, _) = update_state(&files, input, settings)?;
    let queue_path = queue::queue_path(store_root, settings, &input.session_id);
    let mut queue = Queue::load(&queue_path, &input.session_id)?;
    let outcome = summarize_cold(store_root, &mut queue, &mut state, settings);
    save_state(&files, &input.session_id, &state)?;
    match &outcome {
        Ok(summary) => report.cold_items = summary.items.len(),
        // The block is still worth saving without the new summaries.
        Err(e) => files.log_line(
            "pre-compact",
            Some(&input.session_id),
            &format!("storing summaries: {e}"),
        ),
    }
    save_queue(&files, &queue, &queue_path)?;
    // Everything the compaction is about to drop from the context is stored
    // first; a busy store defers it to the next hook call.
    report.captured =
        match capture::capture_session(store_root, input, settings, settings.lock_wait()) {
            Ok(captured) => captured,
            Err(e) => {
                files.log_line(
                    "pre-compact",
                    Some(&input.session_id),
                    &format!("capture: {e}"),
                );
                None
            }
        };
    let cwd = input
        .cwd
        .clone()
        .or_else(|| state.cwd.as_ref().map(PathBuf::from));
    let block = preserve::build(
        &state,
        &queue,
        store_root,
        cwd.as_deref(),
        input.trigger.as_deref(),
    );
    let saved = SavedBlock {
        session_id: input.session_id.clone(),
        created_at: crate::now_rfc3339(),
        trigger: input.trigger.clone(),
        block,
        injected: false,
    };
    let path = files.preserve(&input.session_id);
    write_json_atomically(&path, &saved)?;
    report.block_chars = saved.block.chars().count();
    report.saved = Some(path);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// `hook session-start`: after a compaction (`source: compact`), the saved
/// block, once; when a session starts or resumes, the brief of the project's
/// recent work ([`brief`]). Returns the text to add to the context, if any.
pub fn session_start(store_root: &Path, input: &HookInput) -> Result<Option<String>> {
    match input.source.as_deref() {
        Some("compact") => {}
        Some("startup" | "resume") => return brief::brief(store_root, input),
        _ => return Ok(None),
    }
    let files = HookFiles::new(store_root);
    let path = files.preserve(&input.session_id);
    let Some(mut saved) = read_json::<SavedBlock>(&path)? else {
        return Ok(None);
    };
    if saved.injected || saved.block.trim().is_empty() {
        return Ok(None);
    }
    // Marked before it is printed: a block is never given twice.
    saved.injected = true;
    write_json_atomically(&path, &saved)?;
    Ok(Some(saved.block))
}
