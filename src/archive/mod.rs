//! L3, the archive tier: old records, compressed, out of the way, never lost.
//!
//! The store has three tiers. L1 is the agent's own context window; L2 is the
//! searchable store (`text/`, `vectors/`); L3 is this archive. `archive` moves L2
//! records here, `prune` later reduces archived records to their summaries, and
//! `restore` brings them back to L2 with their embeddings.
//!
//! ```text
//! <store>/archive/
//!   2026-01.jsonl.zst   records whose own time falls in that month: append-only
//!                       checksummed zstd frames of JSON lines (see [`frame`])
//!   index/              the L3 text index: BM25 fields and each record's frame
//!                       location, no stored text (see [`l3`])
//!   JOURNAL.json        present only while an operation runs (see `crate::tiers::ops`)
//!   maintain.json       when the retention policy is next due (see `crate::tiers::policy`)
//! ```
//!
//! One file per month keeps files a bounded size (prune rewrites a whole file,
//! so a month is also the unit of rewrite), makes retention by age a matter of
//! whole files, and lets a person find old material by date with `zstd -dc`.
//! Each archived line ([`Entry`]) keeps the record, its version hash and its
//! embedding, so `restore` never re-embeds a record that was not pruned.

pub mod digest;
pub mod frame;
pub mod l3;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files::sync_dir;
use crate::record::parse::{format_time, parse_time};
use crate::record::Record;

/// Folder of the archive inside a store.
pub const ARCHIVE_DIR: &str = "archive";
/// Archive files are `<YYYY-MM>.jsonl.zst`.
const FILE_SUFFIX: &str = ".jsonl.zst";
/// A frame holds at most this many records …
const FRAME_RECORDS: usize = 128;
/// … or this many bytes of JSON lines, whichever comes first. Small enough that
/// reading one search hit decompresses little, large enough to compress well.
pub const FRAME_BYTES: usize = 256 * 1024;
/// zstd level: 9 is still fast (tens of MB/s per core) and compresses JSON well.
pub const ZSTD_LEVEL: i32 = 9;

/// One archived record: the record itself plus what `restore` needs to put it
/// back exactly as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The record as it was in L2, its tier set to L3.
    pub record: Record,
    /// The record's version hash in L2 (kind, namespace, JSON).
    pub hash: u64,
    /// Hash of the text its embedding was computed from.
    pub text_hash: u64,
    /// The embedding, little-endian f32, base64; absent when it had none or was pruned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<String>,
    /// When it was archived (Unix seconds).
    pub archived_at: i64,
    /// What pruning removed: field names, or `N messages` for a message summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
}

impl Entry {
    /// Archives `record` now (Unix seconds): sets its tier to L3 and keeps its
    /// version hash, text hash and embedding (`None` when it has none).
    pub fn new(
        mut record: Record,
        hash: u64,
        text_hash: u64,
        vector: Option<&[f32]>,
        now: i64,
    ) -> Entry {
        record.tier = crate::record::Tier::L3;
        Entry {
            record,
            hash,
            text_hash,
            embedding: vector.map(|v| {
                base64::engine::general_purpose::STANDARD.encode(crate::index::embedding_bytes(v))
            }),
            archived_at: now,
            dropped: Vec::new(),
        }
    }

