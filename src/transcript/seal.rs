//! Tool outputs that are secrets by where they came from, replaced as the
//! transcript is read (see [`crate::privacy::provenance`]).
//!
//! A transcript keeps each tool call (its command or path) and, under the
//! call's id, its result. Reading pairs them: the result of a call that
//! prints secrets (`printenv DB_PASSWORD`, `kubectl get secret … | base64
//! -d`, a Read of `master.key`) becomes one placeholder, in its content
//! block and in Claude Code's structured copy of it (`toolUseResult`, whose
//! `filePath` also names a Read's file when the call was read earlier); and
//! what a call writes into a secret's file (`Write` of `.pgpass`) becomes one
//! too. Every reader of transcripts gets this (ingest, the hooks' state,
//! capture, evict, the raw turns `memory_get` serves), before any rule or
//! store sees the text.

use std::collections::HashMap;

use serde_json::Value;

use super::{Block, Message};
use crate::privacy::provenance::{self, SECRET_FILE};
use crate::privacy::Findings;

/// The file a structured tool result says it read (Claude Code's Read:
/// `{"file": {"filePath": …}}`; others: `filePath`, `file_path`).
fn result_path(result: &Value) -> Option<&str> {
    result
        .get("file")
        .and_then(|f| f.get("filePath"))
        .or_else(|| result.get("filePath"))
        .or_else(|| result.get("file_path"))
        .and_then(Value::as_str)
}

/// Seals `messages` in place (see the module doc); what it replaced.
pub(super) fn seal(messages: &mut [Message]) -> Findings {
    let mut calls: HashMap<String, &'static str> = HashMap::new();
    let mut found = Findings::default();
    let count = |found: &mut Findings, kind: &str, n: u64| {
        if n > 0 {
            *found.kinds.entry(kind.to_string()).or_default() += n;
        }
    };
    for message in messages.iter_mut() {
        let read_file = message
            .tool_use_result
            .as_ref()
            .and_then(result_path)
            .filter(|path| provenance::is_secret_file(path))
            .map(|_| SECRET_FILE);
        let mut sealed_kind = None;
        for block in &mut message.content {
            match block {
                Block::ToolUse { id, name, input } => {
                    if let Some(kind) = provenance::secret_output(name, input) {
                        calls.insert(id.clone(), kind);
                    }
                    if provenance::writes_secret_file(name, input) {
                        let n = provenance::seal_written(input);
                        count(&mut found, SECRET_FILE, n);
                    }
                }
                Block::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => {
                    let kind = calls.get(tool_use_id.as_str()).copied().or(read_file);
                    if let Some(kind) = kind {
                        sealed_kind = Some(kind);
                        if !provenance::keeps(kind, content) {
                            *content = provenance::placeholder(kind);
                            count(&mut found, kind, 1);
                        }
                    }
                }
                _ => {}
            }
        }
        if let (Some(kind), Some(result)) = (sealed_kind, message.tool_use_result.as_mut()) {
            // Counted once with its content block: it is the same output.
            provenance::seal_value(result, kind);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Role;
    use serde_json::json;

    #[test]
    fn a_secret_printing_call_and_its_result_are_paired() {
        let call = Message::new(
            Role::Assistant,
            vec![Block::ToolUse {
                id: "t1".into(),
                name: "Bash".into(),
                input: json!({"command": "printenv DB_PASSWORD"}),
            }],
        );
        let mut result = Message::new(
            Role::User,
            vec![Block::ToolResult {
                tool_use_id: "t1".into(),
                content: "Xk29fjq83nfa".into(),
                is_error: false,
                name: None,
            }],
        );
        result.tool_use_result =
            Some(json!({"stdout": "Xk29fjq83nfa", "stderr": "", "interrupted": false}));
        let mut messages = vec![call, result];
        let found = seal(&mut messages);
        assert_eq!(found.total(), 1);
        let text = serde_json::to_string(&messages).unwrap();
        assert!(!text.contains("Xk29fjq83nfa"), "{text}");
        assert!(text.contains("[REDACTED secret-command-output]"));
    }

    #[test]
    fn a_read_result_is_judged_by_its_path_without_its_call() {
        let mut result = Message::new(
            Role::User,
            vec![Block::ToolResult {
                tool_use_id: "t9".into(),
                content: "     1\t8f7e6d5c4b3a29180716f5e4d3c2b1a0".into(),
                is_error: false,
                name: None,
            }],
        );
        result.tool_use_result = Some(json!({"type": "text", "file": {
            "filePath": "/app/config/master.key", "content": "8f7e6d5c4b3a29180716f5e4d3c2b1a0", "numLines": 1}}));
        let mut messages = vec![result];
        seal(&mut messages);
        let text = serde_json::to_string(&messages).unwrap();
        assert!(!text.contains("8f7e6d5c"), "{text}");
        assert!(
            text.contains("/app/config/master.key"),
            "the path stays: {text}"
        );
    }
}
