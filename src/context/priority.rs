//! Priority trimming: when a whole prompt is over budget, what goes first.
//!
//! Every message gets a [`Priority`]: system prompt (and the compaction
//! summary, pinned with it) > agent instructions > the current task >
//! actively edited files > recent turns > old history > stale tool output.
//! Trimming works up from the least important priority: within each, tool
//! outputs first become placeholders (oldest first: the call stays, the
//! output is in the store), then whole tool call/result groups are dropped
//! (oldest first); the system prompt and the summary never go. The step that
//! crosses the budget is cut to fit instead (a tool output keeps its first
//! lines after its placeholder, a long message its beginning), so a packed
//! prompt lands just under its budget, not wherever dropping one more large
//! group happened to leave it. If the pinned messages alone are over budget
//! it fails with the numbers.

use std::collections::HashSet;

use serde::Serialize;

use super::evict::{atomic_groups, is_note, is_pinned, note_message, pinned_prefix, NOTE_PREFIX};
use super::truncate::{calls_by_id, shorten_to, Calls, Cut};
use crate::transcript::{Block, Message, Role};

/// How much a message matters, most important first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// The system prompt and the compaction summary; never dropped.
    System,
    /// Harness-injected instructions (CLAUDE.md, AGENTS.md, skills, reminders).
    Instructions,
    /// The latest user prompt.
    CurrentTask,
    /// Tool calls and results about files edited in the recent turns.
    ActiveFiles,
    /// Messages of the last `recent_turns` turns.
    RecentTurns,
    /// Messages from before the recent turns.
    OldHistory,
    /// Tool calls and results from before the recent turns, or more than
    /// `recent_tool_steps` tool-calling steps old.
    StaleToolOutput,
}

/// What counts as recent.
#[derive(Debug, Clone, Copy)]
pub struct PriorityOptions {
    /// Turns (user prompts) that count as recent.
    pub recent_turns: u64,
    /// Tool-calling steps whose calls and results count as recent, even within
    /// the current turn (an agent may run hundreds of tools for one prompt).
    pub recent_tool_steps: usize,
}

impl Default for PriorityOptions {
    fn default() -> Self {
        PriorityOptions {
            recent_turns: 3,
            recent_tool_steps: 5,
        }
    }
}

/// Each message's priority.
pub fn classify(messages: &[Message], options: &PriorityOptions) -> Vec<Priority> {
    let pinned = pinned_prefix(messages);
    let current = messages.iter().rposition(Message::is_prompt);
    let last_turn = messages.iter().map(|m| m.turn_index).max().unwrap_or(0);
    let recent_turn = last_turn.saturating_sub(options.recent_turns.saturating_sub(1));
    let edited: HashSet<String> = messages
        .iter()
        .filter(|m| m.turn_index >= recent_turn)
        .filter(|m| {
            m.content.iter().any(|b| {
                matches!(b, Block::ToolUse { name, .. }
                    if matches!(name.as_str(), "Edit" | "Write" | "MultiEdit" | "NotebookEdit" | "edit" | "write"))
            })
        })
        .flat_map(Message::files)
        .collect();
    let call_files = call_files_by_id(messages);
    let (step_of, steps) = tool_steps(messages);
    let recent_step = steps.saturating_sub(options.recent_tool_steps);
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if i < pinned || is_pinned(m) {
                return Priority::System;
            }
            if m.is_meta && m.role != Role::Tool {
                return Priority::Instructions;
            }
            if current == Some(i) {
                return Priority::CurrentTask;
            }
            let mut files = m.files();
            for id in m.tool_result_ids() {
                if let Some((_, f)) = call_files.iter().find(|(cid, _)| cid == id) {
                    files.extend(f.iter().cloned());
                }
            }
            let touches_active = files.iter().any(|f| edited.contains(f));
            if touches_active {
                return Priority::ActiveFiles;
            }
            let tool = m.role == Role::Tool || only_tool_calls(m);
            if tool && (m.turn_index < recent_turn || step_of[i] <= recent_step) {
                Priority::StaleToolOutput
            } else if m.turn_index >= recent_turn {
                Priority::RecentTurns
            } else {
                Priority::OldHistory
            }
        })
        .collect()
}

