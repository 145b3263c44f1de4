//! Ranking: from a query's candidates to the best `k` hits.
//!
//! Both retrievers (BM25 here, the vector side on a second thread) return their
//! best candidates; their union is scored, by the calibrated relevance model
//! (with the signals it reads: exact BM25 and cosine for every candidate, the
//! query's identifiers and dates, coverage of the query's terms, the turns the
//! best candidates reply to) or by an uncalibrated fusion; copies of one text
//! fold into one hit ([`super::dedup`]); hits under the minimum score are
//! counted, not kept.

use std::collections::HashMap;

use tantivy::query::Query;
use tantivy::schema::Field;
use tantivy::{DocAddress, TantivyDocument};

use super::fusion::{self, Fusion};
use super::scope::Statistics;
use super::{
    candidates, dates, dedup, default_min_score, everyday, neighbours, relevance, Filters, Mode,
    RankOptions, SearchEngine,
};
use crate::error::{Error, Result};

/// Candidates each retriever contributes to fusion.
const FUSION_DEPTH: usize = 100;

/// Candidates a single retriever fetches for `k` results: spares for the
/// duplicates that fold into a hit.
fn single_depth(k: usize) -> usize {
    k.saturating_mul(3).max(k + 20)
}

/// One hit of a ranking and the candidates that repeat its text.
pub(super) struct RankedHit {
    pub fused: fusion::Fused<DocAddress>,
    /// The candidate's exact cosine and its coverage of the query.
    pub cosine: Option<f32>,
    pub coverage: f32,
    pub copies: Vec<DocAddress>,
    /// Under the default minimum score.
    pub weak: bool,
}

/// The BM25 half of a search: the query's terms, the text query over them,
/// and the statistics it is scored with (the index's or a namespace's).
#[derive(Clone, Copy)]
pub(super) struct TextSide<'a> {
    pub terms: &'a [String],
    pub query: &'a dyn Query,
    pub stats: &'a Statistics<'a>,
}

/// A query's BM25 half, owned: its terms, the statistics it is scored with
/// and the text query over them; [`TextPlan::side`] lends it as a [`TextSide`].
pub(super) struct TextPlan<'e> {
    pub terms: Vec<String>,
    pub stats: Statistics<'e>,
    pub query: Box<dyn Query>,
}

impl TextPlan<'_> {
    /// The plan, borrowed as the ranking takes it.
    pub fn side(&self) -> TextSide<'_> {
        TextSide {
            terms: &self.terms,
            query: &*self.query,
            stats: &self.stats,
        }
    }
}

impl SearchEngine {
    /// Checks `query`, then builds its BM25 half scored with the statistics
    /// of the records `filters` keep (a namespace's, or the index's).
    pub(super) fn text_plan(&self, query: &str, filters: &Filters) -> Result<TextPlan<'_>> {
        self.check_query(query)?;
        let terms = self.query_terms(query);
        let stats = self.statistics(filters)?;
        let query = self.text_query_over(&terms, &stats);
        Ok(TextPlan {
            terms,
            stats,
            query,
        })
    }
}

/// The hits of one search, and what the minimum score left out.
pub(super) struct Ranking {
    pub hits: Vec<RankedHit>,
    /// The minimum applied (0 when none).
    pub min_score: f32,
    /// Hits left out for scoring under it.
    pub below_min: usize,
    /// The best candidate's score, when there was a candidate.
    pub best_score: Option<f32>,
}

impl SearchEngine {
    /// The ranking of both retrievers, or of one, as `rank` asks: candidates
    /// scored, copies of one text folded into one hit, the best `k` hits at or
    /// above the minimum score.
    pub(super) fn ranked(
        &self,
        query: &str,
        text: TextSide<'_>,
        k: usize,
        filters: &Filters,
        rank: &RankOptions,
    ) -> Result<Ranking> {
        let TextSide {
            terms,
            query: text_query,
            stats,
        } = text;
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
            (_, None) => (
                self.top_docs(text_query, filters, depth, stats)?,
                Vec::new(),
                None,
            ),
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
                let bm25 = self.top_docs(text_query, filters, depth, stats);
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
                candidates::fill_bm25(&self.searcher, stats, text_query, &mut pool)?;
            }
            if let (Some(side), Some(v)) = (vector_side, &query_vector) {
                self.fill_cosines(side, v, &mut pool)?;
            }
            self.mark_identifiers(query, &mut pool)?;
            self.mark_dates(query, &mut pool)?;
            let idfs = self.question_weights(terms, stats);
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
        self.order_ties_by_id(&mut order, &scores, &pool)?;
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