    /// The stored embedding, decoded.
    pub fn vector(&self) -> Option<Vec<f32>> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(self.embedding.as_ref()?)
            .ok()?;
        crate::index::embedding_from_bytes(&bytes, crate::embed::DIM)
    }

    fn to_line(&self) -> Result<Vec<u8>> {
        let mut line = serde_json::to_vec(self).map_err(|e| Error::CorruptRecord {
            id: self.record.id.clone(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        Ok(line)
    }

    /// Reads one JSON line, re-deriving the record's searchable fields.
    pub fn parse_line(line: &[u8]) -> Result<Entry> {
        let mut entry: Entry = serde_json::from_slice(line).map_err(|e| Error::CorruptRecord {
            id: "?".into(),
            message: format!("archived line: {e}"),
        })?;
        crate::index::rederive_fields(&mut entry.record)?;
        Ok(entry)
    }
}

/// The record's own time (its timestamp, else when it was added), Unix seconds.
pub fn record_time(record: &Record) -> i64 {
    record
        .fields
        .timestamp
        .or_else(|| parse_time(&record.added_at))
        .unwrap_or(0)
}

/// The archive file a record goes to: the month of its own time, `YYYY-MM`.
pub fn month_of(record: &Record) -> String {
    format_time(record_time(record)).chars().take(7).collect()
}

/// Where an archived record's frame is: file name (month) and byte offset.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// Archive file name, `YYYY-MM` (no suffix).
    pub file: String,
    /// Byte offset of the frame's header in that file.
    pub offset: u64,
}

impl Location {
    /// As `<file>@<offset>`, the form the L3 index stores.
    pub fn encode(&self) -> String {
        format!("{}@{}", self.file, self.offset)
    }

    /// Parses `<file>@<offset>`; `None` when the text is not of that form.
    pub fn decode(text: &str) -> Option<Location> {
        let (file, offset) = text.rsplit_once('@')?;
        Some(Location {
            file: file.to_string(),
            offset: offset.parse().ok()?,
        })
    }
}

/// The archive folder of a store, and its files.
#[derive(Debug, Clone)]
pub struct Archive {
    dir: PathBuf,
}

/// A file's sound entries with their frame offsets, and how the file ended.
pub struct FileEntries {
    /// Each sound entry with the byte offset of the frame that holds it, in file order.
    pub entries: Vec<(u64, Entry)>,
    /// The file's frames as checked: damaged frames and how it ended.
    pub scan: frame::Scan,
    /// Size of the file in bytes (0 when it does not exist).
    pub bytes: u64,
}

impl Archive {
    /// The archive of the store at `store_root` (its `archive/` folder; not created here).
    pub fn new(store_root: &Path) -> Archive {
        Archive {
            dir: store_root.join(ARCHIVE_DIR),
        }
    }

    /// The archive folder, `<store>/archive`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the archive folder exists.
    pub fn exists(&self) -> bool {
        self.dir.is_dir()
    }

    /// Path of the archive file for month `name` (`YYYY-MM`), whether or not it exists.
    pub fn file_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}{FILE_SUFFIX}"))
    }

    fn ensure_dir(&self) -> Result<()> {
        if !self.dir.is_dir() {
            fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
            if let Some(parent) = self.dir.parent() {
                sync_dir(parent)?;
            }
        }
        Ok(())
    }

    /// The archive files' names (`YYYY-MM`), oldest first.
    pub fn files(&self) -> Result<Vec<String>> {
        let Ok(read) = fs::read_dir(&self.dir) else {
            return Ok(Vec::new());
        };
        let mut names: Vec<String> = read
            .flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(FILE_SUFFIX))
                    .map(str::to_string)
            })
            .collect();
        names.sort();
        Ok(names)
    }

    /// Every sound entry of a file with its frame's offset; a torn tail is left out.
    pub fn read_file(&self, name: &str) -> Result<FileEntries> {
        let path = self.file_path(name);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let scan = frame::scan_bytes(&bytes);
        let mut entries = Vec::new();
        for info in &scan.frames {
            let lines = frame::decode_in(&bytes, info).map_err(|e| at_path(e, &path))?;
            for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                entries.push((
                    info.offset,
                    Entry::parse_line(line).map_err(|e| at_path(e, &path))?,
                ));
            }
        }
        Ok(FileEntries {
            entries,
            scan,
            bytes: bytes.len() as u64,
        })
    }

    /// The archived entry with this id, found through the L3 index; none when
    /// the archive does not hold it.
    pub fn get(&self, id: &str) -> Result<Option<Entry>> {
        let Some(index) = l3::L3Index::open_existing(self)? else {
            return Ok(None);
        };
        let searcher = index.reader()?.searcher();
        match l3::locate(&searcher, index.fields(), id)? {
            Some(location) => self.read_entry(&location, id),
            None => Ok(None),
        }
    }

    /// The entry with this id in the frame at `location`.
    pub fn read_entry(&self, location: &Location, id: &str) -> Result<Option<Entry>> {
        let path = self.file_path(&location.file);
        let lines = match frame::read_at(&path, location.offset) {
            Ok(lines) => lines,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        entry_in(&lines, id).map_err(|e| at_path(e, &path))
    }

    /// Appends entries to a file as new frames and fsyncs it. A torn tail left by
    /// a crash is cut off first. Returns each entry's frame offset, in order.
    pub fn append(&self, name: &str, entries: &[Entry]) -> Result<Vec<u64>> {
        self.ensure_dir()?;
        let path = self.file_path(name);
        let existed = path.exists();
        let valid_len = if existed {
            let bytes = fs::read(&path).map_err(|e| Error::io(&path, e))?;
            frame::scan_bytes(&bytes).valid_len
        } else {
            0
        };
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        file.set_len(valid_len).map_err(|e| Error::io(&path, e))?;
        let (frames, offsets) = encode_frames(entries, valid_len)?;
        use std::io::{Seek, SeekFrom};
        file.seek(SeekFrom::Start(valid_len))
            .map_err(|e| Error::io(&path, e))?;
        file.write_all(&frames).map_err(|e| Error::io(&path, e))?;
        file.sync_all().map_err(|e| Error::io(&path, e))?;
        if !existed {
            sync_dir(&self.dir)?;
        }
        Ok(offsets)
    }

    /// Replaces a file's content atomically: temp file, fsync, rename, fsync the
    /// folder. An empty list removes the file. Returns each entry's frame offset.
    pub fn rewrite(&self, name: &str, entries: &[Entry]) -> Result<Vec<u64>> {
        self.ensure_dir()?;
        let path = self.file_path(name);
        if entries.is_empty() {
            match fs::remove_file(&path) {
                Ok(()) => sync_dir(&self.dir)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&path, e)),
            }
            return Ok(Vec::new());
        }
        let (frames, offsets) = encode_frames(entries, 0)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))?;
        tmp.write_all(&frames)
            .map_err(|e| Error::io(tmp.path(), e))?;
        // Owner-only, whatever the umask: the archive holds the records' text.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(fs::Permissions::from_mode(0o600))
                .map_err(|e| Error::io(tmp.path(), e))?;
        }
        tmp.as_file()
            .sync_all()
            .map_err(|e| Error::io(tmp.path(), e))?;
        tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        sync_dir(&self.dir)?;
        Ok(offsets)
    }

    /// Removes temporary files of rewrites a crash interrupted.
    pub fn remove_stale_temps(&self) -> Result<usize> {
        let Ok(read) = fs::read_dir(&self.dir) else {
            return Ok(0);
        };
        let mut removed = 0;
        for entry in read.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') && name.ends_with(".tmp") {
                fs::remove_file(entry.path()).map_err(|e| Error::io(entry.path(), e))?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Bytes of the archive files (not the L3 index).
    pub fn files_bytes(&self) -> Result<u64> {
        Ok(self
            .files()?
            .iter()
            .filter_map(|n| fs::metadata(self.file_path(n)).ok())
            .map(|m| m.len())
            .sum())
    }
}

