//! `knowledge-db ui`: the local viewer (see `knowledge_db::ui`).

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use knowledge_db::integrations::service::MemoryService;
use knowledge_db::store::Store;
use knowledge_db::ui::{server, Bound, Viewer};

#[derive(Debug, Args)]
pub struct UiArgs {
    /// Port on 127.0.0.1 [default: a free port]
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    port: u16,

    /// Allow deleting records and sessions from the page (asked before each)
    #[arg(long)]
    allow_delete: bool,

    /// Search with BM25 only: do not load the embedding model
    #[arg(long)]
    no_vectors: bool,

    /// Seconds a delete waits for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,
}

pub const AFTER_HELP: &str = "\
Serves a page on 127.0.0.1 only, and prints its URL (with a random access token;
every request needs it) on stdout; it opens no browser. Views: Search (the filters
of `search`, each hit's BM25/vector/fused scores, the abstention), Timeline
(projects, their sessions by date, summaries and raw turns), Record (JSON, tier,
access count, vector state, transcript file and line) and Health (stats, upkeep,
the last `verify`, compression queues, hook errors). Read-only unless
--allow-delete. Ctrl-C stops it.

Examples:
  knowledge-db ui
  knowledge-db ui --port 8765 --allow-delete
  knowledge-db ui --store ./memory --no-vectors";

pub fn run(root: &Path, args: UiArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let lock_timeout = store.lock_timeout(args.lock_timeout);
    let bound = Bound::bind(args.port)?;
    let embedder = if args.no_vectors {
        Err("turned off with --no-vectors".to_string())
    } else {
        super::load_embedder(knowledge_db::embed::Workload::Queries)
    };
    if let Err(why) = &embedder {
        eprintln!("knowledge-db ui: vector: unavailable: {why}; searching with BM25");
    }
    let service = MemoryService::new(store, embedder, None)?;
    eprintln!(
        "knowledge-db ui: serving {} ({}); Ctrl-C stops it",
        service.store().root().display(),
        if args.allow_delete {
            "deletes allowed"
        } else {
            "read-only"
        }
    );
    // The URL alone on stdout, for scripts; flushed before serving.
    println!("{}", bound.url());
    std::io::Write::flush(&mut std::io::stdout())?;
    bound.serve(
        Viewer::new(service, args.allow_delete, lock_timeout),
        server::interrupted(),
    )?;
    eprintln!("knowledge-db ui: stopped");
    Ok(ExitCode::SUCCESS)
}
