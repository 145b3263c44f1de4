//! What the tier operations need from L2: read records with their version hash
//! and embedding, and remove or put back records under a writer lock the caller
//! holds across several steps (see `crate::tiers::ops` for the order of
//! operations).

use std::collections::HashSet;
use std::time::Duration;

use tantivy::schema::Value;
use tantivy::{Searcher, TantivyDocument, Term};

use super::lock::WriterLock;
use super::{IdLookup, Store};
use crate::error::Result;
use crate::index::has_vector;
use crate::index::{record_hash, VectorField};
use crate::record::Record;

/// An L2 record with what archiving keeps beside it.
#[derive(Debug, Clone)]
pub struct L2Record {
    /// The record as stored.
    pub record: Record,
    /// Its version hash ([`crate::index::record_hash`]).
    pub hash: u64,
    /// Its embedding and the hash of the text it was made from.
    pub vector: VectorField,
}

impl Store {
    /// Takes the writer lock for a multi-step tier operation.
    pub fn lock_writer(&self, timeout: Duration) -> Result<WriterLock> {
        WriterLock::acquire(&self.root.join("LOCK"), timeout)
    }

    /// Every live L2 record that `keep` accepts, with hash and embedding.
    /// `keep` sees the record before its embedding is decoded.
    pub fn l2_records(
        &self,
        searcher: &Searcher,
        keep: impl FnMut(&Record) -> bool,
    ) -> Result<Vec<L2Record>> {
        let mut out = Vec::new();
        self.for_each_l2_record(searcher, keep, |l2| {
            out.push(l2);
            Ok(())
        })?;
        Ok(out)
    }

    /// Calls `each` with every live L2 record that `keep` accepts, one at a
    /// time (memory stays flat however large the store), with hash and
    /// embedding. `keep` sees the record before its embedding is decoded.
    pub fn for_each_l2_record(
        &self,
        searcher: &Searcher,
        mut keep: impl FnMut(&Record) -> bool,
        mut each: impl FnMut(L2Record) -> Result<()>,
    ) -> Result<()> {
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let hashes = segment.fast_fields().u64("hash")?;
            let text_hashes = segment.fast_fields().u64("text_hash")?;
            let kinds = segment.fast_fields().u64("has_vector")?;
            for doc in segment.doc_ids_alive() {
                let stored: TantivyDocument =
                    searcher.doc(tantivy::DocAddress::new(ord as u32, doc))?;
                let record = self.fields.record(&stored)?;
                if !keep(&record) {
                    continue;
                }
                let embedding = stored
                    .get_first(self.fields.embedding)
                    .and_then(|v| v.as_bytes())
                    .and_then(|b| crate::index::embedding_from_bytes(b, crate::embed::DIM));
                each(L2Record {
                    record,
                    hash: hashes.first(doc).unwrap_or(0),
                    vector: VectorField {
                        text_hash: text_hashes.first(doc).unwrap_or(0),
                        embedding,
                        draft: kinds.first(doc) == Some(has_vector::DRAFT),
                    },
                })?;
            }
        }
        Ok(())
    }

    /// The live L2 records with these ids (unknown ids are skipped).
    pub fn l2_records_by_id<'a>(
        &self,
        searcher: &Searcher,
        ids: impl IntoIterator<Item = &'a String>,
    ) -> Result<Vec<L2Record>> {
        let lookup = IdLookup::new(searcher, &self.fields)?;
        let mut out = Vec::new();
        for id in ids {
            let Some(address) = lookup.find(id)? else {
                continue;
            };
            let segment = searcher.segment_reader(address.segment_ord);
            let stored: TantivyDocument = searcher.doc(address)?;
            out.push(L2Record {
                record: self.fields.record(&stored)?,
                hash: segment
                    .fast_fields()
                    .u64("hash")?
                    .first(address.doc_id)
                    .unwrap_or(0),
                vector: VectorField {
                    text_hash: segment
                        .fast_fields()
                        .u64("text_hash")?
                        .first(address.doc_id)
                        .unwrap_or(0),
                    embedding: stored
                        .get_first(self.fields.embedding)
                        .and_then(|v| v.as_bytes())
                        .and_then(|b| crate::index::embedding_from_bytes(b, crate::embed::DIM)),
                    draft: segment
                        .fast_fields()
                        .u64("has_vector")?
                        .first(address.doc_id)
                        == Some(has_vector::DRAFT),
                },
            });
        }
        Ok(out)
    }

    /// Which of `ids` are live in L2.
    pub fn live_ids<'a>(
        &self,
        searcher: &Searcher,
        ids: impl IntoIterator<Item = &'a String>,
    ) -> Result<HashSet<String>> {
        let lookup = IdLookup::new(searcher, &self.fields)?;
        let mut live = HashSet::new();
        for id in ids {
            if lookup.find(id)?.is_some() {
                live.insert(id.clone());
            }
        }
        Ok(live)
    }

    /// Deletes records from L2 in one commit; the caller holds the writer lock.
    pub fn remove_locked(&self, _lock: &WriterLock, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let writer = super::clean_writer(&self.index, 1, super::WRITER_HEAP_BYTES)?;
        for id in ids {
            writer.delete_term(Term::from_field_text(self.fields.id, id));
        }
        self.commit(writer, true)
    }

    /// Rewrites the segments that hold deleted records without them and
    /// removes the old files, so a deleted record's text leaves the disk
    /// (`forget`); then brings the vector files up to date. Returns how many
    /// segments were rewritten. The caller holds the writer lock.
    pub fn purge_deleted_locked(&self, _lock: &WriterLock) -> Result<usize> {
        let rewritten = crate::index::lookup::purge_deleted(&self.index, super::WRITER_HEAP_BYTES)?;
        let searcher = self.reader()?.searcher();
        self.sync_vectors(&searcher)?;
        Ok(rewritten)
    }

    /// Writes records into L2 (replacing any with the same id) in one commit,
    /// each with the vector given; the caller holds the writer lock.
    pub fn put_locked(&self, _lock: &WriterLock, records: &[(Record, VectorField)]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let writer = super::clean_writer(&self.index, 1, super::WRITER_HEAP_BYTES)?;
        for (record, vector) in records {
            writer.delete_term(Term::from_field_text(self.fields.id, &record.id));
            writer.add_document(self.fields.document(record, record_hash(record), vector)?)?;
        }
        self.commit(writer, true)
    }

    /// Vectors for records (reused by text hash, else computed by `embedder`, else
    /// none), as `add` computes them.
    pub fn vectors_for_records(
        &self,
        records: &[Record],
        embedder: Option<&mut dyn crate::embed::Embedder>,
    ) -> Result<Vec<VectorField>> {
        let searcher = self.reader()?.searcher();
        let with_hashes: Vec<(Record, u64)> = records
            .iter()
            .map(|r| (r.clone(), record_hash(r)))
            .collect();
        self.vectors_for(
            &searcher,
            &with_hashes,
            Default::default(),
            embedder,
            &mut super::AddReport::default(),
        )
    }
}
