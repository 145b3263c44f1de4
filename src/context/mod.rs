//! The rolling-context engine: token budgets, truncation, eviction, trimming.
//!
//! An agent's context window is a budget. This room counts what a prompt costs
//! ([`tokens`], and [`budget`]: what the prompt holds besides the messages,
//! measured from a transcript's usage figures), finds the part of a transcript
//! the model still sees ([`live`]: after the last compaction), shortens old and
//! long tool outputs to
//! placeholders ([`truncate`]), drops the oldest messages when it is over budget
//! while keeping the system prompt, the most recent messages and tool
//! call/result pairs intact ([`evict`]; [`roll`] chains truncation and
//! eviction), or trims a whole prompt by importance ([`priority`]). Whatever
//! leaves or is shortened is written to the store, in full, so search finds it.

pub mod budget;
pub mod evict;
pub mod live;
pub mod priority;
pub mod roll;
pub mod tokens;
pub mod truncate;
