//! Catching up with compaction: a store that was away while the server
//! compacted tombstones it had not pulled checks, before it pushes, which of
//! the ids it synced the server still holds.
//!
//! A tombstone leaves the server once every machine that pulls has pulled
//! past it, or once it is older than the team's retention (see
//! `super::remote`). A machine that was away longer than that, or a
//! read-only one the server could not note, would never see those deletes:
//! it would keep the records, and push them back as new the next time it
//! changed them, since nothing on the server remembers they were deleted.
//! So when the server's `compacted_through` is above this store's cursor
//! (and above the mark it last checked), every id the manifest says was in
//! Postgres is looked up; those the server no longer holds were deleted and
//! compacted, and are deleted here too, unless this store changed one after
//! the newest delete compacted (`compacted_written_ms`): that is a newer
//! write, which wins over a delete as it always does, and is pushed.
//!
//! The check reads ids only (10,000 per query), never records, so it is the
//! "full pull" of the ids this store holds, not of what the server holds.

use std::collections::HashSet;

use super::manifest::Entry;
use super::{local, written_ms, Run, State};
use crate::error::Result;

/// Ids per lookup.
const IDS_PER_QUERY: usize = 10_000;

impl Run<'_> {
    /// Deletes here what the server deleted and compacted while this store
    /// was away (see the module docs): when tombstones above `since` (the
    /// cursor the store had pulled through; `None`: the one saved) were
    /// compacted since the last check.
    pub(super) fn catch_up(&mut self, since: Option<i64>) -> Result<()> {
        let compacted = self.remote.compacted()?;
        let mut state = State::read(self.store.root());
        let since = since.unwrap_or(state.cursor);
        if compacted.through <= since || compacted.through <= state.compaction_seen {
            return Ok(());
        }
        let synced: Vec<String> = self
            .manifest
            .iter()
            .filter(|(_, entry)| matches!(entry, Entry::Synced { .. }))
            .map(|(id, _)| id.clone())
            .collect();
        if synced.is_empty() {
            // Nothing here came from the server: nothing to check.
            state.compaction_seen = compacted.through;
            return state.save(self.store.root());
        }
        let mut missing = Vec::new();
        for chunk in synced.chunks(IDS_PER_QUERY) {
            let present: HashSet<String> = self.remote.present(chunk)?;
            missing.extend(chunk.iter().filter(|id| !present.contains(*id)).cloned());
        }
        self.report.caught_up = true;
        if !missing.is_empty() {
            let here = self.held_now(&missing)?;
            let mut deletes = Vec::new();
            let mut notes = Vec::new();
            for id in missing {
                if let Some(l) = here.get(&id) {
                    let changed = self.manifest.get(&id).and_then(Entry::local) != Some(l.hash);
                    if changed && written_ms(&l.record) > compacted.written_ms {
                        // Changed here after every compacted delete: the
                        // newer write; the push sends it.
                        continue;
                    }
                    deletes.push(id.clone());
                }
                notes.push((
                    id,
                    Entry::Gone {
                        origin: String::new(),
                        written_ms: compacted.written_ms,
                    },
                ));
            }
            let deleted = local::delete(self.store, &deletes, self.options.lock_timeout)?;
            self.report.compacted_deletes_here += deleted as u64;
            self.manifest.record(notes)?;
        }
        state.compaction_seen = compacted.through;
        state.save(self.store.root())?;
        Ok(())
    }
}
