//! Agent transcripts, read into one neutral model.
//!
//! Coding agents write their conversations as JSONL, each in its own dialect:
//! Claude Code (`~/.claude/projects/…/<session>.jsonl`), OpenClaw (pi session
//! format v3) and a plain `{role, content, timestamp}` form. This room reads all
//! of them (gzipped or not) into a [`Transcript`] of [`Message`]s with a role
//! (system, user, assistant, tool), content [`Block`]s that keep tool calls and
//! tool results intact (name, id, input JSON; tool_use_id, text, is_error, and
//! Claude Code's `toolUseResult`), timestamps, ids, flags and usage figures.
//!
//! The formats are not stable interfaces, so reading is forgiving: a line that
//! is not JSON, or whose type is unknown, is skipped and counted, never fatal.
//! Reading can resume at a byte offset, so a transcript that grew is read only
//! from where the last read stopped.

mod build;
pub mod claude_code;
pub mod generic;
pub mod ingest;
pub mod openclaw;
mod seal;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bounded::Limit;
use crate::error::{Error, Result};
pub use build::{blocks_from, result_text, Builder};
use build::{parse_line, str_of, LineParser};

/// Who speaks in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt (`developer` in some formats), compaction markers
    /// and context notes.
    System,
    /// The person's prompts, and text the harness injects in their name.
    User,
    /// The model.
    Assistant,
    /// Tool results (Claude Code writes them as user lines; OpenClaw as `toolResult`).
    Tool,
}

impl Role {
    /// The role's name: `system`, `user`, `assistant` or `tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Reads the role names the formats use (`toolResult`, `human`, `gemini`, …).
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "system" | "developer" => Some(Role::System),
            "user" | "human" => Some(Role::User),
            "assistant" | "ai" | "model" | "gemini" => Some(Role::Assistant),
            "tool" | "toolResult" | "tool_result" | "function" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Plain text, from the user or the model.
    Text {
        /// The text, exactly as written.
        text: String,
    },
    /// The model's reasoning (extended thinking).
    Thinking {
        /// The reasoning, as written.
        thinking: String,
    },
    /// A tool call: its id, the tool's name and the input exactly as given.
    ToolUse {
        /// The call's id, which its result names as `tool_use_id`.
        id: String,
        /// The tool's name.
        name: String,
        /// The tool's input, exactly as given.
        input: Value,
    },
    /// A tool's answer to the call `tool_use_id`; block-array content is joined as text.
    ToolResult {
        /// The id of the call this result answers.
        tool_use_id: String,
        /// The output as text; empty when the format gave none.
        #[serde(default)]
        content: String,
        /// Whether the tool reported a failure.
        #[serde(default, skip_serializing_if = "is_false")]
        is_error: bool,
        /// The tool's name, when the format says it (OpenClaw).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// An image; only that it was there is kept, not its data.
    Image {
        /// Its MIME type (e.g. `image/png`), when the format says it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Token figures an API reported for one response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens neither read from nor written to the prompt cache.
    pub input_tokens: u64,
    /// Tokens the response generated.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: u64,
}

impl Usage {
    /// The size of the prompt this response saw: input plus cache reads and writes.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens
    }
}

/// One message of a conversation, in the neutral model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// The content blocks, in order.
    pub content: Vec<Block>,
    /// When the message was written, as the format writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The format's own id of the message (Claude Code `uuid`, OpenClaw entry `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The id of the message this one follows (Claude Code `parentUuid`, OpenClaw `parentId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_uuid: Option<String>,
    /// The session the message belongs to (set on every message read from a file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// One API response spread over several lines shares this (`message.id:requestId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The model that wrote the message, when the format says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Token figures the API reported for this response, when the format gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Written in a subagent's side chain, not the main conversation (Claude Code `isSidechain`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_sidechain: bool,
    /// Claude Code `isMeta`: text the harness injected, not typed by the user.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_meta: bool,
    /// A summary that replaced older history after a compaction.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_compact_summary: bool,
    /// The marker line of a compaction (`compact_boundary`); older history ends here.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_compact_boundary: bool,
    /// On an OpenClaw compaction summary: the first older entry the compaction
    /// kept (`firstKeptEntryId`); the live context is the summary, the entries
    /// from this one on, and what follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_kept_uuid: Option<String>,
    /// The subagent that wrote this message (Claude Code `agentId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Claude Code's structured tool output (`toolUseResult`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_result: Option<Value>,
    /// Conversation turn: the number of user prompts before this message's prompt.
    #[serde(default)]
    pub turn_index: u64,
    /// 1-based line of the source file where the message starts (0 when unknown).
    #[serde(default)]
    pub line: usize,
    /// Byte offset of that line in the (decompressed) source.
    #[serde(default)]
    pub byte_offset: u64,
}

