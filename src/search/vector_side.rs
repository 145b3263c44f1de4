//! The vector half of a search engine: the store's vectors, the query
//! embedder, and the query embeddings already computed (batch runs and
//! evaluations repeat queries). An engine without one searches by BM25 alone.

use std::collections::HashMap;
use std::sync::Mutex;

use tantivy::DocAddress;

use super::{candidates, Filters, SearchEngine};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::vectors::VectorIndex;

/// The vector half of an engine: the store's vectors and the query embedder.
pub(super) struct VectorSide {
    pub(super) index: VectorIndex,
    pub(super) embedder: Mutex<Box<dyn Embedder>>,
    /// Query vectors already computed by this engine (batch runs repeat queries).
    pub(super) query_cache: Mutex<HashMap<String, Vec<f32>>>,
    pub(super) without_vector: u64,
}

impl SearchEngine {
    /// The exact cosine similarity of each candidate the vector side did not return.
    pub(super) fn fill_cosines(
        &self,
        side: &VectorSide,
        query_vector: &[f32],
        pool: &mut [candidates::Candidate],
    ) -> Result<()> {
        let missing: Vec<DocAddress> = pool
            .iter()
            .filter(|c| c.vector_rank.is_none())
            .map(|c| c.doc)
            .collect();
        let mut found = side
            .index
            .similarities(&self.searcher, query_vector, &missing)?
            .into_iter();
        for c in pool.iter_mut().filter(|c| c.vector_rank.is_none()) {
            c.cosine = found.next().flatten();
        }
        self.embed_unvectored(side, query_vector, pool)
    }

    /// The cosine of the best candidates that have no vector yet (a history
    /// just imported, its vectors still being made in the background),
    /// embedded now: at most as many as [`SearchEngine::with_missing_vectors`] says, best
    /// BM25 first. Without it such a record is ranked by words alone, and a
    /// question in other words finds nothing until the background catches
    /// up. The vectors are not stored: the background makes them for good.
    fn embed_unvectored(
        &self,
        side: &VectorSide,
        query_vector: &[f32],
        pool: &mut [candidates::Candidate],
    ) -> Result<()> {
        if self.embed_missing == 0 {
            return Ok(());
        }
        let mut missing: Vec<usize> = (0..pool.len())
            .filter(|&i| pool[i].cosine.is_none())
            .collect();
        missing.sort_by(|&a, &b| pool[b].bm25.total_cmp(&pool[a].bm25));
        missing.truncate(self.embed_missing);
        if missing.is_empty() {
            return Ok(());
        }
        let mut texts = Vec::with_capacity(missing.len());
        for &i in &missing {
            let doc: tantivy::TantivyDocument = self.searcher.doc(pool[i].doc)?;
            texts.push(crate::embed::text::embedding_text(
                &self.fields.record(&doc)?,
            ));
        }
        let vectors = {
            let mut embedder = side
                .embedder
                .lock()
                .map_err(|_| Error::Usage("the embedder failed earlier in this process".into()))?;
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder
                .embed(&refs)
                .map_err(|e| Error::Usage(e.to_string()))?
        };
        for (&i, v) in missing.iter().zip(vectors) {
            pool[i].cosine = Some(v.iter().zip(query_vector).map(|(a, b)| a * b).sum());
        }
        Ok(())
    }

    pub(super) fn vector_top_of(
        &self,
        side: &VectorSide,
        query_vector: &[f32],
        filters: &Filters,
        depth: usize,
    ) -> Result<Vec<(f32, DocAddress)>> {
        let filter = self.filter_only(filters);
        side.index
            .search(&self.searcher, query_vector, filter.as_deref(), depth)
    }

    /// The query's embedding (computed once per engine and query), or `None`
    /// for a blank query.
    pub(super) fn query_vector(&self, side: &VectorSide, query: &str) -> Result<Option<Vec<f32>>> {
        if query.trim().is_empty() {
            return Ok(None);
        }
        fn poisoned<T>(_: T) -> Error {
            Error::Usage("the embedder failed earlier in this process".into())
        }
        let cached = side
            .query_cache
            .lock()
            .map_err(poisoned)?
            .get(query)
            .cloned();
        if let Some(v) = cached {
            return Ok(Some(v));
        }
        let v = side
            .embedder
            .lock()
            .map_err(poisoned)?
            .embed(&[query])
            .map_err(|e| Error::Usage(e.to_string()))?
            .pop()
            .unwrap_or_default();
        side.query_cache
            .lock()
            .map_err(poisoned)?
            .insert(query.to_string(), v.clone());
        Ok(Some(v))
    }
}
