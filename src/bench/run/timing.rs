//! The timed parts of a run: adding a corpus, tokenizing it, embedding queries,
//! searching in process and through separate `knowledge-db search` processes,
//! and the peak resident memory of this process.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use super::super::process::{measure_through_helper, Measured};
use super::embedder::BenchEmbedder;
use super::{AddTiming, BatchTiming, CliTiming, RunOptions, SearchTiming};
use knowledge_db::embed::text::{embedding_text, text_hash};
use knowledge_db::embed::Embedder;
use knowledge_db::error::{Error, Result};
use knowledge_db::index::IndexFields;
use knowledge_db::record::Record;
use knowledge_db::search::fusion::Fusion;
use knowledge_db::search::{Filters, Mode, RankOptions, SearchEngine};
use knowledge_db::store::{dir_size, Store};

pub(super) fn timed_add(
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
pub(super) fn time_tokenizing(records: &[Record]) -> Result<(f64, u64)> {
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
pub(super) fn real_targets(
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
pub(super) fn time_query_embeddings(engine: &SearchEngine, texts: &[String]) -> Result<f64> {
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

pub(super) fn time_searches(
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

pub(super) fn time_cli(
    options: &RunOptions,
    store: &Path,
    texts: &[String],
    mode: Mode,
) -> Result<CliTiming> {
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

pub(super) fn time_batch(
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
