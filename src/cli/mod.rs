//! The `knowledge-db` command line.
//!
//! Each subcommand is a thin layer over the library: parse flags, call one
//! function, print the result as text for people or as JSON (`--json`) for
//! programs. Exit codes: 0 success, 1 error, 2 usage error.

mod archive;
mod bench;
mod context;
mod export;
mod hook;
mod ingest;
mod mcp;
mod output;
mod qmd;
mod show;
mod upkeep;
mod verify;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::embed::{Embedder, OnnxEmbedder, Workload};
use crate::error::Error;
use crate::eval::{evaluate, EvalOptions};
use crate::record::time::parse_bound;
use crate::record::{Kind, ParseOptions};
use crate::search::batch::{read_queries, run_batch};
use crate::search::fusion::Fusion;
use crate::search::{Filters, Mode, RankOptions, SearchEngine, TierFilter};
use crate::store::{default_root, Store};

const AFTER_HELP: &str = "\
Examples:
  knowledge-db init
  knowledge-db add compressed_context/ notes.jsonl
  knowledge-db search \"oauth token refresh\" --since 7d
  knowledge-db search parseConfig --file src/config.rs --json
  knowledge-db eval --corpus ../shared/eval/scifact-dev

The store lives in --store DIR, else $KNOWLEDGE_DB_HOME, else ~/.local/share/knowledge-db.";

/// knowledge-db: long-term memory for AI coding agents.
///
/// Stores compressed context segments, cold task summaries, evicted messages and
/// notes, and finds them again with code-aware BM25 search, offline.
#[derive(Debug, Parser)]
#[command(name = "knowledge-db", version, after_help = AFTER_HELP)]
pub struct Cli {
    /// Store folder [default: $KNOWLEDGE_DB_HOME, else the platform data folder]
    #[arg(long, global = true, value_name = "DIR")]
    store: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a new, empty store.
    #[command(after_help = "Example:\n  knowledge-db init --store ./memory")]
    Init(JsonFlag),

