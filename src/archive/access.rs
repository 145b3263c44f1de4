//! Access tracking: which records were read, and when, without slowing reads.
//!
//! `search` and `get` append the ids they return to `<store>/access.log`, one
//! line `<unix seconds>\t<id>` each, in a single `write` on a file opened for
//! appending: no lock, no index write, a few microseconds. It is best effort (a
//! read-only store just is not tracked). `maintain` folds the log into the
//! records' `access_count` and `last_accessed` under the writer lock: it renames
//! the log aside (new reads go to a fresh log), updates the records in one
//! commit, and deletes the old log. Lines at or before a record's stored
//! `last_accessed` are skipped, so a fold interrupted after its commit and run
//! again does not count twice. The archive policy reads the log too, so a record
//! read since the last fold is not archived as idle.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::record::parse::{format_time, parse_time};
use crate::store::lock::WriterLock;
use crate::store::Store;

/// The log file inside a store.
pub const LOG: &str = "access.log";
/// The log being folded.
const FOLDING: &str = "access.log.folding";

/// Reads of one record since the last fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    pub count: u64,
    /// Unix seconds of the latest read.
    pub last: i64,
}

pub type AccessMap = HashMap<String, Access>;

/// Appends one line per id to the access log. Errors are ignored: tracking must
/// never make a read fail.
pub fn log(root: &Path, ids: &[&str]) {
    if ids.is_empty() || !root.join("config.toml").exists() {
        return;
    }
    let now = crate::now_unix();
    // A leading newline ends any line a crashed writer left unfinished.
    let mut lines = String::with_capacity(ids.len() * 48 + 1);
    lines.push('\n');
    for id in ids {
        if id.contains(['\n', '\t']) {
            continue;
        }
        lines.push_str(&format!("{now}\t{id}\n"));
    }
    let path = root.join(LOG);
    if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(&path) {
        let _ = file.write_all(lines.as_bytes());
    }
}

/// Every logged read not yet folded (the current log and one being folded).
pub fn read(root: &Path) -> Result<AccessMap> {
    let mut map = AccessMap::new();
    for name in [FOLDING, LOG] {
        read_into(&root.join(name), &mut map)?;
    }
    Ok(map)
}

fn read_into(path: &PathBuf, map: &mut AccessMap) -> Result<()> {
    let text = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    };
    for line in text.split(|&b| b == b'\n') {
        // A line cut by a crash or a concurrent append is skipped.
        let Ok(line) = std::str::from_utf8(line) else {
            continue;
        };
        let Some((time, id)) = line.split_once('\t') else {
            continue;
        };
        let Ok(time) = time.parse::<i64>() else {
            continue;
        };
        if id.is_empty() || id.contains('\t') {
            continue;
        }
        let access = map.entry(id.to_string()).or_default();
        access.count += 1;
        access.last = access.last.max(time);
    }
    Ok(())
}

/// Bytes waiting in the access log.
pub fn pending_bytes(root: &Path) -> u64 {
    [LOG, FOLDING]
        .iter()
        .filter_map(|n| fs::metadata(root.join(n)).ok())
        .map(|m| m.len())
        .sum()
}

/// Folds the access log into the L2 records' `access_count` and
/// `last_accessed`. Returns how many records were updated.
pub fn fold(store: &Store, lock: &WriterLock) -> Result<usize> {
    let root = store.root();
    let (log, folding) = (root.join(LOG), root.join(FOLDING));
    if !folding.exists() {
        match fs::rename(&log, &folding) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::io(&log, e)),
        }
    }
    let mut map = AccessMap::new();
    read_into(&folding, &mut map)?;
    let searcher = store.reader()?.searcher();
    let mut updated = Vec::new();
    for l2 in store.l2_records_by_id(&searcher, map.keys())? {
        let mut record = l2.record;
        let stored_last = record
            .last_accessed
            .as_deref()
            .and_then(parse_time)
            .unwrap_or(i64::MIN);
        let Some(a) = map.get(&record.id) else {
            continue;
        };
        if a.last <= stored_last {
            continue;
        }
        record.access_count += a.count;
        record.last_accessed = Some(format_time(a.last));
        updated.push((record, l2.vector));
    }
    drop(searcher);
    store.put_locked(lock, &updated)?;
    fs::remove_file(&folding).map_err(|e| Error::io(&folding, e))?;
    Ok(updated.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_count_and_keep_the_latest_time() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("config.toml"), "").unwrap();
        fs::write(
            dir.path().join(LOG),
            "100\ta\n200\ta\n150\tb\ngarbage\n300\t",
        )
        .unwrap();
        let map = read(dir.path()).unwrap();
        assert_eq!(map["a"].count, 2);
        assert_eq!(map["a"].last, 200);
        assert_eq!(map["b"].count, 1);
        assert_eq!(map.len(), 2);
        log(dir.path(), &["c"]);
        assert_eq!(read(dir.path()).unwrap()["c"].count, 1);
    }
}
