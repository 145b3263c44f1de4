//! Storing the rule-based summaries of cold items, which both
//! `post-tool-use` and `pre-compact` do: found by [`super::cold`], written to
//! the store in one commit under deterministic ids (never over the agent's
//! own segment for an item, which replaces the summary when it arrives),
//! queued for the agent to compress, and marked in the session's state.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::cold::{self, ColdItem, HOOK_SOURCE};
use super::queue::Queue;
use super::session::SessionState;
use super::HookSettings;
use crate::error::{Error, Origin, Result};
use crate::record::{parse_record, ParseOptions};
use crate::store::Store;

/// Longest a hook waits for the store's writer lock: a busy store (a long
/// `add`) must not hold up the agent; the items are stored at a later check.
const MAX_LOCK_WAIT: Duration = Duration::from_secs(2);

/// Whether a stored record is the hooks' rule-based summary.
pub fn is_hook_summary(source: &Value) -> bool {
    source.get("source").and_then(Value::as_str) == Some(HOOK_SOURCE)
}

/// What one cold check found and did.
pub(super) struct ColdSummary {
    pub(super) items: Vec<ColdItem>,
    /// Items queued for the first time.
    pub(super) queued: usize,
    /// Records written (added or updated).
    pub(super) written: usize,
    /// Records already stored as given.
    pub(super) unchanged: usize,
}

/// Finds the cold items, stores their rule-based summaries (never over the
/// agent's own segment for an item), queues them; marks them in the state.
pub(super) fn summarize_cold(
    store_root: &Path,
    queue: &mut Queue,
    state: &mut SessionState,
    settings: &HookSettings,
) -> Result<ColdSummary> {
    let items = cold::find(state, settings, &settings.namespace);
    let mut summary = ColdSummary {
        items: Vec::new(),
        queued: 0,
        written: 0,
        unchanged: 0,
    };
    if !items.is_empty() {
        let fresh: Vec<ColdItem> = items
            .iter()
            .filter(|i| !queue.is_compressed(&i.id))
            .cloned()
            .collect();
        let stored = store_items(store_root, &fresh)?;
        summary.written = stored.written;
        summary.unchanged = stored.unchanged;
        let to_queue: Vec<ColdItem> = fresh
            .into_iter()
            .filter(|i| !stored.agents_own.contains(&i.id))
            .collect();
        summary.queued = queue.push(&to_queue, state.turn());
    }
    queue.last_check_turn = state.turn();
    cold::mark_summarized(state, &items);
    state.last_check_turn = state.turn();
    summary.items = items;
    Ok(summary)
}

/// What storing the rule-based summaries did.
struct Stored {
    written: usize,
    unchanged: usize,
    /// Items the store already holds the agent's own segment for (left alone).
    agents_own: Vec<String>,
}

/// Opens the store (creating it on first use) and writes the summaries in one
/// commit, without embeddings (the upkeep adds them); an item whose stored
/// record is no longer the hooks' summary is not overwritten.
fn store_items(store_root: &Path, items: &[ColdItem]) -> Result<Stored> {
    let mut stored = Stored {
        written: 0,
        unchanged: 0,
        agents_own: Vec::new(),
    };
    if items.is_empty() {
        return Ok(stored);
    }
    let store = open_or_init(store_root)?;
    let options = ParseOptions {
        added_at: crate::now_rfc3339(),
        ..ParseOptions::default()
    };
    let mut records = Vec::with_capacity(items.len());
    for item in items {
        if let Some(existing) = store.get(&item.id)? {
            if !is_hook_summary(&existing.source) {
                stored.agents_own.push(item.id.clone());
                continue;
            }
        }
        let origin = Origin::file(format!("hook summary {}", item.id));
        let record = parse_record(item.record.clone(), &origin, &options)
            .map_err(|e| Error::Input(crate::error::InputErrors(vec![e])))?;
        records.push(record);
    }
    if records.is_empty() {
        return Ok(stored);
    }
    let timeout = store.lock_timeout(None).min(MAX_LOCK_WAIT);
    let report = store.add(records, None, timeout)?;
    // The summaries were stored without vectors: the background upkeep
    // computes them (never while the hook waits).
    crate::upkeep::nudge(&store, Some(report.without_vector as u64));
    stored.written = report.added + report.updated;
    stored.unchanged = report.unchanged;
    Ok(stored)
}

fn open_or_init(root: &Path) -> Result<Store> {
    match Store::open(root) {
        Err(Error::NoStore { .. }) => match Store::init(root) {
            Err(Error::StoreExists { .. }) => Store::open(root),
            other => other,
        },
        other => other,
    }
}
