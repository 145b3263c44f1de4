//! Rebuilding the text index from what survives of it.
//!
//! The text index holds every record's JSON (and embedding) in its document
//! store, the `.store` file of each segment. The other files of a segment
//! (postings, terms, positions, fast fields, norms) are derived from those
//! documents. So when they are damaged or missing, or `meta.json` is gone, the
//! records can still be read from the `.store` files and indexed again into a
//! fresh index, which then replaces the damaged one by a rename. The damaged
//! index is kept beside the store (`text.damaged-<time>/`), never deleted: a
//! record that could not be read is still in it for a person or a later tool.
//!
//! [`problems`] says what is wrong with the text index without opening it the
//! way search does (so it works when opening fails); [`rebuild`] does the rescue.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use serde::Serialize;
use tantivy::directory::footer::Footer;
use tantivy::directory::{Directory, FileSlice, MmapDirectory};
use tantivy::fastfield::AliveBitSet;
use tantivy::index::{SegmentComponent, SegmentMeta};
use tantivy::schema::Value;
use tantivy::store::StoreReader;
use tantivy::{Index, TantivyDocument};

use super::lock::WriterLock;
use crate::embed::text::{embedding_text, text_hash};
use crate::error::{Error, Result};
use crate::index::{record_hash, register_tokenizers, IndexFields, VectorField};
use crate::record::Record;

/// Memory for the rebuilding writer.
const REBUILD_HEAP_BYTES: usize = 64 * 1024 * 1024;

/// What is wrong with `<store>/text/`, in words; empty when it is sound.
pub fn problems(root: &Path) -> Vec<String> {
    let text = root.join("text");
    let mut found: Vec<String> = crate::index::damage::index_problems(&text, "text")
        .iter()
        .map(ToString::to_string)
        .collect();
    if found.is_empty() {
        let opened = crate::index::damage::quiet_panics(|| {
            catch_unwind(AssertUnwindSafe(|| {
                let index = Index::open_in_dir(&text)?;
                register_tokenizers(&index);
                index.reader().map(|r| r.searcher().num_docs())
            }))
        });
        match opened {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => found.push(format!("text/ cannot be read: {e}")),
            Err(_) => found.push("text/ cannot be read: the index reader panicked".into()),
        }
    }
    found
}

/// What a rebuild of the text index did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RescueReport {
    /// Segments whose document store was read.
    pub segments_read: usize,
    /// Records read back and indexed again.
    pub records_recovered: usize,
    /// Records that could not be read, with their id when it is known.
    pub lost: Vec<String>,
    /// Ids that could not be read from the index but are in the archive (L3),
    /// where they stay readable; `knowledge-db restore ID` brings them back.
    pub kept_in_archive: Vec<String>,
    /// Ids found in more than one segment (possible only without `meta.json`):
    /// the copy added last was kept.
    pub duplicates_resolved: Vec<String>,
    /// Records read back whose JSON no longer matches the version hash stored
    /// beside it (a damaged document store block that still decoded): kept as
    /// read, named here so a person can check them.
    pub suspect: Vec<String>,
    /// Where the damaged index was moved (kept, never deleted).
    pub damaged_index: PathBuf,
    /// Notes on how the rescue worked (e.g. without `meta.json`).
    pub notes: Vec<String>,
}

/// One segment as found on disk: its id, document count and deletes.
struct FoundSegment {
    id: String,
    /// Known from `meta.json`; without it, read from the document store.
    max_doc: Option<u32>,
    delete_file: Option<PathBuf>,
}

