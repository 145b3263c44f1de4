//! Flows: the work a caller asks for, end to end, as library functions.
//!
//! A flow reads what it is given, drives the rooms below it (the context
//! engine, transcripts, the store) and returns a typed report; it prints
//! nothing. The command line, the MCP server and the OpenClaw plugin call the
//! same flows, so they behave the same and a flow is tested once.
//!
//! - [`capture`]: store what a session's transcript gained since the last
//!   look, as the Claude Code hooks do on every turn;
//! - [`evict`]: roll a transcript's live context into a token budget, storing
//!   what leaves in full first;
//! - [`recall`]: the few memories confident enough to tell an agent unasked
//!   about a prompt.

pub mod capture;
pub mod evict;
pub mod recall;