    /// Add or update records from JSON files, folders, JSONL or stdin (`-`).
    ///
    /// Accepts the L2 segment JSON, cold-task summaries, messages, notes
    /// ({id, title, text, metadata}) and BEIR corpus lines, detected by their
    /// fields or named with a `kind` field. Records are upserted by id: re-adding
    /// an unchanged record does nothing. A batch is all-or-nothing: if any record is
    /// invalid, nothing is written and every problem is listed.
    #[command(
        visible_alias = "import",
        after_help = "Examples:\n  knowledge-db add ~/.claude/compressed_context/\n  knowledge-db add corpus.jsonl --namespace-field conv\n  knowledge-db import --format beir corpus.jsonl\n  echo '{\"id\":\"n1\",\"text\":\"use PKCE\"}' | knowledge-db add -"
    )]
    Add(AddArgs),

    /// Search the store; or run a batch of queries with --queries.
    #[command(
        after_help = "Examples:\n  knowledge-db search \"why did the migration fail\"\n  knowledge-db search E0502 --kind segment -k 3\n  knowledge-db search oauth2.py --session 4f1c --since 2026-01-01\n  knowledge-db search \"users kept getting signed out\" --all   # weak matches too\n  knowledge-db search --queries queries.jsonl --scope-field conv --json\n  knowledge-db search \"token refresh\" --format openclaw\n\nScores are calibrated probabilities of relevance (0..1, the same scale for every query and store); results under --min-score (default 0.10) are left out, so a query about something the store does not hold answers \"nothing relevant\" with the best score seen."
    )]
    Search(SearchArgs),

    /// Print records by id (their stored JSON), from L2 or the archive (L3).
    #[command(
        long_about = "Print records by id (their stored JSON). Records live in L2 are printed as \
                      stored; archived ones come from the archive (L3) with `\"tier\": \"l3\"`, \
                      when they were archived (`archived_at`) and what pruning dropped \
                      (`dropped`). Exits 1 if any id is in neither tier.",
        after_help = "Example:\n  knowledge-db get seg-0042"
    )]
    Get(GetArgs),

    /// Delete records by id.
    #[command(after_help = "Example:\n  knowledge-db delete seg-0042 s1:3")]
    Delete(DeleteArgs),

    /// Print the raw messages of a session's turns A-B (from the store, else
    /// the transcript): what an agent reads to compress a queued segment.
    #[command(after_help = show::AFTER_HELP)]
    Show(show::ShowArgs),

    /// Write every record (L2 and the archive) as JSON lines that `add` takes
    /// back unchanged: a backup, or a move to another store or machine.
    #[command(after_help = export::AFTER_HELP)]
    Export(export::ExportArgs),

    /// Show record counts by kind, tier and namespace, and sizes on disk.
    #[command(after_help = "Example:\n  knowledge-db stats --json")]
    Stats(JsonFlag),

    /// Do the store's upkeep now (vectors for records without one, the access
    /// log, the retention policy, interrupted operations), or show its state.
    #[command(after_help = upkeep::AFTER_HELP)]
    Upkeep(upkeep::UpkeepArgs),

    /// Compute vectors for records stored without one (`add --embed later`, or
    /// added before the model was installed), and build missing HNSW graphs.
    #[command(
        after_help = "Examples:\n  knowledge-db add notes.jsonl --embed later && knowledge-db embed\n  \
                      knowledge-db embed --draft    # quick int8 drafts; `upkeep` makes them again"
    )]
    Embed(EmbedArgs),

    /// Check the whole store: text index checksums, every record and embedding,
    /// vector files and graphs. Exits 1 if anything is wrong.
    #[command(after_help = "Example:\n  knowledge-db verify --json")]
    Verify(verify::VerifyArgs),

    /// Rebuild damaged or missing derived files (vector files, graphs) from the
    /// stored embeddings; never deletes a record. Says what it did.
    #[command(after_help = "Example:\n  knowledge-db verify || knowledge-db repair")]
    Repair(verify::RepairArgs),

    /// Move L2 records into the compressed archive (L3).
    ///
    /// Matching records are appended to zstd files under <store>/archive/ (one per
    /// month of the record's own time), stay searchable with `search --tier l3|all`,
    /// and leave the L2 indexes. Conditions combine: all must hold.
    #[command(
        after_help = "Examples:\n  knowledge-db archive --older-than 30d --dry-run\n  knowledge-db archive --older-than 7d --idle-for 14d --namespace myproj\n  knowledge-db archive --session 4f1c9a2e --turns-before 200"
    )]
    Archive(archive::ArchiveArgs),

    /// Reduce archived records past retention to their summaries.
    ///
    /// A segment keeps its id, topic, session, turn range, timestamps and
    /// compressed_content; a task its subject and key outcomes; raw messages are
    /// replaced by one summary per session (count, time range, turns, ids).
    #[command(
        after_help = "Examples:\n  knowledge-db prune --dry-run\n  knowledge-db prune --older-than 90d --json"
    )]
    Prune(archive::PruneArgs),

    /// Apply the retention policy of config.toml ([retention]): archive cold L2
    /// records, prune old archived ones. Cheap when nothing is due; made for cron.
    #[command(
        after_help = "Examples:\n  knowledge-db maintain\n  crontab: 17 * * * * knowledge-db maintain --store ~/.local/share/knowledge-db"
    )]
    Maintain(archive::MaintainArgs),

    /// Bring archived records back to L2, with their embeddings.
    #[command(
        after_help = "Examples:\n  knowledge-db restore seg-0042 s1:3\n  knowledge-db restore --session 4f1c9a2e"
    )]
    Restore(archive::RestoreArgs),

    /// Measure retrieval quality and speed on a BEIR folder.
    ///
    /// Builds a temporary store from corpus.jsonl, runs every judged query from
    /// queries.jsonl, and reports nDCG@10, Recall@5/10/100, MRR@10 and latency.
    #[command(
        after_help = "Examples:\n  knowledge-db eval --corpus ../shared/eval/scifact-dev\n  knowledge-db eval --corpus ../shared/eval/locomo-dev --json --keep-store /tmp/locomo\n  knowledge-db eval --corpus dev-sets/agent-questions --keep-store /tmp/agent\n  knowledge-db eval --corpus ../shared/eval/scifact-dev --negatives dev-sets/negatives/queries.jsonl"
    )]
    Eval(EvalArgs),

    /// Generate benchmark corpora from real agent transcripts.
    #[command(subcommand)]
    Bench(BenchCommand),

    /// Store agent transcripts (Claude Code, OpenClaw, generic JSONL) as
    /// searchable messages; a transcript that grew adds only its new part.
    #[command(after_help = ingest::AFTER_HELP)]
    Ingest(ingest::IngestArgs),

    /// Count a transcript's tokens per message and in total, by model family.
    #[command(after_help = context::TOKENS_HELP)]
    Tokens(context::TokensArgs),

    /// Roll a transcript's context: evict the oldest messages to the store until
    /// the rest fit the budget; print the kept messages and one eviction note.
    #[command(after_help = context::EVICT_HELP)]
    Evict(context::EvictArgs),

    /// Fit a whole prompt (system, instructions, transcript) into a token budget
    /// by priority; store what is dropped, print the rest and one note.
    #[command(after_help = context::PACK_HELP)]
    Pack(context::PackArgs),
    /// Serve the store to agents over MCP (stdio): memory_search, memory_get,
    /// memory_add, memory_stats.
    #[command(after_help = mcp::AFTER_HELP)]
    Mcp(mcp::McpArgs),

    /// A QMD-compatible command surface, for OpenClaw's `memory.backend = "qmd"`.
    #[command(subcommand, after_help = qmd::AFTER_HELP)]
    Qmd(qmd::QmdCommand),

    /// Claude Code integration: install the hooks, the skill and the MCP server;
    /// the hooks themselves (post-tool-use, pre-compact, session-start).
    #[command(subcommand)]
    Hook(hook::HookCommand),
}

