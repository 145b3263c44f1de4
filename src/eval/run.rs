//! One ranking configuration measured over the judged queries: quality with and
//! without the minimum score, agent questions' session and evidence hits, and
//! latency; and how a ranking answers queries that have no relevant record.

use std::collections::{BTreeMap, HashMap};

use knowledge_db::error::Result;
use knowledge_db::search::batch::{run_batch, BatchQuery};
use knowledge_db::search::fusion::Fusion;
use knowledge_db::search::{Filters, Mode, RankOptions, SearchEngine};
use knowledge_db::store::Store;

use super::judgements::Judgements;
use super::{metrics, AbstentionReport, AgentScores, Quality, RunReport, DEPTH};

/// The session of a record, looked up once per record.
pub(super) struct SessionOf<'a> {
    store: &'a Store,
    known: HashMap<String, Option<String>>,
}

impl<'a> SessionOf<'a> {
    pub(super) fn new(store: &'a Store) -> Self {
        SessionOf {
            store,
            known: HashMap::new(),
        }
    }

    fn of(&mut self, id: &str) -> Result<Option<String>> {
        if let Some(known) = self.known.get(id) {
            return Ok(known.clone());
        }
        let session = self.store.get(id)?.and_then(|r| r.fields.session_id);
        self.known.insert(id.to_string(), session.clone());
        Ok(session)
    }
}

/// The share of `negatives` answered with nothing by the ranking `rank`.
pub(super) fn abstention(
    engine: &SearchEngine,
    negatives: &[BatchQuery],
    rank: &RankOptions,
    min_score: Option<f32>,
    vectors: bool,
) -> Result<AbstentionReport> {
    let mut report = AbstentionReport {
        queries: 0,
        answered_nothing: 0,
        share: 0.0,
        min_score: min_score
            .unwrap_or_else(|| knowledge_db::search::default_min_score(rank, vectors)),
        by_kind: BTreeMap::new(),
    };
    let filters = Filters {
        min_score,
        ..Filters::default()
    };
    for query in negatives {
        let nothing = engine
            .search_ranked_ids(&query.text, 10, &filters, rank)?
            .is_empty();
        report.queries += 1;
        report.answered_nothing += usize::from(nothing);
        let kind = query.scope("kind").unwrap_or_else(|| "all".into());
        let entry = report.by_kind.entry(kind).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += usize::from(nothing);
    }
    report.share = report.answered_nothing as f64 / report.queries.max(1) as f64;
    Ok(report)
}

/// The runs asked for, as they can run: without vectors, hybrid is BM25 (as in
/// `search`) and vector-only runs are dropped.
pub(super) fn runs_possible(asked: &[RankOptions], vectors: bool) -> Vec<RankOptions> {
    let asked = if asked.is_empty() {
        vec![RankOptions::default()]
    } else {
        asked.to_vec()
    };
    if vectors {
        return asked;
    }
    let bm25 = RankOptions {
        mode: Mode::Bm25,
        ..Default::default()
    };
    if asked.iter().any(|r| r.mode != Mode::Vector) {
        vec![bm25]
    } else {
        Vec::new()
    }
}

/// One ranking configuration under evaluation.
pub(super) struct Run<'a> {
    pub(super) engine: &'a SearchEngine,
    pub(super) rank: &'a RankOptions,
    pub(super) scope_field: Option<&'a str>,
    /// Results under this count as not returned.
    pub(super) min_score: f32,
}

