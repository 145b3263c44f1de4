//! Moving records between tiers: archive, restore, prune, and crash recovery.
//!
//! **Order of operations.** Every operation takes the store's writer lock, then
//! writes a journal naming the ids and archive files it will touch (fsynced),
//! and only then changes anything:
//!
//! - `archive`: append frames to the month files and fsync them; commit the L3
//!   index; delete the records from L2 and commit; remove the journal.
//! - `restore`: put the records into L2 and commit; rewrite their archive files
//!   without them (atomic rename); commit the L3 index; remove the journal.
//! - `prune`: rewrite one archive file with the reduced records (temp file,
//!   fsync, rename); commit the L3 index; remove the journal.
//!
//! So a record is always in L2, or in a sound archive frame, or both; never in
//! neither. **Both** is resolved by one rule, *L2 wins*: readers skip an archived
//! copy whose id is live in L2, and [`recover`], which every tier operation runs
//! first when a journal is left over, removes such copies from the archive (an
//! interrupted archive is rolled back, an interrupted restore is rolled forward),
//! cuts torn tails, and re-derives the L3 index of the files the journal names.
//!
//! Each operation is a room of its own: `archive.rs` (with the selection of
//! what moves), `restore.rs`, `prune.rs`; `find.rs` finds archived records
//! in the L3 index. This file holds what they share: recovery, superseding
//! archived copies, and the crash points of the order of operations.

mod archive;
mod find;
mod prune;
mod restore;

use std::collections::{HashMap, HashSet};

use crate::archive::l3::{self, reindex_file, L3Index};
use crate::archive::{Archive, Entry, Journal};
use crate::error::Result;
use crate::store::lock::WriterLock;
use crate::store::Store;
pub use archive::{archive, last_access, ArchiveReport, ArchivedAs, Selection};
pub(crate) use archive::{archive_as_given, archive_locked};
pub(crate) use prune::prune_locked;
pub use prune::{prune, PruneReport, Pruned};
pub use restore::{restore, LoadEmbedder, RestoreReport, RestoreWhat};

/// Test hook: `KNOWLEDGE_DB_CRASH_AT=<point>` aborts the process there, so the
/// crash test can hit each step of the order of operations deterministically
/// as well as at random.
pub(super) fn crash_point(name: &str) {
    if std::env::var("KNOWLEDGE_DB_CRASH_AT").is_ok_and(|p| p == name) {
        std::process::abort();
    }
}

/// Finishes or undoes what an interrupted tier operation left, as described in
/// the module docs. Returns whether there was anything to recover.
pub fn recover(store: &Store, _lock: &WriterLock) -> Result<bool> {
    let archive = Archive::new(store.root());
    archive.remove_stale_temps()?;
    let Some(journal) = archive.read_journal()? else {
        return Ok(false);
    };
    let searcher = store.reader()?.searcher();
    let live = store.live_ids(&searcher, &journal.ids)?;
    let l3 = L3Index::open_or_create(&archive)?;
    let mut writer = l3.writer()?;
    l3.delete_ids(&writer, &journal.ids);
    for file in &journal.files {
        let current = archive.read_file(file)?;
        let torn = current.scan.tail != crate::archive::frame::Tail::Clean;
        let kept = last_copies(current.entries.into_iter().map(|(_, e)| e), &live);
        let unchanged = !torn
            && kept.len()
                == current
                    .scan
                    .frames
                    .iter()
                    .map(|f| f.records as usize)
                    .sum::<usize>();
        if !unchanged {
            archive.rewrite(file, &kept)?;
        }
        reindex_file(&archive, &l3, &writer, file)?;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    archive.clear_journal()?;
    Ok(true)
}

/// Makes a write of `ids` to L2 supersede their archived copies: called under
/// the writer lock **before** the L2 commit, it journals the archived ids among
/// them and the files that hold them; [`finish_superseding`] then removes those
/// copies once the ids are live. A crash between the two leaves the journal, so
/// the next tier command or `repair` finishes it (copies of ids that did become
/// live are dropped; the others stay). Returns whether anything was journalled.
pub fn begin_superseding<'a>(
    store: &Store,
    lock: &WriterLock,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<bool> {
    let archive = Archive::new(store.root());
    let Some(l3) = L3Index::open_existing(&archive)? else {
        return Ok(false);
    };
    let searcher = l3.reader()?.searcher();
    let mut journal = Journal {
        op: "supersede".into(),
        ids: Vec::new(),
        files: Vec::new(),
    };
    for id in ids {
        if let Some(location) = l3::locate(&searcher, l3.fields(), id)? {
            journal.ids.push(id.to_string());
            if !journal.files.contains(&location.file) {
                journal.files.push(location.file);
            }
        }
    }
    if journal.ids.is_empty() {
        return Ok(false);
    }
    // Never overwrite the journal of an interrupted operation: finish it first.
    recover(store, lock)?;
    archive.write_journal(&journal)?;
    crash_point("supersede-journalled");
    Ok(true)
}

/// Second half of [`begin_superseding`], after the L2 commit.
pub fn finish_superseding(store: &Store, lock: &WriterLock) -> Result<()> {
    crash_point("supersede-committed");
    recover(store, lock).map(|_| ())
}

/// The last copy of each id, in file order, leaving out ids in `drop`.
pub(crate) fn last_copies(
    entries: impl Iterator<Item = Entry>,
    drop: &HashSet<String>,
) -> Vec<Entry> {
    let entries: Vec<Entry> = entries.filter(|e| !drop.contains(&e.record.id)).collect();
    let mut last: HashMap<&str, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        last.insert(e.record.id.as_str(), i);
    }
    let keep: HashSet<usize> = last.into_values().collect();
    entries
        .iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, e)| e.clone())
        .collect()
}
