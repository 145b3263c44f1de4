//! Flag definitions of the core commands (add, search, get, delete, embed,
//! eval, bench gen), apart from the code that acts on them.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::*;
use knowledge_db::record::time::parse_bound;
use knowledge_db::record::Kind;
use knowledge_db::search::fusion::Fusion;
use knowledge_db::search::{Mode, RankOptions, TierFilter};

#[derive(Debug, Args)]
pub(super) struct JsonFlag {
    /// Print JSON instead of text
    #[arg(long)]
    pub(super) json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum Format {
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
pub(super) struct AddArgs {
    /// Files (.json, .jsonl), folders (searched recursively) or - for stdin
    #[arg(required = true, value_name = "PATH")]
    pub(super) paths: Vec<PathBuf>,

    /// Namespace for the records (a project or workspace) [default: the record's
    /// own `namespace`, else "default"]
    #[arg(long, value_name = "NS", conflicts_with = "namespace_field")]
    pub(super) namespace: Option<String>,

    /// Take each record's namespace from this metadata field (e.g. conv)
    #[arg(long, value_name = "FIELD")]
    pub(super) namespace_field: Option<String>,

    /// Record format
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub(super) format: Format,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    pub(super) lock_timeout: Option<f64>,

    /// Embed now, or later: write for BM25 at once and let `knowledge-db embed`
    /// add the vectors [default: `embedding.on_add` in config.toml, else now]
    #[arg(long, value_enum)]
    pub(super) embed: Option<EmbedWhen>,

    /// Validate only; write nothing
    #[arg(long)]
    pub(super) dry_run: bool,

    /// Print JSON instead of text
    #[arg(long)]
    pub(super) json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum EmbedWhen {
    Now,
    Later,
}

/// Ranking flags shared by `search` and `eval`.
#[derive(Debug, Clone, Args)]
pub(super) struct RankArgs {
    /// Retrievers: bm25 (words), vector (meaning) or hybrid (both, fused)
    #[arg(long, value_enum, default_value_t = Mode::Hybrid)]
    pub(super) mode: Mode,

    /// How hybrid mode fuses the two rankings
    #[arg(long, value_enum, default_value_t = knowledge_db::search::DEFAULT_FUSION)]
    pub(super) fusion: Fusion,

    /// Weight of the vector side in linear and z-score fusion (0 = BM25 only, 1 = vector only)
    #[arg(long, default_value_t = knowledge_db::search::DEFAULT_ALPHA, value_parser = parse_alpha)]
    pub(super) alpha: f32,
}

impl RankArgs {
    pub(super) fn options(&self) -> RankOptions {
        RankOptions {
            mode: self.mode,
            fusion: self.fusion,
            alpha: self.alpha,
        }
    }
}

pub(super) fn parse_score(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(s) if (0.0..=1.0).contains(&s) => Ok(s),
        _ => Err(format!("`{text}` is not a score from 0 to 1")),
    }
}

pub(super) fn parse_alpha(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(a) if (0.0..=1.0).contains(&a) => Ok(a),
        _ => Err(format!("`{text}` is not a number from 0 to 1")),
    }
}

#[derive(Debug, Args)]
pub(super) struct SearchArgs {
    /// What to look for: words, identifiers, file names, error codes
    #[arg(value_name = "QUERY", required_unless_present = "queries")]
    pub(super) query: Option<String>,

    /// Another phrasing of the same need (repeatable): every phrasing is
    /// searched and the hits are fused by rank, so what several phrasings
    /// find comes first. Ask in the user's words, by the names you guess
    /// (commands, files, settings, errors) and by the effect it had:
    /// `search "users kept getting logged out" --or "refresh token expiry"
    /// --or "session ends after an hour"`
    #[arg(long = "or", value_name = "QUERY", conflicts_with = "queries")]
    pub(super) or: Vec<String>,

    /// Number of results
    #[arg(short = 'k', long = "limit", default_value_t = 10)]
    pub(super) k: usize,

    /// Search this namespace
    #[arg(long, value_name = "NS", default_value = knowledge_db::record::DEFAULT_NAMESPACE, conflicts_with = "all_namespaces")]
    pub(super) namespace: String,

    /// Search every namespace
    #[arg(long)]
    pub(super) all_namespaces: bool,

    /// Only records of this project (a folder: its git root), and records of
    /// no project [default: the current folder's project, when the store
    /// holds records of it; else every project]
    #[arg(long, value_name = "DIR", conflicts_with = "all_projects")]
    pub(super) project: Option<PathBuf>,

    /// Search every project
    #[arg(long)]
    pub(super) all_projects: bool,

    /// Only records from this origin: `local` (this store's own) or the
    /// machine or user a record was pulled from by `sync`
    #[arg(long, value_name = "NAME")]
    pub(super) origin: Option<String>,

    /// Only records of this session (any unique start of its id, as git takes short commit ids)
    #[arg(long, value_name = "ID")]
    pub(super) session: Option<String>,

    /// Only records of this kind
    #[arg(long, value_enum)]
    pub(super) kind: Option<KindArg>,

    /// Only records at or after this time (2026-01-05, RFC 3339, or an age: 7d, 12h)
    #[arg(long, value_name = "TIME", value_parser = parse_time_arg)]
    pub(super) since: Option<i64>,

    /// Only records at or before this time
    #[arg(long, value_name = "TIME", value_parser = parse_time_arg)]
    pub(super) until: Option<i64>,

    /// Only records that touch this file (a path or its tail: oauth2.py)
    #[arg(long, value_name = "PATH")]
    pub(super) file: Option<String>,

