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

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::{self, project_path, SNIPPET_CHARS};
use super::terms::{terms, MAX_TERMS_PER_TURN};
use crate::context::tokens::estimate;
use crate::transcript::{Block, Message, Role};

/// The state file's layout version; another version is discarded and rebuilt.
/// 2: turns count assistant responses in records, the turn index, shell writes.
pub const STATE_VERSION: u32 = 2;

/// Tools whose `file_path` is a file the agent changed.
const EDIT_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];
/// A segment this long (assistant turns) closes at the next prompt, topic or not.
const MAX_SEGMENT_TURNS: u64 = 50;
/// A prompt sharing less than this share of its terms with the segment starts a new one.
const TOPIC_OVERLAP: f64 = 0.15;
/// Terms of the open segment compared with a new prompt.
const SEGMENT_PROFILE_TERMS: usize = 40;
/// Terms counted per segment (the most frequent are kept).
const MAX_SEGMENT_TERMS: usize = 300;
/// Caps of the running lists.
const MAX_FILES: usize = 30;
const MAX_COMMANDS: usize = 15;
const MAX_ERRORS: usize = 10;
const MAX_OUTCOMES: usize = 3;
const MAX_DECISIONS: usize = 8;
/// Tool calls remembered until their result arrives.
const MAX_OPEN_CALLS: usize = 64;

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

    fn observe_one(&mut self, message: &Message, recent_turns: usize) {
        // The rest of an API response whose first lines an earlier call read: it
        // is the same message, with the time the response started (as a whole read
        // of the file would give it).
        let continues = message.role == Role::Assistant
            && message.response_id.is_some()
            && message.response_id == self.last_response_id;
        let timestamp = if continues {
            self.response_timestamp.clone()
        } else {
            message.timestamp.clone()
        };
        if timestamp.is_some() {
            self.last_timestamp.clone_from(&timestamp);
        }
        if message.is_compact_boundary {
            self.compacted_turn = Some(message.turn_index);
            // Context starts over: usage resets, and a topic cannot span the cut.
            self.usage_tokens = None;
            self.estimated_tokens = 0;
            self.close_segment();
            return;
        }
        let text = message.text();
        let overhead = if continues {
            0
        } else {
            crate::context::tokens::MESSAGE_OVERHEAD as u64
        };
        let tokens = estimate(&text) as u64 + overhead;
        self.estimated_tokens += tokens;
        if message.is_compact_summary {
            return;
        }
        if message.is_prompt() {
            self.prompts += 1;
            self.note_turn_start(self.assistant_turns + 1, message.line);
            self.on_prompt(message, &text);
        }
        if message.role == Role::Assistant {
            self.on_assistant(message, recent_turns);
            self.note_turn_start(self.assistant_turns, message.line);
        }
        let turn = message.turn_index;
        let assistant_turn = self.assistant_turns;
        let cwd = self.cwd.clone();
        // Who receives this message's activity: the tasks in progress, the open
        // segment, and the work since the task list last changed.
        let mut targets: Vec<&mut Activity> = self
            .tasks
            .iter_mut()
            .filter(|t| t.status == "in_progress")
            .map(|t| &mut t.activity)
            .collect();
        if let Some(segment) = self.open_segment.as_mut() {
            targets.push(&mut segment.activity);
        }
        targets.push(&mut self.since_task_change);
        for activity in targets.iter_mut() {
            activity.messages += u64::from(!continues);
            activity.tokens += tokens;
            activity.end_turn = activity.end_turn.max(turn);
            activity.end_assistant_turn = activity.end_assistant_turn.max(assistant_turn);
            if timestamp.is_some() {
                activity.last_timestamp.clone_from(&timestamp);
            }
        }
        let mut turn_terms: Vec<String> = Vec::new();
        let mut files: Vec<String> = Vec::new();
        let mut errors: Vec<String> = Vec::new();
        let mut decisions: Vec<String> = Vec::new();
        for block in &message.content {
            match block {
                Block::Text { text } if message.role == Role::Assistant => {
                    turn_terms.extend(terms(text, MAX_TERMS_PER_TURN));
                    let outcomes = extract::outcomes(text);
                    decisions.extend(extract::decisions(text));
                    for activity in targets.iter_mut() {
                        for o in &outcomes {
                            push_latest(&mut activity.outcomes, o, MAX_OUTCOMES);
                        }
                    }
                }
                Block::Text { text } => turn_terms.extend(terms(text, MAX_TERMS_PER_TURN)),
                Block::ToolUse { id, name, input } => {
                    turn_terms.extend(terms(&tool_input_words(input), MAX_TERMS_PER_TURN));
                    let command = input
                        .get("command")
                        .and_then(Value::as_str)
                        .map(|c| c.trim().to_string());
                    if let Some(command) = &command {
                        let shown = cut(command, SNIPPET_CHARS);
                        for activity in targets.iter_mut() {
                            push_capped(&mut activity.commands, &shown, MAX_COMMANDS);
                        }
                        if is_test_command(&shown) {
                            push_latest(&mut self.test_commands, &shown, 10);
                        }
                    }
                    let file = EDIT_TOOLS
                        .contains(&name.as_str())
                        .then(|| file_path(input))
                        .flatten()
                        .map(|p| project_path(&p, cwd.as_deref()));
                    self.open_calls.push_back(OpenCall {
                        id: id.clone(),
                        name: name.clone(),
                        file,
                        command: command.filter(|_| name == "Bash"),
                    });
                    while self.open_calls.len() > MAX_OPEN_CALLS {
                        self.open_calls.pop_front();
                    }
                }
                Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    ..
                } => {
                    let call = self
                        .open_calls
                        .iter()
                        .position(|c| &c.id == tool_use_id)
                        .and_then(|i| self.open_calls.remove(i));
                    let shell = call.as_ref().and_then(|c| c.command.as_deref());
                    errors.extend(extract::errors(content, *is_error, shell.is_some()));
                    // An edit counts once it succeeded; a command's writes unless it
                    // never ran (rejected, interrupted).
                    if let Some(file) = call.as_ref().and_then(|c| c.file.clone()) {
                        if !is_error {
                            files.push(file);
                        }
                    }
                    if let Some(command) = shell {
                        if !extract::never_ran(content) {
                            files.extend(
                                extract::shell_written_files(command)
                                    .iter()
                                    .map(|f| project_path(f, cwd.as_deref())),
                            );
                        }
                    }
                }
                _ => {}
            }
        }
        for activity in targets.iter_mut() {
            for file in &files {
                push_latest(&mut activity.files_modified, file, MAX_FILES);
            }
            for error in &errors {
                push_capped(&mut activity.errors, error, MAX_ERRORS);
            }
            for d in &decisions {
                push_capped(&mut activity.decisions, d, MAX_DECISIONS);
            }
        }
        drop(targets);
        for file in &files {
            push_latest(&mut self.modified_files, file, MAX_FILES);
        }
        for error in &errors {
            push_latest(&mut self.errors, error, MAX_ERRORS);
        }
        for d in &decisions {
            push_latest(&mut self.decisions, d, MAX_DECISIONS);
        }
        if let Some(segment) = self.open_segment.as_mut() {
            for term in &turn_terms {
                *segment.term_counts.entry(term.clone()).or_default() += 1;
            }
            trim_counts(&mut segment.term_counts);
        }
        self.add_recent_terms(turn_terms);
        self.track_tasks(message, turn, timestamp.as_ref());
    }

    /// Notes where turn `turn` starts, the first time a message of it is seen.
    fn note_turn_start(&mut self, turn: u64, line: usize) {
        if turn >= 1 && (self.turn_lines.len() as u64) < turn {
            self.turn_lines.push(line as u64);
        }
    }

    fn on_assistant(&mut self, message: &Message, recent_turns: usize) {
        let continues =
            message.response_id.is_some() && message.response_id == self.last_response_id;
        if !continues {
            self.assistant_turns += 1;
            self.recent.push_back(TurnTerms {
                assistant_turn: self.assistant_turns,
                terms: Vec::new(),
            });
            while self.recent.len() > recent_turns {
                self.recent.pop_front();
            }
            if self.open_segment.is_none() {
                self.open_segment = Some(SegmentState {
                    first_prompt: String::new(),
                    activity: Activity::starting(
                        message.turn_index,
                        self.assistant_turns,
                        message.timestamp.as_ref(),
                    ),
                    term_counts: BTreeMap::new(),
                    key_terms: Vec::new(),
                });
            }
        }
        if !continues {
            self.response_timestamp.clone_from(&message.timestamp);
        }
        self.last_response_id.clone_from(&message.response_id);
        if message.model.is_some() {
            self.model.clone_from(&message.model);
        }
        if let Some(usage) = message.usage {
            let tokens = usage.context_tokens() + usage.output_tokens;
            if tokens > 0 {
                self.usage_tokens = Some(tokens);
            }
        }
    }

    /// A typed prompt may open a new topic: close the segment when the prompt
    /// shares little with it (or it has grown long), once it has enough messages.
    fn on_prompt(&mut self, message: &Message, text: &str) {
        // `/exit`, local command output, an interruption: the harness speaking,
        // not a new topic.
        if is_harness_prompt(text) {
            return;
        }
        let prompt_terms = terms(text, MAX_TERMS_PER_TURN);
        let min_messages = 5;
        let switch = match &self.open_segment {
            None => true,
            Some(segment) if segment.activity.messages < min_messages => false,
            Some(segment) => {
                let long = self
                    .assistant_turns
                    .saturating_sub(segment.activity.start_assistant_turn)
                    >= MAX_SEGMENT_TURNS;
                long || (prompt_terms.len() >= 3 && overlap(segment, &prompt_terms) < TOPIC_OVERLAP)
            }
        };
        if switch {
            self.close_segment();
            let mut segment = SegmentState {
                first_prompt: cut(&topic_line(text), 160),
                activity: Activity::starting(
                    message.turn_index,
                    self.assistant_turns + 1,
                    message.timestamp.as_ref(),
                ),
                term_counts: BTreeMap::new(),
                key_terms: Vec::new(),
            };
            // The prompt names the topic: its terms count three times.
            for term in &prompt_terms {
                *segment.term_counts.entry(term.clone()).or_default() += 2;
            }
            self.open_segment = Some(segment);
        }
    }

    /// Closes the open segment; it is kept for summarizing if it is big enough.
    pub fn close_segment(&mut self) {
        let Some(mut segment) = self.open_segment.take() else {
            return;
        };
        if segment.activity.messages < 2 {
            return;
        }
        segment.key_terms = key_terms(&segment, &self.closed_segments, &self.project_terms());
        self.closed_segments.push(segment);
        // Bound the state: very old small segments that never went cold are dropped.
        if self.closed_segments.len() > 200 {
            self.closed_segments.remove(0);
        }
    }

    /// The terms of the project folder's path (`users`, `work`, the repository's
    /// name): every file path of the session holds them, so they name no topic.
    fn project_terms(&self) -> BTreeSet<String> {
        self.cwd
            .as_deref()
            .map(|cwd| terms(&cwd.replace(['/', '\\'], " "), 64))
            .unwrap_or_default()
            .into_iter()
            .collect()
    }

    fn add_recent_terms(&mut self, new_terms: Vec<String>) {
        if new_terms.is_empty() {
            return;
        }
        if self.recent.is_empty() {
            self.recent.push_back(TurnTerms {
                assistant_turn: self.assistant_turns,
                terms: Vec::new(),
            });
        }
        if let Some(turn) = self.recent.back_mut() {
            for term in new_terms {
                if turn.terms.len() >= MAX_TERMS_PER_TURN {
                    break;
                }
                if !turn.terms.contains(&term) {
                    turn.terms.push(term);
                }
            }
        }
    }

    /// TaskCreate/TaskUpdate calls wait for their results; TodoWrite applies at once.
    fn track_tasks(&mut self, message: &Message, turn: u64, timestamp: Option<&String>) {
        for block in &message.content {
            match block {
                Block::ToolUse { id, name, input } => match name.as_str() {
                    "TaskCreate" => {
                        self.uses_task_tools = true;
                        self.pending_creates.insert(
                            id.clone(),
                            PendingCreate {
                                subject: str_field(input, "subject"),
                                description: str_field(input, "description"),
                                assistant_turn: self.assistant_turns,
                                turn,
                                timestamp: timestamp.cloned(),
                            },
                        );
                    }
                    "TaskUpdate" => {
                        self.uses_task_tools = true;
                        let task_id = ["taskId", "id", "task_id"]
                            .iter()
                            .find_map(|k| input.get(*k).and_then(id_text));
                        if let Some(task_id) = task_id {
                            self.pending_updates.insert(
                                id.clone(),
                                PendingUpdate {
                                    task_id,
                                    status: input
                                        .get("status")
                                        .and_then(Value::as_str)
                                        .map(str::to_string),
                                    subject: input
                                        .get("subject")
                                        .and_then(Value::as_str)
                                        .map(str::to_string),
                                    assistant_turn: self.assistant_turns,
                                    timestamp: timestamp.cloned(),
                                },
                            );
                        }
                    }
                    "TodoWrite" => {
                        self.uses_task_tools = true;
                        self.apply_todos(input, turn, timestamp);
                    }
                    _ => {}
                },
                Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    ..
                } => {
                    if let Some(create) = self.pending_creates.remove(tool_use_id) {
                        if !is_error {
                            let id = created_task_id(message.tool_use_result.as_ref(), content);
                            if let Some(id) = id {
                                self.create_task(id, create);
                            }
                        }
                    } else if let Some(update) = self.pending_updates.remove(tool_use_id) {
                        if !is_error {
                            self.apply_update(update);
                        }
                    }
                }
                _ => {}
            }
        }
        // Calls whose result never came (an interrupted turn) are forgotten eventually.
        let horizon = self.assistant_turns.saturating_sub(50);
        self.pending_creates
            .retain(|_, p| p.assistant_turn >= horizon);
        self.pending_updates
            .retain(|_, p| p.assistant_turn >= horizon);
    }

    fn create_task(&mut self, id: String, create: PendingCreate) {
        if self.tasks.iter().any(|t| t.id == id) {
            return;
        }
        self.tasks.push(TaskState {
            id,
            subject: create.subject,
            description: create.description,
            status: "pending".into(),
            source: "TaskCreate".into(),
            created_assistant_turn: create.assistant_turn,
            started_assistant_turn: None,
            completed_assistant_turn: None,
            completed_at: None,
            activity: Activity::starting(
                create.turn,
                create.assistant_turn,
                create.timestamp.as_ref(),
            ),
            summarized: false,
        });
        self.task_list_changed(create.timestamp.as_ref());
    }

    fn apply_update(&mut self, update: PendingUpdate) {
        if update.status.as_deref() == Some("deleted") {
            self.tasks
                .retain(|t| t.id != update.task_id || t.summarized);
            return;
        }
        let now = self.now();
        let since = self.since_task_change.clone();
        let Some(task) = self.tasks.iter_mut().find(|t| t.id == update.task_id) else {
            return;
        };
        if let Some(subject) = update.subject.filter(|s| !s.trim().is_empty()) {
            task.subject = subject;
        }
        if let Some(status) = update.status {
            if set_status(task, &status, now, update.timestamp.as_ref(), &since) {
                self.task_list_changed(update.timestamp.as_ref());
            }
        }
    }

    /// A TodoWrite call: the whole list as it is now. An item whose text changed
    /// in place (same position, old text gone) is the same task renamed; items
    /// dropped from the list before completion are gone.
    fn apply_todos(&mut self, input: &Value, _turn: u64, timestamp: Option<&String>) {
        let Some(todos) = input.get("todos").and_then(Value::as_array) else {
            return;
        };
        let list: Vec<(String, String, String)> = todos
            .iter()
            .map(|todo| (str_field(todo, "content"), str_field(todo, "status")))
            .filter(|(content, _)| !content.trim().is_empty())
            .map(|(content, status)| (todo_id(&content), content, status))
            .collect();
        let listed = |id: &str| list.iter().any(|(i, _, _)| i == id);
        let now = self.now();
        let mut changed = false;
        for (position, (id, content, status)) in list.iter().enumerate() {
            if !self.tasks.iter().any(|t| &t.id == id) {
                let renamed = self
                    .todo_order
                    .get(position)
                    .filter(|old| !listed(old))
                    .and_then(|old| {
                        self.tasks
                            .iter_mut()
                            .find(|t| &t.id == old && t.status != "completed" && !t.summarized)
                    });
                match renamed {
                    Some(task) => {
                        task.id = id.clone();
                        task.subject = content.clone();
                    }
                    None => {
                        self.tasks.push(TaskState {
                            id: id.clone(),
                            subject: content.clone(),
                            description: String::new(),
                            status: "pending".into(),
                            source: "TodoWrite".into(),
                            created_assistant_turn: now.assistant_turn,
                            started_assistant_turn: None,
                            completed_assistant_turn: None,
                            completed_at: None,
                            activity: Activity::starting(now.turn, now.assistant_turn, timestamp),
                            summarized: false,
                        });
                        changed = true;
                    }
                }
            }
            let since = self.since_task_change.clone();
            if let Some(task) = self.tasks.iter_mut().find(|t| &t.id == id) {
                changed |= set_status(task, status, now, timestamp, &since);
            }
        }
        let before = self.tasks.len();
        self.tasks.retain(|t| {
            t.source != "TodoWrite" || t.summarized || t.status == "completed" || listed(&t.id)
        });
        changed |= self.tasks.len() != before;
        self.todo_order = list.into_iter().map(|(id, _, _)| id).collect();
        if changed {
            self.task_list_changed(timestamp);
        }
    }

    /// The task list changed: work from here on belongs to what comes next.
    fn task_list_changed(&mut self, timestamp: Option<&String>) {
        let now = self.now();
        self.since_task_change = Activity::starting(now.turn, now.assistant_turn, timestamp);
    }

    /// The conversation turn and assistant turn now.
    fn now(&self) -> Now {
        Now {
            turn: self.prompts.saturating_sub(1),
            assistant_turn: self.assistant_turns,
        }
    }

    /// The current assistant turn.
    pub fn turn(&self) -> u64 {
        self.assistant_turns
    }

    /// Tasks not yet completed.
    pub fn active_tasks(&self) -> impl Iterator<Item = &TaskState> {
        self.tasks
            .iter()
            .filter(|t| t.status == "pending" || t.status == "in_progress")
    }
}