/// Reads every readable record out of `<store>/text/`, indexes them into a new
/// index and swaps it in. The caller holds the writer lock. A record that
/// cannot be read but whose id is in `archived` (the ids other tiers hold) is
/// reported as kept there rather than lost.
pub fn rebuild(root: &Path, _lock: &WriterLock, archived: &[String]) -> Result<RescueReport> {
    let text = root.join("text");
    let mut report = RescueReport::default();
    let segments = find_segments(&text, &mut report);
    let directory = MmapDirectory::open(&text)
        .map_err(|e| Error::io(&text, std::io::Error::other(e.to_string())))?;
    let fields = IndexFields::from_schema(&IndexFields::schema())?;
    let known = crate::index::damage::quiet_panics(|| {
        catch_unwind(AssertUnwindSafe(|| ids_by_doc(&directory, &segments)))
    })
    .unwrap_or_default();
    let mut records: HashMap<String, (Record, Option<Vec<f32>>)> = HashMap::new();
    let mut lost_docs: Vec<(String, u32, String)> = Vec::new();
    for segment in &segments {
        let read = crate::index::damage::quiet_panics(|| {
            catch_unwind(AssertUnwindSafe(|| {
                read_segment(&directory, segment, &fields, &mut lost_docs)
            }))
        });
        let docs = match read {
            Ok(Ok(docs)) => docs,
            Ok(Err(why)) => {
                lose_segment(&known, &segment.id, &why, &mut report);
                continue;
            }
            Err(_) => {
                let why = "reading its document store panicked";
                lose_segment(&known, &segment.id, why, &mut report);
                continue;
            }
        };
        report.segments_read += 1;
        for (doc, record, vector) in docs {
            if let Some((_, hash)) = known.get(&(segment.id.clone(), doc)) {
                if *hash != record_hash(&record) {
                    report.suspect.push(record.id.clone());
                }
            }
            match records.get(&record.id) {
                Some((kept, _)) => {
                    report.duplicates_resolved.push(record.id.clone());
                    if record.added_at > kept.added_at {
                        records.insert(record.id.clone(), (record, vector));
                    }
                }
                None => {
                    records.insert(record.id.clone(), (record, vector));
                }
            }
        }
    }
    name_lost_docs(&known, &lost_docs, &mut report);
    report.duplicates_resolved.sort();
    report.duplicates_resolved.dedup();
    let (in_archive, lost): (Vec<String>, Vec<String>) = report.lost.drain(..).partition(|entry| {
        archived
            .iter()
            .any(|id| entry.starts_with(&format!("id {id} ")))
    });
    report.lost = lost;
    report.kept_in_archive = in_archive;
    report.records_recovered = records.len();
    report.damaged_index = write_and_swap(root, &fields, records)?;
    Ok(report)
}

/// Completes a swap cut short by a crash: `text/` was renamed aside but the
/// finished `text.rebuild/` was not yet renamed into place.
pub fn finish_interrupted_swap(root: &Path) -> Result<()> {
    let (text, fresh) = (root.join("text"), root.join("text.rebuild"));
    if !text.exists() && fresh.join("meta.json").exists() {
        fs::rename(&fresh, &text).map_err(|e| Error::io(&fresh, e))?;
        crate::files::sync_dir(root)?;
    }
    Ok(())
}

/// Segments from `meta.json`, else every `.store` file in the folder.
fn find_segments(text: &Path, report: &mut RescueReport) -> Vec<FoundSegment> {
    let index = crate::index::damage::quiet_panics(|| catch_unwind(|| Index::open_in_dir(text)))
        .map_err(|_| "the index library panicked".to_string())
        .and_then(|opened| opened.map_err(|e| e.to_string()));
    let metas = index.and_then(|index| {
        let damaged: std::collections::HashSet<PathBuf> =
            crate::index::damage::checksum_problems(&index, text, "")
                .unwrap_or_default()
                .into_iter()
                .map(|p| p.path)
                .collect();
        Ok((index.load_metas().map_err(|e| e.to_string())?, damaged))
    });
    if let Ok((metas, damaged)) = metas {
        return metas
            .segments
            .iter()
            .map(|meta: &SegmentMeta| {
                let mut delete_file = meta
                    .has_deletes()
                    .then(|| meta.relative_path(SegmentComponent::Delete));
                // A damaged deletes file could hide live records: read the
                // segment whole instead (a deleted record may come back).
                if delete_file.as_ref().is_some_and(|d| damaged.contains(d)) {
                    report.notes.push(format!(
                        "{} fails its checksum: segment {} was read whole, so records deleted from it may come back",
                        delete_file.as_ref().map_or(String::new(), |d| d.display().to_string()),
                        meta.id().uuid_string()
                    ));
                    delete_file = None;
                }
                FoundSegment {
                    id: meta.id().uuid_string(),
                    max_doc: Some(meta.max_doc()),
                    delete_file,
                }
            })
            .collect();
    }
    report.notes.push(
        "meta.json is missing or unreadable: every segment found in text/ was read, with its newest deletes file"
            .into(),
    );
    let mut stores = Vec::new();
    let mut deletes: BTreeMap<String, (u64, PathBuf)> = BTreeMap::new();
    for entry in fs::read_dir(text).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let parts: Vec<&str> = name.split('.').collect();
        match parts.as_slice() {
            [id, "store"] => stores.push(id.to_string()),
            [id, opstamp, "del"] => {
                let opstamp: u64 = opstamp.parse().unwrap_or(0);
                let newer = deletes.get(*id).is_none_or(|(seen, _)| opstamp > *seen);
                if newer {
                    deletes.insert(id.to_string(), (opstamp, PathBuf::from(&name)));
                }
            }
            _ => {}
        }
    }
    stores.sort();
    stores
        .into_iter()
        .map(|id| FoundSegment {
            delete_file: deletes.remove(&id).map(|(_, path)| path),
            id,
            max_doc: None,
        })
        .collect()
}

