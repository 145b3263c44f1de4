//! Pull: every row written since this machine's cursor comes in. Records are
//! written with the vectors the server holds (no model pass when the model
//! and the embedded text match), tombstones delete, and each applied row is
//! noted in the manifest so it is not pushed back as a local change.

use serde_json::{json, Value};

use super::local::{self, Incoming, RemoteVector};
use super::manifest::Entry;
use super::remote::Row;
use super::{content_version, mark_of, parse_version, row_bytes, written_ms, Run, State};
use crate::error::{Error, Result};
use crate::record::parse::format_time_millis;

impl Run<'_> {
    /// Pulls every row past the cursor, a batch at a time.
    pub(super) fn pull(&mut self, progress: &mut dyn FnMut(&str, u64, u64)) -> Result<()> {
        let mut state = State::read(self.store.root());
        let (_, highest) = self.remote.counts()?;
        let start = state.cursor;
        let total = (highest - start).max(0) as u64;
        progress("pull", 0, total);
        loop {
            let rows = self.remote.pull(
                state.cursor,
                self.settings.batch as i64,
                &self.settings.origin,
            )?;
            let Some(last) = rows.last().map(|r| r.seq) else {
                break;
            };
            let rows = self.complete_own(rows)?;
            self.report.pull_bytes += rows.iter().map(row_bytes).sum::<u64>();
            self.apply(rows, true)?;
            state.cursor = last;
            state.save(self.store.root())?;
            progress("pull", (last - start).max(0) as u64, total);
        }
        Ok(())
    }

    /// This store's own rows come from the pull without their payload: those
    /// the manifest knows as they are are noted as unchanged and dropped; the
    /// others (a store that lost its copy) are read whole.
    fn complete_own(&mut self, rows: Vec<Row>) -> Result<Vec<Row>> {
        let mut keep = Vec::with_capacity(rows.len());
        let mut fetch = Vec::new();
        for row in rows {
            let own = row.origin == self.settings.origin && !row.deleted && row.record.is_none();
            if !own {
                keep.push(row);
                continue;
            }
            let known = match self.manifest.get(&row.id) {
                Some(Entry::Synced {
                    version,
                    origin,
                    written_ms,
                    ..
                }) => {
                    format!("{version:016x}") == row.version
                        && *origin == row.origin
                        && *written_ms == row.written_ms
                }
                _ => false,
            };
            if known {
                self.report.pulled_unchanged += 1;
            } else {
                fetch.push(row.id);
            }
        }
        if !fetch.is_empty() {
            keep.extend(self.remote.rows(&fetch)?);
        }
        Ok(keep)
    }

    /// Writes pulled rows here: newer versions replace, tombstones delete,
    /// versions already here are only noted. `pulled` counts them as pulled
    /// (false: winners fetched after a lost push).
    pub(super) fn apply(&mut self, rows: Vec<Row>, pulled: bool) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let here = self.held_now(&ids)?;
        let mut writes: Vec<Incoming> = Vec::new();
        let mut deletes: Vec<String> = Vec::new();
        let mut notes = Vec::new();
        for row in rows {
            let known = self.manifest.get(&row.id);
            let local = here.get(&row.id);
            let changed_here = local.is_some_and(|l| known.and_then(Entry::local) != Some(l.hash));
            let unshared_here = matches!(known, Some(Entry::Local { .. }));
            if let Some(l) = local.filter(|_| changed_here || unshared_here) {
                // A change here not pushed yet, or a record of the same id
                // that is not shared: the newer write wins.
                let mine = (written_ms(&l.record), self.settings.origin.as_str());
                if mark_of(&l.record).is_none() && mine > (row.written_ms, row.origin.as_str()) {
                    self.report.pulled_older += 1;
                    continue;
                }
            }
            let stamp = Entry::Gone {
                origin: row.origin.clone(),
                written_ms: row.written_ms,
            };
            if row.deleted {
                match local {
                    Some(_) => deletes.push(row.id.clone()),
                    None => self.report.pulled_unchanged += u64::from(pulled),
                }
                notes.push((row.id.clone(), stamp));
                continue;
            }
            let version = parse_version(&row.version)?;
            if let Some(l) = local.filter(|l| content_version(&l.record) == version) {
                self.report.pulled_unchanged += u64::from(pulled);
                notes.push((row.id.clone(), synced(&row, l.hash, version)));
                continue;
            }
            let incoming = incoming_of(&row)?;
            let hash = crate::index::record_hash(&incoming.record);
            if pulled {
                self.report.pulled += 1;
                self.report.pulled_with_vector += u64::from(incoming.vector.is_some());
            }
            notes.push((row.id.clone(), synced(&row, hash, version)));
            writes.push(incoming);
        }
        let timeout = self.options.lock_timeout;
        local::write(self.store, writes, timeout)?;
        let deleted = local::delete(self.store, &deletes, timeout)?;
        self.report.pulled_deletes += deleted as u64;
        self.manifest.record(notes)?;
        Ok(())
    }
}

fn synced(row: &Row, local: u64, version: u64) -> Entry {
    Entry::Synced {
        local,
        version,
        origin: row.origin.clone(),
        written_ms: row.written_ms,
    }
}

/// A pulled row as the record to write here.
fn incoming_of(row: &Row) -> Result<Incoming> {
    let text = row
        .record
        .as_deref()
        .ok_or_else(|| Error::Sync(format!("remote record `{}` has no record", row.id)))?;
    let line: Value = serde_json::from_str(text)
        .map_err(|e| Error::Sync(format!("remote record `{}`: {e}", row.id)))?;
    let written_at = format_time_millis(row.written_ms);
    let mark = json!({
        "origin": row.origin,
        "version": row.version,
        "written_at": written_at,
    });
    local::incoming(
        &row.id,
        line,
        mark,
        &written_at,
        RemoteVector {
            model: row.model.clone(),
            recipe: row.recipe,
            text_hash: row.text_hash.clone(),
            embedding: row.embedding.clone(),
        },
    )
}