    /// Tiers to search: l2 (the store), l3 (the archive) or all (ranked together, BM25)
    #[arg(long, value_enum, default_value_t = TierFilter::L2)]
    pub(super) tier: TierFilter,

    /// Run every query of a BEIR queries.jsonl; prints one JSON line per query
    #[arg(long, value_name = "FILE", conflicts_with = "query")]
    pub(super) queries: Option<PathBuf>,

    /// With --queries: search each query's own namespace, named by metadata.FIELD
    #[arg(long, value_name = "FIELD", requires = "queries")]
    pub(super) scope_field: Option<String>,

    #[command(flatten)]
    pub(super) rank: RankArgs,

    /// Leave out results scoring under this (scores are calibrated
    /// probabilities of relevance) [default: 0.08 when vectors are used; none with
    /// --mode bm25, without an embedding model, or with --fusion rrf|linear|zscore]
    #[arg(long, value_name = "SCORE", value_parser = parse_score, conflicts_with = "all")]
    pub(super) min_score: Option<f32>,

    /// Show weak results too (scoring under the default minimum), marked weak;
    /// the same as --min-score 0
    #[arg(long)]
    pub(super) all: bool,

    /// Show each result's BM25 score and rank, vector similarity and rank, and fused score
    #[arg(long)]
    pub(super) explain: bool,

    /// Mark matched words in bold: auto (on a terminal, unless NO_COLOR is set), always, never
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto)]
    pub(super) color: ColorWhen,

    /// Output: text, json (same as --json), or openclaw (OpenClaw's memory_search payload)
    #[arg(long, value_enum, default_value_t = SearchFormat::Text)]
    pub(super) format: SearchFormat,

    /// Print JSON instead of text
    #[arg(long)]
    pub(super) json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum ColorWhen {
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    /// Whether to color stdout.
    pub(super) fn on(self) -> bool {
        use std::io::IsTerminal;
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum SearchFormat {
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
pub(super) struct GetArgs {
    /// Record ids
    #[arg(required = true, value_name = "ID")]
    pub(super) ids: Vec<String>,

    /// Accepted for symmetry; records always print as JSON
    #[arg(long)]
    pub(super) json: bool,
}

#[derive(Debug, Args)]
pub(super) struct DeleteArgs {
    /// Record ids
    #[arg(required = true, value_name = "ID")]
    pub(super) ids: Vec<String>,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    pub(super) lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    pub(super) json: bool,
}

#[derive(Debug, Args)]
pub(super) struct EmbedArgs {
    /// Records embedded and committed at a time
    #[arg(long, default_value_t = 256)]
    pub(super) batch: usize,

    /// Embed with the int8 draft model (about twice as fast; cosine about 0.99
    /// to the full model's vectors). Drafts are searched like any vector; the
    /// upkeep worker, or `knowledge-db upkeep`, replaces them with the full
    /// model's. The worker drafts by itself from `[upkeep] draft_from` records.
    #[arg(long)]
    pub(super) draft: bool,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    pub(super) lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    pub(super) json: bool,
}

#[derive(Debug, Args)]
pub(super) struct EvalArgs {
    /// BEIR folder with corpus.jsonl, queries.jsonl and qrels/*.tsv
    #[arg(long, value_name = "DIR")]
    pub(super) corpus: PathBuf,

    /// Scope each query to the namespace in its metadata.FIELD [default: detected]
    #[arg(long, value_name = "FIELD", conflicts_with = "no_scope")]
    pub(super) scope_field: Option<String>,

    /// Search the whole corpus for every query
    #[arg(long)]
    pub(super) no_scope: bool,

    /// Build the evaluation store here and keep it (default: a temporary folder)
    #[arg(long, value_name = "DIR")]
    pub(super) keep_store: Option<PathBuf>,

    /// Also report quality per value of the queries' metadata.FIELD (e.g. category)
    #[arg(long, value_name = "FIELD")]
    pub(super) group_by: Option<String>,

    #[command(flatten)]
    pub(super) rank: RankArgs,

    /// Measure BM25, vector, RRF, linear and z-score fusion (alpha 0.3 to 0.5) side by side
    #[arg(long)]
    pub(super) compare: bool,

    /// Write each judged query's candidates (both retrievers' top 100 with exact
    /// BM25 score, cosine similarity, ranks and grade) as JSON lines, for fitting
    /// the relevance model (scripts/fit-relevance.py)
    #[arg(long, value_name = "FILE")]
    pub(super) dump_candidates: Option<PathBuf>,

    /// Queries that have no relevant record (BEIR queries.jsonl, e.g.
    /// dev-sets/negatives/queries.jsonl): reports the share answered with nothing
    #[arg(long, value_name = "FILE")]
    pub(super) negatives: Option<PathBuf>,

    /// Count results under this score as not returned [default: the default
    /// minimum of calibrated scores, none for other fusions]; 0 measures the
    /// ranking without abstention
    #[arg(long, value_name = "SCORE", value_parser = parse_score)]
    pub(super) min_score: Option<f32>,

    /// Print JSON instead of text
    #[arg(long)]
    pub(super) json: bool,
}

#[derive(Debug, Subcommand)]
pub(super) enum BenchCommand {
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
pub(super) struct GenArgs {
    #[command(flatten)]
    pub(super) corpus: super::bench::GeneratorArgs,

    /// Output folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)
    #[arg(long, value_name = "DIR")]
    pub(super) out: PathBuf,

    /// Print JSON instead of text
    #[arg(long)]
    pub(super) json: bool,
}

pub(super) fn parse_time_arg(text: &str) -> Result<i64, String> {
    parse_bound(text, knowledge_db::now_unix())
}
