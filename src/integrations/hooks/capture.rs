//! Capture in the hooks: every session stored as it happens.
//!
//! `hook stop` runs at the end of every turn and `hook session-end` when the
//! session ends; `pre-compact` and the compression checks of
//! `post-tool-use` capture too. Each stores what the transcript gained
//! (through [`crate::flows::capture`]) and keeps the session's state current
//! (the turn of the last compaction tells recall what is still live).
//!
//! A capture that finds the store busy past its wait is deferred: it leaves
//! a marker in `<store>/hooks/capture-pending/`, and the next capture of any
//! session finishes it, so the last turn of a session that ended while
//! another process wrote is stored all the same. A capture that cannot write
//! at all (a read-only or full store) leaves its marker outside the store
//! instead ([`missed`]), and the next capture that can write catches it up.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{
    missed, read_json, save_state, update_state, write_json_atomically, HookFiles, HookInput,
    HookSettings,
};
use crate::error::Result;
use crate::flows::capture::{capture, CaptureReport, CaptureRequest};

/// Deferred captures finished by one hook call, at most.
const MAX_PENDING_PER_CALL: usize = 4;

/// What a capturing hook did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CaptureHookReport {
    /// The session the hook ran for.
    pub session_id: String,
    /// Whether the session's state was brought up to date (not when another
    /// hook of the session held its lock).
    pub state_updated: bool,
    /// What the capture stored; `None` when capture is off.
    pub capture: Option<CaptureReport>,
    /// Deferred captures of earlier calls finished by this one.
    pub pending_finished: usize,
    /// Sessions whose capture failed earlier (a read-only or full store)
    /// and whose missed messages this call stored (see [`missed`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missed_caught_up: Vec<String>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// A capture the store was too busy for, finished by a later hook call.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pending {
    session_id: String,
    transcript: PathBuf,
    namespace: String,
}

/// `hook stop` (end of a turn) and `hook session-end`: bring the session's
/// state up to date, store the transcript's new messages, finish deferred
/// captures. `lock_wait` bounds every wait for the store's writer lock.
pub fn stop(
    store_root: &Path,
    input: &HookInput,
    settings: &HookSettings,
    lock_wait: Duration,
) -> Result<CaptureHookReport> {
    let started = Instant::now();
    let files = HookFiles::new(store_root);
    let mut report = CaptureHookReport {
        session_id: input.session_id.clone(),
        ..CaptureHookReport::default()
    };
    if !transcript_written(input) {
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    // The state is a cache of the transcript: failing to update it (a
    // read-only store) must not keep the capture from running or from
    // leaving its trace.
    let state = (|| -> Result<bool> {
        let Some(_lock) = files.try_lock(&input.session_id)? else {
            return Ok(false);
        };
        let (state, _) = update_state(&files, input, settings)?;
        save_state(&files, &input.session_id, &state)?;
        Ok(true)
    })();
    report.capture = capture_session(store_root, input, settings, lock_wait)?;
    report.state_updated = state?;
    if report
        .capture
        .as_ref()
        .is_some_and(|c| c.deferred.is_none())
    {
        report.pending_finished = finish_pending(store_root, &input.session_id, lock_wait);
        let caught_up = missed::catch_up(store_root, &input.session_id, lock_wait);
        report.missed_caught_up = caught_up.sessions;
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Whether the session's transcript is there to read. Claude Code 2.1.328
/// can fire `Stop` before it has written a short `-p` session's transcript
/// (seen in the real-client tests): nothing is stored yet then, and the next
/// `Stop` or `SessionEnd` reads all the file gained. A missing folder, or no
/// path at all, is the caller's error, reported where the path is read, as
/// the other hooks do ([`super::read::not_written_yet`]).
fn transcript_written(input: &HookInput) -> bool {
    input
        .transcript_path
        .as_deref()
        .is_none_or(|path| !super::read::not_written_yet(path))
}

/// Stores what the session's transcript gained, unless capture is off;
/// a deferred capture leaves a marker for the next call.
pub fn capture_session(
    store_root: &Path,
    input: &HookInput,
    settings: &HookSettings,
    lock_wait: Duration,
) -> Result<Option<CaptureReport>> {
    if !settings.capture || !transcript_written(input) {
        return Ok(None);
    }
    let transcript = input.transcript()?;
    let files = HookFiles::new(store_root);
    // A capture that cannot write leaves its trace where one can be written.
    let report = capture(&CaptureRequest {
        store_root,
        transcript,
        namespace: &settings.namespace,
        lock_wait,
    })
    .map_err(|e| {
        let e = crate::index::damage::explain(store_root, e);
        missed::leave_trace(store_root, input, &settings.namespace, e)
    })?;
    let marker = pending_path(&files, &input.session_id);
    if report.deferred.is_some() {
        let pending = Pending {
            session_id: input.session_id.clone(),
            transcript: transcript.to_path_buf(),
            namespace: settings.namespace.clone(),
        };
        write_json_atomically(&marker, &pending)?;
        files.log_line(
            "capture",
            Some(&input.session_id),
            report.deferred.as_deref().unwrap_or_default(),
        );
    } else if marker.exists() {
        let _ = std::fs::remove_file(&marker);
    }
    Ok(Some(report))
}

fn pending_dir(files: &HookFiles) -> PathBuf {
    files.dir.join("capture-pending")
}

fn pending_path(files: &HookFiles, session_id: &str) -> PathBuf {
    pending_dir(files).join(format!("{}.json", HookFiles::stem(session_id)))
}

/// Finishes up to [`MAX_PENDING_PER_CALL`] deferred captures of other
/// sessions; returns how many. Best effort: a failure is logged and the
/// marker kept for a later call.
fn finish_pending(store_root: &Path, current: &str, lock_wait: Duration) -> usize {
    let files = HookFiles::new(store_root);
    let Ok(entries) = std::fs::read_dir(pending_dir(&files)) else {
        return 0;
    };
    let mut markers: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    markers.sort();
    let mut finished = 0;
    for marker in markers.into_iter().take(MAX_PENDING_PER_CALL) {
        let Ok(Some(pending)) = read_json::<Pending>(&marker) else {
            let _ = std::fs::remove_file(&marker);
            continue;
        };
        if pending.session_id == current {
            continue;
        }
        if !pending.transcript.is_file() {
            files.log_line(
                "capture",
                Some(&pending.session_id),
                &format!(
                    "deferred capture dropped: {} is gone",
                    pending.transcript.display()
                ),
            );
            let _ = std::fs::remove_file(&marker);
            continue;
        }
        let request = CaptureRequest {
            store_root,
            transcript: &pending.transcript,
            namespace: &pending.namespace,
            lock_wait,
        };
        match capture(&request) {
            Ok(report) if report.deferred.is_none() => {
                let _ = std::fs::remove_file(&marker);
                finished += 1;
            }
            Ok(_) => break,
            Err(e) => {
                files.log_line(
                    "capture",
                    Some(&pending.session_id),
                    &format!("deferred capture failed: {e}"),
                );
                break;
            }
        }
    }
    finished
}