impl Message {
    /// A message with just a role and content; every other field empty.
    pub fn new(role: Role, content: Vec<Block>) -> Message {
        Message {
            role,
            content,
            timestamp: None,
            uuid: None,
            parent_uuid: None,
            session_id: None,
            response_id: None,
            model: None,
            usage: None,
            is_sidechain: false,
            is_meta: false,
            is_compact_summary: false,
            is_compact_boundary: false,
            first_kept_uuid: None,
            agent_id: None,
            tool_use_result: None,
            turn_index: 0,
            line: 0,
            byte_offset: 0,
        }
    }

    /// The message as plain text: what a model reads and what search indexes.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if !out.is_empty() {
                out.push('\n');
            }
            match block {
                Block::Text { text } => out.push_str(text),
                Block::Thinking { thinking } => out.push_str(thinking),
                Block::ToolUse { name, input, .. } => {
                    out.push_str(&format!("[tool_use {name}] "));
                    out.push_str(&tool_input_text(input));
                }
                Block::ToolResult {
                    content, is_error, ..
                } => {
                    out.push_str(if *is_error {
                        "[tool_result error] "
                    } else {
                        "[tool_result] "
                    });
                    out.push_str(content);
                }
                Block::Image { .. } => out.push_str("[image]"),
            }
        }
        out
    }

    /// Ids of the tool calls this message makes.
    pub fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// Ids of the tool calls this message answers.
    pub fn tool_result_ids(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
    }

    /// Names of the tools called (or answered, when the result names its tool).
    pub fn tool_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for block in &self.content {
            let name = match block {
                Block::ToolUse { name, .. } => Some(name),
                Block::ToolResult { name, .. } => name.as_ref(),
                _ => None,
            };
            if let Some(name) = name {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        names
    }

    /// File paths the message's tool calls and results touch.
    pub fn files(&self) -> Vec<String> {
        let mut files = Vec::new();
        let mut add = |path: &str| {
            let path = path.trim();
            if !path.is_empty() && path.len() < 1024 && !files.iter().any(|f| f == path) {
                files.push(path.to_string());
            }
        };
        for block in &self.content {
            if let Block::ToolUse { input, .. } = block {
                for key in ["file_path", "notebook_path", "filePath", "path"] {
                    if let Some(path) = input.get(key).and_then(Value::as_str) {
                        add(path);
                    }
                }
            }
        }
        if let Some(result) = &self.tool_use_result {
            for key in ["filePath", "file_path"] {
                if let Some(path) = result.get(key).and_then(Value::as_str) {
                    add(path);
                }
            }
            if let Some(path) = result
                .get("file")
                .and_then(|f| f.get("filePath"))
                .and_then(Value::as_str)
            {
                add(path);
            }
        }
        files
    }

    /// Shell commands the message runs (tool inputs with a `command`).
    pub fn commands(&self) -> Vec<String> {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { input, .. } => input.get("command").and_then(Value::as_str),
                _ => None,
            })
            .map(str::to_string)
            .collect()
    }

    /// The first lines of failed tool results.
    pub fn error_lines(&self) -> Vec<String> {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::ToolResult {
                    content,
                    is_error: true,
                    ..
                } => content.lines().find(|l| !l.trim().is_empty()),
                _ => None,
            })
            .map(|l| l.chars().take(300).collect())
            .collect()
    }

    /// A prompt typed by the user (not a tool result, injected text or summary,
    /// nor the task a subagent was given: that is part of the user's turn).
    pub fn is_prompt(&self) -> bool {
        self.role == Role::User
            && !self.is_meta
            && !self.is_compact_summary
            && !self.is_sidechain
            && self.content.iter().any(|b| matches!(b, Block::Text { .. }))
    }

    /// The subagent this message belongs to or answers for: its own `agentId`,
    /// else the one a `Task` tool result names (`toolUseResult.agentId`).
    pub fn subagent_id(&self) -> Option<&str> {
        self.agent_id
            .as_deref()
            .or_else(|| self.tool_use_result.as_ref()?.get("agentId")?.as_str())
    }
}

