//! The vectors of records: reused from any record with the same embedded text,
//! computed by the embedder, or left for `embed` to fill in later; and the
//! vector files and graphs kept in step with the text index's segments.

use std::collections::HashMap;
use std::time::Duration;

use tantivy::collector::TopDocs;
use tantivy::query::TermQuery;
use tantivy::schema::IndexRecordOption;
use tantivy::{Searcher, TantivyDocument, Term};

use super::lock::WriterLock;
use super::{first_live_doc, AddReport, IdLookup, Store};
use crate::embed::text::{embedding_text, text_hash};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::index::{record_hash, VectorField};
use crate::record::Record;

impl Store {
    /// The embedding of each record: reused by text hash, computed, or none.
    pub(super) fn vectors_for(
        &self,
        searcher: &Searcher,
        records: &[(Record, u64)],
        known: HashMap<u64, Vec<f32>>,
        embedder: Option<&mut dyn Embedder>,
        report: &mut AddReport,
    ) -> Result<Vec<VectorField>> {
        let texts: Vec<String> = records.iter().map(|(r, _)| embedding_text(r)).collect();
        let hashes: Vec<u64> = texts.iter().map(|t| text_hash(t)).collect();
        // A draft embedder may reuse a draft; the full model only a full vector.
        let accept_drafts = embedder.as_ref().is_some_and(|e| e.is_draft());
        let mut found: HashMap<u64, (Vec<f32>, bool)> = known
            .into_iter()
            .filter(|(_, v)| v.len() == crate::embed::DIM)
            .map(|(h, v)| (h, (v, false)))
            .collect();
        for &hash in &hashes {
            if let std::collections::hash_map::Entry::Vacant(slot) = found.entry(hash) {
                if let Some(stored) = self.stored_vector(searcher, hash, accept_drafts)? {
                    slot.insert(stored);
                    report.vectors_reused += 1;
                }
            }
        }
        if let Some(embedder) = embedder {
            let draft = embedder.is_draft();
            let mut todo: Vec<(u64, &str)> = Vec::new();
            for (hash, text) in hashes.iter().zip(&texts) {
                if !found.contains_key(hash) && !todo.iter().any(|(h, _)| h == hash) {
                    todo.push((*hash, text.as_str()));
                }
            }
            for chunk in todo.chunks(crate::embed::GROUP) {
                let batch: Vec<&str> = chunk.iter().map(|(_, t)| *t).collect();
                let vectors = embedder
                    .embed(&batch)
                    .map_err(|e| Error::Usage(e.to_string()))?;
                for ((hash, _), vector) in chunk.iter().zip(vectors) {
                    found.insert(*hash, (vector, draft));
                }
                report.embedded += chunk.len();
            }
        }
        let fields: Vec<VectorField> = hashes
            .iter()
            .map(|h| {
                let stored = found.get(h);
                VectorField {
                    text_hash: *h,
                    embedding: stored.map(|(v, _)| v.clone()),
                    draft: stored.is_some_and(|(_, draft)| *draft),
                }
            })
            .collect();
        report.without_vector = fields.iter().filter(|f| f.embedding.is_none()).count();
        Ok(fields)
    }

    /// The stored vector of any live record whose embedded text has this hash,
    /// and whether it is a draft; drafts only when `accept_drafts`.
    fn stored_vector(
        &self,
        searcher: &Searcher,
        hash: u64,
        accept_drafts: bool,
    ) -> Result<Option<(Vec<f32>, bool)>> {
        use crate::index::has_vector::{DRAFT, FULL};
        let term = Term::from_field_u64(self.fields.text_hash, hash);
        let usable = |segment: &tantivy::SegmentReader, doc| {
            let kind = segment.fast_fields().u64("has_vector")?.first(doc);
            Ok(kind == Some(FULL) || (accept_drafts && kind == Some(DRAFT)))
        };
        let Some(address) = first_live_doc(searcher, &term, usable)? else {
            return Ok(None);
        };
        let draft = searcher
            .segment_reader(address.segment_ord)
            .fast_fields()
            .u64("has_vector")?
            .first(address.doc_id)
            == Some(DRAFT);
        let stored: TantivyDocument = searcher.doc(address)?;
        use tantivy::schema::Value;
        Ok(stored
            .get_first(self.fields.embedding)
            .and_then(|v| v.as_bytes())
            .and_then(|b| crate::index::embedding_from_bytes(b, crate::embed::DIM))
            .map(|v| (v, draft)))
    }

