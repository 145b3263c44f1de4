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
//!
//! Each kind of piece is a room of its own: `prose.rs` reads assistant texts
//! (sentences, decisions, outcomes), `errors.rs` reads tool results (the lines
//! that say what went wrong), `shell.rs` reads shell commands (the files they
//! write). This file holds what they share and the project-relative paths.

mod errors;
mod prose;
mod shell;

#[cfg(test)]
mod tests;

pub use errors::{errors, never_ran};
pub use prose::{decisions, outcomes, prose_sentences, Sentence};
pub use shell::shell_written_files;

/// Longest line kept.
pub const SNIPPET_CHARS: usize = 240;

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
