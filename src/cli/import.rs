//! `knowledge-db import`: bring the memory kept by other tools into the store.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};

use super::{load_embedder, output, EmbedWhen};
use knowledge_db::embed::{Embedder, Workload};
use knowledge_db::error::Error;
use knowledge_db::import::{
    apply, plan, read_source, ImportError, ImportReport, ReadLimits, ReadOptions, Tool,
};
use knowledge_db::record::ParseOptions;
use knowledge_db::store::config::{EmbedOnAdd, Limits};
use knowledge_db::store::Store;

pub const AFTER_HELP: &str = "\
Examples:
  knowledge-db import --from claude-mem --dry-run   # what would come in
  knowledge-db import --from claude-mem             # ~/.claude-mem/claude-mem.db
  knowledge-db import --from basic-memory ~/notes   # a project folder
  knowledge-db import --from openclaw               # MEMORY.md, memory/*.md
  knowledge-db import --from mempalace ~/.mempalace/palace
  knowledge-db import --from mem0 mem0-export.json --namespace team

Without PATH each tool is read where it keeps its data:
  claude-mem    ~/.claude-mem/
  mempalace     the palace_path of ~/.mempalace/config.json,
                else ~/.mempalace/palace/
  basic-memory  the default project of ~/.basic-memory/config.json,
                else ~/basic-memory/
  openclaw      ~/.openclaw/workspace/
  mem0          keeps no file of its own: export `get_all` to a JSON or
                JSONL file and give its path

Every item becomes the record kind that fits (claude-mem observations and
session summaries are segments with key_files and key_decisions, its prompts
messages with --with-prompts; the others notes), with its time, project, files
and tags, its id at the source in metadata.origin, and the id <tool>:<source
id>.

Running import again adds nothing new and updates only what changed at the
source. The source is read and checked whole first: a damaged source is named
(file, line, table) and nothing is written. Secrets are redacted before anything
is stored. See docs/import.md.";

/// The tools `--from` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FromArg {
    /// claude-mem's SQLite database (~/.claude-mem/claude-mem.db)
    ClaudeMem,
    /// A MemPalace palace (ChromaDB chroma.sqlite3)
    Mempalace,
    /// A basic-memory project folder of markdown notes
    BasicMemory,
    /// An OpenClaw workspace (MEMORY.md, memory/*.md)
    Openclaw,
    /// A mem0 export (JSON or JSONL of get_all)
    Mem0,
}

impl FromArg {
    fn tool(self) -> Tool {
        match self {
            FromArg::ClaudeMem => Tool::ClaudeMem,
            FromArg::Mempalace => Tool::Mempalace,
            FromArg::BasicMemory => Tool::BasicMemory,
            FromArg::Openclaw => Tool::Openclaw,
            FromArg::Mem0 => Tool::Mem0,
        }
    }
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The tool whose memory to import
    #[arg(long, value_enum, value_name = "TOOL")]
    from: FromArg,

    /// Where the tool's data is [default: where the tool keeps it; mem0: required]
    #[arg(value_name = "PATH")]
    path: Option<PathBuf>,

    /// Namespace for the imported records
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,

    /// Embed now, or later (the background upkeep adds the vectors)
    /// [default: `embedding.on_add` in config.toml; a large import is left to the upkeep]
    #[arg(long, value_enum)]
    embed: Option<EmbedWhen>,

    /// Read and show what would come in (counts per kind and project, one
    /// example each); write nothing
    #[arg(long)]
    dry_run: bool,

    /// claude-mem: also import the user prompts, as user messages of their
    /// session (by default they are counted, not imported)
    #[arg(long)]
    with_prompts: bool,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print one JSON report instead of text
    #[arg(long)]
    json: bool,
}

