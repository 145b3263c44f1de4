//! The local viewer (`knowledge-db ui`): what the memory holds, in a browser.
//!
//! A small web server on 127.0.0.1 serves one page with four views:
//! **Search** (the CLI's filters, each hit's score parts, the abstention with
//! the best score, the unknown words), the **Timeline** (groups, their
//! sessions by date, a session's segments and task summaries, its raw turns
//! with tool calls folded), a **Record** (its JSON, tier, access count and
//! pending reads, vector state, provenance) and **Health** (stats, the
//! upkeep, the last `verify`, the compression queues, the hooks' last log
//! lines). Deleting a record or a session is the only write, and only with
//! `--allow-delete`.
//!
//! It is an entry point like [`crate::integrations`]: it names the rooms
//! below it and nothing names it. Every answer comes from the library calls
//! the CLI and MCP make ([`api`] lists them), on a
//! [`MemoryService`] that reopens its engine when another process commits;
//! there is no second query path. Who may ask is [`guard`]'s business;
//! [`server`] is the HTTP side; the page itself (Preact and htm, vendored,
//! no build step) is embedded in the binary.

pub mod api;
mod assets;
pub mod guard;
pub mod server;

use std::time::Duration;

use crate::integrations::service::MemoryService;

pub use server::Bound;

/// The viewer's state: the warm store and model, and what it may do.
pub struct Viewer {
    service: MemoryService,
    allow_delete: bool,
    lock_timeout: Duration,
}

impl Viewer {
    /// A viewer on `service`; it deletes only when `allow_delete`, waiting
    /// up to `lock_timeout` for another writer.
    pub fn new(service: MemoryService, allow_delete: bool, lock_timeout: Duration) -> Viewer {
        Viewer {
            service,
            allow_delete,
            lock_timeout,
        }
    }

    /// The warm store and model.
    pub fn service(&self) -> &MemoryService {
        &self.service
    }

    /// Whether deletes are allowed (`--allow-delete`).
    pub fn allow_delete(&self) -> bool {
        self.allow_delete
    }
}
