//! Records: the one thing the store keeps.
//!
//! Every stored item is a [`Record`] with a stable string `id` (adding a record with
//! an existing id replaces it) and a [`Kind`]: a compressed context `segment`, a cold
//! `task` summary, a raw conversation `message`, or any other `note`. The caller's
//! JSON is kept verbatim in [`Record::source`], so unknown fields survive a round
//! trip; the searchable fields (title, content, decisions, files, commands, errors,
//! session, turn range, timestamp) are derived from it by [`parse`].

pub mod context;
pub mod input;
pub mod parse;
pub mod project;
pub mod time;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use parse::{parse_record, ParseOptions};

/// The kinds of records, as in DESIGN.md's data model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A compressed context segment (`segment_id`, `compressed_content`).
    Segment,
    /// A cold task summary (`task_id`, `subject`).
    Task,
    /// A raw conversation message (`role`, `text` or `content`).
    Message,
    /// Anything else (`id`, `title`, `text`).
    Note,
}

impl Kind {
    /// Every kind, in this order.
    pub const ALL: [Kind; 4] = [Kind::Segment, Kind::Task, Kind::Message, Kind::Note];

    /// The kind's name as written in JSON: `segment`, `task`, `message` or `note`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Segment => "segment",
            Kind::Task => "task",
            Kind::Message => "message",
            Kind::Note => "note",
        }
    }

    /// The kind named `name` (lowercase); `None` for any other name.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Storage tier: `l2` is the searchable warm store, `l3` the compressed archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// The searchable warm store (the default).
    #[default]
    L2,
    /// The compressed archive.
    L3,
}

impl Tier {
    /// `l2` or `l3`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::L2 => "l2",
            Tier::L3 => "l3",
        }
    }
}

/// The namespace records land in when the caller names none.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A stored record: the caller's JSON plus the store's own bookkeeping, and the
/// searchable fields derived from the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Stable id; adding a record with an existing id replaces it.
    pub id: String,
    /// What kind of record it is.
    pub kind: Kind,
    /// The namespace it belongs to ([`DEFAULT_NAMESPACE`] when none was given).
    pub namespace: String,
    /// When the store first received this version of the record (RFC 3339).
    pub added_at: String,
    /// Which tier holds it.
    #[serde(default)]
    pub tier: Tier,
    /// Whether pruning reduced it to its summary (see `crate::tiers`).
    #[serde(default)]
    pub pruned: bool,
    /// How many times it was read (folded in from the access log).
    #[serde(default)]
    pub access_count: u64,
    /// When it was last read (RFC 3339, milliseconds); `None` if never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_accessed: Option<String>,
    /// What came just before this record in its conversation (the previous
    /// turn), indexed and embedded with it but never shown as its text; see
    /// [`context`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The id of the record `context` was taken from (the turn this one
    /// follows), when it was linked at add time; search raises that turn when
    /// this one ranks high (see `search::neighbours`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_from: Option<String>,
    /// The caller's JSON, verbatim.
    pub source: Value,
    /// Searchable fields derived from `source`; not stored, re-derived on read.
    #[serde(skip)]
    pub fields: Fields,
}

/// The searchable view of a record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fields {
    /// Title: a segment's `topic`, a task's `subject`, a message's `role`, a note's `title`.
    pub title: String,
    /// The main text: `compressed_content`, a task's outcomes and description, or `text`.
    pub content: String,
    /// Decisions stated (`key_decisions`).
    pub decisions: Vec<String>,
    /// Files it names (`key_files`, `files_modified` or `files`).
    pub files: Vec<String>,
    /// Commands run (`commands_run`; for messages `tool_names` and `commands`).
    pub commands: Vec<String>,
    /// Errors met (`errors_resolved`, or a message's `errors`).
    pub errors: Vec<String>,
    /// The session it belongs to, if given.
    pub session_id: Option<String>,
    /// First turn it covers (a message's own turn), if given.
    pub start_turn: Option<u64>,
    /// Last turn it covers (a message's own turn), if given.
    pub end_turn: Option<u64>,
    /// Unix seconds of the record's own time (compressed_at, timestamp…), if it has one.
    pub timestamp: Option<i64>,
    /// The caller's `relevance_score`, if given.
    pub relevance_score: Option<f64>,
    /// The project it came from (see [`project`]): the record's `project`
    /// string, `None` when it has none (a record of no project is found from
    /// every project).
    pub project: Option<String>,
    /// Who wrote it, when it was pulled from a team's shared memory: its
    /// `sync.origin` (a machine or user name); `None` for the store's own
    /// records.
    pub origin: Option<String>,
}

impl Record {
    /// The turn range as people see it, counted from 1 everywhere (search,
    /// show, the viewer, MCP, the recall block). A message read from a
    /// transcript is stored with its session's prompt count from 0
    /// (`turn_index`: 0 for the first prompt and what answered it), so it
    /// shows one more; segments, tasks and other records carry turns counted
    /// from 1 already.
    pub fn shown_turns(&self) -> (Option<u64>, Option<u64>) {
        let from_transcript = self.kind == Kind::Message
            && self
                .source
                .get("origin")
                .and_then(|o| o.get("format"))
                .is_some();
        let shift = u64::from(from_transcript);
        (
            self.fields.start_turn.map(|t| t + shift),
            self.fields.end_turn.map(|t| t + shift),
        )
    }

    /// A short human citation: `segment seg-12 (session abc, turns 10–25)`.
    pub fn citation(&self) -> String {
        let mut parts = Vec::new();
        if let Some(session) = &self.fields.session_id {
            parts.push(format!("session {session}"));
        }
        match self.shown_turns() {
            (Some(s), Some(e)) if s != e => parts.push(format!("turns {s}-{e}")),
            (Some(s), _) | (None, Some(s)) => parts.push(format!("turn {s}")),
            _ => {}
        }
        if parts.is_empty() {
            format!("{} {}", self.kind, self.id)
        } else {
            format!("{} {} ({})", self.kind, self.id, parts.join(", "))
        }
    }

    /// All searchable text joined, for snippets when the content itself is empty.
    pub fn display_text(&self) -> String {
        let f = &self.fields;
        let mut text = f.content.clone();
        for list in [&f.decisions, &f.files, &f.commands, &f.errors] {
            for item in list.iter() {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(item);
            }
        }
        text
    }
}
