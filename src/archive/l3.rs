//! The L3 text index: how archived records are found without decompressing them.
//!
//! A tantivy index in `archive/index/` with the same schema as L2, so the same
//! query (terms, field boosts, filters) runs on both tiers and BM25 scores are
//! computed with shared statistics (see `crate::search::tiers`). It stores no record
//! text: the stored `record` field holds only the record's frame location
//! (`2026-01@123456`), so the archive files stay the one copy of the content.
//! It is derived data: [`reindex_file`] rebuilds a file's documents from the file.

use std::path::Path;

use tantivy::schema::Value;
use tantivy::{
    DateTime, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term,
};

use super::{Archive, Entry, Location};
use crate::error::{Error, Result};
use crate::index::{register_tokenizers, IndexFields};

/// Memory for buffering L3 documents before a segment is flushed.
const WRITER_HEAP_BYTES: usize = 96 * 1024 * 1024;

/// The opened L3 index.
pub struct L3Index {
    index: Index,
    fields: IndexFields,
    /// The store's folder (`<store>/archive/index` is two levels down).
    store_root: std::path::PathBuf,
}

impl L3Index {
    /// Opens the index, creating it when the archive has none yet.
    pub fn open_or_create(archive: &Archive) -> Result<L3Index> {
        let dir = archive.dir().join("index");
        if !dir.join("meta.json").exists() {
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            Index::create_in_dir(&dir, IndexFields::schema())?;
            crate::files::sync_dir(archive.dir())?;
        }
        Self::open_dir(&dir)
    }

    /// Opens the index if the archive has one.
    pub fn open_existing(archive: &Archive) -> Result<Option<L3Index>> {
        let dir = archive.dir().join("index");
        if !dir.join("meta.json").exists() {
            return Ok(None);
        }
        Self::open_dir(&dir).map(Some)
    }

    fn open_dir(dir: &Path) -> Result<L3Index> {
        let store_root = dir
            .parent()
            .and_then(Path::parent)
            .unwrap_or(dir)
            .to_path_buf();
        let mut index =
            crate::index::damage::guarded(&store_root, || Ok(Index::open_in_dir(dir)?))?;
        crate::index::search_in_parallel(&mut index)?;
        register_tokenizers(&index);
        let fields = IndexFields::from_schema(&index.schema())?;
        Ok(L3Index {
            index,
            fields,
            store_root,
        })
    }

    /// The L3 index's fields.
    pub fn fields(&self) -> &IndexFields {
        &self.fields
    }

    /// A reader that reloads only when asked (manual reload policy). A
    /// damaged segment is an error naming it (`crate::index::damage`).
    pub fn reader(&self) -> Result<IndexReader> {
        crate::index::damage::guarded(&self.store_root, || {
            Ok(self
                .index
                .reader_builder()
                .reload_policy(ReloadPolicy::Manual)
                .try_into()?)
        })
    }

    /// A writer; the caller holds the store's writer lock. Like L2's writer it
    /// first collects files left by a writer killed before its commit (a stale
    /// `<segment>.<opstamp>.del` would make the next delete fail).
    pub fn writer(&self) -> Result<IndexWriter> {
        crate::index::lookup::clean_writer(&self.index, 1, WRITER_HEAP_BYTES)
    }

    /// The searchable document of an archived record at `location`.
    pub fn document(&self, entry: &Entry, location: &Location) -> TantivyDocument {
        let f = &self.fields;
        let record = &entry.record;
        let fields = &record.fields;
        let mut doc = TantivyDocument::default();
        doc.add_text(f.id, &record.id);
        doc.add_text(f.kind, record.kind.as_str());
        doc.add_text(f.namespace, &record.namespace);
        if let Some(session) = &fields.session_id {
            doc.add_text(f.session, session);
        }
        doc.add_text(f.tier, "l3");
        let project = fields.project.as_deref();
        doc.add_text(f.project, project.unwrap_or(crate::index::NO_PROJECT));
        let origin = fields.origin.as_deref();
        doc.add_text(f.origin, origin.unwrap_or(crate::index::LOCAL_ORIGIN));
        if let Some(turn) = fields.end_turn.or(fields.start_turn) {
            doc.add_u64(f.turn, turn);
        }
        doc.add_text(f.title, &fields.title);
        doc.add_text(f.content, &fields.content);
        for (field, values) in [
            (f.decisions, &fields.decisions),
            (f.files, &fields.files),
            (f.commands, &fields.commands),
            (f.errors, &fields.errors),
        ] {
            for value in values {
                doc.add_text(field, value);
            }
        }
        if let Some(secs) = fields.timestamp {
            doc.add_date(f.timestamp, DateTime::from_timestamp_secs(secs));
        }
        doc.add_u64(f.hash, entry.hash);
        doc.add_u64(f.text_hash, entry.text_hash);
        doc.add_u64(f.has_vector, u64::from(entry.embedding.is_some()));
        doc.add_text(f.record, location.encode());
        doc
    }