/// The tool-calling step of each message (how many messages calling tools came
/// before it, itself included) and the number of steps.
pub fn tool_steps(messages: &[Message]) -> (Vec<usize>, usize) {
    let mut steps = 0;
    let step_of = messages
        .iter()
        .map(|m| {
            if m.role == Role::Assistant && m.tool_use_ids().next().is_some() {
                steps += 1;
            }
            steps
        })
        .collect();
    (step_of, steps)
}

/// An assistant message that only calls tools (no words of its own).
fn only_tool_calls(m: &Message) -> bool {
    m.role == Role::Assistant
        && !m.content.is_empty()
        && m.content
            .iter()
            .all(|b| matches!(b, Block::ToolUse { .. } | Block::Thinking { .. }))
}

fn call_files_by_id(messages: &[Message]) -> Vec<(String, Vec<String>)> {
    messages
        .iter()
        .flat_map(|m| {
            m.content.iter().filter_map(|b| match b {
                Block::ToolUse { id, name, input } => {
                    let one = Message::new(
                        Role::Assistant,
                        vec![Block::ToolUse {
                            id: id.clone(),
                            name: name.clone(),
                            input: input.clone(),
                        }],
                    );
                    Some((id.clone(), one.files()))
                }
                _ => None,
            })
        })
        .collect()
}

/// The result of trimming.
#[derive(Debug, Clone, Serialize)]
pub struct Trimmed {
    /// The messages that stayed, in order.
    pub kept: Vec<Message>,
    /// The dropped messages, in full, each with its priority, in transcript order.
    pub dropped: Vec<(Priority, Message)>,
    /// Tokens of all the messages before trimming.
    pub tokens_before: usize,
    /// Tokens of `kept`; at most the budget.
    pub tokens_after: usize,
}

/// Why trimming failed: the system prompt alone is over budget.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("context overflow: the system prompt needs {needed} tokens but the budget is {budget}")]
pub struct TrimOverflow {
    /// Tokens of the messages that cannot be dropped (with the note's room, when packing).
    pub needed: usize,
    /// The token budget asked for.
    pub budget: usize,
}

/// Drops the least important groups of messages until the rest fit `budget`.
pub fn trim_by_priority(
    messages: Vec<Message>,
    budget: usize,
    options: &PriorityOptions,
    cost: &dyn Fn(&Message) -> usize,
) -> Result<Trimmed, TrimOverflow> {
    let priorities = classify(&messages, options);
    let tokens: Vec<usize> = messages.iter().map(cost).collect();
    let total: usize = tokens.iter().sum();
    let mut groups = prioritized_groups(&messages, &priorities);
    // Least important first; oldest first within a priority.
    groups.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut drop = vec![false; messages.len()];
    let mut used = total;
    for &(priority, s, e) in &groups {
        if used <= budget || priority == Priority::System {
            break;
        }
        for d in &mut drop[s..=e] {
            *d = true;
        }
        used -= tokens[s..=e].iter().sum::<usize>();
    }
    if used > budget {
        return Err(TrimOverflow {
            needed: used,
            budget,
        });
    }
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for ((m, p), d) in messages.into_iter().zip(priorities).zip(drop) {
        if d {
            dropped.push((p, m));
        } else {
            kept.push(m);
        }
    }
    Ok(Trimmed {
        kept,
        dropped,
        tokens_before: total,
        tokens_after: used,
    })
}

/// The atomic groups after the pinned prefix (see [`atomic_groups`]), each as
/// important as its most important message: `(priority, first, last)`.
fn prioritized_groups(
    messages: &[Message],
    priorities: &[Priority],
) -> Vec<(Priority, usize, usize)> {
    let pinned = priorities
        .iter()
        .take_while(|p| **p == Priority::System)
        .count();
    atomic_groups(messages, pinned)
        .into_iter()
        .map(|(s, e)| {
            let p = priorities[s..=e].iter().min().copied();
            (p.unwrap_or(Priority::OldHistory), s, e)
        })
        .collect()
}

