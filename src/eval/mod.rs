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

use crate::error::{Error, Result};
use crate::record::ParseOptions;
use crate::search::batch::{read_queries, run_batch, BatchQuery};
use crate::search::{Filters, SearchEngine};
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
    #[serde(flatten)]
    pub quality: Quality,
    /// Quality per value of `metadata.GROUP_BY` (e.g. LoCoMo's question category).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, Quality>,
    pub latency_ms_p50: f64,
    pub latency_ms_p95: f64,
    pub latency_ms_p99: f64,
    pub add_seconds: f64,
    pub add_records_per_second: f64,
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
    /// Build the store here (kept) instead of a temporary folder.
    pub store_dir: Option<PathBuf>,
    /// Also report quality per value of this query metadata field.
    pub group_by: Option<String>,
}

/// Runs an evaluation; `progress` hears about phases ("adding", "searching").
pub fn evaluate(
    options: &EvalOptions,
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
    let store = Store::init(&store_dir)?;
    progress("adding", 0, 0);
    let parse = ParseOptions {
        namespace_field: scope_field.clone(),
        added_at: crate::now_rfc3339(),
        ..ParseOptions::default()
    };
    let added = add_paths(
        &store,
        &[corpus],
        &mut std::io::empty(),
        &parse,
        Duration::from_secs(30),
    )?;

    let judged: Vec<BatchQuery> = queries
        .into_iter()
        .filter(|q| {
            qrels
                .get(&q.id)
                .is_some_and(|r| r.values().any(|&v| v > 0.0))
        })
        .collect();
    let engine = SearchEngine::new(&store)?;
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
        &engine,
        &judged,
        DEPTH,
        &Filters::default(),
        scope_field.as_deref(),
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
    Ok(EvalReport {
        dataset: dir.display().to_string(),
        documents: added.records,
        scope_field,
        quality: overall.finish(),
        groups: groups.into_iter().map(|(k, q)| (k, q.finish())).collect(),
        latency_ms_p50: metrics::percentile(&latencies, 50.0),
        latency_ms_p95: metrics::percentile(&latencies, 95.0),
        latency_ms_p99: metrics::percentile(&latencies, 99.0),
        add_seconds: added.seconds,
        add_records_per_second: added.records as f64 / added.seconds.max(1e-9),
    })
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