/// A point in the session: conversation turn and assistant turn.
#[derive(Debug, Clone, Copy)]
struct Now {
    turn: u64,
    assistant_turn: u64,
}

/// Sets a task's status; returns whether it changed. A task's work starts when
/// it is first marked in progress; one completed without that gets the work
/// done since the task list last changed (`since`).
fn set_status(
    task: &mut TaskState,
    status: &str,
    now: Now,
    timestamp: Option<&String>,
    since: &Activity,
) -> bool {
    if status.is_empty() || task.status == status {
        return false;
    }
    task.status = status.to_string();
    match status {
        "in_progress" => {
            if task.started_assistant_turn.is_none() {
                task.started_assistant_turn = Some(now.assistant_turn);
                task.activity = Activity::starting(now.turn, now.assistant_turn, timestamp);
            }
            task.completed_assistant_turn = None;
        }
        "completed" => {
            if task.started_assistant_turn.is_none() {
                task.started_assistant_turn = Some(since.start_assistant_turn);
                task.activity = since.clone();
            }
            task.completed_assistant_turn = Some(now.assistant_turn);
            task.completed_at = timestamp
                .cloned()
                .or_else(|| task.activity.last_timestamp.clone());
            task.activity.end_assistant_turn =
                task.activity.end_assistant_turn.max(now.assistant_turn);
        }
        _ => task.completed_assistant_turn = None,
    }
    true
}

