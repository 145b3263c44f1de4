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

/// The sync state of one store.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct State {
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
        std::fs::read(path(root))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Writes the state durably (the cursor must survive a power cut as
    /// surely as the records it stands for).
    pub fn save(&self, root: &Path) -> Result<()> {
        let path = path(root);
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| Error::io(&path, e.into()))?;
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
    fn round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = State::read(dir.path());
        assert_eq!(state, State::default());
        state.cursor = 42;
        state.fail("x".into());
        state.save(dir.path()).unwrap();
        assert_eq!(State::read(dir.path()), state);
    }
}
