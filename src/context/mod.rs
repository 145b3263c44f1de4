//! The rolling-context engine: token budgets and eviction.
//!
//! An agent's context window is a budget. This room counts what a prompt costs
//! ([`tokens`]), drops the oldest messages when it is over budget while keeping
//! the system prompt, the most recent messages and tool call/result pairs intact
//! ([`evict`]), and writes what it dropped to the store so search finds it again.

pub mod evict;
pub mod live;
pub mod priority;
pub mod roll;
pub mod tokens;
pub mod truncate;
