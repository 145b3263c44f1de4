//! claude-mem: its SQLite database (`~/.claude-mem/claude-mem.db`).
//!
//! claude-mem watches Claude Code sessions and keeps what it learned in
//! SQLite: `observations` (one per piece of work: a type, title, subtitle,
//! narrative, `facts`, `concepts`, `files_read`, `files_modified`, the
//! project and the session), `session_summaries` (per session: the request,
//! what was investigated, learned and completed, next steps, files) and
//! `user_prompts` (the prompts typed), with `sdk_sessions` tying its own
//! session ids to Claude Code's. The mapping:
//! - an observation is a `segment` (compressed work): topic its title (and
//!   subtitle), content its narrative and facts, `key_files` its files read
//!   and modified, `key_decisions` its decisions (see [`decisions`]), session
//!   Claude Code's session id, time its `created_at`;
//! - a session summary is a `segment` too (a session's work compressed);
//! - with `--with-prompts`, a user prompt is a user `message` of its session,
//!   turn its prompt number (an empty prompt is skipped, and counted as
//!   `user_prompts_empty_skipped`). Without it (the default) prompts are
//!   counted, not imported: a prompt is the question, not what was learned;
//!   its session's summary restates it, and as a record of its own it
//!   outranked the observation that answers it (on the claude-mem fixture,
//!   "why were ledger entries posted twice" put the prompt first and the
//!   observation fourth; without prompts the observation is second).
//!
//! Ids are `claude-mem:obs:<id>`, `claude-mem:summary:<id>` and
//! `claude-mem:prompt:<id>` (the rows' own ids). The project name claude-mem
//! gives (a folder's name, not its path) is kept in `metadata.project`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::sqlite;
use super::{origin_json, record_id, ImportError, Item, Source, Tool};
use crate::error::Origin;

/// The newest claude-mem schema version (`schema_versions`) this build was
/// checked against (claude-mem 13.25.3).
const KNOWN_SCHEMA: i64 = 52;

const EXPECTED: &str = "claude-mem's SQLite database (claude-mem.db) with its observations table";

/// The database file of a claude-mem folder (or the file given).
fn database(path: &Path) -> Result<PathBuf, ImportError> {
    if path.is_dir() {
        let file = path.join("claude-mem.db");
        if !file.exists() {
            return Err(ImportError::NotFound {
                tool: Tool::ClaudeMem,
                path: path.to_path_buf(),
                why: "no claude-mem.db in it".into(),
            });
        }
        return Ok(file);
    }
    Ok(path.to_path_buf())
}

/// The first of `names` the table has.
fn column<'a>(columns: &BTreeSet<String>, names: &[&'a str]) -> Option<&'a str> {
    names.iter().copied().find(|n| columns.contains(*n))
}

pub(super) fn read(
    path: &Path,
    with_prompts: bool,
    source: &mut Source,
) -> Result<(), ImportError> {
    let file = database(path)?;
    let connection = sqlite::open(&file, EXPECTED)?;
    source.files = 1;
    source.bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let tables = sqlite::tables(&connection, &file, EXPECTED)?;
    let version = schema_version(&connection, &tables);
    let unknown = |what: String| ImportError::UnknownVersion {
        path: file.clone(),
        found: format!(
            "a database {what}{}",
            version
                .map(|v| format!(" (schema version {v})"))
                .unwrap_or_default()
        ),
        supported: "claude-mem's schema with observations (id, type, title, project, created_at, \
                    a session id) and optionally session_summaries, user_prompts and sdk_sessions"
            .into(),
    };
    let Some(obs) = tables.get("observations") else {
        return Err(unknown("without an observations table".into()));
    };
    let obs_session = column(obs, &["memory_session_id", "sdk_session_id"]);
    for needed in ["id", "type", "project", "created_at"] {
        if !obs.contains(needed) {
            return Err(unknown(format!(
                "whose observations table has no `{needed}` column"
            )));
        }
    }
    let Some(obs_session) = obs_session else {
        return Err(unknown(
            "whose observations table has no session column".into(),
        ));
    };
    let sessions = session_ids(&connection, &tables, &file)?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();

    let rows = sqlite::rows(
        &connection,
        "SELECT * FROM observations ORDER BY id",
        &file,
        "observations",
        EXPECTED,
    )?;
    counts.insert("observations".into(), rows.len());
    for row in rows {
        source
            .items
            .push(observation(&file, &row, obs_session, &sessions)?);
    }
    if let Some(summaries) = tables.get("session_summaries") {
        let session = column(summaries, &["memory_session_id", "sdk_session_id"]).unwrap_or("");
        let rows = sqlite::rows(
            &connection,
            "SELECT * FROM session_summaries ORDER BY id",
            &file,
            "session_summaries",
            EXPECTED,
        )?;
        counts.insert("session_summaries".into(), rows.len());
        for row in rows {
            source.items.push(summary(&file, &row, session, &sessions)?);
        }
    }
    if let Some(prompts) = tables.get("user_prompts") {
        let session = column(prompts, &["content_session_id", "claude_session_id"]).unwrap_or("");
        let rows = sqlite::rows(
            &connection,
            "SELECT * FROM user_prompts ORDER BY id",
            &file,
            "user_prompts",
            EXPECTED,
        )?;
        counts.insert("user_prompts".into(), rows.len());
        if !with_prompts {
            counts.insert(
                "user_prompts (not imported; --with-prompts)".into(),
                rows.len(),
            );
        }
        let rows = if with_prompts { rows } else { Vec::new() };
        let mut empty = 0;
        for row in rows {
            match prompt(&file, &row, session, &sessions)? {
                Some(item) => source.items.push(item),
                None => empty += 1,
            }
        }
        if empty > 0 {
            counts.insert("user_prompts_empty_skipped".into(), empty);
        }
    }
    if tables.contains_key("sdk_sessions") {
        counts.insert("sessions".into(), sessions.count);
    }
    if let Some(v) = version.filter(|v| *v > KNOWN_SCHEMA) {
        source.warnings.push(format!(
            "{}: claude-mem schema version {v} is newer than {KNOWN_SCHEMA}, the last this build \
             was checked against; the columns it knows were read",
            file.display()
        ));
    }
    source.counts = counts;
    Ok(())
}

