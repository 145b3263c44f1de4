//! What a careful reader keeps from a stretch of an agent's work: the decisions
//! it states, the outcomes it reports, the errors it meets and the files its
//! shell commands write.
//!
//! Everything here reads one piece of a transcript (an assistant text, a tool
//! result, a shell command) and returns short lines, or nothing. The rules lean
//! towards keeping less: a summary line that is noise ("I'll use that.", a quoted
//! example, a table row, "Exit code 1", a rejected tool call) costs the reader
//! more than a missing one, so each rule drops what it cannot read well.
//! `tests/summary_quality.rs` measures them against labels of real sessions.

use super::session::cut;

/// Longest line kept.
pub const SNIPPET_CHARS: usize = 240;

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

/// Whether a tool result says the call never ran: refused by the harness
/// (`<tool_use_error>`), rejected or interrupted by the user.
pub fn never_ran(content: &str) -> bool {
    let head: String = content.chars().take(400).collect::<String>().to_lowercase();
    head.trim_start().starts_with("<tool_use_error>")
        || head.contains("the user doesn't want to proceed")
        || head.contains("the user doesn't want to take this action")
        || head.contains("tool use was rejected")
        || head.contains("request interrupted by user")
        || head.contains("user rejected")
        || head.contains("permission to use")
}

/// Failures that are about how a tool was called, not about the work: a file
/// not read before editing, an edit string not found, a rejected or interrupted
/// call, a wrong folder. A reader does not keep them.
fn is_tool_hiccup(content: &str) -> bool {
    let head: String = content.chars().take(400).collect::<String>().to_lowercase();
    never_ran(content)
        || head.contains("no such file or directory")
        || head.contains("directory not found")
        || head.contains("does not exist")
        || head.contains("command not found")
        || head.contains("cannot access")
}

/// Words with which a diagnostic line says something is wrong.
const ERROR_WORDS: &[&str] = &[
    "error",
    "undefined",
    "cannot",
    "can't",
    "failed",
    "fail",
    "panic",
    "expected",
    "unexpected",
    "mismatch",
    "invalid",
    "missing",
    "not ",
    "must",
    "should",
    "got ",
    "want",
    "unused",
    "undeclared",
    "unknown",
    "unresolved",
    "no such",
    "denied",
    "refused",
    "timeout",
    "timed out",
    "overflow",
    "illegal",
    "wrong",
    "conflict",
    "duplicate",
    "deprecated",
    "warning",
];

