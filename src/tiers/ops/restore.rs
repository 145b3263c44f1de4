//! `restore`: bringing archived records back to L2 (by id or by session)
//! with their archived embeddings, a pruned record embedded again when a
//! model is at hand; their archive files are rewritten without them.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::find::{locations_matching, term};
use super::{crash_point, last_copies, recover};
use crate::archive::l3::{self, reindex_file, L3Index};
use crate::archive::{Archive, Entry, Journal, Location};
use crate::embed::text::{embedding_text, text_hash};
use crate::error::Result;
use crate::index::VectorField;
use crate::record::parse::format_time;
use crate::record::{Record, Tier};
use crate::store::Store;

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
