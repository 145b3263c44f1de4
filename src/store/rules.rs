//! Vectors to make again: drafts, and vectors of texts older rules chose; the
//! background pass that replaces both with the full model's.
//!
//! Two kinds of vector are fair stand-ins that search uses meanwhile, but not
//! what a store ends up holding:
//!
//! - **Drafts** (`crate::index::has_vector::DRAFT`): a large backlog is first
//!   embedded by the int8 copy of the model, about twice as fast (see
//!   `crate::upkeep`), so that every record is searchable by meaning soon.
//!   Restored archive records whose vector is not of their current text are
//!   drafts too.
//! - **Outdated**: a vector is the embedding of a text chosen from its record.
//!   When the rules that choose it change (`crate::embed::text::RECIPE`),
//!   records whose text changed carry a vector of the old text. The store names
//!   its rules in the `embedding-rules` file (written at creation; a store older
//!   than the file is at version 1).
//!
//! [`Store::reembed_outdated`], run by the upkeep worker, embeds both again
//! with the full model a batch per commit, then writes the current rules
//! version. Records whose vectors are current stay untouched.

use std::fs;
use std::path::Path;
use std::time::Duration;

use tantivy::query::TermQuery;
use tantivy::schema::IndexRecordOption;
use tantivy::{TantivyDocument, Term};

use super::lock::WriterLock;
use super::{IdLookup, Store};
use crate::embed::text::{embedding_text, text_hash};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::index::has_vector;

/// The file naming the embedding-text rules of a store's vectors.
const RULES_FILE: &str = "embedding-rules";

/// Writes the rules file atomically and durably.
pub(super) fn write(root: &Path, rules: u32) -> Result<()> {
    super::config::write_durably(&root.join(RULES_FILE), format!("{rules}\n").as_bytes())
}

impl Store {
    /// The rules (`crate::embed::text::RECIPE`) the store's vectors were made
    /// under: the `embedding-rules` file, written when a store is created and
    /// when [`Store::reembed_outdated`] finishes; a store older than the file
    /// has version 1.
    pub fn embedding_rules(&self) -> u32 {
        fs::read_to_string(self.root.join(RULES_FILE))
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(1)
    }

    /// How many live records carry a draft vector (an index count, no scan).
    pub fn records_with_draft_vector(&self) -> Result<u64> {
        let searcher = self.reader()?.searcher();
        let drafts = TermQuery::new(
            Term::from_field_u64(self.fields.has_vector, has_vector::DRAFT),
            IndexRecordOption::Basic,
        );
        Ok(searcher.search(&drafts, &tantivy::collector::Count)? as u64)
    }

    /// Whether vectors are waiting to be made again by the full model: drafts,
    /// or vectors made under older embedding-text rules (one small file read
    /// and an index count).
    pub fn vectors_outdated(&self) -> Result<bool> {
        Ok(self.embedding_rules() < crate::embed::text::RECIPE
            || self.records_with_draft_vector()? > 0)
    }

    /// Ids of live records whose vector the full model should make again:
    /// drafts, and (when the store's rules are older than the current ones)
    /// vectors made from a text other than the one the current rules embed
    /// (`crate::embed::text::embedding_text`). With old rules this reads every
    /// stored record: for the upkeep, not for searches.
    pub fn records_with_outdated_vectors(&self) -> Result<Vec<String>> {
        let rules_outdated = self.embedding_rules() < crate::embed::text::RECIPE;
        let searcher = self.reader()?.searcher();
        let mut outdated = Vec::new();
        for segment in searcher.segment_readers() {
            let kinds = segment.fast_fields().u64("has_vector")?;
            let hashes = segment.fast_fields().u64("text_hash")?;
            let store = segment
                .get_store_reader(64)
                .map_err(|e| Error::io(self.root.join("text"), e))?;
            for doc in segment.doc_ids_alive() {
                let kind = kinds.first(doc);
                let full = kind == Some(has_vector::FULL);
                if !(kind == Some(has_vector::DRAFT) || (rules_outdated && full)) {
                    continue;
                }
                let stored: TantivyDocument = store.get(doc)?;
                let record = self.fields.record(&stored)?;
                if !full || hashes.first(doc) != Some(text_hash(&embedding_text(&record))) {
                    outdated.push(record.id);
                }
            }
        }
        Ok(outdated)
    }

