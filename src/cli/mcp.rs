//! `knowledge-db mcp`: the stdio MCP server (see `integrations::mcp`).

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use knowledge_db::integrations::mcp::serve_stdio;
use knowledge_db::integrations::service::MemoryService;
use knowledge_db::store::Store;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Namespace searched when a call names none [default: all namespaces]
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,

    /// Search with BM25 only: do not load the embedding model
    #[arg(long)]
    no_vectors: bool,
}

pub const AFTER_HELP: &str = "\
Speaks the Model Context Protocol on stdin/stdout (logs go to stderr): protocol
2025-11-25 (and older) by the initialize handshake, 2026-07-28 by server/discover
and per-request _meta. Every tool declares an outputSchema. Tools:
  memory_search {query, maxResults? (1-100), minScore?, namespace?, session?, tier?,
                 format? (knowledge-db | openclaw)}
  memory_get    {id | path, from?, lines?}
  memory_add    {records}
  memory_stats  {}

Register it with Claude Code:
  claude mcp add --scope user knowledge-db -- knowledge-db mcp
or let `knowledge-db hook install` write the registration. OpenClaw reaches it
through the plugin in openclaw-plugin/ (see the README).";

pub fn run(root: &Path, args: McpArgs) -> anyhow::Result<ExitCode> {
    // Agents start the server before anything was added: create the store then.
    let store = if root.join("config.toml").exists() {
        Store::open(root)?
    } else {
        let store = Store::init(root)?;
        eprintln!(
            "knowledge-db mcp: created an empty store at {}",
            root.display()
        );
        store
    };
    let embedder = if args.no_vectors {
        Err("turned off with --no-vectors".to_string())
    } else {
        super::load_embedder(knowledge_db::embed::Workload::Batches)
    };
    if let Err(why) = &embedder {
        eprintln!("knowledge-db mcp: vector: unavailable: {why}; searching with BM25");
    }
    let service = MemoryService::new(store, embedder, args.namespace)?;
    eprintln!(
        "knowledge-db mcp: serving {} on stdio",
        service.store().root().display()
    );
    serve_stdio(service)?;
    Ok(ExitCode::SUCCESS)
}
