//! Search: from a question to ranked, explained records.
//!
//! The query text goes through the same code-aware analyzer as the records, and
//! every resulting term is looked up in every text field with that field's boost;
//! a record's BM25 score is the sum over fields (a "most fields" match, so a hit in
//! both the topic and the content counts for more than either alone). Filters
//! ([`filters`]: namespace, project, origin, session, kind, time range, file,
//! the live context) narrow the candidates without changing scores. A search that finds nothing says why.
//!
//! This file holds the engine and the whole search; its parts are rooms of
//! their own: the text query (`query.rs`), the vector half (`vector_side.rs`),
//! ranking and calibration (`rank.rs`), copies folded into a hit ([`dedup`]),
//! the answer's types (`response.rs`) and why an answer is empty
//! (`explain.rs`).

pub mod batch;
pub mod candidates;
pub mod confidence;
pub mod dates;
pub mod dedup;
pub mod english;
pub mod everyday;
mod explain;
pub mod filters;
pub mod fusion;
pub mod neighbours;
pub mod phrasings;
mod query;
mod rank;
pub mod relevance;
mod response;
mod scope;
pub mod tiers;
mod vector_side;

use serde::Serialize;
use tantivy::query::{Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocAddress, Searcher, TantivyDocument, Term};

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::index::{tokenizer, IndexFields};
use crate::record::Record;
use crate::store::Store;
use crate::vectors::VectorIndex;
use explain::{held_by_none, nothing_relevant};
pub use explain::{quoted_words, MAX_UNKNOWN_WORDS};
pub use filters::{Filters, LiveContext, TierFilter};
use fusion::Fusion;
use query::CommonTerms;
pub use query::MAX_QUERY_TERMS;
#[cfg(test)]
pub(crate) use response::test_hit;
pub(crate) use response::{hit, SNIPPET_CHARS};
pub use response::{Hit, ScoreParts, SearchResponse, MAX_DUPLICATE_IDS};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use vector_side::VectorSide;

/// Which retrievers rank the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Words, identifiers and file names (BM25)
    Bm25,
    /// Meaning (embedding similarity)
    Vector,
    /// Both, fused
    Hybrid,
}

/// How results are ranked: retrievers, fusion method and its weight.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RankOptions {
    /// Which retrievers run: BM25, vectors or both.
    pub mode: Mode,
    /// How the two retrievers' lists are fused in hybrid mode.
    pub fusion: Fusion,
    /// Weight of the vector side in linear fusion, 0..=1.
    pub alpha: f32,
}

/// The default fusion, chosen on `../shared/eval` (README, Evaluation): the
/// calibrated relevance model ranks as well as z-score fusion (which beat
/// min-max linear fusion and RRF) and its scores mean the same for every
/// query, so a minimum score can say "nothing relevant".
pub const DEFAULT_FUSION: Fusion = Fusion::Calibrated;

/// The vector side's weight in linear and z-score fusion.
pub const DEFAULT_ALPHA: f32 = 0.4;

impl Default for RankOptions {
    fn default() -> Self {
        RankOptions {
            mode: Mode::Hybrid,
            fusion: DEFAULT_FUSION,
            alpha: DEFAULT_ALPHA,
        }
    }
}

/// The minimum score a ranking applies when the caller gives none: the
/// calibrated default ([`relevance::DEFAULT_MIN_SCORE`]) when the vector side
/// took part, else 0. Without vectors the calibration reads BM25 alone, which
/// cannot tell a query about nothing stored from one phrased in other words
/// (measured: it empties 33% of the negative queries on SciFact and costs
/// LoCoMo 0.011 Recall@10; README, Evaluation), and the scores of the other
/// fusions have no fixed meaning.
pub fn default_min_score(rank: &RankOptions, vectors: bool) -> f32 {
    if rank.fusion == Fusion::Calibrated && vectors && rank.mode != Mode::Bm25 {
        relevance::DEFAULT_MIN_SCORE
    } else {
        0.0
    }
}

