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

pub mod metrics;
mod times;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use knowledge_db::embed::Embedder;
use knowledge_db::error::{Error, Result};
use knowledge_db::load::add_paths;
use knowledge_db::record::ParseOptions;
use knowledge_db::search::batch::{read_queries, run_batch, BatchQuery};
use knowledge_db::search::fusion::Fusion;
use knowledge_db::search::{Filters, Mode, RankOptions, SearchEngine};
use knowledge_db::store::Store;
use knowledge_db::transcript::ingest::{ingest, IngestOptions};

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

/// Where the documents of an evaluation come from.
enum Corpus {
    /// A BEIR `corpus.jsonl`.
    Beir(PathBuf),
    /// Agent transcripts, ingested as `knowledge-db ingest` would.
    Transcripts(Vec<PathBuf>),
}

/// What adding a corpus took.
struct Added {
    records: usize,
    seconds: f64,
    embedded: usize,
}

impl Corpus {
    /// `transcripts.txt` when the folder has one, else `corpus.jsonl`.
    fn of(dir: &Path) -> Result<Corpus> {
        let list = dir.join("transcripts.txt");
        if !list.is_file() {
            return Ok(Corpus::Beir(dir.join("corpus.jsonl")));
        }
        let text = std::fs::read_to_string(&list).map_err(|e| Error::io(&list, e))?;
        let mut files = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let path = dir.join(line);
            if !path.is_file() {
                return Err(Error::Usage(format!(
                    "{}:{}: no transcript at {} (the evaluation data lives in ../shared/eval beside the checkout)",
                    list.display(),
                    i + 1,
                    path.display()
                )));
            }
            files.push(path);
        }
        Ok(Corpus::Transcripts(files))
    }

    fn add_to(
        &self,
        store: &Store,
        namespace_field: Option<String>,
        embedder: Option<&mut dyn Embedder>,
        progress: &mut dyn FnMut(&str, usize, usize),
    ) -> Result<Added> {
        let started = std::time::Instant::now();
        match self {
            Corpus::Beir(path) => {
                let copy = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
                let path = times::with_record_times(path, copy.path())?.unwrap_or(path.clone());
                let parse = ParseOptions {
                    namespace_field,
                    added_at: knowledge_db::now_rfc3339(),
                    ..ParseOptions::default()
                };
                let added = add_paths(
                    store,
                    std::slice::from_ref(&path),
                    &mut std::io::empty(),
                    &parse,
                    embedder,
                    Duration::from_secs(30),
                )?;
                Ok(Added {
                    records: added.records,
                    seconds: added.seconds,
                    embedded: added.report.embedded,
                })
            }
            Corpus::Transcripts(files) => {
                let options = IngestOptions {
                    format: None,
                    namespace: knowledge_db::record::DEFAULT_NAMESPACE.to_string(),
                    dry_run: false,
                    full: false,
                };
                let report = ingest(
                    Some(store),
                    files,
                    &options,
                    embedder,
                    Duration::from_secs(30),
                    &mut |done, total| progress("ingesting", done, total),
                )?;
                let stored = report.store.unwrap_or_default();
                Ok(Added {
                    records: stored.added + stored.updated + stored.unchanged,
                    seconds: started.elapsed().as_secs_f64(),
                    embedded: stored.embedded,
                })
            }
        }
    }
}

/// Relevance judgements: per query, the graded records, and for agent
/// questions the answer sessions.
struct Judgements {
    records: HashMap<String, HashMap<String, f64>>,
    sessions: Option<HashMap<String, std::collections::HashSet<String>>>,
}

impl Judgements {
    /// `qrels/records.tsv` and `qrels/sessions.tsv` when both exist (agent
    /// questions), else every `qrels/*.tsv` as record judgements.
    fn read(dir: &Path) -> Result<Judgements> {
        let (records, sessions) = (dir.join("records.tsv"), dir.join("sessions.tsv"));
        if records.is_file() && sessions.is_file() {
            let sessions = read_qrels_files(&[sessions])?
                .into_iter()
                .map(|(q, s)| (q, s.into_keys().collect()))
                .collect();
            return Ok(Judgements {
                records: read_qrels_files(&[records])?,
                sessions: Some(sessions),
            });
        }
        Ok(Judgements {
            records: read_qrels(dir)?,
            sessions: None,
        })
    }
}

/// The session of a record, looked up once per record.
struct SessionOf<'a> {
    store: &'a Store,
    known: HashMap<String, Option<String>>,
}