    /// Rewrites the L3 index's segments that hold deleted documents without
    /// them and removes the old files (their terms leave the disk). The
    /// caller holds the store's writer lock.
    pub fn purge_deleted(&self) -> Result<usize> {
        crate::index::lookup::purge_deleted(&self.index, WRITER_HEAP_BYTES)
    }

    /// Removes documents by id (uncommitted).
    pub fn delete_ids<'a>(&self, writer: &IndexWriter, ids: impl IntoIterator<Item = &'a String>) {
        for id in ids {
            writer.delete_term(Term::from_field_text(self.fields.id, id));
        }
    }
}

/// Every record the L3 index knows, with where it says the record is: what
/// `verify` and `repair` compare with what the archive files hold (a
/// damaged file's records are named by it). Read from the stored fields.
pub fn indexed(searcher: &Searcher, fields: &IndexFields) -> Result<Vec<(String, Location)>> {
    let mut found = Vec::new();
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        for doc in segment.doc_ids_alive() {
            let stored: TantivyDocument =
                searcher.doc(tantivy::DocAddress::new(ord as u32, doc))?;
            let id = stored.get_first(fields.id).and_then(|v| v.as_str());
            let at = stored
                .get_first(fields.record)
                .and_then(|v| v.as_str())
                .and_then(Location::decode);
            if let (Some(id), Some(at)) = (id, at) {
                found.push((id.to_string(), at));
            }
        }
    }
    Ok(found)
}

/// Where the archived record with this id is, if the L3 index knows it.
pub fn locate(searcher: &Searcher, fields: &IndexFields, id: &str) -> Result<Option<Location>> {
    let lookup = crate::index::lookup::IdLookup::new(searcher, fields)?;
    let Some(address) = lookup.find(id)? else {
        return Ok(None);
    };
    location_of(searcher, fields, address)
}

/// The frame location stored with an L3 document.
pub fn location_of(
    searcher: &Searcher,
    fields: &IndexFields,
    address: tantivy::DocAddress,
) -> Result<Option<Location>> {
    let doc: TantivyDocument = searcher.doc(address)?;
    Ok(doc
        .get_first(fields.record)
        .and_then(|v| v.as_str())
        .and_then(Location::decode))
}

/// Makes the L3 index agree with one archive file: removes the documents of
/// everything the file holds now and adds its current entries (the last copy of
/// each id) at their current offsets. Uncommitted; the caller deletes the ids
/// the file held before, once, before reindexing its files.
pub fn reindex_file(
    archive: &Archive,
    l3: &L3Index,
    writer: &IndexWriter,
    name: &str,
) -> Result<usize> {
    let current = archive.read_file(name)?;
    l3.delete_ids(writer, current.entries.iter().map(|(_, e)| &e.record.id));
    let mut last = std::collections::HashMap::new();
    for (i, (_, entry)) in current.entries.iter().enumerate() {
        last.insert(entry.record.id.as_str(), i);
    }
    let mut added = 0;
    for (i, (offset, entry)) in current.entries.iter().enumerate() {
        if last.get(entry.record.id.as_str()) != Some(&i) {
            continue;
        }
        let location = Location {
            file: name.to_string(),
            offset: *offset,
        };
        writer.add_document(l3.document(entry, &location))?;
        added += 1;
    }
    Ok(added)
}
