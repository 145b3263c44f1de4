//! The session-start brief: what happened lately in this project.
//!
//! When a Claude Code session starts or resumes (`SessionStart` with source
//! `startup` or `resume`), `hook session-start` gives the model a short
//! brief of the project's last sessions: when, what each was about (its task
//! subjects and the topics of the segments the agent wrote, else its first
//! prompt), what it finished and what it left open (the tasks the hooks saw
//! it create and not complete), and how to read more. It fits in
//! `[recall] brief_chars` (1,500 by default) and is empty for a project the
//! store knows nothing of.

use std::path::Path;

use serde_json::Value;

use super::session::SessionState;
use super::{is_hook_summary, read_json, HookFiles, HookInput};
use crate::error::{Error, Result};
use crate::flows::recall::RecallSettings;
use crate::record::{parse::format_time, Kind, Record};
use crate::store::browse::{first_prompt, project_sessions, session_records};
use crate::store::Store;

/// Sessions a brief looks at, at most.
const SESSIONS: usize = 4;
/// Longest line about one thing (a subject, a prompt).
const ITEM_CHARS: usize = 110;

/// The brief for the session of `input`, or `None` when there is nothing to
/// say (no store, brief off, no earlier session of the project).
pub fn brief(store_root: &Path, input: &HookInput) -> Result<Option<String>> {
    let settings = RecallSettings::from_store(store_root)?;
    if !settings.brief {
        return Ok(None);
    }
    let Some(project) = super::recall::project_of_session(input, None) else {
        return Ok(None);
    };
    let store = match Store::open(store_root) {
        Ok(store) => store,
        Err(Error::NoStore { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let searcher = store.reader()?.searcher();
    let files = HookFiles::new(store_root);
    let mut lines = Vec::new();
    for span in project_sessions(&searcher, store.fields(), Some(&project))?
        .into_iter()
        .filter(|s| s.session_id != input.session_id)
        .take(SESSIONS)
    {
        let summaries = session_records(
            &searcher,
            store.fields(),
            &span.session_id,
            &[Kind::Task, Kind::Segment],
        )?;
        let first_prompt = first_prompt(&searcher, store.fields(), &span.session_id)?;
        let state: Option<SessionState> = read_json(&files.state(&span.session_id)).unwrap_or(None);
        let when = span
            .last
            .map(|t| format_time(t).chars().take(10).collect::<String>())
            .unwrap_or_else(|| "undated".into());
        lines.push(session_line(
            &span.session_id,
            &when,
            &summaries,
            first_prompt.as_ref(),
            state.as_ref(),
        ));
    }
    if lines.is_empty() {
        return Ok(None);
    }
    let prefix = super::reminder::command_prefix(store_root);
    let head =
        format!("knowledge-db: recent sessions in this project ({project}), newest first:\n");
    let tail = format!(
        "More: `{prefix} search \"<words>\"` or MCP memory_search; a session's turns: `{prefix} show --session <id> --turns 1-20`.\n"
    );
    let mut out = head;
    for line in lines {
        if out.chars().count() + line.chars().count() + tail.chars().count() > settings.brief_chars
        {
            break;
        }
        out.push_str(&line);
    }
    out.push_str(&tail);
    Ok(Some(out))
}

/// One session of the brief: `- date, session id: what; done; open`.
fn session_line(
    session: &str,
    when: &str,
    summaries: &[Record],
    first_prompt: Option<&Record>,
    state: Option<&SessionState>,
) -> String {
    let mut about: Vec<String> = summaries
        .iter()
        .filter(|r| r.kind == Kind::Task || !is_hook_summary(&r.source))
        .map(|r| clip(&r.fields.title))
        .filter(|t| !t.is_empty())
        .take(3)
        .collect();
    if about.is_empty() {
        if let Some(prompt) = first_prompt {
            about.push(format!("asked \"{}\"", clip(&prompt.fields.content)));
        }
    }
    let mut line = format!("- {when}, session {session}: {}", about.join("; "));
    let open: Vec<String> = state
        .map(|s| {
            s.tasks
                .iter()
                .filter(|t| !matches!(t.status.as_str(), "completed" | "deleted"))
                .map(|t| clip(&t.subject))
                .take(3)
                .collect()
        })
        .unwrap_or_default();
    let done = summaries
        .iter()
        .filter(|r| r.kind == Kind::Task)
        .filter_map(|r| r.source.get("key_outcomes").and_then(Value::as_array))
        .filter_map(|outcomes| outcomes.first().and_then(Value::as_str))
        .next();
    if let Some(done) = done {
        line.push_str(&format!("; done: {}", clip(done)));
    }
    if !open.is_empty() {
        line.push_str(&format!("; left open: {}", open.join("; ")));
    }
    line.push('\n');
    line
}

/// The first line of `text`, cut to [`ITEM_CHARS`] characters.
fn clip(text: &str) -> String {
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    match first.char_indices().nth(ITEM_CHARS) {
        Some((at, _)) => format!("{}…", &first[..at]),
        None => first.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::browse::first_main_prompt;
    use serde_json::json;

    fn message(id: &str, role: &str, timestamp: &str, line: u64, sidechain: bool) -> Record {
        let mut record: Record = serde_json::from_value(json!({
            "id": id, "kind": "message", "namespace": "default", "added_at": timestamp,
            "source": {"role": role, "timestamp": timestamp, "is_sidechain": sidechain,
                       "origin": {"line": line}},
        }))
        .expect("record");
        record.fields.title = role.to_string();
        record
    }

    /// The real Claude Code's session: the main prompt (line 3), then a
    /// subagent's prompt (line 1 of its own file) whose id sorts first; the
    /// brief said the session "asked" the subagent's prompt.
    #[test]
    fn the_first_prompt_is_the_main_chains_earliest_not_a_subagents() {
        let messages = vec![
            message("s:0aa", "user", "2026-11-28T20:05:28.140Z", 1, true),
            message("s:3ff", "assistant", "2026-11-28T20:05:27.540Z", 22, false),
            message("s:9bb", "user", "2026-11-28T20:05:27.350Z", 3, false),
            message("s:1cc", "user", "2026-11-28T20:05:29.000Z", 50, false),
        ];
        assert_eq!(first_main_prompt(messages).expect("prompt").id, "s:9bb");
    }
}