/// The entry with this id among a frame's JSON lines.
pub(crate) fn entry_in(lines: &[u8], id: &str) -> Result<Option<Entry>> {
    // Every line starts with the record's id (`{"record":{"id":…`): compare that
    // prefix before parsing anything.
    let prefix = format!(
        "{{\"record\":{{\"id\":{}",
        serde_json::to_string(id).unwrap_or_default()
    );
    for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        if !line.starts_with(prefix.as_bytes()) {
            continue;
        }
        let entry = Entry::parse_line(line)?;
        if entry.record.id == id {
            return Ok(Some(entry));
        }
    }
    Ok(None)
}

fn at_path(error: Error, path: &Path) -> Error {
    match error {
        Error::CorruptRecord { id, message } => Error::Archive {
            path: path.to_path_buf(),
            message: format!("record `{id}`: {message}"),
        },
        other => other,
    }
}

/// Encodes entries as frames starting at byte `start`; returns the bytes and each
/// entry's frame offset.
fn encode_frames(entries: &[Entry], start: u64) -> Result<(Vec<u8>, Vec<u64>)> {
    let mut out = Vec::new();
    let mut offsets = Vec::with_capacity(entries.len());
    let mut batch: Vec<u8> = Vec::new();
    let mut count = 0u32;
    let flush = |batch: &mut Vec<u8>, count: &mut u32, out: &mut Vec<u8>| -> Result<()> {
        if *count > 0 {
            out.extend(frame::encode(batch, *count, ZSTD_LEVEL)?);
            batch.clear();
            *count = 0;
        }
        Ok(())
    };
    for entry in entries {
        let line = entry.to_line()?;
        if count as usize >= FRAME_RECORDS || (count > 0 && batch.len() + line.len() > FRAME_BYTES)
        {
            flush(&mut batch, &mut count, &mut out)?;
        }
        offsets.push(start + out.len() as u64);
        batch.extend_from_slice(&line);
        count += 1;
    }
    flush(&mut batch, &mut count, &mut out)?;
    Ok((out, offsets))
}

/// What an interrupted operation touched, written (and fsynced) before it
/// touches anything, removed when it is done. See `crate::tiers::ops::recover`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Journal {
    /// The operation: `archive`, `restore`, `prune` or `supersede`.
    pub op: String,
    /// Ids of the records it moves or removes.
    pub ids: Vec<String>,
    /// Archive files (months) it appends to or rewrites.
    pub files: Vec<String>,
}

