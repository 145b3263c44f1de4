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

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::process::{measure_through_helper, Measured};
use super::{generate, GenOptions};
use knowledge_db::embed::text::{embedding_text, text_hash};
use knowledge_db::embed::{normalize, EmbedError, Embedder, OnnxEmbedder, Workload, DIM, MODEL_ID};
use knowledge_db::error::{Error, Result};
use knowledge_db::index::IndexFields;
use knowledge_db::load::read_records;
use knowledge_db::record::{ParseOptions, Record};
use knowledge_db::search::batch::read_queries;
use knowledge_db::search::fusion::Fusion;
use knowledge_db::search::{Filters, Mode, RankOptions, SearchEngine};
use knowledge_db::store::{dir_size, AddPhases, Store};

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

/// Writes what the peers need to index and query the same data the same way.
fn export(
    dir: &Path,
    records: &[Record],
    queries: &[knowledge_db::search::batch::BatchQuery],
    targets: &[String],
    embedder: &mut BenchEmbedder,
) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let create = |name: &str| -> Result<BufWriter<fs::File>> {
        let path = dir.join(name);
        fs::File::create(&path)
            .map(BufWriter::new)
            .map_err(|e| Error::io(&path, e))
    };
    let io = |e| Error::io(dir, e);
    let (mut docs, mut doc_vectors) = (create("docs.jsonl")?, create("doc_vectors.f32")?);
    for record in records {
        let text = format!("{}\n{}", record.fields.title, record.display_text());
        let line = serde_json::json!({"id": record.id, "text": text.trim()});
        writeln!(docs, "{line}").map_err(io)?;
        let vector = embedder
            .embed(&[embedding_text(record).as_str()])
            .map_err(|e| Error::Usage(e.to_string()))?;
        let row = vector.first().map_or_else(
            || vec![0u8; DIM * 4],
            |v| knowledge_db::index::embedding_bytes(v),
        );
        doc_vectors.write_all(&row).map_err(io)?;
    }
    let (mut out, mut query_vectors) = (create("queries.jsonl")?, create("query_vectors.f32")?);
    let texts: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
    let model = embedder.model().map_err(|e| Error::Usage(e.to_string()))?;
    for (chunk, chunk_targets) in texts
        .chunks(knowledge_db::embed::BATCH)
        .zip(targets.chunks(knowledge_db::embed::BATCH))
    {
        let vectors = model
            .embed(chunk)
            .map_err(|e| Error::Usage(e.to_string()))?;
        for ((text, target), v) in chunk.iter().zip(chunk_targets).zip(vectors) {
            let line = serde_json::json!({"text": text, "target": target});
            writeln!(out, "{line}").map_err(io)?;
            query_vectors
                .write_all(&knowledge_db::index::embedding_bytes(&v))
                .map_err(io)?;
        }
    }
    for mut file in [docs, doc_vectors, out, query_vectors] {
        file.flush().map_err(io)?;
    }
    Ok(())
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

fn timed_add(
    store: &Store,
    records: Vec<Record>,
    embedder: Option<&mut dyn Embedder>,
) -> Result<AddTiming> {
    let count = records.len();
    reset_peak_rss();
    let started = Instant::now();
    let (_, phases) = store.add_timed(records, embedder, Duration::from_secs(60))?;
    let seconds = started.elapsed().as_secs_f64();
    let disk_bytes = dir_size(store.root());
    Ok(AddTiming {
        records_per_sec: count as f64 / seconds.max(1e-9),
        seconds,
        index_and_commit_seconds: seconds,
        embed_seconds: 0.0,
        texts_embedded: 0,
        texts_from_cache: 0,
        texts_perturbed: 0,
        model_texts_per_sec: None,
        phases,
        peak_rss_mb: peak_rss_mb(),
        disk_bytes,
        bytes_per_record: disk_bytes as f64 / count.max(1) as f64,
    })
}

/// Seconds and tokens of one thread analyzing every text the index tokenizes.
fn time_tokenizing(records: &[Record]) -> Result<(f64, u64)> {
    use tantivy::tokenizer::TokenStream;
    let fields = IndexFields::from_schema(&IndexFields::schema())?;
    let mut analyzer = knowledge_db::index::tokenizer::analyzer();
    let started = Instant::now();
    let mut tokens = 0;
    for (_, text) in records.iter().flat_map(|record| fields.texts(record)) {
        let mut stream = analyzer.token_stream(text);
        while stream.advance() {
            tokens += 1;
        }
    }
    Ok((started.elapsed().as_secs_f64(), tokens))
}

