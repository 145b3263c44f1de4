//! `bench run`: what a store of N realistic records costs and how it answers.
//!
//! One run generates (or reuses) a corpus with [`super::generate`], then measures
//! on the same records and queries:
//!
//! - **adding**: records/s into a BM25-only store and into a store with vectors,
//!   with the time split into reading and parsing, embedding, and indexing plus
//!   commit, and the model's own throughput on the texts it embedded (so the
//!   store's overhead on top of the model is visible);
//! - **searching**: in-process latency p50/p95/p99 at k=10 for BM25, vector and
//!   hybrid, excluding the query embedding (timed apart), and recall@10 of the
//!   generated queries;
//! - **a one-shot CLI `search`** process from start to exit, as a shell sees it;
//! - **peak RSS** while adding (it includes the parsed corpus the benchmark holds
//!   in memory) and while searching, the latter read from the kernel for separate
//!   `knowledge-db search` processes (one batch process over every query, and
//!   each one-shot), so it is the searcher's memory, not the benchmark's; and
//!   bytes on disk per record.
//!
//! Embedding runs at about 38 texts/s here, so vectors are cached by text hash in
//! a file that survives runs (10k and 100k runs use real embeddings throughout, and
//! a second run embeds nothing). For the largest runs `--vectors sampled` embeds a
//! sample of distinct texts for real and gives every other text a small random
//! perturbation of a sampled vector; the report says so, and vector recall is then
//! measured only on queries whose target was embedded for real.
//!
//! Each part is a room of its own: `timing.rs` (adding, searching and the
//! one-shot CLI, timed, and the process's memory), `embedder.rs` (the cached,
//! optionally sampled embedder and its cache file), `export.rs` (the data the
//! peers index). This file holds the options, the report and one run's frame.

mod embedder;
mod export;
mod timing;

#[cfg(test)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::{generate, GenOptions};
use knowledge_db::embed::{Embedder, OnnxEmbedder, Workload};
use knowledge_db::error::{Error, Result};
use knowledge_db::load::read_records;
use knowledge_db::record::{ParseOptions, Record};
use knowledge_db::search::batch::read_queries;
use knowledge_db::search::{Mode, SearchEngine};
use knowledge_db::store::{AddPhases, Store};

use embedder::BenchEmbedder;
use export::export;
use timing::{
    real_targets, time_batch, time_cli, time_query_embeddings, time_searches, time_tokenizing,
    timed_add,
};

/// Where the vectors of a run come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum VectorPlan {
    /// BM25 only: no store with vectors.
    None,
    /// Every text embedded by the model (cached by text hash between runs).
    Real,
    /// A sample of texts embedded for real, the rest perturbations of those.
    Sampled,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub from: PathBuf,
    pub records: usize,
    pub queries: usize,
    pub seed: u64,
    /// Corpus and stores live here (reused when present).
    pub work: PathBuf,
    pub vectors: VectorPlan,
    /// Distinct texts embedded for real with `VectorPlan::Sampled`.
    pub sample: usize,
    /// The vector cache file (text hash → vector).
    pub cache: PathBuf,
    /// The `knowledge-db` binary for the one-shot CLI timing.
    pub exe: PathBuf,
    pub cli_runs: usize,
    /// Also write the documents, queries and their vectors here for the peers
    /// (`benches/peers.py`): `docs.jsonl`, `queries.jsonl`, `doc_vectors.f32`,
    /// `query_vectors.f32` (row-major little-endian f32, 384 per row).
    pub export: Option<PathBuf>,
}

/// Time and memory of one way of adding the corpus.
#[derive(Debug, Clone, Serialize)]
pub struct AddTiming {
    pub records_per_sec: f64,
    pub seconds: f64,
    pub index_and_commit_seconds: f64,
    pub embed_seconds: f64,
    /// Texts the model embedded in this run (0 when all came from the cache).
    pub texts_embedded: usize,
    pub texts_from_cache: usize,
    pub texts_perturbed: usize,
    /// The model's own rate on the texts it embedded, for comparison.
    pub model_texts_per_sec: Option<f64>,
    /// The store's own account of the add, phase by phase.
    pub phases: AddPhases,
    pub peak_rss_mb: f64,
    pub disk_bytes: u64,
    pub bytes_per_record: f64,
}