/// A searcher over one commit of a store, reused across many queries.
pub struct SearchEngine {
    /// The store's folder (for the archive tier and the access log).
    root: std::path::PathBuf,
    searcher: Searcher,
    /// The `id` fast-field column of each segment, opened once.
    id_columns: Vec<Option<tantivy::columnar::StrColumn>>,
    fields: IndexFields,
    boosts: [f32; 6],
    common_terms: CommonTerms,
    english: english::Prior,
    embed_missing: usize,
    analyzer: TextAnalyzer,
    max_query_bytes: usize,
    vectors: Option<VectorSide>,
    /// Why there is no vector side, when there is none.
    vector_unavailable: String,
    /// The live records of each namespace searched so far (see [`scope`]).
    namespaces: Mutex<HashMap<String, Arc<scope::NamespaceDocs>>>,
}

/// Namespaces whose records an engine keeps listed; past it the list starts over.
const MAX_CACHED_NAMESPACES: usize = 64;

impl SearchEngine {
    /// A BM25-only engine.
    pub fn new(store: &Store) -> Result<SearchEngine> {
        let searcher = store.reader()?.searcher();
        let id_columns = searcher
            .segment_readers()
            .iter()
            .map(|segment| segment.fast_fields().str("id"))
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(SearchEngine {
            root: store.root().to_path_buf(),
            searcher,
            id_columns,
            fields: *store.fields(),
            boosts: store.config().ranking.boosts(),
            common_terms: CommonTerms::from(&store.config().ranking),
            english: english::Prior::from(&store.config().ranking),
            embed_missing: 0,
            analyzer: tokenizer::analyzer(),
            max_query_bytes: store.config().limits.max_query_bytes,
            vectors: None,
            vector_unavailable: "unavailable: no embedding model loaded".into(),
            namespaces: Mutex::new(HashMap::new()),
        })
    }

    /// An engine with both halves, when `embedder` loaded; otherwise BM25 only,
    /// remembering why.
    pub fn with_embedder(
        store: &Store,
        embedder: std::result::Result<Box<dyn Embedder>, String>,
    ) -> Result<SearchEngine> {
        let mut engine = SearchEngine::new(store)?;
        match embedder {
            Ok(embedder) => {
                let index = VectorIndex::open(
                    store.root(),
                    &engine.searcher,
                    &engine.fields,
                    embedder.dim(),
                )?;
                let without_vector = crate::vectors::coverage(&engine.searcher)?.without_vector;
                engine.vectors = Some(VectorSide {
                    index,
                    embedder: Mutex::new(embedder),
                    query_cache: Mutex::new(HashMap::new()),
                    without_vector,
                });
            }
            Err(why) => engine.vector_unavailable = format!("unavailable: {why}"),
        }
        Ok(engine)
    }

    /// `used` when the vector side can run, else why not.
    pub fn vector_status(&self) -> &str {
        if self.vectors.is_some() {
            "used"
        } else {
            &self.vector_unavailable
        }
    }

    /// The searcher (one commit) the engine reads: browsing beside a search
    /// reads the same records without opening the index again.
    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    /// Live records the engine searches (L2).
    pub fn num_records(&self) -> u64 {
        self.searcher.num_docs()
    }

    /// Ranked ids and scores only: the fast path for batch runs and evaluation.
    pub fn search_ids(
        &self,
        query: &str,
        k: usize,
        filters: &Filters,
        rank: &RankOptions,
    ) -> Result<Vec<(String, f32)>> {
        Ok(self
            .search_ranked_ids(query, k, filters, rank)?
            .into_iter()
            .map(|hit| (hit.id, hit.score))
            .collect())
    }

