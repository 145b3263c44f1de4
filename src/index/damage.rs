//! Damaged stored bytes: a diagnosis naming the file, never a panic.
//!
//! tantivy trusts the bytes of the files it opens. A segment file cut to 7
//! bytes makes it panic inside its footer reader (`assertion failed: start <=
//! orig_range.end`), and a flipped byte that its checksum would catch may,
//! unchecked, index out of bounds deep inside a search. Checking every file's
//! checksum at every open would make each hook read the whole index, so the
//! store does two things instead:
//!
//! - The calls that read stored bytes *to check them* ([`checksum_problems`],
//!   used by `verify`, `repair` and the rescue) look at each file's size before
//!   tantivy reads its footer, and check one file at a time, so every damaged
//!   file is named with what is wrong with it.
//! - Every other call that opens or reads an index runs inside [`guarded`]
//!   (the store's reader, the edges of the CLI, the hooks and the servers): a
//!   panic there is caught, the store's files are checked then (on the failure
//!   path only), and the caller gets [`Error::Damaged`] naming the damaged
//!   files and what to run, or, when no file is damaged, [`Error::Internal`]
//!   (a bug) with the panic's message. The panic's own report is kept off
//!   the terminal while a guard is active (see [`quiet_panics`]).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use tantivy::index::SegmentComponent;
use tantivy::Index;

use crate::error::{Error, Result};

/// The fewest bytes a segment file can hold: tantivy's footer ends with its
/// length and a magic number (4 bytes each), read before anything else.
const FOOTER_TAIL_BYTES: u64 = 8;

/// One damaged file of an index: its path (relative to the store's folder
/// where it lies inside it) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    /// The file, e.g. `text/<segment>.idx`.
    pub path: PathBuf,
    /// What is wrong: `is missing`, `is 7 bytes (too short …)`, `fails its checksum`.
    pub what: String,
}

impl std::fmt::Display for FileProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.path.display(), self.what)
    }
}

