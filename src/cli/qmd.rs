//! `knowledge-db qmd ...`: the QMD command surface OpenClaw calls (see
//! `integrations::qmd`). The store is created on first use, since OpenClaw
//! never runs `init`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};

use knowledge_db::integrations::qmd::{
    self, collections_file, Collection, Collections, QmdMode, DEFAULT_MASK,
};
use knowledge_db::search::SearchEngine;
use knowledge_db::store::Store;

pub const AFTER_HELP: &str = "\
OpenClaw calls these with `memory.backend: \"qmd\"` and `memory.qmd.command` set to
the `scripts/qmd` wrapper (which runs `knowledge-db qmd \"$@\"`):
  knowledge-db qmd collection add ~/notes --name notes --mask '**/*.md'
  knowledge-db qmd update && knowledge-db qmd embed
  knowledge-db qmd query \"router mesh node\" --json -n 6 -c notes
  knowledge-db qmd status

Collections are listed in $QMD_CONFIG_DIR, else $XDG_CONFIG_HOME/qmd, else <store>/qmd.";

#[derive(Debug, Subcommand)]
pub enum QmdCommand {
    /// Register, list or remove collections (a folder and a glob mask).
    #[command(subcommand)]
    Collection(CollectionCommand),
    /// Index every collection's files (new, changed and removed ones).
    Update(JsonArg),
    /// Compute vectors for chunks indexed without one.
    Embed(JsonArg),
    /// Collections, chunks, and `Vectors: N`.
    Status(JsonArg),
    /// Search by words (BM25).
    Search(QueryArgs),
    /// Search by meaning (vectors).
    Vsearch(QueryArgs),
    /// Search by both, fused.
    Query(QueryArgs),
}

#[derive(Debug, Subcommand)]
pub enum CollectionCommand {
    /// Register a folder as a collection.
    Add(AddArgs),
    /// List the collections.
    List(JsonArg),
    /// Remove a collection and its indexed chunks.
    Remove(RemoveArgs),
}

#[derive(Debug, Args)]
pub struct JsonArg {
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The folder
    path: PathBuf,
    /// Collection name
    #[arg(long)]
    name: String,
    /// Glob of files to index, relative to the folder
    #[arg(long, visible_alias = "glob", default_value = DEFAULT_MASK)]
    mask: String,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// Collection name
    name: String,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The query
    query: String,
    /// Print the hits as a JSON array
    #[arg(long)]
    json: bool,
    /// Number of hits
    #[arg(short = 'n', default_value_t = 5)]
    n: usize,
    /// Only these collections (repeatable) [default: all]
    #[arg(short = 'c', long = "collection")]
    collections: Vec<String>,
}

pub fn run(root: &Path, command: QmdCommand) -> anyhow::Result<ExitCode> {
    let store = open_or_create(root)?;
    let file = collections_file(store.root());
    let mut collections = Collections::load(&file)?;
    match command {
        QmdCommand::Collection(CollectionCommand::Add(args)) => {
            let path = std::path::absolute(&args.path)
                .with_context(|| format!("resolving {}", args.path.display()))?;
            if !path.is_dir() {
                anyhow::bail!(knowledge_db::Error::Usage(format!(
                    "{} is not a folder",
                    path.display()
                )));
            }
            collections.add(Collection {
                name: args.name.clone(),
                path,
                pattern: args.mask,
            })?;
            collections.save()?;
            println!("collection `{}` added", args.name);
        }
        QmdCommand::Collection(CollectionCommand::List(args)) => {
            if args.json {
                super::output::print_json(&collections.list)?;
            } else if collections.list.is_empty() {
                println!("no collections");
            } else {
                for c in &collections.list {
                    println!(
                        "{} (qmd://{}/)  {}  {}",
                        c.name,
                        c.name,
                        c.path.display(),
                        c.pattern
                    );
                }
            }
        }
        QmdCommand::Collection(CollectionCommand::Remove(args)) => {
            if !collections.remove(&args.name) {
                eprintln!("error: no collection named `{}`", args.name);
                return Ok(ExitCode::from(1));
            }
            let removed = qmd::forget(&store, &args.name)?;
            collections.save()?;
            println!("collection `{}` removed ({removed} chunks)", args.name);
        }
        QmdCommand::Update(args) => {
            let reports = qmd::update(&store, &collections)?;
            for r in &reports {
                for skipped in &r.skipped {
                    eprintln!(
                        "knowledge-db qmd update: {}: skipped {}: {}",
                        r.collection, skipped.path, skipped.why
                    );
                }
            }
            if args.json {
                super::output::print_json(&reports)?;
            } else {
                for r in &reports {
                    println!(
                        "{}: {} files, {} chunks ({} new, {} changed, {} unchanged, {} removed)",
                        r.collection, r.files, r.chunks, r.added, r.updated, r.unchanged, r.removed
                    );
                }
            }
        }
        QmdCommand::Embed(args) => {
            let done = match super::load_embedder(knowledge_db::embed::Workload::Batches) {
                Ok(mut embedder) => store.embed_missing(
                    embedder.as_mut(),
                    256,
                    store.lock_timeout(None),
                    &mut |_, _| {},
                )?,
                Err(why) => {
                    // OpenClaw runs embed after every update; BM25 search works without it.
                    eprintln!("note: vectors not computed: {why}");
                    0
                }
            };
            let vectors = store.l2_stats()?.vectors.with_vector;
            if args.json {
                super::output::print_json(
                    &serde_json::json!({"embedded": done, "vectors": vectors}),
                )?;
            } else {
                println!("Embedded: {done}\nVectors: {vectors}");
            }
        }
        QmdCommand::Status(args) => status(&store, &collections, args.json)?,
        QmdCommand::Search(args) => return search(&store, &collections, args, QmdMode::Search),
        QmdCommand::Vsearch(args) => return search(&store, &collections, args, QmdMode::Vsearch),
        QmdCommand::Query(args) => return search(&store, &collections, args, QmdMode::Query),
    }
    Ok(ExitCode::SUCCESS)
}

