//! Search: from a question to ranked, explained records.
//!
//! The query text goes through the same code-aware analyzer as the records, and
//! every resulting term is looked up in every text field with that field's boost;
//! a record's BM25 score is the sum over fields (a "most fields" match, so a hit in
//! both the topic and the content counts for more than either alone). Filters
//! ([`filters`]: namespace, project, origin, session, kind, time range, file,
//! the live context) narrow the candidates without changing scores. A search that finds nothing says why.

pub mod batch;
pub mod candidates;
pub mod dates;
pub mod dedup;
pub mod filters;
pub mod fusion;
pub mod neighbours;
pub mod relevance;
pub mod tiers;

use serde::Serialize;
use tantivy::collector::TopDocs;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, EmptyQuery, Occur, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::snippet::SnippetGenerator;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocAddress, Searcher, TantivyDocument, Term};

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::index::{tokenizer, IndexFields};
use crate::record::parse::format_time;
use crate::record::{Kind, Record};
use crate::store::Store;
use crate::vectors::VectorIndex;
pub use filters::{Filters, LiveContext, TierFilter};
use fusion::Fusion;
use std::collections::HashMap;
use std::sync::Mutex;

/// Most distinct query terms used; the rest of a very long query is ignored.
pub const MAX_QUERY_TERMS: usize = 1024;

/// Longest snippet, in characters.
pub(crate) const SNIPPET_CHARS: usize = 220;

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

/// Candidates each retriever contributes to fusion.
const FUSION_DEPTH: usize = 100;

/// Candidates a single retriever fetches for `k` results: spares for the
/// duplicates that fold into a hit.
fn single_depth(k: usize) -> usize {
    k.saturating_mul(3).max(k + 20)
}

/// Score parts of a result: each retriever's score and rank, and the fused score.
#[derive(Debug, Clone, Serialize)]
pub struct ScoreParts {
    /// BM25 score, if BM25 found the record.
    pub bm25: Option<f32>,
    /// 1-based rank in BM25's list, if BM25 found the record.
    pub bm25_rank: Option<usize>,
    /// Cosine similarity of the query and record embeddings.
    pub vector: Option<f32>,
    /// 1-based rank in the vector list, if the vector side found the record.
    pub vector_rank: Option<usize>,
    /// The fused score (the same as the hit's `score`).
    pub fused: f32,
    /// The exact cosine similarity of the query and the record, whether or
    /// not the vector side ranked it (none without a vector).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f32>,
    /// The share of the query's IDF weight the record holds, in any field
    /// (see `candidates::weighted_share`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f32>,
}

/// One ranked result.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    /// 1-based position in the results.
    pub rank: usize,
    /// The record's id.
    pub id: String,
    /// The record's kind.
    pub kind: Kind,
    /// The record's namespace.
    pub namespace: String,
    /// The record's project (see `crate::record::project`); absent when it
    /// has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Who wrote it when it was pulled from a team's shared memory; absent
    /// for the store's own records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The score results are ranked by (the fused score).
    pub score: f32,
    /// Each retriever's score and rank.
    pub scores: ScoreParts,
    /// The record's title.
    pub title: String,
    /// The best-matching passage of the record's text (at most 220 characters).
    pub snippet: String,
    /// Byte ranges of matched terms within `snippet`.
    pub highlights: Vec<(usize, usize)>,
    /// The record's session, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// First turn the record covers, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_turn: Option<u64>,
    /// Last turn the record covers, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_turn: Option<u64>,
    /// The record's own time (RFC 3339), if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The tier the hit came from: `l2` or `l3`.
    pub tier: &'static str,
    /// Files the record names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// A short human citation, as [`Record::citation`] gives.
    pub citation: String,
    /// How many records this hit stands for: itself and the copies of its text
    /// (identical or near-identical) that folded into it.
    pub copies: usize,
    /// Ids of the other copies (at most [`MAX_DUPLICATE_IDS`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub duplicates: Vec<String>,
    /// Scored under the default minimum: shown only because a lower minimum
    /// was asked for (`--all`, `--min-score`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub weak: bool,
}

/// Most duplicate ids one hit lists.
pub const MAX_DUPLICATE_IDS: usize = 20;

/// The answer to one search.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResponse {
    /// The query as given.
    pub query: String,
    /// The filters applied.
    pub filters: Filters,
    /// The hits, best first.
    pub results: Vec<Hit>,
    /// Why there are no results, when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The minimum score applied (0 when none).
    pub min_score: f32,
    /// Results left out for scoring under the minimum.
    #[serde(skip_serializing_if = "is_zero")]
    pub below_min_score: usize,
    /// The best score of any candidate, when none is returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_score: Option<f32>,
    /// What the vector side did: `used`, `off`, or `unavailable: <why>`.
    pub vector: String,
    /// Records that match no vector yet (added with `--embed later` or without a model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records_without_vector: Option<u64>,
    /// Words of the query that no searched record holds (see
    /// [`SearchEngine::unknown_words`]): results found for the rest of the
    /// query are not about them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown_words: Vec<String>,
    /// Time the search took, in milliseconds.
    pub took_ms: f64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One hit of a ranking and the candidates that repeat its text.