#[derive(Debug, Args)]
struct JsonFlag {
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// Detect each record's kind from its fields
    Auto,
    Segment,
    Task,
    Message,
    Note,
    /// BEIR corpus lines ({_id, title, text, metadata}), stored as notes
    Beir,
}

#[derive(Debug, Args)]
struct AddArgs {
    /// Files (.json, .jsonl), folders (searched recursively) or - for stdin
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,

    /// Namespace for the records (a project or workspace) [default: the record's
    /// own `namespace`, else "default"]
    #[arg(long, value_name = "NS", conflicts_with = "namespace_field")]
    namespace: Option<String>,

    /// Take each record's namespace from this metadata field (e.g. conv)
    #[arg(long, value_name = "FIELD")]
    namespace_field: Option<String>,

    /// Record format
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    format: Format,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Embed now, or later: write for BM25 at once and let `knowledge-db embed`
    /// add the vectors [default: `embedding.on_add` in config.toml, else now]
    #[arg(long, value_enum)]
    embed: Option<EmbedWhen>,

    /// Validate only; write nothing
    #[arg(long)]
    dry_run: bool,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EmbedWhen {
    Now,
    Later,
}

/// Ranking flags shared by `search` and `eval`.
#[derive(Debug, Clone, Args)]
struct RankArgs {
    /// Retrievers: bm25 (words), vector (meaning) or hybrid (both, fused)
    #[arg(long, value_enum, default_value_t = Mode::Hybrid)]
    mode: Mode,

    /// How hybrid mode fuses the two rankings
    #[arg(long, value_enum, default_value_t = crate::search::DEFAULT_FUSION)]
    fusion: Fusion,

    /// Weight of the vector side in linear and z-score fusion (0 = BM25 only, 1 = vector only)
    #[arg(long, default_value_t = crate::search::DEFAULT_ALPHA, value_parser = parse_alpha)]
    alpha: f32,
}

impl RankArgs {
    fn options(&self) -> RankOptions {
        RankOptions {
            mode: self.mode,
            fusion: self.fusion,
            alpha: self.alpha,
        }
    }
}

fn parse_score(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(s) if (0.0..=1.0).contains(&s) => Ok(s),
        _ => Err(format!("`{text}` is not a score from 0 to 1")),
    }
}

fn parse_alpha(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(a) if (0.0..=1.0).contains(&a) => Ok(a),
        _ => Err(format!("`{text}` is not a number from 0 to 1")),
    }
}

#[derive(Debug, Args)]
struct SearchArgs {
    /// What to look for: words, identifiers, file names, error codes
    #[arg(value_name = "QUERY", required_unless_present = "queries")]
    query: Option<String>,

    /// Number of results
    #[arg(short = 'k', long = "limit", default_value_t = 10)]
    k: usize,

    /// Search this namespace
    #[arg(long, value_name = "NS", default_value = crate::record::DEFAULT_NAMESPACE, conflicts_with = "all_namespaces")]
    namespace: String,

    /// Search every namespace
    #[arg(long)]
    all_namespaces: bool,

    /// Only records of this session
    #[arg(long, value_name = "ID")]
    session: Option<String>,

    /// Only records of this kind
    #[arg(long, value_enum)]
    kind: Option<KindArg>,

    /// Only records at or after this time (2026-01-05, RFC 3339, or an age: 7d, 12h)
    #[arg(long, value_name = "TIME", value_parser = parse_time_arg)]
    since: Option<i64>,

    /// Only records at or before this time
    #[arg(long, value_name = "TIME", value_parser = parse_time_arg)]
    until: Option<i64>,

    /// Only records that touch this file (a path or its tail: oauth2.py)
    #[arg(long, value_name = "PATH")]
    file: Option<String>,

