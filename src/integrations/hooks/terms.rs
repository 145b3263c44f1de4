//! Terms: the words that tell what a piece of conversation is about.
//!
//! Cold detection asks "is this task or topic still being talked about?". The
//! answer compares *terms*: lower-cased words of three or more characters
//! (identifiers and file names kept whole, `checkpoint.go` stays one term and
//! also gives `checkpoint`), without English stop words and the words every
//! coding session uses (`file`, `test`, `run`…), which would make every topic
//! look alive.

use std::collections::BTreeSet;

/// Most terms kept for one turn: enough for mention tests, bounded state.
pub const MAX_TERMS_PER_TURN: usize = 400;

/// Words too common in agent conversations to say anything about a topic.
const STOP_WORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "that",
    "this",
    "with",
    "from",
    "are",
    "was",
    "were",
    "will",
    "would",
    "should",
    "could",
    "can",
    "not",
    "but",
    "you",
    "your",
    "our",
    "all",
    "any",
    "has",
    "have",
    "had",
    "its",
    "into",
    "out",
    "use",
    "used",
    "using",
    "let",
    "lets",
    "now",
    "then",
    "than",
    "there",
    "here",
    "what",
    "when",
    "where",
    "which",
    "who",
    "why",
    "how",
    "also",
    "just",
    "like",
    "make",
    "made",
    "need",
    "needs",
    "see",
    "one",
    "two",
    "get",
    "got",
    "set",
    "new",
    "add",
    "added",
    "adding",
    "them",
    "they",
    "these",
    "those",
    "their",
    "some",
    "more",
    "most",
    "only",
    "each",
    "other",
    "about",
    "after",
    "before",
    "over",
    "under",
    "again",
    "still",
    "both",
    "does",
    "did",
    "done",
    "doing",
    "been",
    "being",
    "into",
    "via",
    "per",
    "yes",
    "okay",
    "sure",
    "file",
    "files",
    "line",
    "lines",
    "code",
    "test",
    "tests",
    "run",
    "running",
    "check",
    "let's",
    "i'll",
    "i'm",
    "it's",
    "don't",
    "true",
    "false",
    "null",
    "none",
    "self",
    "string",
    "return",
    "update",
    "updated",
    "updating",
    "change",
    "changes",
    "changed",
    "first",
    "next",
    "look",
    "looks",
    "read",
    "write",
    "edit",
    "want",
    "way",
    "work",
    "works",
    "working",
    "good",
    "great",
    "fix",
    "fixed",
    "well",
    "may",
    "might",
    "must",
    "same",
    "because",
    "while",
    "into",
    "user",
    "users",
    "call",
    "calls",
    "value",
    "values",
    "data",
    "type",
    "types",
    "name",
    "way",
    "tool",
    "result",
    "task",
    "todo",
    "thing",
    "things",
    "seems",
    "able",
    "already",
    "instead",
    "need",
    "sure",
    "following",
    "based",
    "what's",
    "that's",
    "there's",
    "his",
    "her",
    "she",
];

fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// The distinct terms of `text`, in first-seen order, at most `limit`.
/// The text is redacted first: a term list is saved in the session state,
/// and a secret split into words no longer looks like one.
pub fn terms(text: &str, limit: usize) -> Vec<String> {
    let redacted = crate::privacy::Redactor::builtin().redact(text);
    let text: &str = &redacted.text;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut add = |term: &str, out: &mut Vec<String>| {
        if out.len() < limit && seen.insert(term.to_string()) {
            out.push(term.to_string());
        }
    };
    for raw in text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))) {
        let word = raw.trim_matches(|c: char| matches!(c, '.' | '-' | '_'));
        if word.len() < 3 || word.len() > 64 {
            continue;
        }
        let lower = word.to_lowercase();
        if lower.chars().all(|c| c.is_ascii_digit() || c == '.') {
            continue;
        }
        let compound = lower.contains(['.', '-', '_']);
        if compound {
            // `checkpoint.go` is a term, and so are its parts.
            add(&lower, &mut out);
            for part in lower.split(['.', '-', '_']) {
                if part.len() >= 3
                    && !is_stop_word(part)
                    && !part.chars().all(|c| c.is_ascii_digit())
                {
                    add(part, &mut out);
                }
            }
        } else if !is_stop_word(&lower) {
            add(&lower, &mut out);
        }
        if out.len() >= limit {
            break;
        }
    }
    out
}

/// Whether a turn with `turn_terms` mentions a subject with `key_terms`: it holds
/// at least 60% of them (all of one or two, two of three, three of four or five…).
pub fn mentions(turn_terms: &BTreeSet<&str>, key_terms: &[String]) -> bool {
    if key_terms.is_empty() {
        return false;
    }
    let needed = (key_terms.len() * 3).div_ceil(5).max(1);
    key_terms
        .iter()
        .filter(|t| turn_terms.contains(t.as_str()))
        .count()
        >= needed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_keep_identifiers_and_drop_common_words() {
        let t = terms(
            "Add summary types to checkpoint/checkpoint.go and run the tests",
            100,
        );
        assert_eq!(t, ["summary", "checkpoint", "checkpoint.go"]);
        assert!(terms("parse_config(cfg) E0502", 100).contains(&"parse_config".to_string()));
        assert_eq!(terms("a b cd 123 1.2.3", 100), Vec::<String>::new());
    }

    #[test]
    fn mention_needs_most_key_terms() {
        let key = terms("Retry with exponential backoff", 10);
        assert_eq!(key, ["retry", "exponential", "backoff"]);
        let turn = terms("the backoff is exponential now", 100);
        let set: BTreeSet<&str> = turn.iter().map(String::as_str).collect();
        assert!(mentions(&set, &key));
        let turn = terms("only the retry remains", 100);
        let set: BTreeSet<&str> = turn.iter().map(String::as_str).collect();
        assert!(!mentions(&set, &key));
        assert!(!mentions(&set, &[]));
    }
}
