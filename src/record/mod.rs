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
pub mod time;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use parse::{parse_record, ParseOptions};

/// The kinds of records, as in DESIGN.md's data model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Segment,
    Task,
    Message,
    Note,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Segment, Kind::Task, Kind::Message, Kind::Note];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Segment => "segment",
            Kind::Task => "task",
            Kind::Message => "message",
            Kind::Note => "note",
        }
    }

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
    #[default]
    L2,
    L3,
}

impl Tier {
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
    pub id: String,
    pub kind: Kind,
    pub namespace: String,
    /// When the store first received this version of the record (RFC 3339).
    pub added_at: String,
    #[serde(default)]
    pub tier: Tier,
    #[serde(default)]
    pub pruned: bool,
    #[serde(default)]
    pub access_count: u64,
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
    pub title: String,
    pub content: String,
    pub decisions: Vec<String>,
    pub files: Vec<String>,
    pub commands: Vec<String>,
    pub errors: Vec<String>,
    pub session_id: Option<String>,
    pub start_turn: Option<u64>,
    pub end_turn: Option<u64>,
    /// Unix seconds of the record's own time (compressed_at, timestamp…), if it has one.
    pub timestamp: Option<i64>,
    pub relevance_score: Option<f64>,
}

impl Record {
    /// A short human citation: `segment seg-12 (session abc, turns 10–25)`.
    pub fn citation(&self) -> String {
        let mut parts = Vec::new();
        if let Some(session) = &self.fields.session_id {
            parts.push(format!("session {session}"));
        }
        match (self.fields.start_turn, self.fields.end_turn) {
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
