//! # knowledge-db
//!
//! The long-term memory of AI coding agents. When an agent's context window fills
//! up, a rolling-context system moves cold material out: compressed **segments**
//! of finished work, cold **task** summaries, and raw evicted **messages**.
//! knowledge-db keeps them in a [`store::Store`] on local disk and brings them back
//! with [`search`]: BM25 over a code-aware [`index`] (file names, identifiers and
//! error codes stay findable), scoped by namespace, session, kind, time and file.
//!
//! The rooms, as in `DESIGN.md`:
//! - [`record`]: the data model, the input formats agents write, and times;
//! - [`store`]: L2, the searchable store: its folder, config, writer lock,
//!   durability and the access log;
//! - [`index`]: the tantivy schema (with the stored embedding's bytes) and the tokenizer;
//! - [`files`]: small files replaced whole, atomically or durably;
//! - [`privacy`]: redaction before anything is stored: secrets become
//!   `[REDACTED kind]` placeholders, `<private>` spans are dropped;
//! - [`bounded`]: reading input the store does not own within limits (regular
//!   files only, sizes decided before reading, folder walks without loops);
//! - [`shell`]: values quoted for the commands written for agents to run;
//! - [`check`]: a health check's answer, which each room's `verify` gives;
//! - [`embed`]: local embeddings (all-MiniLM-L6-v2 on ONNX Runtime);
//! - [`vectors`]: the vector side of search, aligned with the text index;
//! - [`search`]: queries, filters, snippets, batch search;
//! - [`archive`]: the L3 tier: month files of checksummed zstd frames, the L3
//!   index, pruned digests;
//! - [`tiers`]: what spans L2 and L3: archive, restore, prune, recovery,
//!   superseding, retention (`maintain`), find, stats and verify of both tiers;
//! - [`export`]: every record as a JSON line that `add` takes back unchanged;
//! - [`load`]: adding files of records (or of export lines) as one all-or-nothing batch;
//! - [`import`]: the memory of other tools (claude-mem, MemPalace,
//!   basic-memory, OpenClaw, mem0) read, checked whole, and added as one batch;
//! - [`transcript`]: Claude Code, OpenClaw and generic transcripts in one message model;
//! - [`context`]: token counting, rolling eviction, tool-output truncation, priorities;
//! - [`flows`]: what callers ask for end to end (evict), shared by the CLI,
//!   MCP and the OpenClaw plugin;
//! - [`sync`]: stores on many machines sharing what they choose through a
//!   team's Postgres (push the shared scopes, pull the rest, tombstones);
//! - [`upkeep`]: the background worker that computes missing vectors, folds
//!   the access log, applies the retention policy and finishes interrupted
//!   operations, started on demand by writers;
//! - [`integrations`]: how agents reach the store (MCP server, OpenClaw and QMD,
//!   Claude Code install);
//! - [`ui`]: the local viewer, a page on 127.0.0.1 over the same calls.
//!
//! The `knowledge-db` binary (`src/main.rs`) holds what only the command line
//! needs: its flags and handlers (`cli/`), `eval` (BEIR evaluation, the
//! yardstick for ranking changes) and `bench` (corpora generated from real
//! transcripts, timed search processes). They use this library's public API
//! and nothing else: the library cannot reach back into them.
//!
//! ```
//! use std::time::Duration;
//! use knowledge_db::error::Origin;
//! use knowledge_db::record::{parse_record, ParseOptions};
//! use knowledge_db::{Filters, SearchEngine, Store};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = Store::init(&dir.path().join("memory"))?;
//!
//! // A compressed segment, exactly as a rolling-context system writes it.
//! let segment = serde_json::json!({
//!     "segment_id": "seg-1",
//!     "topic": "Borrow checker error in the config loader",
//!     "compressed_content": "error[E0502] in parseConfig(); collected keys before mutating.",
//!     "key_files": ["src/config/loader.rs"]
//! });
//! let record = parse_record(segment, &Origin::file("example"), &ParseOptions::default())?;
//! store.add(vec![record], None, Duration::from_secs(5))?;
//!
//! let engine = SearchEngine::new(&store)?;
//! let answer = engine.search("parse config E0502", 5, &Filters::default(), &Default::default())?;
//! assert_eq!(answer.results[0].id, "seg-1");
//! # Ok(())
//! # }
//! ```

// Every public item says what it is: an undocumented one fails clippy
// (`-D warnings`) and the doc build in `./test.sh`.
#![warn(missing_docs)]

pub mod archive;
pub mod bounded;
pub mod check;
pub mod context;
pub mod embed;
pub mod error;
pub mod export;
pub mod files;
pub mod flows;
pub mod import;
pub mod index;
pub mod integrations;
pub mod load;
pub mod privacy;
pub mod record;
pub mod search;
pub mod shell;
pub mod store;
pub mod sync;
pub mod tiers;
pub mod transcript;
pub mod ui;
pub mod upkeep;
pub mod vectors;

pub use error::{Error, Result};
pub use record::{Kind, Record};
pub use search::{Filters, SearchEngine, SearchResponse};
pub use store::Store;

/// The current time as RFC 3339 (UTC, seconds).
pub fn now_rfc3339() -> String {
    record::parse::format_time(now_unix())
}

/// The current time in Unix seconds.
pub fn now_unix() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}
