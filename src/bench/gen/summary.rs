//! Rule-based summaries of a window of turns, and the sentence helpers they use.
//!
//! What was asked, what the assistant said and did, what went wrong and how it
//! ended, read off the turns by cues (decision and outcome words) rather than by a
//! model, so that the same transcripts always give the same text.

use super::{MAX_SEGMENT_CHARS, MIN_SEGMENT_CHARS};
use crate::bench::turns::{truncate_chars, Role, TaskEvent, Turn};

/// A readable summary of a window: what was asked, what the assistant said and
/// did, what went wrong, how it ended. Roughly 300-1500 characters.
pub(super) fn summarize_window(window: &[Turn]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let requests: Vec<&Turn> = window.iter().filter(|t| t.is_request()).collect();
    if let Some(first) = requests.first() {
        lines.push(format!(
            "User asked: {}",
            one_line(&truncate_chars(first.text.trim(), 280))
        ));
    }
    for later in requests.iter().skip(1).take(2) {
        lines.push(format!("Then: {}", first_sentence(&later.text, 140)));
    }
    let said: Vec<String> = window
        .iter()
        .filter(|t| t.role == Role::Assistant)
        .map(|t| first_sentence(&t.text, 160))
        .filter(|s| !s.is_empty())
        .fold(Vec::new(), |mut acc, s| {
            if !acc.contains(&s) && acc.len() < 5 {
                acc.push(s);
            }
            acc
        });
    if !said.is_empty() {
        lines.push(format!("Assistant: {}", said.join(" ")));
    }
    let actions = actions_in(window, 8);
    if !actions.is_empty() {
        lines.push(format!("Actions: {}.", actions.join("; ")));
    }
    let errors = errors_in(window, 2);
    if !errors.is_empty() {
        lines.push(format!("Errors: {}", errors.join(" | ")));
    }
    if let Some(last) = window
        .iter()
        .rev()
        .find(|t| t.role == Role::Assistant && !t.text.trim().is_empty())
    {
        let outcome = last_sentence(&last.text, 200);
        if !outcome.is_empty() && !said.iter().any(|s| s == &outcome) {
            lines.push(format!("Outcome: {outcome}"));
        }
    }
    let mut summary = lines.join("\n");
    if summary.chars().count() < MIN_SEGMENT_CHARS {
        for result in window
            .iter()
            .flat_map(|t| &t.results)
            .filter(|r| r.is_shown())
            .take(2)
        {
            let shown = one_line(&truncate_chars(result.text.trim(), 220));
            summary.push_str(&format!("\nOutput of {}: {shown}", result.tool));
        }
    }
    truncate_chars(summary.trim(), MAX_SEGMENT_CHARS)
}

/// The lines of a window summary that are prose, without their labels (the list
/// of actions and raw outputs are left out).
pub(super) fn summary_prose_lines(summary: &str) -> Vec<String> {
    const LABELS: [&str; 5] = [
        "User asked: ",
        "Then: ",
        "Assistant: ",
        "Outcome: ",
        "Errors: ",
    ];
    summary
        .lines()
        .filter_map(|line| LABELS.iter().find_map(|l| line.strip_prefix(l)))
        .map(str::to_string)
        .collect()
}

/// The topic of turns `start..=end`: the first request in it, else the latest
/// request before it, else what the assistant said first.
pub(super) fn topic_of(turns: &[Turn], start: usize, end: usize, max: usize) -> String {
    let request = turns[start..=end]
        .iter()
        .find(|t| t.is_request())
        .or_else(|| turns[..start].iter().rev().find(|t| t.is_request()));
    let fallback = || {
        turns[start..=end]
            .iter()
            .find(|t| !t.text.trim().is_empty())
    };
    match request.or_else(fallback) {
        Some(turn) => first_sentence(&turn.text, max),
        None => turns[start..=end]
            .iter()
            .flat_map(|t| &t.calls)
            .next()
            .map(|c| format!("{} {}", c.name, c.arg))
            .unwrap_or_else(|| "Tool output".to_string()),
    }
}

fn actions_in(window: &[Turn], max: usize) -> Vec<String> {
    let mut actions = Vec::new();
    for call in window.iter().flat_map(|t| &t.calls) {
        let action = match (&call.command, &call.file) {
            (Some(command), _) => format!("{} `{}`", call.name, truncate_chars(command, 80)),
            (None, Some(file)) => format!("{} {}", call.name, file),
            (None, None) if !call.arg.is_empty() => {
                format!("{} {}", call.name, truncate_chars(&call.arg, 80))
            }
            (None, None) => call.name.clone(),
        };
        push_unique(&mut actions, &action);
        if actions.len() >= max {
            break;
        }
    }
    actions
}

pub(super) fn files_in(window: &[Turn], edited_only: bool, max: usize) -> Vec<String> {
    let mut files = Vec::new();
    for call in window.iter().flat_map(|t| &t.calls) {
        if edited_only && !call.edits_files() {
            continue;
        }
        if let Some(file) = &call.file {
            push_unique(&mut files, file);
        }
        if files.len() >= max {
            break;
        }
    }
    files
}

pub(super) fn commands_in(window: &[Turn], max: usize) -> Vec<String> {
    let mut commands = Vec::new();
    for command in window
        .iter()
        .flat_map(|t| &t.calls)
        .filter_map(|c| c.command.as_ref())
    {
        push_unique(&mut commands, command);
        if commands.len() >= max {
            break;
        }
    }
    commands
}

