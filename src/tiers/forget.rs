//! Forgetting: records removed from both tiers for good, and kept out.
//!
//! `delete` takes a record out of search, but its text stays in the text
//! index's segment files until they merge, and an archived copy stays in its
//! archive file. `forget` removes a record, a session, or every record
//! holding all the words of a query, from everywhere the store keeps text:
//!
//! 1. tombstones first ([`crate::store::tombstones`]), durably: from then on
//!    no write brings the records back (a re-ingest of their transcript
//!    skips them), whatever happens next;
//! 2. L2: the replies whose conversation context came from a forgotten
//!    prompt lose that context (it is a copy of the prompt's text); the
//!    records are deleted, and every segment holding deleted records is
//!    rewritten without them and the old files removed;
//! 3. L3: each archive file holding a forgotten record is rewritten without
//!    it (temp file, fsync, rename), the L3 index reindexed and purged the
//!    same way;
//! 4. the read positions of forgotten sessions' transcripts
//!    (`<store>/ingest/`), which hold the text of their last prompt.
//!
//! Every run first finishes what an earlier one left: any record a tombstone
//! buries that is still stored is forgotten too, so a `forget` killed midway
//! is completed by the next `forget` (and its records, already tombstoned,
//! never come back meanwhile). The Claude Code hooks' files of a forgotten
//! session are removed by the caller (`integrations::hooks`), which knows
//! their layout.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::{Duration, Instant};

use serde::Serialize;
use tantivy::collector::DocSetCollector;
use tantivy::query::{Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Searcher, Term};

use crate::archive::l3::{reindex_file, L3Index};
use crate::archive::{Archive, Entry};
use crate::error::{Error, Result};
use crate::index::IndexFields;
use crate::search::SearchEngine;
use crate::store::lock::WriterLock;
use crate::store::tombstones::{Stone, Tombstones};
use crate::store::Store;

/// What to forget.
#[derive(Debug, Clone)]
pub enum ForgetWhat {
    /// These record ids.
    Ids(Vec<String>),
    /// Every record of this session.
    Session(String),
    /// Every record holding all the words of this query (see
    /// [`SearchEngine::every_word_query`]).
    Query(String),
}

impl ForgetWhat {
    /// How the tombstones name the request (`forget --session S`).
    fn by(&self) -> String {
        match self {
            ForgetWhat::Ids(ids) => format!("forget {}", ids.join(" ")),
            ForgetWhat::Session(s) => format!("forget --session {s}"),
            ForgetWhat::Query(q) => format!("forget --query {q:?}"),
        }
    }
}

/// What a `forget` did (or, on a dry run, would do).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ForgetReport {
    /// Live records forgotten.
    pub l2: Vec<String>,
    /// Archived records forgotten.
    pub l3: Vec<String>,
    /// Ids asked for that the store does not hold (tombstoned all the same).
    pub missing: Vec<String>,
    /// Records that kept a forgotten prompt's text as their context and lost it.
    pub contexts_cleared: usize,
    /// Text index and L3 index segments rewritten without the forgotten records.
    pub segments_rewritten: usize,
    /// Archive files rewritten without them.
    pub archive_files_rewritten: usize,
    /// Sessions forgotten whole (their hook files are the caller's to remove).
    pub sessions: Vec<String>,
    /// Nothing was changed (`--dry-run`).
    pub dry_run: bool,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Forgets `what` in both tiers (see the module docs); with `dry_run` only