/// A prompt packed into a budget: trimmed by priority, with a note where
/// messages were dropped or cut.
#[derive(Debug, Clone, Serialize)]
pub struct Packed {
    /// The system prompt, the note (when anything was dropped or cut), the rest in order.
    pub kept: Vec<Message>,
    /// Dropped messages, in full.
    pub dropped: Vec<(Priority, Message)>,
    /// Kept messages that were cut to fit (tool outputs turned into placeholders,
    /// long messages cut): the record id their placeholder names, and the full
    /// message, to store before the prompt is used.
    pub cut: Vec<(String, Message)>,
    /// Tool outputs turned into placeholders (in kept and dropped messages).
    pub outputs_truncated: usize,
    /// The note placed after the pinned messages; `None` when the prompt already fit.
    pub note: Option<String>,
    /// Tokens of the messages before packing (earlier notes left out).
    pub tokens_before: usize,
    /// Tokens of `kept`, the note included; never above the budget.
    pub tokens_after: usize,
}

/// The note that stands where `dropped` messages were taken out of a prompt
/// and `cut` ones shortened.
pub fn trim_note(dropped: &[(Priority, Message)], tokens: usize, cut: &CutSummary) -> String {
    let mut by_priority: Vec<(Priority, usize)> = Vec::new();
    for (p, _) in dropped {
        match by_priority.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => *n += 1,
            None => by_priority.push((*p, 1)),
        }
    }
    by_priority.sort();
    note_text(dropped.len(), tokens, &by_priority, cut)
}

/// What cutting (not dropping) saved in one pack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CutSummary {
    /// Tool outputs turned into placeholders.
    pub outputs_truncated: usize,
    /// Kept messages shortened to fit.
    pub messages_cut: usize,
    /// Tokens the cuts saved (full size minus cut size of the cut messages).
    pub tokens_saved: usize,
}

fn note_text(
    count: usize,
    tokens: usize,
    by_priority: &[(Priority, usize)],
    cut: &CutSummary,
) -> String {
    let mut note = NOTE_PREFIX.to_string();
    if count > 0 {
        let parts: Vec<String> = by_priority
            .iter()
            .map(|(p, n)| format!("{n} {}", p.as_str()))
            .collect();
        note.push_str(&format!(
            " {count} messages dropped by priority ({tokens} tokens: {}).",
            parts.join(", ")
        ));
    }
    if cut.messages_cut > 0 {
        note.push_str(&format!(
            " {} messages cut to fit ({} tool outputs truncated; {} tokens saved); each placeholder names the record holding the full text.",
            cut.messages_cut, cut.outputs_truncated, cut.tokens_saved
        ));
    }
    note.push_str(" Full transcript searchable via memory_search.]");
    note
}

/// Trims `messages` by priority so that they and the note about what was
/// dropped or cut fit `budget`, as close under it as the messages allow (see
/// the module docs); earlier notes are replaced. `record_id` names the record a
/// cut message's full text is stored under.
pub fn pack_prompt(
    messages: Vec<Message>,
    budget: usize,
    options: &PriorityOptions,
    cost: &dyn Fn(&Message) -> usize,
    record_id: &dyn Fn(&Message) -> String,
) -> Result<Packed, TrimOverflow> {
    let messages: Vec<Message> = messages.into_iter().filter(|m| !is_note(m)).collect();
    let total: usize = messages.iter().map(cost).sum();
    if total <= budget {
        return Ok(Packed {
            kept: messages,
            dropped: Vec::new(),
            cut: Vec::new(),
            outputs_truncated: 0,
            note: None,
            tokens_before: total,
            tokens_after: total,
        });
    }
    let reserve = cost(&note_message(longest_note()));
    let room = budget.saturating_sub(reserve);
    // Dropping a whole group may leave this much of the budget unused (the
    // note can be shorter than its room); past that the group is cut instead,
    // so the prompt lands within 90% of the budget whenever messages can be cut.
    let slack = (budget / 10).saturating_sub(reserve);
    let mut fit = Fit::new(messages, options, cost, record_id);
    fit.run(room, slack);
    if fit.used + reserve > budget {
        // Only pinned messages are left, and they with the note are over budget.
        return Err(TrimOverflow {
            needed: fit.used + reserve,
            budget,
        });
    }
    Ok(fit.packed(total))
}

