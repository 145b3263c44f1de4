//! Flows: the work a caller asks for, end to end, as library functions.
//!
//! A flow reads what it is given, drives the rooms below it (the context
//! engine, transcripts, the store) and returns a typed report; it prints
//! nothing. The command line, the MCP server and the OpenClaw plugin call the
//! same flows, so they behave the same and a flow is tested once.
//!
//! - [`evict`]: roll a transcript's live context into a token budget, storing
//!   what leaves in full first.

pub mod evict;
