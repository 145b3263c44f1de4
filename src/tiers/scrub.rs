//! Scrubbing: a store that already holds secrets rewritten through redaction.
//!
//! Every write redacts (see [`crate::privacy`]), but a store written before
//! redaction existed, or before a new `[privacy]` pattern was added, holds
//! what it was given. `scrub` sends everything the store keeps through the
//! store's redactor, and rewrites what changed:
//!
//! 1. L2: each live record whose text changes is written again, redacted,
//!    without its vector (the upkeep embeds the redacted text; the old vector
//!    was made from the secret). Then every segment holding the replaced
//!    versions is rewritten without them and the old files removed, as
//!    `forget` purges.
//! 2. L3: each archive file holding a record that changes is rewritten
//!    (temp file, fsync, rename) with the redacted records and no vectors for
//!    them, and the L3 index reindexed and purged. The files are journalled
//!    first, like every tier operation's: a scrub killed between a rewrite
//!    and the index commit is finished by the next writer.
//! 3. The JSON files beside the tiers that quote transcripts (the hooks'
//!    session state, queues and blocks under `hooks/`, the read positions
//!    under `ingest/`, which keep the last prompt) and the hooks' log.
//! 4. The files the hooks keep for a forgotten session (`forget --session`
//!    leaves a tombstone; a hook that ran for the session before the hooks
//!    honoured it, or under another session id reading its transcript, may
//!    have left some): named after the session, or naming it. They are
//!    listed (`forgotten_files`) and removed.
//!
//! Idempotent: redaction never changes a redacted text, so a second scrub
//! finds nothing, and a scrub killed at any point is completed by running it
//! again (each step commits on its own; what is left is found the same way).

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::archive::l3::{reindex_file, L3Index};
use crate::archive::{Archive, Entry, Journal};
use crate::error::{Error, Result};
use crate::index::{record_hash, VectorField};
use crate::privacy::{redact_record, redact_value, Findings, Redactor};
use crate::record::Record;
use crate::store::Store;

/// What a scrub replaced (or, with `dry_run`, would replace).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScrubReport {
    /// Nothing was written.
    pub dry_run: bool,
    /// Values replaced and private spans dropped, by kind, in every place.
    pub found: Findings,
    /// Live records rewritten.
    pub l2_records: usize,
    /// Archived records rewritten.
    pub l3_records: usize,
    /// Archive files rewritten.
    pub archive_files_rewritten: usize,
    /// Index segments rewritten to drop the old versions.
    pub segments_rewritten: usize,
    /// Side files (hooks' state, queues, blocks, read positions, log) rewritten.
    pub side_files: usize,
    /// Records written without a vector, for the upkeep to embed again.
    pub vectors_dropped: usize,
    /// Files kept for a forgotten session (removed unless `dry_run`).
    pub forgotten_files: Vec<String>,
    /// Seconds the scrub took.
    pub seconds: f64,
}

