//! Real transcripts folded into turns, for the benchmark generator.
//!
//! The transcripts are read by the real readers of [`knowledge_db::transcript`] (every
//! format they know, gzipped or not); this module folds their messages into
//! **turns**, the unit the generator summarises:
//! - an assistant turn is one API response (the reader already joins the lines
//!   Claude Code writes for one response);
//! - a user turn is a prompt typed (or pasted) by the person, or text the
//!   harness injected;
//! - a tool turn holds only tool results; results of parallel tool calls that
//!   follow each other are merged into one turn.
//!
//! Sidechain (subagent) messages and compaction markers are left out. The same
//! session can be spread over several files (a later checkpoint repeats the
//! earlier lines), so messages are grouped by session id and de-duplicated by
//! their uuid, keeping the most complete copy. Long texts are cut on the way in,
//! so the whole corpus of turns stays small in memory.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::gen::GenError;
use knowledge_db::transcript::{self, Block, Message};

/// Longest text block kept per turn, in characters.
const MAX_TEXT_CHARS: usize = 8000;
/// Longest tool result kept, in characters (messages render a shorter cut).
const MAX_RESULT_CHARS: usize = 800;
/// Longest rendered tool argument (command, pattern, subject), in characters.
const MAX_ARG_CHARS: usize = 200;
/// Used when a session carries no timestamp at all: 2026-01-01T00:00:00Z.
const FALLBACK_EPOCH: i64 = 1_767_225_600;

/// Who produced a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// What a task-tracking tool call said about tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskEvent {
    /// `TaskCreate{subject, description}`.
    Create { subject: String },
    /// `TaskUpdate{taskId|id|task_id, status}`.
    Update { task_id: String, status: String },
    /// `TodoWrite{todos:[{content, status}]}`: (content, status) pairs.
    Todos(Vec<(String, String)>),
}

/// One `tool_use` block, reduced to what a summary needs.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub name: String,
    /// A one-line rendering of the input: the command, file, pattern, subject…
    pub arg: String,
    pub file: Option<String>,
    pub command: Option<String>,
    pub task: Option<TaskEvent>,
}

impl ToolCall {
    /// Tools that change files (their files count as "modified").
    pub fn edits_files(&self) -> bool {
        matches!(
            self.name.as_str(),
            "Edit" | "MultiEdit" | "Write" | "NotebookEdit"
        )
    }
}

/// One `tool_result` block, labelled with the tool that produced it.
#[derive(Debug, Clone)]
pub struct ToolResult {
    pub tool: String,
    pub file: Option<String>,
    pub text: String,
    pub is_error: bool,
}

impl ToolResult {
    pub fn is_shown(&self) -> bool {
        self.is_error || !self.text.trim().is_empty()
    }
}

/// One turn of a conversation.
#[derive(Debug, Clone)]
pub struct Turn {
    pub role: Role,
    /// The text blocks (thinking excluded), joined by blank lines.
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub results: Vec<ToolResult>,
    /// Unix seconds.
    pub timestamp: i64,
    /// Characters of the original content (before any cut): the "original size".
    pub source_chars: usize,
}

impl Turn {
    /// Whether the turn has anything a reader would see.
    pub fn has_content(&self) -> bool {
        !self.text.trim().is_empty()
            || !self.calls.is_empty()
            || self.results.iter().any(ToolResult::is_shown)
    }

    /// A prompt the person typed (not a tool result).
    pub fn is_request(&self) -> bool {
        self.role == Role::User && !self.text.trim().is_empty()
    }
}

/// One conversation: its id and its turns in order.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    pub turns: Vec<Turn>,
}

/// Everything read from a transcript folder.
#[derive(Debug, Default)]
pub struct Transcripts {
    /// Sessions in order of first appearance (files sorted by path).
    pub sessions: Vec<Session>,
    pub lines: usize,
}

