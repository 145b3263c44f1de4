//! What a pruned session was about.
//!
//! Pruning drops the raw text of a session's archived messages; what stays is
//! one summary record per session and archive file. For the session to stay
//! findable by its subject, that record keeps a digest of the content, not
//! only the count and ids: the session's own task and segment summaries when
//! the store has them (in L2 or L3), else an extractive digest of the messages
//! themselves: the compaction summary if one was written, the first prompts,
//! the decisions stated, the last outcome, and the files, commands and errors
//! that recur. Every part is capped, so a digest stays a few KiB whatever the
//! session's size.

use std::collections::HashMap;

use serde_json::Value;

use crate::record::Record;

/// At most this many characters of digest text.
const MAX_TEXT_CHARS: usize = 4_000;
/// Per part: summaries, prompts, decisions, files, commands, errors kept.
const MAX_SUMMARIES: usize = 6;
const MAX_PROMPTS: usize = 4;
const MAX_DECISIONS: usize = 5;
const MAX_FILES: usize = 20;
const MAX_COMMANDS: usize = 10;
const MAX_ERRORS: usize = 5;
/// Characters kept of one quoted text (prompt, decision, summary).
const QUOTE_CHARS: usize = 400;

/// A session's pruned messages in brief.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Digest {
    /// What the session was about, as prose lines.
    pub text: String,
    /// Files that recur, most frequent first.
    pub files: Vec<String>,
    /// Commands that recur (the messages' `commands`), most frequent first.
    pub commands: Vec<String>,
    /// Errors that recur (error codes and messages), most frequent first.
    pub errors: Vec<String>,
    /// How the messages were written: ingested from transcripts, evicted from a
    /// live context, or added as records.
    pub written: Written,
}

/// How many messages each writer stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// Messages ingested from transcripts (an `origin` not written by `evict` or `pack`).
    pub ingested: usize,
    /// Messages evicted from a live context (`evict` or `pack`).
    pub evicted: usize,
    /// Messages added as records (no `origin`).
    pub added: usize,
}

impl Written {
    /// "20 ingested from transcripts, 8 evicted from a live context".
    pub fn describe(&self) -> String {
        let parts: Vec<String> = [
            (self.ingested, "ingested from transcripts"),
            (self.evicted, "evicted from a live context"),
            (self.added, "added as records"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        parts.join(", ")
    }
}

/// How a stored message was written, from its `origin`: `ingest` writes
/// `origin.via = "ingest"`, `evict` and `pack` write `"evict"` / `"pack"`;
/// records without an `origin` came through `add` (or MCP `memory_add`).
/// Records of transcripts written before `via` existed count as ingested.
fn how_written(record: &Record) -> &'static str {
    match record.source.get("origin") {
        None => "added",
        Some(origin) => match origin.get("via").and_then(Value::as_str) {
            Some("evict" | "pack") => "evicted",
            _ => "ingested",
        },
    }
}

/// The digest of `messages` (one session's, in any order), preferring the
/// session's `summaries` (its task and segment records) when there are any.
pub fn digest(messages: &[&Record], summaries: &[Record]) -> Digest {
    let mut ordered: Vec<&Record> = messages.to_vec();
    ordered.sort_by_key(|r| (r.fields.start_turn, r.fields.timestamp, r.id.clone()));
    let mut out = Digest::default();
    for r in &ordered {
        match how_written(r) {
            "added" => out.written.added += 1,
            "evicted" => out.written.evicted += 1,
            _ => out.written.ingested += 1,
        }
    }
    out.files = most_frequent(
        ordered.iter().flat_map(|r| r.fields.files.iter()),
        MAX_FILES,
    );
    out.commands = most_frequent(
        ordered
            .iter()
            .flat_map(|r| string_list(&r.source, "commands")),
        MAX_COMMANDS,
    );
    out.errors = most_frequent(
        ordered.iter().flat_map(|r| r.fields.errors.iter()),
        MAX_ERRORS,
    );
    let mut lines = Vec::new();
    if summaries.is_empty() {
        lines.extend(extractive(&ordered));
    } else {
        lines.push("Summaries of the session:".to_string());
        for s in summaries.iter().take(MAX_SUMMARIES) {
            lines.push(format!(
                "- [{}] {}: {}",
                s.kind,
                quote(&s.fields.title),
                quote(&s.fields.content)
            ));
        }
    }
    for (label, list) in [
        ("Files", &out.files),
        ("Commands", &out.commands),
        ("Errors", &out.errors),
    ] {
        if !list.is_empty() {
            lines.push(format!("{label}: {}", list.join("; ")));
        }
    }
    out.text = cut(&lines.join("\n"), MAX_TEXT_CHARS);
    out
}

/// The session in its own words: the compaction summary, the first prompts,
/// stated decisions and the last outcome.
fn extractive(messages: &[&Record]) -> Vec<String> {
    fn role(r: &Record) -> &str {
        r.source.get("role").and_then(Value::as_str).unwrap_or("")
    }
    let flag = |r: &Record, key: &str| r.source.get(key).and_then(Value::as_bool) == Some(true);
    let mut lines = Vec::new();
    if let Some(summary) = messages
        .iter()
        .rev()
        .find(|r| flag(r, "is_compact_summary"))
    {
        lines.push(format!(
            "Compaction summary: {}",
            quote(&summary.fields.content)
        ));
    }
    let prompts: Vec<String> = messages
        .iter()
        .filter(|r| {
            role(r) == "user"
                && !flag(r, "is_meta")
                && !flag(r, "is_compact_summary")
                && !flag(r, "is_sidechain")
        })
        .map(|r| r.fields.content.trim())
        .filter(|t| !t.is_empty() && !t.starts_with('['))
        .take(MAX_PROMPTS)
        .map(quote)
        .collect();
    if let Some((first, later)) = prompts.split_first() {
        lines.push(format!("First prompt: {first}"));
        if !later.is_empty() {
            lines.push(format!("Later prompts: {}", later.join(" | ")));
        }
    }
    let said: Vec<&str> = messages
        .iter()
        .filter(|r| role(r) == "assistant")
        .map(|r| r.fields.content.as_str())
        .collect();
    let decisions: Vec<String> = said
        .iter()
        .flat_map(|text| decisions_in(text))
        .take(MAX_DECISIONS)
        .collect();
    if !decisions.is_empty() {
        lines.push(format!("Decisions: {}", decisions.join(" | ")));
    }
    if let Some(last) = said
        .iter()
        .rev()
        .find(|t| !t.trim().is_empty() && !t.starts_with("[tool_use"))
    {
        lines.push(format!("Last outcome: {}", quote(last)));
    }
    lines
}

/// Words that mark a sentence as a decision or a finding worth keeping.
const DECISION_WORDS: &[&str] = &[
    "decided",
    "decision",
    "chose",
    "instead of",
    "root cause",
    "the fix",
    "fixed by",
    "switched to",
    "we will",
    "i'll use",
    "going with",
    "because",
];

/// Sentences of an assistant's text that state a decision or a cause.
fn decisions_in(text: &str) -> Vec<String> {
    text.split(['\n', '.', '!', '?'])
        .map(str::trim)
        .filter(|s| s.len() >= 20 && !s.contains("```"))
        .filter(|s| {
            let lower = s.to_lowercase();
            DECISION_WORDS.iter().any(|w| lower.contains(w))
        })
        .map(quote)
        .collect()
}

/// The values of `counted` by frequency (then first seen), at most `limit`.
fn most_frequent<'a>(counted: impl Iterator<Item = &'a String>, limit: usize) -> Vec<String> {
    let mut counts: HashMap<&str, (usize, usize)> = HashMap::new();
    for (i, value) in counted.enumerate() {
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        counts.entry(value).or_insert((0, i)).0 += 1;
    }
    let mut ranked: Vec<(&str, (usize, usize))> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
    ranked
        .into_iter()
        .take(limit)
        .map(|(v, _)| cut(v, QUOTE_CHARS / 2))
        .collect()
}

