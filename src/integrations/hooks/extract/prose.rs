//! Assistant texts as a reader reads them: the prose sentences (not code,
//! tables, headings or quotes), the ones that state a decision or a found cause,
//! and the ones that report a result rather than announce work.

use super::SNIPPET_CHARS;
use crate::integrations::hooks::session::cut;

/// Phrases that state a choice or a found cause, in a lower-cased sentence with
/// its quoted spans blanked out.
const DECISION_CUES: &[&str] = &[
    "decided",
    "decision:",
    "decision is",
    "decision was",
    "the decision to",
    "chose ",
    "choosing ",
    "opted ",
    "going with",
    "settled on",
    "instead of",
    "instead.",
    "rather than",
    "better to ",
    "i'll use",
    "we'll use",
    "i will use",
    "let's use",
    "i'll keep",
    "i'll leave",
    "i'll skip",
    "we'll keep",
    "let's keep",
    "i need to use",
    "we need to use",
    "root cause",
    "the problem was",
    "the problem is that",
    "the issue was",
    "the issue is that",
    "the fix is",
    "the fix was",
    "the cleanest fix",
    "the right fix",
    "the real fix",
    "the right approach",
    "without breaking",
    "don't fix",
    "not worth",
];

/// Sentence openings that make a statement hypothetical or a question, not a decision.
const HYPOTHETICAL: &[&str] = &[
    "if ",
    "when ",
    "would ",
    "could ",
    "should ",
    "maybe",
    "perhaps",
    "option ",
    "or ",
    "it would",
    "that would",
    "this would",
    "it could",
    "we could",
];

/// Words that report a result anywhere in a sentence, matched as whole words.
const OUTCOME_WORDS: &[&str] = &[
    "fixed",
    "succeeded",
    "succeeds",
    "successful",
    "successfully",
    "resolved",
];

/// Words that report a result only in a short report ("Done.", "Fixed and
/// committed.", "Lint is clean.") or at its start ("Committed the rename"): in
/// longer prose they describe things ("the committed hash", "done with a map").
const SHORT_REPORT_WORDS: &[&str] = &[
    "committed",
    "pushed",
    "merged",
    "done",
    "completed",
    "clean",
];

/// What a test run, a build or a linter is called, before "pass(es)".
const CHECKS: &[&str] = &[
    "test", "tests", "check", "checks", "suite", "lint", "linter", "build", "ci", "specs", "all",
];

/// Verbs of work done, after "I" or "we" ("I added …", "we've replaced …").
const DONE_VERBS: &[&str] = &[
    "added",
    "updated",
    "removed",
    "created",
    "moved",
    "changed",
    "fixed",
    "implemented",
    "replaced",
    "extracted",
    "renamed",
    "wrote",
    "refactored",
    "documented",
    "restored",
    "reverted",
];

/// Sentence openings that announce work rather than report it.
const NARRATION: &[&str] = &[
    "let me",
    "now let me",
    "let's",
    "i'll",
    "i will",
    "i need",
    "i'm going",
    "next",
    "first",
    "then",
    "now i",
    "now add",
    "now update",
    "now run",
    "now check",
    "now fix",
    "now pass",
    "now the",
    "starting",
    "looking",
];

/// A sentence of an assistant text, and whether it came from a list item
/// (`- …`, `1. …`, `✅ …`), where summaries enumerate details.
#[derive(Debug, Clone, PartialEq)]
pub struct Sentence {
    /// The sentence's text.
    pub text: String,
    /// Whether it came from a list item.
    pub list_item: bool,
}

/// The sentences of an assistant text a reader would read as prose: not code
/// (inside ``` fences, or indented), not table rows, not headings, not quotes.
/// Sentences end at `.`, `!` or `?` followed by a space (so `test.go` stays
/// whole), and at line ends.
pub fn prose_sentences(text: &str) -> Vec<Sentence> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for raw in text.lines() {
        let line = raw.trim();
        if line.starts_with("```") || line.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence
            || line.is_empty()
            || raw.starts_with("    ")
            || raw.starts_with('\t')
            || line.starts_with('|')
            || line.starts_with('#')
            || line.starts_with('>')
            || line.starts_with("//")
            || line.starts_with('+')
        {
            continue;
        }
        // List markers go; the words stay, marked as a list item.
        let words = line
            .trim_start_matches(|c: char| c == '-' || c == '•' || c.is_whitespace())
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start_matches(['.', ')', ' ']);
        let list_item = words.len() != line.len()
            || line
                .chars()
                .next()
                .is_some_and(|c| !c.is_alphanumeric() && !"*`\"'([_".contains(c));
        let words =
            words.trim_start_matches(|c: char| !c.is_alphanumeric() && !"*`\"'([_".contains(c));
        let bytes = words.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1) == Some(&b' ') {
                push_sentence(&mut out, &words[start..=i], list_item);
                start = i + 1;
            }
        }
        push_sentence(&mut out, &words[start..], list_item);
    }
    out
}

fn push_sentence(out: &mut Vec<Sentence>, sentence: &str, list_item: bool) {
    let s = sentence.trim().trim_matches('*').trim();
    if !s.is_empty() {
        out.push(Sentence {
            text: s.to_string(),
            list_item,
        });
    }
}

/// `text` lower-cased with quoted spans ("…", `…`, (…)) blanked, so a cue word
/// quoted as an example or an identifier does not count.
fn unquoted_lower(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut closing: Option<char> = None;
    for c in text.chars() {
        match closing {
            Some(end) if c == end => {
                closing = None;
                out.push(' ');
            }
            Some(_) => out.push(' '),
            None => match c {
                '"' => closing = Some('"'),
                '“' => closing = Some('”'),
                '`' => closing = Some('`'),
                '(' => closing = Some(')'),
                _ => out.extend(c.to_lowercase()),
            },
        }
    }
    out
}