/// The longest note a pack can write (its room is kept free while trimming).
fn longest_note() -> String {
    let every: Vec<(Priority, usize)> = [
        Priority::Instructions,
        Priority::CurrentTask,
        Priority::ActiveFiles,
        Priority::RecentTurns,
        Priority::OldHistory,
        Priority::StaleToolOutput,
    ]
    .into_iter()
    .map(|p| (p, 9_999_999))
    .collect();
    let cut = CutSummary {
        outputs_truncated: 9_999_999,
        messages_cut: 9_999_999,
        tokens_saved: 999_999_999,
    };
    note_text(9_999_999, 999_999_999, &every, &cut)
}

/// One pack in progress: the messages (some cut), what is dropped, the tokens used.
struct Fit<'a> {
    messages: Vec<Message>,
    priorities: Vec<Priority>,
    tokens: Vec<usize>,
    dropped: Vec<bool>,
    /// The full message of each cut one.
    originals: Vec<Option<Message>>,
    used: usize,
    outputs_truncated: usize,
    calls: Calls,
    cost: &'a dyn Fn(&Message) -> usize,
    record_id: &'a dyn Fn(&Message) -> String,
}

impl<'a> Fit<'a> {
    fn new(
        messages: Vec<Message>,
        options: &PriorityOptions,
        cost: &'a dyn Fn(&Message) -> usize,
        record_id: &'a dyn Fn(&Message) -> String,
    ) -> Fit<'a> {
        let tokens: Vec<usize> = messages.iter().map(cost).collect();
        Fit {
            priorities: classify(&messages, options),
            used: tokens.iter().sum(),
            dropped: vec![false; messages.len()],
            originals: vec![None; messages.len()],
            outputs_truncated: 0,
            calls: calls_by_id(&messages),
            tokens,
            messages,
            cost,
            record_id,
        }
    }

    /// Works up from the least important priority until `room` is met: first
    /// the level's tool outputs become placeholders, then its groups go, oldest
    /// first; the step that crosses `room` is cut to land on it when dropping
    /// would leave more than `slack` unused. A group that can be neither (a
    /// tool call whose output is already a placeholder) is kept while the
    /// groups after it are tried, and dropped only if none of them can land
    /// the prompt: dropping it at once left up to its whole size unused.
    fn run(&mut self, room: usize, slack: usize) {
        let groups = prioritized_groups(&self.messages, &self.priorities);
        let mut levels: Vec<Priority> = groups
            .iter()
            .map(|g| g.0)
            .filter(|p| *p != Priority::System)
            .collect();
        levels.sort_unstable_by(|a, b| b.cmp(a));
        levels.dedup();
        let mut deferred = Vec::new();
        for level in levels {
            let at_level: Vec<(usize, usize)> = groups
                .iter()
                .filter(|g| g.0 == level)
                .map(|g| (g.1, g.2))
                .collect();
            for &(first, last) in &at_level {
                for i in first..=last {
                    if self.used <= room {
                        return;
                    }
                    self.truncate_outputs(i, room);
                }
            }
            for &(first, last) in &at_level {
                if self.used <= room {
                    return;
                }
                // While a less important group waits, this one may only be
                // cut to land on `room`: dropping it would break the order.
                if !deferred.is_empty() && self.cut_group(first, last, self.used - room) {
                    return;
                }
                self.drop_all(&mut deferred, room);
                if self.used <= room {
                    return;
                }
                if !self.drop_or_cut(first, last, room, slack) {
                    deferred.push((first, last));
                }
            }
        }
        self.drop_all(&mut deferred, room);
    }

    /// Drops the waiting groups, least important first, until `room` is met.
    fn drop_all(&mut self, deferred: &mut Vec<(usize, usize)>, room: usize) {
        for (first, last) in deferred.drain(..) {
            if self.used <= room {
                return;
            }
            self.drop(first, last);
        }
    }

    /// Turns message `i`'s tool outputs into placeholders; if that saves more
    /// than needed, each keeps the head of its output that fills the rest.
    fn truncate_outputs(&mut self, i: usize, room: usize) {
        let target = self.tokens[i].saturating_sub(self.used - room);
        if let Some(shorter) = self.cut(i, target, Cut::ToolOutputs) {
            let before = placeholders(&self.messages[i]);
            self.outputs_truncated += placeholders(&shorter) - before;
            self.replace(i, shorter);
        }
    }

    /// Drops the group `first..=last`, unless that would leave more than
    /// `slack` unused: then its largest messages are cut just enough. Returns
    /// false, changing nothing, when dropping would leave more than `slack`
    /// unused and cutting cannot save enough.
    fn drop_or_cut(&mut self, first: usize, last: usize, room: usize, slack: usize) -> bool {
        let over = self.used - room;
        let group: usize = self.tokens[first..=last].iter().sum();
        if group > over && group - over > slack {
            return self.cut_group(first, last, over);
        }
        self.drop(first, last);
        true
    }

    fn drop(&mut self, first: usize, last: usize) {
        for i in first..=last {
            self.dropped[i] = true;
        }
        self.used -= self.tokens[first..=last].iter().sum::<usize>();
    }

    /// Cuts the group's largest messages until `over` tokens are saved; all or nothing.
    fn cut_group(&mut self, first: usize, last: usize, over: usize) -> bool {
        let mut order: Vec<usize> = (first..=last).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.tokens[i]));
        let mut plan = Vec::new();
        let mut remaining = over;
        for i in order {
            if remaining == 0 {
                break;
            }
            let target = self.tokens[i].saturating_sub(remaining);
            if let Some(shorter) = self.cut(i, target, Cut::Everything) {
                remaining = remaining.saturating_sub(self.tokens[i] - (self.cost)(&shorter));
                plan.push((i, shorter));
            }
        }
        if remaining > 0 {
            return false;
        }
        for (i, shorter) in plan {
            self.outputs_truncated += placeholders(&shorter) - placeholders(&self.messages[i]);
            self.replace(i, shorter);
        }
        true
    }

    /// Message `i` cut to at most `target` tokens, else as short as `cut`
    /// makes it; `None` when cutting saves nothing.
    fn cut(&self, i: usize, target: usize, cut: Cut) -> Option<Message> {
        let m = &self.messages[i];
        let original = self.originals[i].as_ref().unwrap_or(m);
        let id = (self.record_id)(original);
        let count = |text: &str| {
            (self.cost)(&Message::new(
                Role::Tool,
                vec![Block::Text { text: text.into() }],
            ))
        };
        shorten_to(m, target, &self.calls, cut, &id, self.cost, &count).or_else(|| {
            let shortest = super::truncate::shorten(m, &self.calls, cut, 0, &id, &count);
            ((self.cost)(&shortest) < self.tokens[i]).then_some(shortest)
        })
    }

    fn replace(&mut self, i: usize, shorter: Message) {
        let old = std::mem::replace(&mut self.messages[i], shorter);
        if self.originals[i].is_none() {
            self.originals[i] = Some(old);
        }
        let tokens = (self.cost)(&self.messages[i]);
        self.used = self.used - self.tokens[i] + tokens;
        self.tokens[i] = tokens;
    }

    /// The packed prompt: kept messages with the note after the pinned ones.
    fn packed(self, tokens_before: usize) -> Packed {
        let mut kept = Vec::new();
        let mut dropped = Vec::new();
        let mut cut = Vec::new();
        let mut summary = CutSummary {
            outputs_truncated: self.outputs_truncated,
            ..CutSummary::default()
        };
        let mut dropped_tokens = 0;
        let rows = self
            .messages
            .into_iter()
            .zip(self.originals)
            .zip(self.priorities)
            .zip(self.dropped);
        for (((m, original), priority), gone) in rows {
            let full_cost = original
                .as_ref()
                .map_or_else(|| (self.cost)(&m), |o| (self.cost)(o));
            if gone {
                dropped_tokens += full_cost;
                dropped.push((priority, original.unwrap_or(m)));
            } else {
                if let Some(original) = original {
                    summary.messages_cut += 1;
                    summary.tokens_saved += full_cost - (self.cost)(&m);
                    cut.push(((self.record_id)(&original), original));
                }
                kept.push(m);
            }
        }
        let note = trim_note(&dropped, dropped_tokens, &summary);
        let note_message = note_message(note.clone());
        let tokens_after = kept.iter().map(self.cost).sum::<usize>() + (self.cost)(&note_message);
        let pinned = pinned_prefix(&kept);
        kept.insert(pinned, note_message);
        Packed {
            kept,
            dropped,
            cut,
            outputs_truncated: self.outputs_truncated,
            note: Some(note),
            tokens_before,
            tokens_after,
        }
    }
}

