//! Loading records from files into a store: read, validate everything, then
//! write once. Files may hold records of any input format or lines of an
//! export (see [`crate::export`]), which are restored as they were.
//!
//! A batch is all-or-nothing: every input is read and validated before anything
//! is written, and if any record is bad the store is left exactly as it was and
//! every problem is reported with its file, line and field. A valid batch is then
//! written as one commit.

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::embed::Embedder;
use crate::error::{Error, InputErrors, Result};
use crate::export::{is_export_line, parse_line, restore_imported, Imported};
use crate::record::input::read_paths;
use crate::record::{parse_record, ParseOptions, Record};
use crate::store::{AddReport, Store};

/// What `add` read and what it did.
#[derive(Debug, Clone, Serialize)]
pub struct AddSummary {
    /// Records read: caller records and export lines together.
    pub records: usize,
    /// What the store did with them (both writes' counts together).
    #[serde(flatten)]
    pub report: AddReport,
    /// Bytes of input read.
    pub bytes_read: u64,
    /// Files in the given folders that are not JSON or JSONL, not read.
    pub skipped_files: Vec<PathBuf>,
    /// Seconds from the start of reading to the end of the write.
    pub seconds: f64,
}

/// Records read and validated from input files, not yet written.
#[derive(Debug, Default)]
pub struct ReadBatch {
    /// Records as callers write them.
    pub records: Vec<Record>,
    /// Records of `knowledge-db export` lines, restored as they were.
    pub imported: Vec<Imported>,
    /// Bytes of input read.
    pub bytes: u64,
    /// Files in the given folders that are not JSON or JSONL, not read.
    pub skipped_files: Vec<PathBuf>,
}

impl ReadBatch {
    /// Records in the batch, export lines included.
    pub fn len(&self) -> usize {
        self.records.len() + self.imported.len()
    }

    /// Whether the batch holds no record at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Reads and validates records from `paths` (`-` is `stdin`) without writing.
/// Export lines (see [`crate::export`]) are read as the records they were.
pub fn read_records(
    store: &Store,
    paths: &[PathBuf],
    stdin: &mut dyn Read,
    options: &ParseOptions,
) -> Result<ReadBatch> {
    // A path that is not there is a mistake in the command, not a bad record.
    let missing: Vec<String> = paths
        .iter()
        .filter(|p| p.as_os_str() != "-" && std::fs::symlink_metadata(p).is_err())
        .map(|p| p.display().to_string())
        .collect();
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "no such file or folder: {}; nothing was written",
            missing.join(", ")
        )));
    }
    let limits = &store.config().limits;
    let read = read_paths(
        paths,
        stdin,
        crate::record::input::InputLimits {
            max_record_bytes: limits.max_record_bytes,
            file: limits.file_limit(),
        },
    );
    let mut errors = read.errors;
    let mut batch = ReadBatch {
        bytes: read.bytes,
        skipped_files: read.skipped_files,
        ..ReadBatch::default()
    };
    for raw in read.records {
        if is_export_line(&raw.value) {
            match parse_line(raw.value, &raw.origin) {
                Ok(imported) => batch.imported.push(imported),
                Err(e) => errors.push(e),
            }
            continue;
        }
        match parse_record(raw.value, &raw.origin, options) {
            Ok(record) => batch.records.push(record),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(Error::Input(InputErrors(errors)));
    }
    crate::record::context::link_previous_turns(&mut batch.records);
    Ok(batch)
}

/// Reads, validates and adds records from `paths`: the records as one commit,
/// export lines restored as they were (see [`crate::export`]).
pub fn add_paths(
    store: &Store,
    paths: &[PathBuf],
    stdin: &mut dyn Read,
    options: &ParseOptions,
    embedder: Option<&mut dyn Embedder>,
    lock_timeout: Duration,
) -> Result<AddSummary> {
    let started = Instant::now();
    let batch = read_records(store, paths, stdin, options)?;
    add_batch(store, batch, embedder, lock_timeout, started)
}

/// Writes a batch [`read_records`] read, as [`add_paths`] does, for callers
/// that look at the records before they are written; `started` is when the
/// reading began (for the summary's time).
pub fn add_batch(
    store: &Store,
    batch: ReadBatch,
    mut embedder: Option<&mut dyn Embedder>,
    lock_timeout: Duration,
    started: Instant,
) -> Result<AddSummary> {
    let count = batch.len();
    let reborrowed = embedder.as_mut().map(|e| &mut **e as &mut dyn Embedder);
    let mut report = store.add(batch.records, reborrowed, lock_timeout)?;
    if !batch.imported.is_empty() {
        let restored = restore_imported(store, batch.imported, embedder, lock_timeout)?;
        report.absorb(&restored);
    }
    Ok(AddSummary {
        records: count,
        report,
        bytes_read: batch.bytes,
        skipped_files: batch.skipped_files,
        seconds: started.elapsed().as_secs_f64(),
    })
}