/// A file of the index without its tantivy footer.
fn open_component(
    directory: &MmapDirectory,
    path: &Path,
) -> std::result::Result<FileSlice, String> {
    let file = directory.open_read(path).map_err(|e| e.to_string())?;
    let (_, body) = Footer::extract_footer(file).map_err(|e| e.to_string())?;
    Ok(body)
}

type Recovered = Vec<(u32, Record, Option<Vec<f32>>)>;

/// The live records of one segment's document store; unreadable documents go to `lost`.
fn read_segment(
    directory: &MmapDirectory,
    segment: &FoundSegment,
    fields: &IndexFields,
    lost: &mut Vec<(String, u32, String)>,
) -> std::result::Result<Recovered, String> {
    let store = open_component(directory, Path::new(&format!("{}.store", segment.id)))?;
    let store = StoreReader::open(store, 4).map_err(|e| e.to_string())?;
    let alive = alive_docs(directory, segment);
    let max_doc = segment.max_doc.unwrap_or_else(|| count_docs(&store));
    let mut out = Vec::new();
    for doc in 0..max_doc {
        if alive.as_ref().is_some_and(|a| a.is_deleted(doc)) {
            continue;
        }
        let stored: TantivyDocument = match store.get(doc) {
            Ok(stored) => stored,
            Err(e) => {
                lost.push((segment.id.clone(), doc, e.to_string()));
                continue;
            }
        };
        match fields.record(&stored) {
            Ok(record) => {
                let vector = stored
                    .get_first(fields.embedding)
                    .and_then(|v| v.as_bytes())
                    .and_then(|b| crate::index::embedding_from_bytes(b, crate::embed::DIM));
                out.push((doc, record, vector));
            }
            Err(e) => lost.push((segment.id.clone(), doc, e.to_string())),
        }
    }
    Ok(out)
}

/// Documents in a store whose segment size is unknown: read until a lookup fails.
fn count_docs(store: &StoreReader) -> u32 {
    let mut n = 0u32;
    loop {
        match store.get_document_bytes(n) {
            Ok(_) => n += 1,
            Err(tantivy::TantivyError::InvalidArgument(_)) => return n,
            // A damaged block: the document exists but cannot be read.
            Err(_) => n += 1,
        }
        if n == u32::MAX {
            return n;
        }
    }
}

/// Reports every record of a segment whose document store cannot be read,
/// by id where the id column still opens.
fn lose_segment(known: &DocIds, segment: &str, why: &str, report: &mut RescueReport) {
    let mut ids: Vec<&String> = known
        .iter()
        .filter(|((s, _), _)| s == segment)
        .map(|(_, (id, _))| id)
        .collect();
    ids.sort();
    if ids.is_empty() {
        report.lost.push(format!(
            "segment {segment}: its document store cannot be read ({why}); every record in it (ids unknown: the id column is unreadable too)"
        ));
    }
    for id in ids {
        report.lost.push(format!(
            "id {id} (segment {segment}): its document store cannot be read ({why})"
        ));
    }
}

/// Turns unreadable documents into report lines, naming their ids when the
/// segment's `id` fast field can still be read.
fn name_lost_docs(ids: &DocIds, lost: &[(String, u32, String)], report: &mut RescueReport) {
    for (segment, doc, why) in lost {
        match ids.get(&(segment.clone(), *doc)) {
            Some((id, _)) => report
                .lost
                .push(format!("id {id} (segment {segment} doc {doc}): {why}")),
            None => report.lost.push(format!(
                "segment {segment} doc {doc} (id unknown: the id column is unreadable too): {why}"
            )),
        }
    }
}

/// (segment, doc) -> (id, version hash), from the fast fields.
type DocIds = HashMap<(String, u32), (String, u64)>;