/// How telling a line of tool output is as an error, 0 when not at all.
fn error_rank(line: &str) -> u8 {
    let lower = line.to_lowercase();
    // Task runners' and tools' summary lines say that something failed, not what.
    if lower.contains("task failed")
        || lower.starts_with("exit code")
        || lower.starts_with("make: ***")
        || lower.contains("exit status")
        || lower.ends_with(" issues:")
        || lower.ends_with(" issue:")
        || lower.starts_with("finished in")
        || lower.starts_with("error: process didn't exit successfully")
        || lower.starts_with("error: could not compile")
        || lower.starts_with("error: aborting")
        || lower.starts_with("warning:")
    {
        return 0;
    }
    // `path:line:col: message` or `path:line: message` diagnostics.
    let diagnostic = {
        let mut parts = line.splitn(4, ':');
        let file = parts.next().unwrap_or_default();
        let line_no = parts.next().unwrap_or_default();
        file.contains('.')
            && !file.contains(' ')
            && !line_no.is_empty()
            && line_no.chars().all(|c| c.is_ascii_digit())
            && parts.next().is_some()
    };
    // A `file:line: …` line from a test's log says nothing failed unless it
    // says so (words of failure) or names the linter that flagged it.
    let says_failure = ERROR_WORDS.iter().any(|w| lower.contains(w))
        || lower.trim_end().ends_with(')')
            && lower.rsplit('(').next().is_some_and(|tag| {
                tag.trim_end_matches(')')
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
    if diagnostic && !says_failure {
        return 1;
    }
    if diagnostic
        || lower.starts_with("error[")
        || lower.starts_with("panic:")
        || lower.starts_with("fatal:")
        || lower.starts_with("conflict")
        || lower.contains("error:")
        || lower.contains("exception:")
        || lower.contains("assertionerror")
        || lower.starts_with("thread '") && lower.contains("panicked")
    {
        return 3;
    }
    if lower.starts_with("--- fail")
        || lower.starts_with("failed ")
        || lower.contains(" failed,")
        || lower.contains("failures:")
    {
        return 2;
    }
    // `FAIL <package> 5.3s`: which package, not what failed.
    if lower.starts_with("fail\t") || lower.starts_with("fail ") {
        return 1;
    }
    if lower.contains("error") || lower.contains("failed") {
        return 1;
    }
    0
}

/// A tool-output line without the prefixes task runners put before it
/// (`[lint:go] `) and without surrounding space.
fn strip_runner_prefix(line: &str) -> &str {
    let line = line.trim();
    if line.starts_with('[') {
        if let Some(end) = line.find("] ") {
            if !line[1..end].contains(' ') {
                return line[end + 2..].trim();
            }
        }
    }
    line
}

/// The errors a tool result reports, at most three lines, most telling first.
/// `is_error` is the tool's own failure flag; a shell command whose output was
/// piped (`| tail`) fails without it, so `from_shell` results are read too, but
/// only their strongest lines (diagnostics, panics, test failures) count.
pub fn errors(content: &str, is_error: bool, from_shell: bool) -> Vec<String> {
    if !(is_error || from_shell) || is_tool_hiccup(content) {
        return Vec::new();
    }
    let min_rank = if is_error { 1 } else { 2 };
    let lines: Vec<&str> = content
        .lines()
        .map(strip_runner_prefix)
        .filter(|l| !l.is_empty())
        .collect();
    let mut ranked: Vec<(u8, usize)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.len() >= 8)
        .map(|(i, l)| (error_rank(l), i))
        .filter(|(rank, _)| *rank >= min_rank)
        .collect();
    let best = ranked.iter().map(|(r, _)| *r).max().unwrap_or(0);
    ranked.retain(|(r, _)| *r == best);
    let mut out: Vec<String> = Vec::new();
    for (_, i) in ranked {
        // `Error: Not equal:` or `… would be overwritten by merge:` goes on
        // the next line: keep that line with it.
        let line = match lines.get(i + 1) {
            Some(next) if lines[i].trim_end().ends_with(':') => {
                format!("{} {}", lines[i].trim_end(), next.trim())
            }
            _ => lines[i].to_string(),
        };
        let line = cut(&line, SNIPPET_CHARS);
        if !out.contains(&line) {
            out.push(line);
        }
        if out.len() >= 3 {
            break;
        }
    }
    out
}

/// Files a shell command writes: the file arguments of in-place editors
/// (`sed -i`, `perl -pi`), of `tee`, `mv`, `git mv`, `rm`, `git rm`, `touch`,
/// `truncate`, the target of `cp`, output redirections (`> file`), and the
/// files a `for f in …` loop hands to one of them. Temporary and device files
/// are left out.
pub fn shell_written_files(command: &str) -> Vec<String> {
    let words = shell_words(command);
    let mut out: Vec<String> = Vec::new();
    let mut loop_var_written = false;
    for simple in words.split(|w| is_separator(w)) {
        let args = program_and_args(simple);
        let Some((program, rest)) = args.split_first() else {
            continue;
        };
        let files: Vec<&String> = rest.iter().filter(|w| looks_like_file(w)).collect();
        let writes = match program.as_str() {
            "sed" => rest
                .iter()
                .any(|w| w.starts_with("-i") || w == "--in-place"),
            "perl" => rest
                .iter()
                .any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('i')),
            "tee" | "mv" | "rm" | "touch" | "truncate" => true,
            "cp" => {
                out.extend(files.last().map(|f| f.to_string()));
                false
            }
            _ => false,
        };
        if writes {
            out.extend(files.iter().map(|f| f.to_string()));
            loop_var_written |= rest.iter().any(|w| w.starts_with('$'));
        }
    }
    if loop_var_written {
        // `for f in a.go b.go; do sed -i … "$f"; done`: the list is what is written.
        if let Some(at) = words.iter().position(|w| w == "for") {
            let list = words[at..]
                .iter()
                .skip_while(|w| *w != "in")
                .skip(1)
                .take_while(|w| !is_separator(w));
            out.extend(list.filter(|w| looks_like_file(w)).cloned());
        }
    }
    for (i, word) in words.iter().enumerate() {
        if matches!(word.as_str(), ">" | ">>" | "1>") {
            if let Some(target) = words.get(i + 1).filter(|t| looks_like_file(t)) {
                out.push(target.clone());
            }
        } else if let Some(target) = word
            .strip_prefix(">>")
            .or_else(|| word.strip_prefix('>'))
            .filter(|t| looks_like_file(t))
        {
            out.push(target.to_string());
        }
    }
    let mut unique = Vec::new();
    for file in out {
        if !unique.contains(&file) {
            unique.push(file);
        }
    }
    unique
}

fn is_separator(word: &str) -> bool {
    matches!(
        word,
        ";" | "&&" | "||" | "|" | "&" | "do" | "then" | "else" | "done" | "fi"
    )
}