pub(crate) struct RankedHit {
    pub fused: fusion::Fused<DocAddress>,
    /// The candidate's exact cosine and its coverage of the query.
    pub cosine: Option<f32>,
    pub coverage: f32,
    pub copies: Vec<DocAddress>,
    /// Under the default minimum score.
    pub weak: bool,
}

/// The hits of one search, and what the minimum score left out.
pub(crate) struct Ranking {
    pub hits: Vec<RankedHit>,
    /// The minimum applied (0 when none).
    pub min_score: f32,
    /// Hits left out for scoring under it.
    pub below_min: usize,
    /// The best candidate's score, when there was a candidate.
    pub best_score: Option<f32>,
}

/// Most words [`SearchEngine::unknown_words`] reports.
pub const MAX_UNKNOWN_WORDS: usize = 10;

/// `"a", "b"`: the words as messages quote them.
pub fn quoted_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The sentence an explanation gains when some query words are held by no
/// record (empty when there are none).
fn held_by_none(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [_] => format!("; no record holds the word {}", quoted_words(words)),
        _ => format!("; no record holds the words {}", quoted_words(words)),
    }
}

/// The explanation of an answer emptied by the minimum score.
fn nothing_relevant(best: f32, min_score: f32) -> String {
    format!(
        "nothing relevant: the best match scores {best:.3}, under the minimum score {min_score:.2} \
         (weak matches are shown with `--all` or `--min-score 0`; over MCP, `minScore: 0`)"
    )
}

/// The vector half of an engine: the store's vectors and the query embedder.
struct VectorSide {
    index: VectorIndex,
    embedder: Mutex<Box<dyn Embedder>>,
    /// Query vectors already computed by this engine (batch runs repeat queries).
    query_cache: Mutex<HashMap<String, Vec<f32>>>,
    without_vector: u64,
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
    analyzer: TextAnalyzer,
    max_query_bytes: usize,
    vectors: Option<VectorSide>,
    /// Why there is no vector side, when there is none.
    vector_unavailable: String,
}

/// When a query term counts as common (see [`SearchEngine::text_query_over`]).
#[derive(Debug, Clone, Copy)]
struct CommonTerms {
    share: f64,
    from_records: u64,
}

