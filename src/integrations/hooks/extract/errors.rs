//! Tool results that say something went wrong: the most telling lines of their
//! output, without task runners' summary lines and without the hiccups of how a
//! tool was called (a rejected call, a file not read before editing).

use super::SNIPPET_CHARS;
use crate::integrations::hooks::session::cut;

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
