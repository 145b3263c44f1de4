//! Rolling eviction: make a conversation fit its context window again.
//!
//! The prompt budget is `max_input = context_window - reserved_output`, and
//! the prompt is more than the messages: the system prompt and the tool
//! definitions an agent sends with every request (`overhead`, measured from
//! the transcript's own usage figures, see [`super::budget`]). When the
//! prompt costs more than `target × max_input`, the oldest messages are
//! dropped until it does not, with four things never given up: the system
//! prompt (leading system messages), the compaction summary (the only trace
//! of what an earlier compaction took out), the `min_keep` most recent
//! messages, and the pairing of a tool call with its result (a call and every
//! result answering it, and all messages between them, go or stay together).
//! The dropped messages are replaced by one note saying how many went, their
//! tokens and their time range. If even the minimum does not fit in
//! `max_input`, nothing is dropped and the caller gets a
//! [`EvictError::Overflow`] naming the numbers.

use std::collections::HashMap;

use serde::Serialize;

use crate::transcript::{Block, Message, Role};

/// Budget and rules of one eviction.
#[derive(Debug, Clone, Copy)]
pub struct EvictOptions {
    /// The model's context window, in tokens.
    pub context_window: usize,
    /// Tokens kept free for the model's answer; `max_input` is the window minus these.
    pub reserved_output: usize,
    /// Fraction of `max_input` to get down to (0 < target <= 1).
    pub target: f64,
    /// Recent messages (after the system prompt) that are always kept.
    pub min_keep: usize,
    /// Tokens the prompt takes besides the messages (system prompt, tool
    /// definitions), which eviction cannot reduce.
    pub overhead: usize,
}

impl Default for EvictOptions {
    fn default() -> Self {
        EvictOptions {
            context_window: 200_000,
            reserved_output: 0,
            target: 0.8,
            min_keep: 10,
            overhead: 0,
        }
    }
}

/// Why an eviction could not be done.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvictError {
    /// Even after evicting all it may, the prompt does not fit in `max_input`.
    #[error(
        "context overflow: the pinned messages (system prompt, compaction summary) and the last {kept_messages} messages need {needed} tokens{}, \
         but the context window of {context_window} minus {reserved_output} reserved for output leaves {max_input}; \
         lower --min-keep, raise --context-window, or shorten the system prompt",
        overhead_words(*overhead)
    )]
    Overflow {
        /// Tokens the prompt still needs after evicting all it may, `overhead` included.
        needed: usize,
        /// Tokens a prompt may take: `context_window - reserved_output`.
        max_input: usize,
        /// The context window asked for, in tokens.
        context_window: usize,
        /// Tokens reserved for output.
        reserved_output: usize,
        /// Messages after the pinned ones that had to stay (the last `min_keep`
        /// and the tool call/result groups they hold together).
        kept_messages: usize,
        /// Of `needed`, the tokens outside the messages (system prompt, tools).
        overhead: usize,
    },
    /// The options are invalid (`target` not in (0, 1], or `reserved_output`
    /// not below `context_window`); the text says which.
    #[error("{0}")]
    Options(String),
}

fn overhead_words(overhead: usize) -> String {
    if overhead == 0 {
        String::new()
    } else {
        format!(" ({overhead} of them outside the messages: system prompt and tool definitions)")
    }
}

