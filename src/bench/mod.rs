//! Benchmark corpora made from real agent transcripts, and the benchmark run over
//! them ([`run`]: throughput, latency, memory, disk and recall at a given size).
//!
//! To measure knowledge-db at scale we need many records that look like the ones
//! agents really store, and queries whose right answer is known. [`generate`] makes
//! both from a folder of Claude Code session transcripts:
//!
//! - every user, assistant or tool turn with text becomes a **message** record
//!   (its text, `[Tool] argument` lines for tool calls, tool output cut to ~500
//!   characters; thinking is left out);
//! - windows of 6-20 consecutive turns become compressed **segment** records: a
//!   rule-based summary of what was asked, said and done, with the files touched
//!   and the sentences that state a decision;
//! - tasks named by `TaskCreate`/`TaskUpdate`/`TodoWrite`, and otherwise windows of
//!   4-16 turns headed by the user's request, become cold **task** summaries
//!   (files modified, commands run, outcomes, errors).
//!
//! About 60% of the records are messages, 25% segments and 15% tasks. When the
//! transcripts give fewer records than asked for, the sessions are used again in
//! further passes, each with its own windows, a `~pN` suffix on session and record
//! ids and timestamps moved back by four weeks per pass, so that every record is
//! distinct and still reads like real work. When they give more, a uniform random
//! subset is kept. The output is written as it is made, in the BEIR layout:
//!
//! ```text
//! out/corpus.jsonl     one record per line, each with "kind"
//! out/queries.jsonl    {"_id":"q1","text":…,"metadata":{"target":<record id>,"type":…}}
//! out/qrels/test.tsv   query-id, corpus-id, score (one line per query)
//! ```
//!
//! Each query is cut from the text of the one record it targets: a `span` of 4-10
//! consecutive words, an `identifier` (file name, camelCase or snake_case name,
//! error code, command), or a `paraphrase` (content words shuffled, one or two left
//! out). Targets are spread uniformly over the corpus.
//!
//! Everything is deterministic: the same transcripts, counts and seed give the same
//! bytes. Only the source turns (with long texts cut) are held in memory.

pub mod gen;
pub mod process;
pub mod run;
mod turns;

pub use gen::{generate, GenOptions};
pub use run::run;
