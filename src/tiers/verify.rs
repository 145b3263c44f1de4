//! `verify` and `repair` of a whole store: L2's checks, then the archive's.
//!
//! [`verify`] runs L2's checks (`crate::store::verify`: the text index's
//! checksums, every record and embedding, the vector files and graphs) and the
//! archive's (`checks.rs`: every frame, every id in exactly one tier, the
//! L3 index) against one L2 searcher. [`repair`] deletes the derived files that
//! failed, finishes an interrupted tier operation and rebuilds the L3 index from
//! the archive files, builds the vector files again from the stored embeddings
//! (never by re-embedding), and verifies again; it never deletes a record. When
//! the text index itself is damaged (a segment's postings, terms or fast
//! fields, or `meta.json`), [`repair_root`] first re-indexes the records read
//! from the segments' document stores into a fresh index
//! (`crate::store::rescue`) and says which records, if any, could not be read
//! and which of those the archive still holds.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::archive::Archive;
use crate::check::Check;
use crate::error::Result;
use crate::store::lock::WriterLock;
use crate::store::rescue::{self, RescueReport};
use crate::store::verify::{count_files, l2_checks, remove_rebuildable};
use crate::store::Store;

/// The result of `verify`.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// The store's folder.
    pub store: PathBuf,
    /// Live L2 records checked.
    pub records: u64,
    /// Whether every check passed.
    pub ok: bool,
    /// Each check and what it found.
    pub checks: Vec<Check>,
    /// A tier operation (archive, restore, prune, supersede) that was
    /// interrupted or is running: one item, not a failure; what it left half
    /// done is not counted among the checks' problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
}

/// The file in a store where `verify` keeps its last answer.
pub const LAST_VERIFY_FILE: &str = "verify.json";

/// The last `verify` of a store, as saved in [`LAST_VERIFY_FILE`]: what the
/// viewer's health page shows without running the checks again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastVerify {
    /// When the checks finished (RFC 3339).
    pub at: String,
    /// Whether every check passed.
    pub ok: bool,
    /// Live L2 records checked.
    pub records: u64,
    /// Each check: its name, whether it passed, what it found.
    pub checks: Vec<SavedCheck>,
}

/// One check of a saved [`LastVerify`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedCheck {
    /// What was checked.
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// What was checked, or what is wrong.
    pub detail: String,
}

impl VerifyReport {
    /// Saves this report as the store's last verify (atomically: a report is
    /// rewritten by the next `verify`, so no fsync is waited for).
    pub fn save_as_last(&self, root: &Path) -> Result<()> {
        let last = LastVerify {
            at: crate::now_rfc3339(),
            ok: self.ok,
            records: self.records,
            checks: self
                .checks
                .iter()
                .map(|c| SavedCheck {
                    name: c.name.to_string(),
                    ok: c.ok,
                    detail: c.detail.clone(),
                })
                .collect(),
        };
        let path = root.join(LAST_VERIFY_FILE);
        let bytes = serde_json::to_vec_pretty(&last)
            .map_err(|e| crate::error::Error::io(&path, std::io::Error::other(e)))?;
        crate::files::replace(&path, &bytes, crate::files::Durability::Atomic)
    }
}

/// The store's last saved verify; `None` when `verify` never ran on it (or
/// ran before reports were saved).
pub fn last_verify(root: &Path) -> Result<Option<LastVerify>> {
    let path = root.join(LAST_VERIFY_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| crate::error::Error::Config {
                    path: path.clone(),
                    message: format!("not a saved verify report at line {}: {e}", e.line()),
                })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(crate::error::Error::io(&path, e)),
    }
}

/// What `repair` did.
#[derive(Debug, Clone, Serialize)]
pub struct RepairReport {
    /// Damaged derived files deleted, to be built again.
    pub removed: Vec<PathBuf>,
    /// Vector files present after the rebuild.
    pub vector_files: usize,
    /// HNSW graphs present after the rebuild.
    pub graphs: usize,
    /// Problems repair cannot fix, and records it could not read back.
    pub unrepairable: Vec<String>,
    /// The rebuild of the text index, when it was damaged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_rebuilt: Option<RescueReport>,
    /// A `config.toml` that could not be read, replaced by the defaults: what
    /// was wrong, and where the damaged file is kept. Its settings are lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_replaced: Option<String>,
    /// `verify` run again after the repair.
    pub after: VerifyReport,
}

