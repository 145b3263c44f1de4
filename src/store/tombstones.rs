//! Tombstones: what was forgotten stays forgotten.
//!
//! `knowledge-db forget` deletes records and leaves a tombstone for each id,
//! or for a whole session, in `<store>/tombstones.json`. Every write
//! ([`crate::store::Store::add`], so ingest, capture, evict, MCP `memory_add`,
//! sync's pull) leaves out the records a tombstone buries, so ingesting the
//! same transcript again does not bring them back. `forget --undo` lifts a
//! tombstone; the records then come back with the next ingest of their
//! transcript.
//!
//! The file is small (ids and session ids, never text) and replaced whole,
//! durably, under the writer lock.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::record::Record;

/// Why and when something was forgotten.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stone {
    /// When (RFC 3339).
    pub at: String,
    /// What asked for it (`forget --session`, `forget --query "..."`, `sync`).
    pub by: String,
    /// The session of a forgotten record, when it had one: `forget --undo`
    /// makes the session's transcript read whole again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// The store's tombstones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tombstones {
    /// Forgotten record ids.
    #[serde(default)]
    pub ids: BTreeMap<String, Stone>,
    /// Forgotten sessions: every record of the session.
    #[serde(default)]
    pub sessions: BTreeMap<String, Stone>,
}

/// The tombstones file of the store at `root`.
pub fn path(root: &Path) -> PathBuf {
    root.join("tombstones.json")
}

impl Tombstones {
    /// The store's tombstones (none when the file does not exist).
    pub fn load(root: &Path) -> Result<Tombstones> {
        let path = path(root);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::Config {
                path: path.clone(),
                message: format!(
                    "not valid JSON at line {}: {e}; fix or remove it (forgotten records could come back)",
                    e.line()
                ),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Tombstones::default()),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Writes them durably (the caller holds the writer lock).
    pub fn save(&self, root: &Path) -> Result<()> {
        let path = path(root);
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
        crate::files::replace(&path, &bytes, crate::files::Durability::Durable)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.sessions.is_empty()
    }

    /// Takes out of `record` the conversation context it copied from a
    /// forgotten record (a reply carries its prompt's text); returns whether
    /// it did.
    pub fn strip_buried_context(&self, record: &mut Record) -> bool {
        let buried = record
            .context_from
            .as_ref()
            .is_some_and(|from| self.ids.contains_key(from));
        if buried {
            record.context = None;
            record.context_from = None;
        }
        buried
    }

    /// Whether a tombstone buries `record` (its id, or its session).
    pub fn buries(&self, record: &Record) -> bool {
        self.ids.contains_key(&record.id)
            || record
                .fields
                .session_id
                .as_ref()
                .is_some_and(|s| self.sessions.contains_key(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Origin;
    use crate::record::{parse_record, ParseOptions};

    #[test]
    fn ids_and_sessions_bury_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut stones = Tombstones::load(dir.path()).unwrap();
        assert!(stones.is_empty());
        let stone = Stone {
            at: "2026-11-26T00:00:00Z".into(),
            by: "test".into(),
            session: None,
        };
        stones.ids.insert("a".into(), stone.clone());
        stones.sessions.insert("s1".into(), stone);
        stones.save(dir.path()).unwrap();
        let loaded = Tombstones::load(dir.path()).unwrap();
        assert_eq!(loaded, stones);
        let record = |v: serde_json::Value| {
            parse_record(v, &Origin::file("t"), &ParseOptions::default()).unwrap()
        };
        assert!(loaded.buries(&record(serde_json::json!({"id": "a", "text": "x"}))));
        assert!(loaded.buries(&record(
            serde_json::json!({"id": "b", "text": "x", "session_id": "s1"})
        )));
        assert!(!loaded.buries(&record(
            serde_json::json!({"id": "b", "text": "x", "session_id": "s2"})
        )));
    }
}
