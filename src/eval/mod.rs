//! Evaluation on BEIR-layout data: the yardstick for every ranking change.
//!
//! A BEIR folder holds `corpus.jsonl` (documents), `queries.jsonl` and
//! `qrels/*.tsv` (which documents answer which query). `eval` builds a temporary
//! store from the corpus, runs every query that has judgements, and reports
//! nDCG@10, Recall@5/10/100, MRR@10 and search latency. When queries carry a
//! metadata field that documents share (LoCoMo's `conv`), each query searches only
//! its own namespace, as a per-conversation memory would.

pub mod metrics;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::record::ParseOptions;
use crate::search::batch::{read_queries, run_batch, BatchQuery};
use crate::search::fusion::Fusion;
use crate::search::{Filters, Mode, RankOptions, SearchEngine};
use crate::store::add::add_paths;
use crate::store::Store;

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
    let corpus = dir.join("corpus.jsonl");
    let queries = read_queries(&dir.join("queries.jsonl"))?;
    let qrels = read_qrels(&dir.join("qrels"))?;
    let scope_field = if options.no_scope {
        None
    } else {
        match &options.scope_field {
            Some(field) => Some(field.clone()),
            None => detect_scope_field(&corpus, &queries)?,
        }
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
        let parse = ParseOptions {
            namespace_field: scope_field.clone(),
            added_at: crate::now_rfc3339(),
            ..ParseOptions::default()
        };
        let model = embedder
            .as_mut()
            .ok()
            .map(|e| e.as_mut() as &mut dyn Embedder);
        let added = add_paths(
            &store,
            &[corpus],
            &mut std::io::empty(),
            &parse,
            model,
            Duration::from_secs(30),
        )?;
        (store, Some(added))
    };

    let judged: Vec<BatchQuery> = queries
        .into_iter()
        .filter(|q| {
            qrels
                .get(&q.id)
                .is_some_and(|r| r.values().any(|&v| v > 0.0))
        })
        .collect();
    let engine = SearchEngine::with_embedder(&store, embedder)?;
    let runs = runs_possible(&options.runs, engine.vector_status() == "used");
    let mut reports = Vec::with_capacity(runs.len());
    for rank in &runs {
        reports.push(run_queries(
            &engine,
            &judged,
            &qrels,
            rank,
            scope_field.as_deref(),
            options,
            progress,
        )?);
    }
    let Some(headline) = reports.first().cloned() else {
        return Err(Error::Usage(format!(
            "nothing to evaluate: vectors are {}",
            engine.vector_status()
        )));
    };
    let documents = store.stats()?.records as usize;
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
        embedded: added.as_ref().map_or(0, |a| a.report.embedded),
    })
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

/// Runs every judged query with one ranking and measures it.
fn run_queries(
    engine: &SearchEngine,
    judged: &[BatchQuery],
    qrels: &HashMap<String, HashMap<String, f64>>,
    rank: &RankOptions,
    scope_field: Option<&str>,
    options: &EvalOptions,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<RunReport> {
    let total = judged.len();
    let group_of: HashMap<&str, String> = match &options.group_by {
        Some(field) => judged
            .iter()
            .filter_map(|q| q.scope(field).map(|g| (q.id.as_str(), g)))
            .collect(),
        None => HashMap::new(),
    };
    let mut overall = Quality::default();
    let mut groups: BTreeMap<String, Quality> = BTreeMap::new();
    let mut latencies = Vec::with_capacity(total);
    run_batch(
        engine,
        judged,
        DEPTH,
        &Filters::default(),
        rank,
        scope_field,
        |result| {
            let ranked: Vec<String> = result.results.into_iter().map(|r| r.id).collect();
            if let Some(rels) = qrels.get(&result.query_id) {
                overall.add(&ranked, rels);
                if let Some(group) = group_of.get(result.query_id.as_str()) {
                    groups.entry(group.clone()).or_default().add(&ranked, rels);
                }
            }
            latencies.push(result.took_ms);
            progress("searching", latencies.len(), total);
            Ok(())
        },
    )?;
    let hybrid = rank.mode == Mode::Hybrid;
    Ok(RunReport {
        mode: rank.mode,
        fusion: hybrid.then_some(rank.fusion),
        alpha: (hybrid && rank.fusion != Fusion::Rrf).then_some(rank.alpha),
        quality: overall.finish(),
        groups: groups.into_iter().map(|(k, q)| (k, q.finish())).collect(),
        latency_ms_p50: metrics::percentile(&latencies, 50.0),
        latency_ms_p95: metrics::percentile(&latencies, 95.0),
        latency_ms_p99: metrics::percentile(&latencies, 99.0),
    })
}

/// The rankings `--compare` measures: each retriever alone, RRF, and linear
/// (min-max) and z-score fusion at several weights.
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
    let mut qrels: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, e))?;
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