/// First lines of failed tool results.
pub(super) fn errors_in(window: &[Turn], max: usize) -> Vec<String> {
    let mut errors = Vec::new();
    for result in window
        .iter()
        .flat_map(|t| &t.results)
        .filter(|r| r.is_error)
    {
        let line = result
            .text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("failed");
        push_unique(&mut errors, &truncate_chars(line, 160));
        if errors.len() >= max {
            break;
        }
    }
    errors
}

const DECISION_CUES: &[&str] = &[
    "i'll ",
    "i will ",
    "we'll ",
    "we should ",
    "decided",
    "decision",
    "instead of",
    "rather than",
    "the fix is",
    "the approach",
    "better to",
    "going with",
    "chose ",
    "switch to",
    "should use",
    "plan is",
];

const OUTCOME_CUES: &[&str] = &[
    "fixed",
    "added",
    "updated",
    "created",
    "removed",
    "implemented",
    "passes",
    "passing",
    "passed",
    "done",
    "changed",
    "renamed",
    "refactored",
    "completed",
    "works",
    "the issue was",
    "the problem was",
    "root cause",
];

/// Openings of sentences that announce what comes next rather than report it.
const INTENT_OPENINGS: &[&str] = &[
    "let me",
    "now let me",
    "i'll",
    "i will",
    "i need",
    "first,",
    "next,",
];

/// Assistant sentences that state a decision.
pub(super) fn decisions_in(window: &[Turn], max: usize) -> Vec<String> {
    assistant_sentences_with(window, DECISION_CUES, max, false)
}

/// Assistant sentences that report a result (the latest ones), or the last thing said.
pub(super) fn outcomes_in(window: &[Turn], max: usize) -> Vec<String> {
    let mut found = assistant_sentences_with(window, OUTCOME_CUES, max + 4, true);
    found.retain(|s| {
        let lower = s.to_lowercase();
        !INTENT_OPENINGS.iter().any(|o| lower.starts_with(o))
    });
    found.truncate(max);
    if !found.is_empty() {
        return found;
    }
    window
        .iter()
        .rev()
        .find(|t| t.role == Role::Assistant && !t.text.trim().is_empty())
        .map(|t| vec![last_sentence(&t.text, 200)])
        .unwrap_or_default()
}

fn assistant_sentences_with(
    window: &[Turn],
    cues: &[&str],
    max: usize,
    latest_first: bool,
) -> Vec<String> {
    let texts: Vec<&str> = window
        .iter()
        .filter(|t| t.role == Role::Assistant)
        .map(|t| t.text.as_str())
        .collect();
    let mut sentences: Vec<String> = texts.iter().flat_map(|t| sentences_of(t)).collect();
    if latest_first {
        sentences.reverse();
    }
    let mut found = Vec::new();
    for sentence in sentences {
        let lower = sentence.to_lowercase();
        if sentence.len() >= 20 && cues.iter().any(|c| lower.contains(c)) {
            push_unique(&mut found, &truncate_chars(&sentence, 200));
            if found.len() >= max {
                break;
            }
        }
    }
    found
}

pub(super) fn has_code(turn: &Turn) -> bool {
    turn.text.contains("```") || turn.calls.iter().any(|c| c.edits_files())
}

pub(super) fn has_errors(turn: &Turn) -> bool {
    turn.results.iter().any(|r| r.is_error)
}

pub(super) fn completes_a_task(turn: &Turn) -> bool {
    turn.calls.iter().any(|c| match &c.task {
        Some(TaskEvent::Update { status, .. }) => status == "completed",
        Some(TaskEvent::Todos(items)) => {
            !items.is_empty() && items.iter().all(|(_, s)| s == "completed")
        }
        _ => false,
    })
}

/// Sentences of prose: split at `. `, `! `, `? ` and line breaks; markdown
/// markers at the start of a line are dropped.
pub(super) fn sentences_of(text: &str) -> Vec<String> {
    let mut sentences = Vec::new();
    for line in text.lines() {
        let line = line
            .trim()
            .trim_start_matches(['#', '-', '*', '>', ' '])
            .trim();
        if line.is_empty() || line.starts_with("```") || line.starts_with('|') {
            continue;
        }
        let mut rest = line;
        while !rest.is_empty() {
            let cut = rest
                .match_indices(['.', '!', '?'])
                .map(|(i, _)| i + 1)
                .find(|&i| rest[i..].starts_with(' ') || i == rest.len());
            let (sentence, tail) = match cut {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let sentence = sentence.trim();
            if !sentence.is_empty() {
                sentences.push(sentence.to_string());
            }
            rest = tail.trim_start();
        }
    }
    sentences
}

/// The first sentence (with the next one when it is only a few words, like
/// "Quick question:"), cut at a word boundary to at most `max` characters.
pub(super) fn first_sentence(text: &str, max: usize) -> String {
    let mut sentences = sentences_of(text).into_iter();
    let Some(mut first) = sentences.next() else {
        return String::new();
    };
    if first.chars().count() < 25 {
        if let Some(next) = sentences.next() {
            first = format!("{first} {next}");
        }
    }
    cut_at_word(&first, max)
}

fn last_sentence(text: &str, max: usize) -> String {
    sentences_of(text)
        .into_iter()
        .last()
        .map(|s| cut_at_word(&s, max))
        .unwrap_or_default()
}

fn cut_at_word(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let end = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    let head = &text[..end];
    let cut = head.rfind(' ').filter(|&i| i > max / 2).unwrap_or(end);
    head[..cut]
        .trim_end_matches([',', ';', ':', ' '])
        .to_string()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn push_unique(list: &mut Vec<String>, item: &str) {
    if !item.is_empty() && !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}
