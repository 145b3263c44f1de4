//! `knowledge-db ingest`: store agent transcripts as searchable messages.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::{load_embedder, output, EmbedWhen};
use knowledge_db::embed::{Embedder, Workload};
use knowledge_db::store::Store;
use knowledge_db::transcript::ingest::{ingest, IngestOptions, IngestReport};
use knowledge_db::transcript::{find_files, Format};

pub const AFTER_HELP: &str = "\
Examples:
  knowledge-db ingest ~/.claude/projects                     # every session you have
  knowledge-db ingest ~/.claude/projects/-home-me-proj/4f1c9a2e.jsonl
  knowledge-db ingest ~/.claude/projects/-home-me-proj/ --namespace proj --embed later
  knowledge-db ingest ~/.openclaw/agents/main/sessions/ --format openclaw
  knowledge-db ingest --dry-run ~/.claude/projects --json   # read and count only

Each message becomes a `message` record (id <session>:<message uuid>) with its
role, turn (the session's Nth prompt and what answered it, from 1), timestamp,
tool names, commands and file paths. Running ingest again on a transcript that
grew reads and adds only the new part; unchanged messages are not rewritten.
Records are committed every 8,192 or so: Ctrl-C stops after the current step,
keeps what was stored and says so, and the same command again goes on from
there. Folders are searched for .jsonl, .jsonl.gz and .json files (subagent
transcripts included). --dry-run reads and counts without a store.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Detect from the first lines
    Auto,
    /// Claude Code session JSONL
    ClaudeCode,
    /// OpenClaw / pi session format v3
    Openclaw,
    /// One {role, content, timestamp} object a line
    Generic,
}

impl FormatArg {
    pub fn format(self) -> Option<Format> {
        match self {
            FormatArg::Auto => None,
            FormatArg::ClaudeCode => Some(Format::ClaudeCode),
            FormatArg::Openclaw => Some(Format::Openclaw),
            FormatArg::Generic => Some(Format::Generic),
        }
    }
}

/// Flags every command that reads a transcript and writes to the store shares.
#[derive(Debug, Args)]
pub struct TranscriptStoreArgs {
    /// Transcript format
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,

    /// Namespace for the stored messages (a project or workspace)
    #[arg(long, value_name = "NS", default_value = knowledge_db::record::DEFAULT_NAMESPACE)]
    pub namespace: String,

    /// Read and report only; write nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    pub lock_timeout: Option<f64>,

    /// Print one JSON report instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Transcript files (.jsonl, .jsonl.gz, .json) or folders of them
    #[arg(required = true, value_name = "TRANSCRIPT")]
    paths: Vec<PathBuf>,

    #[command(flatten)]
    common: TranscriptStoreArgs,

    /// Embed now (before returning), or later (`knowledge-db embed` or the
    /// background upkeep adds the vectors). Without the flag: `embedding.on_add`
    /// of config.toml ("now" in a new store), except that a run of more than
    /// `embedding.ingest_inline_max` records (1,000) is stored without vectors
    /// at once and the background upkeep embeds it; `--embed now` always embeds
    #[arg(long, value_enum)]
    embed: Option<EmbedWhen>,

    /// Read every file from the start, ignoring the saved read positions
    #[arg(long)]
    full: bool,
}