/// The stable id of a TodoWrite item (it has none of its own): a hash of its text.
pub fn todo_id(content: &str) -> String {
    format!(
        "todo-{:08x}",
        xxhash_rust::xxh3::xxh3_64(content.trim().as_bytes()) as u32
    )
}

/// The id TaskCreate gave: `toolUseResult.task.id`, else "Task #N" in the result text.
fn created_task_id(result: Option<&Value>, content: &str) -> Option<String> {
    if let Some(id) = result
        .and_then(|r| r.get("task"))
        .and_then(|t| t.get("id"))
        .and_then(id_text)
    {
        return Some(id);
    }
    let rest = &content[content.find("Task #")? + "Task #".len()..];
    let digits: String = rest
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    (!digits.is_empty()).then_some(digits)
}

/// An id given as a string or a number.
fn id_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn str_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn file_path(input: &Value) -> Option<String> {
    ["file_path", "notebook_path", "path"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty() && p.len() < 1024)
}

/// The words of a tool call that say what it is about: paths, commands,
/// patterns, descriptions; not file contents or edit strings.
fn tool_input_words(input: &Value) -> String {
    let Value::Object(map) = input else {
        return String::new();
    };
    let mut out = String::new();
    for (key, value) in map {
        if matches!(
            key.as_str(),
            "content" | "new_string" | "old_string" | "edits" | "new_source" | "todos"
        ) {
            continue;
        }
        if let Value::String(s) = value {
            out.push_str(&cut(s, 600));
            out.push(' ');
        }
    }
    out
}