fn string_list<'a>(source: &'a Value, key: &str) -> impl Iterator<Item = &'a String> {
    source
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| match v {
            Value::String(s) => Some(s),
            _ => None,
        })
}

/// A text on one line, cut to [`QUOTE_CHARS`].
fn quote(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    cut(&one_line, QUOTE_CHARS)
}

fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Origin;
    use crate::record::{parse_record, ParseOptions};
    use serde_json::json;

    fn record(value: Value) -> Record {
        parse_record(value, &Origin::file("t"), &ParseOptions::default()).unwrap()
    }

    fn message(i: u64, role: &str, text: &str, via: Option<&str>) -> Record {
        let mut v = json!({"id": format!("s:{i}"), "kind": "message", "role": role, "session_id": "s",
                           "turn_index": i, "text": text, "files": ["src/lexer.rs"], "commands": ["cargo test lexer"]});
        if let Some(via) = via {
            v["origin"] =
                json!({"path": "s.jsonl", "format": "claude-code", "line": i, "via": via});
        }
        record(v)
    }

    #[test]
    fn a_digest_keeps_the_subject_in_bounded_size() {
        let long = "word ".repeat(5_000);
        let messages = [
            message(0, "user", "The tokenizer test in tests/lexer.rs fails one run in ten; find out why", Some("ingest")),
            message(1, "assistant", "The root cause is the HashMap iteration order in the keyword table. I switched to a BTreeMap.", Some("ingest")),
            message(2, "user", &long, Some("evict")),
            message(3, "assistant", "All 12 tests pass now.", None),
        ];
        let refs: Vec<&Record> = messages.iter().collect();
        let d = digest(&refs, &[]);
        assert!(
            d.text
                .contains("First prompt: The tokenizer test in tests/lexer.rs fails"),
            "{}",
            d.text
        );
        assert!(
            d.text.contains("root cause is the HashMap iteration order"),
            "{}",
            d.text
        );
        assert!(
            d.text.contains("Last outcome: All 12 tests pass now."),
            "{}",
            d.text
        );
        assert!(d.text.chars().count() <= MAX_TEXT_CHARS + 1);
        assert_eq!(d.files, vec!["src/lexer.rs"]);
        assert_eq!(d.commands, vec!["cargo test lexer"]);
        assert_eq!(
            d.written,
            Written {
                ingested: 2,
                evicted: 1,
                added: 1
            }
        );
        assert_eq!(
            d.written.describe(),
            "2 ingested from transcripts, 1 evicted from a live context, 1 added as records"
        );
        // With the session's own summaries, those stand for the content.
        let task = record(
            json!({"session_id": "s", "task_id": "1", "subject": "Make the lexer test deterministic",
                                 "key_outcomes": ["keyword table is a BTreeMap"]}),
        );
        let d = digest(&refs, &[task]);
        assert!(
            d.text
                .contains("[task] Make the lexer test deterministic: keyword table is a BTreeMap"),
            "{}",
            d.text
        );
        assert!(!d.text.contains("First prompt"));
    }
}
