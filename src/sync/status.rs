//! What `stats` and `hook doctor` show of sync, read without reaching the
//! server: the state file, and the pending pushes counted as the next push
//! would find them; and whether the background sync is due.

use serde::Serialize;

use super::manifest::{Entry, Manifest};
use super::{connect, local, scope, state, Settings, State, SyncOptions};
use crate::error::Result;
use crate::store::Store;

/// What `stats` and `hook doctor` show of sync.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Whether a server is named (`--url` aside).
    pub configured: bool,
    /// Where the URL comes from.
    pub url_from: String,
    /// The server, password hidden.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// This store's origin name.
    pub origin: String,
    /// The shared scopes.
    pub shared: Vec<String>,
    /// What this store pulls now: `*`, or its projects (worked on here, or
    /// named in `[sync] pull`) and namespaces.
    pub pull: Vec<String>,
    /// Of those projects, the ones worked on here.
    pub worked_on: Vec<String>,
    /// The server's live records at the last sync that this store pulls, by
    /// scope, largest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pulled_scopes: Option<Vec<(String, u64)>>,
    /// The server's live records at the last sync left remote (outside the
    /// pull scope), by scope, largest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_scopes: Option<Vec<(String, u64)>>,
    /// Seconds between background syncs, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every_secs: Option<i64>,
    /// When the last sync succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync: Option<String>,
    /// Records changed here since the last sync that the next one pushes
    /// (tombstones included).
    pub pending_pushes: u64,
    /// Records on the server at the last sync.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_records: Option<u64>,
    /// Records pulled from the server that this store holds.
    pub pulled_here: u64,
    /// The last error, if the last sync failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<state::Failure>,
    /// Failures in a row.
    pub failures: u32,
}

/// The sync state of `store`, without reaching the server: the state file,
/// and the pending pushes counted as the next push would find them.
pub fn status(store: &Store) -> Result<Status> {
    let settings = Settings::of(store, &SyncOptions::default())?;
    let state = State::read(store.root());
    let manifest = Manifest::load(&state::dir(store.root()), &settings.scopes.fingerprint())?;
    let held = local::held(store)?;
    let worked = local::worked_projects(&held);
    let pull = scope::PullScope::new(&settings.pull, worked)?;
    let mut pending = 0u64;
    for (id, h) in &held {
        let known = manifest.get(id);
        if known.and_then(Entry::local) == Some(h.hash) {
            continue;
        }
        let synced_before = matches!(known, Some(Entry::Synced { .. }));
        if synced_before || settings.scopes.decides_by_namespace(&h.namespace) != Some(false) {
            pending += 1;
        }
    }
    let gone = manifest
        .iter()
        .filter(|(id, e)| matches!(e, Entry::Synced { .. }) && !held.contains_key(*id))
        .count() as u64;
    let pulled_here = manifest
        .iter()
        .filter(|(id, e)| {
            matches!(e, Entry::Synced { origin, .. } if *origin != settings.origin)
                && held.contains_key(*id)
        })
        .count() as u64;
    Ok(Status {
        configured: settings.url.is_some(),
        url_from: if settings.url.is_some() {
            settings.url_from.to_string()
        } else {
            "the last sync".to_string()
        },
        server: settings
            .url
            .as_deref()
            .map(connect::hide_password)
            .or(state.server.clone()),
        origin: settings.origin,
        shared: settings.scopes.names(),
        pull: pull.items(),
        worked_on: pull.worked_projects.iter().cloned().collect(),
        pulled_scopes: state.scopes.as_ref().map(|s| s.pulled.clone()),
        remote_scopes: state.scopes.as_ref().map(|s| s.remote.clone()),
        every_secs: settings.every_secs,
        last_sync: state.last_sync,
        pending_pushes: pending + gone,
        remote_records: state.remote_records,
        pulled_here,
        last_error: state.last_error,
        failures: state.failures,
    })
}

/// Whether the upkeep should sync now: a server and `[sync] every` are set,
/// and `every` has passed since the last attempt (longer after failures).
/// Reads one small file; never reaches the server.
pub fn due(store: &Store) -> bool {
    let Ok(settings) = Settings::of(store, &SyncOptions::default()) else {
        return false;
    };
    let (Some(_), Some(every)) = (&settings.url, settings.every_secs) else {
        return false;
    };
    State::read(store.root()).next_due_unix(every) <= crate::now_unix()
}
