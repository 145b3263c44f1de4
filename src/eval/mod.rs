//! Evaluation on BEIR-layout data: the yardstick for every ranking change.
//!
//! A BEIR folder holds `corpus.jsonl` (documents), `queries.jsonl` and
//! `qrels/*.tsv` (which documents answer which query). `eval` builds a temporary
//! store from the corpus, runs every query that has judgements, and reports
//! nDCG@10, Recall@5/10/100, MRR@10 and search latency. When queries carry a
//! metadata field that documents share (LoCoMo's `conv`), each query searches only
//! its own namespace, as a per-conversation memory would.
//!
//! Two more layouts and measures:
//! - **Agent questions** (`dev-sets/agent-questions`): instead of a corpus, a
//!   `transcripts.txt` lists agent transcripts (paths relative to the folder),
//!   ingested as `ingest` would; `qrels/records.tsv` names each question's
//!   evidence records and `qrels/sessions.tsv` its answer sessions. Reported per
//!   question kind (`metadata.kind`): session hit@5 (an answer session among
//!   the top 5 hits) and evidence hit@10 (an evidence record among the top 10,
//!   a hit counting for the copies folded into it), for BM25 and the default
//!   ranking side by side.
//! - **Abstention** (`--negatives FILE`): queries with no relevant record; the
//!   share answered with nothing at the default minimum score. Every run also
//!   reports its quality without the minimum, so the cost of abstaining shows.
//!
//! Each part is a room of its own: `corpus.rs` (where the documents come from
//! and how they are added), `judgements.rs` (the qrels), `run.rs` (one ranking
//! measured over the judged queries, and abstention), `candidates.rs` (the
//! candidate dump for fitting the relevance model). This file holds the reports,
//! the options and the evaluation's frame.

mod candidates;
mod corpus;
mod judgements;
pub mod metrics;
mod run;
mod times;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::Serialize;

use knowledge_db::embed::Embedder;
use knowledge_db::error::{Error, Result};
use knowledge_db::search::batch::{read_queries, BatchQuery};
use knowledge_db::search::fusion::Fusion;
use knowledge_db::search::{Mode, RankOptions, SearchEngine};
use knowledge_db::store::Store;

use candidates::dump_candidates;
use corpus::{detect_scope_field, Corpus};
use judgements::Judgements;
pub use run::comparison_runs;
use run::{abstention, runs_possible, Run, SessionOf};

/// How deep each query's ranking goes (the largest cut-off reported).
const DEPTH: usize = 100;

/// The numbers of one evaluation run.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub dataset: String,
    pub documents: usize,
    pub scope_field: Option<String>,
    /// Whether vectors took part: `used`, or why not.
    pub vector: String,
    /// The first (or only) ranking measured.
    #[serde(flatten)]
    pub headline: RunReport,
    /// Every ranking measured, with `--compare`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comparison: Vec<RunReport>,
    /// Time to add the corpus (0 when an existing store was reused).
    pub add_seconds: f64,
    pub add_records_per_second: f64,
    /// Texts embedded while adding.
    pub embedded: usize,
    /// How the headline ranking answered queries that have no relevant record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abstention: Option<AbstentionReport>,
}

/// Queries with no relevant record, and how many got an empty answer.
#[derive(Debug, Clone, Serialize)]
pub struct AbstentionReport {
    pub queries: usize,
    pub answered_nothing: usize,
    pub share: f64,
    /// The minimum score the searches applied.
    pub min_score: f32,
    /// Per `metadata.kind` of the queries: (queries, answered with nothing).
    pub by_kind: BTreeMap<String, (usize, usize)>,
}

/// Session and evidence hits of agent questions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentScores {
    pub queries: usize,
    /// Share of questions with an answer session among the top 5 hits.
    pub session_hit_at_5: f64,
    /// Share of questions with an evidence record among the top 10 hits.
    pub evidence_hit_at_10: f64,
}

impl AgentScores {
    fn add(&mut self, session_hit: bool, evidence_hit: bool) {
        self.queries += 1;
        self.session_hit_at_5 += f64::from(u8::from(session_hit));
        self.evidence_hit_at_10 += f64::from(u8::from(evidence_hit));
    }