/// Tool outputs of `m` that are placeholders.
fn placeholders(m: &Message) -> usize {
    m.content
        .iter()
        .filter(|b| matches!(b, Block::ToolResult { content, .. } if content.starts_with(super::truncate::PLACEHOLDER_PREFIX)))
        .count()
}

impl Priority {
    /// The priority in words, as the trim note names it (`"current task"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::System => "system",
            Priority::Instructions => "instructions",
            Priority::CurrentTask => "current task",
            Priority::ActiveFiles => "active files",
            Priority::RecentTurns => "recent turns",
            Priority::OldHistory => "old history",
            Priority::StaleToolOutput => "stale tool output",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(role: Role, t: &str, turn: u64) -> Message {
        let mut m = Message::new(role, vec![Block::Text { text: t.into() }]);
        m.turn_index = turn;
        m
    }

    fn tool(name: &str, id: &str, path: &str, turn: u64) -> [Message; 2] {
        let mut call = Message::new(
            Role::Assistant,
            vec![Block::ToolUse {
                id: id.into(),
                name: name.into(),
                input: json!({"file_path": path}),
            }],
        );
        call.turn_index = turn;
        let mut result = Message::new(
            Role::Tool,
            vec![Block::ToolResult {
                tool_use_id: id.into(),
                content: "contents".into(),
                is_error: false,
                name: None,
            }],
        );
        result.turn_index = turn;
        [call, result]
    }