impl From<&crate::store::config::Ranking> for CommonTerms {
    fn from(ranking: &crate::store::config::Ranking) -> Self {
        CommonTerms {
            share: ranking.common_term_share,
            from_records: ranking.common_terms_from_records,
        }
    }
}

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
            analyzer: tokenizer::analyzer(),
            max_query_bytes: store.config().limits.max_query_bytes,
            vectors: None,
            vector_unavailable: "unavailable: no embedding model loaded".into(),
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
        self.check_query(query)?;
        let terms = self.query_terms(query);
        let ranking = self.ranked(query, &terms, &*self.text_query(&terms), k, filters, rank)?;
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
        self.check_query(query)?;
        let terms = self.query_terms(query);
        let text_query = self.text_query(&terms);
        let ranking = self.ranked(query, &terms, &*text_query, k, filters, rank)?;
        let mut snippets =
            SnippetGenerator::create(&self.searcher, &*text_query, self.fields.content)?;
        snippets.set_max_num_chars(SNIPPET_CHARS);
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
        let unknown_words = self.unknown_words(query);
        let explanation = if !results.is_empty() {
            None
        } else if let Some(best) = ranking.best_score {
            Some(nothing_relevant(best, ranking.min_score) + &held_by_none(&unknown_words))
        } else {
            Some(self.explain_empty(&terms, &*text_query, filters)?)
        };
        let uses_vectors = rank.mode != Mode::Bm25 && self.vectors.is_some();
        let response = SearchResponse {
            query: query.to_string(),
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
            unknown_words,
            took_ms: started.elapsed().as_secs_f64() * 1000.0,
        };
        self.log_access(&response);
        Ok(response)
    }

    /// Counts the copies a hit stands for: every record in the store (under
    /// the filters) with the same embedded text, and the near-identical
    /// candidates that folded into it.
    fn add_copies(&self, hit: &mut Hit, ranked: &RankedHit, filters: &Filters) -> Result<()> {
        let hash = self.text_hashes(&[ranked.fused.doc])?[0];
        let mut ids: Vec<String> = Vec::new();
        let mut same_hash = 0;
        if let Some(hash) = hash {
            let query = TermQuery::new(
                Term::from_field_u64(self.fields.text_hash, hash),
                IndexRecordOption::Basic,
            );
            let query = self.filtered(
                &query,
                &Filters {
                    min_score: None,
                    ..filters.clone()
                },
            );
            let (count, docs) = self.searcher.search(
                &*query,
                &(
                    tantivy::collector::Count,
                    TopDocs::with_limit(MAX_DUPLICATE_IDS + 1).order_by_score(),
                ),
            )?;
            same_hash = count.saturating_sub(1);
            for (_, doc) in docs {
                if doc != ranked.fused.doc && ids.len() < MAX_DUPLICATE_IDS {
                    ids.push(self.id_of(doc)?);
                }
            }
        }
        let hashes = self.text_hashes(&ranked.copies)?;
        let mut near = 0;
        for (&doc, copy_hash) in ranked.copies.iter().zip(hashes) {
            if copy_hash.is_some() && copy_hash == hash {
                continue; // counted above
            }
            near += 1;
            if ids.len() < MAX_DUPLICATE_IDS {
                ids.push(self.id_of(doc)?);
            }
        }
        hit.copies = 1 + same_hash + near;
        hit.duplicates = ids;
        Ok(())
    }

    /// The text hash (of the embedded text) of each of `docs`.
    fn text_hashes(&self, docs: &[DocAddress]) -> Result<Vec<Option<u64>>> {
        let mut columns = Vec::with_capacity(self.searcher.segment_readers().len());
        for segment in self.searcher.segment_readers() {
            columns.push(segment.fast_fields().u64("text_hash")?);
        }
        Ok(docs
            .iter()
            .map(|d| {
                columns
                    .get(d.segment_ord as usize)
                    .and_then(|c| c.first(d.doc_id))
            })
            .collect())
    }

    /// Records the results as read, for the retention policy (see `crate::store::access`).
    fn log_access(&self, response: &SearchResponse) {
        let ids: Vec<&str> = response.results.iter().map(|h| h.id.as_str()).collect();
        crate::store::access::log(&self.root, &ids);
    }

    /// The store folder, the L2 searcher and its fields (for the archive tier).
    pub(crate) fn parts(&self) -> (&std::path::Path, &Searcher, &IndexFields) {
        (&self.root, &self.searcher, &self.fields)
    }

    /// The ranking of both retrievers, or of one, as `rank` asks: candidates
    /// scored, copies of one text folded into one hit, the best `k` hits at or
    /// above the minimum score.
    fn ranked(
        &self,
        query: &str,
        terms: &[String],
        text_query: &dyn Query,
        k: usize,
        filters: &Filters,
        rank: &RankOptions,
    ) -> Result<Ranking> {
        let vector_side = match (rank.mode, &self.vectors) {
            (Mode::Bm25, _) => None,
            (_, Some(side)) => Some(side),
            (Mode::Vector, None) => {
                return Err(Error::Usage(format!(
                    "--mode vector needs embeddings, which are {}",
                    self.vector_unavailable
                )))
            }
            (Mode::Hybrid, None) => None,
        };
        let hybrid = vector_side.is_some() && rank.mode == Mode::Hybrid;
        let depth = if hybrid {
            k.max(FUSION_DEPTH)
        } else {
            single_depth(k)
        };
        let (bm25, vector, query_vector) = match (rank.mode, vector_side) {
            (Mode::Vector, Some(side)) => {
                let v = self.query_vector(side, query)?;
                let top = match &v {
                    Some(v) => self.vector_top_of(side, v, filters, depth)?,
                    None => Vec::new(),
                };
                (Vec::new(), top, v)
            }
            (_, None) => (self.top_docs(text_query, filters, depth)?, Vec::new(), None),
            // Both retrievers: the query embedding and the vector search run on a
            // second thread while BM25 runs here, so hybrid costs the slower of
            // the two, not their sum.
            (_, Some(side)) => std::thread::scope(|scope| {
                let vector = scope.spawn(|| -> Result<_> {
                    let v = self.query_vector(side, query)?;
                    let top = match &v {
                        Some(v) => self.vector_top_of(side, v, filters, depth)?,
                        None => Vec::new(),
                    };
                    Ok((top, v))
                });
                let bm25 = self.top_docs(text_query, filters, depth);
                // A panic there is a bug; re-raise it as if it happened here.
                let vector = vector
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                let (top, v) = vector?;
                Ok::<_, Error>((bm25?, top, v))
            })?,
        };
        let mut pool = candidates::union(&bm25, &vector);
        let calibrated = rank.fusion == Fusion::Calibrated;
        let scores = if calibrated {
            let sides = match (rank.mode, hybrid) {
                (_, true) => relevance::Sides::Both,
                (Mode::Vector, _) => relevance::Sides::Vector,
                _ => relevance::Sides::Bm25,
            };
            if hybrid {
                candidates::fill_bm25(&self.searcher, text_query, &mut pool)?;
            }
            if let (Some(side), Some(v)) = (vector_side, &query_vector) {
                self.fill_cosines(side, v, &mut pool)?;
            }
            self.mark_identifiers(query, &mut pool)?;
            self.mark_dates(query, &mut pool)?;
            let idfs = candidates::term_idfs(&self.searcher, self.fields.content, terms);
            if hybrid {
                self.mark_coverage(terms, &idfs, &mut pool)?;
            }
            let signals = candidates::QuerySignals::from_idfs(&idfs);
            let mut calibrated = relevance::calibrate(&pool, &signals, sides);
            self.raise_predecessors(&pool, &mut calibrated)?;
            calibrated
                .iter()
                .map(relevance::Calibrated::score)
                .collect()
        } else {
            self.fused_scores(&pool, &bm25, &vector, rank, hybrid)
        };
        let mut order: Vec<usize> = (0..pool.len()).collect();
        order.sort_by(|&a, &b| {
            scores[b]
                .total_cmp(&scores[a])
                .then(pool[a].doc.cmp(&pool[b].doc))
        });
        let docs: Vec<DocAddress> = order.iter().map(|&i| pool[i].doc).collect();
        let hashes = self.text_hashes(&docs)?;
        let vectors = match vector_side {
            Some(side) => side.index.vectors_of(&self.searcher, &docs)?,
            None => vec![None; docs.len()],
        };
        let groups = dedup::collapse(docs.len(), k, |a, b| {
            dedup::same_text(
                hashes[a],
                hashes[b],
                vectors[a].as_deref(),
                vectors[b].as_deref(),
            )
        });
        let default_min = default_min_score(rank, vector_side.is_some());
        let min_score = filters.min_score.unwrap_or(default_min);
        let best_score = order.first().map(|&i| scores[i]);
        let mut hits = Vec::with_capacity(groups.len());
        let mut below_min = 0;
        for group in groups {
            let c = &pool[order[group.lead]];
            let score = scores[order[group.lead]];
            if score < min_score {
                below_min += 1;
                continue;
            }
            hits.push(RankedHit {
                fused: fusion::Fused {
                    doc: c.doc,
                    score,
                    bm25: c.bm25_rank.map(|r| (c.bm25, r)),
                    vector: c.vector_rank.zip(c.cosine).map(|(r, s)| (s, r)),
                },
                cosine: c.cosine,
                coverage: c.coverage,
                copies: group.copies.iter().map(|&i| docs[i]).collect(),
                weak: score < default_min,
            });
        }
        Ok(Ranking {
            hits,
            min_score: min_score.max(0.0),
            below_min,
            best_score,
        })
    }

    /// Raises the turns that the best candidates reply to (see [`neighbours`]).
    fn raise_predecessors(
        &self,
        pool: &[candidates::Candidate],
        calibrated: &mut [relevance::Calibrated],
    ) -> Result<()> {
        let mut order: Vec<usize> = (0..pool.len()).collect();
        order.sort_by(|&a, &b| calibrated[b].score().total_cmp(&calibrated[a].score()));
        let predecessors =
            self.predecessors_in_pool(pool, order.iter().take(neighbours::FROM_TOP).copied())?;
        if predecessors.is_empty() {
            return Ok(());
        }
        let mut logits: Vec<f32> = calibrated.iter().map(|c| c.logit).collect();
        neighbours::raise_predecessors(&mut logits, &order, |i| predecessors.get(&i).copied());
        for (c, logit) in calibrated.iter_mut().zip(logits) {
            c.logit = logit;
        }
        Ok(())
    }

    /// For each of the candidates `which` (pool indexes) whose context was
    /// taken from another candidate, that candidate's pool index.
    pub fn predecessors_in_pool(
        &self,
        pool: &[candidates::Candidate],
        which: impl Iterator<Item = usize>,
    ) -> Result<HashMap<usize, usize>> {
        let at: HashMap<DocAddress, usize> =
            pool.iter().enumerate().map(|(i, c)| (c.doc, i)).collect();
        let lookup = crate::store::IdLookup::new(&self.searcher, &self.fields)?;
        let mut found = HashMap::new();
        for i in which {
            let Some(from) = self.context_from(pool[i].doc)? else {
                continue;
            };
            if let Some(&p) = lookup.find(&from)?.and_then(|address| at.get(&address)) {
                found.insert(i, p);
            }
        }
        Ok(found)
    }

    /// The id of the turn a record's context was taken from, if any.
    fn context_from(&self, doc: DocAddress) -> Result<Option<String>> {
        #[derive(serde::Deserialize)]
        struct Link {
            context_from: Option<String>,
        }
        let stored: TantivyDocument = self.searcher.doc(doc)?;
        use tantivy::schema::Value;
        let Some(json) = stored
            .get_first(self.fields.record)
            .and_then(|v| v.as_str())
        else {
            return Ok(None);
        };
        // A record that does not parse has no link; reading it for a hit
        // reports the damage.
        Ok(serde_json::from_str::<Link>(json)
            .ok()
            .and_then(|l| l.context_from))
    }

    /// Scores of the pool by an uncalibrated fusion (or, with one retriever,
    /// that retriever's own scores).
    fn fused_scores(
        &self,
        pool: &[candidates::Candidate],
        bm25: &[(f32, DocAddress)],
        vector: &[(f32, DocAddress)],
        rank: &RankOptions,
        hybrid: bool,
    ) -> Vec<f32> {
        if !hybrid {
            return pool
                .iter()
                .map(|c| match c.bm25_rank {
                    Some(_) => c.bm25,
                    None => c.cosine.unwrap_or(0.0),
                })
                .collect();
        }
        let fused: HashMap<DocAddress, f32> = fusion::fuse(bm25, vector, rank.fusion, rank.alpha)
            .into_iter()
            .map(|f| (f.doc, f.score))
            .collect();
        pool.iter()
            .map(|c| fused.get(&c.doc).copied().unwrap_or(0.0))
            .collect()
    }

    /// Marks each candidate with the share of the query's identifiers it holds.
    fn mark_identifiers(&self, query: &str, pool: &mut [candidates::Candidate]) -> Result<()> {
        let identifiers = candidates::identifier_terms(&self.analyzer, query);
        if identifiers.is_empty() {
            return Ok(());
        }
        let fields: Vec<Field> = self.fields.text_fields().iter().map(|(f, _)| *f).collect();
        let shares = candidates::identifier_share(&self.searcher, &fields, &identifiers, pool)?;
        for (c, share) in pool.iter_mut().zip(shares) {
            c.identifiers = share;
        }
        Ok(())
    }

    /// Marks each candidate with its coverage of the query's terms: the share
    /// of their IDF weight (`idfs`, one per term) it holds (see
    /// [`candidates::weighted_share`]).
    fn mark_coverage(
        &self,
        terms: &[String],
        idfs: &[f32],
        pool: &mut [candidates::Candidate],
    ) -> Result<()> {
        let fields: Vec<Field> = self.fields.text_fields().iter().map(|(f, _)| *f).collect();
        let shares = candidates::weighted_share(&self.searcher, &fields, terms, idfs, pool)?;
        for (c, share) in pool.iter_mut().zip(shares) {
            c.coverage = share;
        }
        Ok(())
    }

    /// Marks the candidates whose own time falls on the date the query names.
    fn mark_dates(&self, query: &str, pool: &mut [candidates::Candidate]) -> Result<()> {
        let Some(hint) = dates::DateHint::of(query) else {
            return Ok(());
        };
        let mut columns = Vec::with_capacity(self.searcher.segment_readers().len());
        for segment in self.searcher.segment_readers() {
            columns.push(segment.fast_fields().date("timestamp")?);
        }
        for c in pool.iter_mut() {
            c.dated = columns
                .get(c.doc.segment_ord as usize)
                .and_then(|column| column.first(c.doc.doc_id))
                .is_some_and(|t| hint.covers(t.into_timestamp_secs()));
        }
        Ok(())
    }

    /// The exact cosine similarity of each candidate the vector side did not return.
    fn fill_cosines(
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
        Ok(())
    }

    /// Every candidate of a hybrid search, each with its exact BM25 score and
    /// cosine similarity, and the query's signals (for evaluation and for
    /// fitting the relevance model: `eval --dump-candidates`).
    pub fn candidate_pool(
        &self,
        query: &str,
        filters: &Filters,
        depth: usize,
    ) -> Result<(candidates::QuerySignals, Vec<candidates::Candidate>)> {
        self.check_query(query)?;
        let terms = self.query_terms(query);
        let text_query = self.text_query(&terms);
        let idfs = candidates::term_idfs(&self.searcher, self.fields.content, &terms);
        let bm25 = self.top_docs(&*text_query, filters, depth)?;
        let (vector, query_vector) = match &self.vectors {
            Some(side) => {
                let v = self.query_vector(side, query)?;
                let top = match &v {
                    Some(v) => self.vector_top_of(side, v, filters, depth)?,
                    None => Vec::new(),
                };
                (top, v)
            }
            None => (Vec::new(), None),
        };
        let mut pool = candidates::union(&bm25, &vector);
        candidates::fill_bm25(&self.searcher, &*text_query, &mut pool)?;
        if let (Some(side), Some(v)) = (&self.vectors, &query_vector) {
            self.fill_cosines(side, v, &mut pool)?;
        }
        self.mark_identifiers(query, &mut pool)?;
        self.mark_dates(query, &mut pool)?;
        self.mark_coverage(&terms, &idfs, &mut pool)?;
        Ok((candidates::QuerySignals::from_idfs(&idfs), pool))
    }

    /// The id of a record found by a search (for evaluation).
    pub fn record_id(&self, doc: DocAddress) -> Result<String> {
        self.id_of(doc)
    }

    fn vector_top_of(
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
    fn query_vector(&self, side: &VectorSide, query: &str) -> Result<Option<Vec<f32>>> {
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

    /// The filters alone as one query, or `None` when there are none.
    fn filter_only(&self, filters: &Filters) -> Option<Box<dyn Query>> {
        let clauses: Vec<(Occur, Box<dyn Query>)> =
            filters::filter_queries(&self.fields, &self.analyzer, filters)
                .into_iter()
                .map(|q| (Occur::Must, q))
                .collect();
        (!clauses.is_empty()).then(|| Box::new(BooleanQuery::new(clauses)) as Box<dyn Query>)
    }

    /// The project a search scopes to by default: `current` when this store
    /// holds records of it, else none (every project), so that a store
    /// without projects, or a folder the agents never worked in, searches
    /// everything rather than nothing.
    pub fn default_project(&self, current: Option<String>) -> Result<Option<String>> {
        let Some(project) = current else {
            return Ok(None);
        };
        let term = Term::from_field_text(self.fields.project, &project);
        let held = self.count(&TermQuery::new(term, IndexRecordOption::Basic))?;
        Ok((held > 0).then_some(project))
    }

    /// A query for the records that hold every word of `query` in some
    /// text field (a word: its whole analysed form, or else all of its
    /// parts), whatever their score: what `forget --query` deletes, so it
    /// matches exactly, not by relevance. `None` when the query has no
    /// searchable word.
    pub fn every_word_query(&self, query: &str) -> Option<Box<dyn Query>> {
        let in_any_field = |term: &str| -> Box<dyn Query> {
            Box::new(BooleanQuery::new(
                self.fields
                    .text_fields()
                    .iter()
                    .map(|(field, _)| {
                        let q: Box<dyn Query> = Box::new(TermQuery::new(
                            Term::from_field_text(*field, term),
                            IndexRecordOption::Basic,
                        ));
                        (Occur::Should, q)
                    })
                    .collect(),
            ))
        };
        let mut words: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for word in query.split_whitespace() {
            let Some((whole, parts)) = whole_and_parts(&self.analyzer, word) else {
                continue;
            };
            let mut either: Vec<(Occur, Box<dyn Query>)> =
                vec![(Occur::Should, in_any_field(&whole))];
            if parts.len() > 1 {
                let all_parts = parts
                    .iter()
                    .map(|p| (Occur::Must, in_any_field(p)))
                    .collect();
                either.push((Occur::Should, Box::new(BooleanQuery::new(all_parts))));
            }
            words.push((Occur::Must, Box::new(BooleanQuery::new(either))));
        }
        (!words.is_empty()).then(|| Box::new(BooleanQuery::new(words)) as Box<dyn Query>)
    }

    /// Whether `record`'s own text (title, content, decisions, files,
    /// commands, errors, and its context when it has one) holds every word
    /// of `query`, as [`SearchEngine::every_word_query`] matches them.
    pub fn holds_every_word(&self, record: &Record, query: &str) -> bool {
        let mut text = record.fields.title.clone();
        text.push('\n');
        text.push_str(&record.display_text());
        if let Some(context) = &record.context {
            text.push('\n');
            text.push_str(context);
        }
        let held: std::collections::HashSet<String> = analyze_distinct(&self.analyzer, &text)
            .into_iter()
            .collect();
        query
            .split_whitespace()
            .all(|word| match whole_and_parts(&self.analyzer, word) {
                None => true,
                Some((whole, parts)) => {
                    held.contains(&whole)
                        || (parts.len() > 1 && parts.iter().all(|p| held.contains(p)))
                }
            })
    }

    /// The stored record with this id in the engine's commit (L2), if any;
    /// not logged as a read.
    pub fn record(&self, id: &str) -> Result<Option<Record>> {
        crate::store::get_record(&self.searcher, &self.fields, id)
    }

    pub(crate) fn check_query(&self, query: &str) -> Result<()> {
        if query.len() > self.max_query_bytes {
            return Err(Error::Usage(format!(
                "the query is {} bytes, over the limit of {} (limits.max_query_bytes in config.toml)",
                query.len(),
                self.max_query_bytes
            )));
        }
        Ok(())
    }

    /// The words of `query` (as written, at most [`MAX_UNKNOWN_WORDS`]) that
    /// hold something no searched record holds in any text field: a
    /// technology, a name or a typo the store has never seen. A word counts
    /// as held when a record holds it whole, or holds every part of it (split
    /// at punctuation and camelCase, as the index splits it): `parseConfigV2`
    /// is named when no record holds it and one of `parse`, `config`, `v2` is
    /// new, `ischaemia/reperfusion` is not when both halves are known. A
    /// search's results for such a query match its other words only, which a
    /// model reading the answer should know. (A term held only by deleted
    /// records still counts as held, so a word is never named wrongly.)
    pub fn unknown_words(&self, query: &str) -> Vec<String> {
        let fields = self.fields.text_fields();
        let held = |term: &str| {
            fields.iter().any(|(field, _)| {
                self.searcher
                    .doc_freq(&Term::from_field_text(*field, term))
                    .is_ok_and(|df| df > 0)
            })
        };
        let mut unknown: Vec<String> = Vec::new();
        for word in query.split_whitespace() {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric());
            let Some((whole, parts)) = whole_and_parts(&self.analyzer, word) else {
                continue;
            };
            if held(&whole) || parts.iter().all(|part| held(part)) {
                continue;
            }
            if !unknown.iter().any(|w| w.eq_ignore_ascii_case(word)) {
                unknown.push(word.to_string());
            }
            if unknown.len() == MAX_UNKNOWN_WORDS {
                break;
            }
        }
        unknown
    }

    /// Distinct analyzed terms of the query, in order of first appearance.
    pub(crate) fn query_terms(&self, query: &str) -> Vec<String> {
        analyze_distinct(&self.analyzer, query)
    }

    /// Every term in every text field, with the field's boost; scores add up.
    /// On a large store, terms most records contain are only scored, not
    /// searched for (see [`SearchEngine::text_query_over`]).
    pub(crate) fn text_query(&self, terms: &[String]) -> Box<dyn Query> {
        self.text_query_over(terms, &self.searcher)
    }

    /// The text query with document frequencies from `stats` (one index, or L2
    /// and L3 together).
    ///
    /// Agents search with sentences ("now I'll write a failing test for the
    /// parser"), and on a store of a million records the words most of them
    /// contain (`i'll`, `the`, `for`, `test`) have posting lists of hundreds of
    /// thousands of entries each: scoring every record that holds only such
    /// words made BM25 at depth 100 take 12 ms p50 and 50-57 ms p99 at 1M
    /// records. Like Elasticsearch's common-terms query, a term in more than
    /// `common_term_share` of the records (0.1) is then only *scored*: a record
    /// must contain one of the query's other terms to be found, and its score
    /// is the same sum as before. With the store's defaults this changes
    /// nothing below `common_terms_from_records` (20,000) records, nor when
    /// every query term is common. Measured in the README (Benchmarks).
    pub(crate) fn text_query_over(
        &self,
        terms: &[String],
        stats: &dyn Bm25StatisticsProvider,
    ) -> Box<dyn Query> {
        if terms.is_empty() {
            return Box::new(EmptyQuery);
        }
        let (common, rare) = self.split_common(terms, stats);
        if common.is_empty() || rare.is_empty() {
            return Box::new(BooleanQuery::new(self.term_clauses(terms.iter())));
        }
        let rare = BooleanQuery::new(self.term_clauses(rare.into_iter()));
        let common = BooleanQuery::new(self.term_clauses(common.into_iter()));
        Box::new(BooleanQuery::new(vec![
            (Occur::Must, Box::new(rare) as Box<dyn Query>),
            (Occur::Should, Box::new(common)),
        ]))
    }

    /// The query terms in more than the configured share of records (by their
    /// frequency in `content`, the field every record has), and the others.
    fn split_common<'t>(
        &self,
        terms: &'t [String],
        stats: &dyn Bm25StatisticsProvider,
    ) -> (Vec<&'t String>, Vec<&'t String>) {
        let records = stats.total_num_docs().unwrap_or(0);
        if records < self.common_terms.from_records.max(1) {
            return (Vec::new(), terms.iter().collect());
        }
        let limit = self.common_terms.share * records as f64;
        terms.iter().partition(|term| {
            let term = Term::from_field_text(self.fields.content, term);
            stats.doc_freq(&term).is_ok_and(|df| df as f64 > limit)
        })
    }

    fn term_clauses<'t>(
        &self,
        terms: impl Iterator<Item = &'t String> + Clone,
    ) -> Vec<(Occur, Box<dyn Query>)> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for ((field, _), boost) in self.fields.text_fields().into_iter().zip(self.boosts) {
            if boost <= 0.0 {
                continue;
            }
            for term in terms.clone() {
                let query = TermQuery::new(
                    Term::from_field_text(field, term),
                    IndexRecordOption::WithFreqs,
                );
                let query: Box<dyn Query> = if (boost - 1.0).abs() < f32::EPSILON {
                    Box::new(query)
                } else {
                    Box::new(BoostQuery::new(Box::new(query), boost))
                };
                clauses.push((Occur::Should, query));
            }
        }
        clauses
    }

    fn top_docs(
        &self,
        text_query: &dyn Query,
        filters: &Filters,
        k: usize,
    ) -> Result<Vec<(f32, DocAddress)>> {
        let query = self.filtered(text_query, filters);
        Ok(self
            .searcher
            .search(&*query, &TopDocs::with_limit(k.max(1)).order_by_score())?)
    }

    /// The text query restricted by the filters, which do not change scores.
    pub(crate) fn filtered(&self, text_query: &dyn Query, filters: &Filters) -> Box<dyn Query> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text_query.box_clone())];
        for filter in filters::filter_queries(&self.fields, &self.analyzer, filters) {
            clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(filter, 0.0))));
        }
        if clauses.len() == 1 {
            return text_query.box_clone();
        }
        Box::new(BooleanQuery::new(clauses))
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

    /// Why a search returned nothing: empty store, no searchable words, filters, or no match.
    fn explain_empty(
        &self,
        terms: &[String],
        text_query: &dyn Query,
        filters: &Filters,
    ) -> Result<String> {
        if self.searcher.num_docs() == 0 {
            return Ok(match self.archived_records()? {
                0 => "the store is empty: add records with `knowledge-db add PATH`".into(),
                n => format!(
                    "no record is left in the searchable store (L2): all {n} record{} {} archived \
                     in L3; search them with `--tier all` (or `--tier l3`; over MCP, `tier: \"l3\"`), \
                     or bring them back with `knowledge-db restore`",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "is" } else { "are" },
                ),
            });
        }
        if terms.is_empty() {
            return Ok("the query has no searchable words (only punctuation or symbols)".into());
        }
        let unfiltered = self.count(text_query)?;
        if unfiltered == 0 {
            return Ok(format!(
                "no record in the store ({} records) contains any of the query's terms: {}",
                self.searcher.num_docs(),
                terms.join(", ")
            ));
        }
        let mut reasons = Vec::new();
        for (flag, single) in filters.each_alone() {
            let passing = self.count(&*self.filtered(text_query, &single))?;
            reasons.push(format!("{flag} keeps {passing}"));
        }
        let mut message = format!(
            "{unfiltered} record{} the query, but the filters exclude all of them ({})",
            if unfiltered == 1 {
                " matches"
            } else {
                "s match"
            },
            reasons.join("; ")
        );
        if filters.namespace.is_some() {
            message.push_str("; try --all-namespaces, or `knowledge-db stats` to list namespaces");
        }
        Ok(message)
    }

    /// How many records the archive (L3) holds.
    fn archived_records(&self) -> Result<u64> {
        let archive = crate::archive::Archive::new(&self.root);
        Ok(
            match crate::archive::l3::L3Index::open_existing(&archive)? {
                Some(index) => index.reader()?.searcher().num_docs(),
                None => 0,
            },
        )
    }
}