/// Reads every transcript under `dir` (recursively, sorted by path) into sessions.
pub fn read_transcripts(dir: &Path) -> Result<Transcripts, GenError> {
    let files = transcript::find_files(&[dir.to_path_buf()])?;
    if files.is_empty() {
        return Err(GenError::NoTranscripts(dir.to_path_buf()));
    }
    let mut sessions: Vec<SessionMessages> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut lines = 0;
    for path in &files {
        let bytes = transcript::read_bytes(path)?;
        // A file in no format the readers know holds no turns; the folder may
        // hold other JSON.
        let Some(format) = transcript::detect_format(&bytes) else {
            lines += bytes
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .count();
            continue;
        };
        let t =
            transcript::read_slice(path, &bytes, Some(format), transcript::ReadFrom::default())?;
        lines += t.lines;
        for message in t.messages {
            if message.is_sidechain || message.role == transcript::Role::System {
                continue;
            }
            let session = message
                .session_id
                .clone()
                .unwrap_or_else(|| t.session_id.clone());
            let index = *by_id.entry(session.clone()).or_insert_with(|| {
                sessions.push(SessionMessages {
                    id: session,
                    cwd: t.cwd.clone(),
                    messages: Vec::new(),
                    by_uuid: HashMap::new(),
                });
                sessions.len() - 1
            });
            sessions[index].add(message);
        }
    }
    let sessions = sessions
        .into_iter()
        .enumerate()
        .map(|(i, s)| s.into_session(FALLBACK_EPOCH + i as i64 * 3600))
        .filter(|s| !s.turns.is_empty())
        .collect();
    Ok(Transcripts { sessions, lines })
}

/// One session's messages, each once.
struct SessionMessages {
    id: String,
    cwd: Option<String>,
    messages: Vec<Message>,
    by_uuid: HashMap<String, usize>,
}

impl SessionMessages {
    /// Adds a message; a repeat of one already seen (a later checkpoint of the
    /// same session) replaces it only when it holds more (a response cut short
    /// at the end of the earlier file).
    fn add(&mut self, message: Message) {
        let Some(uuid) = message.uuid.clone() else {
            self.messages.push(message);
            return;
        };
        match self.by_uuid.get(&uuid) {
            Some(&i) => {
                if message.content.len() > self.messages[i].content.len() {
                    self.messages[i] = message;
                }
            }
            None => {
                self.by_uuid.insert(uuid, self.messages.len());
                self.messages.push(message);
            }
        }
    }

    fn into_session(self, fallback: i64) -> Session {
        let mut builder = SessionBuilder {
            cwd: self.cwd,
            turns: Vec::new(),
            tools_by_id: HashMap::new(),
            last_timestamp: None,
        };
        for message in &self.messages {
            builder.add(message);
        }
        builder.finish(self.id, fallback)
    }
}

/// Folds messages into turns.
struct SessionBuilder {
    cwd: Option<String>,
    turns: Vec<Turn>,
    tools_by_id: HashMap<String, (String, Option<String>)>,
    last_timestamp: Option<i64>,
}

impl SessionBuilder {
    fn add(&mut self, message: &Message) {
        let role = match message.role {
            transcript::Role::Assistant => Role::Assistant,
            transcript::Role::Tool => Role::Tool,
            transcript::Role::User => Role::User,
            transcript::Role::System => return,
        };
        let timestamp = message
            .timestamp
            .as_deref()
            .and_then(parse_rfc3339)
            .or(self.last_timestamp);
        self.last_timestamp = timestamp;
        let mut turn = Turn {
            role,
            text: String::new(),
            calls: Vec::new(),
            results: Vec::new(),
            timestamp: timestamp.unwrap_or(i64::MIN),
            source_chars: 0,
        };
        for block in &message.content {
            self.add_block(&mut turn, block);
        }
        if turn.role == Role::User && turn.text.trim().is_empty() && !turn.results.is_empty() {
            turn.role = Role::Tool;
        }
        if !turn.has_content() {
            return;
        }
        self.push_or_merge(turn);
    }