fn is_test_command(command: &str) -> bool {
    const TESTS: &[&str] = &[
        "cargo test",
        "cargo nextest",
        "pytest",
        "npm test",
        "npm run test",
        "yarn test",
        "pnpm test",
        "bun test",
        "go test",
        "jest",
        "vitest",
        "mvn test",
        "gradle test",
        "make test",
        "rspec",
        "phpunit",
        "ctest",
        "tox",
        "mix test",
        "dotnet test",
    ];
    TESTS.iter().any(|t| command.contains(t))
}

/// The line of a prompt that names its topic: the first with words, past
/// harness markup such as `<task-notification>` or `<command-name>` tags and
/// markdown heading marks. A first line that only announces what follows
/// ("Implement the following plan:") gets the next line added.
pub fn topic_line(text: &str) -> String {
    let mut lines = text
        .lines()
        .map(words_of_line)
        .filter(|l| l.chars().filter(|c| c.is_alphabetic()).count() >= 3);
    let Some(first) = lines.next() else {
        return String::new();
    };
    if first.ends_with(':') {
        if let Some(next) = lines.next() {
            return format!("{first} {next}");
        }
    }
    first
}

/// A line without leading tags (`<tag>`, `</tag>`, `<tag attr="x">`), what
/// follows a later tag, heading marks and emphasis.
fn words_of_line(line: &str) -> String {
    let mut line = line.trim();
    while line.starts_with('<') {
        match line.find('>') {
            Some(end) => line = line[end + 1..].trim_start(),
            None => break,
        }
    }
    let line = line.split('<').next().unwrap_or("");
    line.trim_start_matches(['#', ' '])
        .trim()
        .trim_matches('*')
        .trim()
        .to_string()
}