/// A simple command from its program on: without leading `if`, `!`, `sudo`,
/// `xargs`, variable assignments, and with `git mv` / `git rm` as `mv` / `rm`.
fn program_and_args(words: &[String]) -> &[String] {
    let mut i = 0;
    while i < words.len()
        && (matches!(
            words[i].as_str(),
            "if" | "!" | "sudo" | "xargs" | "time" | "command" | "while"
        ) || (words[i].contains('=') && !words[i].starts_with('-')))
    {
        i += 1;
    }
    if words.get(i).is_some_and(|w| w == "git")
        && words.get(i + 1).is_some_and(|w| w == "mv" || w == "rm")
    {
        i += 1;
    }
    &words[i..]
}

/// A path to a project file: has an extension, is not a flag, a glob, a
/// variable, a URL, a pattern (backslashes) or a temporary or device file.
fn looks_like_file(word: &str) -> bool {
    let word = word.trim_end_matches(';');
    if word.is_empty()
        || word.starts_with('-')
        || word.starts_with('$')
        || word.contains([
            '*', '?', '\\', '$', '=', ':', '{', '}', '"', '\'', '<', '>', '|',
        ])
        || word.starts_with("/tmp/")
        || word.starts_with("/dev/")
        || word.starts_with("/var/folders/")
        || word.contains("://")
    {
        return false;
    }
    let name = word.rsplit('/').next().unwrap_or(word);
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (1..=8).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        }
        None => false,
    }
}

/// A shell command split into words: quotes group (and are removed), `;`, `&&`,
/// `||` and `|` stand alone, newlines separate.
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    let flush = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            words.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None => match c {
                // Quotes group; a quoted script such as 's/a\.b/c/' is still
                // never taken for a path (see `looks_like_file`).
                '\'' | '"' => quote = Some(c),
                ' ' | '\t' | '\r' => flush(&mut word, &mut words),
                '\n' => {
                    flush(&mut word, &mut words);
                    if word_before_newline_continues(&words) {
                        words.pop();
                    } else {
                        words.push(";".into());
                    }
                }
                ';' => {
                    flush(&mut word, &mut words);
                    words.push(";".into());
                }
                '|' | '&' => {
                    flush(&mut word, &mut words);
                    let mut op = c.to_string();
                    if chars.peek() == Some(&c) {
                        op.push(c);
                        chars.next();
                    }
                    words.push(op);
                }
                _ => word.push(c),
            },
        }
    }
    flush(&mut word, &mut words);
    words
}

/// A backslash before a newline continues the line: the `\\` word goes.
fn word_before_newline_continues(words: &[String]) -> bool {
    words.last().is_some_and(|w| w == "\\")
}

