//! One roll of the context: truncate stale tool outputs, then evict.
//!
//! Tool outputs are most of a coding agent's context, and an old `cargo test`
//! log or file dump is rarely read again. Replacing those with placeholders
//! first (see [`super::truncate`]) means fewer whole messages have to leave
//! when the window fills up. This module chains the two steps and says what
//! the store must receive before the new context is used: the full version of
//! every evicted or truncated message, once each, under the record id that the
//! note and the placeholders name.

use std::collections::HashMap;

use serde::Serialize;

use super::evict::{evict_with_note_suffix, EvictError, EvictOptions, Eviction};
use super::truncate::{truncate_tool_outputs, TruncateOptions, Truncation};
use crate::transcript::Message;

/// What truncation did in one roll.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TruncationSummary {
    /// Tool outputs replaced by placeholders.
    pub outputs_truncated: usize,
    /// Messages with at least one output replaced.
    pub messages_truncated: usize,
    /// Tokens of all the messages before truncation.
    pub tokens_before: usize,
    /// Tokens of all the messages after truncation.
    pub tokens_after: usize,
    /// Record ids of the truncated messages (each holds the full output once stored).
    pub record_ids: Vec<String>,
}

impl TruncationSummary {
    /// The summary of truncation `t`.
    pub fn of(t: &Truncation) -> TruncationSummary {
        TruncationSummary {
            outputs_truncated: t.outputs_truncated,
            messages_truncated: t.originals.len(),
            tokens_before: t.tokens_before,
            tokens_after: t.tokens_after,
            record_ids: t.originals.iter().map(|(id, _)| id.clone()).collect(),
        }
    }
}

/// A truncation followed by an eviction.
#[derive(Debug, Clone)]
pub struct Rolled {
    /// The eviction that followed; its `kept` is the new context.
    pub eviction: Eviction,
    /// What truncation did; `None` when no truncation was asked for.
    pub truncation: Option<TruncationSummary>,
    /// Full versions of every evicted or truncated message, each once with its
    /// record id, in transcript order: store these before using `eviction.kept`.
    pub to_store: Vec<(String, Message)>,
}

/// Truncates tool outputs (when `truncate` is given), then evicts the oldest
/// messages until the rest fit `options`. `cost` gives a message's tokens,
/// `record_id` the store id of a message.
pub fn roll_context(
    messages: Vec<Message>,
    options: &EvictOptions,
    truncate: Option<&TruncateOptions>,
    cost: &dyn Fn(&Message) -> usize,
    record_id: &dyn Fn(&Message) -> String,
) -> Result<Rolled, EvictError> {
    let Some(truncate) = truncate else {
        let eviction = evict_with_note_suffix(messages, options, cost, "")?;
        let to_store = eviction
            .evicted
            .iter()
            .map(|m| (record_id(m), m.clone()))
            .collect();
        return Ok(Rolled {
            eviction,
            truncation: None,
            to_store,
        });
    };
    let t = truncate_with_cost(messages, truncate, cost, record_id);
    let summary = TruncationSummary::of(&t);
    let tokens_before = summary.tokens_before;
    let suffix = if summary.outputs_truncated == 0 {
        String::new()
    } else {
        format!(
            " {} tool outputs truncated ({} tokens saved); each placeholder names the record holding the full output.",
            summary.outputs_truncated,
            tokens_before.saturating_sub(summary.tokens_after)
        )
    };
    let eviction = evict_with_note_suffix(t.messages, options, cost, &suffix)?;
    let to_store = full_versions(&eviction.evicted, &eviction.kept, t.originals, record_id);
    Ok(Rolled {
        eviction,
        truncation: Some(summary),
        to_store,
    })
}