/// Whether a prompt is the harness speaking rather than the user: a slash
/// command (`<command-name>/exit</command-name>`), a local command's output, a
/// background task's notice, an interruption marker.
pub fn is_harness_prompt(text: &str) -> bool {
    const TAGS: &[&str] = &[
        "<command-name>",
        "<command-message>",
        "<command-args>",
        "<local-command-",
        "<bash-input>",
        "<bash-stdout>",
        "<bash-stderr>",
        "<task-notification>",
        "<system-reminder>",
        "[request interrupted by user",
        "caveat: the messages below were generated by the user while running local commands",
    ];
    let head = text.trim_start().to_lowercase();
    TAGS.iter().any(|tag| head.starts_with(tag))
}

/// Share of the prompt's terms found among the segment's most frequent terms.
fn overlap(segment: &SegmentState, prompt_terms: &[String]) -> f64 {
    let top: BTreeSet<&str> = top_terms(&segment.term_counts, SEGMENT_PROFILE_TERMS)
        .into_iter()
        .collect();
    let shared = prompt_terms
        .iter()
        .filter(|t| top.contains(t.as_str()))
        .count();
    shared as f64 / prompt_terms.len().max(1) as f64
}

fn top_terms(counts: &BTreeMap<String, u32>, n: usize) -> Vec<&str> {
    let mut all: Vec<(&str, u32)> = counts.iter().map(|(t, c)| (t.as_str(), *c)).collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    all.into_iter().take(n).map(|(t, _)| t).collect()
}