    /// Embeds again with `embedder` (the full model, never a draft one),
    /// `batch` records per commit, the records of
    /// [`Store::records_with_outdated_vectors`], then records that the store
    /// is current. Until a record is done it keeps its old vector, so search
    /// never loses it; a run that is stopped leaves the rules file as it was,
    /// and the next run finds what is left. Returns how many records got a new
    /// vector.
    pub fn reembed_outdated(
        &self,
        embedder: &mut dyn Embedder,
        batch: usize,
        lock_timeout: Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<usize> {
        if embedder.is_draft() {
            return Err(Error::Usage(
                "vectors are made again by the full model, not a draft one".into(),
            ));
        }
        let outdated = self.records_with_outdated_vectors()?;
        let total = outdated.len();
        progress(0, total);
        let mut done = 0;
        for ids in outdated.chunks(batch.max(1)) {
            // Read each batch when its turn comes: holding every record's text
            // at once would cost as much memory as the store's texts.
            let searcher = self.reader()?.searcher();
            let lookup = IdLookup::new(&searcher, &self.fields)?;
            let mut records = Vec::with_capacity(ids.len());
            for id in ids {
                // A record deleted meanwhile needs no vector.
                if let Some(address) = lookup.find(id)? {
                    let doc: TantivyDocument = searcher.doc(address)?;
                    records.push(self.fields.record(&doc)?);
                }
            }
            drop(lookup);
            drop(searcher);
            self.rewrite_with_vectors(records, embedder, lock_timeout)?;
            done += ids.len();
            progress(done, total);
        }
        if done > 0 {
            self.index_vectors(lock_timeout)?;
        }
        let _lock = WriterLock::acquire(&self.root.join("LOCK"), lock_timeout)?;
        write(&self.root, crate::embed::text::RECIPE)?;
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::{HashEmbedder, DIM};
    use crate::error::Origin;
    use crate::index::{record_hash, VectorField};
    use crate::record::{parse_record, ParseOptions, Record};
    use crate::store::get_record;
    use tantivy::Term;

    fn record(value: serde_json::Value) -> Record {
        parse_record(value, &Origin::file("test"), &ParseOptions::default()).expect("record")
    }

    /// Gives `id` the vector of another text, as rules of an older version did.
    fn make_outdated(store: &Store, id: &str) {
        let searcher = store.reader().expect("reader").searcher();
        let record = get_record(&searcher, &store.fields, id)
            .expect("get")
            .expect("record");
        let (_lock, writer) = store.writer(Duration::from_secs(5)).expect("writer");
        let old = HashEmbedder::new(DIM)
            .embed(&["the whole text, as rules 1 embedded it"])
            .expect("embed");
        let vector = VectorField {
            text_hash: 42,
            embedding: old.into_iter().next(),
            draft: false,
        };
        writer.delete_term(Term::from_field_text(store.fields.id, id));
        writer
            .add_document(
                store
                    .fields
                    .document(&record, record_hash(&record), &vector)
                    .expect("doc"),
            )
            .expect("add");
        store.commit(writer, true).expect("commit");
        fs::remove_file(store.root.join(RULES_FILE)).expect("rules file");
    }

    #[test]
    fn outdated_vectors_are_kept_until_made_again_and_the_rest_are_untouched() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = Store::init(&dir.path().join("s")).expect("init");
        assert_eq!(store.embedding_rules(), crate::embed::text::RECIPE);
        let output = format!("[tool_result] {}", "listing line\n".repeat(100));
        let records = vec![
            record(serde_json::json!({"id": "tool", "role": "user", "text": output})),
            record(
                serde_json::json!({"id": "prose", "role": "assistant", "text": "the cache was stale"}),
            ),
        ];
        let mut embedder = HashEmbedder::new(DIM);
        store
            .add(records, Some(&mut embedder), Duration::from_secs(5))
            .expect("add");
        assert!(store
            .records_with_outdated_vectors()
            .expect("scan")
            .is_empty());

        make_outdated(&store, "tool");
        assert_eq!(store.embedding_rules(), 1);
        assert!(store.vectors_outdated().expect("outdated"));
        assert_eq!(
            store.records_with_outdated_vectors().expect("scan"),
            ["tool"]
        );
        // The old vector still counts: search keeps using it meanwhile.
        assert_eq!(store.records_without_vector().expect("count"), 0);

        let mut seen = Vec::new();
        let done = store
            .reembed_outdated(&mut embedder, 1, Duration::from_secs(5), &mut |d, t| {
                seen.push((d, t))
            })
            .expect("re-embed");
        assert_eq!(done, 1);
        assert_eq!(seen.last(), Some(&(1, 1)));
        assert!(!store.vectors_outdated().expect("outdated"));
        assert!(store
            .records_with_outdated_vectors()
            .expect("scan")
            .is_empty());
        // Made again from the current text, and verifiable as such.
        let searcher = store.reader().expect("reader").searcher();
        let tool = get_record(&searcher, &store.fields, "tool")
            .expect("get")
            .expect("tool");
        let expected = text_hash(&embedding_text(&tool));
        let term = Term::from_field_u64(store.fields.text_hash, expected);
        let hits = searcher
            .search(
                &tantivy::query::TermQuery::new(term, tantivy::schema::IndexRecordOption::Basic),
                &tantivy::collector::Count,
            )
            .expect("search");
        assert_eq!(hits, 1);
        // A second pass finds nothing and needs no model call.
        let again = store
            .reembed_outdated(&mut embedder, 1, Duration::from_secs(5), &mut |_, _| {})
            .expect("again");
        assert_eq!(again, 0);
    }

    fn notes(n: usize) -> Vec<Record> {
        (0..n)
            .map(|i| {
                record(serde_json::json!({
                    "id": format!("n{i}"),
                    "text": format!("the sync worker {i} retries with backoff"),
                }))
            })
            .collect()
    }

    fn kind_of(store: &Store, id: &str) -> Option<u64> {
        let searcher = store.reader().expect("reader").searcher();
        let lookup = IdLookup::new(&searcher, &store.fields).expect("lookup");
        let address = lookup.find(id).expect("find")?;
        searcher
            .segment_reader(address.segment_ord)
            .fast_fields()
            .u64("has_vector")
            .expect("column")
            .first(address.doc_id)
    }

    #[test]
    fn drafts_are_searched_counted_and_made_again_by_the_full_model() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = Store::init(&dir.path().join("s")).expect("init");
        let wait = Duration::from_secs(5);
        store.add(notes(5), None, wait).expect("add");
        let mut draft = HashEmbedder::draft(DIM);
        let drafted = store
            .embed_missing(&mut draft, 2, wait, &mut |_, _| {})
            .expect("draft");
        assert_eq!(drafted, 5);
        assert_eq!(kind_of(&store, "n0"), Some(has_vector::DRAFT));
        assert_eq!(store.records_without_vector().expect("count"), 0);
        assert_eq!(store.records_with_draft_vector().expect("count"), 5);
        let coverage =
            crate::vectors::coverage(&store.reader().expect("reader").searcher()).expect("cov");
        assert_eq!((coverage.with_vector, coverage.drafts), (5, 5));
        // The rules are current: drafts alone make the vectors outdated.
        assert_eq!(store.embedding_rules(), crate::embed::text::RECIPE);
        assert!(store.vectors_outdated().expect("outdated"));
        assert_eq!(
            store.records_with_outdated_vectors().expect("scan").len(),
            5
        );

        // A draft model never replaces drafts.
        let refused = store.reembed_outdated(&mut draft, 2, wait, &mut |_, _| {});
        assert!(matches!(refused, Err(Error::Usage(_))), "{refused:?}");
        // A record written meanwhile with the text of a draft gets the full
        // model's vector, not a copy of the draft.
        let mut full = HashEmbedder::new(DIM);
        let copy = record(serde_json::json!({
            "id": "copy", "text": "the sync worker 0 retries with backoff",
        }));
        store.add(vec![copy], Some(&mut full), wait).expect("add");
        assert_eq!(kind_of(&store, "copy"), Some(has_vector::FULL));

        let done = store
            .reembed_outdated(&mut full, 2, wait, &mut |_, _| {})
            .expect("re-embed");
        assert_eq!(done, 5);
        assert_eq!(store.records_with_draft_vector().expect("count"), 0);
        assert!(!store.vectors_outdated().expect("outdated"));
        for i in 0..5 {
            assert_eq!(kind_of(&store, &format!("n{i}")), Some(has_vector::FULL));
        }
    }

    #[test]
    fn a_store_without_the_file_is_at_rules_one_and_a_garbled_file_reads_as_one() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = Store::init(&dir.path().join("s")).expect("init");
        fs::remove_file(store.root.join(RULES_FILE)).expect("remove");
        assert_eq!(store.embedding_rules(), 1);
        fs::write(store.root.join(RULES_FILE), "not a number").expect("write");
        assert_eq!(store.embedding_rules(), 1);
        write(&store.root, 7).expect("write");
        assert_eq!(store.embedding_rules(), 7);
    }
}
