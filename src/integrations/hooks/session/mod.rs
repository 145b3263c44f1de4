//! What the hooks remember about one Claude Code session between calls.
//!
//! A hook runs as a new process after every matching tool call, so it cannot
//! keep the transcript in memory, and re-reading a 5 MB transcript each time
//! would be too slow. Instead [`SessionState`] is folded forward: each call reads
//! only the bytes appended since the last one and feeds their messages to
//! [`SessionState::observe`], which updates small running summaries — the
//! assistant turn count, the tasks (TaskCreate/TaskUpdate, TodoWrite) with the
//! files, commands, errors and outcomes seen while each was in progress, the
//! topic segments of the conversation, the terms of the last turns (for
//! "is it still mentioned?"), and the context usage. Every list is capped, so
//! the state stays small however long the session runs.
//!
//! The state's types and its entry points live here; how one message folds
//! into it is `observe.rs`, the topic segments `segments.rs`, the tasks
//! `tasks.rs`.

mod observe;
mod segments;
mod tasks;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::transcript::Message;
pub use segments::{is_harness_prompt, topic_line};
pub use tasks::todo_id;

/// The state file's layout version; another version is discarded and rebuilt.
/// 2: turns count assistant responses in records, the turn index, shell writes.
pub const STATE_VERSION: u32 = 2;

/// What happened over a stretch of turns: the material of a rule-based summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    /// First conversation turn (`turn_index`: user prompts, as `ingest`
    /// numbers messages).
    pub start_turn: u64,
    /// Last conversation turn (`turn_index`).
    pub end_turn: u64,
    /// First assistant turn (responses): the hooks' clock, and the start of the
    /// turn range of the records they write.
    pub start_assistant_turn: u64,
    /// Last assistant turn.
    pub end_assistant_turn: u64,
    /// Timestamp of the first message, if the transcript had one.
    pub first_timestamp: Option<String>,
    /// Timestamp of the latest message, if the transcript had one.
    pub last_timestamp: Option<String>,
    /// Messages (a response split over several lines counts once).
    pub messages: u64,
    /// Estimated tokens of the messages.
    pub tokens: u64,
    /// Files changed (edits that succeeded, shell writes), relative to the
    /// project; the latest 30, latest last.
    pub files_modified: Vec<String>,
    /// Shell commands run, cut; the first 15.
    pub commands: Vec<String>,
    /// Error lines from tool results; the first 10.
    pub errors: Vec<String>,
    /// The latest assistant statements (first sentence of each text).
    pub outcomes: Vec<String>,
    /// Decisions the assistant stated; the first 8.
    pub decisions: Vec<String>,
}

impl Activity {
    fn starting(turn: u64, assistant_turn: u64, timestamp: Option<&String>) -> Activity {
        Activity {
            start_turn: turn,
            end_turn: turn,
            start_assistant_turn: assistant_turn,
            end_assistant_turn: assistant_turn,
            first_timestamp: timestamp.cloned(),
            last_timestamp: timestamp.cloned(),
            ..Activity::default()
        }
    }
}

/// A task of the session: from TaskCreate (id from its result) or TodoWrite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    /// The task id from TaskCreate's result, or `todo-<hash>` of a TodoWrite item's text.
    pub id: String,
    /// The task's subject (a TodoWrite item's text).
    pub subject: String,
    /// TaskCreate's description (empty for TodoWrite items).
    #[serde(default)]
    pub description: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
    /// `TaskCreate` or `TodoWrite`.
    pub source: String,
    /// The assistant turn the task was created at.
    pub created_assistant_turn: u64,
    /// When it was first marked in progress: its work starts there.
    #[serde(default)]
    pub started_assistant_turn: Option<u64>,
    /// The assistant turn it was marked completed at; `None` while not completed.
    pub completed_assistant_turn: Option<u64>,
    /// When it was completed (RFC 3339): the update's timestamp, else its work's last one.
    pub completed_at: Option<String>,
    /// The task's work: from when it was marked in progress (or, if never, since
    /// the task list last changed).
    pub activity: Activity,
    /// Its summary was written to the store.
    #[serde(default)]
    pub summarized: bool,
}

/// A stretch of conversation on one topic (for sessions without task tools).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentState {
    /// The prompt that opened it (first line, cut).
    pub first_prompt: String,
    /// The segment's work, from the turn that opened it.
    pub activity: Activity,
    /// Term counts (prompts and file names weigh more than other text).
    pub term_counts: BTreeMap<String, u32>,
    /// The terms that name its topic, fixed when it closes.
    #[serde(default)]
    pub key_terms: Vec<String>,
}

/// The terms of one recent assistant turn (with the prompt and tool inputs around it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnTerms {
    /// The assistant turn.
    pub assistant_turn: u64,
    /// Terms of the turn.
    pub terms: Vec<String>,
}

/// A TaskCreate call waiting for its result (which carries the task id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCreate {
    /// The task's subject, from the call's input.
    pub subject: String,
    /// The task's description, from the call's input.
    pub description: String,
    /// The assistant turn of the call.
    pub assistant_turn: u64,
    /// The conversation turn (`turn_index`) of the call.
    pub turn: u64,
    /// The call's timestamp, if the transcript had one.
    pub timestamp: Option<String>,
}

/// A tool call waiting for its result: what the result will tell about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenCall {
    /// The tool call's id (its result's `tool_use_id`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The file an edit tool changes (relative to the project).
    #[serde(default)]
    pub file: Option<String>,
    /// A shell command's text.
    #[serde(default)]
    pub command: Option<String>,
}