    /// Tiers to search: l2 (the store), l3 (the archive) or all (ranked together, BM25)
    #[arg(long, value_enum, default_value_t = TierFilter::L2)]
    tier: TierFilter,

    /// Run every query of a BEIR queries.jsonl; prints one JSON line per query
    #[arg(long, value_name = "FILE", conflicts_with = "query")]
    queries: Option<PathBuf>,

    /// With --queries: search each query's own namespace, named by metadata.FIELD
    #[arg(long, value_name = "FIELD", requires = "queries")]
    scope_field: Option<String>,

    #[command(flatten)]
    rank: RankArgs,

    /// Leave out results scoring under this (scores are calibrated
    /// probabilities of relevance) [default: 0.10 when vectors are used; none with
    /// --mode bm25, without an embedding model, or with --fusion rrf|linear|zscore]
    #[arg(long, value_name = "SCORE", value_parser = parse_score, conflicts_with = "all")]
    min_score: Option<f32>,

    /// Show weak results too (scoring under the default minimum), marked weak;
    /// the same as --min-score 0
    #[arg(long)]
    all: bool,

    /// Show each result's BM25 score and rank, vector similarity and rank, and fused score
    #[arg(long)]
    explain: bool,

    /// Output: text, json (same as --json), or openclaw (OpenClaw's memory_search payload)
    #[arg(long, value_enum, default_value_t = SearchFormat::Text)]
    format: SearchFormat,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SearchFormat {
    Text,
    Json,
    /// {results:[{path,startLine,endLine,score,vectorScore,textScore,snippet,source,citation}],…}
    Openclaw,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum KindArg {
    Segment,
    Task,
    Message,
    Note,
}

impl From<KindArg> for Kind {
    fn from(k: KindArg) -> Kind {
        match k {
            KindArg::Segment => Kind::Segment,
            KindArg::Task => Kind::Task,
            KindArg::Message => Kind::Message,
            KindArg::Note => Kind::Note,
        }
    }
}

#[derive(Debug, Args)]
struct GetArgs {
    /// Record ids
    #[arg(required = true, value_name = "ID")]
    ids: Vec<String>,

    /// Accepted for symmetry; records always print as JSON
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct DeleteArgs {
    /// Record ids
    #[arg(required = true, value_name = "ID")]
    ids: Vec<String>,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct EmbedArgs {
    /// Records embedded and committed at a time
    #[arg(long, default_value_t = 256)]
    batch: usize,

    /// Embed with the int8 draft model (about twice as fast; cosine about 0.99
    /// to the full model's vectors). Drafts are searched like any vector; the
    /// upkeep worker, or `knowledge-db upkeep`, replaces them with the full
    /// model's. The worker drafts by itself from `[upkeep] draft_from` records.
    #[arg(long)]
    draft: bool,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct EvalArgs {
    /// BEIR folder with corpus.jsonl, queries.jsonl and qrels/*.tsv
    #[arg(long, value_name = "DIR")]
    corpus: PathBuf,

    /// Scope each query to the namespace in its metadata.FIELD [default: detected]
    #[arg(long, value_name = "FIELD", conflicts_with = "no_scope")]
    scope_field: Option<String>,

    /// Search the whole corpus for every query
    #[arg(long)]
    no_scope: bool,

    /// Build the evaluation store here and keep it (default: a temporary folder)
    #[arg(long, value_name = "DIR")]
    keep_store: Option<PathBuf>,

    /// Also report quality per value of the queries' metadata.FIELD (e.g. category)
    #[arg(long, value_name = "FIELD")]
    group_by: Option<String>,

    #[command(flatten)]
    rank: RankArgs,

    /// Measure BM25, vector, RRF, linear and z-score fusion (alpha 0.3 to 0.5) side by side
    #[arg(long)]
    compare: bool,

    /// Write each judged query's candidates (both retrievers' top 100 with exact
    /// BM25 score, cosine similarity, ranks and grade) as JSON lines, for fitting
    /// the relevance model (scripts/fit-relevance.py)
    #[arg(long, value_name = "FILE")]
    dump_candidates: Option<PathBuf>,

    /// Queries that have no relevant record (BEIR queries.jsonl, e.g.
    /// dev-sets/negatives/queries.jsonl): reports the share answered with nothing
    #[arg(long, value_name = "FILE")]
    negatives: Option<PathBuf>,

    /// Count results under this score as not returned [default: the default
    /// minimum of calibrated scores, none for other fusions]; 0 measures the
    /// ranking without abstention
    #[arg(long, value_name = "SCORE", value_parser = parse_score)]
    min_score: Option<f32>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Write a BEIR folder of realistic records and queries made from transcripts.
    #[command(
        after_help = "Example:\n  knowledge-db bench gen --from ../shared/eval/transcripts/claude-code-entire-cli --records 100000 --out /tmp/bench-100k\n  knowledge-db eval --corpus /tmp/bench-100k"
    )]
    Gen(GenArgs),

    /// Measure a store of N generated records: add throughput with and without
    /// vectors, search latency and recall@10 per retriever, one-shot CLI time,
    /// peak memory and bytes on disk.
    #[command(
        after_help = "Examples:\n  knowledge-db bench run --from ../shared/eval/transcripts/claude-code-entire-cli --records 10000\n  knowledge-db bench run --from ../shared/eval/transcripts/claude-code-entire-cli --records 1000000 --vectors sampled --json"
    )]
    Run(bench::RunArgs),

    /// Run a command to its end and print its wall time and peak memory as
    /// JSON (the helper `bench run` times search processes through).
    #[command(hide = true)]
    Measure(bench::MeasureArgs),
}

#[derive(Debug, Args)]
struct GenArgs {
    /// Folder of Claude Code transcripts (*.jsonl, *.jsonl.gz), searched recursively
    #[arg(long, value_name = "DIR")]
    from: PathBuf,