/// says what it would forget.
pub fn forget(
    store: &Store,
    what: &ForgetWhat,
    dry_run: bool,
    timeout: Duration,
) -> Result<ForgetReport> {
    let started = Instant::now();
    let lock = store.lock_writer(timeout)?;
    super::ops::recover(store, &lock)?;
    let archive = Archive::new(store.root());
    let l3 = L3Index::open_existing(&archive)?;
    let mut stones = Tombstones::load(store.root())?;
    let mut report = ForgetReport {
        dry_run,
        ..ForgetReport::default()
    };
    let (ids, sessions) = match what {
        ForgetWhat::Ids(ids) => (ids.clone(), Vec::new()),
        ForgetWhat::Session(s) => (Vec::new(), vec![s.clone()]),
        ForgetWhat::Query(q) => (matching_ids(store, l3.as_ref(), q)?, Vec::new()),
    };
    if !dry_run {
        let sessions_of = sessions_of(store, l3.as_ref(), &ids)?;
        let stone = Stone {
            at: crate::now_rfc3339(),
            by: what.by(),
            session: None,
        };
        for id in &ids {
            stones.ids.entry(id.clone()).or_insert_with(|| Stone {
                session: sessions_of.get(id).cloned().flatten(),
                ..stone.clone()
            });
        }
        for session in &sessions {
            stones
                .sessions
                .entry(session.clone())
                .or_insert_with(|| stone.clone());
        }
        stones.save(store.root())?;
        super::ops::crash_point("forget-tombstoned");
    }
    // What to remove: the request, and whatever earlier tombstones still
    // find stored (an interrupted forget).
    let (all_ids, all_sessions): (Vec<String>, Vec<String>) = if dry_run {
        (ids.clone(), sessions.clone())
    } else {
        (
            stones.ids.keys().cloned().collect(),
            stones.sessions.keys().cloned().collect(),
        )
    };
    let searcher = store.reader()?.searcher();
    let l2_ids: BTreeSet<String> = stored_ids(&searcher, store.fields(), &all_ids, &all_sessions)?
        .into_keys()
        .collect();
    let l3_ids: BTreeSet<String> = match &l3 {
        Some(l3) => stored_ids(
            &l3.reader()?.searcher(),
            l3.fields(),
            &all_ids,
            &all_sessions,
        )?
        .into_keys()
        .collect(),
        None => BTreeSet::new(),
    };
    drop(searcher);
    report.missing = ids
        .iter()
        .filter(|id| !l2_ids.contains(*id) && !l3_ids.contains(*id))
        .cloned()
        .collect();
    report.l2 = l2_ids.iter().cloned().collect();
    report.l3 = l3_ids.iter().cloned().collect();
    report.sessions = sessions;
    if dry_run {
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    let gone: HashSet<String> = l2_ids.union(&l3_ids).cloned().collect();
    report.contexts_cleared = clear_contexts(store, &lock, &gone)?;
    if !l2_ids.is_empty() {
        store.remove_locked(&lock, &report.l2)?;
        super::ops::crash_point("forget-l2-deleted");
    }
    report.segments_rewritten += store.purge_deleted_locked(&lock)?;
    if let Some(l3) = &l3 {
        let (files, segments) = forget_archived(&archive, l3, &gone)?;
        report.archive_files_rewritten = files;
        report.segments_rewritten += segments;
    }
    crate::transcript::ingest::forget_read_positions(store, &all_sessions, &gone);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// What `forget --undo` lifted.
#[derive(Debug, Clone, Default, Serialize)]
pub struct UndoReport {
    /// Tombstones lifted (ids, or sessions).
    pub lifted: Vec<String>,
    /// Named but not tombstoned.
    pub not_forgotten: Vec<String>,
}

/// Lifts the tombstones of `what` (ids or a session; a query names nothing
/// to lift): the records come back with the next ingest of their transcript.
pub fn undo(store: &Store, what: &ForgetWhat, timeout: Duration) -> Result<UndoReport> {
    let _lock = store.lock_writer(timeout)?;
    let mut stones = Tombstones::load(store.root())?;
    let mut report = UndoReport::default();
    let (map, names) =
        match what {
            ForgetWhat::Ids(ids) => (&mut stones.ids, ids.clone()),
            ForgetWhat::Session(s) => (&mut stones.sessions, vec![s.clone()]),
            ForgetWhat::Query(_) => return Err(Error::Usage(
                "`forget --undo` takes ids or --session: a query's records are tombstoned by id \
                 (`knowledge-db forget --list` shows them)"
                    .into(),
            )),
        };
    let mut reread: Vec<String> = Vec::new();
    for name in names {
        match map.remove(&name) {
            Some(stone) => {
                reread.extend(stone.session);
                if matches!(what, ForgetWhat::Session(_)) {
                    reread.push(name.clone());
                }
                report.lifted.push(name);
            }
            None => report.not_forgotten.push(name),
        }
    }
    if !report.lifted.is_empty() {
        stones.save(store.root())?;
        // Their transcripts were read past them: the next ingest reads them whole.
        crate::transcript::ingest::forget_read_positions(store, &reread, &HashSet::new());
    }
    Ok(report)
}

/// The live records of `searcher` that are in `ids` or of one of
/// `sessions`, with their session (L2 and the L3 index share the schema).
fn stored_ids(
    searcher: &Searcher,
    fields: &IndexFields,
    ids: &[String],
    sessions: &[String],
) -> Result<BTreeMap<String, Option<String>>> {
    let mut found = BTreeMap::new();
    let term = |field, text: &str| {
        TermQuery::new(Term::from_field_text(field, text), IndexRecordOption::Basic)
    };
    for id in ids {
        found.extend(ids_matching(searcher, &term(fields.id, id))?);
    }
    for session in sessions {
        found.extend(ids_matching(searcher, &term(fields.session, session))?);
    }
    Ok(found)
}

/// The ids and sessions of the live documents matching `query`, from the
/// `id` and `session` columns.
fn ids_matching(searcher: &Searcher, query: &dyn Query) -> Result<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    for address in searcher.search(query, &DocSetCollector)? {
        let segment = searcher.segment_reader(address.segment_ord);
        let id = column_text(segment, "id", address.doc_id)?;
        let session = column_text(segment, "session", address.doc_id)?;
        if let Some(id) = id {
            out.push((id, session));
        }
    }
    Ok(out)
}

/// A document's value in a keyword column, if it has one.
fn column_text(segment: &tantivy::SegmentReader, name: &str, doc: u32) -> Result<Option<String>> {
    let Some(column) = segment.fast_fields().str(name)? else {
        return Ok(None);
    };
    let ord = column.term_ords(doc).next();
    let Some(ord) = ord else {
        return Ok(None);
    };
    let mut text = String::new();
    column
        .ord_to_str(ord, &mut text)
        .map_err(|e| Error::io("text index", e))?;
    Ok(Some(text))
}

/// The ids, in both tiers, of the records holding every word of `query` in
/// their own text (a reply that holds them only in the prompt it carries as
/// context is not one of them: the prompt's forgetting clears that context).
fn matching_ids(store: &Store, l3: Option<&L3Index>, query: &str) -> Result<Vec<String>> {
    let engine = SearchEngine::new(store)?;
    let Some(words) = engine.every_word_query(query) else {
        return Err(Error::Usage(
            "the query has no searchable words: give the words the records to forget hold".into(),
        ));
    };
    let mut ids = BTreeSet::new();
    for (id, _) in ids_matching(&store.reader()?.searcher(), &*words)? {
        let own_text = match engine.record(&id)? {
            Some(mut record) => {
                record.context = None;
                engine.holds_every_word(&record, query)
            }
            None => true,
        };
        if own_text {
            ids.insert(id);
        }
    }
    if let Some(l3) = l3 {
        let archived = ids_matching(&l3.reader()?.searcher(), &*words)?;
        ids.extend(archived.into_iter().map(|(id, _)| id));
    }
    Ok(ids.into_iter().collect())
}

/// The session of each of `ids` that either tier holds.
fn sessions_of(
    store: &Store,
    l3: Option<&L3Index>,
    ids: &[String],
) -> Result<BTreeMap<String, Option<String>>> {
    let mut found = stored_ids(&store.reader()?.searcher(), store.fields(), ids, &[])?;
    if let Some(l3) = l3 {
        found.extend(stored_ids(&l3.reader()?.searcher(), l3.fields(), ids, &[])?);
    }
    Ok(found)
}

/// Takes the copied text of a forgotten prompt out of the replies that kept
/// it as their conversation context (`Record::context`, linked by
/// `context_from`); returns how many records changed.
fn clear_contexts(store: &Store, lock: &WriterLock, gone: &HashSet<String>) -> Result<usize> {
    if gone.is_empty() {
        return Ok(0);
    }
    let searcher = store.reader()?.searcher();
    let mut changed = Vec::new();
    store.for_each_l2_record(
        &searcher,
        |r| {
            r.context_from
                .as_ref()
                .is_some_and(|from| gone.contains(from))
                && !gone.contains(&r.id)
        },
        |mut l2| {
            l2.record.context = None;
            l2.record.context_from = None;
            changed.push((l2.record, l2.vector));
            Ok(())
        },
    )?;
    drop(searcher);
    // The vector was made from a text that held the context: made again.
    for (_, vector) in &mut changed {
        vector.embedding = None;
    }
    let count = changed.len();
    store.put_locked(lock, &changed)?;
    Ok(count)
}

/// Rewrites each archive file holding a forgotten record without it (and
/// without a forgotten prompt's text in other records' context), reindexes
/// and purges the L3 index. Returns (files rewritten, index segments
/// rewritten).
fn forget_archived(
    archive: &Archive,
    l3: &L3Index,
    gone: &HashSet<String>,
) -> Result<(usize, usize)> {
    let mut files = 0;
    let writer = l3.writer()?;
    for file in archive.files()? {
        let read = archive.read_file(&file)?;
        let touched = read.entries.iter().any(|(_, e)| {
            gone.contains(&e.record.id)
                || e.record
                    .context_from
                    .as_ref()
                    .is_some_and(|f| gone.contains(f))
        });
        if !touched {
            continue;
        }
        let kept: Vec<Entry> = read
            .entries
            .into_iter()
            .map(|(_, e)| e)
            .filter(|e| !gone.contains(&e.record.id))
            .map(|mut e| {
                if e.record
                    .context_from
                    .as_ref()
                    .is_some_and(|f| gone.contains(f))
                {
                    e.record.context = None;
                    e.record.context_from = None;
                    e.embedding = None;
                }
                e
            })
            .collect();
        l3.delete_ids(&writer, gone.iter());
        archive.rewrite(&file, &kept)?;
        reindex_file(archive, l3, &writer, &file)?;
        files += 1;
    }
    let mut writer = writer;
    writer.commit()?;
    writer.wait_merging_threads()?;
    let segments = l3.purge_deleted()?;
    Ok((files, segments))
}

/// Tombstones as a list for `forget --list`.
pub fn list(store: &Store) -> Result<BTreeMap<String, Vec<(String, Stone)>>> {
    let stones = Tombstones::load(store.root())?;
    let mut out = BTreeMap::new();
    out.insert("ids".to_string(), stones.ids.into_iter().collect());
    out.insert(
        "sessions".to_string(),
        stones.sessions.into_iter().collect(),
    );
    Ok(out)
}