pub fn run(root: &std::path::Path, args: IngestArgs) -> anyhow::Result<ExitCode> {
    let common = &args.common;
    let files = find_files(&args.paths)?;
    let store = if common.dry_run {
        None
    } else {
        Some(Store::open(root)?)
    };
    let options = IngestOptions {
        format: common.format.format(),
        namespace: common.namespace.clone(),
        dry_run: common.dry_run,
        full: args.full,
        // Only the default defers a large batch; `--embed now` is obeyed.
        inline_embed_max: match (&store, args.embed) {
            (Some(store), None) => Some(store.config().embedding.ingest_inline_max),
            _ => None,
        },
        stop: None,
    };
    let mut embedder = match (&store, args.embed) {
        (None, _) => None,
        (Some(store), when) => {
            let later = when == Some(EmbedWhen::Later)
                || (when.is_none()
                    && store.config().embedding.on_add
                        == knowledge_db::store::config::EmbedOnAdd::Later);
            if later {
                None
            } else {
                match load_embedder(Workload::Batches) {
                    Ok(e) => Some(e),
                    Err(why) => {
                        eprintln!("note: {why}; adding for BM25 search only (run `knowledge-db embed` once the model is installed)");
                        None
                    }
                }
            }
        }
    };
    let lock_timeout = store
        .as_ref()
        .map(|s| s.lock_timeout(common.lock_timeout))
        .unwrap_or_default();
    let options = IngestOptions {
        stop: Some(super::interrupt::catch()),
        ..options
    };
    let mut progress = super::progress::Progress::new("ingest");
    progress.phase("Reading", "files", files.len() as u64);
    let report = ingest(
        store.as_ref(),
        &files,
        &options,
        embedder.as_mut().map(|e| e.as_mut() as &mut dyn Embedder),
        lock_timeout,
        &mut |at| {
            progress.set_bytes(at.bytes_done, at.bytes_total);
            if at.storing {
                progress.relabel("Storing");
                progress.set(
                    at.files_done as u64,
                    at.files_total as u64,
                    format!(
                        "committing {} records ({} stored before)",
                        super::progress::group(at.records_storing as u64),
                        super::progress::group(at.records_stored as u64)
                    ),
                );
            } else {
                progress.relabel("Reading");
                progress.set(
                    at.files_done as u64,
                    at.files_total as u64,
                    format!(
                        "{} messages read, {} stored",
                        super::progress::group(at.messages_read as u64),
                        super::progress::group(at.records_stored as u64)
                    ),
                );
            }
        },
    )?;
    progress.finish();
    if common.json {
        output::print_json(&report)?;
    } else {
        print_report(&report, store.as_ref());
    }
    if let Some(store) = &store {
        let waiting = report.store.as_ref().map(|s| s.without_vector as u64);
        super::after_write(store, waiting.filter(|&n| n > 0));
    }
    if report.interrupted {
        let stored = report.store.as_ref();
        eprintln!(
            "interrupted: {} of {} transcripts read; {}. Run the same command again to go on \
             from where it stopped (files already stored are not read again).",
            report.files.len(),
            files.len(),
            match stored {
                Some(s) => format!(
                    "their {} messages are stored and searchable ({} added, {} updated, {} unchanged)",
                    s.added + s.updated + s.unchanged,
                    s.added,
                    s.updated,
                    s.unchanged
                ),
                None => "nothing was written (--dry-run)".to_string(),
            }
        );
        return Ok(ExitCode::from(super::interrupt::EXIT_INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(r: &IngestReport, store: Option<&Store>) {
    println!(
        "read {} transcript{} ({}, {} lines): {} messages, {} tool calls, {} lines skipped ({} not JSON, {} of unknown type), parsed at {:.1} MB/s",
        r.files.len(),
        if r.files.len() == 1 { "" } else { "s" },
        knowledge_db::record::input::human_bytes(r.bytes_read),
        r.lines,
        r.messages,
        r.tool_calls,
        r.skipped.skipped_lines(),
        r.skipped.non_json,
        r.skipped.unknown_types.values().sum::<usize>(),
        r.parse_mb_per_s,
    );
    if r.skipped.invalid_utf8_bytes > 0 {
        println!(
            "{} byte{} of invalid UTF-8 replaced by U+FFFD (their messages were kept)",
            r.skipped.invalid_utf8_bytes,
            if r.skipped.invalid_utf8_bytes == 1 {
                ""
            } else {
                "s"
            }
        );
    }
    match &r.store {
        Some(s) => println!(
            "stored: {} added, {} updated, {} unchanged ({} without vector){} in {:.2}s",
            s.added,
            s.updated,
            s.unchanged,
            s.without_vector,
            if r.superseded > 0 {
                format!(
                    "; {} left to a more complete copy of the same session",
                    r.superseded
                )
            } else {
                String::new()
            },
            r.seconds
        ),
        None => println!("nothing written (--dry-run)"),
    }
    if r.vectors_deferred > 0 {
        println!("{}", output::vectors_deferred(r.vectors_deferred, store));
    }
    if let Some(s) = r.store.as_ref().filter(|s| !s.redacted.is_empty()) {
        println!("before storing: {}", s.redacted);
    }
}