/// What an eviction kept and dropped.
#[derive(Debug, Clone, Serialize)]
pub struct Eviction {
    /// The new context: system prompt, the note (if anything was evicted), recent messages.
    pub kept: Vec<Message>,
    /// The messages taken out, in full and in order (to be stored).
    pub evicted: Vec<Message>,
    /// The eviction note, also inside `kept`; `None` when nothing was evicted.
    pub note: Option<String>,
    /// The whole prompt before eviction: the messages plus `overhead_tokens`.
    pub tokens_before: usize,
    /// The whole prompt after eviction, note included: the messages plus `overhead_tokens`.
    pub tokens_after: usize,
    /// Tokens of the evicted messages (what the note saves, minus the note itself).
    pub tokens_evicted: usize,
    /// Tokens outside the messages (system prompt, tool definitions), counted in
    /// `tokens_before` and `tokens_after`.
    pub overhead_tokens: usize,
    /// Tokens a prompt may take: `context_window - reserved_output`.
    pub max_input: usize,
    /// Tokens eviction aims for: `target × max_input`, rounded down.
    pub target_tokens: usize,
    /// False when `min_keep` stopped eviction above the target (but within `max_input`).
    pub target_met: bool,
    /// Timestamp (else id or line) of the first evicted message; `None` when
    /// nothing was evicted.
    pub first_evicted: Option<String>,
    /// Timestamp (else id or line) of the last evicted message; `None` when
    /// nothing was evicted.
    pub last_evicted: Option<String>,
}

/// The eviction note's opening words; a note from an earlier roll is replaced.
pub const NOTE_PREFIX: &str = "[Context rolled:";

/// The note that replaces `count` evicted messages.
pub fn eviction_note(count: usize, tokens: usize, first: &str, last: &str) -> String {
    format!(
        "{NOTE_PREFIX} {count} messages evicted ({tokens} tokens). Full transcript searchable via memory_search. Evicted range: {first} to {last}]"
    )
}

/// Drops the oldest messages until the rest fit `options`; `cost` gives a message's tokens.
pub fn rolling_evict(
    messages: Vec<Message>,
    options: &EvictOptions,
    cost: &dyn Fn(&Message) -> usize,
) -> Result<Eviction, EvictError> {
    evict_with_note_suffix(messages, options, cost, "")
}

/// [`rolling_evict`] whose note carries `suffix` (more news of the same roll)
/// before its closing bracket; the budget accounts for it.
pub fn evict_with_note_suffix(
    messages: Vec<Message>,
    options: &EvictOptions,
    cost: &dyn Fn(&Message) -> usize,
    suffix: &str,
) -> Result<Eviction, EvictError> {
    let note_text = |count, tokens, first: &str, last: &str| {
        let mut note = eviction_note(count, tokens, first, last);
        note.insert_str(note.len() - 1, suffix);
        note
    };
    let max_input = max_input(options)?;
    let target_tokens = (options.target * max_input as f64).floor() as usize;
    let messages: Vec<Message> = messages.into_iter().filter(|m| !is_note(m)).collect();
    let tokens: Vec<usize> = messages.iter().map(cost).collect();
    let overhead = options.overhead;
    let total: usize = overhead + tokens.iter().sum::<usize>();
    let pinned = pinned_prefix(&messages);
    let groups = atomic_groups(&messages, pinned);
    let note_reserve = cost(&note_message(note_text(
        9_999_999,
        999_999_999,
        "2026-01-01T00:00:00.000000000+00:00",
        "2026-01-01T00:00:00.000000000+00:00",
    )));

    // Evict whole groups from the oldest while over target and min_keep allows.
    let movable = messages.len() - pinned;
    let (mut evicted_count, mut evicted_tokens) = (0, 0);
    if total > target_tokens {
        for &(start, end) in &groups {
            let len = end - start + 1;
            if total - evicted_tokens + note_reserve <= target_tokens
                || movable - evicted_count - len < options.min_keep
            {
                break;
            }
            evicted_count += len;
            evicted_tokens += tokens[start..=end].iter().sum::<usize>();
        }
    }
    // The note in place of the evicted messages, unless it would cost as much
    // as they do (evicting then shrinks nothing).
    let cut = pinned + evicted_count;
    let note = (evicted_count > 0).then(|| {
        let first = position(&messages[pinned]);
        let last = position(&messages[cut - 1]);
        let note = note_text(evicted_count, evicted_tokens, &first, &last);
        (note, first, last)
    });
    let note = note.filter(|(text, ..)| cost(&note_message(text.clone())) < evicted_tokens);
    let Some((note, first, last)) = note else {
        if total > max_input {
            return Err(overflow(options, max_input, total, movable));
        }
        return Ok(Eviction {
            kept: messages,
            evicted: Vec::new(),
            note: None,
            tokens_before: total,
            tokens_after: total,
            tokens_evicted: 0,
            overhead_tokens: overhead,
            max_input,
            target_tokens,
            target_met: total <= target_tokens,
            first_evicted: None,
            last_evicted: None,
        });
    };
    let mut rest = messages;
    let recent = rest.split_off(cut);
    let evicted = rest.split_off(pinned);
    let system = rest;
    let note_message = note_message(note.clone());
    let after = total - evicted_tokens + cost(&note_message);
    if after > max_input {
        return Err(overflow(options, max_input, after, recent.len()));
    }
    let mut kept = system;
    kept.push(note_message);
    kept.extend(recent);
    Ok(Eviction {
        kept,
        evicted,
        note: Some(note),
        tokens_before: total,
        tokens_after: after,
        tokens_evicted: evicted_tokens,
        overhead_tokens: overhead,
        max_input,
        target_tokens,
        target_met: after <= target_tokens,
        first_evicted: Some(first),
        last_evicted: Some(last),
    })
}