/// Latency and quality of one retriever.
#[derive(Debug, Clone, Serialize)]
pub struct SearchTiming {
    pub mode: Mode,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub recall_at_10: f64,
    /// Queries the recall is over (with sampled vectors: targets embedded for real).
    pub judged_queries: usize,
}

/// Start-to-exit time of `knowledge-db search` processes.
#[derive(Debug, Clone, Serialize)]
pub struct CliTiming {
    pub mode: Mode,
    pub runs: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    /// The largest peak RSS of one of these processes (0 where unknown).
    pub peak_rss_mb: f64,
}

/// One `knowledge-db search --queries` process over all the queries: what a
/// long-lived searcher (the MCP server, a batch run) holds in memory.
#[derive(Debug, Clone, Serialize)]
pub struct BatchTiming {
    pub mode: Mode,
    pub queries: usize,
    pub seconds: f64,
    pub peak_rss_mb: f64,
}

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub records: usize,
    pub queries: usize,
    pub vectors: VectorPlan,
    pub note: Option<String>,
    pub read_and_parse_seconds: f64,
    /// One thread running the index's analyzer (code tokenizer, stemming) over
    /// every indexed text of the corpus, outside any add: the tokenizing share
    /// of indexing, which during an add is spread over the indexing threads.
    pub tokenize_seconds: f64,
    /// Tokens that pass produced.
    pub tokens: u64,
    pub add_bm25: AddTiming,
    pub add_with_vectors: Option<AddTiming>,
    pub query_embedding_p50_ms: Option<f64>,
    pub search: Vec<SearchTiming>,
    /// Memory of a separate searching process (the benchmark's own peak
    /// holds its copy of the corpus and the allocator's leftovers of adding).
    pub search_process: Option<BatchTiming>,
    pub one_shot_cli: Vec<CliTiming>,
    pub vector_graphs: usize,
    /// Segments of the searched store's text index.
    pub segments: usize,
}