    /// Orders equal scores by id, not by where the records happen to be
    /// stored: a merge of segments, or another namespace's records written in
    /// between, must not reorder them. `order` is sorted by score, best
    /// first; only the candidates of a run of equal scores have their ids
    /// read (reading one costs a lookup in its segment's id dictionary: for
    /// every candidate of a pool of 200, about two thirds of a hybrid
    /// search's instructions).
    fn order_ties_by_id(
        &self,
        order: &mut [usize],
        scores: &[f32],
        pool: &[candidates::Candidate],
    ) -> Result<()> {
        for run in order.chunk_by_mut(|&a, &b| scores[a].total_cmp(&scores[b]).is_eq()) {
            if run.len() < 2 {
                continue;
            }
            let segment = pool[run[0]].doc.segment_ord;
            if run.iter().all(|&i| pool[i].doc.segment_ord == segment) {
                // One segment's id dictionary is sorted: its ordinals are in
                // the order of the ids, and cost no dictionary lookup.
                run.sort_by_key(|&i| self.id_ordinal(pool[i].doc));
                continue;
            }
            let mut by_id: Vec<(String, usize)> = run
                .iter()
                .map(|&i| Ok((self.id_of(pool[i].doc)?, i)))
                .collect::<Result<_>>()?;
            // Stable: equal ids keep their order by document.
            by_id.sort_by(|a, b| a.0.cmp(&b.0));
            for (slot, (_, i)) in run.iter_mut().zip(by_id) {
                *slot = i;
            }
        }
        Ok(())
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

    /// What each query term weighs in coverage and in the normalised BM25
    /// score: its IDF over the store's records and English's (see
    /// [`super::english`]); without English, an everyday word's capped (see
    /// [`everyday`]). Taken from `stats`: a search in one namespace weighs
    /// its words by that namespace's records alone.
    fn question_weights(&self, terms: &[String], stats: &Statistics<'_>) -> Vec<f32> {
        let idfs = candidates::term_idfs(
            stats,
            stats.live_docs(),
            self.fields.content,
            terms,
            &self.english,
        );
        if self.english.is_on() {
            idfs
        } else {
            everyday::question_weights(terms, &idfs)
        }
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

    /// Every candidate of a hybrid search, each with its exact BM25 score and
    /// cosine similarity, and the query's signals (for evaluation and for
    /// fitting the relevance model: `eval --dump-candidates`).
    pub fn candidate_pool(
        &self,
        query: &str,
        filters: &Filters,
        depth: usize,
    ) -> Result<(candidates::QuerySignals, Vec<candidates::Candidate>)> {
        let TextPlan {
            terms,
            stats,
            query: text_query,
        } = self.text_plan(query, filters)?;
        let idfs = self.question_weights(&terms, &stats);
        let bm25 = self.top_docs(&*text_query, filters, depth, &stats)?;
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
        candidates::fill_bm25(&self.searcher, &stats, &*text_query, &mut pool)?;
        if let (Some(side), Some(v)) = (&self.vectors, &query_vector) {
            self.fill_cosines(side, v, &mut pool)?;
        }
        self.mark_identifiers(query, &mut pool)?;
        self.mark_dates(query, &mut pool)?;
        self.mark_coverage(&terms, &idfs, &mut pool)?;
        Ok((candidates::QuerySignals::from_idfs(&idfs), pool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn equal_scores_are_ordered_by_id_within_and_across_segments() {
        use crate::error::Origin;
        use crate::record::{parse_record, ParseOptions};
        let dir = tempfile::tempdir().expect("tmp");
        let store = Store::init(&dir.path().join("s")).expect("init");
        let note = |id: &str, text: &str| {
            let value = serde_json::json!({"id": id, "title": "", "text": text});
            parse_record(value, &Origin::file("test"), &ParseOptions::default()).expect("record")
        };
        let copies = "the rollback of the billing migration";
        let alone = "a zebra crossing near the harbour";
        // Two adds, two segments: documents stored out of id order, the
        // copies of one text in both segments, those of the other in one.
        let batches = [
            vec![
                note("c", copies),
                note("z2", alone),
                note("a", copies),
                note("z1", alone),
            ],
            vec![
                note("d", copies),
                note("b", copies),
                note("pad", "unrelated words"),
            ],
        ];
        for batch in batches {
            store
                .add(batch, None, std::time::Duration::from_secs(5))
                .expect("add");
        }
        let engine = SearchEngine::new(&store).expect("engine");
        // Each add writes one segment per indexing thread that got records.
        assert!(engine.searcher().segment_readers().len() >= 2);
        let rank = RankOptions {
            mode: Mode::Bm25,
            ..RankOptions::default()
        };
        let order = |query: &str| {
            let hits = engine
                .search_ranked_ids(query, 10, &Filters::default(), &rank)
                .expect("search");
            let mut ids = vec![hits[0].id.clone()];
            ids.extend(hits[0].duplicates.iter().cloned());
            ids
        };
        assert_eq!(order("billing migration rollback"), ["a", "b", "c", "d"]);
        assert_eq!(order("zebra harbour"), ["z1", "z2"]);
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
}
