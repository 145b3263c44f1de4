//! Finding a record's document by id, and opening a writer that is safe
//! after a crash: what every index writer and reader of this crate needs.

use tantivy::schema::IndexRecordOption;
use tantivy::{Index, IndexWriter, Searcher, Term};

use super::IndexFields;
use crate::error::{Error, Result};

/// A writer on `index`, after removing files a killed writer left behind.
///
/// A writer killed between writing a segment's deletes file and committing
/// leaves `<segment>.<opstamp>.del`; the next writer starts again from the
/// committed opstamp, would write the same file name, and tantivy refuses to
/// overwrite it (`FileAlreadyExists`), so every later commit deleting from that
/// segment fails. Collecting garbage first removes such leftovers (files no
/// commit refers to). The caller holds the writer lock, so no other writer's
/// files are in flight.
pub(crate) fn clean_writer(
    index: &Index,
    threads: usize,
    heap_bytes: usize,
) -> Result<IndexWriter> {
    let writer = index.writer_with_num_threads(threads, heap_bytes)?;
    writer.garbage_collect_files().wait()?;
    Ok(writer)
}

/// Rewrites every segment of `index` that holds deleted documents without
/// them, then removes the files no commit uses any more: until then a
/// deleted record's text and terms stay in its segment's files on disk.
/// Returns how many segments were rewritten. The caller holds the writer
/// lock.
pub(crate) fn purge_deleted(index: &Index, heap_bytes: usize) -> Result<usize> {
    let mut writer = clean_writer(index, 1, heap_bytes)?;
    let with_deletes: Vec<tantivy::index::SegmentId> = index
        .searchable_segment_metas()?
        .iter()
        .filter(|meta| meta.has_deletes())
        .map(|meta| meta.id())
        .collect();
    if !with_deletes.is_empty() {
        writer.merge(&with_deletes).wait()?;
    }
    writer.garbage_collect_files().wait()?;
    writer.wait_merging_threads()?;
    Ok(with_deletes.len())
}

/// Finds live documents by id through the term dictionary (no scoring, no scan).
pub struct IdLookup<'a> {
    searcher: &'a Searcher,
    fields: &'a IndexFields,
    hashes: Vec<tantivy::columnar::Column<u64>>,
}

impl<'a> IdLookup<'a> {
    /// A lookup over `searcher`'s segments, reading each one's `hash` column.
    pub fn new(searcher: &'a Searcher, fields: &'a IndexFields) -> Result<Self> {
        let hashes = searcher
            .segment_readers()
            .iter()
            .map(|s| s.fast_fields().u64("hash"))
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(IdLookup {
            searcher,
            fields,
            hashes,
        })
    }

    /// The (segment, doc) of the live document with this id.
    pub fn find(&self, id: &str) -> Result<Option<tantivy::DocAddress>> {
        let term = Term::from_field_text(self.fields.id, id);
        first_live_doc(self.searcher, &term, |_, _| Ok(true))
    }

    /// The stored version hash of the live record with this id.
    pub fn hash_of(&self, id: &str) -> Result<Option<u64>> {
        Ok(self.find(id)?.map(|address| {
            self.hashes[address.segment_ord as usize]
                .first(address.doc_id)
                .unwrap_or(0)
        }))
    }
}

/// The first live document containing `term` that `accept` takes, through the
/// term dictionary (no scoring, no scan).
pub(crate) fn first_live_doc(
    searcher: &Searcher,
    term: &Term,
    accept: impl Fn(&tantivy::SegmentReader, tantivy::DocId) -> Result<bool>,
) -> Result<Option<tantivy::DocAddress>> {
    use tantivy::DocSet;
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let inverted = segment.inverted_index(term.field())?;
        let postings = inverted
            .read_postings(term, IndexRecordOption::Basic)
            .map_err(|e| Error::io("text index", e))?;
        let Some(mut postings) = postings else {
            continue;
        };
        let mut doc = postings.doc();
        while doc != tantivy::TERMINATED {
            if !segment.is_deleted(doc) && accept(segment, doc)? {
                return Ok(Some(tantivy::DocAddress::new(ord as u32, doc)));
            }
            doc = postings.advance();
        }
    }
    Ok(None)
}