/// `path` relative to the project folder `cwd` when it lies inside it.
pub fn project_path(path: &str, cwd: Option<&str>) -> String {
    let path = path.trim();
    if let Some(cwd) = cwd
        .map(|c| c.trim_end_matches('/'))
        .filter(|c| !c.is_empty())
    {
        if let Some(rest) = path.strip_prefix(cwd).and_then(|r| r.strip_prefix('/')) {
            if !rest.is_empty() {
                return rest.to_string();
            }
        }
    }
    path.strip_prefix("./").unwrap_or(path).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_pronoun_decisions_are_noise() {
        assert!(decisions("I'll use that.").is_empty());
        assert!(decisions("OK, I'll use this instead.").is_empty());
        assert_eq!(
            decisions(
                "I'll use a jittered backoff instead of a fixed delay, capped at 30 seconds."
            ),
            ["I'll use a jittered backoff instead of a fixed delay, capped at 30 seconds."]
        );
    }

    #[test]
    fn quoted_examples_are_not_decisions() {
        let text = r#"The summary has sections (e.g., "Files Summary", "Key Decisions") and a header line for each."#;
        assert!(decisions(text).is_empty(), "{:?}", decisions(text));
        assert!(decisions("Rename `decision_cues` to `cues` in the module file.").is_empty());
    }

    #[test]
    fn table_rows_code_and_headings_are_not_decisions() {
        let text = "| Option | Decision |\n|---|---|\n| A | use PKCE instead of implicit flow |\n\
                    ```rust\n// decided: use a TTL instead of flushing\nlet x = 1;\n```\n\
                    ## Decision: rather than that\n    instead of indented code here";
        assert!(decisions(text).is_empty(), "{:?}", decisions(text));
    }

    #[test]
    fn questions_and_options_are_not_decisions() {
        let text = "Should we use a mutex instead of a channel here? \
                    If we move it to paths, we would import strategy instead of the other way round. \
                    Option 2 is cleanest long-term but bigger refactor rather than a quick fix.";
        assert!(decisions(text).is_empty(), "{:?}", decisions(text));
    }

    #[test]
    fn causes_and_choices_are_decisions() {
        let text = "The root cause was a missing import of the backoff module. \
                    Since it is exported, I'll leave it in place for now and note it.";
        assert_eq!(decisions(text).len(), 2);
    }

    #[test]
    fn outcomes_report_results_not_plans() {
        let text =
            "Now let me run the tests.\nRemove from manual_commit_session.go initialization:\n\
                    All tests pass, including the new wingman tests. Lint passes clean (0 issues).";
        assert_eq!(
            outcomes(text),
            [
                "All tests pass, including the new wingman tests.",
                "Lint passes clean (0 issues)."
            ]
        );
        assert!(outcomes("Task 3: Remove TranscriptPath from session.State**").is_empty());
    }

    #[test]
    fn rejections_and_bare_exit_codes_are_not_errors() {
        let rejected = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file).";
        assert!(errors(rejected, true, false).is_empty());
        assert!(errors("Exit code 1", true, true).is_empty());
        assert!(errors(
            "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
            true,
            false
        )
        .is_empty());
        assert!(errors(
            "Exit code 1\n(eval):cd:1: no such file or directory: cmd/x",
            true,
            true
        )
        .is_empty());
    }

    #[test]
    fn errors_are_the_telling_lines() {
        let lint = "Exit code 1\n[lint:gofmt] $ ~/cli/mise-tasks/lint/gofmt\n[lint:gomod] go: downloading x v1\n\
                    [lint:go] cmd/cli/review.go:248:10: G204: Subprocess launched with variable (gosec)\n\
                    [lint:go] \t\tcmd := exec.CommandContext(ctx)\n\
                    [lint:go] cmd/cli/review.go:346:3: error is not nil (line 344) but it returns nil (nilerr)\n\
                    [lint:go] 2 issues:\n[lint:go] ERROR task failed";
        assert_eq!(
            errors(lint, true, true),
            [
                "cmd/cli/review.go:248:10: G204: Subprocess launched with variable (gosec)",
                "cmd/cli/review.go:346:3: error is not nil (line 344) but it returns nil (nilerr)"
            ]
        );
        // Piped output (no error flag): only strong lines count.
        let piped = "ok  \tpkg/a\t0.1s\n--- FAIL: TestList (0.01s)\npanic: invalid checkpoint ID \"multi1\": must be 12 hex [recovered]\nFAIL\tpkg/b\t0.2s";
        assert_eq!(
            errors(piped, false, true),
            ["panic: invalid checkpoint ID \"multi1\": must be 12 hex [recovered]"]
        );
        assert!(errors("grep found: error handling in a.go", false, true).is_empty());
        // A test's log lines look like diagnostics; only the failing one counts.
        let go_test = "=== RUN   TestAttribution\n    commit_test.go:1972: checkpoint 1: expected 0 user lines added, got 4\n    commit_test.go:2015: Checkpoint 2 PromptAttribution: user_added=6, agent_added=4\n--- FAIL: TestAttribution (0.02s)";
        assert_eq!(
            errors(go_test, true, true),
            ["commit_test.go:1972: checkpoint 1: expected 0 user lines added, got 4"]
        );
        assert!(errors("test result: ok. 12 passed; 0 failed", false, true).is_empty());
    }

    #[test]
    fn shell_commands_that_write_files() {
        let loop_ = "for file in cmd/a/hooks.go \\\n  cmd/a/b_test.go; do\n  if ! grep -q \"paths\\.\" \"$file\"; then\n    sed -i '' '/paths\"/d' \"$file\"\n  fi\ndone";
        assert_eq!(
            shell_written_files(loop_),
            ["cmd/a/hooks.go", "cmd/a/b_test.go"]
        );
        assert_eq!(
            shell_written_files("sed -i 's/a\\.b/c/g' src/x.rs"),
            ["src/x.rs"]
        );
        assert_eq!(
            shell_written_files("git mv src/old.rs src/new.rs"),
            ["src/old.rs", "src/new.rs"]
        );
        assert_eq!(
            shell_written_files("cat > notes/plan.md <<'EOF'\nx\nEOF"),
            ["notes/plan.md"]
        );
        assert_eq!(
            shell_written_files("cp a/template.toml config.toml"),
            ["config.toml"]
        );
        assert!(shell_written_files("grep -rn 'x' src/lib.rs > /tmp/out.txt").is_empty());
        assert!(shell_written_files("cargo test 2>&1 | tail -30").is_empty());
        assert!(shell_written_files("grep -n foo src/main.rs").is_empty());
    }

    #[test]
    fn paths_are_shown_relative_to_the_project() {
        assert_eq!(
            project_path("/home/u/p/src/a.rs", Some("/home/u/p")),
            "src/a.rs"
        );
        assert_eq!(project_path("/etc/hosts", Some("/home/u/p")), "/etc/hosts");
        assert_eq!(project_path("./src/a.rs", None), "src/a.rs");
    }
}