/// The targets whose text the model embedded for real (sampled runs only).
fn real_targets(
    records: &[Record],
    targets: &[String],
    embedder: &BenchEmbedder,
) -> Option<HashSet<String>> {
    if embedder.sampled.is_empty() {
        return None;
    }
    let wanted: HashSet<&str> = targets.iter().map(String::as_str).collect();
    Some(
        records
            .iter()
            .filter(|r| wanted.contains(r.id.as_str()))
            .filter(|r| embedder.sampled.contains(&text_hash(&embedding_text(r))))
            .map(|r| r.id.clone())
            .collect(),
    )
}

/// Median time to embed one query, each query once (fills the engine's cache).
fn time_query_embeddings(engine: &SearchEngine, texts: &[String]) -> Result<f64> {
    let vector_only = RankOptions {
        mode: Mode::Vector,
        fusion: Fusion::Linear,
        alpha: 1.0,
    };
    let mut times = Vec::with_capacity(texts.len());
    for text in texts {
        let started = Instant::now();
        engine.search_ids(text, 1, &Filters::default(), &vector_only)?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    // The cost of the search itself, measured next, is small beside inference.
    Ok(percentile(&mut times, 0.5))
}

fn time_searches(
    engine: &SearchEngine,
    texts: &[String],
    targets: &[String],
    judged: Option<&HashSet<String>>,
    mode: Mode,
) -> Result<SearchTiming> {
    let rank = RankOptions {
        mode,
        ..RankOptions::default()
    };
    let mut times = Vec::with_capacity(texts.len());
    let (mut found, mut asked) = (0, 0);
    for (text, target) in texts.iter().zip(targets) {
        let started = Instant::now();
        let hits = engine.search_ranked_ids(text, 10, &Filters::default(), &rank)?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        if judged.is_none_or(|j| j.contains(target)) {
            asked += 1;
            // A hit stands for the copies of its text folded into it.
            let stands_for = |hit: &knowledge_db::search::batch::RankedId| {
                hit.id == *target || hit.duplicates.contains(target)
            };
            if hits.iter().any(stands_for) {
                found += 1;
            }
        }
    }
    Ok(SearchTiming {
        mode,
        p50_ms: percentile(&mut times, 0.5),
        p95_ms: percentile(&mut times, 0.95),
        p99_ms: percentile(&mut times, 0.99),
        recall_at_10: found as f64 / asked.max(1) as f64,
        judged_queries: asked,
    })
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Bm25 => "bm25",
        Mode::Vector => "vector",
        Mode::Hybrid => "hybrid",
    }
}

/// The arguments of `knowledge-db --store STORE search --mode MODE ...`.
fn search_args(store: &Path, mode: Mode) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--store".into(), store.into(), "search".into()];
    args.extend(
        ["--all-namespaces", "--json", "--mode", mode_name(mode)]
            .into_iter()
            .map(OsString::from),
    );
    args
}

fn time_cli(options: &RunOptions, store: &Path, texts: &[String], mode: Mode) -> Result<CliTiming> {
    let mut times = Vec::with_capacity(options.cli_runs);
    let mut peak_rss_mb: f64 = 0.0;
    for text in texts.iter().cycle().take(options.cli_runs) {
        let mut args = search_args(store, mode);
        args.extend(["--".into(), text.into()]);
        let run = run_search(options, &args)?;
        times.push(run.ms);
        peak_rss_mb = peak_rss_mb.max(run.peak_rss_mb);
    }
    Ok(CliTiming {
        mode,
        runs: times.len(),
        p50_ms: percentile(&mut times, 0.5),
        p95_ms: percentile(&mut times, 0.95),
        peak_rss_mb,
    })
}

fn time_batch(
    options: &RunOptions,
    store: &Path,
    queries_file: &Path,
    queries: usize,
    mode: Mode,
) -> Result<BatchTiming> {
    let mut args = search_args(store, mode);
    args.extend(["--queries".into(), queries_file.into()]);
    let run = run_search(options, &args)?;
    Ok(BatchTiming {
        mode,
        queries,
        seconds: run.ms / 1000.0,
        peak_rss_mb: run.peak_rss_mb,
    })
}

/// Runs `knowledge-db ARGS` to its end through the measuring helper.
fn run_search(options: &RunOptions, args: &[OsString]) -> Result<Measured> {
    let run = measure_through_helper(&options.exe, &options.exe, args)?;
    if !run.success {
        return Err(Error::Usage(
            "`knowledge-db search` failed on the benchmark store".to_string(),
        ));
    }
    Ok(run)
}

fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[((values.len() as f64 * q) as usize).min(values.len() - 1)]
}

