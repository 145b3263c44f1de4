//! Access tracking: which records were read, and when, without slowing reads.
//!
//! `search` and `get` append the ids they return to `<store>/access.log`, one
//! line `<unix milliseconds>\t<id>` each, in a single `write` on a file opened
//! for appending: no lock, no index write, a few microseconds. It is best effort
//! (a read-only store just is not tracked).
//!
//! **Counts are visible at once.** `get` (CLI and MCP) and `export` add the
//! reads still waiting in the log to a record's stored `access_count` and
//! `last_accessed` ([`Pending`]), so the next `get` shows a read however long
//! ago the log was folded.
//!
//! **The fold** moves the log into the records under the writer lock: it
//! renames the log aside (new reads go to a fresh log), updates the records in
//! one commit, and deletes the old log. Both the fold and [`Pending`] count only
//! reads after a record's stored `last_accessed` (kept to the millisecond), so a
//! fold interrupted after its commit and run again does not count twice. The
//! background upkeep (`crate::upkeep`) folds once the log holds
//! [`FOLD_SOON_BYTES`]; `maintain` folds too. The archive policy reads the log,
//! so a record read since the last fold is not archived as idle.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::lock::WriterLock;
use super::Store;
use crate::error::{Error, Result};
use crate::record::parse::{format_time_millis, parse_time_millis};
use crate::record::Record;

/// The log file inside a store.
pub const LOG: &str = "access.log";
/// The log being folded.
const FOLDING: &str = "access.log.folding";

/// Past this size the log asks the background upkeep to fold it (a read
/// never folds: it must not wait for the writer lock).
pub const FOLD_SOON_BYTES: u64 = 64 * 1024;

/// Reads of one record since the last fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    /// How many reads were logged.
    pub count: u64,
    /// Unix seconds of the latest read.
    pub last: i64,
}

/// Logged reads not yet folded, per record id.
pub type AccessMap = HashMap<String, Access>;

/// The current time in Unix milliseconds.
fn now_millis() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// A logged time in milliseconds: logs written before milliseconds were used
/// hold seconds (below 10^11 seconds is the year 5138; in milliseconds, 1973).
fn logged_millis(value: i64) -> i64 {
    if value < 100_000_000_000 {
        value.saturating_mul(1000)
    } else {
        value
    }
}

/// Appends one line per id to the access log. Errors are ignored: tracking must
/// never make a read fail. Returns the log's size after the append (0 when
/// nothing was written), so the caller can ask for a fold when it grew.
pub fn log(root: &Path, ids: &[&str]) -> u64 {
    if ids.is_empty() || !root.join("config.toml").exists() {
        return 0;
    }
    let now = now_millis();
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
    let Ok(mut file) = OpenOptions::new().create(true).append(true).open(&path) else {
        return 0;
    };
    if file.write_all(lines.as_bytes()).is_err() {
        return 0;
    }
    file.metadata().map_or(0, |m| m.len())
}

/// Every logged read not yet folded (the current log and one being folded),
/// per record: how many and the latest, in seconds (for the archive policy).
pub fn read(root: &Path) -> Result<AccessMap> {
    let pending = Pending::read(root)?;
    Ok(pending
        .reads
        .into_iter()
        .map(|(id, times)| {
            let last = times.iter().copied().max().unwrap_or(0).div_euclid(1000);
            let count = times.len() as u64;
            (id, Access { count, last })
        })
        .collect())
}

/// The reads of every record logged but not yet folded, with their times, so
/// that a record's stored counts can be brought up to date as the fold would.
#[derive(Debug, Default)]
pub struct Pending {
    /// Milliseconds of each read, per record id.
    reads: HashMap<String, Vec<i64>>,
}

impl Pending {
    /// Every read in the current log and in one being folded.
    pub fn read(root: &Path) -> Result<Pending> {
        let mut pending = Pending::default();
        for name in [FOLDING, LOG] {
            pending.read_file(&root.join(name))?;
        }
        Ok(pending)
    }

    /// The reads of one record only (what `get` needs: no map of every id).
    pub fn read_one(root: &Path, id: &str) -> Result<Pending> {
        let mut pending = Pending::default();
        let mut times = Vec::new();
        let suffix = format!("\t{id}");
        for name in [FOLDING, LOG] {
            let path = root.join(name);
            let text = match fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(&path, e)),
            };
            // Only lines ending in this id are parsed.
            for line in text.split(|&b| b == b'\n') {
                let Some(time) = line.strip_suffix(suffix.as_bytes()) else {
                    continue;
                };
                if let Some(millis) = std::str::from_utf8(time)
                    .ok()
                    .and_then(|t| t.parse::<i64>().ok())
                {
                    times.push(logged_millis(millis));
                }
            }
        }
        if !times.is_empty() {
            pending.reads.insert(id.to_string(), times);
        }
        Ok(pending)
    }

    fn read_file(&mut self, path: &Path) -> Result<()> {
        for_each_line(path, |millis, id| {
            self.reads.entry(id.to_string()).or_default().push(millis);
        })
    }

    /// Adds the reads after the record's stored `last_accessed` (those at or
    /// before it were folded already) to its counts. Returns whether any were.
    pub fn apply(&self, record: &mut Record) -> bool {
        let Some(times) = self.reads.get(&record.id) else {
            return false;
        };
        let stored_last = record
            .last_accessed
            .as_deref()
            .and_then(parse_time_millis)
            .unwrap_or(i64::MIN);
        let newer = times.iter().filter(|&&t| t > stored_last);
        let (count, last) = newer.fold((0u64, stored_last), |(n, l), &t| (n + 1, l.max(t)));
        if count == 0 {
            return false;
        }
        record.access_count += count;
        record.last_accessed = Some(format_time_millis(last));
        true
    }

    /// The logged times (Unix milliseconds) of `id`'s reads not yet folded,
    /// oldest first: the part of its access history the log still holds.
    pub fn reads_of(&self, id: &str) -> Vec<i64> {
        let mut times = self.reads.get(id).cloned().unwrap_or_default();
        times.sort_unstable();
        times
    }

    /// The ids with reads.
    pub fn ids(&self) -> impl Iterator<Item = &String> {
        self.reads.keys()
    }

    /// Whether no reads are pending.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty()
    }
}