/// [`truncate_tool_outputs`] with text counted by the message cost function
/// (as a one-block message), so truncation and eviction count alike.
pub fn truncate_with_cost(
    messages: Vec<Message>,
    options: &TruncateOptions,
    cost: &dyn Fn(&Message) -> usize,
    record_id: &dyn Fn(&Message) -> String,
) -> Truncation {
    let count = |text: &str| {
        cost(&Message::new(
            crate::transcript::Role::Tool,
            vec![crate::transcript::Block::Text { text: text.into() }],
        ))
    };
    truncate_tool_outputs(messages, options, &count, record_id)
}

/// What the store must receive after `dropped` left a context and `originals`
/// (record id, unchanged message) were truncated: every dropped message in full
/// (the original of a truncated one), then the truncated ones still `kept`; one
/// entry per record id.
pub fn full_versions(
    dropped: &[Message],
    kept: &[Message],
    originals: Vec<(String, Message)>,
    record_id: &dyn Fn(&Message) -> String,
) -> Vec<(String, Message)> {
    let mut full: HashMap<String, Message> = originals.into_iter().collect();
    let mut out = Vec::with_capacity(dropped.len() + full.len());
    for m in dropped {
        let id = record_id(m);
        let original = full.remove(&id).unwrap_or_else(|| m.clone());
        out.push((id, original));
    }
    for m in kept {
        let id = record_id(m);
        if let Some(original) = full.remove(&id) {
            out.push((id, original));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Block, Role};
    use serde_json::json;

    fn pair(i: usize, output: &str) -> [Message; 2] {
        let mut call = Message::new(
            Role::Assistant,
            vec![Block::ToolUse {
                id: format!("c{i}"),
                name: "Bash".into(),
                input: json!({"command": format!("make {i}")}),
            }],
        );
        call.uuid = Some(format!("call{i}"));
        let mut result = Message::new(
            Role::Tool,
            vec![Block::ToolResult {
                tool_use_id: format!("c{i}"),
                content: output.into(),
                is_error: false,
                name: None,
            }],
        );
        result.uuid = Some(format!("result{i}"));
        [call, result]
    }

    fn words(m: &Message) -> usize {
        m.text().split_whitespace().count()
    }

    #[test]
    fn truncation_first_means_fewer_evictions() {
        let mut m = Vec::new();
        for i in 0..12 {
            m.extend(pair(i, &"log line ".repeat(100)));
        }
        let options = |window| EvictOptions {
            context_window: window,
            reserved_output: 0,
            target: 0.8,
            min_keep: 4,
            overhead: 0,
        };
        let id = |m: &Message| format!("s:{}", m.uuid.clone().unwrap_or_default());
        let truncate = TruncateOptions::default();
        // 12 outputs of ~200 words: truncating the 7 older than 5 steps makes them fit.
        let plain = roll_context(m.clone(), &options(1500), None, &words, &id).unwrap();
        let rolled = roll_context(m.clone(), &options(1500), Some(&truncate), &words, &id).unwrap();
        assert!(!plain.eviction.evicted.is_empty());
        assert!(rolled.eviction.evicted.is_empty());
        let summary = rolled.truncation.clone().unwrap();
        assert_eq!(
            summary.outputs_truncated, 7,
            "the results older than 5 steps"
        );
        assert_eq!(rolled.to_store.len(), 7);
        // In a smaller window messages go too, and the note says what was truncated.
        let rolled = roll_context(m, &options(1000), Some(&truncate), &words, &id).unwrap();
        let note = rolled.eviction.note.clone().unwrap();
        assert!(note.contains("7 tool outputs truncated"), "{note}");
        assert!(note.ends_with(']'));
        assert!(rolled.eviction.tokens_after <= rolled.eviction.target_tokens);
        // Every truncated or evicted message is stored once, in full.
        let ids: std::collections::HashSet<&str> =
            rolled.to_store.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids.len(), rolled.to_store.len());
        for rid in &summary.record_ids {
            assert!(ids.contains(rid.as_str()));
        }
        for m in &rolled.eviction.evicted {
            assert!(ids.contains(id(m).as_str()));
        }
        assert!(rolled
            .to_store
            .iter()
            .all(|(_, m)| !m.text().contains("[tool output truncated")));
    }
}
