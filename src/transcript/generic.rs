//! Generic transcripts: one `{role, content, timestamp}` object a line.
//!
//! `content` is a string or a list of blocks (Anthropic or OpenAI spelling);
//! `text` is accepted for `content`, `id`/`uuid` name the message and
//! `session_id` its session. The neutral [`Message`] JSON that `evict` prints is
//! itself this format, so its output can be read back. A file that is one JSON
//! document rather than lines (a list of messages, or an object with a
//! `messages` list, as Gemini CLI writes) is read whole.

use serde_json::Value;

use super::{blocks_from, result_text, str_of, Block, Builder, LineParser, Message, Role};

pub(super) struct Parser;

impl LineParser for Parser {
    fn line(&mut self, value: &Value, out: &mut Builder) {
        match message_of(value) {
            Some(m) => out.push(m),
            None => {
                let kind = value
                    .get("role")
                    .or_else(|| value.get("type"))
                    .and_then(Value::as_str)
                    .unwrap_or("(no role)");
                out.skipped.unknown(kind);
            }
        }
    }
}

/// A generic line as a message, or `None` when it has no known role.
fn message_of(value: &Value) -> Option<Message> {
    let role = value.get("role").and_then(Value::as_str)?;
    let role = Role::parse(role)?;
    let content = value
        .get("content")
        .or_else(|| value.get("text"))
        .unwrap_or(&Value::Null);
    let mut blocks = blocks_from(content);
    if role == Role::Tool && !blocks.iter().any(|b| matches!(b, Block::ToolResult { .. })) {
        // OpenAI style: {"role":"tool","tool_call_id":…,"content":"…"}.
        blocks = vec![Block::ToolResult {
            tool_use_id: str_of(value, "tool_call_id").unwrap_or_default(),
            content: result_text(content),
            is_error: false,
            name: str_of(value, "name"),
        }];
    }
    let mut m: Message = serde_json::from_value(value.clone())
        .ok()
        .unwrap_or_else(|| Message::new(role, Vec::new()));
    m.role = role;
    m.content = blocks;
    // The fields are read one by one too: a line whose content is a plain
    // string is not a whole neutral message, but still names its id and session.
    m.uuid = m
        .uuid
        .or_else(|| str_of(value, "uuid"))
        .or_else(|| id_of(value));
    m.session_id = m
        .session_id
        .or_else(|| str_of(value, "session_id"))
        .or_else(|| str_of(value, "sessionId"));
    m.timestamp = m.timestamp.or_else(|| time_of(value));
    Some(m)
}

fn id_of(value: &Value) -> Option<String> {
    match value.get("id") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

fn time_of(value: &Value) -> Option<String> {
    match value.get("timestamp").or_else(|| value.get("created_at")) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => n.as_i64().map(|secs| {
            // Seconds or milliseconds since the epoch.
            let secs = if secs > 100_000_000_000 {
                secs / 1000
            } else {
                secs
            };
            crate::record::parse::format_time(secs)
        }),
        _ => None,
    }
}

/// Whether the bytes are one JSON document spread over lines (`{` or `[` alone first).
pub(super) fn is_whole_json(bytes: &[u8]) -> bool {
    let first = bytes
        .split(|&b| b == b'\n')
        .map(<[u8]>::trim_ascii)
        .find(|l| !l.is_empty());
    matches!(first, Some(b"{") | Some(b"["))
}

/// Reads a whole-document transcript: a list of messages, or `{messages: [...]}`.
/// Returns whether the document parsed: one that does not may still be being
/// written (or be the first bytes of a JSONL line), so nothing of it counts as read.
pub(super) fn read_whole_json(bytes: &[u8], out: &mut Builder) -> bool {
    out.lines = super::count_lines(bytes) + 1;
    out.at(1, 0);
    let Ok(doc) = serde_json::from_slice::<Value>(bytes) else {
        out.skipped.non_json += 1;
        return false;
    };
    if let Some(id) = str_of(&doc, "sessionId").or_else(|| str_of(&doc, "session_id")) {
        out.session_id = Some(id);
    }
    let items = match &doc {
        Value::Array(items) => items.as_slice(),
        _ => match doc.get("messages").and_then(Value::as_array) {
            Some(items) => items.as_slice(),
            None => {
                out.skipped.unknown("(document without messages)");
                return true;
            }
        },
    };
    for item in items {
        if let Some(m) = message_of(item) {
            out.push(with_session(m, out.session_id.as_deref()));
            continue;
        }
        match item.get("type").and_then(Value::as_str) {
            Some("user") => {
                let m = gemini_message(item, Role::User);
                out.push(with_session(m, out.session_id.as_deref()));
            }
            Some("gemini") => gemini_turn(item, out),
            Some(other) => out.skipped.not_message(other),
            None => out.skipped.unknown("(no role)"),
        }
    }
    true
}

fn with_session(mut m: Message, session: Option<&str>) -> Message {
    if m.session_id.is_none() {
        m.session_id = session.map(str::to_string);
    }
    m
}

fn gemini_message(item: &Value, role: Role) -> Message {
    let mut m = Message::new(
        role,
        blocks_from(item.get("content").unwrap_or(&Value::Null)),
    );
    m.content
        .retain(|b| !matches!(b, Block::Text { text } if text.is_empty()));
    m.uuid = id_of(item);
    m.timestamp = time_of(item);
    m.model = str_of(item, "model");
    m
}

/// A Gemini CLI model turn: its text and tool calls, then one tool message of results.
fn gemini_turn(item: &Value, out: &mut Builder) {
    let mut assistant = gemini_message(item, Role::Assistant);
    let mut results = Vec::new();
    for call in item
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = str_of(call, "id").unwrap_or_default();
        let name = str_of(call, "name").unwrap_or_default();
        assistant.content.push(Block::ToolUse {
            id: id.clone(),
            name: name.clone(),
            input: call.get("args").cloned().unwrap_or(Value::Null),
        });
        let output = call
            .get("result")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("functionResponse")?.get("response"))
            .map(|r| match r.get("output").or_else(|| r.get("error")) {
                Some(v) => result_text(v),
                None => r.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        results.push(Block::ToolResult {
            tool_use_id: id,
            content: output,
            is_error: call.get("status").and_then(Value::as_str) == Some("error"),
            name: Some(name),
        });
    }
    let session = out.session_id.clone();
    let timestamp = assistant.timestamp.clone();
    out.push(with_session(assistant, session.as_deref()));
    if !results.is_empty() {
        let mut tool = Message::new(Role::Tool, results);
        tool.timestamp = timestamp;
        out.push(with_session(tool, session.as_deref()));
    }
}
