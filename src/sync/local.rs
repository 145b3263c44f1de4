//! The local side of sync: what the store holds now (both tiers, read from
//! the index's fast columns: no record is decoded to list them), the records
//! that changed since the manifest, and writing what was pulled.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::{json, Value};
use tantivy::Searcher;

use crate::archive::l3::L3Index;
use crate::archive::Archive;
use crate::embed::text::{embedding_text, text_hash};
use crate::error::{Error, Origin, Result};
use crate::record::Record;
use crate::store::Store;

/// One id the store holds: its version hash, namespace and project, whether
/// it is this store's own, and its tier.
#[derive(Debug, Clone)]
pub struct Held {
    /// The store's version hash (`crate::index::record_hash`).
    pub hash: u64,
    /// Its namespace.
    pub namespace: String,
    /// Its project (empty: none).
    pub project: String,
    /// Written here (not pulled from another origin).
    pub own: bool,
    /// Whether it is archived (L3) rather than live (L2).
    pub archived: bool,
}

/// The projects of this store's own records: what it has worked on.
pub fn worked_projects(held: &HashMap<String, Held>) -> HashSet<String> {
    held.values()
        .filter(|h| h.own && !h.project.is_empty())
        .map(|h| h.project.clone())
        .collect()
}

/// Every id of both tiers with its hash and namespace. An id in both tiers
/// (a moment of an interrupted operation) counts as L2's: L2 wins.
pub fn held(store: &Store) -> Result<HashMap<String, Held>> {
    let mut out = HashMap::new();
    let archive = Archive::new(store.root());
    if let Some(l3) = L3Index::open_existing(&archive)? {
        scan(&l3.reader()?.searcher(), true, &mut out)?;
    }
    scan(&store.reader()?.searcher(), false, &mut out)?;
    Ok(out)
}

fn scan(searcher: &Searcher, archived: bool, out: &mut HashMap<String, Held>) -> Result<()> {
    let text_error = |e| Error::io("text index", e);
    for segment in searcher.segment_readers() {
        let fast = segment.fast_fields();
        let (Some(ids), Some(namespaces)) = (fast.str("id")?, fast.str("namespace")?) else {
            continue;
        };
        let hashes = fast.u64("hash")?;
        let projects = fast.str("project")?;
        let origins = fast.str("origin")?;
        let mut names: HashMap<u64, String> = HashMap::new();
        let mut project_names: HashMap<u64, String> = HashMap::new();
        let mut local_ord = None;
        if let Some(origins) = &origins {
            local_ord = origins
                .dictionary()
                .term_ord(crate::index::LOCAL_ORIGIN.as_bytes())
                .map_err(text_error)?;
        }
        let mut id = String::new();
        for doc in segment.doc_ids_alive() {
            let Some(ord) = ids.term_ords(doc).next() else {
                continue;
            };
            id.clear();
            ids.ord_to_str(ord, &mut id).map_err(text_error)?;
            let namespace = match namespaces.term_ords(doc).next() {
                Some(ord) => match names.get(&ord) {
                    Some(name) => name.clone(),
                    None => {
                        let mut name = String::new();
                        namespaces.ord_to_str(ord, &mut name).map_err(text_error)?;
                        names.insert(ord, name.clone());
                        name
                    }
                },
                None => String::new(),
            };
            let project = match projects.as_ref().and_then(|p| p.term_ords(doc).next()) {
                Some(ord) => match project_names.get(&ord) {
                    Some(name) => name.clone(),
                    None => {
                        let mut name = String::new();
                        if let Some(p) = &projects {
                            p.ord_to_str(ord, &mut name).map_err(text_error)?;
                        }
                        project_names.insert(ord, name.clone());
                        name
                    }
                },
                None => String::new(),
            };
            // A store from before origins were indexed holds only its own.
            let own = match &origins {
                Some(o) => match o.term_ords(doc).next() {
                    Some(ord) => Some(ord) == local_ord,
                    None => true,
                },
                None => true,
            };
            out.insert(
                id.clone(),
                Held {
                    hash: hashes.first(doc).unwrap_or(0),
                    namespace,
                    project,
                    own,
                    archived,
                },
            );
        }
    }
    Ok(())
}

/// A record read for pushing, with its embedding when it has a full one.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The record as stored.
    pub record: Record,
    /// Its store version hash.
    pub hash: u64,
    /// `(text hash, embedding)` when it has a vector of the full model.
    pub vector: Option<(u64, Vec<f32>)>,
}

/// Reads the records of `ids` from L2, and those archived from L3.
pub fn load(store: &Store, ids: &[(String, bool)]) -> Result<Vec<Loaded>> {
    let live: Vec<String> = ids
        .iter()
        .filter(|(_, archived)| !archived)
        .map(|(id, _)| id.clone())
        .collect();
    let searcher = store.reader()?.searcher();
    let mut out: Vec<Loaded> = store
        .l2_records_by_id(&searcher, &live)?
        .into_iter()
        .map(|l2| Loaded {
            vector: (!l2.vector.draft)
                .then(|| l2.vector.embedding.map(|v| (l2.vector.text_hash, v)))
                .flatten(),
            hash: l2.hash,
            record: l2.record,
        })
        .collect();
    let archive = Archive::new(store.root());
    for (id, archived) in ids {
        if !archived {
            continue;
        }
        if let Some(entry) = archive.get(id)? {
            out.push(Loaded {
                vector: entry.vector().map(|v| (entry.text_hash, v)),
                hash: entry.hash,
                record: entry.record,
            });
        }
    }
    Ok(out)
}