    /// How many live records wait for a vector, counted through the index's
    /// `has_vector` term (no scan of the records).
    pub fn records_without_vector(&self) -> Result<u64> {
        let searcher = self.reader()?.searcher();
        let missing = TermQuery::new(
            Term::from_field_u64(self.fields.has_vector, 0),
            IndexRecordOption::Basic,
        );
        Ok(searcher.search(&missing, &tantivy::collector::Count)? as u64)
    }

    /// Computes vectors for records stored without one, `batch` records per commit.
    /// Returns how many records got a vector.
    pub fn embed_missing(
        &self,
        embedder: &mut dyn Embedder,
        batch: usize,
        lock_timeout: Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<usize> {
        let mut done = 0;
        loop {
            let searcher = self.reader()?.searcher();
            let waiting = crate::vectors::coverage(&searcher)?.without_vector as usize;
            progress(done, done + waiting);
            if waiting == 0 {
                drop(searcher);
                self.index_vectors(lock_timeout)?;
                return Ok(done);
            }
            let missing = TermQuery::new(
                Term::from_field_u64(self.fields.has_vector, 0),
                IndexRecordOption::Basic,
            );
            let top = searcher.search(
                &missing,
                &TopDocs::with_limit(batch.max(1)).order_by_score(),
            )?;
            let mut records = Vec::with_capacity(top.len());
            for (_, address) in top {
                let doc: TantivyDocument = searcher.doc(address)?;
                records.push(self.fields.record(&doc)?);
            }
            drop(searcher);
            let count = records.len();
            self.rewrite_with_vectors(records, embedder, lock_timeout)?;
            done += count;
        }
    }

    /// Brings the vector files and graphs up to date with the text index: builds
    /// what is missing or damaged (from the stored embeddings, never by
    /// re-embedding) and removes what belongs to no segment.
    pub fn index_vectors(&self, lock_timeout: Duration) -> Result<()> {
        let _lock = WriterLock::acquire(&self.root.join("LOCK"), lock_timeout)?;
        let searcher = self.reader()?.searcher();
        self.sync_vectors(&searcher)
    }

    /// Vector files and graphs for the segments of `searcher`; see [`crate::vectors::sync`].
    pub(super) fn sync_vectors(&self, searcher: &Searcher) -> Result<()> {
        crate::vectors::sync(
            &self.root,
            searcher,
            &self.fields,
            crate::embed::DIM,
            self.config.embedding.graph_min_rows(),
        )
    }

    /// Writes records again, unchanged but for their vectors.
    pub(super) fn rewrite_with_vectors(
        &self,
        records: Vec<Record>,
        embedder: &mut dyn Embedder,
        lock_timeout: Duration,
    ) -> Result<()> {
        let snapshot = self.reader()?.searcher();
        let with_hashes: Vec<(Record, u64)> = records
            .into_iter()
            .map(|r| {
                let h = record_hash(&r);
                (r, h)
            })
            .collect();
        let vectors = self.vectors_for(
            &snapshot,
            &with_hashes,
            HashMap::new(),
            Some(embedder),
            &mut AddReport::default(),
        )?;
        drop(snapshot);
        let (_lock, writer) = self.writer(lock_timeout)?;
        let searcher = self.reader()?.searcher();
        let lookup = IdLookup::new(&searcher, &self.fields)?;
        let mut changed = false;
        for ((record, hash), vector) in with_hashes.iter().zip(&vectors) {
            // Skip records changed or deleted by another writer meanwhile.
            if lookup.hash_of(&record.id)? != Some(*hash) || vector.embedding.is_none() {
                continue;
            }
            writer.delete_term(Term::from_field_text(self.fields.id, &record.id));
            writer.add_document(self.fields.document(record, *hash, vector)?)?;
            changed = true;
        }
        self.commit(writer, changed)
    }
}