/// The files of `index`'s current commit that are missing, too short to be
/// read, unreadable or fail their checksum; `label` is the index's folder as
/// messages name it (`text`, `archive/index`). Never panics: a file too short
/// for tantivy's footer reader is named without being handed to it, and each
/// file's check runs on its own behind a guard.
pub fn checksum_problems(index: &Index, dir: &Path, label: &str) -> Result<Vec<FileProblem>> {
    let metas = index.load_metas()?;
    let mut found = Vec::new();
    for segment in &metas.segments {
        let mut components = vec![
            SegmentComponent::Postings,
            SegmentComponent::Positions,
            SegmentComponent::FastFields,
            SegmentComponent::FieldNorms,
            SegmentComponent::Terms,
            SegmentComponent::Store,
        ];
        if segment.has_deletes() {
            components.push(SegmentComponent::Delete);
        }
        for component in components {
            let file = segment.relative_path(component);
            let named = Path::new(label).join(&file);
            let problem = |what: String| FileProblem {
                path: named.clone(),
                what,
            };
            let len = match std::fs::metadata(dir.join(&file)) {
                Ok(meta) => meta.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    found.push(problem("is missing".into()));
                    continue;
                }
                Err(e) => {
                    found.push(problem(format!("cannot be read: {e}")));
                    continue;
                }
            };
            if len < FOOTER_TAIL_BYTES {
                found.push(problem(format!(
                    "is {len} byte{} long, too short to be a segment file (cut short or emptied)",
                    if len == 1 { "" } else { "s" }
                )));
                continue;
            }
            let checked = quiet_panics(|| {
                catch_unwind(AssertUnwindSafe(|| {
                    index.directory().validate_checksum(&file)
                }))
            });
            match checked {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => found.push(problem("fails its checksum".into())),
                Ok(Err(e)) => found.push(problem(format!("cannot be read: {e}"))),
                Err(_) => found.push(problem(
                    "cannot be read: its footer is damaged (the index library panicked on it)"
                        .into(),
                )),
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// Runs `work`, which reads the store at `root`; a panic inside it (the
/// index library on damaged bytes) becomes [`Error::Damaged`] naming what
/// [`diagnose`] finds wrong with the store's files, or [`Error::Internal`]
/// when every file is sound.
pub fn guarded<T>(root: &Path, work: impl FnOnce() -> Result<T>) -> Result<T> {
    catch(root, work).and_then(|result| result)
}

/// Runs `work` under a guard: `Ok` with whatever it returned, or the typed
/// error its panic becomes (see [`guarded`]). For callers whose work returns
/// another error type (the CLI's and the hooks' `anyhow` edges).
pub fn catch<T>(root: &Path, work: impl FnOnce() -> T) -> Result<T> {
    match quiet_panics(|| catch_unwind(AssertUnwindSafe(work))) {
        Ok(value) => Ok(value),
        Err(payload) => Err(from_panic(root, payload)),
    }
}

/// The typed error a caught panic becomes: the store's damage when its
/// files show some, else a bug with the panic's message.
pub fn from_panic(root: &Path, payload: Box<dyn std::any::Any + Send>) -> Error {
    let message = take_background_panic().unwrap_or_else(|| panic_text(&*payload));
    let problems = diagnose(root);
    match problems.first() {
        Some(first) => Error::Damaged {
            path: root.join(&first.path),
            detail: problems
                .iter()
                .map(|p| format!("{} {}", root.join(&p.path).display(), p.what))
                .collect::<Vec<_>>()
                .join("; "),
        },
        None => Error::Internal {
            path: root.to_path_buf(),
            message,
        },
    }
}

/// The index library's words when `error` is an index error (what
/// [`explain`] makes specific): tantivy's own, or a fast field or document
/// store read through `Error::io("text index", …)` ("Not valid utf-8" from a
/// flipped `.fast` file).
pub fn index_cause(error: &Error) -> Option<String> {
    match error {
        Error::Index(cause) => Some(cause.to_string()),
        Error::Io { path, source } if path.as_path() == Path::new("text index") => {
            Some(source.to_string())
        }
        _ => None,
    }
}

/// An index error made specific: when the store's files show damage, the
/// error names the damaged files ([`Error::Damaged`], with the index
/// library's own words); any other error is returned as it was. For the
/// edges (the CLI, the hooks), on the failure path only.
pub fn explain(root: &Path, error: Error) -> Error {
    let Some(cause) = index_cause(&error) else {
        return error;
    };
    // tantivy's writer threads lose the I/O error that stopped them ("An
    // index writer was killed"): a full or read-only file system is told
    // from the file system itself.
    if let Some((dir, reason)) = unwritable_folder(root) {
        return Error::Unwritable {
            path: Some(dir),
            reason: format!("{reason} (the index library said: {cause})"),
        };
    }
    let problems = diagnose(root);
    match problems.first() {
        Some(first) => Error::Damaged {
            path: root.join(&first.path),
            detail: format!(
                "{} (the index library said: {cause})",
                problems
                    .iter()
                    .map(|p| format!("{} {}", root.join(&p.path).display(), p.what))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        },
        None => error,
    }
}

/// The first folder of the store that is on a read-only file system or one
/// with less than a megabyte free, and which of the two.
fn unwritable_folder(root: &Path) -> Option<(PathBuf, &'static str)> {
    use std::os::unix::ffi::OsStrExt;
    const NEARLY_FULL: u64 = 1024 * 1024;
    for dir in [
        root.join("text"),
        root.join("vectors"),
        root.join("archive").join("index"),
        root.join("archive"),
        root.to_path_buf(),
    ] {
        let Ok(c_path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
            continue;
        };
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c_path` is NUL-terminated and `stat` is a valid out-pointer.
        if unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) } != 0 {
            continue;
        }
        if stat.f_flag & libc::ST_RDONLY != 0 {
            return Some((dir, "read-only file system"));
        }
        // (the field types differ between platforms: u64 here, u32 on others)
        #[allow(clippy::useless_conversion)]
        let free = u64::from(stat.f_bavail).saturating_mul(u64::from(stat.f_frsize));
        if free < NEARLY_FULL {
            return Some((dir, "no space left on device"));
        }
    }
    None
}

/// What to say about a panic the index library caught in one of its own
/// threads (`report`, from [`take_background_panic`]): the store's damaged
/// files when there are, else that it was a bug.
pub fn background_failure(root: &Path, report: &str) -> String {
    let problems = diagnose(root);
    if problems.is_empty() {
        format!(
            "a thread of the index library failed ({report}); every file of the store's indexes \
             passes its checks, so this is a bug: please report it"
        )
    } else {
        format!(
            "a thread of the index library failed on damaged files ({report}): the store is \
             damaged: {}; `knowledge-db repair` rebuilds what can be rebuilt",
            problems
                .iter()
                .map(|p| format!("{} {}", root.join(&p.path).display(), p.what))
                .collect::<Vec<_>>()
                .join("; ")
        )
    }
}

/// What is wrong with the files of the store at `root` that a read trusts:
/// the text index (`meta.json` and every file of its current commit) and the
/// archive's index. Reads every file of both: for the failure path only.
pub fn diagnose(root: &Path) -> Vec<FileProblem> {
    let mut found = Vec::new();
    for (label, dir) in [
        ("text", root.join("text")),
        ("archive/index", root.join("archive").join("index")),
    ] {
        if label != "text" && !dir.join("meta.json").exists() {
            continue;
        }
        found.extend(index_problems(&dir, label));
    }
    if found.is_empty() {
        found.extend(undecodable_records(&root.join("text"), "text", 5));
    }
    found
}

/// Stored records that do not decode, in segments whose files all pass
/// their checksums: a merge copies a document store's compressed blocks as
/// they are, so a block damaged before the merge lives on in a new segment
/// with a sound checksum. Reads every stored record (for `repair` and the
/// failure path only); at most `limit` are named, with their id where the
/// segment's `id` column still has it.
pub fn undecodable_records(dir: &Path, label: &str, limit: usize) -> Vec<FileProblem> {
    let scan = || -> tantivy::Result<Vec<FileProblem>> {
        let index = Index::open_in_dir(dir)?;
        let reader = index
            .reader_builder()
            .reload_policy(tantivy::ReloadPolicy::Manual)
            .try_into()?;
        let searcher: tantivy::Searcher = tantivy::IndexReader::searcher(&reader);
        let mut found = Vec::new();
        for segment in searcher.segment_readers() {
            let store = segment.get_store_reader(1)?;
            let ids = segment.fast_fields().str("id").ok().flatten();
            for doc in segment.doc_ids_alive() {
                if store.get::<tantivy::TantivyDocument>(doc).is_ok() {
                    continue;
                }
                let mut id = String::new();
                let known = ids.as_ref().and_then(|column| {
                    let ord = column.term_ords(doc).next()?;
                    column.ord_to_str(ord, &mut id).ok()?;
                    Some(())
                });
                let file =
                    Path::new(label).join(format!("{}.store", segment.segment_id().uuid_string()));
                found.push(FileProblem {
                    path: file,
                    what: format!(
                        "holds a record that does not decode (doc {doc}{}): a damaged block, carried \
                         into this segment by a merge with its checksum made anew",
                        known.map_or(String::new(), |()| format!(", id {id}"))
                    ),
                });
                if found.len() >= limit {
                    return Ok(found);
                }
            }
        }
        Ok(found)
    };
    match quiet_panics(|| catch_unwind(AssertUnwindSafe(scan))) {
        Ok(Ok(found)) => found,
        _ => Vec::new(),
    }
}

/// What is wrong with the index in `dir`: it does not open, its `meta.json`
/// is missing or unreadable, or files of its current commit are damaged.
pub fn index_problems(dir: &Path, label: &str) -> Vec<FileProblem> {
    let meta = Path::new(label).join("meta.json");
    let problem = |path: PathBuf, what: String| vec![FileProblem { path, what }];
    if !dir.join("meta.json").exists() {
        return problem(meta, "is missing".into());
    }
    let opened = quiet_panics(|| catch_unwind(AssertUnwindSafe(|| Index::open_in_dir(dir))));
    let index = match opened {
        Ok(Ok(index)) => index,
        Ok(Err(e)) => return problem(meta, format!("cannot be read: {e}")),
        Err(_) => return problem(meta, "cannot be read (the index library panicked)".into()),
    };
    let managed_before = read_managed(dir);
    let mut found = match checksum_problems(&index, dir, label) {
        Ok(found) => found,
        Err(e) => return problem(meta, format!("cannot be read: {e}")),
    };
    found.extend(managed_problem(&index, dir, label, managed_before));
    found
}

/// `.managed.json`, tantivy's list of the files it manages (what its garbage
/// collection may delete), as a set; `Err` with what is wrong when it is
/// there but is no such list; `Ok(None)` when it is missing.
fn read_managed(dir: &Path) -> std::result::Result<Option<Vec<String>>, String> {
    match std::fs::read(dir.join(".managed.json")) {
        Ok(bytes) => serde_json::from_slice::<Vec<String>>(&bytes)
            .map(Some)
            .map_err(|e| format!("is not a list of file names ({e})")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot be read: {e}")),
    }
}

/// A damaged `.managed.json`: there, but not a list of file names (read
/// before and after the other checks: either read failing is damage).
///
/// A list that leaves out files of the current commit is not damage: each
/// process that writes the index keeps its own copy of the list and writes
/// it back whole, so with several writers over time (the hooks, an MCP
/// server, `add`) it often lacks another process's newer files. A file the
/// list lacks is only never garbage-collected (a few bytes of disk until
/// `repair` or the next rebuild), while reads are unaffected; calling it
/// damage made `verify` fail on sound stores (tests/concurrency.rs).
fn managed_problem(
    _index: &Index,
    dir: &Path,
    label: &str,
    before: std::result::Result<Option<Vec<String>>, String>,
) -> Option<FileProblem> {
    let path = Path::new(label).join(".managed.json");
    match (before, read_managed(dir)) {
        (Err(what), _) | (_, Err(what)) => Some(FileProblem { path, what }),
        _ => None,
    }
}

/// How many [`quiet_panics`] calls are active in the process.
static QUIET: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// The last panic's report caught while quiet (any thread: tantivy's
/// search and merge threads panic on damaged bytes too).
static LAST_PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Runs `work` with panic reports kept for the guard (which turns them into
/// a typed error) instead of printed: a user sees one message that names
/// the damaged file, not a panic. While any guard is active the reports of
/// every thread are kept (the index library's search and merge threads
/// meet damaged bytes too; a merge thread's panic is caught by the library
/// and the write goes on: [`take_background_panic`] has it). Outside a
/// guard, reports go to the previous hook as before.
pub fn quiet_panics<T>(work: impl FnOnce() -> T) -> T {
    use std::sync::atomic::Ordering;
    install_hook();
    QUIET.fetch_add(1, Ordering::SeqCst);
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            QUIET.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let _reset = Reset;
    work()
}

/// A panic caught while quiet that did not end the guarded work (a merge
/// thread's, which the index library caught): its report, once. The edges
/// say it after a command that otherwise succeeded.
pub fn take_background_panic() -> Option<String> {
    LAST_PANIC.lock().ok()?.take()
}

fn install_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                let location = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let thread = std::thread::current()
                    .name()
                    .map(|n| format!(" (thread {n})"))
                    .unwrap_or_default();
                let text = format!("{}{location}{thread}", panic_text(info.payload()));
                if let Ok(mut last) = LAST_PANIC.lock() {
                    *last = Some(text);
                }
            } else {
                previous(info);
            }
        }));
    });
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_panic_on_a_sound_store_is_an_internal_error_with_its_message() {
        let root = tempfile::tempdir().unwrap();
        // No index at all: diagnose names the missing meta.json.
        let error = catch(root.path(), || panic!("boom")).unwrap_err();
        assert!(matches!(error, Error::Damaged { .. }), "{error}");
        assert!(
            error.to_string().contains("/text/meta.json is missing"),
            "{error}"
        );
        // A sound (empty) index: a bug, with the panic's message.
        let text = root.path().join("text");
        std::fs::create_dir_all(&text).unwrap();
        Index::create_in_dir(&text, crate::index::IndexFields::schema()).unwrap();
        let error = catch(root.path(), || panic!("boom")).unwrap_err();
        assert!(matches!(error, Error::Internal { .. }), "{error}");
        assert!(error.to_string().contains("boom"), "{error}");
        assert_eq!(catch(root.path(), || 7).unwrap(), 7);
    }
}