/// A tool call's input as text: the value alone when there is one, else compact JSON.
fn tool_input_text(input: &Value) -> String {
    match input {
        Value::Object(map) if map.len() == 1 => match map.values().next() {
            Some(Value::String(s)) => s.clone(),
            _ => input.to_string(),
        },
        Value::String(s) => s.clone(),
        _ => input.to_string(),
    }
}

/// The transcript dialects this room reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Claude Code (`~/.claude/projects/…/<session>.jsonl`).
    ClaudeCode,
    /// OpenClaw (pi session format v3).
    Openclaw,
    /// Plain `{role, content, timestamp}` lines, or one whole JSON document.
    Generic,
}

impl Format {
    /// The format's name: `claude-code`, `openclaw` or `generic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Openclaw => "openclaw",
            Format::Generic => "generic",
        }
    }
}

/// Lines that did not become messages, by reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// Lines that are not JSON (torn writes, log noise).
    pub non_json: usize,
    /// JSON lines of a type this reader does not know, by type.
    pub unknown_types: BTreeMap<String, usize>,
    /// Known lines that carry no message (progress, snapshots, hook summaries…), by type.
    pub not_messages: BTreeMap<String, usize>,
    /// Extra JSON values found glued onto one line (a torn write); each was read.
    pub glued_values: usize,
    /// Bytes that were not UTF-8, each run replaced by U+FFFD; the lines
    /// holding them were read, not skipped.
    #[serde(default)]
    pub invalid_utf8_bytes: usize,
}

impl Skipped {
    /// Lines skipped for being non-JSON or of an unknown type.
    pub fn skipped_lines(&self) -> usize {
        self.non_json + self.unknown_types.values().sum::<usize>()
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &Skipped) {
        self.non_json += other.non_json;
        self.glued_values += other.glued_values;
        self.invalid_utf8_bytes += other.invalid_utf8_bytes;
        for (k, v) in &other.unknown_types {
            *self.unknown_types.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.not_messages {
            *self.not_messages.entry(k.clone()).or_default() += v;
        }
    }

    fn unknown(&mut self, kind: &str) {
        *self.unknown_types.entry(kind.to_string()).or_default() += 1;
    }

    fn not_message(&mut self, kind: &str) {
        *self.not_messages.entry(kind.to_string()).or_default() += 1;
    }
}

/// A transcript read into the neutral model.
#[derive(Debug, Clone, Serialize)]
pub struct Transcript {
    /// The file read, as given.
    pub path: PathBuf,
    /// The format it was read as.
    pub format: Format,
    /// The session id the file names (header or lines), else the file's stem.
    pub session_id: String,
    /// The messages read, in order.
    pub messages: Vec<Message>,
    /// Session titles (Claude Code `summary` lines, `custom-title`).
    pub titles: Vec<String>,
    /// The working directory the session ran in, when the format says it.
    pub cwd: Option<String>,
    /// Lines that did not become messages, by reason.
    pub skipped: Skipped,
    /// Lines read (from `start_offset`).
    pub lines: usize,
    /// Bytes of the (decompressed) source.
    pub total_bytes: u64,
    /// Byte offset where reading started.
    pub start_offset: u64,
    /// Byte offset just past the last complete (newline-terminated) line read.
    pub end_offset: u64,
    /// Prompts seen before the first message read (for resumed reads).
    pub prompts_before: u64,
    /// Tool outputs and writes replaced whole as the transcript was read,
    /// secrets by the command or file they came from (see `seal`).
    #[serde(skip_serializing_if = "crate::privacy::Findings::is_empty")]
    pub sealed: crate::privacy::Findings,
}

impl Transcript {
    /// Number of tool calls in the transcript.
    pub fn tool_calls(&self) -> usize {
        self.messages.iter().map(|m| m.tool_use_ids().count()).sum()
    }

    /// Whether this is a subagent's own transcript: every message is on a side chain.
    pub fn is_subagent(&self) -> bool {
        !self.messages.is_empty() && self.messages.iter().all(|m| m.is_sidechain)
    }

