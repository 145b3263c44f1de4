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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::archive::l3::{self, reindex_file, L3Index};
use crate::archive::{digest, month_of, record_time, Archive, Entry, Journal, Location};
use crate::embed::text::{embedding_text, text_hash};
use crate::error::{Error, Result};
use crate::index::{record_hash, VectorField};
use crate::record::parse::{format_time, parse_time};
use crate::record::{Kind, Record, Tier};
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
    super::policy::note_archived(store, now)?;
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
        super::policy::note_archived(store, first)?;
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

/// What `restore` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RestoreReport {
    /// Ids brought back to L2.
    pub restored: Vec<String>,
    /// Ids asked for that are not in the archive.
    pub missing: Vec<String>,
    /// Restored with their archived embedding.
    pub vectors_kept: usize,
    /// Pruned records embedded again (their text changed when pruned).
    pub re_embedded: usize,
    /// Restored without a vector (pruned, and no model): `knowledge-db embed` adds it.
    pub without_vector: usize,
    /// Seconds the restore took.
    pub seconds: f64,
}

/// Which archived records `restore` brings back.
#[derive(Debug, Clone)]
pub enum RestoreWhat {
    /// These ids.
    Ids(Vec<String>),
    /// Every archived record of this session id.
    Session(String),
}

/// A way to get the embedding model, called only when a pruned record needs it.
pub type LoadEmbedder<'a> = &'a mut dyn FnMut() -> Option<Box<dyn crate::embed::Embedder>>;