    fn add_block(&mut self, turn: &mut Turn, block: &Block) {
        match block {
            Block::Text { text } => {
                turn.source_chars += text.len();
                push_text(&mut turn.text, text);
            }
            Block::ToolUse { id, name, input } => {
                turn.source_chars += name.len() + value_chars(input);
                let call = tool_call(name, input, self.cwd.as_deref());
                self.tools_by_id
                    .insert(id.clone(), (call.name.clone(), call.file.clone()));
                turn.calls.push(call);
            }
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
                name,
            } => {
                turn.source_chars += content.len();
                let (tool, file) = self
                    .tools_by_id
                    .get(tool_use_id)
                    .cloned()
                    .or_else(|| name.clone().map(|n| (n, None)))
                    .unwrap_or_else(|| ("tool".to_string(), None));
                turn.results.push(ToolResult {
                    tool,
                    file,
                    text: truncate_chars(content, MAX_RESULT_CHARS),
                    is_error: *is_error,
                });
            }
            Block::Thinking { .. } | Block::Image { .. } => {}
        }
    }

    /// Results of parallel tool calls that follow each other make one turn.
    fn push_or_merge(&mut self, turn: Turn) {
        if let Some(last) = self.turns.last_mut() {
            if turn.role == Role::Tool && last.role == Role::Tool {
                last.calls.extend(turn.calls);
                last.results.extend(turn.results);
                last.source_chars += turn.source_chars;
                return;
            }
        }
        self.turns.push(turn);
    }

    /// Fills in missing timestamps: the previous turn's, else 30 s apart from
    /// `fallback` when the session has none at all.
    fn finish(mut self, id: String, fallback: i64) -> Session {
        let first_known = self
            .turns
            .iter()
            .map(|t| t.timestamp)
            .find(|&t| t != i64::MIN);
        let start = first_known.unwrap_or(fallback);
        let mut previous = start;
        for (i, turn) in self.turns.iter_mut().enumerate() {
            if turn.timestamp == i64::MIN {
                turn.timestamp = if first_known.is_some() {
                    previous
                } else {
                    start + i as i64 * 30
                };
            }
            previous = turn.timestamp;
        }
        Session {
            id,
            turns: self.turns,
        }
    }
}

fn push_text(out: &mut String, text: &str) {
    let text = text.trim();
    if text.is_empty() || out.len() >= MAX_TEXT_CHARS {
        return;
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(&truncate_chars(
        text,
        MAX_TEXT_CHARS - out.len().min(MAX_TEXT_CHARS),
    ));
}

/// The number of characters in all strings of a JSON value (a size estimate).
fn value_chars(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(value_chars).sum(),
        Value::Object(map) => map.iter().map(|(k, v)| k.len() + value_chars(v)).sum(),
        Value::Null => 0,
        other => other.to_string().len(),
    }
}

