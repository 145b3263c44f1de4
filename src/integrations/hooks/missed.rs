//! Captures that could not be written: a trace where one can be written, and
//! a catch-up at the next hook that can write.
//!
//! A capturing hook (`stop`, `session-end`, `pre-compact`, the checks of
//! `post-tool-use`) that cannot write to the store (a read-only mount, a full
//! disk, a folder it may not write, a damaged index) must not lose the
//! session without a trace, and cannot leave the trace in the store it cannot
//! write. So it leaves a marker in the user's state folder
//! (`$XDG_STATE_HOME/knowledge-db/missed/`, by default
//! `~/.local/state/knowledge-db/missed/`), one per store and session: the
//! store, the session's transcript, its namespace, when and why it failed.
//! Nothing of the transcript's text is in it. The next capturing hook of any
//! session on that store that can write stores what each marked transcript
//! gained (ingest is incremental: the transcript's messages since the last
//! capture that succeeded), then removes the marker; `hook doctor` lists the
//! markers left.
//!
//! Where the state folder cannot be written either, the hook's message says
//! exactly what was missed and the command that stores it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{read_json, HookFiles, HookInput};
use crate::error::Error;
use crate::flows::capture::{capture, CaptureRequest};

/// Markers caught up by one hook call, at most (each is an incremental ingest).
const MAX_PER_CALL: usize = 4;

/// A capture that failed: what the next hook that can write stores.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Missed {
    /// The store the capture was for.
    pub store: PathBuf,
    /// The session.
    pub session_id: String,
    /// Its transcript.
    pub transcript: PathBuf,
    /// The namespace its messages go to.
    pub namespace: String,
    /// When the (first) capture failed, RFC 3339.
    pub since: String,
    /// Why it failed (the latest failure).
    pub error: String,
}

/// The folder of missed-capture markers: `$XDG_STATE_HOME/knowledge-db/missed`
/// (`~/.local/state/…` by default); `None` when no home folder is known.
pub fn state_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| dirs::home_dir().map(|home| home.join(".local").join("state")))?;
    Some(base.join("knowledge-db"))
}

/// The markers' folder for the store at `store_root`: one folder per store,
/// named by a hash of its path.
fn store_dir(store_root: &Path) -> Option<PathBuf> {
    let store = absolute(store_root);
    let key = crate::files::session_stem(&format!(
        "store-{:016x}",
        crate::embed::text::text_hash(&store.to_string_lossy())
    ));
    Some(state_dir()?.join("missed").join(key))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Leaves the marker of a capture of `input`'s session that failed with
/// `error`, and returns the error the hook reports: the cause, and where the
/// trace is (or, when no marker could be written, what was missed and the
/// command that stores it).
pub fn leave_trace(store_root: &Path, input: &HookInput, namespace: &str, error: Error) -> Error {
    // A transcript refused as input fails the same way at every try: no
    // marker (the error itself is logged, naming the file).
    if matches!(
        error,
        Error::Input(_)
            | Error::NotRegularFile { .. }
            | Error::OverLimit { .. }
            | Error::Usage(_)
            | Error::OutsideNamespace(_)
    ) {
        return error;
    }
    let transcript = input.transcript_path.clone().unwrap_or_default();
    let written = write_marker(store_root, input, namespace, &transcript, &error);
    let trace = match written {
        Ok(marker) => format!(
            "the next hook that can write stores them (marker: {})",
            marker.display()
        ),
        Err(why) => format!(
            "no marker could be written either ({why}): once the store can be written, run \
             `knowledge-db --store {} ingest --namespace {namespace} {}` to store them",
            store_root.display(),
            transcript.display()
        ),
    };
    Error::CaptureMissed {
        session: input.session_id.clone(),
        cause: Box::new(error),
        trace,
    }
}

fn write_marker(
    store_root: &Path,
    input: &HookInput,
    namespace: &str,
    transcript: &Path,
    error: &Error,
) -> std::result::Result<PathBuf, String> {
    let dir = store_dir(store_root).ok_or("no home folder to keep it in")?;
    let path = dir.join(format!("{}.json", HookFiles::stem(&input.session_id)));
    // The first failure's time stays: the messages since then are missing.
    let since = read_json::<Missed>(&path)
        .ok()
        .flatten()
        .map_or_else(crate::now_rfc3339, |m| m.since);
    let marker = Missed {
        store: absolute(store_root),
        session_id: input.session_id.clone(),
        transcript: absolute(transcript),
        namespace: namespace.to_string(),
        since,
        error: error.to_string(),
    };
    crate::files::create_private_dir(&dir).map_err(|e| e.to_string())?;
    super::write_json_atomically(&path, &marker).map_err(|e| e.to_string())?;
    Ok(path)
}

/// The markers left for the store at `store_root`, oldest session first.
pub fn markers(store_root: &Path) -> Vec<(PathBuf, Missed)> {
    let Some(dir) = store_dir(store_root) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<(PathBuf, Missed)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| Some((p.clone(), read_json::<Missed>(&p).ok()??)))
        .collect();
    found.sort_by(|a, b| a.1.since.cmp(&b.1.since));
    found
}

/// What a catch-up did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CatchUp {
    /// Sessions whose missed messages were stored (markers removed).
    pub sessions: Vec<String>,
    /// Messages stored for them.
    pub stored: usize,
}

/// After a capture of `current` that succeeded: stores what each marked
/// session missed (at most `MAX_PER_CALL`) and removes their markers;
/// `current`'s own marker is removed (its capture just stored everything).
/// Best effort: a failure is logged and the marker kept.
pub fn catch_up(store_root: &Path, current: &str, lock_wait: Duration) -> CatchUp {
    let files = HookFiles::new(store_root);
    let mut done = CatchUp::default();
    for (path, missed) in markers(store_root).into_iter().take(MAX_PER_CALL) {
        if missed.session_id == current {
            if std::fs::remove_file(&path).is_ok() {
                done.sessions.push(missed.session_id);
            }
            continue;
        }
        if !missed.transcript.is_file() {
            files.log_line(
                "capture",
                Some(&missed.session_id),
                &format!(
                    "a capture missed since {} cannot be caught up: {} is gone",
                    missed.since,
                    missed.transcript.display()
                ),
            );
            let _ = std::fs::remove_file(&path);
            continue;
        }
        let request = CaptureRequest {
            store_root,
            transcript: &missed.transcript,
            namespace: &missed.namespace,
            lock_wait,
        };
        match capture(&request) {
            Ok(report) if report.deferred.is_none() => {
                let _ = std::fs::remove_file(&path);
                files.log_line(
                    "capture",
                    Some(&missed.session_id),
                    &format!(
                        "caught up a capture missed since {} ({}): {} message(s) stored",
                        missed.since, missed.error, report.stored
                    ),
                );
                done.stored += report.stored;
                done.sessions.push(missed.session_id);
            }
            // The store is busy: the next call goes on.
            Ok(_) => break,
            // This one fails again (its marker stays for a later call);
            // the others are tried.
            Err(e) => {
                files.log_line(
                    "capture",
                    Some(&missed.session_id),
                    &format!("catching up a missed capture failed (kept for a later call): {e}"),
                );
            }
        }
    }
    done
}