/// Calls `each(milliseconds, id)` for every whole, well-formed line of a log.
fn for_each_line(path: &Path, mut each: impl FnMut(i64, &str)) -> Result<()> {
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
        each(logged_millis(time), id);
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
/// `last_accessed`. Returns how many records were updated. Reads of records
/// that are archived are dropped (the archive keeps no access counts).
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
    let mut pending = Pending::default();
    pending.read_file(&folding)?;
    let searcher = store.reader()?.searcher();
    let mut updated = Vec::new();
    for l2 in store.l2_records_by_id(&searcher, pending.ids())? {
        let mut record = l2.record;
        if pending.apply(&mut record) {
            updated.push((record, l2.vector));
        }
    }
    drop(searcher);
    store.put_locked(lock, &updated)?;
    fs::remove_file(&folding).map_err(|e| Error::io(&folding, e))?;
    Ok(updated.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, count: u64, last: Option<i64>) -> Record {
        Record {
            id: id.into(),
            kind: crate::Kind::Note,
            namespace: "default".into(),
            added_at: format_time_millis(50_000),
            tier: Default::default(),
            pruned: false,
            access_count: count,
            last_accessed: last.map(format_time_millis),
            context: None,
            context_from: None,
            source: serde_json::json!({}),
            fields: Default::default(),
        }
    }

    #[test]
    fn reads_of_lists_one_records_pending_reads_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(LOG),
            "1700000300000\ta\n1700000100000\ta\n1700000200000\tb\n",
        )
        .unwrap();
        let pending = Pending::read_one(dir.path(), "a").unwrap();
        assert_eq!(
            pending.reads_of("a"),
            [1_700_000_100_000, 1_700_000_300_000]
        );
        assert!(pending.reads_of("b").is_empty());
    }

    #[test]
    fn log_lines_count_and_keep_the_latest_time() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("config.toml"), "").unwrap();
        // Seconds (an older log) and milliseconds side by side.
        fs::write(
            dir.path().join(LOG),
            "1700000100\ta\n1700000200000\ta\n150\tb\ngarbage\n300\t",
        )
        .unwrap();
        let map = read(dir.path()).unwrap();
        assert_eq!(map["a"].count, 2);
        assert_eq!(map["a"].last, 1_700_000_200);
        assert_eq!(map["b"].count, 1);
        assert_eq!(map.len(), 2);
        log(dir.path(), &["c"]);
        assert_eq!(read(dir.path()).unwrap()["c"].count, 1);
    }

    #[test]
    fn pending_reads_count_only_after_the_stored_last_access() {
        let dir = tempfile::tempdir().unwrap();
        let t = 1_767_609_720_000; // 2026-01-05T10:42:00Z
        fs::write(dir.path().join(FOLDING), format!("{}\ta\n", t - 5000)).unwrap();
        fs::write(
            dir.path().join(LOG),
            format!("{t}\ta\n{}\ta\n{}\tb\n", t + 1, t + 50),
        )
        .unwrap();
        let pending = Pending::read(dir.path()).unwrap();
        let mut never_folded = record("a", 7, None);
        assert!(pending.apply(&mut never_folded));
        assert_eq!(never_folded.access_count, 10);
        assert_eq!(
            never_folded.last_accessed.as_deref(),
            Some("2026-01-05T10:42:00.001Z")
        );
        // Folded up to t: only the read a millisecond later is new, although
        // both fall in the same second.
        let mut folded = record("a", 8, Some(t));
        assert!(pending.apply(&mut folded));
        assert_eq!(folded.access_count, 9);
        let mut other = record("c", 7, None);
        assert!(!pending.apply(&mut other));
        assert_eq!((other.access_count, other.last_accessed), (7, None));
    }

    #[test]
    fn the_reads_of_one_record_are_those_the_full_read_finds() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(LOG),
            "1767609720000\ta\n1767609720001\tba\n1767609720002\ta\ngarbage\ta\n",
        )
        .unwrap();
        let one = Pending::read_one(dir.path(), "a").unwrap();
        let all = Pending::read(dir.path()).unwrap();
        assert_eq!(one.reads.get("a"), all.reads.get("a"));
        assert_eq!(one.reads["a"].len(), 2);
        assert!(Pending::read_one(dir.path(), "c").unwrap().is_empty());
    }

    #[test]
    fn times_round_trip_to_the_millisecond() {
        let text = format_time_millis(1_767_609_720_125);
        assert_eq!(text, "2026-01-05T10:42:00.125Z");
        assert_eq!(parse_time_millis(&text), Some(1_767_609_720_125));
        // A stored time without milliseconds (written before) still compares.
        assert_eq!(
            parse_time_millis("2026-01-05T10:42:00Z"),
            Some(1_767_609_720_000)
        );
    }
}