/// Runs the whole benchmark. `progress` gets a phase name.
pub fn run(options: &RunOptions, progress: &mut dyn FnMut(&str)) -> Result<RunReport> {
    let corpus = options.work.join(format!(
        "corpus-{}-{}-seed{}",
        options.records, options.queries, options.seed
    ));
    if !corpus.join("qrels").join("test.tsv").exists() {
        progress("generating the corpus");
        let gen = GenOptions {
            from: options.from.clone(),
            records: options.records,
            queries: options.queries,
            seed: options.seed,
            out: corpus.clone(),
        };
        generate(&gen, &mut |_| {}).map_err(|e| Error::Usage(e.to_string()))?;
    }

    progress("reading the corpus");
    let started = Instant::now();
    let records = read_corpus(&corpus)?;
    let read_and_parse_seconds = started.elapsed().as_secs_f64();
    let queries = read_queries(&corpus.join("queries.jsonl"))?;
    progress("tokenizing");
    let (tokenize_seconds, tokens) = time_tokenizing(&records)?;

    progress("adding without vectors");
    let bm25_dir = fresh_dir(&options.work.join(format!("store-bm25-{}", options.records)))?;
    let bm25_store = Store::init(&bm25_dir)?;
    let add_bm25 = timed_add(&bm25_store, records.clone(), None)?;

    let mut report = RunReport {
        records: records.len(),
        queries: queries.len(),
        vectors: options.vectors,
        note: None,
        read_and_parse_seconds,
        tokenize_seconds,
        tokens,
        add_bm25,
        add_with_vectors: None,
        query_embedding_p50_ms: None,
        search: Vec::new(),
        search_process: None,
        one_shot_cli: Vec::new(),
        vector_graphs: 0,
        segments: 0,
    };
    let targets: Vec<String> = queries.iter().map(target_of).collect();
    let texts: Vec<String> = queries.iter().map(|q| q.text.clone()).collect();

    let (store, store_dir, real_targets) = if options.vectors == VectorPlan::None {
        (bm25_store, bm25_dir, None)
    } else {
        progress("adding with vectors");
        let dir = fresh_dir(
            &options
                .work
                .join(format!("store-vectors-{}", options.records)),
        )?;
        let store = Store::init(&dir)?;
        let mut embedder = BenchEmbedder::new(options, &records)?;
        let started = Instant::now();
        embedder
            .prepare()
            .map_err(|e| Error::Usage(e.to_string()))?;
        let prepare_seconds = started.elapsed().as_secs_f64();
        let mut timing = timed_add(&store, records.clone(), Some(&mut embedder))?;
        timing.seconds += prepare_seconds;
        timing.records_per_sec = records.len() as f64 / timing.seconds.max(1e-9);
        timing.embed_seconds = embedder.embed_seconds;
        timing.index_and_commit_seconds = (timing.seconds - timing.embed_seconds).max(0.0);
        timing.texts_embedded = embedder.embedded;
        timing.texts_from_cache = embedder.from_cache;
        timing.texts_perturbed = embedder.perturbed;
        timing.model_texts_per_sec = (embedder.embedded > 0 && embedder.embed_seconds > 0.0)
            .then(|| embedder.embedded as f64 / embedder.embed_seconds);
        embedder.save_cache()?;
        if options.vectors == VectorPlan::Sampled {
            report.note = Some(format!(
                "{} distinct texts embedded by the model; the other {} vectors are random perturbations of those (vector recall is over queries whose target was embedded)",
                embedder.sampled.len(),
                embedder.perturbed
            ));
        }
        let real = real_targets(&records, &targets, &embedder);
        if let Some(dir) = &options.export {
            progress("exporting for the peers");
            export(dir, &records, &queries, &targets, &mut embedder)?;
        }
        report.add_with_vectors = Some(timing);
        (store, dir, real)
    };

    // The parsed corpus is large (about 10 GB at 1M records); free it so the
    // search-time peak is the engine's, not the benchmark's own copy.
    drop(records);
    progress("searching");
    let engine = if options.vectors == VectorPlan::None {
        SearchEngine::new(&store)?
    } else {
        let model = OnnxEmbedder::load_default(Workload::Batches)
            .map_err(|e| Error::Usage(e.to_string()))?;
        SearchEngine::with_embedder(&store, Ok(Box::new(model) as Box<dyn Embedder>))?
    };
    let modes: &[Mode] = if options.vectors == VectorPlan::None {
        &[Mode::Bm25]
    } else {
        report.query_embedding_p50_ms = Some(time_query_embeddings(&engine, &texts)?);
        &[Mode::Bm25, Mode::Vector, Mode::Hybrid]
    };
    for &mode in modes {
        let judged = match (&real_targets, mode) {
            (Some(real), Mode::Vector | Mode::Hybrid) => Some(real),
            _ => None,
        };
        report
            .search
            .push(time_searches(&engine, &texts, &targets, judged, mode)?);
    }
    report.vector_graphs = knowledge_db::vectors::graph_count(&store_dir);
    report.segments = store.reader()?.searcher().segment_readers().len();
    drop(engine);

    progress("timing a batch search process");
    let batch_mode = if options.vectors == VectorPlan::None {
        Mode::Bm25
    } else {
        Mode::Hybrid
    };
    report.search_process = Some(time_batch(
        options,
        &store_dir,
        &corpus.join("queries.jsonl"),
        queries.len(),
        batch_mode,
    )?);

    progress("timing one-shot CLI searches");
    for &mode in modes {
        if mode == Mode::Vector {
            continue;
        }
        report
            .one_shot_cli
            .push(time_cli(options, &store_dir, &texts, mode)?);
    }
    Ok(report)
}

fn read_corpus(corpus: &Path) -> Result<Vec<Record>> {
    let scratch = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let store = Store::init(&scratch.path().join("parse"))?;
    let options = ParseOptions {
        added_at: knowledge_db::now_rfc3339(),
        ..ParseOptions::default()
    };
    let batch = read_records(
        &store,
        &[corpus.join("corpus.jsonl")],
        &mut std::io::empty(),
        &options,
    )?;
    Ok(batch.records)
}

fn fresh_dir(dir: &Path) -> Result<PathBuf> {
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(dir.to_path_buf())
}

fn target_of(query: &knowledge_db::search::batch::BatchQuery) -> String {
    query
        .metadata
        .get("target")
        .and_then(|t| t.as_str())
        .unwrap_or_default()
        .to_string()
}
