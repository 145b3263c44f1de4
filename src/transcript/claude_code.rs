//! Claude Code session JSONL (`~/.claude/projects/<project>/<session>.jsonl`).
//!
//! Each line is an envelope (`type`, `uuid`, `parentUuid`, `sessionId`,
//! `timestamp`, `isSidechain`, …) around an API `message`. One API response is
//! written as several assistant lines sharing `message.id` and `requestId` (one
//! content block each, usage repeated): consecutive ones are joined into one
//! message. Tool results arrive as user lines holding only `tool_result` blocks
//! and become `tool` messages, with `toolUseResult` kept. A compaction is a
//! `system` line of subtype `compact_boundary` followed by a user line flagged
//! `isCompactSummary`. Lines of other types carry no message and are counted.

use serde_json::Value;

use super::{blocks_from, str_of, Block, Builder, LineParser, Message, Role, Usage};

/// Line types Claude Code writes that hold no conversation message.
const NOT_MESSAGES: &[&str] = &[
    "file-history-snapshot",
    "queue-operation",
    "attachment",
    "progress",
    "pr-link",
    "last-prompt",
];

#[derive(Default)]
pub(super) struct Parser;

impl LineParser for Parser {
    fn line(&mut self, value: &Value, out: &mut Builder) {
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "user" | "assistant" => message_line(value, kind == "assistant", out),
            "system" => system_line(value, out),
            "summary" => match str_of(value, "summary") {
                Some(title) => out.titles.push(title),
                None => out.skipped.not_message("summary"),
            },
            "custom-title" => match str_of(value, "customTitle").or_else(|| str_of(value, "title"))
            {
                Some(title) => out.titles.push(title),
                None => out.skipped.not_message("custom-title"),
            },
            k if NOT_MESSAGES.contains(&k) => out.skipped.not_message(k),
            "" => out.skipped.unknown("(no type)"),
            other => out.skipped.unknown(other),
        }
    }
}

fn envelope(value: &Value, role: Role, content: Vec<Block>) -> Message {
    let mut m = Message::new(role, content);
    m.timestamp = str_of(value, "timestamp");
    m.uuid = str_of(value, "uuid");
    m.parent_uuid = str_of(value, "parentUuid").or_else(|| str_of(value, "logicalParentUuid"));
    m.session_id = str_of(value, "sessionId");
    m.is_sidechain = flag(value, "isSidechain");
    m.is_meta = flag(value, "isMeta");
    m.is_compact_summary = flag(value, "isCompactSummary");
    m.agent_id = str_of(value, "agentId");
    m
}

fn flag(value: &Value, key: &str) -> bool {
    value.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn message_line(value: &Value, assistant: bool, out: &mut Builder) {
    out.saw_cwd(str_of(value, "cwd"));
    let Some(api) = value.get("message").filter(|m| m.is_object()) else {
        out.skipped.not_message(if assistant {
            "assistant (no message)"
        } else {
            "user (no message)"
        });
        return;
    };
    let content = blocks_from(api.get("content").unwrap_or(&Value::Null));
    if !assistant {
        let only_results = !content.is_empty()
            && content
                .iter()
                .all(|b| matches!(b, Block::ToolResult { .. }));
        let role = if only_results { Role::Tool } else { Role::User };
        let mut m = envelope(value, role, content);
        m.tool_use_result = value.get("toolUseResult").filter(|v| !v.is_null()).cloned();
        out.push(m);
        return;
    }
    let usage = api.get("usage").and_then(usage_of);
    let response_id = match (str_of(api, "id"), str_of(value, "requestId")) {
        (Some(id), Some(request)) => Some(format!("{id}:{request}")),
        (Some(id), None) => Some(id),
        (None, request) => request,
    };
    let sidechain = flag(value, "isSidechain");
    if let Some(id) = &response_id {
        if let Some(previous) = out.continuing(id, sidechain) {
            previous.content.extend(content);
            // Usage is repeated on each line; the last one has the final output count.
            if usage.is_some() {
                previous.usage = usage;
            }
            return;
        }
    }
    let mut m = envelope(value, Role::Assistant, content);
    m.response_id = response_id;
    m.model = str_of(api, "model");
    m.usage = usage;
    out.push(m);
}

fn system_line(value: &Value, out: &mut Builder) {
    let subtype = value.get("subtype").and_then(Value::as_str).unwrap_or("");
    if subtype != "compact_boundary" {
        out.skipped.not_message(&format!("system:{subtype}"));
        return;
    }
    let meta = value.get("compactMetadata");
    let trigger = meta.and_then(|m| str_of(m, "trigger"));
    let pre_tokens = meta
        .and_then(|m| m.get("preTokens"))
        .and_then(Value::as_u64);
    let mut text = str_of(value, "content").unwrap_or_else(|| "Conversation compacted".into());
    match (trigger, pre_tokens) {
        (Some(t), Some(n)) => text.push_str(&format!(" ({t}, {n} tokens before)")),
        (Some(t), None) => text.push_str(&format!(" ({t})")),
        (None, Some(n)) => text.push_str(&format!(" ({n} tokens before)")),
        (None, None) => {}
    }
    let mut m = envelope(value, Role::System, vec![Block::Text { text }]);
    m.is_compact_boundary = true;
    out.push(m);
}

/// Anthropic usage (`input_tokens`, `cache_read_input_tokens`, …).
fn usage_of(usage: &Value) -> Option<Usage> {
    let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    usage.is_object().then(|| Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
        cache_read_input_tokens: n("cache_read_input_tokens"),
        cache_creation_input_tokens: n("cache_creation_input_tokens"),
    })
}