/// Words of a sentence (letters or digits), for length tests.
fn word_count(text: &str) -> usize {
    text.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

/// Whether a lower-cased sentence names who chose: I, we, let's, or an
/// imperative or past verb of choice at its start ("Used X instead of Y").
fn has_chooser(lower: &str) -> bool {
    const OPENERS: &[&str] = &[
        "instead", "rather", "use ", "used ", "keep ", "kept ", "switch", "chose", "went ",
        "leave ", "left ", "skip", "prefer",
    ];
    let lead = lower.trim_start();
    lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .any(|w| {
            matches!(
                w,
                "i" | "we" | "i'll" | "we'll" | "i've" | "we've" | "i'd" | "let's" | "our" | "my"
            )
        })
        || OPENERS.iter().any(|o| lead.starts_with(o))
}

/// Whether a sentence is a change-log entry: a code span or bold label, then
/// `:` or ` - ` (`` `run()`: use the new helper ``).
fn is_change_entry(text: &str) -> bool {
    let t = text.trim_start();
    (t.starts_with('`') || t.starts_with("**"))
        && t.find(['`', '*']).is_some()
        && t.char_indices()
            .skip(1)
            .find(|&(_, c)| c == '`' || c == '*')
            .is_some_and(|(i, _)| {
                let rest = t[i..].trim_start_matches(['`', '*', ')', '(']);
                rest.starts_with(':') || rest.starts_with(" -") || rest.starts_with(" —")
            })
}

/// Sentences of an assistant text that state a decision or a found cause, at
/// most three: a cue outside quotes, at least six words, not a question, not a
/// hypothesis or an option being weighed, not narration of the next step
/// ("Let me …"), not a change-log entry; a comparison ("instead of", "rather
/// than") counts only when someone chose it.
pub fn decisions(text: &str) -> Vec<String> {
    const COMPARISONS: &[&str] = &["instead of", "instead.", "rather than", "better to "];
    let mut out = Vec::new();
    for sentence in prose_sentences(text) {
        let s = &sentence.text;
        if word_count(s) < 6 || s.ends_with('?') || s.ends_with(':') || is_change_entry(s) {
            continue;
        }
        let lower = unquoted_lower(s);
        let lead = lower.trim_start();
        if HYPOTHETICAL.iter().any(|h| lead.starts_with(h))
            || lead.starts_with("let me")
            || lead.starts_with("now let me")
        {
            continue;
        }
        let cue = DECISION_CUES.iter().find(|cue| lower.contains(*cue));
        let counts = match cue {
            Some(cue) if COMPARISONS.contains(cue) => has_chooser(&lower),
            Some(_) => true,
            None => false,
        };
        if counts {
            out.push(cut(s, SNIPPET_CHARS));
            if out.len() >= 3 {
                break;
            }
        }
    }
    out
}

/// Whether a lower-cased sentence reports a result: a result word, a check
/// that passes ("all tests pass"), "I added …" or "Created …", or something
/// that "now handles …"; not negated just before ("nothing was committed").
fn reports_result(lower: &str) -> bool {
    if lower.contains("0 issues") || lower.contains("no issues") {
        return true;
    }
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    let negated_before = |i: usize| {
        words[i.saturating_sub(6)..i].iter().any(|w| {
            matches!(*w, "not" | "nothing" | "none" | "never" | "no" | "without")
                || w.ends_with("n't")
        })
    };
    let result_at = |i: usize| -> bool {
        let w = words[i];
        let prev = if i > 0 { words[i - 1] } else { "" };
        let next = words.get(i + 1).copied().unwrap_or("");
        let passes = matches!(w, "pass" | "passes" | "passed" | "passing")
            && words[i.saturating_sub(4)..i]
                .iter()
                .any(|p| CHECKS.contains(p))
            && !matches!(next, "through" | "to" | "in" | "into" | "the" | "a");
        let done = DONE_VERBS.contains(&w)
            && (i == 0 || matches!(prev, "i" | "we" | "i've" | "we've" | "have"));
        let now_does = prev == "now" && w.len() > 3 && w.ends_with('s')
            || i >= 2
                && words[i - 2] == "now"
                && matches!(prev, "only" | "also" | "correctly" | "properly")
                && w.len() > 3
                && w.ends_with('s');
        let short_report = SHORT_REPORT_WORDS.contains(&w) && (words.len() <= 8 || i < 3);
        passes || done || now_does || short_report || OUTCOME_WORDS.contains(&w)
    };
    (0..words.len()).any(|i| result_at(i) && !negated_before(i))
}

/// Sentences of an assistant text that report a result ("All tests pass.",
/// "I added a comment documenting the limitation."), not ones announcing work
/// ("Now let me run the tests.") and not the details a summary lists.
pub fn outcomes(text: &str) -> Vec<String> {
    prose_sentences(text)
        .into_iter()
        .filter(|s| !s.list_item && !s.text.ends_with('?') && word_count(&s.text) >= 2)
        .map(|s| s.text.trim_end_matches(':').to_string())
        .filter(|s| {
            let lower = unquoted_lower(s);
            let lead = lower.trim_start();
            !NARRATION.iter().any(|n| lead.starts_with(n))
                && !lower.contains("let me")
                && reports_result(&lower)
        })
        .map(|s| cut(&s, SNIPPET_CHARS))
        .collect()
}