fn max_input(options: &EvictOptions) -> Result<usize, EvictError> {
    if !(options.target > 0.0 && options.target <= 1.0) {
        return Err(EvictError::Options(format!(
            "--target must be above 0 and at most 1, not {}",
            options.target
        )));
    }
    if options.reserved_output >= options.context_window {
        return Err(EvictError::Options(format!(
            "--reserved-output ({}) must be smaller than --context-window ({})",
            options.reserved_output, options.context_window
        )));
    }
    Ok(options.context_window - options.reserved_output)
}

fn overflow(options: &EvictOptions, max_input: usize, needed: usize, kept: usize) -> EvictError {
    EvictError::Overflow {
        needed,
        max_input,
        context_window: options.context_window,
        reserved_output: options.reserved_output,
        kept_messages: kept,
        overhead: options.overhead,
    }
}

/// Whether a message is never evicted nor dropped: the system prompt, and the
/// summary a compaction left in place of the history it took out (the only
/// trace of that history in the context).
pub fn is_pinned(m: &Message) -> bool {
    (m.role == Role::System && !m.is_compact_boundary) || m.is_compact_summary
}

/// How many leading messages are pinned (the system prompt, then the live
/// context's compaction summary): eviction starts after them, and a note goes
/// right after them.
pub fn pinned_prefix(messages: &[Message]) -> usize {
    messages.iter().take_while(|m| is_pinned(m)).count()
}

/// Whether `m` is a note of an earlier roll (it is replaced, not kept).
pub fn is_note(m: &Message) -> bool {
    m.role == Role::System
        && matches!(m.content.as_slice(), [Block::Text { text }] if text.starts_with(NOTE_PREFIX))
}

/// A note as the system message that carries it.
pub fn note_message(note: String) -> Message {
    Message::new(Role::System, vec![Block::Text { text: note }])
}

/// Where a message sits in time: its timestamp, else its id or line.
fn position(m: &Message) -> String {
    m.timestamp
        .clone()
        .or_else(|| m.uuid.clone())
        .unwrap_or_else(|| format!("line {}", m.line))
}

