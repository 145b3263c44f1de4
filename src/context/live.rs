//! Live context: the part of a transcript the model still sees.
//!
//! A transcript file keeps everything ever said, but after a compaction the
//! model no longer sees what came before it: Claude Code writes a
//! `compact_boundary` line and, right after it, a user line flagged
//! `isCompactSummary` that stands in for the older history. What is live is
//! therefore the compact summary and everything after the last boundary (the
//! boundary marker itself is bookkeeping, not something the model reads).
//! Eviction and trimming start from there.

use crate::transcript::Message;

/// The messages after the last compaction boundary, and how many came before.
#[derive(Debug, Clone)]
pub struct LiveContext {
    pub messages: Vec<Message>,
    /// Messages (the boundary included) that a compaction already took out of context.
    pub compacted: usize,
}

/// The live part of `messages`: everything after the last `compact_boundary`
/// (its compact summary first), or everything when there was no compaction.
pub fn live_context(mut messages: Vec<Message>) -> LiveContext {
    match messages.iter().rposition(|m| m.is_compact_boundary) {
        Some(boundary) => {
            let live = messages.split_off(boundary + 1);
            LiveContext {
                messages: live,
                compacted: boundary + 1,
            }
        }
        None => LiveContext {
            messages,
            compacted: 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Block, Role};

    fn text(role: Role, t: &str) -> Message {
        Message::new(role, vec![Block::Text { text: t.into() }])
    }

    #[test]
    fn starts_after_the_last_boundary() {
        let mut boundary = text(Role::System, "Conversation compacted");
        boundary.is_compact_boundary = true;
        let mut summary = text(Role::User, "summary 2");
        summary.is_compact_summary = true;
        let m = vec![
            text(Role::User, "a"),
            boundary.clone(),
            text(Role::User, "b"),
            boundary,
            summary,
            text(Role::User, "c"),
        ];
        let live = live_context(m.clone());
        assert_eq!(live.compacted, 4);
        let texts: Vec<String> = live.messages.iter().map(Message::text).collect();
        assert_eq!(texts, ["summary 2", "c"]);
        let whole = live_context(m[..1].to_vec());
        assert_eq!((whole.compacted, whole.messages.len()), (0, 1));
    }
}
