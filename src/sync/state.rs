//! `<store>/sync/state.json`: where the pull stopped, and how the last sync
//! went (for `stats`, `hook doctor` and the upkeep's back-off).
//!
//! The cursor (the highest `seq` pulled and written) is saved durably after
//! each pulled batch is written and recorded in the manifest, so a sync
//! killed at any point resumes at the first batch it had not finished;
//! writing a batch twice changes nothing (an unchanged version is skipped).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The longest the upkeep waits after failures before trying again.
pub const MAX_BACKOFF_SECS: i64 = 3600;

/// The layout of `state.json` (and of `manifest.jsonl`) this build writes.
/// A store whose state says a later one was synced by a newer knowledge-db:
/// this one stops rather than misread it.
pub const FORMAT: u32 = 2;

/// The sync state of one store.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct State {
    /// The layout of this file (absent: 1, before pull scopes).
    #[serde(default = "format_one")]
    pub format: u32,
    /// This store's random id on the server (`kdb_machines`), made once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// The server's tables this state belongs to (their `instance` id): on
    /// another server the cursor and manifest start over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// The highest `seq` pulled and written here.
    #[serde(default)]
    pub cursor: i64,
    /// The server, password hidden.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// When the last sync succeeded (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync: Option<String>,
    /// The same, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_unix: Option<i64>,
    /// When a sync last started, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt_unix: Option<i64>,
    /// Why the last sync failed; `None` when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<Failure>,
    /// Failures in a row (the upkeep waits longer after each).
    #[serde(default)]
    pub failures: u32,
    /// Records (not tombstones) on the server at the last sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_records: Option<u64>,
    /// What the last successful sync did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_report: Option<super::SyncReport>,
    /// The pull scope the cursor stands for (its items); absent: every
    /// record (a state from before pull scopes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pulled_scope: Option<Vec<String>>,
    /// The server's compaction mark (`compacted_through`) this store last
    /// checked its ids against.
    #[serde(default)]
    pub compaction_seen: i64,
    /// A wider scope's earlier rows being pulled, if one was interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backfill: Option<Backfill>,
    /// What the server held at the last sync, pulled here or left remote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<ScopeSummary>,
}

fn format_one() -> u32 {
    1
}

/// The rows a scope added to the pull needs from before the cursor.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Backfill {
    /// The items added.
    pub scope: Vec<String>,
    /// The highest `seq` of them pulled so far.
    pub cursor: i64,
    /// Up to where (the main cursor when it began).
    pub until: i64,
}

/// The server's live records by project (or, for records without one, by
/// namespace), split by whether this store pulls them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ScopeSummary {
    /// Pulled here: `(scope, records)`, largest first.
    pub pulled: Vec<(String, u64)>,
    /// Left on the server: `(scope, records)`, largest first.
    pub remote: Vec<(String, u64)>,
}

impl ScopeSummary {
    /// Records pulled here, and left remote.
    pub fn totals(&self) -> (u64, u64) {
        (
            self.pulled.iter().map(|(_, n)| n).sum(),
            self.remote.iter().map(|(_, n)| n).sum(),
        )
    }
}

/// A failed sync.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Failure {
    /// When (RFC 3339).
    pub at: String,
    /// The same, Unix seconds.
    pub at_unix: i64,
    /// The error.
    pub message: String,
}

/// The sync folder of a store.
pub fn dir(root: &Path) -> PathBuf {
    root.join("sync")
}

fn path(root: &Path) -> PathBuf {
    dir(root).join("state.json")
}

impl State {
    /// Reads the state (the default when there is none, or it is unreadable:
    /// then the pull starts over, which writes nothing twice).
    pub fn read(root: &Path) -> State {
        let Some(value) = std::fs::read(path(root))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        else {
            return State::default();
        };
        // A newer layout this build cannot read whole still says so.
        let format = value
            .get("format")
            .and_then(serde_json::Value::as_u64)
            .map_or(1, |f| f.min(u64::from(u32::MAX)) as u32);
        let mut state: State = serde_json::from_value(value).unwrap_or_default();
        state.format = format;
        state
    }

    /// Whether this build may sync with the state as written: an error
    /// naming the file when a newer knowledge-db wrote it.
    pub fn check_format(&self, root: &Path) -> Result<()> {
        if self.format > FORMAT {
            return Err(Error::Sync(format!(
                "{} was written by a newer knowledge-db (sync state format {}; this one knows \
                 {FORMAT}): upgrade knowledge-db on this machine, or move the sync folder aside \
                 to start this store's sync over (nothing is lost: the next sync re-reads the \
                 server)",
                path(root).display(),
                self.format
            )));
        }
        Ok(())
    }

    /// Writes the state durably (the cursor must survive a power cut as
    /// surely as the records it stands for).
    pub fn save(&self, root: &Path) -> Result<()> {
        let path = path(root);
        let mut this = self.clone();
        this.format = this.format.max(FORMAT);
        let bytes = serde_json::to_vec_pretty(&this).map_err(|e| Error::io(&path, e.into()))?;
        crate::files::replace(&path, &bytes, crate::files::Durability::Durable)
    }

    /// Notes a failure, for the back-off and the reports.
    pub fn fail(&mut self, message: String) {
        let now = crate::now_unix();
        self.last_error = Some(Failure {
            at: crate::record::parse::format_time(now),
            at_unix: now,
            message,
        });
        self.failures = self.failures.saturating_add(1);
    }

    /// When the upkeep may sync next, given `every` seconds between syncs:
    /// `every` after the last attempt, doubled for each failure in a row up
    /// to [`MAX_BACKOFF_SECS`].
    pub fn next_due_unix(&self, every: i64) -> i64 {
        let Some(last) = self.last_attempt_unix else {
            return 0;
        };
        let wait = if self.failures == 0 {
            every
        } else {
            let doubled = every.saturating_mul(1i64 << self.failures.min(20));
            doubled.min(MAX_BACKOFF_SECS.max(every))
        };
        last.saturating_add(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backs_off_after_failures() {
        let mut state = State {
            last_attempt_unix: Some(1000),
            ..State::default()
        };
        assert_eq!(state.next_due_unix(300), 1300);
        state.fail("unreachable".into());
        assert_eq!(state.next_due_unix(300), 1600);
        state.fail("unreachable".into());
        assert_eq!(state.next_due_unix(300), 2200);
        for _ in 0..30 {
            state.fail("unreachable".into());
        }
        assert_eq!(state.next_due_unix(300), 1000 + MAX_BACKOFF_SECS);
        assert_eq!(State::default().next_due_unix(300), 0);
    }

    #[test]
    fn a_newer_format_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(super::dir(dir.path())).unwrap();
        std::fs::write(
            path(dir.path()),
            br#"{"format": 9, "cursor": {"shards": [1, 2]}}"#,
        )
        .unwrap();
        let state = State::read(dir.path());
        assert_eq!(state.format, 9);
        let e = state.check_format(dir.path()).unwrap_err().to_string();
        assert!(e.contains("state.json") && e.contains("format 9"), "{e}");
        let old = State::default();
        assert!(old.check_format(dir.path()).is_ok());
    }

    #[test]
    fn round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = State::read(dir.path());
        assert_eq!(state, State::default());
        state.cursor = 42;
        state.fail("x".into());
        state.save(dir.path()).unwrap();
        state.format = FORMAT;
        assert_eq!(State::read(dir.path()), state);
    }
}