/// A TaskUpdate call waiting for its result (applied only if it succeeded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingUpdate {
    /// The task the update is for.
    pub task_id: String,
    /// The new status, if the call sets one.
    pub status: Option<String>,
    /// The new subject, if the call sets one.
    pub subject: Option<String>,
    /// The assistant turn of the call.
    pub assistant_turn: u64,
    /// The call's timestamp, if the transcript had one.
    pub timestamp: Option<String>,
}

/// Everything the hooks keep about one session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// The state file's format ([`STATE_VERSION`]): another version is rebuilt from the transcript.
    pub version: u32,
    /// The Claude Code session.
    pub session_id: String,
    /// The transcript read; another path makes the hooks rebuild the state.
    pub transcript: PathBuf,
    /// Bytes of the transcript read so far (at a line end, unless
    /// `in_long_line`).
    pub offset: u64,
    /// `offset` is inside a line longer than `[hooks] max_read_bytes`, which
    /// is being skipped (unread) up to its end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_long_line: bool,
    /// Lines read so far: messages' lines are numbered from the file's start.
    #[serde(default)]
    pub lines: u64,
    /// The line where each assistant turn starts (its prompt, else the response):
    /// `turn_lines[n - 1]` for turn n. `show` and `memory_get` read turn ranges
    /// back through it.
    #[serde(default)]
    pub turn_lines: Vec<u64>,
    /// xxh3 of the bytes just before `offset`: a mismatch means the file was rewritten.
    pub tail_hash: u64,
    /// User prompts so far (turns, as `ingest` counts them).
    pub prompts: u64,
    /// Assistant turns (API responses) so far: the hooks' clock.
    pub assistant_turns: u64,
    /// The API response the last assistant line belonged to (one response may
    /// be split over lines, and over two hook calls).
    pub last_response_id: Option<String>,
    /// Timestamp of the latest message, if the transcript had one.
    pub last_timestamp: Option<String>,
    /// When the API response `last_response_id` started.
    #[serde(default)]
    pub response_timestamp: Option<String>,
    /// The model of the latest response that named one.
    pub model: Option<String>,
    /// Prompt size the last response reported (input + cache + output), since the
    /// last compaction; `None` when the transcript has no usage figures.
    pub usage_tokens: Option<u64>,
    /// Estimated tokens of the messages since the last compaction.
    pub estimated_tokens: u64,
    /// The session called TaskCreate, TaskUpdate or TodoWrite.
    pub uses_task_tools: bool,
    /// The session's tasks, in the order they were created.
    pub tasks: Vec<TaskState>,
    /// TaskCreate calls waiting for their result, by tool call id.
    pub pending_creates: BTreeMap<String, PendingCreate>,
    /// TaskUpdate calls waiting for their result, by tool call id.
    pub pending_updates: BTreeMap<String, PendingUpdate>,
    /// Tool calls whose result has not been read yet.
    #[serde(default)]
    pub open_calls: VecDeque<OpenCall>,
    /// The TodoWrite list as last written (task ids, in order).
    #[serde(default)]
    pub todo_order: Vec<String>,
    /// Everything since the last change of the task list: the work of a task
    /// completed without ever being marked in progress.
    #[serde(default)]
    pub since_task_change: Activity,
    /// Terms of the last turns, oldest first.
    pub recent: VecDeque<TurnTerms>,
    /// The segment still going on; `None` when none is open (before the first
    /// message, or after one closed).
    pub open_segment: Option<SegmentState>,
    /// Closed segments not yet summarized.
    pub closed_segments: Vec<SegmentState>,
    /// Files changed in the whole session, for the preservation block; the
    /// latest 30, latest last.
    pub modified_files: Vec<String>,
    /// Test commands run, cut; the latest 10, latest last.
    pub test_commands: Vec<String>,
    /// Decisions the assistant stated; the latest 8, latest last.
    pub decisions: Vec<String>,
    /// Error lines from tool results; the latest 10, latest last.
    pub errors: Vec<String>,
    /// The assistant turn of the last cold check.
    pub last_check_turn: u64,
    /// The session's working directory: from the hook input, else the transcript.
    pub cwd: Option<String>,
    /// The turn (as `ingest` counts them) of the last compaction: what came
    /// before it left the live context, and recall may bring it back.
    #[serde(default)]
    pub compacted_turn: Option<u64>,
}

impl SessionState {
    /// An empty state for the session's transcript, at offset 0.
    pub fn new(session_id: &str, transcript: PathBuf) -> SessionState {
        SessionState {
            version: STATE_VERSION,
            session_id: session_id.to_string(),
            transcript,
            ..SessionState::default()
        }
    }

    /// Folds the messages read from new bytes into the state. `recent_turns` is
    /// how many turns' terms to keep.
    pub fn observe(&mut self, messages: &[Message], recent_turns: usize) {
        for message in messages {
            if message.is_sidechain {
                continue;
            }
            self.observe_one(message, recent_turns.max(1));
        }
    }

    /// The current assistant turn.
    pub fn turn(&self) -> u64 {
        self.assistant_turns
    }
}

/// Adds `item` unless present; when full, the oldest goes.
fn push_latest(list: &mut Vec<String>, item: &str, cap: usize) {
    if let Some(i) = list.iter().position(|x| x == item) {
        list.remove(i);
    }
    list.push(item.to_string());
    if list.len() > cap {
        list.remove(0);
    }
}

/// Adds `item` unless present or the list is full (the first ones are kept).
fn push_capped(list: &mut Vec<String>, item: &str, cap: usize) {
    if list.len() < cap && !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
