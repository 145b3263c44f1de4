//! Live context: the part of a transcript the model still sees.
//!
//! A transcript file keeps everything ever said, but after a compaction the
//! model no longer sees what came before it: Claude Code writes a
//! `compact_boundary` line and, right after it, a user line flagged
//! `isCompactSummary` that stands in for the older history. What is live is
//! therefore the compact summary and everything after the last boundary (the
//! boundary marker itself is bookkeeping, not something the model reads).
//! OpenClaw writes a `compaction` entry that keeps the recent entries from
//! `firstKeptEntryId` on: there the live context is the summary, then those
//! kept entries, then what follows. Eviction and trimming start from there.

use crate::transcript::Message;

/// The messages after the last compaction boundary, and how many came before.
#[derive(Debug, Clone)]
pub struct LiveContext {
    /// The messages the model still sees, in order (all of them when there was no compaction).
    pub messages: Vec<Message>,
    /// Messages (the boundary included) that a compaction already took out of context.
    pub compacted: usize,
}

/// The live part of `messages`: everything after the last `compact_boundary`
/// (its compact summary first), or the last OpenClaw compaction summary with
/// the entries it kept and what follows, or everything when there was no
/// compaction.
pub fn live_context(mut messages: Vec<Message>) -> LiveContext {
    let last = messages.iter().rposition(|m| {
        m.is_compact_boundary || (m.is_compact_summary && m.first_kept_uuid.is_some())
    });
    let Some(at) = last else {
        return LiveContext {
            messages,
            compacted: 0,
        };
    };
    if messages[at].is_compact_boundary {
        let live = messages.split_off(at + 1);
        return LiveContext {
            messages: live,
            compacted: at + 1,
        };
    }
    // OpenClaw: the summary, the kept entries before it, then the rest.
    let kept_from = messages[..at]
        .iter()
        .position(|m| m.uuid.is_some() && m.uuid == messages[at].first_kept_uuid)
        .unwrap_or(at);
    let after = messages.split_off(at + 1);
    let summary = messages.pop();
    let kept = messages.split_off(kept_from);
    let mut live: Vec<Message> = summary.into_iter().chain(kept).collect();
    live.extend(after);
    LiveContext {
        messages: live,
        compacted: kept_from,
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

    #[test]
    fn an_openclaw_compaction_keeps_the_entries_it_names() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("data-samples/transcripts/openclaw-session.jsonl.gz");
        let t = crate::transcript::read_file(&path, None, crate::transcript::ReadFrom::default())
            .unwrap();
        let live = live_context(t.messages);
        // e07 compacted e02-e04 and kept e05 on: summary, e05, e06, then e10.
        let ids: Vec<&str> = live
            .messages
            .iter()
            .filter_map(|m| m.uuid.as_deref())
            .collect();
        assert_eq!(&ids[..4], ["e07", "e05", "e06", "e10"], "{ids:?}");
        assert!(live.messages[0].is_compact_summary);
        assert_eq!(live.compacted, 3);
    }
}
