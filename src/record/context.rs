//! Conversation context: what a record replies to.
//!
//! A turn of a conversation often makes sense only next to the one before it:
//! "Here's a pic of it, I painted that last year" answers "Do you still paint
//! sunrises?". Searched alone, the answer has none of the question's words and
//! little of its meaning. So a message or note that is part of a conversation
//! carries the text of the turn before it as its **context**: indexed for BM25
//! with its content and embedded after its own text, but never shown as its text
//! (snippets and `get` show the record as given).
//!
//! Context comes from the caller (a `context` string in the record's JSON) or is
//! linked when records are added: a message or note that follows another of the
//! same namespace and the same conversation (its `session_id`, else
//! `metadata.session`) in one batch gets that record's text. Measured on LoCoMo
//! (README, Evaluation): Recall@10 0.613 -> 0.729 for BM25, 0.509 -> 0.562 for
//! vectors, 0.686 -> 0.752 for the default hybrid. The turn after a record was
//! also tried and did not help (hybrid 0.689 with it alone, 0.721 with both).
//!
//! Agent transcripts (`ingest`, `evict`) are linked by role instead
//! (`crate::transcript::ingest`): the assistant's words carry the user's
//! latest prompt, and tool calls and outputs carry nothing. Linking every
//! message to the one before it, as `add` does, let a short tool result carry
//! its call's words and outrank the call: measured by `benches/evict-replay.py`
//! on 858 messages evicted from the 20 largest real sessions, the top-10 hit
//! rate fell from 96.2% to 92.5% and the first-rank rate from 78.2% to 45.8%.

use serde_json::Value;

use super::{Kind, Record};

/// Longest context kept, in characters: a paragraph, so that a long previous
/// message (a tool output, a pasted log) does not bury the record's own words.
pub const MAX_CONTEXT_CHARS: usize = 600;

/// `text` cut to [`MAX_CONTEXT_CHARS`] on a character boundary.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_CONTEXT_CHARS) {
        Some((i, _)) => text[..i].to_string(),
        None => text.to_string(),
    }
}

/// Gives every message and note without a context of its own the text of the
/// record just before it, when both belong to the same conversation. Records
/// are taken in the order given (the order of the input files and lines).
pub fn link_previous_turns(records: &mut [Record]) {
    // namespace, conversation, text, id
    let mut previous: Option<(String, String, String, String)> = None;
    for record in records.iter_mut() {
        if !matches!(record.kind, Kind::Message | Kind::Note) {
            previous = None;
            continue;
        }
        let conversation = conversation_of(record);
        if record.context.is_none() {
            if let (Some(conv), Some((ns, prev_conv, text, id))) = (&conversation, &previous) {
                if *ns == record.namespace && prev_conv == conv && !text.trim().is_empty() {
                    record.context = Some(clip(text));
                    record.context_from = Some(id.clone());
                }
            }
        }
        previous = conversation.map(|c| {
            (
                record.namespace.clone(),
                c,
                record.fields.content.clone(),
                record.id.clone(),
            )
        });
    }
}

/// The conversation a record belongs to: its `session_id`, else
/// `metadata.session` (a string or a number), else none.
fn conversation_of(record: &Record) -> Option<String> {
    if let Some(session) = &record.fields.session_id {
        return Some(session.clone());
    }
    match record.source.get("metadata").and_then(|m| m.get("session")) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Origin;
    use crate::record::{parse_record, ParseOptions};
    use serde_json::json;

    fn parse(value: Value) -> Record {
        parse_record(value, &Origin::file("t"), &ParseOptions::default()).unwrap()
    }

    #[test]
    fn a_turn_gets_the_previous_turn_of_its_conversation() {
        let mut records = vec![
            parse(
                json!({"id": "a1", "text": "Do you still paint sunrises?", "metadata": {"session": 1}}),
            ),
            parse(
                json!({"id": "a2", "text": "Yes, I painted one last year", "metadata": {"session": 1}}),
            ),
            parse(json!({"id": "b1", "text": "New day", "metadata": {"session": 2}})),
            parse(json!({"id": "n", "text": "no conversation"})),
            parse(json!({"id": "n2", "text": "none either"})),
        ];
        link_previous_turns(&mut records);
        let contexts: Vec<Option<&str>> = records.iter().map(|r| r.context.as_deref()).collect();
        assert_eq!(
            contexts,
            [None, Some("Do you still paint sunrises?"), None, None, None]
        );
        assert_eq!(records[1].context_from.as_deref(), Some("a1"));
        assert_eq!(records[2].context_from, None);
    }

    #[test]
    fn namespaces_kinds_and_given_contexts_are_respected() {
        let mut records = vec![
            parse(
                json!({"kind": "message", "role": "user", "session_id": "s", "turn_index": 1, "text": "first"}),
            ),
            parse(
                json!({"kind": "message", "role": "assistant", "session_id": "s", "turn_index": 2, "text": "second", "context": "given"}),
            ),
            parse(
                json!({"kind": "message", "role": "user", "session_id": "s", "turn_index": 3, "text": "third", "namespace": "other"}),
            ),
            parse(
                json!({"segment_id": "seg", "compressed_content": "a segment", "session_id": "s"}),
            ),
            parse(
                json!({"kind": "message", "role": "user", "session_id": "s", "turn_index": 4, "text": "fourth"}),
            ),
        ];
        link_previous_turns(&mut records);
        let contexts: Vec<Option<&str>> = records.iter().map(|r| r.context.as_deref()).collect();
        assert_eq!(contexts, [None, Some("given"), None, None, None]);
    }

    #[test]
    fn long_contexts_are_clipped_on_a_character_boundary() {
        let long = "é".repeat(MAX_CONTEXT_CHARS + 50);
        assert_eq!(clip(&long).chars().count(), MAX_CONTEXT_CHARS);
        assert_eq!(clip("short"), "short");
    }
}