    fn finish(mut self) -> AgentScores {
        let n = self.queries.max(1) as f64;
        self.session_hit_at_5 /= n;
        self.evidence_hit_at_10 /= n;
        self
    }
}

/// Mean retrieval quality over a set of queries.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Quality {
    pub queries: usize,
    pub ndcg_at_10: f64,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    pub recall_at_100: f64,
    pub mrr_at_10: f64,
}

impl Quality {
    /// Adds one query's ranking; call [`Quality::finish`] after the last.
    fn add(&mut self, ranked: &[String], rels: &HashMap<String, f64>) {
        self.queries += 1;
        self.ndcg_at_10 += metrics::ndcg_at(10, ranked, rels);
        self.recall_at_5 += metrics::recall_at(5, ranked, rels);
        self.recall_at_10 += metrics::recall_at(10, ranked, rels);
        self.recall_at_100 += metrics::recall_at(100, ranked, rels);
        self.mrr_at_10 += metrics::mrr_at(10, ranked, rels);
    }

    /// Turns the sums into means.
    fn finish(mut self) -> Quality {
        let n = self.queries.max(1) as f64;
        for value in [
            &mut self.ndcg_at_10,
            &mut self.recall_at_5,
            &mut self.recall_at_10,
            &mut self.recall_at_100,
            &mut self.mrr_at_10,
        ] {
            *value /= n;
        }
        self
    }
}

/// Options of an evaluation run.
#[derive(Debug, Clone, Default)]
pub struct EvalOptions {
    pub corpus_dir: PathBuf,
    /// Scope queries by this metadata field; `None` detects it.
    pub scope_field: Option<String>,
    /// Never scope, even if a field is detected.
    pub no_scope: bool,
    /// Build the store here and keep it; an existing store there is reused as is.
    pub store_dir: Option<PathBuf>,
    /// Also report quality per value of this query metadata field.
    pub group_by: Option<String>,
    /// The rankings to measure; the first is the headline.
    pub runs: Vec<RankOptions>,
    /// Write every judged query's candidates with their signals and grades
    /// here (JSON lines), for fitting the relevance model.
    pub dump_candidates: Option<PathBuf>,
    /// Queries with no relevant record (a BEIR queries file): the share of them
    /// answered with nothing measures abstention.
    pub negatives: Option<PathBuf>,
    /// The minimum score of every run; `None`: each fusion's default.
    pub min_score: Option<f32>,
}

/// Quality and latency of one ranking configuration.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub mode: Mode,
    pub fusion: Option<Fusion>,
    pub alpha: Option<f32>,
    #[serde(flatten)]
    pub quality: Quality,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, Quality>,
    /// The minimum score applied; results under it count as not returned.
    pub min_score: f32,
    /// The same ranking with no minimum score (present when one applied).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub without_minimum: Option<Quality>,
    /// Agent questions: session and evidence hits, overall and by kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentScores>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub agent_by_kind: BTreeMap<String, AgentScores>,
    pub latency_ms_p50: f64,
    pub latency_ms_p95: f64,
    pub latency_ms_p99: f64,
}

impl RunReport {
    /// `bm25`, `vector`, `rrf`, `linear a=0.3`.
    pub fn label(&self) -> String {
        match (self.mode, self.fusion, self.alpha) {
            (Mode::Hybrid, Some(Fusion::Linear), Some(a)) => format!("linear a={a}"),
            (Mode::Hybrid, Some(Fusion::Zscore), Some(a)) => format!("zscore a={a}"),
            (Mode::Hybrid, Some(Fusion::Rrf), _) => "rrf".into(),
            (Mode::Hybrid, Some(Fusion::Calibrated), _) => "calibrated".into(),
            (Mode::Vector, ..) => "vector".into(),
            _ => "bm25".into(),
        }
    }
}