/// The highest migration applied, if the database records them.
fn schema_version(
    connection: &rusqlite::Connection,
    tables: &BTreeMap<String, BTreeSet<String>>,
) -> Option<i64> {
    tables
        .get("schema_versions")?
        .contains("version")
        .then_some(())?;
    connection
        .query_row("SELECT max(version) FROM schema_versions", [], |r| r.get(0))
        .ok()
        .flatten()
}

/// claude-mem's own session ids mapped to Claude Code's (`content_session_id`),
/// and Claude Code's session ids to their project.
#[derive(Default)]
struct Sessions {
    to_claude: HashMap<String, String>,
    projects: HashMap<String, String>,
    count: usize,
}

impl Sessions {
    /// Claude Code's id of a session claude-mem knows by `own` (itself when unmapped).
    fn claude_id(&self, own: &str) -> String {
        self.to_claude
            .get(own)
            .cloned()
            .unwrap_or_else(|| own.to_string())
    }
}

fn session_ids(
    connection: &rusqlite::Connection,
    tables: &BTreeMap<String, BTreeSet<String>>,
    file: &Path,
) -> Result<Sessions, ImportError> {
    let Some(columns) = tables.get("sdk_sessions") else {
        return Ok(Sessions::default());
    };
    let mine = column(columns, &["memory_session_id", "sdk_session_id"]);
    let claude = column(columns, &["content_session_id", "claude_session_id"]);
    let rows = sqlite::rows(
        connection,
        "SELECT * FROM sdk_sessions",
        file,
        "sdk_sessions",
        EXPECTED,
    )?;
    let mut out = Sessions {
        count: rows.len(),
        ..Sessions::default()
    };
    for row in rows {
        let claude = claude.and_then(|c| text(&row, c));
        if let (Some(m), Some(c)) = (mine.and_then(|m| text(&row, m)), &claude) {
            out.to_claude.insert(m, c.clone());
        }
        if let (Some(c), Some(p)) = (claude, text(&row, "project")) {
            out.projects.insert(c, p);
        }
    }
    Ok(out)
}

/// Files read, then files changed, each once, in the order first named.
fn key_files(read: &[String], changed: &[String]) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for f in read.iter().chain(changed) {
        if !files.contains(f) {
            files.push(f.clone());
        }
    }
    files
}

/// A row's project: a project merged into another is known by the one it joined.
fn project(row: &Map<String, Value>) -> Option<String> {
    text(row, "merged_into_project").or_else(|| text(row, "project"))
}