/// A word's analysed form as a whole (the first token: the tokenizer emits a
/// code word whole before its parts) and its parts (one position each, no
/// punctuation); `None` for a word with no searchable characters.
fn whole_and_parts(analyzer: &TextAnalyzer, word: &str) -> Option<(String, Vec<String>)> {
    let mut analyzer = analyzer.clone();
    let mut stream = analyzer.token_stream(word);
    let mut whole = None;
    let mut parts = Vec::new();
    while let Some(token) = stream.next() {
        whole.get_or_insert_with(|| token.text.clone());
        if token.position_length == 1 && token.text.chars().all(char::is_alphanumeric) {
            parts.push(token.text.clone());
        }
    }
    whole.map(|whole| (whole, parts))
}

/// Distinct analyzed terms of `text`, in order of first appearance.
fn analyze_distinct(analyzer: &TextAnalyzer, text: &str) -> Vec<String> {
    let mut analyzer = analyzer.clone();
    let mut stream = analyzer.token_stream(text);
    let mut terms: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while let Some(token) = stream.next() {
        if terms.len() >= MAX_QUERY_TERMS {
            break;
        }
        if seen.insert(token.text.clone()) {
            terms.push(token.text.clone());
        }
    }
    terms
}

pub(crate) fn hit(
    rank: usize,
    fused: &fusion::Fused<DocAddress>,
    record: Record,
    snippets: &SnippetGenerator,
) -> Hit {
    let mut snippet = snippets.snippet(&record.fields.content);
    if snippet.is_empty() {
        snippet = snippets.snippet(&record.display_text());
    }
    let (text, highlights) = if snippet.fragment().is_empty() {
        (
            leading_chars(&record.fields.content, SNIPPET_CHARS),
            Vec::new(),
        )
    } else {
        let ranges = merge_adjacent(snippet.highlighted().iter().map(|r| (r.start, r.end)));
        (snippet.fragment().to_string(), ranges)
    };
    let citation = record.citation();
    let f = record.fields;
    Hit {
        rank,
        id: record.id,
        kind: record.kind,
        namespace: record.namespace,
        project: f.project.filter(|p| !p.is_empty()),
        origin: f
            .origin
            .filter(|o| !o.is_empty() && o != crate::index::LOCAL_ORIGIN),
        score: fused.score,
        scores: ScoreParts {
            bm25: fused.bm25.map(|(s, _)| s),
            bm25_rank: fused.bm25.map(|(_, r)| r),
            vector: fused.vector.map(|(s, _)| s),
            vector_rank: fused.vector.map(|(_, r)| r),
            fused: fused.score,
            cosine: fused.vector.map(|(s, _)| s),
            coverage: None,
        },
        title: f.title,
        snippet: text,
        highlights,
        session_id: f.session_id,
        start_turn: f.start_turn,
        end_turn: f.end_turn,
        timestamp: f.timestamp.map(format_time),
        tier: record.tier.as_str(),
        files: f.files,
        citation,
        copies: 1,
        duplicates: Vec::new(),
        weak: false,
    }
}

