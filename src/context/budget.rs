//! The real prompt: the messages plus what the transcript does not hold.
//!
//! An agent sends more than its conversation with every request: the system
//! prompt, tool definitions (Claude Code with a few MCP servers: 40k+ tokens),
//! memory files. None of it is in the transcript, yet it takes the same
//! window. A transcript with usage figures says how large each prompt really
//! was (`input + cache reads + cache writes` of a response is the prompt that
//! response saw), so the difference between that and our count of the
//! messages the response saw is the overhead: everything outside the messages,
//! as the model's own tokenizer counts it. Eviction budgets against messages
//! plus overhead, so a session whose messages count 49.5k but whose prompt was
//! 95.4k is treated as the 95.4k it is.

use serde::Serialize;

use crate::transcript::Message;

/// What a transcript's usage figures say about its prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReportedPrompt {
    /// The prompt size the last response reported (input + cache reads + cache writes).
    pub reported_tokens: usize,
    /// Our count of the messages that response saw.
    pub counted_tokens: usize,
    /// The difference: the system prompt, tool definitions and anything else
    /// sent outside the messages (never below 0: an over-counting estimate can
    /// exceed a small prompt).
    pub overhead_tokens: usize,
    /// The message (index into the transcript) whose usage was read.
    pub message: usize,
}

/// The overhead measured at the last response with usage figures of the main
/// conversation (a subagent's responses report their own, smaller prompts).
/// The response saw the messages since the compaction before it (its summary
/// included, the boundary marker not), counted with `cost`. `None` when the
/// transcript reports no usage.
pub fn reported_prompt(
    messages: &[Message],
    cost: &dyn Fn(&Message) -> usize,
) -> Option<ReportedPrompt> {
    let at = messages
        .iter()
        .rposition(|m| m.usage.is_some() && !m.is_sidechain)?;
    let reported = messages[at].usage?.context_tokens() as usize;
    let start = messages[..at]
        .iter()
        .rposition(|m| m.is_compact_boundary)
        .map_or(0, |b| b + 1);
    let counted: usize = messages[start..at]
        .iter()
        .filter(|m| !m.is_sidechain)
        .map(cost)
        .sum();
    Some(ReportedPrompt {
        reported_tokens: reported,
        counted_tokens: counted,
        overhead_tokens: reported.saturating_sub(counted),
        message: at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Block, Role, Usage};

    fn text(role: Role, t: &str) -> Message {
        Message::new(role, vec![Block::Text { text: t.into() }])
    }

    fn reply(prompt: u64) -> Message {
        let mut m = text(Role::Assistant, "reply");
        m.usage = Some(Usage {
            input_tokens: 4,
            cache_read_input_tokens: prompt - 4,
            ..Usage::default()
        });
        m
    }

    #[test]
    fn overhead_is_the_reported_prompt_minus_the_messages_it_saw() {
        let ten = |_: &Message| 10;
        let mut m = vec![
            text(Role::User, "a"),
            reply(5_020),
            text(Role::User, "b"),
            reply(5_040),
        ];
        // The last reply saw three messages (30 tokens) of a 5,040-token prompt.
        let r = reported_prompt(&m, &ten).unwrap();
        assert_eq!(
            (
                r.reported_tokens,
                r.counted_tokens,
                r.overhead_tokens,
                r.message
            ),
            (5_040, 30, 5_010, 3)
        );
        // A subagent's usage is not the conversation's prompt.
        let mut side = reply(900);
        side.is_sidechain = true;
        m.push(side);
        assert_eq!(reported_prompt(&m, &ten).unwrap().message, 3);
        // After a compaction, a response sees only the summary and what follows.
        let mut boundary = text(Role::System, "Conversation compacted");
        boundary.is_compact_boundary = true;
        let mut summary = text(Role::User, "summary");
        summary.is_compact_summary = true;
        m.extend([boundary, summary, text(Role::User, "c"), reply(5_030)]);
        let r = reported_prompt(&m, &ten).unwrap();
        assert_eq!((r.counted_tokens, r.overhead_tokens), (20, 5_010));
        assert_eq!(reported_prompt(&m[..1], &ten), None);
    }
}