    /// Number of records to generate
    #[arg(long, default_value_t = 10_000)]
    records: usize,

    /// Number of queries (with one judged answer each)
    #[arg(long, default_value_t = 1_000)]
    queries: usize,

    /// Seed; the same seed gives the same corpus
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Output folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)
    #[arg(long, value_name = "DIR")]
    out: PathBuf,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

fn parse_time_arg(text: &str) -> Result<i64, String> {
    parse_bound(text, crate::now_unix())
}

/// Runs the command line; the binary's `main`.
pub fn main() -> ExitCode {
    closed_pipe_ends_quietly(true);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    if matches!(cli.command, Command::Mcp(_)) {
        closed_pipe_ends_quietly(false);
    }
    let root = cli.store.clone().unwrap_or_else(default_root);
    match run(cli) {
        Ok(code) => code,
        Err(mut error) => {
            if let Some(e) = error.downcast_mut::<Error>() {
                e.name_denied_path(&root);
            }
            eprintln!("error: {}", output::error_chain(&error));
            let usage = error
                .downcast_ref::<Error>()
                .is_some_and(|e| matches!(e, Error::Usage(_)));
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

/// What a write to a pipe whose reader has gone does (`knowledge-db search … | head -1`).
///
/// Rust ignores SIGPIPE, so such a write fails with EPIPE: `println!` panics
/// ("failed printing to stdout") and a checked write becomes an error message.
/// A command's output is the last thing it does (records are committed before
/// anything is printed, hooks save their state before they answer), so when the
/// reader has gone nothing is left to do: the process ends there, silently, as
/// `cat` or `grep` do, whichever of the many print paths it was in. That is
/// SIGPIPE's default action, restored here once for every command
/// (`quietly = true`). The MCP server is the exception (`false`): its stdout is
/// the protocol, a closed one ends its serve loop through an error it handles,
/// and tool calls still running (a `memory_add` commit) finish first.
fn closed_pipe_ends_quietly(quietly: bool) {
    #[cfg(unix)]
    // SAFETY: SIG_DFL and SIG_IGN are valid dispositions for SIGPIPE, and
    // `signal` changes the process's disposition atomically (threads included).
    unsafe {
        libc::signal(
            libc::SIGPIPE,
            if quietly {
                libc::SIG_DFL
            } else {
                libc::SIG_IGN
            },
        );
    }
    #[cfg(not(unix))]
    let _ = quietly;
}

/// Runs `work` with SIGPIPE ignored, then restores the quiet default: for
/// work that writes to child processes' stdin (`hook doctor` feeds hooks and
/// an MCP server), where a child that exits before reading must be an error
/// the work reports, not the end of this process.
pub(crate) fn with_child_pipes<T>(work: impl FnOnce() -> T) -> T {
    closed_pipe_ends_quietly(false);
    let result = work();
    closed_pipe_ends_quietly(true);
    result
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let root = cli.store.clone().unwrap_or_else(default_root);
    match cli.command {
        Command::Init(args) => init(&root, args.json),
        Command::Add(args) => add(&root, args),
        Command::Search(args) => search(&root, args),
        Command::Get(args) => get(&root, args),
        Command::Delete(args) => delete(&root, args),
        Command::Show(args) => show::run(&root, args),
        Command::Export(args) => export::run(&root, args),
        Command::Stats(args) => stats(&root, args.json),
        Command::Upkeep(args) => upkeep::run(&root, args),
        Command::Embed(args) => embed(&root, args),
        Command::Eval(args) => eval(args),
        Command::Verify(args) => verify::run_verify(&root, args),
        Command::Repair(args) => verify::run_repair(&root, args),
        Command::Archive(args) => archive::run_archive(&root, args),
        Command::Prune(args) => archive::run_prune(&root, args),
        Command::Maintain(args) => archive::run_maintain(&root, args),
        Command::Restore(args) => archive::run_restore(&root, args),
        Command::Bench(BenchCommand::Gen(args)) => bench_gen(args),
        Command::Bench(BenchCommand::Run(args)) => bench::run(args),
        Command::Bench(BenchCommand::Measure(args)) => bench::measure(args),
        Command::Ingest(args) => ingest::run(&root, args),
        Command::Tokens(args) => context::tokens(args),
        Command::Evict(args) => context::evict(&root, args),
        Command::Pack(args) => context::pack(&root, args),
        Command::Mcp(args) => mcp::run(&root, args),
        Command::Qmd(command) => qmd::run(&root, command),
        Command::Hook(command) => hook::run(&root, command),
    }
}

fn init(root: &std::path::Path, json: bool) -> anyhow::Result<ExitCode> {
    let store = Store::init(root)?;
    if json {
        output::print_json(&serde_json::json!({
            "store": store.root(),
            "format_version": store.config().format_version,
        }))?;
    } else {
        println!("created an empty store at {}", store.root().display());
    }
    Ok(ExitCode::SUCCESS)
}

fn add(root: &std::path::Path, args: AddArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let options = ParseOptions {
        kind: match args.format {
            Format::Auto => None,
            Format::Segment => Some(Kind::Segment),
            Format::Task => Some(Kind::Task),
            Format::Message => Some(Kind::Message),
            Format::Note | Format::Beir => Some(Kind::Note),
        },
        namespace: args.namespace.clone(),
        namespace_field: args.namespace_field.clone(),
        added_at: crate::now_rfc3339(),
    };
    let spinner = output::spinner("reading and indexing records");
    let mut stdin = std::io::stdin().lock();
    if args.dry_run {
        let batch = crate::load::read_records(&store, &args.paths, &mut stdin, &options)?;
        spinner.finish_and_clear();
        if args.json {
            output::print_json(&serde_json::json!({
                "dry_run": true,
                "valid_records": batch.len(),
                "export_lines": batch.imported.len(),
                "bytes_read": batch.bytes,
            }))?;
        } else {
            println!(
                "{} valid records ({}); nothing written (--dry-run)",
                batch.len(),
                crate::record::input::human_bytes(batch.bytes)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let when = args.embed.unwrap_or(match store.config().embedding.on_add {
        crate::store::config::EmbedOnAdd::Now => EmbedWhen::Now,
        crate::store::config::EmbedOnAdd::Later => EmbedWhen::Later,
    });
    let mut embedder = match when {
        EmbedWhen::Now => match load_embedder(Workload::Batches) {
            Ok(embedder) => Some(embedder),
            Err(why) => {
                eprintln!("note: {why}; adding for BM25 search only (run `knowledge-db embed` once the model is installed)");
                None
            }
        },
        EmbedWhen::Later => None,
    };
    // A segment a queue waits for moves its queue entry (see hooks::queue).
    let started = std::time::Instant::now();
    let batch = crate::load::read_records(&store, &args.paths, &mut stdin, &options)?;
    let outcome = crate::integrations::hooks::queue::add_and_settle(
        &store,
        batch,
        embedder.as_mut().map(|e| e.as_mut() as &mut dyn Embedder),
        store.lock_timeout(args.lock_timeout),
        started,
    )?;
    let summary = &outcome.summary;
    spinner.finish_and_clear();
    if args.json {
        let mut value = serde_json::to_value(summary)?;
        value["compressed"] = serde_json::to_value(&outcome.compressed)?;
        output::print_json(&value)?;
    } else {
        output::print_add_summary(summary);
        for line in crate::integrations::hooks::queue::arrival_lines(&outcome.compressed) {
            println!("{line}");
        }
    }
    if let Some(why) = &outcome.queue_error {
        eprintln!("warning: the records were added, but the compression queue was not updated: {why} (the next hook call settles it)");
    }
    after_write(&store, None);
    Ok(ExitCode::SUCCESS)
}

/// After a successful write: starts the background upkeep when something is
/// due (or, with upkeep off, applies the retention policy here). The write
/// already succeeded, so anything that goes wrong is a line on stderr.
pub(crate) fn after_write(store: &Store, vectors_waiting: Option<u64>) {
    if let Some(line) = crate::upkeep::after_write(store, vectors_waiting) {
        eprintln!("{line}");
    }
}

fn search(root: &std::path::Path, args: SearchArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let filters = Filters {
        namespace: (!args.all_namespaces).then(|| args.namespace.clone()),
        session: args.session.clone(),
        kind: args.kind.map(Kind::from),
        since: args.since,
        until: args.until,
        file: args.file.clone(),
        tier: args.tier,
        min_score: if args.all { Some(0.0) } else { args.min_score },
    };
    let rank = args.rank.options();
    // Tier searches rank by BM25 alone: no model to load.
    let engine = if args.tier == TierFilter::L2 {
        // A queries file is a long run: a session that loads slower, embeds faster.
        let workload = match args.queries {
            Some(_) => Workload::Batches,
            None => Workload::Queries,
        };
        engine_for(&store, &rank, workload)?
    } else {
        SearchEngine::new(&store)?
    };
    if let Some(path) = &args.queries {
        let queries = read_queries(path)?;
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        run_batch(
            &engine,
            &queries,
            args.k,
            &filters,
            &rank,
            args.scope_field.as_deref(),
            |result| {
                serde_json::to_writer(&mut out, &result)
                    .map_err(|e| Error::io("stdout", e.into()))?;
                out.write_all(b"\n").map_err(|e| Error::io("stdout", e))
            },
        )?;
        out.flush().context("writing results")?;
        return Ok(ExitCode::SUCCESS);
    }
    let query = args.query.as_deref().unwrap_or_default();
    let response = engine.search(query, args.k, &filters, &rank)?;
    if args.format == SearchFormat::Openclaw {
        // The search logged these reads already: read the sources without `get`.
        let searcher = store.reader()?.searcher();
        let sources = response
            .results
            .iter()
            .map(|hit| {
                let record = crate::store::get_record(&searcher, store.fields(), &hit.id)?;
                Ok(record.map(|r| r.source))
            })
            .collect::<crate::Result<Vec<_>>>()?;
        output::print_json(&crate::integrations::openclaw::search_payload(
            &response, &sources,
        ))?;
    } else if args.json || args.format == SearchFormat::Json {
        output::print_json(&response)?;
    } else {
        output::print_search(&response, std::io::stdout().is_terminal(), args.explain);
    }
    crate::upkeep::after_read(&store, response.records_without_vector);
    Ok(ExitCode::SUCCESS)
}

fn get(root: &std::path::Path, args: GetArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for id in &args.ids {
        match store.find(id)? {
            Some(record) => found.push(record),
            None => missing.push(id.clone()),
        }
    }
    // One id prints the record itself; several print them together with the misses.
    if args.ids.len() == 1 {
        if let Some(record) = found.first() {
            output::print_json(&output::found_json(record))?;
        }
    } else {
        let records: Vec<_> = found.iter().map(output::found_json).collect();
        output::print_json(&serde_json::json!({"records": records, "missing": missing}))?;
    }
    if !missing.is_empty() {
        eprintln!("error: no record with id {}", missing.join(", "));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn delete(root: &std::path::Path, args: DeleteArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let report = store.delete(&args.ids, store.lock_timeout(args.lock_timeout))?;
    if args.json {
        output::print_json(&report)?;
    } else {
        println!(
            "deleted {} record{}",
            report.deleted.len(),
            if report.deleted.len() == 1 { "" } else { "s" }
        );
    }
    if !report.missing.is_empty() {
        eprintln!("error: no record with id {}", report.missing.join(", "));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn stats(root: &std::path::Path, json: bool) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let stats = store.stats()?;
    let status = crate::upkeep::status(&store);
    if json {
        let mut value = serde_json::to_value(&stats)?;
        value["upkeep"] = serde_json::to_value(&status)?;
        output::print_json(&value)?;
    } else {
        output::print_stats(&stats);
        let described = upkeep::describe(&status, stats.vectors.without_vector);
        println!(
            "upkeep          {}",
            described.replace('\n', "\n                ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn eval(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let has = |file: &str| args.corpus.join(file).is_file();
    if !has("queries.jsonl") || !(has("corpus.jsonl") || has("transcripts.txt")) {
        bail!(Error::Usage(format!(
            "{} is not an evaluation folder; --corpus takes a BEIR folder (corpus.jsonl, \
             queries.jsonl, qrels/*.tsv) or an agent-questions folder (transcripts.txt, \
             queries.jsonl, qrels/records.tsv, qrels/sessions.tsv)",
            args.corpus.display()
        )));
    }
    let options = EvalOptions {
        corpus_dir: args.corpus.clone(),
        scope_field: args.scope_field.clone(),
        no_scope: args.no_scope,
        store_dir: args.keep_store.clone(),
        group_by: args.group_by.clone(),
        runs: if args.compare {
            crate::eval::comparison_runs()
        } else {
            vec![args.rank.options()]
        },
        dump_candidates: args.dump_candidates.clone(),
        negatives: args.negatives.clone(),
        min_score: args.min_score,
    };
    let needs_vectors = options.runs.iter().any(|r| r.mode != Mode::Bm25);
    let embedder = if needs_vectors {
        load_embedder(Workload::Batches)
    } else {
        Err("not used in --mode bm25".to_string())
    };
    let bar = output::progress_bar();
    let report = evaluate(&options, embedder, &mut |phase, done, total| {
        bar.set_message(phase.to_string());
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if args.json {
        output::print_json(&report)?;
    } else {
        output::print_eval(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn embed(root: &std::path::Path, args: EmbedArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let mut embedder = if args.draft {
        OnnxEmbedder::load_draft(&crate::embed::ModelLocation::locate())
            .map(|e| Box::new(e) as Box<dyn Embedder>)
            .map_err(|e| {
                anyhow::anyhow!(
                    "{e} (the draft model comes with `{}`)",
                    crate::embed::SETUP_COMMAND
                )
            })?
    } else {
        load_embedder(Workload::Batches).map_err(anyhow::Error::msg)?
    };
    let bar = output::progress_bar();
    bar.set_message(if args.draft { "drafting" } else { "embedding" });
    let started = std::time::Instant::now();
    let done = store.embed_missing(
        embedder.as_mut(),
        args.batch,
        store.lock_timeout(args.lock_timeout),
        &mut |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        },
    )?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        output::print_json(
            &serde_json::json!({"embedded": done, "drafts": args.draft, "seconds": seconds}),
        )?;
    } else if args.draft {
        println!(
            "drafted {done} vectors in {seconds:.1}s; the upkeep replaces them with the full model's"
        );
    } else {
        println!("embedded {done} records in {seconds:.1}s");
    }
    Ok(ExitCode::SUCCESS)
}

/// The real embedder, or why it cannot be loaded.
fn load_embedder(workload: Workload) -> Result<Box<dyn Embedder>, String> {
    OnnxEmbedder::load_default(workload)
        .map(|e| Box::new(e) as Box<dyn Embedder>)
        .map_err(|e| e.to_string())
}

/// A search engine for `rank`: BM25 alone needs no model; otherwise the model is
/// loaded only if the store has vectors to compare with, set up for one query
/// (fast to load) or for many (`workload`).
fn engine_for(
    store: &Store,
    rank: &RankOptions,
    workload: Workload,
) -> anyhow::Result<SearchEngine> {
    if rank.mode == Mode::Bm25 {
        return Ok(SearchEngine::new(store)?);
    }
    let searcher = store.reader()?.searcher();
    let coverage = crate::vectors::coverage(&searcher)?;
    let embedder = if coverage.with_vector == 0 && coverage.without_vector > 0 {
        Err("no record in the store has a vector yet (run `knowledge-db embed`)".to_string())
    } else {
        load_embedder(workload)
    };
    Ok(SearchEngine::with_embedder(store, embedder)?)
}

fn bench_gen(args: GenArgs) -> anyhow::Result<ExitCode> {
    let options = crate::bench::gen::GenOptions {
        from: args.from.clone(),
        records: args.records,
        queries: args.queries,
        seed: args.seed,
        out: args.out.clone(),
    };
    let bar = output::progress_bar();
    bar.set_length(args.records as u64);
    bar.set_message("generating records");
    let summary = crate::bench::gen::generate(&options, &mut |n| bar.set_position(n as u64))?;
    bar.finish_and_clear();
    if args.json {
        output::print_json(&serde_json::json!({
            "out": args.out,
            "sessions_read": summary.sessions_read,
            "source_lines": summary.source_lines,
            "records": summary.records,
            "segments": summary.segments,
            "tasks": summary.tasks,
            "messages": summary.messages,
            "queries": summary.queries,
            "bytes_written": summary.bytes_written,
        }))?;
    } else {
        println!(
            "wrote {} records ({} segments, {} tasks, {} messages) and {} queries from {} sessions to {}",
            summary.records,
            summary.segments,
            summary.tasks,
            summary.messages,
            summary.queries,
            summary.sessions_read,
            args.out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
