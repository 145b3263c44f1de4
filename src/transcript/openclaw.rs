//! OpenClaw transcripts: pi session format v3
//! (`~/.openclaw/agents/<agent>/sessions/<session>.jsonl`).
//!
//! The first line is a `session` header (`version`, `id`, `cwd`); every later
//! entry has `id`, `parentId` and `timestamp`. `message` entries hold a role
//! (`user`, `assistant`, `toolResult`) with blocks `text`, `thinking`,
//! `toolCall{id,name,arguments}` and `image`; a `compaction` entry holds the
//! summary that replaced older history. Model and thinking-level changes,
//! labels and extension data carry no message and are counted.

use serde_json::Value;

use super::{blocks_from, result_text, str_of, Block, Builder, LineParser, Message, Role, Usage};

const NOT_MESSAGES: &[&str] = &[
    "model_change",
    "thinking_level_change",
    "custom",
    "label",
    "session_info",
];

#[derive(Default)]
pub(super) struct Parser {
    session_id: Option<String>,
    model: Option<String>,
}

impl LineParser for Parser {
    fn line(&mut self, value: &Value, out: &mut Builder) {
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "session" => {
                self.session_id = str_of(value, "id");
                out.session_id.clone_from(&self.session_id);
                out.saw_cwd(str_of(value, "cwd"));
            }
            "message" => self.message(value, out),
            "compaction" | "branch_summary" => {
                let Some(summary) = str_of(value, "summary") else {
                    out.skipped.not_message(kind);
                    return;
                };
                let mut m = self.entry(value, Role::User, vec![Block::Text { text: summary }]);
                m.is_compact_summary = kind == "compaction";
                m.is_meta = kind == "branch_summary";
                if m.is_compact_summary {
                    m.first_kept_uuid = str_of(value, "firstKeptEntryId");
                }
                out.push(m);
            }
            "custom_message" => {
                let content = blocks_from(value.get("content").unwrap_or(&Value::Null));
                let mut m = self.entry(value, Role::User, content);
                m.is_meta = true;
                out.push(m);
            }
            "model_change" => {
                self.model = str_of(value, "modelId");
                out.skipped.not_message(kind);
            }
            k if NOT_MESSAGES.contains(&k) => out.skipped.not_message(k),
            "" => out.skipped.unknown("(no type)"),
            other => out.skipped.unknown(other),
        }
    }
}

impl Parser {
    fn entry(&self, value: &Value, role: Role, content: Vec<Block>) -> Message {
        let mut m = Message::new(role, content);
        m.uuid = str_of(value, "id");
        m.parent_uuid = str_of(value, "parentId");
        m.timestamp = str_of(value, "timestamp");
        m.session_id.clone_from(&self.session_id);
        m
    }

    fn message(&mut self, value: &Value, out: &mut Builder) {
        let Some(api) = value.get("message").filter(|m| m.is_object()) else {
            out.skipped.not_message("message (no message)");
            return;
        };
        let role_name = api.get("role").and_then(Value::as_str).unwrap_or("");
        let Some(role) = Role::parse(role_name) else {
            out.skipped.unknown(&format!("message:{role_name}"));
            return;
        };
        let content = if role == Role::Tool {
            vec![Block::ToolResult {
                tool_use_id: str_of(api, "toolCallId").unwrap_or_default(),
                content: result_text(api.get("content").unwrap_or(&Value::Null)),
                is_error: api.get("isError").and_then(Value::as_bool).unwrap_or(false),
                name: str_of(api, "toolName"),
            }]
        } else {
            blocks_from(api.get("content").unwrap_or(&Value::Null))
        };
        let mut m = self.entry(value, role, content);
        if role == Role::Assistant {
            m.model = str_of(api, "model").or_else(|| self.model.clone());
            m.usage = api.get("usage").and_then(usage_of);
        }
        if role == Role::Tool {
            m.tool_use_result = api.get("details").filter(|v| !v.is_null()).cloned();
        }
        out.push(m);
    }
}

/// pi usage: `{input, output, cacheRead, cacheWrite, totalTokens, cost}`.
fn usage_of(usage: &Value) -> Option<Usage> {
    let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    usage.is_object().then(|| Usage {
        input_tokens: n("input"),
        output_tokens: n("output"),
        cache_read_input_tokens: n("cacheRead"),
        cache_creation_input_tokens: n("cacheWrite"),
    })
}
