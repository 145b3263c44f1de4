//! The compression queue of a session: `<store>/hooks/<session>.queue.json`.
//!
//! `{session_id, pending:[…], compressed:[…], last_check_turn}`. A cold item
//! whose summary was stored is appended to `pending`: its details may leave the
//! agent's context. When the context is compacted (`hook pre-compact`), the
//! pending items go to `compressed`. Items are keyed by record id, so an item
//! found twice is queued once.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::cold::ColdItem;
use super::{read_json, write_json_atomically};
use crate::error::Result;

/// One queued item: which record, what it is about, which turns it covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueEntry {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub start_turn: u64,
    pub end_turn: u64,
    /// The assistant turn at which it was found cold.
    pub found_at_turn: u64,
    pub queued_at: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub pending: Vec<QueueEntry>,
    #[serde(default)]
    pub compressed: Vec<QueueEntry>,
    #[serde(default)]
    pub last_check_turn: u64,
}

impl Queue {
    /// The queue at `path`, or an empty one.
    pub fn load(path: &Path, session_id: &str) -> Result<Queue> {
        let mut queue: Queue = read_json(path)?.unwrap_or_default();
        queue.session_id = session_id.to_string();
        Ok(queue)
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        write_json_atomically(path, self)
    }

    /// Appends items not queued before; returns how many were new.
    pub fn push(&mut self, items: &[ColdItem], turn: u64) -> usize {
        let mut added = 0;
        for item in items {
            if self.contains(&item.id) {
                continue;
            }
            self.pending.push(QueueEntry {
                id: item.id.clone(),
                kind: item.kind.to_string(),
                title: item.title.clone(),
                start_turn: item.start_turn,
                end_turn: item.end_turn,
                found_at_turn: turn,
                queued_at: crate::now_rfc3339(),
            });
            added += 1;
        }
        added
    }

    pub fn contains(&self, id: &str) -> bool {
        self.pending
            .iter()
            .chain(&self.compressed)
            .any(|e| e.id == id)
    }

    /// Moves every pending item to `compressed` (the context was compacted).
    pub fn mark_compressed(&mut self) {
        self.compressed.append(&mut self.pending);
    }
}
