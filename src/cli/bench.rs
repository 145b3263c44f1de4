//! `knowledge-db bench run`: the benchmark of a store of N generated records.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::output;
use crate::bench::run::{AddTiming, RunOptions, RunReport, VectorPlan};

/// What the benchmark corpus is generated from: `bench gen` and `bench run`
/// take the same flags.
#[derive(Debug, Args)]
pub(crate) struct GeneratorArgs {
    /// Folder of Claude Code transcripts the records are made from (*.jsonl,
    /// *.jsonl.gz, searched recursively)
    #[arg(long, value_name = "DIR")]
    pub(crate) from: PathBuf,

    /// Number of records to generate
    #[arg(long, default_value_t = 10_000)]
    pub(crate) records: usize,

    /// Number of queries (with one judged answer each)
    #[arg(long, default_value_t = 1_000)]
    pub(crate) queries: usize,

    /// Seed; the same seed gives the same corpus
    #[arg(long, default_value_t = 42)]
    pub(crate) seed: u64,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    corpus: GeneratorArgs,

    /// Where the corpus (reused between runs) and the stores are kept
    /// [default: $TMPDIR/knowledge-db-bench]
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,

    /// Vectors: real (every text through the model, cached between runs),
    /// sampled (--sample texts embedded, the rest perturbed copies), or none
    /// [default: real up to 100k records, sampled above]
    #[arg(long, value_enum)]
    vectors: Option<VectorPlan>,

    /// Distinct texts embedded for real with --vectors sampled
    #[arg(long, default_value_t = 20_000)]
    sample: usize,

    /// Vector cache file (text hash -> vector), kept between runs
    /// [default: ~/.cache/knowledge-db/bench-vectors.bin]
    #[arg(long, value_name = "FILE")]
    cache: Option<PathBuf>,

    /// One-shot `knowledge-db search` processes timed per mode
    #[arg(long, default_value_t = 30)]
    cli_runs: usize,

    /// Also write documents, queries and vectors here for `benches/peers.py`
    #[arg(long, value_name = "DIR")]
    export: Option<PathBuf>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let options = RunOptions {
        from: args.corpus.from.clone(),
        records: args.corpus.records,
        queries: args.corpus.queries,
        seed: args.corpus.seed,
        work: args
            .work
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("knowledge-db-bench")),
        vectors: args.vectors.unwrap_or(if args.corpus.records > 100_000 {
            VectorPlan::Sampled
        } else {
            VectorPlan::Real
        }),
        sample: args.sample,
        cache: args.cache.clone().unwrap_or_else(default_cache),
        exe: std::env::current_exe()?,
        cli_runs: args.cli_runs,
        export: args.export.clone(),
    };
    let spinner = output::spinner("benchmark");
    let report = crate::bench::run(&options, &mut |phase| {
        spinner.set_message(phase.to_string())
    })?;
    spinner.finish_and_clear();
    if args.json {
        output::print_json(&report)?;
    } else {
        print_report(&report);
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub(crate) struct MeasureArgs {
    /// The program and its arguments
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<std::ffi::OsString>,
}

/// `bench measure -- CMD...`: one line of JSON, `{"ms", "peak_rss_mb",
/// "success"}`; the exit code is 0 whenever the command could be run.
pub(crate) fn measure(args: MeasureArgs) -> anyhow::Result<ExitCode> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("bench measure needs a command"))?;
    let mut command = std::process::Command::new(program);
    command.args(rest);
    let measured = crate::bench::process::measure(&mut command)
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", Path::new(program).display()))?;
    println!("{}", serde_json::to_string(&measured)?);
    Ok(ExitCode::SUCCESS)
}

fn default_cache() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(|| Path::new(".cache").to_path_buf())
        .join("knowledge-db")
        .join("bench-vectors.bin")
}

fn print_report(r: &RunReport) {
    println!(
        "{} records, {} queries, vectors: {:?}",
        r.records, r.queries, r.vectors
    );
    if let Some(note) = &r.note {
        println!("note: {note}");
    }
    println!("read and parse     {:.2} s", r.read_and_parse_seconds);
    println!(
        "tokenize           {:.2} s on one thread ({:.1}M tokens; inside an add this work runs on the indexing threads)",
        r.tokenize_seconds,
        r.tokens as f64 / 1e6
    );
    print_add("add, BM25 only", &r.add_bm25);
    if let Some(add) = &r.add_with_vectors {
        print_add("add, with vectors", add);
        println!(
            "                   embedding {:.1} s ({} by the model{}, {} from cache, {} perturbed), index+commit {:.1} s",
            add.embed_seconds,
            add.texts_embedded,
            add.model_texts_per_sec
                .map(|t| format!(" at {t:.1} texts/s"))
                .unwrap_or_default(),
            add.texts_from_cache,
            add.texts_perturbed,
            add.index_and_commit_seconds
        );
    }
    if let Some(ms) = r.query_embedding_p50_ms {
        println!("query embedding    p50 {ms:.2} ms");
    }
    println!("| search (k=10, in process) | p50 ms | p95 ms | p99 ms | recall@10 | judged |");
    println!("|---|---|---|---|---|---|");
    for s in &r.search {
        println!(
            "| {:?} | {:.2} | {:.2} | {:.2} | {:.3} | {} |",
            s.mode, s.p50_ms, s.p95_ms, s.p99_ms, s.recall_at_10, s.judged_queries
        );
    }
    println!(
        "store: {} segments, {} HNSW graphs",
        r.segments, r.vector_graphs
    );
    if let Some(b) = &r.search_process {
        println!(
            "search --queries ({:?}, {} queries, one process): {:.1} s, peak RSS {:.0} MB",
            b.mode, b.queries, b.seconds, b.peak_rss_mb
        );
    }
    for c in &r.one_shot_cli {
        println!(
            "one-shot CLI search ({:?}, {} runs): p50 {:.1} ms, p95 {:.1} ms, peak RSS {:.0} MB",
            c.mode, c.runs, c.p50_ms, c.p95_ms, c.peak_rss_mb
        );
    }
}

fn print_add(label: &str, a: &AddTiming) {
    println!(
        "{label:<19}{:.0} records/s ({:.1} s), peak RSS {:.0} MB, {} on disk ({:.0} B/record)",
        a.records_per_sec,
        a.seconds,
        a.peak_rss_mb,
        knowledge_db::record::input::human_bytes(a.disk_bytes),
        a.bytes_per_record
    );
    let p = &a.phases;
    println!(
        "                   store phases: prepare {:.1} s, embed {:.1} s, index {:.1} s, commit {:.1} s, vectors+graphs {:.1} s",
        p.prepare_seconds, p.embed_seconds, p.index_seconds, p.commit_seconds, p.vectors_seconds
    );
}
