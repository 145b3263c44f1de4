//! `archive`: moving the L2 records a [`Selection`] matches into the archive,
//! batch by batch, in the order of operations of the module docs (journal,
//! frames appended and fsynced, L3 index committed, L2 records removed); and
//! putting an export's archived records back where they were.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{crash_point, recover};
use crate::archive::l3::L3Index;
use crate::archive::{month_of, record_time, Archive, Entry, Journal, Location};
use crate::error::Result;
use crate::index::VectorField;
use crate::record::parse::parse_time;
use crate::record::Record;
use crate::store::access::{self, AccessMap};
use crate::store::lock::WriterLock;
use crate::store::Store;

/// Which L2 records `archive` moves. Every given condition must hold.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Selection {
    /// The record's own time is at least this many seconds ago.
    pub older_than: Option<i64>,
    /// Not read (search, get) nor added for at least this many seconds.
    pub idle_for: Option<i64>,
    /// Only records whose turns end before this turn (with `session`).
    pub turns_before: Option<u64>,
    /// Only records of this session id.
    pub session: Option<String>,
    /// Only records of this namespace (never a condition on its own: see
    /// [`Selection::is_empty`]).
    pub namespace: Option<String>,
}

impl Selection {
    /// Whether no condition but the namespace is given (`archive` asks for one).
    pub fn is_empty(&self) -> bool {
        self.older_than.is_none()
            && self.idle_for.is_none()
            && self.turns_before.is_none()
            && self.session.is_none()
    }

    fn matches(&self, record: &Record, access: &AccessMap, now: i64) -> bool {
        if self
            .namespace
            .as_ref()
            .is_some_and(|ns| *ns != record.namespace)
        {
            return false;
        }
        if self
            .session
            .as_ref()
            .is_some_and(|s| record.fields.session_id.as_ref() != Some(s))
        {
            return false;
        }
        if let Some(before) = self.turns_before {
            match record.fields.end_turn.or(record.fields.start_turn) {
                Some(turn) if turn < before => {}
                _ => return false,
            }
        }
        if self
            .older_than
            .is_some_and(|age| record_time(record) > now - age)
        {
            return false;
        }
        if self
            .idle_for
            .is_some_and(|idle| last_access(record, access) > now - idle)
        {
            return false;
        }
        true
    }
}

/// When a record was last read or written: the access log, its own
/// `last_accessed`, else when it was added.
pub fn last_access(record: &Record, access: &AccessMap) -> i64 {
    let logged = access.get(&record.id).map(|a| a.last);
    let stored = record.last_accessed.as_deref().and_then(parse_time);
    let added = parse_time(&record.added_at);
    [logged, stored, added]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0)
}

/// What `archive` did (or, with `dry_run`, would do).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ArchiveReport {
    /// Nothing was written: the report says what would have moved.
    pub dry_run: bool,
    /// Records moved (or that would move).
    pub records: usize,
    /// Records per archive file (month).
    pub by_file: BTreeMap<String, usize>,
    /// Their ids.
    pub ids: Vec<String>,
    /// L2 bytes the records take: their share of the text index and vector files,
    /// by their share of the L2 records' JSON bytes (freed once segments merge).
    pub l2_bytes_freed: u64,
    /// Bytes appended to archive files.
    pub archive_bytes_written: u64,
    /// Seconds the archive took.
    pub seconds: f64,
    /// Earliest time a record left in L2 becomes due under the selection's age
    /// conditions (for `maintain`'s schedule).
    #[serde(skip)]
    pub next_due: Option<i64>,
}

/// Moves the L2 records the selection matches into the archive.
pub fn archive(
    store: &Store,
    selection: &Selection,
    dry_run: bool,
    timeout: Duration,
) -> Result<ArchiveReport> {
    let lock = store.lock_writer(timeout)?;
    archive_locked(store, &lock, selection, dry_run)
}