impl<'a> SessionOf<'a> {
    fn new(store: &'a Store) -> Self {
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
fn abstention(
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
fn runs_possible(asked: &[RankOptions], vectors: bool) -> Vec<RankOptions> {
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
struct Run<'a> {
    engine: &'a SearchEngine,
    rank: &'a RankOptions,
    scope_field: Option<&'a str>,
    /// Results under this count as not returned.
    min_score: f32,
}

impl Run<'_> {
    /// Runs every judged query and measures the ranking, with and without the
    /// minimum score (one search each: the minimum only cuts the tail).
    fn judged(
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
fn credited(hit: &knowledge_db::search::batch::RankedId, rels: &HashMap<String, f64>) -> String {
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

/// Writes each query's candidates (both retrievers' top [`DEPTH`]) with their
/// exact BM25 score, cosine similarity, ranks and grade, one JSON line per query.
/// A candidate is `[id, bm25, bm25_rank, cosine, vector_rank, grade,
/// predecessor's pool index, identifier share, dated (0/1), coverage]`.
fn dump_candidates(
    engine: &SearchEngine,
    queries: &[BatchQuery],
    qrels: &HashMap<String, HashMap<String, f64>>,
    scope_field: Option<&str>,
    path: &Path,
) -> Result<()> {
    use std::io::Write;
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut out = std::io::BufWriter::new(file);
    let none = HashMap::new();
    for query in queries {
        let filters = Filters {
            namespace: scope_field.and_then(|f| query.scope(f)),
            ..Filters::default()
        };
        let (signals, pool) = engine.candidate_pool(&query.text, &filters, DEPTH)?;
        let rels = qrels.get(&query.id).unwrap_or(&none);
        let predecessors = engine.predecessors_in_pool(&pool, 0..pool.len())?;
        let mut rows = Vec::with_capacity(pool.len());
        for (i, c) in pool.iter().enumerate() {
            let id = engine.record_id(c.doc)?;
            let grade = rels.get(&id).copied().unwrap_or(0.0);
            rows.push(serde_json::json!([
                id,
                c.bm25,
                c.bm25_rank,
                c.cosine,
                c.vector_rank,
                grade,
                predecessors.get(&i),
                c.identifiers,
                u8::from(c.dated),
                c.coverage
            ]));
        }
        let line = serde_json::json!({
            "query_id": query.id,
            "text": query.text,
            "metadata": query.metadata,
            "terms": signals.terms,
            "idf_sum": signals.idf_sum,
            "relevant": rels.values().filter(|&&g| g > 0.0).count(),
            "candidates": rows,
        });
        writeln!(out, "{line}").map_err(|e| Error::io(path, e))?;
    }
    out.flush().map_err(|e| Error::io(path, e))
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

/// Relevance judgements: query id → document id → grade, from every `*.tsv`.
pub fn read_qrels(dir: &Path) -> Result<HashMap<String, HashMap<String, f64>>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::Usage(format!(
            "no qrels/*.tsv files in {}",
            dir.display()
        )));
    }
    read_qrels_files(&files)
}

/// Judgements from the given TSV files (query id, document id, grade).
fn read_qrels_files(files: &[PathBuf]) -> Result<HashMap<String, HashMap<String, f64>>> {
    let mut qrels: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for file in files {
        let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
        for (i, line) in text.lines().enumerate() {
            let cols: Vec<&str> = line.split('\t').collect();
            if cols.len() < 3 || line.trim().is_empty() {
                continue;
            }
            let Ok(grade) = cols[2].trim().parse::<f64>() else {
                if i == 0 {
                    continue; // header
                }
                return Err(Error::Usage(format!(
                    "{}:{}: relevance `{}` is not a number",
                    file.display(),
                    i + 1,
                    cols[2]
                )));
            };
            qrels
                .entry(cols[0].to_string())
                .or_default()
                .insert(cols[1].to_string(), grade);
        }
    }
    Ok(qrels)
}

/// A metadata field present on every query and on the corpus's first document,
/// with string values: the conversation (or project) a query belongs to.
fn detect_scope_field(corpus: &Path, queries: &[BatchQuery]) -> Result<Option<String>> {
    let first_doc = first_json_line(corpus)?;
    let Some(doc_meta) = first_doc.get("metadata").and_then(Value::as_object) else {
        return Ok(None);
    };
    let Some(first_query) = queries.first() else {
        return Ok(None);
    };
    let Some(query_meta) = first_query.metadata.as_object() else {
        return Ok(None);
    };
    for (key, value) in query_meta {
        let shared = value.is_string() && doc_meta.get(key).is_some_and(Value::is_string);
        if shared && queries.iter().all(|q| q.scope(key).is_some()) {
            return Ok(Some(key.clone()));
        }
    }
    Ok(None)
}

fn first_json_line(path: &Path) -> Result<Value> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(|e| Error::io(path, e))?;
        if !line.trim().is_empty() {
            return Ok(serde_json::from_str(&line).unwrap_or(Value::Null));
        }
    }
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use knowledge_db::search::batch::RankedId;

    #[test]
    fn a_hit_is_credited_with_a_relevant_copy_folded_into_it() {
        let rels = HashMap::from([("b".to_string(), 1.0), ("c".to_string(), 0.0)]);
        let hit = |id: &str, duplicates: &[&str]| RankedId {
            id: id.into(),
            score: 0.5,
            duplicates: duplicates.iter().map(|d| d.to_string()).collect(),
        };
        assert_eq!(credited(&hit("a", &["c", "b"]), &rels), "b");
        assert_eq!(credited(&hit("b", &["a"]), &rels), "b");
        assert_eq!(
            credited(&hit("a", &["c"]), &rels),
            "a",
            "grade 0 is not relevant"
        );
    }
}
