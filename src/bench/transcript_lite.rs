//! A small, forgiving reader of Claude Code session transcripts, just enough for
//! the benchmark generator.
//!
//! A transcript is a JSONL file (optionally gzipped) with one event per line. Only
//! `user` and `assistant` lines matter here; every other line type, sidechain
//! (subagent) lines and lines that are not JSON at all are skipped. The lines are
//! folded into **turns**:
//! - an assistant turn is one API response, which Claude Code writes as several
//!   lines sharing `message.id` (one per content block);
//! - a user turn is a prompt typed (or pasted) by the person;
//! - a tool turn is a user line that only carries `tool_result` blocks; results
//!   of parallel tool calls that follow each other are merged into one turn.
//!
//! The same session can be spread over several files (a later checkpoint repeats
//! the earlier lines), so lines are grouped by `sessionId` and de-duplicated by
//! their `uuid`. Long texts are cut on the way in, so the whole corpus of turns
//! stays small in memory.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use serde::Deserialize;
use serde_json::Value;

use super::gen::GenError;

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

/// Reads every `*.jsonl` and `*.jsonl.gz` file under `dir` (recursively, sorted by
/// path) into sessions.
pub fn read_transcripts(dir: &Path) -> Result<Transcripts, GenError> {
    let files = find_transcript_files(dir)?;
    if files.is_empty() {
        return Err(GenError::NoTranscripts(dir.to_path_buf()));
    }
    let mut collector = Collector::default();
    let mut lines = 0;
    for path in &files {
        lines += read_one_file(path, &mut collector)?;
    }
    Ok(Transcripts {
        sessions: collector.finish(),
        lines,
    })
}