pub fn run(root: &Path, args: ImportArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let tool = args.from.tool();
    let path = match (&args.path, dirs::home_dir()) {
        (Some(path), _) => path.clone(),
        (None, home) => match home.and_then(|h| tool.default_path(&h)) {
            Some(path) => path,
            None if tool == Tool::Mem0 => {
                return Err(Error::Usage(ImportError::NeedsPath.to_string()).into())
            }
            None => {
                return Err(Error::Usage(format!(
                    "no home folder to find {tool}'s data in; give its path: knowledge-db import --from {tool} PATH"
                ))
                .into())
            }
        },
    };
    // A dry run needs no store; with one, its limits and redaction rules apply.
    let store = match Store::open(root) {
        Ok(store) => Some(store),
        Err(_) if args.dry_run => None,
        Err(e) => return Err(e.into()),
    };
    let default_limits = Limits::default();
    let limits = ReadLimits::of(
        store
            .as_ref()
            .map_or(&default_limits, |s| &s.config().limits),
    );
    let bar = output::progress_bar();
    bar.set_message(format!("reading {tool}"));
    let read = ReadOptions {
        limits,
        claude_mem_prompts: args.with_prompts,
    };
    let source = read_source(tool, &path, &read, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })
    .map_err(library_error)?;
    let options = ParseOptions {
        namespace: args.namespace.clone(),
        added_at: knowledge_db::now_rfc3339(),
        ..ParseOptions::default()
    };
    let redactor = store
        .as_ref()
        .map_or(knowledge_db::privacy::Redactor::builtin(), Store::redactor);
    let plan = plan(source, &options, redactor).map_err(library_error)?;
    let report = match &store {
        Some(store) if !args.dry_run => {
            bar.set_message("storing");
            let on_add_later = store.config().embedding.on_add == EmbedOnAdd::Later;
            let later =
                args.embed == Some(EmbedWhen::Later) || (args.embed.is_none() && on_add_later);
            let mut embedder = if later {
                None
            } else {
                match load_embedder(Workload::Batches) {
                    Ok(e) => Some(e),
                    Err(why) => {
                        eprintln!("note: {why}; importing for BM25 search only (run `knowledge-db embed` once the model is installed)");
                        None
                    }
                }
            };
            // Only the default defers a large import; `--embed now` is obeyed.
            let inline_max = args
                .embed
                .is_none()
                .then(|| store.config().embedding.ingest_inline_max);
            apply(
                store,
                plan,
                embedder.as_mut().map(|e| e.as_mut() as &mut dyn Embedder),
                inline_max,
                store.lock_timeout(args.lock_timeout),
                started,
            )
            .map_err(library_error)?
        }
        _ => ImportReport::dry_run(plan, started),
    };
    bar.finish_and_clear();
    for warning in &report.plan.warnings {
        eprintln!("warning: {warning}");
    }
    if args.json {
        output::print_json(&report)?;
    } else {
        print_report(&report, store.as_ref());
    }
    if let (Some(store), Some(added)) = (&store, &report.store) {
        let waiting = added.without_vector as u64;
        super::after_write(store, Some(waiting).filter(|&n| n > 0));
    }
    Ok(ExitCode::SUCCESS)
}

/// The library's own error where it is one (so the exit code and the
/// store's path in a refused permission come out as for other commands).
fn library_error(error: ImportError) -> anyhow::Error {
    match error {
        ImportError::Other(e) => e.into(),
        ImportError::NeedsPath => Error::Usage(error.to_string()).into(),
        other => other.into(),
    }
}

fn print_report(r: &ImportReport, store: Option<&Store>) {
    let p = &r.plan;
    let counts: Vec<String> = p
        .source_counts
        .iter()
        .map(|(k, v)| format!("{v} {k}"))
        .collect();
    println!(
        "read {} from {} ({}, {}): {}",
        p.tool,
        p.path.display(),
        plural(p.files_read, "file"),
        knowledge_db::record::input::human_bytes(p.bytes_read),
        if counts.is_empty() {
            "nothing".into()
        } else {
            counts.join(", ")
        }
    );
    let kinds: Vec<String> = p.by_kind.iter().map(|(k, v)| format!("{v} {k}")).collect();
    println!(
        "{}: {}",
        plural(r.records, "record"),
        if kinds.is_empty() {
            "none".into()
        } else {
            kinds.join(", ")
        }
    );
    if !p.by_project.is_empty() {
        let projects: Vec<String> = p
            .by_project
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        println!("by project: {}", projects.join(", "));
    }
    for e in &p.examples {
        let text: String = e.text.split_whitespace().collect::<Vec<_>>().join(" ");
        println!("  e.g. {} {} \"{}\": {}", e.kind, e.id, e.title, text);
    }
    match &r.store {
        Some(s) => {
            println!(
                "stored: {} added, {} updated, {} unchanged ({} without vector) in {:.2}s",
                s.added, s.updated, s.unchanged, s.without_vector, r.seconds
            );
            if !s.redacted.is_empty() {
                println!("before storing: {}", s.redacted);
            }
        }
        None => println!("nothing written (--dry-run)"),
    }
    if r.vectors_deferred > 0 {
        println!("{}", output::vectors_deferred(r.vectors_deferred, store));
    }
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}