fn tool_call(name: &str, input: &Value, cwd: Option<&str>) -> ToolCall {
    let text_of = |key: &str| {
        input
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let file = ["file_path", "path", "notebook_path"]
        .iter()
        .find_map(|k| text_of(k))
        .map(|p| relative_path(p, cwd));
    let command = (name == "Bash")
        .then(|| text_of("command").map(first_line_cut))
        .flatten();
    let task = task_event(name, input);
    let arg = match name {
        "Bash" => command.clone(),
        "Grep" | "Glob" => text_of("pattern").map(first_line_cut),
        "Task" | "Agent" => text_of("description").map(first_line_cut),
        "WebFetch" => text_of("url").map(first_line_cut),
        "WebSearch" => text_of("query").map(first_line_cut),
        "TaskCreate" => text_of("subject").map(first_line_cut),
        "TaskUpdate" => match &task {
            Some(TaskEvent::Update { task_id, status }) => {
                Some(format!("#{task_id} {status}").trim().to_string())
            }
            _ => None,
        },
        "TodoWrite" => match &task {
            Some(TaskEvent::Todos(items)) => Some(format!("{} todos", items.len())),
            _ => None,
        },
        _ => file.clone().or_else(|| first_short_string(input)),
    };
    ToolCall {
        name: name.to_string(),
        arg: arg.or_else(|| file.clone()).unwrap_or_default(),
        file,
        command,
        task,
    }
}

fn task_event(name: &str, input: &Value) -> Option<TaskEvent> {
    let text_of = |key: &str| input.get(key).and_then(Value::as_str).map(str::trim);
    match name {
        "TaskCreate" => text_of("subject")
            .filter(|s| !s.is_empty())
            .map(|s| TaskEvent::Create {
                subject: first_line_cut(s),
            }),
        "TaskUpdate" => {
            let task_id = ["taskId", "id", "task_id"]
                .iter()
                .find_map(|k| match input.get(*k) {
                    Some(Value::String(s)) => Some(s.trim().to_string()),
                    Some(Value::Number(n)) => Some(n.to_string()),
                    _ => None,
                })?;
            Some(TaskEvent::Update {
                task_id,
                status: text_of("status").unwrap_or_default().to_string(),
            })
        }
        "TodoWrite" => {
            let todos = input.get("todos")?.as_array()?;
            let items = todos
                .iter()
                .filter_map(|t| {
                    let content = t.get("content")?.as_str()?.trim();
                    let status = t.get("status").and_then(Value::as_str).unwrap_or("pending");
                    (!content.is_empty()).then(|| (first_line_cut(content), status.to_string()))
                })
                .collect();
            Some(TaskEvent::Todos(items))
        }
        _ => None,
    }
}

fn first_short_string(input: &Value) -> Option<String> {
    input
        .as_object()?
        .values()
        .filter_map(Value::as_str)
        .map(str::trim)
        .find(|s| !s.is_empty())
        .map(first_line_cut)
}

fn relative_path(path: &str, cwd: Option<&str>) -> String {
    let relative = cwd
        .map(|c| c.trim_end_matches('/'))
        .filter(|c| !c.is_empty())
        .and_then(|c| path.strip_prefix(c))
        .and_then(|rest| rest.strip_prefix('/'))
        .filter(|rest| !rest.is_empty());
    relative.unwrap_or(path).to_string()
}

fn first_line_cut(text: &str) -> String {
    truncate_chars(
        text.lines().next().unwrap_or_default().trim(),
        MAX_ARG_CHARS,
    )
}

/// `text` cut to at most `max` characters, with `…` when something was cut.
pub fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some(_) if max == 0 => String::new(),
        Some(_) => {
            let end = text.char_indices().nth(max - 1).map_or(0, |(i, _)| i);
            format!("{}…", text[..end].trim_end())
        }
    }
}

/// RFC 3339 text → Unix seconds.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    time::OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate_chars("héllo wörld", 5), "héll…");
        assert_eq!(truncate_chars("short", 10), "short");
        assert_eq!(truncate_chars("abc", 0), "");
    }

    #[test]
    fn paths_become_relative_to_the_working_directory() {
        assert_eq!(relative_path("/w/p/src/a.rs", Some("/w/p")), "src/a.rs");
        assert_eq!(relative_path("/other/a.rs", Some("/w/p")), "/other/a.rs");
        assert_eq!(relative_path("/w/p", Some("/w/p")), "/w/p");
    }

    #[test]
    fn task_updates_accept_every_id_spelling() {
        for key in ["taskId", "id", "task_id"] {
            let input = serde_json::json!({ key: "3", "status": "completed" });
            assert_eq!(
                task_event("TaskUpdate", &input),
                Some(TaskEvent::Update {
                    task_id: "3".into(),
                    status: "completed".into()
                })
            );
        }
    }

    #[test]
    fn bash_calls_render_their_command() {
        let call = tool_call(
            "Bash",
            &serde_json::json!({"command": "cargo test\necho done"}),
            None,
        );
        assert_eq!(call.arg, "cargo test");
        assert_eq!(call.command.as_deref(), Some("cargo test"));
    }
}