/// Scrubs the whole store (see the module docs).
pub fn scrub(store: &Store, dry_run: bool, timeout: Duration) -> Result<ScrubReport> {
    let started = Instant::now();
    let lock = store.lock_writer(timeout)?;
    super::ops::recover(store, &lock)?;
    let redactor = store.redactor();
    let mut report = ScrubReport {
        dry_run,
        ..ScrubReport::default()
    };

    // L2: the live records whose text changes.
    let searcher = store.reader()?.searcher();
    let mut changed: Vec<(Record, VectorField)> = Vec::new();
    let mut renamed: Vec<String> = Vec::new();
    store.for_each_l2_record(
        &searcher,
        |_| true,
        |mut l2| {
            let old_id = l2.record.id.clone();
            let found = redact_record(redactor, &mut l2.record);
            if found.is_empty() {
                return Ok(());
            }
            report.found.absorb(&found);
            if l2.record.id != old_id {
                renamed.push(old_id);
            }
            if l2.vector.embedding.take().is_some() {
                report.vectors_dropped += 1;
            }
            l2.vector.draft = false;
            changed.push((l2.record, l2.vector));
            Ok(())
        },
    )?;
    drop(searcher);
    report.l2_records = changed.len();
    if !dry_run {
        store.put_locked(&lock, &changed)?;
        store.remove_locked(&lock, &renamed)?;
        super::ops::crash_point("scrub-l2-written");
        report.segments_rewritten += store.purge_deleted_locked(&lock)?;
        super::ops::crash_point("scrub-l2-purged");
    }
    drop(changed);

    // L3: the archive files holding a record that changes.
    let archive = Archive::new(store.root());
    if let Some(l3) = L3Index::open_existing(&archive)? {
        let (records, files, segments) =
            scrub_archive(&archive, &l3, redactor, dry_run, &mut report.found)?;
        report.l3_records = records;
        report.archive_files_rewritten = files;
        report.segments_rewritten += segments;
    }

    // The files beside the tiers.
    report.forgotten_files = forgotten_files(store.root(), dry_run)?;
    report.side_files = scrub_side_files(store.root(), redactor, dry_run, &mut report.found)?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Redacts the archive: returns (records changed, files rewritten, L3 index
/// segments rewritten). The files to rewrite are journalled first (op
/// `scrub`), so a scrub killed midway leaves the L3 index to the next
/// writer's recovery, which reindexes them from what they hold then; the
/// next scrub redoes a file that was not rewritten yet.
fn scrub_archive(
    archive: &Archive,
    l3: &L3Index,
    redactor: &Redactor,
    dry_run: bool,
    found: &mut Findings,
) -> Result<(usize, usize, usize)> {
    let mut records = 0;
    let mut rewrites: Vec<(String, Vec<Entry>)> = Vec::new();
    let mut journal = Journal {
        op: "scrub".into(),
        ids: Vec::new(),
        files: Vec::new(),
    };
    for file in archive.files()? {
        let read = archive.read_file(&file)?;
        let mut entries: Vec<Entry> = Vec::with_capacity(read.entries.len());
        let mut ids = Vec::with_capacity(read.entries.len());
        let mut file_changed = false;
        for (_, mut entry) in read.entries {
            ids.push(entry.record.id.clone());
            let f = redact_record(redactor, &mut entry.record);
            if !f.is_empty() {
                found.absorb(&f);
                records += 1;
                file_changed = true;
                entry.hash = record_hash(&entry.record);
                entry.embedding = None;
            }
            entries.push(entry);
        }
        if file_changed {
            journal.ids.extend(ids);
            journal.files.push(file.clone());
            rewrites.push((file, entries));
        }
    }
    let files = rewrites.len();
    if dry_run || rewrites.is_empty() {
        let segments = if dry_run { 0 } else { l3.purge_deleted()? };
        return Ok((records, files, segments));
    }
    archive.write_journal(&journal)?;
    let mut writer = l3.writer()?;
    l3.delete_ids(&writer, journal.ids.iter());
    for (file, entries) in &rewrites {
        archive.rewrite(file, entries)?;
        super::ops::crash_point("scrub-archive-file-rewritten");
        reindex_file(archive, l3, &writer, file)?;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    archive.clear_journal()?;
    super::ops::crash_point("scrub-archive-committed");
    let segments = l3.purge_deleted()?;
    Ok((records, files, segments))
}

/// The files under `hooks/` (and its deferred captures) and `ingest/` that
/// belong to a forgotten session: named after it, or holding its id or its
/// transcript's name. Removed unless `dry_run`; their paths, relative to the
/// store.
fn forgotten_files(root: &Path, dry_run: bool) -> Result<Vec<String>> {
    let tombstones = crate::store::tombstones::Tombstones::load(root)?;
    if tombstones.sessions.is_empty() {
        return Ok(Vec::new());
    }
    let sessions: Vec<(String, &String)> = tombstones
        .sessions
        .keys()
        .map(|id| (crate::files::session_stem(id), id))
        .collect();
    let mut out = Vec::new();
    for dir in ["hooks", "hooks/capture-pending", "ingest"] {
        let Ok(read) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in read.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("hooks.log") || !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let named = sessions.iter().any(|(stem, _)| {
                name.strip_prefix(stem.as_str())
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('_'))
            });
            let naming = !named && {
                let text = std::fs::read(&path).unwrap_or_default();
                let text = String::from_utf8_lossy(&text);
                sessions.iter().any(|(_, id)| {
                    text.contains(&format!("\"{id}\"")) || text.contains(&format!("/{id}.jsonl"))
                })
            };
            if !(named || naming) {
                continue;
            }
            if !dry_run {
                std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
            }
            out.push(format!("{dir}/{name}"));
        }
    }
    out.sort();
    Ok(out)
}

/// Redacts the JSON files under `hooks/` and `ingest/` and the hooks' log;
/// returns how many files changed.
fn scrub_side_files(
    root: &Path,
    redactor: &Redactor,
    dry_run: bool,
    found: &mut Findings,
) -> Result<usize> {
    let mut changed = 0;
    let mut paths = Vec::new();
    for dir in ["hooks", "hooks/capture-pending", "ingest"] {
        let Ok(read) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        paths.extend(read.flatten().map(|e| e.path()));
    }
    for path in paths {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let is_file = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        if !is_file {
            continue;
        }
        let new_bytes = if name.ends_with(".json") {
            scrub_json(&path, redactor, found)?
        } else if name == "hooks.log" || name == "hooks.log.1" {
            scrub_text(&path, redactor, found)?
        } else {
            None
        };
        let Some(bytes) = new_bytes else {
            continue;
        };
        changed += 1;
        if !dry_run {
            crate::files::replace(&path, &bytes, crate::files::Durability::Durable)?;
        }
    }
    Ok(changed)
}

/// The redacted bytes of a JSON file, or `None` when nothing changes (or it
/// is not JSON: the hooks rebuild a state file they cannot read).
fn scrub_json(path: &Path, redactor: &Redactor, found: &mut Findings) -> Result<Option<Vec<u8>>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Ok(None);
    };
    let f = redact_value(redactor, &mut value);
    if f.is_empty() {
        return Ok(None);
    }
    found.absorb(&f);
    serde_json::to_vec(&value)
        .map(Some)
        .map_err(|e| Error::io(path, std::io::Error::other(e)))
}

/// The redacted bytes of a text file, or `None` when nothing changes.
fn scrub_text(path: &Path, redactor: &Redactor, found: &mut Findings) -> Result<Option<Vec<u8>>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8_lossy(&bytes);
    let redacted = redactor.redact(&text);
    if redacted.found.is_empty() {
        return Ok(None);
    }
    found.absorb(&redacted.found);
    Ok(Some(redacted.text.into_owned().into_bytes()))
}
