//! The Claude Code hooks: the compression loop of the rolling context, and
//! keeping what matters across a compaction.
//!
//! Claude Code runs `knowledge-db hook <event>` with the event's JSON on stdin
//! (`interop.md`, section 2):
//! - **`post-tool-use`** after Bash/Write/Edit/TaskCreate/TaskUpdate/TodoWrite
//!   calls: it reads the transcript's new bytes into the session's state
//!   ([`session`]); every `check_every_turns` assistant turns, when the context
//!   is at least `usage_threshold` full, it looks for cold tasks and cold topic
//!   segments ([`cold`]), stores their rule-based summaries at once (the
//!   fallback, under deterministic ids), queues them ([`queue`]) and asks the
//!   agent to compress them ([`reminder`]): to read each turn range back
//!   ([`turns`]), write its own segment and save it under the queued id, which
//!   replaces the fallback and moves the entry to `compressed`
//!   ([`queue::segments_arrived`]). A batch still pending is announced again
//!   after `remind_after_turns` turns.
//! - **`pre-compact`**: the same update and queueing (without the gates), then
//!   the preservation block ([`preserve`]) is built and saved for the session.
//! - **`session-start`** with source `compact`: the saved block is given back to
//!   the model as `additionalContext`, once (PreCompact hooks cannot add context).
//!
//! A hook's files live in `<store>/hooks/`: `<session>.json` (state),
//! `<session>.preserve.json`, `hooks.log` (a hook never fails the agent's tool
//! call: it logs and exits 0); the queue is `{session}_pending.json` in
//! `[hooks] queue_dir` (default `<store>/hooks/context_queue/`).
//!
//! This file holds what every hook shares: its settings, its input and how
//! full the context is. Each event's handler is a room of its own:
//! `post_tool_use.rs`, `compact.rs` (pre-compact and session-start), with the
//! storing of cold summaries both use in `summarize.rs`; the hooks' files
//! under `<store>/hooks/` are `files.rs`.

pub mod brief;
pub mod capture;
pub mod cold;
mod compact;
pub mod extract;
mod files;
mod forgotten;
pub mod missed;
mod post_tool_use;
pub mod preserve;
pub mod queue;
mod read;
pub mod recall;
pub mod reminder;
pub mod session;
mod summarize;
pub mod terms;
#[cfg(test)]
mod tests;
pub mod turns;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use self::compact::{pre_compact, session_start, PreCompactReport, SavedBlock};
use self::files::save_state;
pub use self::files::{escape_controls, forget_session_files, os_reason, HookFiles, LoggedTo};
pub(crate) use self::files::{read_json, write_json_atomically};
pub use self::forgotten::{forgotten_session, skip_forgotten};
pub use self::post_tool_use::{post_tool_use, Gates, PostToolUseReport};
pub use self::read::{update_state, ReadReport};
use self::session::SessionState;
pub use self::summarize::is_hook_summary;
use crate::error::{Error, Result};

/// The thresholds of the hooks: `[hooks]` in `config.toml`, flags override.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HookSettings {
    /// Look for cold items every this many assistant turns.
    pub check_every_turns: u64,
    /// … and only when the context is at least this full (0..1).
    pub usage_threshold: f64,
    /// The context window the usage is measured against, in tokens.
    pub context_window: u64,
    /// A completed task or closed topic is cold this many turns after it ended …
    pub cold_after_turns: u64,
    /// … if none of this many recent turns mentions it.
    pub recent_turns: usize,
    /// A topic segment needs this many messages to be summarized.
    pub min_segment_messages: u64,
    /// The namespace summaries are stored in.
    pub namespace: String,
    /// Where the queue files go (`~` is the home folder); default
    /// `<store>/hooks/context_queue`.
    pub queue_dir: Option<String>,
    /// A batch still pending is announced again after this many assistant turns.
    pub remind_after_turns: u64,
    /// Most transcript bytes one hook call reads (from where the last call
    /// stopped); a longer backlog is read over the next calls, and a single
    /// line longer than this is skipped.
    pub max_read_bytes: u64,
    /// Store the session's messages as the transcript grows (Stop,
    /// SessionEnd, PreCompact and the compression checks).
    pub capture: bool,
    /// Longest a capture waits for the store's writer lock, in seconds; a
    /// busy store defers the capture to the next hook call.
    pub capture_lock_wait_secs: f64,
}