/// Brings archived records back to L2 with their embeddings; `load_embedder` is
/// called only if a pruned record (whose text changed) needs a new vector.
pub fn restore(
    store: &Store,
    what: &RestoreWhat,
    mut load_embedder: impl FnMut() -> Option<Box<dyn crate::embed::Embedder>>,
    timeout: Duration,
) -> Result<RestoreReport> {
    let started = Instant::now();
    let lock = store.lock_writer(timeout)?;
    recover(store, &lock)?;
    let archive = Archive::new(store.root());
    let mut report = RestoreReport::default();
    let Some(l3) = L3Index::open_existing(&archive)? else {
        if let RestoreWhat::Ids(ids) = what {
            report.missing = ids.clone();
        }
        return Ok(report);
    };
    let searcher = l3.reader()?.searcher();
    let located = locate_all(&l3, &searcher, what, &mut report.missing)?;
    drop(searcher);
    let mut by_file: BTreeMap<String, HashSet<String>> = BTreeMap::new();
    for (id, location) in &located {
        by_file
            .entry(location.file.clone())
            .or_default()
            .insert(id.clone());
    }
    let mut restored: Vec<Entry> = Vec::new();
    let mut remaining: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    for (file, ids) in &by_file {
        let current = archive.read_file(file)?;
        let all = last_copies(current.entries.into_iter().map(|(_, e)| e), &HashSet::new());
        let (back, stay): (Vec<Entry>, Vec<Entry>) =
            all.into_iter().partition(|e| ids.contains(&e.record.id));
        restored.extend(back);
        remaining.insert(file.clone(), stay);
    }
    if restored.is_empty() {
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    let ids: Vec<String> = restored.iter().map(|e| e.record.id.clone()).collect();
    archive.write_journal(&Journal {
        op: "restore".into(),
        ids: ids.clone(),
        files: by_file.keys().cloned().collect(),
    })?;
    let records = l2_versions(store, restored, &mut load_embedder, &mut report)?;
    store.put_locked(&lock, &records)?;
    crash_point("restore-l2-written");
    let mut writer = l3.writer()?;
    l3.delete_ids(&writer, &ids);
    for (file, stay) in &remaining {
        archive.rewrite(file, stay)?;
        reindex_file(&archive, &l3, &writer, file)?;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    archive.clear_journal()?;
    report.restored = ids;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
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

/// The archived records' L2 versions with their vectors: the archived embedding,
/// else (pruned records) one computed now if an embedder is given.
fn l2_versions(
    store: &Store,
    entries: Vec<Entry>,
    load_embedder: LoadEmbedder,
    report: &mut RestoreReport,
) -> Result<Vec<(Record, VectorField)>> {
    let now = format_time(crate::now_unix());
    let mut out = Vec::with_capacity(entries.len());
    let mut need: Vec<usize> = Vec::new();
    for entry in entries {
        let vector = entry.vector();
        let mut record = entry.record;
        record.tier = Tier::L2;
        // Restoring is a read: the record is not idle, so `maintain` does not
        // archive it again straight away.
        record.last_accessed = Some(now.clone());
        if vector.is_some() {
            report.vectors_kept += 1;
        } else {
            need.push(out.len());
        }
        // A vector not of the record's current text (a draft's, see
        // `archived_text_hash`, or one older embedding-text rules made) comes
        // back as a draft: searched, and made again by the upkeep.
        let current = text_hash(&embedding_text(&record));
        let draft = vector.is_some() && entry.text_hash != current;
        out.push((
            record,
            VectorField {
                text_hash: if draft { current } else { entry.text_hash },
                embedding: vector,
                draft,
            },
        ));
    }
    if !need.is_empty() {
        let records: Vec<Record> = need.iter().map(|&i| out[i].0.clone()).collect();
        let mut embedder = if records.iter().any(|r| r.pruned) {
            load_embedder()
        } else {
            None
        };
        let had_embedder = embedder.is_some();
        let vectors = store.vectors_for_records(
            &records,
            embedder
                .as_mut()
                .map(|e| e.as_mut() as &mut dyn crate::embed::Embedder),
        )?;
        for (&i, vector) in need.iter().zip(vectors) {
            match vector.embedding {
                Some(_) if had_embedder => report.re_embedded += 1,
                Some(_) => report.vectors_kept += 1,
                None => report.without_vector += 1,
            }
            out[i].1 = vector;
        }
    }
    Ok(out)
}

/// The archived ids asked for with their locations; unknown ids go to `missing`.
fn locate_all(
    l3: &L3Index,
    searcher: &tantivy::Searcher,
    what: &RestoreWhat,
    missing: &mut Vec<String>,
) -> Result<Vec<(String, Location)>> {
    let mut out = Vec::new();
    match what {
        RestoreWhat::Ids(ids) => {
            for id in ids {
                match l3::locate(searcher, l3.fields(), id)? {
                    Some(location) => out.push((id.clone(), location)),
                    None => missing.push(id.clone()),
                }
            }
        }
        RestoreWhat::Session(session) => {
            let query = term(l3.fields().session, session);
            out = locations_matching(l3, searcher, &*query)?;
        }
    }
    Ok(out)
}

fn term(field: tantivy::schema::Field, text: &str) -> Box<dyn tantivy::query::Query> {
    Box::new(tantivy::query::TermQuery::new(
        tantivy::Term::from_field_text(field, text),
        tantivy::schema::IndexRecordOption::Basic,
    ))
}

/// The ids and frame locations of the archived records `query` matches.
fn locations_matching(
    l3: &L3Index,
    searcher: &tantivy::Searcher,
    query: &dyn tantivy::query::Query,
) -> Result<Vec<(String, Location)>> {
    let addresses = searcher.search(query, &tantivy::collector::DocSetCollector)?;
    let ids = searcher
        .segment_readers()
        .iter()
        .map(|s| s.fast_fields().str("id"))
        .collect::<tantivy::Result<Vec<_>>>()?;
    let mut out = Vec::with_capacity(addresses.len());
    for address in addresses {
        let mut id = String::new();
        if let Some(Some(column)) = ids.get(address.segment_ord as usize) {
            if let Some(ord) = column.term_ords(address.doc_id).next() {
                column
                    .ord_to_str(ord, &mut id)
                    .map_err(|e| Error::io("archive/index", e))?;
            }
        }
        if let Some(location) = l3::location_of(searcher, l3.fields(), address)? {
            out.push((id, location));
        }
    }
    Ok(out)
}

/// A query for the task and segment records of one session in one namespace.
fn summaries_query(
    fields: &crate::index::IndexFields,
    namespace: &str,
    session: &str,
) -> tantivy::query::BooleanQuery {
    use tantivy::query::{BooleanQuery, Occur};
    let kinds = BooleanQuery::new(vec![
        (Occur::Should, term(fields.kind, Kind::Task.as_str())),
        (Occur::Should, term(fields.kind, Kind::Segment.as_str())),
    ]);
    BooleanQuery::new(vec![
        (Occur::Must, term(fields.session, session)),
        (Occur::Must, term(fields.namespace, namespace)),
        (Occur::Must, Box::new(kinds)),
    ])
}

/// The session's own task and segment summaries, wherever they are: L2 (the
/// live version) and L3 (archived ones, possibly pruned to their summary fields).
fn session_summaries(
    store: &Store,
    archive: &Archive,
    namespace: &str,
    session: &str,
) -> Result<Vec<Record>> {
    let searcher = store.reader()?.searcher();
    let query = summaries_query(store.fields(), namespace, session);
    let mut out = Vec::new();
    for address in searcher.search(&query, &tantivy::collector::DocSetCollector)? {
        let doc: tantivy::TantivyDocument = searcher.doc(address)?;
        out.push(store.fields().record(&doc)?);
    }
    if let Some(l3) = L3Index::open_existing(archive)? {
        let l3_searcher = l3.reader()?.searcher();
        let query = summaries_query(l3.fields(), namespace, session);
        for (id, location) in locations_matching(&l3, &l3_searcher, &query)? {
            if out.iter().all(|r| r.id != id) {
                out.extend(archive.read_entry(&location, &id)?.map(|e| e.record));
            }
        }
    }
    out.sort_by_key(|r| (r.fields.start_turn, r.fields.timestamp, r.id.clone()));
    Ok(out)
}

/// What `prune` did to one record (or to one range of messages).
#[derive(Debug, Clone, Serialize)]
pub struct Pruned {
    /// The pruned record's id, or the id of the summary that replaces a
    /// session's messages (`pruned-messages:…`).
    pub id: String,
    /// The record's kind (`message` for a summary of messages).
    pub kind: Kind,
    /// What was dropped: the fields left out, a note's text past its first
    /// 500 characters, the embedding, or the count of messages whose raw text went.
    pub dropped: Vec<String>,
}

/// What `prune` did (or, with `dry_run`, would do).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PruneReport {
    /// Nothing was written: the report says what would have been pruned.
    pub dry_run: bool,
    /// Records reduced to summaries (segments, tasks, notes).
    pub records_pruned: usize,
    /// Raw messages dropped, and the summaries that replace them.
    pub messages_dropped: usize,
    /// Summaries written in their place (one per session per archive file).
    pub message_summaries: usize,
    /// Archive files (months) rewritten; empty on a dry run.
    pub files_rewritten: Vec<String>,
    /// Bytes of the archive files with something to prune, before.
    pub bytes_before: u64,
    /// Bytes of the rewritten files after (0 on a dry run).
    pub bytes_after: u64,
    /// Each record pruned and each summary of messages, with what it dropped.
    pub pruned: Vec<Pruned>,
    /// Seconds the prune took.
    pub seconds: f64,
    /// Earliest time an unpruned archived record left becomes due (for `maintain`).
    #[serde(skip)]
    pub next_due: Option<i64>,
}

/// Reduces archived records older than `older_than` seconds (time in the
/// archive) to summary-only.
pub fn prune(
    store: &Store,
    older_than: i64,
    dry_run: bool,
    timeout: Duration,
) -> Result<PruneReport> {
    let lock = store.lock_writer(timeout)?;
    prune_locked(store, &lock, older_than, dry_run)
}

pub(crate) fn prune_locked(
    store: &Store,
    lock: &WriterLock,
    older_than: i64,
    dry_run: bool,
) -> Result<PruneReport> {
    let started = Instant::now();
    if !dry_run {
        recover(store, lock)?;
    }
    let archive = Archive::new(store.root());
    let now = crate::now_unix();
    let cutoff = now - older_than;
    let mut report = PruneReport {
        dry_run,
        ..PruneReport::default()
    };
    let mut summaries: HashMap<(String, String), Vec<Record>> = HashMap::new();
    for file in archive.files()? {
        let current = archive.read_file(&file)?;
        let entries = last_copies(current.entries.into_iter().map(|(_, e)| e), &HashSet::new());
        let due = |e: &Entry| !e.record.pruned && e.archived_at <= cutoff;
        for e in entries.iter().filter(|e| !due(e) && !e.record.pruned) {
            let at = e.archived_at + older_than;
            report.next_due = Some(report.next_due.map_or(at, |d: i64| d.min(at)));
        }
        if !entries.iter().any(due) {
            continue;
        }
        let old_ids: Vec<String> = entries.iter().map(|e| e.record.id.clone()).collect();
        let mut kept = Vec::with_capacity(entries.len());
        let mut messages: BTreeMap<(String, String), Vec<Entry>> = BTreeMap::new();
        for entry in entries {
            if !due(&entry) {
                kept.push(entry);
            } else if entry.record.kind == Kind::Message {
                let session = entry.record.fields.session_id.clone().unwrap_or_default();
                messages
                    .entry((entry.record.namespace.clone(), session))
                    .or_default()
                    .push(entry);
            } else {
                let pruned = prune_entry(entry)?;
                report.records_pruned += 1;
                report.pruned.push(Pruned {
                    id: pruned.record.id.clone(),
                    kind: pruned.record.kind,
                    dropped: pruned.dropped.clone(),
                });
                kept.push(pruned);
            }
        }
        for ((namespace, session), group) in messages {
            report.messages_dropped += group.len();
            let key = (namespace.clone(), session.clone());
            if !summaries.contains_key(&key) {
                let found = if session.is_empty() {
                    Vec::new()
                } else {
                    session_summaries(store, &archive, &namespace, &session)?
                };
                summaries.insert(key.clone(), found);
            }
            let summary = message_summary(&namespace, &session, &group, &summaries[&key], now)?;
            report.message_summaries += 1;
            report.pruned.push(Pruned {
                id: summary.record.id.clone(),
                kind: Kind::Message,
                dropped: summary.dropped.clone(),
            });
            kept.push(summary);
        }
        report.bytes_before += current.bytes;
        if dry_run {
            continue;
        }
        archive.write_journal(&Journal {
            op: "prune".into(),
            ids: old_ids.clone(),
            files: vec![file.clone()],
        })?;
        archive.rewrite(&file, &kept)?;
        crash_point("prune-rewritten");
        report.bytes_after += std::fs::metadata(archive.file_path(&file)).map_or(0, |m| m.len());
        let l3 = L3Index::open_or_create(&archive)?;
        let mut writer = l3.writer()?;
        l3.delete_ids(&writer, &old_ids);
        reindex_file(&archive, &l3, &writer, &file)?;
        writer.commit()?;
        writer.wait_merging_threads()?;
        archive.clear_journal()?;
        report.files_rewritten.push(file);
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Whether a pruned record of `kind` keeps the field `key`; the rest is dropped.
fn is_kept(kind: Kind, key: &str) -> bool {
    const COMMON: [&str; 12] = [
        "kind",
        "namespace",
        "session_id",
        "start_turn",
        "end_turn",
        "compressed_at",
        "completed_at",
        "timestamp",
        "created_at",
        "last_accessed",
        "id",
        "_id",
    ];
    let own: &[&str] = match kind {
        Kind::Segment => &["segment_id", "topic", "compressed_content"],
        Kind::Task => &["task_id", "subject", "key_outcomes"],
        Kind::Note => &["title", "text"],
        Kind::Message => &[],
    };
    COMMON.contains(&key) || own.contains(&key)
}

/// A note keeps this many characters of its text when pruned.
const NOTE_KEEP_CHARS: usize = 500;

/// A segment, task or note reduced to its summary fields.
fn prune_entry(mut entry: Entry) -> Result<Entry> {
    let kind = entry.record.kind;
    let Value::Object(source) = std::mem::take(&mut entry.record.source) else {
        return Err(Error::CorruptRecord {
            id: entry.record.id.clone(),
            message: "archived record is not a JSON object".into(),
        });
    };
    let mut reduced = Map::new();
    let mut dropped = Vec::new();
    for (key, value) in source {
        if is_kept(kind, &key) {
            reduced.insert(key, value);
        } else {
            dropped.push(key);
        }
    }
    if kind == Kind::Note {
        if let Some(Value::String(text)) = reduced.get_mut("text") {
            let chars = text.chars().count();
            if chars > NOTE_KEEP_CHARS {
                *text = text.chars().take(NOTE_KEEP_CHARS).collect::<String>() + "…";
                dropped.push(format!(
                    "text after {NOTE_KEEP_CHARS} of {chars} characters"
                ));
            }
        }
    }
    if entry.embedding.is_some() {
        dropped.push("embedding".into());
    }
    entry.record.source = Value::Object(reduced);
    finish_pruned(entry, dropped)
}

/// Marks an entry pruned, re-derives its fields and hashes.
fn finish_pruned(mut entry: Entry, dropped: Vec<String>) -> Result<Entry> {
    let record = &mut entry.record;
    record.pruned = true;
    record.fields = crate::record::parse::derive_fields(record.kind, &record.source).map_err(
        |(field, message)| Error::CorruptRecord {
            id: record.id.clone(),
            message: format!("pruned record, field `{field}`: {message}"),
        },
    )?;
    entry.hash = record_hash(record);
    entry.text_hash = text_hash(&embedding_text(record));
    entry.embedding = None;
    entry.dropped = dropped;
    Ok(entry)
}

/// One record standing for a session's pruned messages: what they were about
/// (see [`digest`]), how many, how they were written, which turns, what
/// time range, and their ids (so nothing disappears without a trace).
fn message_summary(
    namespace: &str,
    session: &str,
    group: &[Entry],
    session_summaries: &[Record],
    now: i64,
) -> Result<Entry> {
    let times: Vec<i64> = group.iter().map(|e| record_time(&e.record)).collect();
    let turns: Vec<u64> = group
        .iter()
        .filter_map(|e| e.record.fields.start_turn.or(e.record.fields.end_turn))
        .collect();
    let (first, last) = (
        times.iter().min().copied().unwrap_or(0),
        times.iter().max().copied().unwrap_or(0),
    );
    let (start_turn, end_turn) = (turns.iter().min().copied(), turns.iter().max().copied());
    let session_label = if session.is_empty() {
        "no session"
    } else {
        session
    };
    let turn_text = match (start_turn, end_turn) {
        (Some(s), Some(e)) => format!(", turns {s}-{e}"),
        _ => String::new(),
    };
    let records: Vec<&Record> = group.iter().map(|e| &e.record).collect();
    let digest = digest::digest(&records, session_summaries);
    let text = format!(
        "Session {session_label}{turn_text}, {} to {}: the raw text of {} messages ({}) was pruned from the archive; \
         this summary keeps what they were about, their count, time range and ids.\n{}",
        format_time(first),
        format_time(last),
        group.len(),
        digest.written.describe(),
        digest.text,
    );
    let id = format!(
        "pruned-messages:{session_label}:{}-{}",
        start_turn.map_or(first.to_string(), |t| t.to_string()),
        end_turn.map_or(last.to_string(), |t| t.to_string())
    );
    let mut source = serde_json::json!({
        "id": id,
        "kind": "message",
        "role": "summary",
        "text": text,
        "timestamp": format_time(last),
        "files": digest.files,
        "commands": digest.commands,
        "errors": digest.errors,
        "pruned_messages": {
            "count": group.len(),
            "ingested": digest.written.ingested,
            "evicted": digest.written.evicted,
            "added": digest.written.added,
            "first_time": format_time(first),
            "last_time": format_time(last),
            "summarised_from": session_summaries.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
            "ids": group.iter().map(|e| e.record.id.clone()).collect::<Vec<_>>(),
        },
    });
    if !session.is_empty() {
        source["session_id"] = Value::String(session.to_string());
    }
    if let (Some(s), Some(e)) = (start_turn, end_turn) {
        source["start_turn"] = s.into();
        source["end_turn"] = e.into();
    }
    let record = Record {
        id,
        kind: Kind::Message,
        namespace: namespace.to_string(),
        added_at: crate::record::parse::format_time(now),
        tier: Tier::L3,
        pruned: false,
        access_count: 0,
        last_accessed: None,
        context: None,
        context_from: None,
        source,
        fields: Default::default(),
    };
    let entry = Entry {
        record,
        hash: 0,
        text_hash: 0,
        embedding: None,
        archived_at: group.iter().map(|e| e.archived_at).min().unwrap_or(now),
        dropped: Vec::new(),
    };
    finish_pruned(entry, vec![format!("{} messages (raw text)", group.len())])
}