/// Runs an evaluation; `progress` hears about phases ("adding", "searching").
pub fn evaluate(
    options: &EvalOptions,
    embedder: std::result::Result<Box<dyn Embedder>, String>,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<EvalReport> {
    let dir = &options.corpus_dir;
    let corpus = Corpus::of(dir)?;
    let queries = read_queries(&dir.join("queries.jsonl"))?;
    let judgements = Judgements::read(&dir.join("qrels"))?;
    let scope_field = match (&corpus, options.no_scope, &options.scope_field) {
        (_, true, _) | (Corpus::Transcripts(_), ..) => None,
        (_, false, Some(field)) => Some(field.clone()),
        (Corpus::Beir(path), false, None) => detect_scope_field(path, &queries)?,
    };

    let temp;
    let store_dir = match &options.store_dir {
        Some(d) => d.clone(),
        None => {
            temp = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
            temp.path().join("store")
        }
    };
    let mut embedder = embedder;
    let (store, added) = if store_dir.join("config.toml").exists() {
        (Store::open(&store_dir)?, None)
    } else {
        let store = Store::init(&store_dir)?;
        progress("adding", 0, 0);
        let model = embedder
            .as_mut()
            .ok()
            .map(|e| e.as_mut() as &mut dyn Embedder);
        let added = corpus.add_to(&store, scope_field.clone(), model, progress)?;
        (store, Some(added))
    };

    let judged: Vec<BatchQuery> = queries
        .into_iter()
        .filter(|q| {
            judgements
                .records
                .get(&q.id)
                .is_some_and(|r| r.values().any(|&v| v > 0.0))
        })
        .collect();
    let engine = SearchEngine::with_embedder(&store, embedder)?;
    let negatives = match &options.negatives {
        Some(path) => read_queries(path)?,
        None => Vec::new(),
    };
    if let Some(path) = &options.dump_candidates {
        let mut all = judged.clone();
        all.extend(negatives.iter().cloned());
        dump_candidates(
            &engine,
            &all,
            &judgements.records,
            scope_field.as_deref(),
            path,
        )?;
    }
    let bm25 = RankOptions {
        mode: Mode::Bm25,
        ..RankOptions::default()
    };
    let mut asked = options.runs.clone();
    if asked.is_empty() {
        asked.push(RankOptions::default());
    }
    if judgements.sessions.is_some() && !asked.iter().any(|r| r.mode == Mode::Bm25) {
        // Agent questions: words alone beside the ranking asked for.
        asked.insert(0, bm25);
    }
    let vectors = engine.vector_status() == "used";
    let runs = runs_possible(&asked, vectors);
    let mut sessions = SessionOf::new(&store);
    let mut reports = Vec::with_capacity(runs.len());
    for rank in &runs {
        let run = Run {
            engine: &engine,
            rank,
            scope_field: scope_field.as_deref(),
            min_score: options
                .min_score
                .unwrap_or_else(|| knowledge_db::search::default_min_score(rank, vectors)),
        };
        reports.push(run.judged(
            &judged,
            &judgements,
            options.group_by.as_deref(),
            &mut sessions,
            progress,
        )?);
    }
    let Some(headline) = reports.first().cloned() else {
        return Err(Error::Usage(format!(
            "nothing to evaluate: vectors are {}",
            engine.vector_status()
        )));
    };
    let abstention = match (negatives.is_empty(), runs.last()) {
        (false, Some(rank)) => Some(abstention(
            &engine,
            &negatives,
            rank,
            options.min_score,
            vectors,
        )?),
        _ => None,
    };
    let documents = store.l2_stats()?.records as usize;
    Ok(EvalReport {
        dataset: dir.display().to_string(),
        documents,
        scope_field,
        vector: engine.vector_status().to_string(),
        headline,
        comparison: if reports.len() > 1 {
            reports
        } else {
            Vec::new()
        },
        add_seconds: added.as_ref().map_or(0.0, |a| a.seconds),
        add_records_per_second: added
            .as_ref()
            .map_or(0.0, |a| a.records as f64 / a.seconds.max(1e-9)),
        embedded: added.as_ref().map_or(0, |a| a.embedded),
        abstention,
    })
}
