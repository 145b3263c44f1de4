//! The topic segments of a conversation: a typed prompt that shares little
//! with the open segment (or comes after a long one) closes it and opens the
//! next; a closed segment is named by its key terms (frequent in it, rare in
//! the others) and kept for summarizing once it goes cold.

use std::collections::{BTreeMap, BTreeSet};

use super::{cut, Activity, SegmentState, SessionState};
use crate::integrations::hooks::terms::{terms, MAX_TERMS_PER_TURN};
use crate::transcript::Message;

/// A segment this long (assistant turns) closes at the next prompt, topic or not.
const MAX_SEGMENT_TURNS: u64 = 50;
/// A prompt sharing less than this share of its terms with the segment starts a new one.
const TOPIC_OVERLAP: f64 = 0.15;
/// Terms of the open segment compared with a new prompt.
const SEGMENT_PROFILE_TERMS: usize = 40;
/// Terms counted per segment (the most frequent are kept).
const MAX_SEGMENT_TERMS: usize = 300;

impl SessionState {
    /// A typed prompt may open a new topic: close the segment when the prompt
    /// shares little with it (or it has grown long), once it has enough messages.
    pub(super) fn on_prompt(&mut self, message: &Message, text: &str) {
        // `/exit`, local command output, an interruption: the harness speaking,
        // not a new topic.
        if is_harness_prompt(text) {
            return;
        }
        let prompt_terms = terms(text, MAX_TERMS_PER_TURN);
        let min_messages = 5;
        let switch = match &self.open_segment {
            None => true,
            Some(segment) if segment.activity.messages < min_messages => false,
            Some(segment) => {
                let long = self
                    .assistant_turns
                    .saturating_sub(segment.activity.start_assistant_turn)
                    >= MAX_SEGMENT_TURNS;
                long || (prompt_terms.len() >= 3 && overlap(segment, &prompt_terms) < TOPIC_OVERLAP)
            }
        };
        if switch {
            self.close_segment();
            let mut segment = SegmentState {
                first_prompt: cut(&topic_line(text), 160),
                activity: Activity::starting(
                    message.turn_index,
                    self.assistant_turns + 1,
                    message.timestamp.as_ref(),
                ),
                term_counts: BTreeMap::new(),
                key_terms: Vec::new(),
            };
            // The prompt names the topic: its terms count three times.
            for term in &prompt_terms {
                *segment.term_counts.entry(term.clone()).or_default() += 2;
            }
            self.open_segment = Some(segment);
        }
    }

    /// Closes the open segment; it is kept for summarizing if it is big enough.
    pub fn close_segment(&mut self) {
        let Some(mut segment) = self.open_segment.take() else {
            return;
        };
        if segment.activity.messages < 2 {
            return;
        }
        segment.key_terms = key_terms(&segment, &self.closed_segments, &self.project_terms());
        self.closed_segments.push(segment);
        // Bound the state: very old small segments that never went cold are dropped.
        if self.closed_segments.len() > 200 {
            self.closed_segments.remove(0);
        }
    }

    /// The terms of the project folder's path (`users`, `work`, the repository's
    /// name): every file path of the session holds them, so they name no topic.
    fn project_terms(&self) -> BTreeSet<String> {
        self.cwd
            .as_deref()
            .map(|cwd| terms(&cwd.replace(['/', '\\'], " "), 64))
            .unwrap_or_default()
            .into_iter()
            .collect()
    }
}

/// The line of a prompt that names its topic: the first with words, past
/// harness markup such as `<task-notification>` or `<command-name>` tags and
/// markdown heading marks. A first line that only announces what follows
/// ("Implement the following plan:") gets the next line added.
pub fn topic_line(text: &str) -> String {
    let mut lines = text
        .lines()
        .map(words_of_line)
        .filter(|l| l.chars().filter(|c| c.is_alphabetic()).count() >= 3);
    let Some(first) = lines.next() else {
        return String::new();
    };
    if first.ends_with(':') {
        if let Some(next) = lines.next() {
            return format!("{first} {next}");
        }
    }
    first
}

/// A line without leading tags (`<tag>`, `</tag>`, `<tag attr="x">`), what
/// follows a later tag, heading marks and emphasis.
fn words_of_line(line: &str) -> String {
    let mut line = line.trim();
    while line.starts_with('<') {
        match line.find('>') {
            Some(end) => line = line[end + 1..].trim_start(),
            None => break,
        }
    }
    let line = line.split('<').next().unwrap_or("");
    line.trim_start_matches(['#', ' '])
        .trim()
        .trim_matches('*')
        .trim()
        .to_string()
}

/// Whether a prompt is the harness speaking rather than the user: a slash
/// command (`<command-name>/exit</command-name>`), a local command's output, a
/// background task's notice, an interruption marker.
pub fn is_harness_prompt(text: &str) -> bool {
    const TAGS: &[&str] = &[
        "<command-name>",
        "<command-message>",
        "<command-args>",
        "<local-command-",
        "<bash-input>",
        "<bash-stdout>",
        "<bash-stderr>",
        "<task-notification>",
        "<system-reminder>",
        "[request interrupted by user",
        "caveat: the messages below were generated by the user while running local commands",
    ];
    let head = text.trim_start().to_lowercase();
    TAGS.iter().any(|tag| head.starts_with(tag))
}

/// Share of the prompt's terms found among the segment's most frequent terms.
fn overlap(segment: &SegmentState, prompt_terms: &[String]) -> f64 {
    let top: BTreeSet<&str> = top_terms(&segment.term_counts, SEGMENT_PROFILE_TERMS)
        .into_iter()
        .collect();
    let shared = prompt_terms
        .iter()
        .filter(|t| top.contains(t.as_str()))
        .count();
    shared as f64 / prompt_terms.len().max(1) as f64
}

fn top_terms(counts: &BTreeMap<String, u32>, n: usize) -> Vec<&str> {
    let mut all: Vec<(&str, u32)> = counts.iter().map(|(t, c)| (t.as_str(), *c)).collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    all.into_iter().take(n).map(|(t, _)| t).collect()
}

/// The terms that name a segment's topic: frequent in it, rare in the other
/// segments (tf·idf, where a term every segment holds weighs almost nothing),
/// never a part of the project's own path; at most six.
fn key_terms(
    segment: &SegmentState,
    others: &[SegmentState],
    project: &BTreeSet<String>,
) -> Vec<String> {
    let docs = others.len() as f64 + 1.0;
    let mut scored: Vec<(f64, &str)> = segment
        .term_counts
        .iter()
        .filter(|(term, &c)| c >= 2 && !project.contains(term.as_str()))
        .map(|(term, &count)| {
            let df = 1.0
                + others
                    .iter()
                    .filter(|o| o.term_counts.contains_key(term))
                    .count() as f64;
            (f64::from(count) * ((docs + 1.0) / df).ln(), term.as_str())
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(6)
        .map(|(_, t)| t.to_string())
        .collect()
}

pub(super) fn trim_counts(counts: &mut BTreeMap<String, u32>) {
    if counts.len() <= MAX_SEGMENT_TERMS * 2 {
        return;
    }
    let keep: BTreeSet<String> = top_terms(counts, MAX_SEGMENT_TERMS)
        .into_iter()
        .map(str::to_string)
        .collect();
    counts.retain(|t, _| keep.contains(t));
}