fn text(row: &Map<String, Value>, key: &str) -> Option<String> {
    match row.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A column holding a JSON list of strings (claude-mem writes `facts`,
/// `concepts` and file lists so); a plain string is one item.
fn list(
    file: &Path,
    table: &str,
    row: &Map<String, Value>,
    key: &str,
) -> Result<Vec<String>, ImportError> {
    let Some(raw) = text(row, key) else {
        return Ok(Vec::new());
    };
    let trimmed = raw.trim();
    if !trimmed.starts_with('[') {
        return Ok(vec![trimmed.to_string()]);
    }
    let value: Value = serde_json::from_str(trimmed).map_err(|e| {
        ImportError::corrupt(
            file,
            Some(format!("table {table}, row {}, column {key}", row_id(row))),
            format!("not a JSON list: {e}"),
            "a JSON list of strings",
        )
    })?;
    Ok(match value {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|v| match v {
                Value::String(s) if !s.trim().is_empty() => Some(s),
                Value::Null => None,
                other => Some(other.to_string()),
            })
            .collect(),
        _ => Vec::new(),
    })
}

fn row_id(row: &Map<String, Value>) -> String {
    text(row, "id").unwrap_or_else(|| "?".into())
}

fn required_id(file: &Path, table: &str, row: &Map<String, Value>) -> Result<String, ImportError> {
    text(row, "id").ok_or_else(|| {
        ImportError::corrupt(
            file,
            Some(format!("table {table}, column id")),
            "a row without an id",
            EXPECTED,
        )
    })
}

/// The row's time: `created_at` (ISO), else `created_at_epoch`.
fn time(row: &Map<String, Value>) -> Option<String> {
    text(row, "created_at")
        .filter(|t| crate::record::parse::parse_time(t).is_some())
        .or_else(|| {
            row.get("created_at_epoch")
                .and_then(Value::as_i64)
                .map(super::time_of_epoch)
        })
}

/// Words a fact starts with when it states a decision.
const DECISION_OPENINGS: [&str; 9] = [
    "decided",
    "decision:",
    "chose ",
    "chosen ",
    "opted ",
    "went with ",
    "settled on ",
    "we will use ",
    "switched to ",
];

/// The facts of an observation that are decisions, conservatively: every
/// fact of an observation of type `decision` (or, without facts, its
/// title), else only the facts that open with a decision's words
/// ("decided", "decision:", "chose", "opted", "went with", "settled on",
/// "we will use", "switched to").
pub(super) fn decisions(kind: &str, title: Option<&str>, facts: &[String]) -> Vec<String> {
    if kind.eq_ignore_ascii_case("decision") {
        if facts.is_empty() {
            return title.map(|t| vec![t.to_string()]).unwrap_or_default();
        }
        return facts.to_vec();
    }
    facts
        .iter()
        .filter(|f| {
            let lower = f.trim_start().to_lowercase();
            DECISION_OPENINGS.iter().any(|w| lower.starts_with(w))
        })
        .cloned()
        .collect()
}

fn observation(
    file: &Path,
    row: &Map<String, Value>,
    session_column: &str,
    sessions: &Sessions,
) -> Result<Item, ImportError> {
    let id = required_id(file, "observations", row)?;
    let kind = text(row, "type").unwrap_or_else(|| "observation".into());
    let title = text(row, "title");
    let subtitle = text(row, "subtitle");
    let facts = list(file, "observations", row, "facts")?;
    let concepts = list(file, "observations", row, "concepts")?;
    let files_read = list(file, "observations", row, "files_read")?;
    let files_modified = list(file, "observations", row, "files_modified")?;
    let mut content = Vec::new();
    if let Some(narrative) = text(row, "narrative").or_else(|| text(row, "text")) {
        content.push(narrative);
    }
    content.extend(facts.iter().map(|f| format!("- {f}")));
    let mut topic = title.clone().unwrap_or_else(|| kind.clone());
    if let Some(sub) = &subtitle {
        topic = format!("{topic}: {sub}");
    }
    if content.is_empty() {
        content.push(topic.clone());
    }
    let key_files = key_files(&files_read, &files_modified);
    let own_session = text(row, session_column);
    let session = own_session.as_ref().map(|s| sessions.claude_id(s));
    let project = project(row);
    let source_id = format!("obs:{id}");
    let mut value = json!({
        "kind": "segment",
        "segment_id": record_id(Tool::ClaudeMem, &source_id),
        "topic": topic,
        "compressed_content": content.join("\n"),
        "key_files": key_files,
        "key_decisions": decisions(&kind, title.as_deref(), &facts),
        "tags": concepts,
        "metadata": {
            "origin": origin_json(Tool::ClaudeMem, &source_id, "observations"),
            "type": kind,
            "project": project,
            "files_read": files_read,
            "files_modified": files_modified,
            "facts": facts,
            "prompt_number": row.get("prompt_number"),
            "claude_mem_session": own_session,
        },
    });
    if let Some(session) = session {
        value["session_id"] = json!(session);
    }
    if let Some(time) = time(row) {
        value["compressed_at"] = json!(time);
    }
    Ok(Item {
        origin: Origin::file(format!("{}: table observations, row {id}", file.display())),
        value,
        project,
    })
}

fn summary(
    file: &Path,
    row: &Map<String, Value>,
    session_column: &str,
    sessions: &Sessions,
) -> Result<Item, ImportError> {
    let id = required_id(file, "session_summaries", row)?;
    let part = |key: &str, label: &str| text(row, key).map(|t| format!("{label}: {t}"));
    let content: Vec<String> = [
        part("request", "Request"),
        part("investigated", "Investigated"),
        part("learned", "Learned"),
        part("completed", "Completed"),
        part("next_steps", "Next steps"),
        part("notes", "Notes"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let files_read = list(file, "session_summaries", row, "files_read")?;
    let files_edited = list(file, "session_summaries", row, "files_edited")?;
    let key_files = key_files(&files_read, &files_edited);
    let own_session = text(row, session_column);
    let session = own_session.as_ref().map(|s| sessions.claude_id(s));
    let project = project(row);
    let topic = text(row, "request")
        .map(|r| {
            format!(
                "Session summary: {}",
                r.chars().take(120).collect::<String>()
            )
        })
        .unwrap_or_else(|| "Session summary".into());
    let source_id = format!("summary:{id}");
    let content = if content.is_empty() {
        topic.clone()
    } else {
        content.join("\n")
    };
    let mut value = json!({
        "kind": "segment",
        "segment_id": record_id(Tool::ClaudeMem, &source_id),
        "topic": topic,
        "compressed_content": content,
        "key_files": key_files,
        "metadata": {
            "origin": origin_json(Tool::ClaudeMem, &source_id, "session_summaries"),
            "type": "session_summary",
            "project": project,
            "files_read": files_read,
            "files_edited": files_edited,
            "prompt_number": row.get("prompt_number"),
            "claude_mem_session": own_session,
        },
    });
    if let Some(session) = session {
        value["session_id"] = json!(session);
    }
    if let Some(time) = time(row) {
        value["compressed_at"] = json!(time);
    }
    Ok(Item {
        origin: Origin::file(format!(
            "{}: table session_summaries, row {id}",
            file.display()
        )),
        value,
        project,
    })
}

/// A prompt as a user message; `None` for an empty prompt (nothing to find).
fn prompt(
    file: &Path,
    row: &Map<String, Value>,
    session_column: &str,
    sessions: &Sessions,
) -> Result<Option<Item>, ImportError> {
    let id = required_id(file, "user_prompts", row)?;
    let Some(text_of) = text(row, "prompt_text") else {
        return Ok(None);
    };
    let source_id = format!("prompt:{id}");
    let session = text(row, session_column);
    let project = session
        .as_ref()
        .and_then(|s| sessions.projects.get(s))
        .cloned();
    let mut value = json!({
        "kind": "message",
        "id": record_id(Tool::ClaudeMem, &source_id),
        "role": "user",
        "text": text_of,
        "metadata": {
            "origin": origin_json(Tool::ClaudeMem, &source_id, "user_prompts"),
            "project": project,
        },
    });
    if let Some(session) = session {
        value["session_id"] = json!(session);
    }
    if let Some(n) = row.get("prompt_number").and_then(Value::as_u64) {
        value["turn_index"] = json!(n);
    }
    if let Some(time) = time(row) {
        value["timestamp"] = json!(time);
    }
    Ok(Some(Item {
        origin: Origin::file(format!("{}: table user_prompts, row {id}", file.display())),
        value,
        project,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_read_conservatively() {
        let facts = vec![
            "Decided to cache tokens in Redis".to_string(),
            "The cache lives in src/cache.rs".to_string(),
            "Switched to PKCE for the OAuth flow".to_string(),
        ];
        assert_eq!(
            decisions("discovery", Some("t"), &facts),
            [
                "Decided to cache tokens in Redis",
                "Switched to PKCE for the OAuth flow"
            ]
        );
        assert_eq!(decisions("decision", Some("t"), &facts).len(), 3);
        assert_eq!(
            decisions("decision", Some("Use SQLite"), &[]),
            ["Use SQLite"]
        );
        assert!(decisions("bugfix", None, &["Fixed the null check".into()]).is_empty());
    }
}