pub(crate) fn archive_locked(
    store: &Store,
    lock: &WriterLock,
    selection: &Selection,
    dry_run: bool,
) -> Result<ArchiveReport> {
    let started = Instant::now();
    let archive = Archive::new(store.root());
    if !dry_run {
        recover(store, lock)?;
    }
    let now = crate::now_unix();
    let access = access::read(store.root())?;
    let searcher = store.reader()?.searcher();
    let (mut total_json, mut chosen_json) = (0u64, 0u64);
    let mut next_due: Option<i64> = None;
    let mut by_file: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = Vec::new();
    // Only ids are kept from the scan; records are read again batch by batch,
    // so memory stays bounded however many records move.
    store.l2_records(&searcher, |record| {
        let json = record.source.to_string().len() as u64;
        total_json += json;
        if selection.matches(record, &access, now) {
            chosen_json += json;
            ids.push(record.id.clone());
            *by_file.entry(month_of(record)).or_default() += 1;
        } else {
            let due = due_time(record, &access, selection);
            next_due = Some(next_due.map_or(due, |d: i64| d.min(due)));
        }
        false
    })?;
    let l2_bytes = crate::files::dir_size(&store.root().join("text"))
        + crate::files::dir_size(&store.root().join("vectors"));
    let mut report = ArchiveReport {
        dry_run,
        records: ids.len(),
        l2_bytes_freed: if total_json == 0 {
            0
        } else {
            (l2_bytes as f64 * chosen_json as f64 / total_json as f64) as u64
        },
        next_due,
        by_file,
        ..ArchiveReport::default()
    };
    if dry_run || ids.is_empty() {
        report.ids = ids;
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    let l3 = L3Index::open_or_create(&archive)?;
    // Reads not yet folded go with the records: the fold skips archived ids.
    let pending = access::Pending::read(store.root())?;
    for batch in ids.chunks(ARCHIVE_BATCH) {
        let mut records = store.l2_records_by_id(&searcher, batch)?;
        for l2 in &mut records {
            pending.apply(&mut l2.record);
        }
        report.archive_bytes_written += archive_batch(store, lock, &archive, &l3, records, now)?;
    }
    report.ids = ids;
    crate::tiers::policy::note_archived(store, now)?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Records moved per step: each batch is journalled, appended, indexed and
/// removed from L2 on its own, which bounds memory (about 2 KiB per record).
const ARCHIVE_BATCH: usize = 20_000;

/// Moves one batch of L2 records into the archive, in the order of operations
/// of the module docs. Returns the archive bytes written.
fn archive_batch(
    store: &Store,
    lock: &WriterLock,
    archive: &Archive,
    l3: &L3Index,
    records: Vec<crate::store::tier::L2Record>,
    now: i64,
) -> Result<u64> {
    let entries = records
        .into_iter()
        .map(|l2| {
            Entry::new(
                l2.record,
                l2.hash,
                archived_text_hash(&l2.vector),
                l2.vector.embedding.as_deref(),
                now,
            )
        })
        .collect();
    archive_entries(store, lock, archive, l3, entries)
}

/// Archives exactly the L2 records named, each with the archiving time and
/// the pruning note given: an export's archived records, put back where they
/// were (`add` of an export). Returns how many were archived.
pub(crate) fn archive_as_given(
    store: &Store,
    lock: &WriterLock,
    given: &[ArchivedAs],
) -> Result<usize> {
    if given.is_empty() {
        return Ok(0);
    }
    recover(store, lock)?;
    let archive = Archive::new(store.root());
    let l3 = L3Index::open_or_create(&archive)?;
    let searcher = store.reader()?.searcher();
    let mut archived = 0;
    for batch in given.chunks(ARCHIVE_BATCH) {
        let by_id: HashMap<&str, &ArchivedAs> = batch.iter().map(|g| (g.id.as_str(), g)).collect();
        let ids: Vec<String> = batch.iter().map(|g| g.id.clone()).collect();
        let mut entries = Vec::with_capacity(batch.len());
        for l2 in store.l2_records_by_id(&searcher, &ids)? {
            let Some(as_given) = by_id.get(l2.record.id.as_str()) else {
                continue;
            };
            let mut entry = Entry::new(
                l2.record,
                l2.hash,
                archived_text_hash(&l2.vector),
                l2.vector.embedding.as_deref(),
                as_given.archived_at,
            );
            entry.dropped.clone_from(&as_given.dropped);
            entries.push(entry);
        }
        archived += entries.len();
        archive_entries(store, lock, &archive, &l3, entries)?;
    }
    if let Some(first) = given.iter().map(|g| g.archived_at).min() {
        crate::tiers::policy::note_archived(store, first)?;
    }
    Ok(archived)
}

/// How a record was archived: when, and what pruning dropped from it.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchivedAs {
    /// The record's id.
    pub id: String,
    /// When it was archived (Unix seconds).
    pub archived_at: i64,
    /// What pruning removed from it (empty when not pruned).
    pub dropped: Vec<String>,
}

/// Moves entries whose records are live in L2 into the archive, in the order
/// of operations of the module docs. Returns the archive bytes written.
fn archive_entries(
    store: &Store,
    lock: &WriterLock,
    archive: &Archive,
    l3: &L3Index,
    entries: Vec<Entry>,
) -> Result<u64> {
    let mut by_file: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    let mut ids = Vec::with_capacity(entries.len());
    for entry in entries {
        ids.push(entry.record.id.clone());
        by_file
            .entry(month_of(&entry.record))
            .or_default()
            .push(entry);
    }
    archive.write_journal(&Journal {
        op: "archive".into(),
        ids: ids.clone(),
        files: by_file.keys().cloned().collect(),
    })?;
    crash_point("archive-journal");
    let mut written = 0;
    let mut writer = l3.writer()?;
    for (file, entries) in &by_file {
        let before = std::fs::metadata(archive.file_path(file)).map_or(0, |m| m.len());
        let offsets = archive.append(file, entries)?;
        written += std::fs::metadata(archive.file_path(file))
            .map_or(0, |m| m.len())
            .saturating_sub(before);
        crash_point("archive-frames");
        l3.delete_ids(&writer, entries.iter().map(|e| &e.record.id));
        for (entry, offset) in entries.iter().zip(offsets) {
            let location = Location {
                file: file.clone(),
                offset,
            };
            writer.add_document(l3.document(entry, &location))?;
        }
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    crash_point("archive-l3-index");
    store.remove_locked(lock, &ids)?;
    crash_point("archive-l2-removed");
    archive.clear_journal()?;
    Ok(written)
}

/// When a record not selected now will be, under the selection's age conditions.
fn due_time(record: &Record, access: &AccessMap, selection: &Selection) -> i64 {
    let by_age = selection.older_than.map(|age| record_time(record) + age);
    let by_idle = selection
        .idle_for
        .map(|idle| last_access(record, access) + idle);
    by_age.into_iter().chain(by_idle).max().unwrap_or(i64::MAX)
}

/// The text hash an L2 vector is archived under: its own, but for a draft a
/// hash no text has (its complement), so that a restore knows it for a draft.
fn archived_text_hash(vector: &VectorField) -> u64 {
    if vector.draft {
        !vector.text_hash
    } else {
        vector.text_hash
    }
}