impl Default for HookSettings {
    fn default() -> Self {
        HookSettings {
            check_every_turns: 10,
            usage_threshold: 0.7,
            context_window: 200_000,
            cold_after_turns: 20,
            recent_turns: 20,
            min_segment_messages: 5,
            namespace: crate::record::DEFAULT_NAMESPACE.to_string(),
            queue_dir: None,
            remind_after_turns: 20,
            max_read_bytes: 64 * 1024 * 1024,
            capture: true,
            capture_lock_wait_secs: 2.0,
        }
    }
}

impl HookSettings {
    /// How long a capture waits for the store's writer lock.
    pub fn lock_wait(&self) -> Duration {
        Duration::from_secs_f64(self.capture_lock_wait_secs.clamp(0.0, 60.0))
    }

    /// The `[hooks]` table of the store's `config.toml` (defaults when the file or
    /// the table is missing).
    pub fn from_store(root: &Path) -> Result<HookSettings> {
        crate::store::config::read_section(root, "hooks")
    }
}

/// The fields of a hook's stdin the hooks use (others are ignored).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct HookInput {
    /// The Claude Code session the hook runs for (never empty).
    pub session_id: String,
    /// The session's transcript (JSONL); the hooks that read it fail without it.
    #[serde(default)]
    pub transcript_path: Option<PathBuf>,
    /// The session's working directory, if Claude Code sent it.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The event's name as Claude Code sends it (`PostToolUse`, `PreCompact`, …).
    #[serde(default)]
    pub hook_event_name: Option<String>,
    /// PostToolUse: the tool whose call triggered the hook.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// SessionStart: `startup|resume|clear|compact|fork`.
    #[serde(default)]
    pub source: Option<String>,
    /// PreCompact: `auto|manual`.
    #[serde(default)]
    pub trigger: Option<String>,
    /// UserPromptSubmit: what the user typed.
    #[serde(default)]
    pub prompt: Option<String>,
    /// SessionEnd: why the session ended (`clear`, `logout`, `prompt_input_exit`, …).
    #[serde(default)]
    pub reason: Option<String>,
}

impl HookInput {
    /// Reads the hook JSON Claude Code writes on stdin.
    pub fn parse(bytes: &[u8]) -> Result<HookInput> {
        let input: HookInput = serde_json::from_slice(bytes).map_err(|e| {
            Error::Usage(format!(
                "hook input on stdin: not the hook JSON at line {}, column {}: {e}",
                e.line(),
                e.column()
            ))
        })?;
        if input.session_id.trim().is_empty() {
            return Err(Error::Usage(
                "hook input on stdin: `session_id` is empty".into(),
            ));
        }
        Ok(input)
    }

    fn transcript(&self) -> Result<&Path> {
        self.transcript_path
            .as_deref()
            .filter(|p| !p.as_os_str().is_empty())
            .ok_or_else(|| Error::Usage("hook input on stdin: no `transcript_path`".into()))
    }
}

/// How full the context is: tokens, their share of the window, and where the
/// number comes from (`usage` figures of the transcript, else an `estimate`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ContextUsage {
    /// Tokens in the context: the last `usage` figures, else the estimate.
    pub tokens: u64,
    /// `tokens` as a share of `context_window` (may exceed 1).
    pub fraction: f64,
    /// `usage` or `estimate`.
    pub source: &'static str,
}

/// How full the session's context is against `settings.context_window`.
pub fn context_usage(state: &SessionState, settings: &HookSettings) -> ContextUsage {
    let (tokens, source) = match state.usage_tokens {
        Some(tokens) => (tokens, "usage"),
        None => (state.estimated_tokens, "estimate"),
    };
    ContextUsage {
        tokens,
        fraction: tokens as f64 / settings.context_window.max(1) as f64,
        source,
    }
}

/// The hook output JSON that adds `text` to the model's context.
pub fn additional_context(event: &str, text: &str) -> Value {
    json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
}