    #[test]
    fn classifies_and_trims_least_important_first() {
        let mut m = vec![text(Role::System, "system", 0)];
        let mut meta = text(Role::User, "CLAUDE.md says: run cargo fmt", 0);
        meta.is_meta = true;
        m.push(meta);
        m.push(text(Role::User, "old question", 0));
        m.extend(tool("Read", "r1", "src/old.rs", 0));
        m.extend(tool("Read", "r2", "src/live.rs", 0));
        for turn in 1..5 {
            m.push(text(Role::User, &format!("question {turn}"), turn));
            m.push(text(Role::Assistant, &format!("answer {turn}"), turn));
        }
        m.extend(tool("Edit", "e1", "src/live.rs", 4));
        let p = classify(&m, &PriorityOptions::default());
        assert_eq!(p[0], Priority::System);
        assert_eq!(p[1], Priority::Instructions);
        assert_eq!(p[2], Priority::OldHistory);
        assert_eq!(p[3], Priority::StaleToolOutput);
        assert_eq!(p[4], Priority::StaleToolOutput);
        assert_eq!(
            p[6],
            Priority::ActiveFiles,
            "an old read of a file edited now"
        );
        assert_eq!(p[9], Priority::RecentTurns);
        assert_eq!(p[13], Priority::CurrentTask);

        let t = trim_by_priority(m.clone(), 12, &PriorityOptions::default(), &|_| 1).unwrap();
        // 17 messages at 1 token: the stale read (2 messages) goes first, then old
        // history oldest first (3); system, instructions, active file and task stay.
        assert_eq!(t.tokens_after, 12);
        let dropped: Vec<(Priority, String)> =
            t.dropped.iter().map(|(p, m)| (*p, m.text())).collect();
        assert_eq!(dropped.len(), 5);
        assert!(dropped.contains(&(Priority::StaleToolOutput, "[tool_result] contents".into())));
        assert!(dropped.contains(&(Priority::OldHistory, "old question".into())));
        assert!(dropped.contains(&(Priority::OldHistory, "answer 1".into())));
        assert!(t.kept.iter().any(|k| k.text().contains("CLAUDE.md")));
        assert!(t
            .kept
            .iter()
            .any(|k| k.tool_result_ids().any(|id| id == "r2")));
        let err = trim_by_priority(m, 0, &PriorityOptions::default(), &|_| 1).unwrap_err();
        assert_eq!(
            err,
            TrimOverflow {
                needed: 1,
                budget: 0
            }
        );
    }
}