/// Resets the kernel's peak-RSS mark for this process (Linux; elsewhere a no-op).
fn reset_peak_rss() {
    let _ = fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident memory since the last reset, in MB (0 where unknown).
fn peak_rss_mb() -> f64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The embedder of a benchmark: the real model behind a persistent cache by text
/// hash, and with `Sampled`, perturbed copies for texts outside the sample.
struct BenchEmbedder {
    model: Option<OnnxEmbedder>,
    cache: HashMap<u64, Vec<f32>>,
    cache_path: PathBuf,
    new_in_cache: Vec<u64>,
    /// Text hashes embedded for real (sampled runs); empty otherwise.
    sampled: HashSet<u64>,
    sampled_order: Vec<u64>,
    /// The sample's texts, embedded first so perturbations have their bases.
    sample_texts: Vec<String>,
    embedded: usize,
    from_cache: usize,
    perturbed: usize,
    embed_seconds: f64,
}

/// New vectors written to the cache file at least this often.
const CACHE_SAVE_EVERY: usize = 2048;
const CACHE_MAGIC: &[u8; 8] = b"KDBVC384";
/// One cache entry: the text hash (u64, little-endian), then the vector.
const CACHE_ENTRY_BYTES: usize = 8 + DIM * 4;

impl BenchEmbedder {
    fn new(options: &RunOptions, records: &[Record]) -> Result<BenchEmbedder> {
        let cache = load_cache(&options.cache)?;
        let mut sampled = HashSet::new();
        let mut sampled_order = Vec::new();
        let mut sample_texts = Vec::new();
        if options.vectors == VectorPlan::Sampled {
            // Every k-th distinct text, so the sample spreads over the corpus.
            let mut distinct: Vec<(u64, String)> = Vec::new();
            let mut seen = HashSet::new();
            for r in records {
                let text = embedding_text(r);
                let h = text_hash(&text);
                if seen.insert(h) {
                    distinct.push((h, text));
                }
            }
            let step = (distinct.len() / options.sample.max(1)).max(1);
            for (h, text) in distinct.into_iter().step_by(step).take(options.sample) {
                sampled.insert(h);
                sampled_order.push(h);
                sample_texts.push(text);
            }
        }
        Ok(BenchEmbedder {
            model: None,
            cache,
            cache_path: options.cache.clone(),
            new_in_cache: Vec::new(),
            sampled,
            sampled_order,
            sample_texts,
            embedded: 0,
            from_cache: 0,
            perturbed: 0,
            embed_seconds: 0.0,
        })
    }

    /// Embeds the sample (sampled runs), in batches, before the store asks for
    /// any vector.
    fn prepare(&mut self) -> std::result::Result<(), EmbedError> {
        let texts = std::mem::take(&mut self.sample_texts);
        for chunk in texts.chunks(knowledge_db::embed::GROUP) {
            let batch: Vec<&str> = chunk.iter().map(String::as_str).collect();
            self.embed(&batch)?;
        }
        self.from_cache = 0;
        self.perturbed = 0;
        Ok(())
    }

    fn model(&mut self) -> std::result::Result<&mut OnnxEmbedder, EmbedError> {
        if self.model.is_none() {
            self.model = Some(OnnxEmbedder::load_default(Workload::Batches)?);
        }
        self.model
            .as_mut()
            .ok_or_else(|| EmbedError::Inference("model not loaded".into()))
    }

    /// A unit vector near a sampled text's vector, chosen and perturbed by `hash`.
    fn perturbed_vector(&self, hash: u64) -> Option<Vec<f32>> {
        let base_hash = self
            .sampled_order
            .get(hash as usize % self.sampled_order.len().max(1))?;
        let mut v = self.cache.get(base_hash)?.clone();
        let mut state = hash | 1;
        for x in v.iter_mut() {
            // xorshift noise in [-0.5, 0.5) scaled to a small angle.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *x += ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.02;
        }
        normalize(&mut v);
        Some(v)
    }

    fn save_cache(&mut self) -> Result<()> {
        let entries = self
            .new_in_cache
            .iter()
            .filter_map(|hash| Some((*hash, self.cache.get(hash)?.as_slice())));
        append_to_cache(&self.cache_path, entries)?;
        self.new_in_cache.clear();
        Ok(())
    }
}

/// Appends `(text hash, vector)` entries to the cache file, creating it if needed.
fn append_to_cache<'v>(path: &Path, entries: impl Iterator<Item = (u64, &'v [f32])>) -> Result<()> {
    let mut entries = entries.peekable();
    if entries.peek().is_none() {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let io = |e| Error::io(path, e);
    let file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    // A run killed while saving leaves a torn last entry; appending after it
    // would shift every later entry, so it is cut off first.
    let len = file.metadata().map_err(io)?.len();
    let entry = CACHE_ENTRY_BYTES as u64;
    let magic = CACHE_MAGIC.len() as u64;
    if len > magic && !(len - magic).is_multiple_of(entry) {
        file.set_len(len - (len - magic) % entry).map_err(io)?;
    }
    let mut out = BufWriter::new(file);
    if len == 0 {
        out.write_all(CACHE_MAGIC).map_err(io)?;
    }
    for (hash, v) in entries {
        out.write_all(&hash.to_le_bytes()).map_err(io)?;
        out.write_all(&knowledge_db::index::embedding_bytes(v))
            .map_err(io)?;
    }
    out.flush().map_err(io)
}

impl Embedder for BenchEmbedder {
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    fn dim(&self) -> usize {
        DIM
    }

    fn embed(&mut self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, EmbedError> {
        let hashes: Vec<u64> = texts.iter().map(|t| text_hash(t)).collect();
        let sampling = !self.sampled.is_empty();
        // Texts the model must embed: not cached, and (when sampling) in the sample.
        let todo: Vec<usize> = (0..texts.len())
            .filter(|&i| !self.cache.contains_key(&hashes[i]))
            .filter(|&i| !sampling || self.sampled.contains(&hashes[i]))
            .collect();
        if !todo.is_empty() {
            let batch: Vec<&str> = todo.iter().map(|&i| texts[i]).collect();
            let started = Instant::now();
            let vectors = self.model()?.embed(&batch)?;
            self.embed_seconds += started.elapsed().as_secs_f64();
            self.embedded += todo.len();
            for (&i, v) in todo.iter().zip(vectors) {
                self.cache.insert(hashes[i], v);
                self.new_in_cache.push(hashes[i]);
            }
            // A long run that dies keeps what it embedded (an hour at 100k).
            if self.new_in_cache.len() >= CACHE_SAVE_EVERY {
                self.save_cache()
                    .map_err(|e| EmbedError::Inference(format!("saving the vector cache: {e}")))?;
            }
        }
        let mut out = Vec::with_capacity(texts.len());
        for &h in &hashes {
            match self.cache.get(&h) {
                Some(v) if !sampling || self.sampled.contains(&h) => {
                    if !todo.iter().any(|&i| hashes[i] == h) {
                        self.from_cache += 1;
                    }
                    out.push(v.clone());
                }
                _ => {
                    self.perturbed += 1;
                    let v = self.perturbed_vector(h).ok_or_else(|| {
                        EmbedError::Inference("no sampled vector to perturb".into())
                    })?;
                    out.push(v);
                }
            }
        }
        Ok(out)
    }
}

fn load_cache(path: &Path) -> Result<HashMap<u64, Vec<f32>>> {
    let mut cache = HashMap::new();
    let Ok(file) = fs::File::open(path) else {
        return Ok(cache);
    };
    let mut input = BufReader::new(file);
    let mut magic = [0u8; 8];
    if input.read_exact(&mut magic).is_err() || &magic != CACHE_MAGIC {
        return Err(Error::Usage(format!(
            "{} is not a knowledge-db vector cache; remove it or pass another --cache",
            path.display()
        )));
    }
    let mut entry = vec![0u8; CACHE_ENTRY_BYTES];
    // A torn last entry (a run killed while saving) is ignored.
    while input.read_exact(&mut entry).is_ok() {
        let hash = u64::from_le_bytes(entry[..8].try_into().unwrap_or_default());
        if let Some(v) = knowledge_db::index::embedding_from_bytes(&entry[8..], DIM) {
            cache.insert(hash, v);
        }
    }
    Ok(cache)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(seed: f32) -> Vec<f32> {
        (0..DIM).map(|i| seed + i as f32).collect()
    }

    #[test]
    fn the_vector_cache_survives_a_run_killed_while_saving() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.bin");
        let (a, b, c) = (vector(1.0), vector(2.0), vector(3.0));
        append_to_cache(&path, [(1, a.as_slice()), (2, b.as_slice())].into_iter()).unwrap();
        // Killed halfway through writing entry 2.
        let len = fs::metadata(&path).unwrap().len();
        let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(len - 100).unwrap();
        append_to_cache(&path, [(3, c.as_slice())].into_iter()).unwrap();
        let cache = load_cache(&path).unwrap();
        assert_eq!(
            cache.len(),
            2,
            "the torn entry is dropped, the next one is whole"
        );
        assert_eq!(cache[&1], a);
        assert_eq!(cache[&3], c);
    }
}