fn open_or_create(root: &Path) -> anyhow::Result<Store> {
    if root.join("config.toml").exists() {
        Ok(Store::open(root)?)
    } else {
        Ok(Store::init(root)?)
    }
}

fn status(store: &Store, collections: &Collections, json: bool) -> anyhow::Result<()> {
    let stats = knowledge_db::tiers::stats(store)?;
    let chunks = |name: &str| {
        stats
            .by_namespace
            .get(&qmd::namespace(name))
            .copied()
            .unwrap_or(0)
    };
    let documents: u64 = collections.list.iter().map(|c| chunks(&c.name)).sum();
    if json {
        let list: Vec<_> = collections
            .list
            .iter()
            .map(|c| serde_json::json!({"name": c.name, "path": c.path, "pattern": c.pattern, "chunks": chunks(&c.name)}))
            .collect();
        super::output::print_json(&serde_json::json!({
            "store": store.root(),
            "collections": list,
            "documents": documents,
            "vectors": stats.vectors.with_vector,
            "pending": stats.vectors.without_vector,
        }))?;
        return Ok(());
    }
    println!(
        "QMD-compatible index (knowledge-db {})",
        env!("CARGO_PKG_VERSION")
    );
    println!("Store: {}", store.root().display());
    println!("Collections: {}", collections.list.len());
    for c in &collections.list {
        println!(
            "  {} ({}, {}): {} chunks",
            c.name,
            c.path.display(),
            c.pattern,
            chunks(&c.name)
        );
    }
    println!("Documents: {documents}");
    println!("Vectors: {}", stats.vectors.with_vector);
    println!("Pending: {} need embedding", stats.vectors.without_vector);
    Ok(())
}

fn search(
    store: &Store,
    collections: &Collections,
    args: QueryArgs,
    mode: QmdMode,
) -> anyhow::Result<ExitCode> {
    let engine = if mode == QmdMode::Search {
        SearchEngine::new(store)?
    } else {
        let rank = knowledge_db::search::RankOptions {
            mode: mode.mode(),
            ..Default::default()
        };
        super::engine_for(store, &rank, knowledge_db::embed::Workload::Queries)?
    };
    let hits = qmd::search(
        store,
        &engine,
        collections,
        &args.query,
        mode,
        super::search::clamp_results(args.n, "-n").max(1),
        &args.collections,
    )?;
    if hits.is_empty() {
        println!("No results found");
    } else if args.json {
        super::output::print_json(&hits)?;
    } else {
        for (i, h) in hits.iter().enumerate() {
            println!(
                "{}. {} (lines {}-{}, score {:.3})  {}",
                i + 1,
                h.file,
                h.start_line,
                h.end_line,
                h.score,
                h.title
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