impl Archive {
    fn journal_path(&self) -> PathBuf {
        self.dir.join("JOURNAL.json")
    }

    /// Whether an operation's journal is present (one `stat`): an operation is
    /// running, or one was interrupted and awaits `crate::tiers::ops::recover`.
    pub fn has_journal(&self) -> bool {
        self.journal_path().exists()
    }

    /// When the journal was last written (Unix seconds), if it is there.
    pub fn journal_modified(&self) -> Option<i64> {
        let modified = fs::metadata(self.journal_path()).ok()?.modified().ok()?;
        let secs = modified
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs();
        i64::try_from(secs).ok()
    }

    /// The journal, if present; `None` also when it was cut short by a crash (unreadable).
    pub fn read_journal(&self) -> Result<Option<Journal>> {
        let path = self.journal_path();
        match fs::read(&path) {
            // A journal cut short by a crash was never followed by any change.
            Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Writes the journal and fsyncs it and the folder, creating the archive folder if needed.
    pub fn write_journal(&self, journal: &Journal) -> Result<()> {
        self.ensure_dir()?;
        let path = self.journal_path();
        let bytes = serde_json::to_vec(journal).map_err(|e| Error::io(&path, e.into()))?;
        let mut file = File::create(&path).map_err(|e| Error::io(&path, e))?;
        file.write_all(&bytes).map_err(|e| Error::io(&path, e))?;
        file.sync_all().map_err(|e| Error::io(&path, e))?;
        sync_dir(&self.dir)
    }

    /// Removes the journal (fsyncing the folder); no error if it is absent.
    pub fn clear_journal(&self) -> Result<()> {
        let path = self.journal_path();
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(&self.dir),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(&path, e)),
        }
    }
}

/// One tier's size and age, for `stats`.
#[derive(Debug, Clone, Serialize)]
pub struct TierStats {
    /// `l2` or `l3`.
    pub tier: &'static str,
    /// Records in the tier.
    pub records: u64,
    /// Bytes on disk: L2's text index and vector files; L3's archive files and index.
    pub bytes_on_disk: u64,
    /// L3 only: bytes of the archive files alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive_files_bytes: Option<u64>,
    /// L3 only: bytes of the L3 text index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_bytes: Option<u64>,
    /// L3 only: JSON bytes of the archived records over the archive files' bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compression_ratio: Option<f64>,
    /// The oldest record time in the tier (RFC 3339); `None` when it is empty.
    pub oldest: Option<String>,
    /// The newest record time in the tier (RFC 3339); `None` when it is empty.
    pub newest: Option<String>,
}

/// The archive's records in `namespace`, counted by kind, tier and namespace
/// from the L3 index.
pub fn l3_counts(store_root: &Path, namespace: &str) -> Result<crate::index::ColumnCounts> {
    let archive = Archive::new(store_root);
    match l3::L3Index::open_existing(&archive)? {
        Some(l3) => {
            let searcher = l3.reader()?.searcher();
            crate::index::ColumnCounts::of_namespace(&searcher, Some(namespace))
        }
        None => Ok(crate::index::ColumnCounts::default()),
    }
}

/// The archive's [`TierStats`], from frame headers and the L3 index (no
/// decompression), with its records counted by kind, tier and namespace.
pub fn l3_stats(store_root: &Path) -> Result<(TierStats, crate::index::ColumnCounts)> {
    let archive = Archive::new(store_root);
    let (mut raw, mut files_bytes) = (0u64, 0u64);
    for name in archive.files()? {
        let (_, json, bytes) = frame::header_totals(&archive.file_path(&name))?;
        raw += json;
        files_bytes += bytes;
    }
    let index_bytes = crate::files::dir_size(&archive.dir().join("index"));
    let (mut records, mut counts) = (0u64, crate::index::ColumnCounts::default());
    if let Some(l3) = l3::L3Index::open_existing(&archive)? {
        let searcher = l3.reader()?.searcher();
        records = searcher.num_docs();
        counts = crate::index::ColumnCounts::of(&searcher)?;
    }
    let stats = TierStats {
        tier: "l3",
        records,
        bytes_on_disk: files_bytes + index_bytes,
        archive_files_bytes: Some(files_bytes),
        index_bytes: Some(index_bytes),
        compression_ratio: (files_bytes > 0).then(|| raw as f64 / files_bytes as f64),
        oldest: counts.oldest.map(format_time),
        newest: counts.newest.map(format_time),
    };
    Ok((stats, counts))
}
