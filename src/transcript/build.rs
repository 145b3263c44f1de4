//! The builder every format's reader fills: one line at a time (a line may
//! hold several JSON values glued together by a torn write; bytes that are
//! not UTF-8 are replaced and counted), messages with the file line and byte
//! offset they came from, and the counts of what was skipped; and message
//! content in any of the formats' spellings read into [`Block`]s.

use std::path::Path;

use serde_json::Value;

use super::{invalid_utf8_bytes, Block, Format, Message, Role, Skipped, Transcript};

/// Parses one line, which may hold several JSON values glued together by a torn write.
/// Bytes that are not UTF-8 become U+FFFD (counted), so one bad byte does
/// not lose the message around it.
pub(super) fn parse_line(line: &[u8], parser: &mut dyn LineParser, builder: &mut Builder) {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return;
    }
    let repaired;
    let trimmed = match std::str::from_utf8(trimmed) {
        Ok(_) => trimmed,
        Err(_) => {
            builder.skipped.invalid_utf8_bytes += invalid_utf8_bytes(trimmed);
            repaired = String::from_utf8_lossy(trimmed).into_owned();
            repaired.as_bytes()
        }
    };
    let mut values = serde_json::Deserializer::from_slice(trimmed).into_iter::<Value>();
    let mut read_any = false;
    loop {
        match values.next() {
            Some(Ok(value)) => {
                if read_any {
                    builder.skipped.glued_values += 1;
                }
                read_any = true;
                parser.line(&value, builder);
            }
            Some(Err(_)) => {
                builder.skipped.non_json += 1;
                break;
            }
            None => break,
        }
    }
}

/// One format's reading of a JSON line into the builder.
pub(super) trait LineParser {
    fn line(&mut self, value: &Value, out: &mut Builder);
}

/// Collects messages as lines are read, with where each came from.
pub struct Builder {
    pub(super) messages: Vec<Message>,
    pub(super) titles: Vec<String>,
    pub(super) cwd: Option<String>,
    pub(super) skipped: Skipped,
    pub(super) session_id: Option<String>,
    pub(super) lines: usize,
    pub(super) line: usize,
    pub(super) offset: u64,
    pub(super) prompts_before: u64,
}

impl Builder {
    pub(super) fn new(prompts_before: u64) -> Builder {
        Builder {
            messages: Vec::new(),
            titles: Vec::new(),
            cwd: None,
            skipped: Skipped::default(),
            session_id: None,
            lines: 0,
            line: 0,
            offset: 0,
            prompts_before,
        }
    }

    /// Notes the session's working directory (the first one given wins).
    pub(super) fn saw_cwd(&mut self, cwd: Option<String>) {
        if self.cwd.is_none() {
            self.cwd = cwd.filter(|c| !c.is_empty());
        }
    }

    pub(super) fn at(&mut self, line: usize, offset: u64) {
        self.line = line;
        self.offset = offset;
    }

    /// Adds a message read from the current line.
    pub(super) fn push(&mut self, mut message: Message) {
        message.line = self.line;
        message.byte_offset = self.offset;
        if self.session_id.is_none() {
            self.session_id.clone_from(&message.session_id);
        }
        self.messages.push(message);
    }

    /// The last message, if it continues API response `response_id` (same line group).
    pub(super) fn continuing(
        &mut self,
        response_id: &str,
        sidechain: bool,
    ) -> Option<&mut Message> {
        self.messages.last_mut().filter(|m| {
            m.role == Role::Assistant
                && m.is_sidechain == sidechain
                && m.response_id.as_deref() == Some(response_id)
        })
    }

    pub(super) fn finish(
        mut self,
        path: &Path,
        format: Format,
        stem: String,
        total: usize,
        start: usize,
        end: usize,
    ) -> Transcript {
        let session_id = self.session_id.unwrap_or(stem);
        let mut prompts = self.prompts_before;
        for message in &mut self.messages {
            if message.session_id.is_none() {
                message.session_id = Some(session_id.clone());
            }
            if message.is_prompt() {
                prompts += 1;
            }
            message.turn_index = prompts.saturating_sub(1);
        }
        let sealed = super::seal::seal(&mut self.messages);
        Transcript {
            path: path.to_path_buf(),
            format,
            session_id,
            messages: self.messages,
            titles: self.titles,
            cwd: self.cwd,
            skipped: self.skipped,
            lines: self.lines,
            total_bytes: total as u64,
            start_offset: start as u64,
            end_offset: end as u64,
            prompts_before: self.prompts_before,
            sealed,
        }
    }
}

/// Reads the content of a message given as a string or a list of blocks in any of
/// the formats' spellings (Anthropic, OpenAI, pi). Unknown blocks are dropped.
pub fn blocks_from(content: &Value) -> Vec<Block> {
    match content {
        Value::String(s) => vec![Block::Text { text: s.clone() }],
        Value::Array(items) => items.iter().filter_map(block_from).collect(),
        Value::Null => Vec::new(),
        other => vec![Block::Text {
            text: other.to_string(),
        }],
    }
}

fn block_from(item: &Value) -> Option<Block> {
    let s = |key: &str| item.get(key).and_then(Value::as_str).map(str::to_string);
    if let Value::String(text) = item {
        return Some(Block::Text { text: text.clone() });
    }
    let Some(kind) = item.get("type").and_then(Value::as_str) else {
        // Gemini-style parts: `{"text": "…"}` without a type.
        return s("text").map(|text| Block::Text { text });
    };
    match kind {
        "text" | "input_text" | "output_text" => Some(Block::Text { text: s("text")? }),
        "thinking" | "reasoning" => Some(Block::Thinking {
            thinking: s("thinking").or_else(|| s("text")).unwrap_or_default(),
        }),
        "redacted_thinking" => None,
        "tool_use" | "toolCall" | "tool_call" | "function_call" => Some(Block::ToolUse {
            id: s("id").or_else(|| s("call_id")).unwrap_or_default(),
            name: s("name").unwrap_or_default(),
            input: item
                .get("input")
                .or_else(|| item.get("arguments"))
                .cloned()
                .unwrap_or(Value::Null),
        }),
        "tool_result" | "toolResult" => Some(Block::ToolResult {
            tool_use_id: s("tool_use_id")
                .or_else(|| s("toolCallId"))
                .unwrap_or_default(),
            content: result_text(item.get("content").unwrap_or(&Value::Null)),
            is_error: item
                .get("is_error")
                .or_else(|| item.get("isError"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            name: s("name").or_else(|| s("toolName")),
        }),
        "image" => Some(Block::Image {
            media_type: item
                .get("source")
                .and_then(|src| src.get("media_type"))
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| s("mimeType")),
        }),
        _ => None,
    }
}

/// A tool result's content as text: a string, or the text of its blocks.
pub fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => s.clone(),
                _ => match item.get("type").and_then(Value::as_str) {
                    Some("text") => item
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    Some("image") => "[image]".to_string(),
                    _ => item.to_string(),
                },
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A string field of a JSON object.
pub(super) fn str_of(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}