    /// Gives a subagent's messages the turn of the parent session they belong
    /// to, so a session's turn indices stay ordered across its files (a
    /// subagent's file counts no user prompts of its own, and would otherwise
    /// put everything it did at turn 0). The turn is that of a parent message
    /// naming the same subagent (its lines in the parent file, the `Task`
    /// result), else of the last parent message written at or before each
    /// message. Does nothing without anchors.
    pub fn align_subagent_turns(&mut self, parent: &[TurnAnchor]) {
        if parent.is_empty() {
            return;
        }
        let agent = self.messages.iter().find_map(|m| m.agent_id.clone());
        let named = agent.as_deref().and_then(|agent| {
            parent
                .iter()
                .find(|a| a.agent_id.as_deref() == Some(agent))
                .map(|a| a.turn)
        });
        let mut by_time: Vec<&TurnAnchor> =
            parent.iter().filter(|a| a.timestamp.is_some()).collect();
        by_time.sort_by(|a, b| a.timestamp.cmp(&b.timestamp).then(a.turn.cmp(&b.turn)));
        let last_turn = parent.iter().map(|a| a.turn).max().unwrap_or(0);
        for message in &mut self.messages {
            message.turn_index = named.unwrap_or_else(|| match &message.timestamp {
                Some(at) => {
                    let before = by_time.partition_point(|a| a.timestamp.as_ref() <= Some(at));
                    before.checked_sub(1).map_or_else(
                        || by_time.first().map_or(0, |a| a.turn),
                        |i| by_time[i].turn,
                    )
                }
                None => last_turn,
            });
        }
    }
}

/// Where a parent session was at one message: the turn, when, and which
/// subagent the message names (see [`Transcript::align_subagent_turns`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnAnchor {
    /// When the message was written, if the format says.
    pub timestamp: Option<String>,
    /// The message's turn index.
    pub turn: u64,
    /// The subagent the message names (its own `agentId`, or a `Task` result's), if any.
    pub agent_id: Option<String>,
}

impl TurnAnchor {
    /// The anchors of a parent session's own messages (not its subagents', whose
    /// turns are what is being worked out).
    pub fn of(messages: &[Message]) -> Vec<TurnAnchor> {
        messages
            .iter()
            .filter(|m| !m.is_sidechain)
            .map(|m| TurnAnchor {
                timestamp: m.timestamp.clone(),
                turn: m.turn_index,
                agent_id: m.subagent_id().map(str::to_string),
            })
            .collect()
    }
}

/// The session file a Claude Code subagent transcript belongs to:
/// `<project>/<session>/subagents/agent-<id>.jsonl` is part of
/// `<project>/<session>.jsonl` (or `.jsonl.gz`), when that file exists.
pub fn parent_session_file(path: &Path) -> Option<PathBuf> {
    let subagents = path.parent()?;
    if subagents.file_name()? != "subagents" {
        return None;
    }
    let session_dir = subagents.parent()?;
    let session = session_dir.file_name()?.to_str()?;
    let project = session_dir.parent()?;
    [".jsonl", ".jsonl.gz"]
        .iter()
        .map(|suffix| project.join(format!("{session}{suffix}")))
        .find(|p| p.is_file())
}

/// Where to start reading, and what came before (for resumed reads).
#[derive(Debug, Clone, Default)]
pub struct ReadFrom {
    /// Byte offset in the (decompressed) file to start reading at; 0 reads it whole.
    pub offset: u64,
    /// User prompts before `offset`, so turn indices continue.
    pub prompts_before: u64,
    /// The session id read before `offset` (e.g. from an OpenClaw header).
    pub session_id: Option<String>,
}

/// Reads a transcript file (`.gz` is decompressed), detecting the format when `None`.
pub fn read_file(path: &Path, format: Option<Format>, from: ReadFrom) -> Result<Transcript> {
    let bytes = read_bytes(path)?;
    read_slice(path, &bytes, format, from)
}

/// The limit on a transcript's (decompressed) size when the caller has no
/// store config: `limits.max_file_bytes`' default.
pub const DEFAULT_LIMIT: Limit = Limit {
    bytes: crate::store::DEFAULT_MAX_FILE_BYTES,
    setting: "limits.max_file_bytes",
};

/// The file's bytes, decompressed when it is gzipped (by magic number), within
/// [`DEFAULT_LIMIT`]; see [`read_bytes_within`].
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    read_bytes_within(path, DEFAULT_LIMIT)
}

/// The file's bytes, decompressed when it is gzipped (by magic number). Only a
/// regular file is read (a FIFO or `/dev/zero` is refused before it is
/// opened for reading); one larger than `limit` is refused from its size,
/// before it is read, and decompression stops once it passes `limit`.
pub fn read_bytes_within(path: &Path, limit: Limit) -> Result<Vec<u8>> {
    crate::bounded::read_whole(path, limit, true)
}