/// Joins touching or overlapping ranges: `parse` + `Config` highlight as `parseConfig`.
fn merge_adjacent(ranges: impl Iterator<Item = (usize, usize)>) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (start, end) in ranges {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// The first `n` characters of `text`, cut at a word boundary where possible.
fn leading_chars(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let cut: String = text.chars().take(n).collect();
    match cut.rfind(char::is_whitespace) {
        Some(i) if i > n / 2 => format!("{}…", &cut[..i]),
        _ => format!("{cut}…"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_highlights_merge() {
        let merged = merge_adjacent([(0, 5), (5, 11), (13, 15), (14, 18)].into_iter());
        assert_eq!(merged, [(0, 11), (13, 18)]);
    }

    #[test]
    fn coverage_weighs_the_query_terms_a_record_holds_by_their_rarity() {
        use crate::embed::{HashEmbedder, DIM};
        use crate::error::Origin;
        use crate::record::{parse_record, ParseOptions};
        let dir = tempfile::tempdir().expect("tmp");
        let store = Store::init(&dir.path().join("s")).expect("init");
        let note = |id: &str, text: &str| {
            let value = serde_json::json!({"id": id, "title": "", "text": text});
            parse_record(value, &Origin::file("test"), &ParseOptions::default()).expect("record")
        };
        let mut records = vec![
            note("both", "the rollback of the migration"),
            note("rare", "a rollback plan"),
            note("common", "the migration the migration the migration"),
            note("none", "unrelated words"),
        ];
        // Pad the store so "migration" is common and "rollback" rare.
        records.extend((0..6).map(|i| note(&format!("pad{i}"), "another migration")));
        let mut embedder = HashEmbedder::new(DIM);
        store
            .add(
                records,
                Some(&mut embedder),
                std::time::Duration::from_secs(5),
            )
            .expect("add");
        let engine = SearchEngine::new(&store).expect("engine");
        let (_, pool) = engine
            .candidate_pool("rollback migration", &Filters::default(), 20)
            .expect("pool");
        let coverage = |id: &str| {
            pool.iter()
                .find(|c| engine.record_id(c.doc).expect("id") == id)
                .map(|c| c.coverage)
        };
        assert_eq!(coverage("both"), Some(1.0));
        let (rare, common) = (
            coverage("rare").expect("rare"),
            coverage("common").expect("common"),
        );
        // Holding the rare word counts for more than repeating the common one.
        assert!(rare > 0.5 && common < 0.5, "{rare} {common}");
        assert!((rare + common - 1.0).abs() < 1e-6, "{rare} {common}");
        assert_eq!(coverage("none"), None, "BM25 alone: no term, no candidate");
    }

    #[test]
    fn leading_chars_cuts_at_a_word() {
        assert_eq!(leading_chars("short", 10), "short");
        assert_eq!(leading_chars("alpha beta gamma", 12), "alpha beta…");
    }
}
