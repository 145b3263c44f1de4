//! `knowledge-db mcp`: the stdio MCP server (see `integrations::mcp`).

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use knowledge_db::integrations::mcp::serve_stdio;
use knowledge_db::integrations::service::MemoryService;
use knowledge_db::store::Store;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Confine the server to this namespace: it reads and writes records of
    /// NS only (a call naming another namespace, `*`, or an id another
    /// namespace holds is refused) [default: the whole store]
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
  memory_search {query, maxResults? (1-100), minScore?, namespace?, session?, project?,
                 origin?, tier?, format? (knowledge-db | openclaw)}
  memory_recall {prompt, project?, namespace?, origin?, session?, fromTurn?, exclude?}: the few memories
                 confident enough to tell unasked (what the UserPromptSubmit hook injects)
  memory_get    {id | path, from?, lines?}
  memory_add    {records}
  memory_stats  {}

Limits (config.toml [limits]): a request line of at most max_mcp_request_bytes
(16 MiB; a longer one is answered with error -32600 naming the setting),
memory_add calls of at most max_add_records_per_call records (1000) and
max_add_bytes_per_call bytes (16 MiB).

With --namespace NS the server is a boundary: searches, reads by id or session,
QMD files and counts cover NS only, and memory_add writes only records of NS
that replace no record of another namespace. Without it, the whole store.

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