/// The terms that name a segment's topic: frequent in it, rare in the other
/// segments (tf·idf, where a term every segment holds weighs almost nothing),
/// never a part of the project's own path; at most six.
fn key_terms(
    segment: &SegmentState,
    others: &[SegmentState],
    project: &BTreeSet<String>,
) -> Vec<String> {
    let docs = others.len() as f64 + 1.0;
    let mut scored: Vec<(f64, &str)> = segment
        .term_counts
        .iter()
        .filter(|(term, &c)| c >= 2 && !project.contains(term.as_str()))
        .map(|(term, &count)| {
            let df = 1.0
                + others
                    .iter()
                    .filter(|o| o.term_counts.contains_key(term))
                    .count() as f64;
            (f64::from(count) * ((docs + 1.0) / df).ln(), term.as_str())
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(6)
        .map(|(_, t)| t.to_string())
        .collect()
}

fn trim_counts(counts: &mut BTreeMap<String, u32>) {
    if counts.len() <= MAX_SEGMENT_TERMS * 2 {
        return;
    }
    let keep: BTreeSet<String> = top_terms(counts, MAX_SEGMENT_TERMS)
        .into_iter()
        .map(str::to_string)
        .collect();
    counts.retain(|t, _| keep.contains(t));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_line_skips_harness_markup() {
        assert_eq!(
            topic_line("<task-notification>\n<task-id>b1</task-id>\n<summary>Agent finished the review</summary>"),
            "Agent finished the review"
        );
        assert_eq!(
            topic_line("\n  Fix the login bug\nmore"),
            "Fix the login bug"
        );
        assert_eq!(topic_line("<a>\n<b>x</b>"), "");
    }

    #[test]
    fn plans_get_their_title_and_harness_prompts_are_not_topics() {
        assert_eq!(
            topic_line("Implement the following plan:\n\n# Remove transcript_path Storage\n\nmore"),
            "Implement the following plan: Remove transcript_path Storage"
        );
        assert!(is_harness_prompt(
            "<command-name>/exit</command-name>\n<command-message>exit</command-message>"
        ));
        assert!(is_harness_prompt(
            "[Request interrupted by user for tool use]"
        ));
        assert!(!is_harness_prompt("Fix the <b> tag in the header"));
        assert!(is_test_command("cd web && npm test -- --watch=false"));
        assert!(!is_test_command("ls -la"));
    }
}
