//! Push: what changed here since the manifest goes to the server, a batch at
//! a time: records of the shared scopes with their embeddings, and
//! tombstones for records that disappeared (deleted, forgotten, or no longer
//! shared). A push that lost to a newer write fetches the winner at once.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use super::local::{self, Held, Loaded};
use super::manifest::Entry;
use super::remote::Row;
use super::{
    content_version, mark_of, now_ms, parse_version, row_bytes, written_ms, Notes, Run, MARK_KEY,
};
use crate::error::Result;

impl Run<'_> {
    /// Finds what changed here since the manifest and pushes it, a batch at
    /// a time.
    pub(super) fn push(&mut self, progress: &mut dyn FnMut(&str, u64, u64)) -> Result<()> {
        let held = local::held(self.store)?;
        let (candidates, unshared) = self.candidates(&held);
        self.manifest.record(unshared)?;
        let tombstones = self.disappeared(&held)?;
        let total = (candidates.len() + tombstones.len()) as u64;
        let mut done = 0u64;
        progress("push", done, total);
        for chunk in candidates.chunks(self.settings.batch) {
            let loaded = local::load(self.store, chunk)?;
            let rows = self.classify(loaded)?;
            self.push_rows(rows)?;
            done += chunk.len() as u64;
            progress("push", done, total);
        }
        for chunk in tombstones.chunks(self.settings.batch) {
            self.push_rows(chunk.iter().map(|row| (row.clone(), None)).collect())?;
            done += chunk.len() as u64;
            progress("push", done, total);
        }
        Ok(())
    }

    /// Ids whose version differs from the manifest's, and the new ids that a
    /// namespace alone shows to be unshared (noted without reading them).
    fn candidates(&self, held: &HashMap<String, Held>) -> (Vec<(String, bool)>, Notes) {
        let mut candidates = Vec::new();
        let mut unshared = Vec::new();
        for (id, h) in held {
            let known = self.manifest.get(id);
            if known.and_then(Entry::local) == Some(h.hash) {
                continue;
            }
            let never_synced = !matches!(known, Some(Entry::Synced { .. } | Entry::Gone { .. }));
            if never_synced
                && self.settings.scopes.decides_by_namespace(&h.namespace) == Some(false)
                && !id.starts_with("pruned-messages:")
            {
                // A pulled copy of an unshared namespace lands here too after
                // an interrupted pull; the pull sets its entry right.
                unshared.push((id.clone(), Entry::Local { local: h.hash }));
                continue;
            }
            candidates.push((id.clone(), h.archived));
        }
        candidates.sort();
        (candidates, unshared)
    }

    /// Tombstones for synced records no longer held here (retention's
    /// pruning excepted: that is this machine's choice, not a delete).
    fn disappeared(&self, held: &HashMap<String, Held>) -> Result<Vec<Row>> {
        let gone: Vec<&String> = self
            .manifest
            .iter()
            .filter(|(id, entry)| matches!(entry, Entry::Synced { .. }) && !held.contains_key(*id))
            .map(|(id, _)| id)
            .collect();
        if gone.is_empty() {
            return Ok(Vec::new());
        }
        let pruned = local::pruned_ids(self.store, held)?;
        let now = now_ms();
        let mut rows: Vec<Row> = gone
            .into_iter()
            .filter(|id| !pruned.contains(*id))
            .map(|id| tombstone(id, &self.settings.origin, now))
            .collect();
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(rows)
    }

    /// Decides for each changed record: push it, or note it (a pulled copy,
    /// a pruned copy, an unshared record, a version the server has). Rows
    /// come with the store version hash of the record they push.
    fn classify(&mut self, loaded: Vec<Loaded>) -> Result<Vec<(Row, Option<u64>)>> {
        let mut rows = Vec::new();
        let mut notes = Vec::new();
        for l in loaded {
            let version = content_version(&l.record);
            let id = l.record.id.clone();
            if local::is_pruned_copy(&l.record) {
                notes.push((id, Entry::Local { local: l.hash }));
                continue;
            }
            if let Some((origin, marked, written)) = mark_of(&l.record) {
                if marked == version {
                    notes.push((
                        id,
                        Entry::Synced {
                            local: l.hash,
                            version,
                            origin,
                            written_ms: written,
                        },
                    ));
                    continue;
                }
            }
            if let Some(Entry::Synced {
                version: known,
                origin,
                written_ms,
                ..
            }) = self.manifest.get(&id)
            {
                if *known == version {
                    let entry = Entry::Synced {
                        local: l.hash,
                        version,
                        origin: origin.clone(),
                        written_ms: *written_ms,
                    };
                    notes.push((id, entry));
                    continue;
                }
            }
            if !self.settings.scopes.shares(&l.record) {
                notes.push((id, Entry::Local { local: l.hash }));
                continue;
            }
            rows.push((self.row_of(&l, version), Some(l.hash)));
        }
        self.manifest.record(notes)?;
        Ok(rows)
    }

    /// The row that pushes a local record.
    fn row_of(&self, l: &Loaded, version: u64) -> Row {
        // Every write redacted this record already; a store written before
        // redaction existed (or before a `[privacy]` pattern was added) may
        // still hold a secret, and nothing private leaves the machine. A
        // record that changes goes without its vector (made from the secret):
        // the puller embeds it.
        let mut record = l.record.clone();
        let redacted =
            !crate::privacy::redact_record(self.store.redactor(), &mut record).is_empty();
        let l = &Loaded {
            record,
            hash: l.hash,
            vector: if redacted { None } else { l.vector.clone() },
        };
        let mut line = crate::export::line(&l.record);
        if let Some(object) = line.as_object_mut() {
            // Reads are each machine's own; the tier and pruning too.
            for key in ["access_count", "last_accessed", "archived_at", "dropped"] {
                object.remove(key);
            }
            object.insert("tier".into(), json!("l2"));
            object.insert("pruned".into(), json!(false));
            if let Some(source) = object.get_mut("source").and_then(Value::as_object_mut) {
                source.remove(MARK_KEY);
            }
        }
        let (text_hash, embedding) = match &l.vector {
            Some((hash, v)) => (Some(format!("{hash:016x}")), Some(v.clone())),
            None => (None, None),
        };
        Row {
            id: l.record.id.clone(),
            seq: 0,
            origin: self.settings.origin.clone(),
            written_ms: written_ms(&l.record),
            deleted: false,
            kind: Some(l.record.kind.as_str().to_string()),
            namespace: Some(l.record.namespace.clone()),
            project: l
                .record
                .source
                .get("project")
                .and_then(Value::as_str)
                .map(str::to_string),
            version: format!("{version:016x}"),
            record: Some(line.to_string()),
            model: embedding
                .as_ref()
                .map(|_| crate::embed::MODEL_ID.to_string()),
            recipe: embedding
                .as_ref()
                .and_then(|_| i32::try_from(self.store.embedding_rules()).ok()),
            text_hash,
            embedding,
        }
    }

    /// Pushes rows (with the store version hash of each record pushed; none
    /// for tombstones); notes what the server took, and writes here the
    /// newer versions that beat the others.
    fn push_rows(&mut self, batch: Vec<(Row, Option<u64>)>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let (rows, hashes): (Vec<Row>, Vec<Option<u64>>) = batch.into_iter().unzip();
        self.report.push_bytes += rows.iter().map(row_bytes).sum::<u64>();
        self.report.push_sent += rows.len() as u64;
        let taken: HashSet<String> = self.remote.push(&rows)?.into_iter().collect();
        let mut notes = Vec::new();
        let mut lost = Vec::new();
        for (row, hash) in rows.iter().zip(hashes) {
            if !taken.contains(&row.id) {
                lost.push(row.id.clone());
                continue;
            }
            if row.deleted {
                self.report.pushed_tombstones += 1;
                notes.push((
                    row.id.clone(),
                    Entry::Gone {
                        origin: row.origin.clone(),
                        written_ms: row.written_ms,
                    },
                ));
            } else {
                self.report.pushed += 1;
                notes.push((
                    row.id.clone(),
                    Entry::Synced {
                        local: hash.unwrap_or(0),
                        version: parse_version(&row.version)?,
                        origin: row.origin.clone(),
                        written_ms: row.written_ms,
                    },
                ));
            }
        }
        self.manifest.record(notes)?;
        if !lost.is_empty() {
            let winners = self.remote.rows(&lost)?;
            // Ids whose row the server has as we sent it (an earlier push of
            // ours) are noted; the others lost to a newer write.
            let mut changed = Vec::new();
            for row in winners {
                let ours = rows.iter().find(|r| r.id == row.id);
                let same = ours.is_some_and(|o| {
                    o.deleted == row.deleted && (row.deleted || o.version == row.version)
                });
                if !same {
                    self.report.push_conflicts_lost += 1;
                }
                changed.push(row);
            }
            self.apply(changed, false)?;
        }
        Ok(())
    }
}

fn tombstone(id: &str, origin: &str, written_ms: i64) -> Row {
    Row {
        id: id.to_string(),
        seq: 0,
        origin: origin.to_string(),
        written_ms,
        deleted: true,
        kind: None,
        namespace: None,
        project: None,
        version: String::new(),
        record: None,
        model: None,
        recipe: None,
        text_hash: None,
        embedding: None,
    }
}