/// The id and version hash of every live document, read from the `id` and
/// `hash` columns of each segment's fast-field file (without opening the rest
/// of the segment, which may be what is damaged).
fn ids_by_doc(directory: &MmapDirectory, segments: &[FoundSegment]) -> DocIds {
    let mut ids = HashMap::new();
    for segment in segments {
        let Ok(fast) = open_component(directory, Path::new(&format!("{}.fast", segment.id))) else {
            continue;
        };
        let Ok(columns) = tantivy::columnar::ColumnarReader::open(fast) else {
            continue;
        };
        let alive = alive_docs(directory, segment);
        let column = |name: &str| {
            columns
                .read_columns(name)
                .ok()?
                .into_iter()
                .next()?
                .open()
                .ok()
        };
        let Some(tantivy::columnar::DynamicColumn::Str(id_column)) = column("id") else {
            continue;
        };
        let hashes = match column("hash") {
            Some(tantivy::columnar::DynamicColumn::U64(hashes)) => Some(hashes),
            _ => None,
        };
        let mut id = String::new();
        for doc in 0..columns.num_docs() {
            if alive.as_ref().is_some_and(|a| a.is_deleted(doc)) {
                continue;
            }
            let Some(ord) = id_column.term_ords(doc).next() else {
                continue;
            };
            id.clear();
            if id_column.ord_to_str(ord, &mut id).is_ok() {
                let hash = hashes.as_ref().and_then(|h| h.first(doc)).unwrap_or(0);
                ids.insert((segment.id.clone(), doc), (id.clone(), hash));
            }
        }
    }
    ids
}

/// The segment's deletes, when it has a readable deletes file.
fn alive_docs(directory: &MmapDirectory, segment: &FoundSegment) -> Option<AliveBitSet> {
    let path = segment.delete_file.as_ref()?;
    let bytes = open_component(directory, path).ok()?.read_bytes().ok()?;
    Some(AliveBitSet::open(bytes))
}

/// Writes `records` into a fresh index beside `text/`, then swaps it in: the
/// damaged index is renamed aside (kept) and the new one renamed into place.
/// The new index is built in `text.rebuild.tmp/` and renamed to `text.rebuild/`
/// only once committed, so a `text.rebuild/` is always complete and
/// [`finish_interrupted_swap`] may move it into place after a crash.
fn write_and_swap(
    root: &Path,
    fields: &IndexFields,
    records: HashMap<String, (Record, Option<Vec<f32>>)>,
) -> Result<PathBuf> {
    let building = root.join("text.rebuild.tmp");
    let fresh = root.join("text.rebuild");
    for leftover in [&building, &fresh] {
        if leftover.exists() {
            fs::remove_dir_all(leftover).map_err(|e| Error::io(leftover, e))?;
        }
    }
    fs::create_dir_all(&building).map_err(|e| Error::io(&building, e))?;
    {
        let index = Index::create_in_dir(&building, IndexFields::schema())?;
        register_tokenizers(&index);
        let mut writer: tantivy::IndexWriter =
            index.writer_with_num_threads(1, REBUILD_HEAP_BYTES)?;
        for (record, vector) in records.into_values() {
            let hash = record_hash(&record);
            let vector = VectorField {
                text_hash: text_hash(&embedding_text(&record)),
                embedding: vector,
                // Salvaged from stored documents, whose draft flag lives in
                // the damaged index: counted as full.
                draft: false,
            };
            writer.add_document(fields.document(&record, hash, &vector)?)?;
        }
        writer.commit()?;
        writer.wait_merging_threads()?;
    }
    crate::files::sync_dir(&building)?;
    fs::rename(&building, &fresh).map_err(|e| Error::io(&building, e))?;
    crate::files::sync_dir(root)?;
    let text = root.join("text");
    let damaged = unused_damaged_name(root);
    if text.exists() {
        fs::rename(&text, &damaged).map_err(|e| Error::io(&text, e))?;
    }
    fs::rename(&fresh, &text).map_err(|e| Error::io(&fresh, e))?;
    crate::files::sync_dir(root)?;
    Ok(damaged)
}

/// `text.damaged-<time>`, with a counter when two repairs fall in the same
/// second: renaming onto an existing (non-empty) folder fails, and a repair
/// cut short and then re-run within a second used to stop there.
fn unused_damaged_name(root: &Path) -> PathBuf {
    let stem = format!("text.damaged-{}", crate::now_rfc3339().replace(':', ""));
    let mut candidate = root.join(&stem);
    let mut n = 1;
    while candidate.exists() {
        candidate = root.join(format!("{stem}-{n}"));
        n += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a repair re-run within the same second as the one before it
    /// tried to rename `text/` onto the earlier `text.damaged-<time>/` and failed
    /// with "Directory not empty".
    #[test]
    fn damaged_names_never_collide_with_an_earlier_repair() {
        let root = tempfile::tempdir().unwrap();
        let mut seen = Vec::new();
        for _ in 0..3 {
            let name = unused_damaged_name(root.path());
            assert!(!name.exists(), "{}", name.display());
            fs::create_dir_all(name.join("segment")).unwrap();
            assert!(!seen.contains(&name));
            seen.push(name);
        }
    }
}
