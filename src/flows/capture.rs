//! Capture: an agent's session stored as it happens, with nobody running
//! `ingest`.
//!
//! The Claude Code hooks call [`capture`] at the end of every turn (`Stop`),
//! when the session ends, before a compaction and at the compression checks:
//! each call stores what the transcript gained since the last one (and what
//! its subagents' transcripts gained), through the same incremental,
//! idempotent path as `knowledge-db ingest` ([`crate::transcript::ingest`]).
//! A call reads only the new bytes of a file that grew, so it costs a turn,
//! not a session.
//!
//! A hook must not hold the agent up: capture stores without vectors (the
//! background upkeep embeds them, and is nudged) and waits for the store's
//! writer lock no longer than it is told. A store busy past that wait is not
//! an error: nothing is read as done, so the next call stores this call's
//! messages too.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::store::Store;
use crate::transcript::ingest::{ingest, IngestOptions};

/// What to capture.
#[derive(Debug, Clone)]
pub struct CaptureRequest<'a> {
    /// The store's folder (created on first use).
    pub store_root: &'a Path,
    /// The session's transcript; its subagents' transcripts
    /// (`<session>/subagents/*.jsonl` beside it) are captured with it.
    pub transcript: &'a Path,
    /// The namespace the messages are stored in.
    pub namespace: &'a str,
    /// Longest wait for another writer.
    pub lock_wait: Duration,
}

/// What a capture did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CaptureReport {
    /// Transcript files read (the session's and its subagents').
    pub files: usize,
    /// Bytes read from them (only what they gained).
    pub bytes_read: u64,
    /// Messages read.
    pub messages: usize,
    /// Message records written (added or changed).
    pub stored: usize,
    /// Messages already stored as read.
    pub unchanged: usize,
    /// Why nothing was stored this time, when the store was busy: the next
    /// capture stores these messages too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deferred: Option<String>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Stores what `request.transcript` (and its subagents' transcripts) gained
/// since the last capture or ingest of them.
pub fn capture(request: &CaptureRequest<'_>) -> Result<CaptureReport> {
    let started = Instant::now();
    let files = session_files(request.transcript);
    let store = open_or_init(request.store_root)?;
    let options = IngestOptions {
        format: None,
        namespace: request.namespace.to_string(),
        dry_run: false,
        full: false,
        inline_embed_max: None,
        stop: None,
    };
    let mut report = CaptureReport {
        files: files.len(),
        ..CaptureReport::default()
    };
    match ingest(
        Some(&store),
        &files,
        &options,
        None,
        request.lock_wait,
        &mut |_| {},
    ) {
        Ok(ingested) => {
            report.bytes_read = ingested.bytes_read;
            report.messages = ingested.messages;
            if let Some(written) = &ingested.store {
                report.stored = written.added + written.updated;
                report.unchanged = written.unchanged;
                if written.without_vector > 0 {
                    crate::upkeep::nudge(&store, Some(written.without_vector as u64));
                }
            }
        }
        Err(Error::LockTimeout { .. }) => {
            report.deferred = Some(format!(
                "another writer held the store for over {:.1} s; the next capture stores these messages",
                request.lock_wait.as_secs_f64()
            ));
        }
        Err(e) => return Err(e),
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// What ingesting a user's existing history did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BackfillReport {
    /// Transcript files found.
    pub files: usize,
    /// Bytes read from them (only what is new since an earlier backfill).
    pub bytes_read: u64,
    /// Messages read.
    pub messages: usize,
    /// Message records written (added or changed).
    pub stored: usize,
    /// Messages already stored as read.
    pub unchanged: usize,
    /// Files an earlier ingest had read: only what they gained since was
    /// read this time (so `messages` counts the new messages only).
    pub files_read_before: usize,
    /// Message records the store holds when it finished (earlier ones too).
    pub messages_in_store: u64,
    /// Records waiting for a vector when it finished (the upkeep embeds them).
    pub without_vector: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Transcripts ingested per commit by [`backfill`]: a large history is
/// stored in steps, so memory stays bounded and a killed backfill keeps
/// what it committed (the next one reads on from there).
const BACKFILL_FILES_PER_COMMIT: usize = 32;

/// Ingests the transcripts under `dirs` (a user's `~/.claude/projects`)
/// without vectors, in commits of `BACKFILL_FILES_PER_COMMIT` files, and
/// nudges the upkeep to embed them. Incremental like every ingest: a second
/// backfill reads only what the files gained. `progress(done, total)` is
/// called per file.
pub fn backfill(
    store: &Store,
    dirs: &[PathBuf],
    namespace: &str,
    lock_timeout: Duration,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<BackfillReport> {
    let started = Instant::now();
    let files = crate::transcript::find_files(dirs)?;
    let mut report = BackfillReport {
        files: files.len(),
        ..BackfillReport::default()
    };
    let options = IngestOptions {
        format: None,
        namespace: namespace.to_string(),
        dry_run: false,
        full: false,
        inline_embed_max: None,
        stop: None,
    };
    for (i, chunk) in files.chunks(BACKFILL_FILES_PER_COMMIT).enumerate() {
        let done = i * BACKFILL_FILES_PER_COMMIT;
        let ingested = ingest(
            Some(store),
            chunk,
            &options,
            None,
            lock_timeout,
            &mut |at| progress(done + at.files_done, files.len()),
        )?;
        report.bytes_read += ingested.bytes_read;
        report.messages += ingested.messages;
        report.files_read_before += ingested.files.iter().filter(|f| f.start_offset > 0).count();
        if let Some(written) = &ingested.store {
            report.stored += written.added + written.updated;
            report.unchanged += written.unchanged;
        }
    }
    progress(files.len(), files.len());
    report.without_vector = store.records_without_vector()?;
    report.messages_in_store = store
        .l2_stats()?
        .counts
        .by_kind
        .get("message")
        .copied()
        .unwrap_or(0);
    if report.without_vector > 0 {
        crate::upkeep::nudge(store, Some(report.without_vector));
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The transcript and its subagents' transcripts: Claude Code writes a
/// session's subagents to `<session>/subagents/*.jsonl` beside
/// `<session>.jsonl`. Sorted, so they are read in the same order each time.
pub fn session_files(transcript: &Path) -> Vec<PathBuf> {
    let mut files = vec![transcript.to_path_buf()];
    let name = transcript
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(stem) = name.strip_suffix(".jsonl") else {
        return files;
    };
    let subagents = transcript.with_file_name(stem).join("subagents");
    let Ok(entries) = std::fs::read_dir(&subagents) else {
        return files;
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    found.sort();
    files.extend(found);
    files
}

/// The store at `root`, created on first use (a hook may be the first writer).
pub fn open_or_init(root: &Path) -> Result<Store> {
    match Store::open(root) {
        Err(Error::NoStore { .. }) => match Store::init(root) {
            Err(Error::StoreExists { .. }) => Store::open(root),
            other => other,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subagent_transcripts_come_with_their_session() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("abc.jsonl");
        std::fs::write(&main, b"").unwrap();
        let subagents = dir.path().join("abc/subagents");
        std::fs::create_dir_all(&subagents).unwrap();
        for name in ["agent-b.jsonl", "agent-a.jsonl", "notes.txt"] {
            std::fs::write(subagents.join(name), b"").unwrap();
        }
        let files = session_files(&main);
        assert_eq!(
            files,
            vec![
                main.clone(),
                subagents.join("agent-a.jsonl"),
                subagents.join("agent-b.jsonl")
            ]
        );
        assert_eq!(session_files(&dir.path().join("other.jsonl")).len(), 1);
    }
}