impl Run<'_> {
    /// Runs every judged query and measures the ranking, with and without the
    /// minimum score (one search each: the minimum only cuts the tail).
    pub(super) fn judged(
        &self,
        judged: &[BatchQuery],
        judgements: &Judgements,
        group_by: Option<&str>,
        sessions: &mut SessionOf,
        progress: &mut dyn FnMut(&str, usize, usize),
    ) -> Result<RunReport> {
        let total = judged.len();
        let group_of: HashMap<&str, String> = match group_by {
            Some(field) => judged
                .iter()
                .filter_map(|q| q.scope(field).map(|g| (q.id.as_str(), g)))
                .collect(),
            None => HashMap::new(),
        };
        let kind_of: HashMap<&str, String> = judged
            .iter()
            .map(|q| {
                (
                    q.id.as_str(),
                    q.scope("kind").unwrap_or_else(|| "all".into()),
                )
            })
            .collect();
        let mut overall = Quality::default();
        let mut unfiltered = Quality::default();
        let mut groups: BTreeMap<String, Quality> = BTreeMap::new();
        let mut agent = AgentScores::default();
        let mut agent_by_kind: BTreeMap<String, AgentScores> = BTreeMap::new();
        let mut latencies = Vec::with_capacity(total);
        let filters = Filters {
            min_score: Some(0.0),
            ..Filters::default()
        };
        let mut outcome = Ok(());
        run_batch(
            self.engine,
            judged,
            DEPTH,
            &filters,
            self.rank,
            self.scope_field,
            |result| {
                latencies.push(result.took_ms);
                progress("searching", latencies.len(), total);
                let Some(rels) = judgements.records.get(&result.query_id) else {
                    return Ok(());
                };
                let all: Vec<String> = result.results.iter().map(|r| credited(r, rels)).collect();
                let kept: Vec<&knowledge_db::search::batch::RankedId> = result
                    .results
                    .iter()
                    .filter(|r| r.score >= self.min_score)
                    .collect();
                let ranked: Vec<String> = kept.iter().map(|r| credited(r, rels)).collect();
                overall.add(&ranked, rels);
                unfiltered.add(&all, rels);
                if let Some(group) = group_of.get(result.query_id.as_str()) {
                    groups.entry(group.clone()).or_default().add(&ranked, rels);
                }
                if let Some(answers) = judgements
                    .sessions
                    .as_ref()
                    .and_then(|s| s.get(&result.query_id))
                {
                    match agent_hits(&kept, rels, answers, sessions) {
                        Ok((session_hit, evidence_hit)) => {
                            agent.add(session_hit, evidence_hit);
                            let kind = kind_of.get(result.query_id.as_str()).cloned();
                            agent_by_kind
                                .entry(kind.unwrap_or_default())
                                .or_default()
                                .add(session_hit, evidence_hit);
                        }
                        Err(e) => outcome = Err(e),
                    }
                }
                Ok(())
            },
        )?;
        outcome?;
        let hybrid = self.rank.mode == Mode::Hybrid;
        Ok(RunReport {
            mode: self.rank.mode,
            fusion: hybrid.then_some(self.rank.fusion),
            alpha: (hybrid && matches!(self.rank.fusion, Fusion::Linear | Fusion::Zscore))
                .then_some(self.rank.alpha),
            quality: overall.finish(),
            groups: groups.into_iter().map(|(k, q)| (k, q.finish())).collect(),
            min_score: self.min_score,
            without_minimum: (self.min_score > 0.0).then(|| unfiltered.finish()),
            agent: judgements.sessions.is_some().then(|| agent.finish()),
            agent_by_kind: agent_by_kind
                .into_iter()
                .map(|(k, a)| (k, a.finish()))
                .collect(),
            latency_ms_p50: metrics::percentile(&latencies, 50.0),
            latency_ms_p95: metrics::percentile(&latencies, 95.0),
            latency_ms_p99: metrics::percentile(&latencies, 99.0),
        })
    }
}

/// The id a hit is judged by: its own when judged relevant, else that of a
/// relevant copy folded into it (the hit shows that copy's text), else its own.
pub(super) fn credited(
    hit: &knowledge_db::search::batch::RankedId,
    rels: &HashMap<String, f64>,
) -> String {
    let relevant = |id: &String| rels.get(id).is_some_and(|&g| g > 0.0);
    if relevant(&hit.id) {
        return hit.id.clone();
    }
    hit.duplicates
        .iter()
        .find(|id| relevant(id))
        .unwrap_or(&hit.id)
        .clone()
}

/// Whether an answer session is among the sessions of the top 5 hits, and an
/// evidence record among the top 10 (a hit counts for the copies folded into it).
fn agent_hits(
    hits: &[&knowledge_db::search::batch::RankedId],
    evidence: &HashMap<String, f64>,
    answers: &std::collections::HashSet<String>,
    sessions: &mut SessionOf,
) -> Result<(bool, bool)> {
    let ids_of = |hit: &knowledge_db::search::batch::RankedId| {
        std::iter::once(hit.id.clone())
            .chain(hit.duplicates.iter().cloned())
            .collect::<Vec<_>>()
    };
    let mut session_hit = false;
    for hit in hits.iter().take(5) {
        for id in ids_of(hit) {
            if sessions.of(&id)?.is_some_and(|s| answers.contains(&s)) {
                session_hit = true;
            }
        }
    }
    let evidence_hit = hits
        .iter()
        .take(10)
        .flat_map(|hit| ids_of(hit))
        .any(|id| evidence.get(&id).is_some_and(|&g| g > 0.0));
    Ok((session_hit, evidence_hit))
}

/// The rankings `--compare` measures: each retriever alone, RRF, linear
/// (min-max) and z-score fusion at several weights, and the calibrated default.
pub fn comparison_runs() -> Vec<RankOptions> {
    let mut runs = vec![
        RankOptions {
            mode: Mode::Bm25,
            ..Default::default()
        },
        RankOptions {
            mode: Mode::Vector,
            ..Default::default()
        },
        RankOptions {
            mode: Mode::Hybrid,
            fusion: Fusion::Rrf,
            alpha: 0.5,
        },
    ];
    for fusion in [Fusion::Linear, Fusion::Zscore] {
        for alpha in [0.3, 0.4, 0.5] {
            runs.push(RankOptions {
                mode: Mode::Hybrid,
                fusion,
                alpha,
            });
        }
    }
    // The default last: the headline of abstention (`--negatives`).
    runs.push(RankOptions::default());
    runs
}
