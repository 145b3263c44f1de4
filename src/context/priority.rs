//! Priority trimming: when a whole prompt is over budget, what goes first.
//!
//! Every message gets a [`Priority`]: system prompt > agent instructions > the
//! current task > actively edited files > recent turns > old history > stale
//! tool output. Trimming drops the least important first (oldest first within a
//! priority), whole tool call/result groups at a time, and never the system
//! prompt; if the system prompt alone is over budget it fails with the numbers.

use std::collections::HashSet;

use serde::Serialize;

use super::evict::{atomic_groups, is_note, note_message, NOTE_PREFIX};
use crate::transcript::{Block, Message, Role};

/// How much a message matters, most important first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    System,
    /// Harness-injected instructions (CLAUDE.md, AGENTS.md, skills, reminders).
    Instructions,
    /// The latest user prompt.
    CurrentTask,
    /// Tool calls and results about files edited in the recent turns.
    ActiveFiles,
    RecentTurns,
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
    let pinned = messages
        .iter()
        .take_while(|m| m.role == Role::System && !m.is_compact_boundary)
        .count();
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
            if i < pinned {
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
    pub kept: Vec<Message>,
    pub dropped: Vec<(Priority, Message)>,
    pub tokens_before: usize,
    pub tokens_after: usize,
}

/// Why trimming failed: the system prompt alone is over budget.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("context overflow: the system prompt needs {needed} tokens but the budget is {budget}")]
pub struct TrimOverflow {
    pub needed: usize,
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
    let pinned = priorities
        .iter()
        .take_while(|p| **p == Priority::System)
        .count();
    // A group is as important as its most important message.
    let mut groups: Vec<(Priority, usize, usize)> = atomic_groups(&messages, pinned)
        .into_iter()
        .map(|(s, e)| {
            (
                *priorities[s..=e]
                    .iter()
                    .min()
                    .unwrap_or(&Priority::OldHistory),
                s,
                e,
            )
        })
        .collect();
    // Least important first; oldest first within a priority.
    groups.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut drop = vec![false; messages.len()];
    let mut used = total;
    for &(_, s, e) in &groups {
        if used <= budget {
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

/// A prompt packed into a budget: trimmed by priority, with a note where
/// messages were dropped.
#[derive(Debug, Clone, Serialize)]
pub struct Packed {
    /// The system prompt, the note (when something was dropped), the rest in order.
    pub kept: Vec<Message>,
    pub dropped: Vec<(Priority, Message)>,
    pub note: Option<String>,
    pub tokens_before: usize,
    /// Tokens of `kept`, the note included; never above the budget.
    pub tokens_after: usize,
}

/// The note that stands where `dropped` messages were taken out of a prompt.
pub fn trim_note(dropped: &[(Priority, Message)], tokens: usize) -> String {
    let mut by_priority: Vec<(Priority, usize)> = Vec::new();
    for (p, _) in dropped {
        match by_priority.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => *n += 1,
            None => by_priority.push((*p, 1)),
        }
    }
    by_priority.sort();
    note_text(dropped.len(), tokens, &by_priority)
}

fn note_text(count: usize, tokens: usize, by_priority: &[(Priority, usize)]) -> String {
    let parts: Vec<String> = by_priority
        .iter()
        .map(|(p, n)| format!("{n} {}", p.as_str()))
        .collect();
    format!(
        "{NOTE_PREFIX} {count} messages dropped by priority ({tokens} tokens: {}). Full transcript searchable via memory_search.]",
        parts.join(", ")
    )
}

/// Trims `messages` by priority so that they and the note about what was
/// dropped fit `budget`; earlier notes are replaced.
pub fn pack_prompt(
    messages: Vec<Message>,
    budget: usize,
    options: &PriorityOptions,
    cost: &dyn Fn(&Message) -> usize,
) -> Result<Packed, TrimOverflow> {
    let messages: Vec<Message> = messages.into_iter().filter(|m| !is_note(m)).collect();
    let total: usize = messages.iter().map(cost).sum();
    if total <= budget {
        return Ok(Packed {
            kept: messages,
            dropped: Vec::new(),
            note: None,
            tokens_before: total,
            tokens_after: total,
        });
    }
    // Room for the longest note this trim can write.
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
    let reserve = cost(&note_message(note_text(9_999_999, 999_999_999, &every)));
    let trimmed = trim_by_priority(messages, budget.saturating_sub(reserve), options, cost)
        .map_err(|e| TrimOverflow {
            needed: e.needed + reserve,
            budget,
        })?;
    if trimmed.tokens_after + reserve > budget {
        // The budget cannot even hold the note.
        return Err(TrimOverflow {
            needed: trimmed.tokens_after + reserve,
            budget,
        });
    }
    let dropped_tokens: usize = trimmed.dropped.iter().map(|(_, m)| cost(m)).sum();
    let note = trim_note(&trimmed.dropped, dropped_tokens);
    let note_message = note_message(note.clone());
    let tokens_after = trimmed.tokens_after + cost(&note_message);
    let pinned = trimmed
        .kept
        .iter()
        .take_while(|m| m.role == Role::System && !m.is_compact_boundary)
        .count();
    let mut kept = trimmed.kept;
    kept.insert(pinned, note_message);
    Ok(Packed {
        kept,
        dropped: trimmed.dropped,
        note: Some(note),
        tokens_before: total,
        tokens_after,
    })
}

impl Priority {
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