/// Reads a transcript from bytes already in memory.
pub fn read_slice(
    path: &Path,
    bytes: &[u8],
    format: Option<Format>,
    from: ReadFrom,
) -> Result<Transcript> {
    let format = match format {
        Some(f) => f,
        None => detect_format(bytes).ok_or_else(|| {
            Error::Usage(format!(
                "{}: cannot tell the transcript format (no Claude Code, OpenClaw or {{role, content}} line in the first lines); use --format",
                path.display()
            ))
        })?,
    };
    let stem = file_stem(path);
    let mut builder = Builder::new(from.prompts_before);
    builder.session_id = from.session_id;
    let start = (from.offset as usize).min(bytes.len());
    if start == 0 && generic::is_whole_json(bytes) {
        let parsed = generic::read_whole_json(bytes, &mut builder);
        // A document that does not parse yet (still being written, or the first
        // bytes of a JSONL line) is read again from the start next time.
        let end = if parsed { bytes.len() } else { 0 };
        return Ok(builder.finish(path, format, stem, bytes.len(), 0, end));
    }
    let mut parser: Box<dyn LineParser> = match format {
        Format::ClaudeCode => Box::new(claude_code::Parser),
        Format::Openclaw => Box::new(openclaw::Parser::default()),
        Format::Generic => Box::new(generic::Parser),
    };
    let mut offset = start;
    let mut line_no = count_lines(&bytes[..start]);
    let mut end = start;
    while offset < bytes.len() {
        let Some(len) = bytes[offset..].iter().position(|&b| b == b'\n') else {
            // A last line without a newline may still be being written: read it if it is
            // complete JSON, but resume before it next time.
            line_no += 1;
            builder.lines += 1;
            let line = &bytes[offset..];
            builder.at(line_no, offset as u64);
            parse_line(line, parser.as_mut(), &mut builder);
            break;
        };
        line_no += 1;
        builder.lines += 1;
        let line = &bytes[offset..offset + len];
        builder.at(line_no, offset as u64);
        parse_line(line, parser.as_mut(), &mut builder);
        offset += len + 1;
        end = offset;
    }
    Ok(builder.finish(path, format, stem, bytes.len(), start, end))
}

/// Bytes of `bytes` that are not part of valid UTF-8.
fn invalid_utf8_bytes(bytes: &[u8]) -> usize {
    bytes.utf8_chunks().map(|chunk| chunk.invalid().len()).sum()
}

fn count_lines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let name = name
        .strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".json"))
        .unwrap_or(name);
    name.to_string()
}

/// Guesses the format from the first JSON lines of a transcript.
pub fn detect_format(bytes: &[u8]) -> Option<Format> {
    if generic::is_whole_json(bytes) {
        return Some(Format::Generic);
    }
    for line in bytes.split(|&b| b == b'\n').take(50) {
        // Read like `parse_line` reads it: bytes that are not UTF-8 replaced.
        let line = String::from_utf8_lossy(line.trim_ascii());
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "session" && value.get("version").is_some() {
            return Some(Format::Openclaw);
        }
        if kind == "message" && value.get("message").and_then(|m| m.get("role")).is_some() {
            return Some(Format::Openclaw);
        }
        if value.get("sessionId").is_some()
            || value.get("leafUuid").is_some()
            || matches!(kind, "file-history-snapshot" | "queue-operation")
        {
            return Some(Format::ClaudeCode);
        }
        if value.get("role").is_some() {
            return Some(Format::Generic);
        }
    }
    None
}

/// Transcript files under `paths`: files as given, folders searched recursively
/// for `.jsonl`, `.jsonl.gz` and `.json` (but not `.meta.json`: Claude Code
/// writes `subagents/agent-<id>.meta.json`, the subagent's type and
/// description, beside each subagent's transcript), sorted by path. Symlinks are
/// followed, but each folder is entered once (see `crate::bounded::walk`), so
/// links that form a loop do not make the walk endless.
pub fn find_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            out.extend(crate::bounded::walk(path, false, &is_transcript_name)?);
        } else if path.exists() {
            out.push(path.clone());
        } else {
            return Err(Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            ));
        }
    }
    Ok(out)
}

fn is_transcript_name(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".jsonl")
        || name.ends_with(".jsonl.gz")
        || (name.ends_with(".json") && !name.ends_with(".meta.json"))
}

#[cfg(test)]
mod tests;