/// Checks the store at `root`, also when its text index is too damaged to open.
pub fn verify_root(root: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<VerifyReport> {
    // Nothing is checked (or saved) in a folder that holds no store.
    if let Some(no_store) = crate::store::folder::no_store_error(root) {
        return Err(no_store);
    }
    let problems = rescue::problems(root);
    if problems.is_empty() {
        return verify(&Store::open(root)?, progress);
    }
    Ok(VerifyReport {
        store: root.to_path_buf(),
        records: 0,
        ok: false,
        checks: vec![Check {
            warning: false,
            name: "text index",
            ok: false,
            detail: format!(
                "{}; the other checks need a readable text index. `knowledge-db repair` re-indexes the records from the segments' document stores",
                problems.join("; ")
            ),
            rebuildable: Vec::new(),
        }],
        pending: None,
    })
}

/// Repairs the store at `root`: first the text index, if it is damaged (records
/// re-read from the document stores and indexed again), then everything derived.
pub fn repair_root(
    root: &Path,
    lock_timeout: Duration,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RepairReport> {
    if let Some(no_store) = crate::store::folder::no_store_error(root) {
        return Err(no_store);
    }
    let config_replaced = crate::store::config::replace_damaged(root)?.map(|(kept, why)| {
        format!(
            "config.toml could not be read ({why}): a config with the default settings was written; \
             the settings it held are lost{}",
            kept.map_or(String::new(), |k| format!(
                " (the damaged file is kept at {})",
                k.display()
            ))
        )
    });
    let text_rebuilt = {
        let lock = WriterLock::acquire(&root.join("LOCK"), lock_timeout)?;
        rescue::finish_interrupted_swap(root)?;
        // Damaged files, or records that no longer decode in files that
        // pass their checksums (a merge carried a damaged block on).
        let damaged = !rescue::problems(root).is_empty()
            || !crate::index::damage::undecodable_records(&root.join("text"), "text", 1).is_empty();
        if damaged {
            Some(rescue::rebuild(root, &lock, &archived_ids(root))?)
        } else {
            None
        }
    };
    let store = Store::open(root)?;
    let mut report = repair(&store, lock_timeout, progress)?;
    if let Some(rescued) = &text_rebuilt {
        report.unrepairable.extend(
            rescued
                .lost
                .iter()
                .map(|l| format!("record not recovered: {l}")),
        );
    }
    report.text_rebuilt = text_rebuilt;
    report.config_replaced = config_replaced;
    Ok(report)
}

/// Checks the whole store; `progress` gets (records done, records total).
pub fn verify(store: &Store, progress: &mut dyn FnMut(u64, u64)) -> Result<VerifyReport> {
    let searcher = store.reader()?.searcher();
    let mut checks = l2_checks(store, &searcher, progress)?;
    let (archive_checks, pending) = super::checks::checks(store, &searcher)?;
    checks.extend(archive_checks);
    checks.push(crate::store::state_files::check(store.root()));
    checks.push(file_modes(store.root()));
    Ok(VerifyReport {
        store: store.root().to_path_buf(),
        records: searcher.num_docs(),
        ok: checks.iter().all(|c| c.ok),
        checks,
        pending,
    })
}

/// Whether the store is readable by its owner only: a warning (the store is
/// sound; the next write tightens it) naming the loose paths.
pub fn file_modes(root: &Path) -> Check {
    let (listed, total) = crate::files::loose_paths(root);
    let detail = if total == 0 {
        "the store and every file in it are readable by their owner only".to_string()
    } else {
        format!(
            "{total} path{} readable or writable by other users (e.g. {}); the next write \
             to the store makes them owner-only, or run `chmod -R go-rwx {}`",
            if total == 1 { " is" } else { "s are" },
            listed
                .iter()
                .take(3)
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            root.display()
        )
    };
    Check {
        name: "file modes",
        ok: true,
        warning: total > 0,
        detail,
        rebuildable: Vec::new(),
    }
}

/// Rebuilds every damaged derived file and verifies again.
pub fn repair(
    store: &Store,
    lock_timeout: Duration,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RepairReport> {
    let before = verify(store, progress)?;
    let removed = remove_rebuildable(&before.checks);
    let archive_lost = {
        let lock = store.lock_writer(lock_timeout)?;
        super::checks::repair(store, &lock)?
    };
    store.index_vectors(lock_timeout)?;
    let after = verify(store, progress)?;
    let mut unrepairable: Vec<String> = after
        .checks
        .iter()
        .filter(|c| !c.ok && c.rebuildable.is_empty())
        .map(|c| format!("{}: {}", c.name, c.detail))
        .collect();
    unrepairable.extend(
        archive_lost
            .into_iter()
            .map(|l| format!("record not recovered: {l}")),
    );
    Ok(RepairReport {
        removed,
        vector_files: count_files(store, "vec"),
        graphs: count_files(store, "hnsw"),
        unrepairable,
        text_rebuilt: None,
        config_replaced: None,
        after,
    })
}

/// Ids stored in the archive's files (L3), read from the files themselves
/// (the L3 index may be as damaged as L2's).
fn archived_ids(root: &Path) -> Vec<String> {
    let archive = Archive::new(root);
    let Ok(files) = archive.files() else {
        return Vec::new();
    };
    files
        .iter()
        .filter_map(|file| archive.read_file(file).ok())
        .flat_map(|entries| entries.entries.into_iter().map(|(_, e)| e.record.id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_verify_is_saved_and_read_back() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = Store::init(&dir.path().join("s")).expect("init");
        assert_eq!(last_verify(store.root()).expect("none yet"), None);
        let report = verify(&store, &mut |_, _| {}).expect("verify");
        report.save_as_last(store.root()).expect("save");
        let last = last_verify(store.root()).expect("read").expect("saved");
        assert_eq!((last.ok, last.records), (report.ok, report.records));
        let names: Vec<&str> = last.checks.iter().map(|c| c.name.as_str()).collect();
        let expected: Vec<&str> = report.checks.iter().map(|c| c.name).collect();
        assert_eq!(names, expected);
        std::fs::write(store.root().join(LAST_VERIFY_FILE), b"{").expect("damage");
        let error = last_verify(store.root()).expect_err("damaged").to_string();
        assert!(error.contains(LAST_VERIFY_FILE), "{error}");
    }
}