    /// Ranked ids and scores, each with the ids of the duplicates that folded
    /// into it (see [`dedup`]).
    pub fn search_ranked_ids(
        &self,
        query: &str,
        k: usize,
        filters: &Filters,
        rank: &RankOptions,
    ) -> Result<Vec<batch::RankedId>> {
        let plan = self.text_plan(query, filters)?;
        let ranking = self.ranked(query, plan.side(), k, filters, rank)?;
        ranking
            .hits
            .into_iter()
            .map(|hit| {
                Ok(batch::RankedId {
                    id: self.id_of(hit.fused.doc)?,
                    score: hit.fused.score,
                    duplicates: hit
                        .copies
                        .iter()
                        .map(|&doc| self.id_of(doc))
                        .collect::<Result<_>>()?,
                })
            })
            .collect()
    }

    /// A full search: ranked hits with snippets, or an explanation of why none.
    pub fn search(
        &self,
        query: &str,
        k: usize,
        filters: &Filters,
        rank: &RankOptions,
    ) -> Result<SearchResponse> {
        if filters.tier != TierFilter::L2 {
            let response = tiers::search(self, query, k, filters)?;
            self.log_access(&response);
            return Ok(response);
        }
        let started = std::time::Instant::now();
        let plan = self.text_plan(query, filters)?;
        let ranking = self.ranked(query, plan.side(), k, filters, rank)?;
        let snippets = scope::snippet_generator(
            &self.searcher,
            &*plan.query,
            self.fields.content,
            &plan.stats,
            SNIPPET_CHARS,
        )?;
        let mut results = Vec::with_capacity(ranking.hits.len());
        for (i, ranked) in ranking.hits.iter().enumerate() {
            let doc: TantivyDocument = self.searcher.doc(ranked.fused.doc)?;
            let record = self.fields.record(&doc)?;
            let mut hit = hit(i + 1, &ranked.fused, record, &snippets);
            hit.scores.cosine = ranked.cosine;
            hit.scores.coverage = Some(ranked.coverage);
            self.add_copies(&mut hit, ranked, filters)?;
            hit.weak = ranked.weak;
            results.push(hit);
        }
        let unknown_words = self.unknown_words(query, filters.namespace.as_deref());
        let explanation = if !results.is_empty() {
            None
        } else if let Some(best) = ranking.best_score {
            Some(nothing_relevant(best, ranking.min_score) + &held_by_none(&unknown_words))
        } else {
            Some(self.explain_empty(&plan.terms, &*plan.query, filters)?)
        };
        let uses_vectors = rank.mode != Mode::Bm25 && self.vectors.is_some();
        let mut response = SearchResponse {
            query: query.to_string(),
            phrasings: Vec::new(),
            filters: filters.clone(),
            results,
            explanation,
            min_score: ranking.min_score,
            below_min_score: ranking.below_min,
            best_score: ranking.best_score.filter(|_| ranking.hits.is_empty()),
            vector: if rank.mode == Mode::Bm25 {
                "off".to_string()
            } else {
                self.vector_status().to_string()
            },
            records_without_vector: self
                .vectors
                .as_ref()
                .filter(|v| uses_vectors && v.without_vector > 0)
                .map(|v| v.without_vector),
            chance_cosine: self.vectors.as_ref().filter(|_| uses_vectors).map(|v| {
                relevance::chance_cosine(plan.stats.live_docs().saturating_sub(v.without_vector))
            }),
            unknown_words,
            took_ms: started.elapsed().as_secs_f64() * 1000.0,
        };
        confidence::mark(&mut response);
        self.log_access(&response);
        Ok(response)
    }

    /// Records the results as read, for the retention policy (see `crate::store::access`).
    fn log_access(&self, response: &SearchResponse) {
        let ids: Vec<&str> = response.results.iter().map(|h| h.id.as_str()).collect();
        crate::store::access::log(&self.root, &ids);
    }