/// Transcript files under `dir`, sorted by path so every run sees the same order.
pub fn find_transcript_files(dir: &Path) -> Result<Vec<PathBuf>, GenError> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| GenError::read(&folder, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| GenError::read(&folder, e))?;
            let path = entry.path();
            let file_type = entry.file_type().map_err(|e| GenError::read(&path, e))?;
            if file_type.is_dir() {
                pending.push(path);
            } else if is_transcript_name(&path) && path.is_file() {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

fn is_transcript_name(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name.ends_with(".jsonl") || name.ends_with(".jsonl.gz")
}

/// Reads one file line by line; returns the number of lines read.
fn read_one_file(path: &Path, collector: &mut Collector) -> Result<usize, GenError> {
    let file = File::open(path).map_err(|e| GenError::read(path, e))?;
    let gzipped = path.extension().is_some_and(|e| e == "gz");
    let reader: Box<dyn Read> = if gzipped {
        Box::new(MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let fallback_session = session_name_from_path(path);
    let mut buf = Vec::new();
    let mut lines = 0;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| GenError::read(path, e))?;
        if n == 0 {
            break;
        }
        lines += 1;
        // Not JSON, or JSON of an unexpected shape: skipped, as the format is not stable.
        if let Ok(line) = serde_json::from_slice::<RawLine>(buf.trim_ascii()) {
            collector.add(line, &fallback_session);
        }
    }
    Ok(lines)
}

fn session_name_from_path(path: &Path) -> String {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("session");
    name.trim_end_matches(".gz")
        .trim_end_matches(".jsonl")
        .to_string()
}

// ---------------------------------------------------------------------------
// The raw line shapes (only the fields used; everything else is ignored).

#[derive(Deserialize)]
struct RawLine {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
    uuid: Option<String>,
    timestamp: Option<String>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<bool>,
    cwd: Option<String>,
    message: Option<RawMessage>,
}

#[derive(Deserialize)]
struct RawMessage {
    id: Option<String>,
    content: Option<RawContent>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawContent {
    Text(String),
    Blocks(Vec<RawBlock>),
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawBlock {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    id: Option<String>,
    name: Option<String>,
    input: Option<Value>,
    tool_use_id: Option<String>,
    content: Option<Value>,
    is_error: Option<bool>,
}

// ---------------------------------------------------------------------------
// Folding lines into sessions and turns.

#[derive(Default)]
struct Collector {
    sessions: Vec<SessionBuilder>,
    by_id: HashMap<String, usize>,
    seen_uuids: HashSet<String>,
}

impl Collector {
    fn add(&mut self, line: RawLine, fallback_session: &str) {
        let role = match line.kind.as_deref() {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            _ => return,
        };
        if line.is_sidechain == Some(true) {
            return;
        }
        if let Some(uuid) = &line.uuid {
            if !self.seen_uuids.insert(uuid.clone()) {
                return; // repeated by a later checkpoint of the same session
            }
        }
        let session_id = line
            .session_id
            .clone()
            .unwrap_or_else(|| fallback_session.to_string());
        let index = match self.by_id.get(&session_id) {
            Some(&i) => i,
            None => {
                self.sessions.push(SessionBuilder::new(session_id.clone()));
                self.by_id.insert(session_id, self.sessions.len() - 1);
                self.sessions.len() - 1
            }
        };
        self.sessions[index].add(role, line);
    }

    fn finish(self) -> Vec<Session> {
        self.sessions
            .into_iter()
            .enumerate()
            .map(|(i, b)| b.finish(FALLBACK_EPOCH + i as i64 * 3600))
            .filter(|s| !s.turns.is_empty())
            .collect()
    }
}

struct SessionBuilder {
    id: String,
    cwd: Option<String>,
    turns: Vec<Turn>,
    /// `message.id` of the last turn when it is an assistant turn.
    last_message_id: Option<String>,
    /// tool_use id → (tool name, file) so results can be labelled.
    tools_by_id: HashMap<String, (String, Option<String>)>,
    last_timestamp: Option<i64>,
}

impl SessionBuilder {
    fn new(id: String) -> Self {
        SessionBuilder {
            id,
            cwd: None,
            turns: Vec::new(),
            last_message_id: None,
            tools_by_id: HashMap::new(),
            last_timestamp: None,
        }
    }

    fn add(&mut self, role: Role, line: RawLine) {
        if self.cwd.is_none() {
            self.cwd = line.cwd.filter(|c| !c.is_empty());
        }
        let timestamp = line
            .timestamp
            .as_deref()
            .and_then(parse_rfc3339)
            .or(self.last_timestamp);
        self.last_timestamp = timestamp;
        let Some(message) = line.message else { return };
        let mut turn = Turn {
            role,
            text: String::new(),
            calls: Vec::new(),
            results: Vec::new(),
            timestamp: timestamp.unwrap_or(i64::MIN),
            source_chars: 0,
        };
        match message.content {
            Some(RawContent::Text(text)) => {
                turn.source_chars += text.len();
                push_text(&mut turn.text, &text);
            }
            Some(RawContent::Blocks(blocks)) => {
                for block in blocks {
                    self.add_block(&mut turn, block);
                }
            }
            None => {}
        }
        if role == Role::User && turn.text.trim().is_empty() && !turn.results.is_empty() {
            turn.role = Role::Tool;
        }
        if !turn.has_content() {
            return;
        }
        self.push_or_merge(turn, message.id);
    }

    fn add_block(&mut self, turn: &mut Turn, block: RawBlock) {
        match block.kind.as_str() {
            "text" => {
                let text = block.text.unwrap_or_default();
                turn.source_chars += text.len();
                push_text(&mut turn.text, &text);
            }
            "tool_use" => {
                let name = block.name.unwrap_or_else(|| "tool".to_string());
                let input = block.input.unwrap_or(Value::Null);
                turn.source_chars += name.len() + value_chars(&input);
                let call = tool_call(&name, &input, self.cwd.as_deref());
                if let Some(id) = block.id {
                    self.tools_by_id
                        .insert(id, (call.name.clone(), call.file.clone()));
                }
                turn.calls.push(call);
            }
            "tool_result" => {
                let content = block.content.unwrap_or(Value::Null);
                turn.source_chars += value_chars(&content);
                let (tool, file) = block
                    .tool_use_id
                    .and_then(|id| self.tools_by_id.get(&id).cloned())
                    .unwrap_or_else(|| ("tool".to_string(), None));
                turn.results.push(ToolResult {
                    tool,
                    file,
                    text: truncate_chars(&result_text(&content), MAX_RESULT_CHARS),
                    is_error: block.is_error.unwrap_or(false),
                });
            }
            _ => {} // thinking, image, unknown blocks
        }
    }

    fn push_or_merge(&mut self, turn: Turn, message_id: Option<String>) {
        if let Some(last) = self.turns.last_mut() {
            let same_response = turn.role == Role::Assistant
                && last.role == Role::Assistant
                && message_id.is_some()
                && message_id == self.last_message_id;
            let parallel_results = turn.role == Role::Tool && last.role == Role::Tool;
            if same_response || parallel_results {
                push_text(&mut last.text, &turn.text);
                last.calls.extend(turn.calls);
                last.results.extend(turn.results);
                last.source_chars += turn.source_chars;
                return;
            }
        }
        self.last_message_id = if turn.role == Role::Assistant {
            message_id
        } else {
            None
        };
        self.turns.push(turn);
    }

    /// Fills in missing timestamps: from the first known one, else from `fallback`.
    fn finish(mut self, fallback: i64) -> Session {
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
            id: self.id,
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

/// The text of a `tool_result` content: a string, or the text of its blocks.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map(str::to_string),
                Some("image") => Some("[image]".to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
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