/// Contiguous ranges of messages (after `pinned`) that must be evicted together: a
/// tool call, every result answering it, and everything in between.
pub fn atomic_groups(messages: &[Message], pinned: usize) -> Vec<(usize, usize)> {
    let mut call_at: HashMap<&str, usize> = HashMap::new();
    let mut reach: Vec<usize> = (0..messages.len()).collect();
    for (i, m) in messages.iter().enumerate().skip(pinned) {
        for id in m.tool_result_ids() {
            if let Some(&call) = call_at.get(id) {
                reach[call] = reach[call].max(i);
            }
        }
        for id in m.tool_use_ids() {
            call_at.insert(id, i);
        }
    }
    let mut groups = Vec::new();
    let mut i = pinned;
    while i < messages.len() {
        let start = i;
        let mut end = reach[i];
        while i <= end {
            end = end.max(reach[i]);
            i += 1;
        }
        groups.push((start, end));
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(role: Role, t: &str) -> Message {
        Message::new(role, vec![Block::Text { text: t.into() }])
    }

    fn call(id: &str) -> Message {
        Message::new(
            Role::Assistant,
            vec![Block::ToolUse {
                id: id.into(),
                name: "Bash".into(),
                input: serde_json::json!({"command": "ls"}),
            }],
        )
    }

    fn result(id: &str) -> Message {
        Message::new(
            Role::Tool,
            vec![Block::ToolResult {
                tool_use_id: id.into(),
                content: "ok".into(),
                is_error: false,
                name: None,
            }],
        )
    }

    #[test]
    fn groups_join_calls_and_results() {
        let m = vec![
            text(Role::System, "sys"),
            text(Role::User, "a"),
            call("1"),
            text(Role::Assistant, "b"),
            result("1"),
            text(Role::User, "c"),
        ];
        assert_eq!(atomic_groups(&m, 1), vec![(1, 1), (2, 4), (5, 5)]);
    }

    /// `n` one-line user messages.
    fn prompts(n: usize) -> Vec<Message> {
        (0..n).map(|i| text(Role::User, &format!("m{i}"))).collect()
    }

    fn options(
        context_window: usize,
        reserved_output: usize,
        target: f64,
        min_keep: usize,
    ) -> EvictOptions {
        EvictOptions {
            context_window,
            reserved_output,
            target,
            min_keep,
            overhead: 0,
        }
    }

    #[test]
    fn evicts_oldest_and_writes_a_note() {
        let mut m = vec![text(Role::System, "sys")];
        m.extend(prompts(20));
        let e = rolling_evict(m, &options(1000, 0, 0.5, 3), &|_| 40).unwrap();
        assert!(e.tokens_after <= 500, "{}", e.tokens_after);
        assert_eq!(e.kept[0].text(), "sys");
        assert!(e.kept[1].text().starts_with(NOTE_PREFIX));
        assert_eq!(e.kept.len() + e.evicted.len(), 22);
        assert_eq!(e.kept.last().unwrap().text(), "m19");
    }

    #[test]
    fn the_compaction_summary_is_pinned_like_the_system_prompt() {
        let mut summary = text(
            Role::User,
            "This session is being continued from a previous conversation",
        );
        summary.is_compact_summary = true;
        let mut m = vec![text(Role::System, "sys"), summary.clone()];
        m.extend(prompts(20));
        let e = rolling_evict(m, &options(1000, 0, 0.5, 3), &|_| 40).unwrap();
        assert_eq!(e.kept[0].text(), "sys");
        assert_eq!(e.kept[1], summary);
        assert!(e.kept[2].text().starts_with(NOTE_PREFIX));
        assert!(e.evicted.iter().all(|m| !m.is_compact_summary));
        assert_eq!(e.evicted[0].text(), "m0");
        // Overhead counts: the same window with 300 tokens of tools evicts more.
        let mut with_tools = options(1000, 0, 0.5, 3);
        with_tools.overhead = 300;
        let mut m = vec![summary];
        m.extend(prompts(20));
        let e2 = rolling_evict(m, &with_tools, &|_| 40).unwrap();
        assert_eq!(e2.kept[0].text(), e.kept[1].text());
        assert!(e2.evicted.len() > e.evicted.len());
        assert!(e2.tokens_after <= 500 && e2.overhead_tokens == 300);
    }

    #[test]
    fn overflow_names_the_numbers() {
        let err = rolling_evict(prompts(5), &options(100, 20, 0.8, 5), &|_| 30).unwrap_err();
        assert!(matches!(
            err,
            EvictError::Overflow {
                needed: 150,
                max_input: 80,
                ..
            }
        ));
        assert!(err.to_string().contains("150") && err.to_string().contains("80"));
    }
}
