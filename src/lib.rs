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
//! - [`record`]: the data model and the input formats agents write;
//! - [`store`]: the on-disk store, its config, writer lock and durability;
//! - [`index`]: the tantivy schema and the tokenizer;
//! - [`search`]: queries, filters, snippets, batch search;
//! - [`eval`]: BEIR evaluation, the yardstick for ranking changes;
//! - [`bench`]: realistic corpora generated from real agent transcripts;
//! - [`cli`]: the `knowledge-db` command line.

// pub mod bench;
pub mod cli;
pub mod error;
pub mod eval;
pub mod index;
pub mod record;
pub mod search;
pub mod store;

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