    /// The BM25 statistics a search under `filters` ranks with: those of
    /// its namespace when it has one (see [`scope`]), else the whole index's.
    pub(crate) fn statistics(&self, filters: &Filters) -> Result<scope::Statistics<'_>> {
        let Some(namespace) = &filters.namespace else {
            return Ok(scope::Statistics::Index(&self.searcher));
        };
        let cached = self
            .namespaces
            .lock()
            .ok()
            .and_then(|m| m.get(namespace).cloned());
        let docs = match cached {
            Some(docs) => docs,
            None => {
                let docs = Arc::new(scope::NamespaceDocs::new(
                    &self.searcher,
                    self.fields.namespace,
                    namespace,
                )?);
                if let Ok(mut m) = self.namespaces.lock() {
                    if m.len() >= MAX_CACHED_NAMESPACES {
                        m.clear();
                    }
                    m.insert(namespace.clone(), Arc::clone(&docs));
                }
                docs
            }
        };
        Ok(scope::Statistics::Namespace(scope::NamespaceStats::new(
            &self.searcher,
            docs,
        )))
    }

    /// The store folder, the L2 searcher and its fields (for the archive tier).
    pub(crate) fn parts(&self) -> (&std::path::Path, &Searcher, &IndexFields) {
        (&self.root, &self.searcher, &self.fields)
    }

    /// The id of a record found by a search (for evaluation).
    pub fn record_id(&self, doc: DocAddress) -> Result<String> {
        self.id_of(doc)
    }

    /// The project a search scopes to by default: `current` when this store
    /// holds records of it, else none (every project), so that a store
    /// without projects, or a folder the agents never worked in, searches
    /// everything rather than nothing. With a `namespace`, only its records
    /// count: whether another namespace worked in the project changes nothing.
    pub fn default_project(
        &self,
        current: Option<String>,
        namespace: Option<&str>,
    ) -> Result<Option<String>> {
        let Some(project) = current else {
            return Ok(None);
        };
        let term = Term::from_field_text(self.fields.project, &project);
        let scope = Filters {
            namespace: namespace.map(str::to_string),
            ..Filters::default()
        };
        let held =
            self.count(&*self.filtered(&TermQuery::new(term, IndexRecordOption::Basic), &scope))?;
        Ok((held > 0).then_some(project))
    }

    /// This engine embeds, per search, up to `n` of the best candidates
    /// that have no vector yet (see `vector_side`): for a caller that must
    /// answer well while the background is still making vectors (recall,
    /// right after a history import), at the cost of their inference.
    pub fn with_missing_vectors(mut self, n: usize) -> SearchEngine {
        self.embed_missing = n;
        self
    }

    /// What `session` was asked first (see [`crate::store::browse::first_prompt`]).
    pub fn first_prompt(&self, session: &str) -> Result<Option<Record>> {
        crate::store::browse::first_prompt(&self.searcher, &self.fields, session)
    }

    /// The stored record with this id in the engine's commit (L2), if any;
    /// not logged as a read.
    pub fn record(&self, id: &str) -> Result<Option<Record>> {
        crate::store::get_record(&self.searcher, &self.fields, id)
    }

    /// The ordinal of a record's id in its segment's id dictionary (`None`
    /// when it has none, as [`SearchEngine::id_of`] then gives ""). Within
    /// one segment, ordinals are in the order of the ids.
    fn id_ordinal(&self, address: DocAddress) -> Option<u64> {
        match self.id_columns.get(address.segment_ord as usize) {
            Some(Some(column)) => column.term_ords(address.doc_id).next(),
            _ => None,
        }
    }

    fn id_of(&self, address: DocAddress) -> Result<String> {
        let mut id = String::new();
        if let Some(Some(column)) = self.id_columns.get(address.segment_ord as usize) {
            if let Some(ord) = column.term_ords(address.doc_id).next() {
                column
                    .ord_to_str(ord, &mut id)
                    .map_err(|e| Error::CorruptRecord {
                        id: "?".into(),
                        message: e.to_string(),
                    })?;
            }
        }
        Ok(id)
    }

    fn count(&self, query: &dyn Query) -> Result<usize> {
        Ok(self.searcher.search(query, &tantivy::collector::Count)?)
    }
}
