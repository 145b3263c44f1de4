//! Integrations: how agents reach the store.
//!
//! - [`service`]: the warm memory a long-running front end keeps open (store,
//!   model, a search engine reopened when another process commits);
//! - [`mcp`]: the stdio MCP server (`knowledge-db mcp`); [`mcp_schema`] tidies
//!   its tools' schemas and checks arguments, [`mcp_wire`] answers every line;
//! - [`openclaw`]: OpenClaw's `memory_search`/`memory_get` result shapes;
//! - [`qmd`]: a QMD-compatible backend for OpenClaw's `memory.backend = "qmd"`;
//! - [`claude_code`]: installing the hooks, the skill and the MCP registration
//!   into Claude Code's configuration files, with absolute paths;
//! - [`registration`]: where knowledge-db is registered (`hook install`'s
//!   settings entries, the plugin) and which one runs the hooks;
//! - [`plan`]: changes to configuration files, computed and shown before
//!   they are written; [`diff`]: the unified diffs `--dry-run` shows;
//! - [`doctor`]: checking an installed setup end to end;
//! - [`uninstall`]: taking out exactly what `hook install` put in (its
//!   install record), leaving the store unless asked;
//! - [`hooks`]: the Claude Code hooks (cold-task summaries, the compression
//!   queue, the preservation block across compactions).

pub mod claude_code;
pub mod diff;
pub mod doctor;
pub mod hooks;
pub mod mcp;
pub mod mcp_schema;
pub mod mcp_wire;
pub mod openclaw;
pub mod plan;
pub mod qmd;
pub mod registration;
pub mod service;
pub mod uninstall;