/// Whether a record is a pruned stand-in that stays on this machine: a
/// record pruning reduced to its summary, or the summary of a session's
/// pruned messages. Retention is each machine's own choice, so its results
/// are never pushed.
pub fn is_pruned_copy(record: &Record) -> bool {
    record.pruned || record.source.get("pruned_messages").is_some()
}

/// The ids the archive's summaries of pruned messages stand for: records that
/// left this store by retention, not by a delete, so no tombstone is pushed.
pub fn pruned_ids(store: &Store, held: &HashMap<String, Held>) -> Result<HashSet<String>> {
    let archive = Archive::new(store.root());
    let mut out = HashSet::new();
    for (id, h) in held {
        if !h.archived || !id.starts_with("pruned-messages:") {
            continue;
        }
        let Some(entry) = archive.get(id)? else {
            continue;
        };
        if let Some(ids) = entry
            .record
            .source
            .pointer("/pruned_messages/ids")
            .and_then(Value::as_array)
        {
            out.extend(ids.iter().filter_map(Value::as_str).map(str::to_string));
        }
    }
    Ok(out)
}

/// A pulled version ready to write: the record (with its `sync` mark) and
/// the vector Postgres had for it, when that vector is of this model and
/// these embedding-text rules and of this very text.
#[derive(Debug)]
pub struct Incoming {
    /// The record as it will be stored.
    pub record: Record,
    /// `(text hash, vector)` to store without embedding again.
    pub vector: Option<(u64, Vec<f32>)>,
}

/// What a remote row's vector was made with.
#[derive(Debug, Clone)]
pub struct RemoteVector {
    /// The model id (`crate::embed::MODEL_ID` for ours).
    pub model: Option<String>,
    /// The embedding-text rules (`crate::embed::text::RECIPE`).
    pub recipe: Option<i32>,
    /// The hash of the text embedded, 16 hex digits.
    pub text_hash: Option<String>,
    /// The vector.
    pub embedding: Option<Vec<f32>>,
}

/// Reads a pulled row's export line back into a record (through the export
/// format's own reader, as `add` reads an export), marked with where it came
/// from, and keeps its vector when it fits.
pub fn incoming(
    id: &str,
    mut line: Value,
    mark: Value,
    written_at: &str,
    vector: RemoteVector,
) -> Result<Incoming> {
    let bad = |why: String| Error::Sync(format!("remote record `{id}`: {why}"));
    let object = line
        .as_object_mut()
        .ok_or_else(|| bad("not a JSON object".into()))?;
    object.insert("added_at".into(), json!(written_at));
    object.insert("tier".into(), json!("l2"));
    object.remove("vector");
    match object.get_mut("source").and_then(Value::as_object_mut) {
        Some(source) => {
            source.insert(super::MARK_KEY.into(), mark);
        }
        None => return Err(bad("its line has no `source` object".into())),
    }
    let origin = Origin::file(format!("postgres record {id}"));
    let imported = crate::export::parse_line(line, &origin).map_err(|e| bad(e.to_string()))?;
    if imported.record.id != id {
        return Err(bad(format!("its line holds id `{}`", imported.record.id)));
    }
    let record = imported.record;
    let expected = text_hash(&embedding_text(&record));
    let fits = vector.model.as_deref() == Some(crate::embed::MODEL_ID)
        && vector.recipe == i32::try_from(crate::embed::text::RECIPE).ok()
        && vector
            .text_hash
            .as_deref()
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            == Some(expected);
    let vector = match vector.embedding {
        Some(v) if fits && v.len() == crate::embed::DIM => Some((expected, v)),
        _ => None,
    };
    Ok(Incoming { record, vector })
}

/// Writes pulled records as one commit, with the vectors they brought.
/// Records without a usable vector are stored without one; the upkeep
/// embeds them.
pub fn write(
    store: &Store,
    incoming: Vec<Incoming>,
    timeout: Duration,
) -> Result<crate::store::AddReport> {
    if incoming.is_empty() {
        return Ok(Default::default());
    }
    let mut known = HashMap::new();
    let mut records = Vec::with_capacity(incoming.len());
    for i in incoming {
        if let Some((hash, vector)) = i.vector {
            known.insert(hash, vector);
        }
        records.push(i.record);
    }
    store
        .add_with_vectors(records, known, None, timeout)
        .map(|(report, _)| report)
}

/// Deletes pulled tombstones' records from both tiers: from L2, and from the
/// L3 index (the archived copy is then no longer found; the archive file
/// keeps its bytes until the lead's `forget` rewrites frames). Returns how
/// many were held here.
pub fn delete(store: &Store, ids: &[String], timeout: Duration) -> Result<usize> {
    if ids.is_empty() {
        return Ok(0);
    }
    let report = store.delete(ids, timeout)?;
    let mut deleted = report.deleted.len();
    let archive = Archive::new(store.root());
    let Some(l3) = L3Index::open_existing(&archive)? else {
        return Ok(deleted);
    };
    let searcher = l3.reader()?.searcher();
    let archived: Vec<String> = report
        .missing
        .into_iter()
        .filter(|id| {
            crate::archive::l3::locate(&searcher, l3.fields(), id)
                .ok()
                .flatten()
                .is_some()
        })
        .collect();
    if archived.is_empty() {
        return Ok(deleted);
    }
    let _lock = store.lock_writer(timeout)?;
    let mut writer = l3.writer()?;
    l3.delete_ids(&writer, &archived);
    writer.commit()?;
    writer.wait_merging_threads()?;
    deleted += archived.len();
    Ok(deleted)
}
