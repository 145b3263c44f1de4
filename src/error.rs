//! Errors of the library.
//!
//! Every error says what went wrong and, where there is one, what to do next. Input
//! errors name the file, the line (for JSONL) and the field, so a user can go straight
//! to the bad spot.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where an input record came from: a file (or `-` for stdin) and, for JSONL, a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file as the user named it, `-` for stdin, or a label such as
    /// `records[3]` for records given in a call.
    pub path: String,
    /// The 1-based line, for JSONL input.
    pub line: Option<usize>,
}

impl Origin {
    /// A whole file (JSON, or one record given in a call).
    pub fn file(path: impl Into<String>) -> Self {
        Origin {
            path: path.into(),
            line: None,
        }
    }

    /// One line of a JSONL file (1-based).
    pub fn line(path: impl Into<String>, line: usize) -> Self {
        Origin {
            path: path.into(),
            line: Some(line),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}", self.path, line),
            None => write!(f, "{}", self.path),
        }
    }
}

/// One bad input record: where it is, which field, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file and line of the record.
    pub origin: Origin,
    /// The field at fault, when one is (`None`: the record as a whole, e.g.
    /// not JSON).
    pub field: Option<String>,
    /// What is wrong, and what is expected instead.
    pub message: String,
}

impl InputError {
    /// An error of `field` (or of the whole record) at `origin`.
    pub fn new(origin: &Origin, field: Option<&str>, message: impl Into<String>) -> Self {
        InputError {
            origin: origin.clone(),
            field: field.map(str::to_string),
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}: field `{}`: {}", self.origin, field, self.message),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl std::error::Error for InputError {}

/// A list of input errors, shown a few at a time.
#[derive(Debug, Clone)]
pub struct InputErrors(
    /// Every bad record, in input order.
    pub Vec<InputError>,
);

/// How many input errors are printed before "… and N more".
const SHOWN_INPUT_ERRORS: usize = 10;

impl fmt::Display for InputErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.0.len();
        write!(
            f,
            "{} invalid input record{}; nothing was written",
            total,
            if total == 1 { "" } else { "s" }
        )?;
        for error in self.0.iter().take(SHOWN_INPUT_ERRORS) {
            write!(f, "\n  {error}")?;
        }
        if total > SHOWN_INPUT_ERRORS {
            write!(f, "\n  … and {} more", total - SHOWN_INPUT_ERRORS)?;
        }
        Ok(())
    }
}

impl std::error::Error for InputErrors {}

/// Everything that can go wrong in the library. Each message says what to do
/// next where there is something to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Input records failed validation; nothing was written.
    #[error("{0}")]
    Input(InputErrors),

    /// No store at the folder (no `config.toml`).
    /// Only for a folder that does not exist or is empty (see
    /// [`Error::NotAStore`] and [`Error::StoreIsFile`] for the others), so
    /// the suggested `init` harms nothing.
    #[error("no knowledge-db store at {}: create one with `knowledge-db init --store {}`", path.display(), path.display())]
    NoStore {
        /// Where a store was looked for.
        path: PathBuf,
    },

    /// A folder that holds files but no store: knowledge-db neither opens nor
    /// takes it over (`init` refuses it, and no command changes it).
    #[error(
        "{} holds {entries} entries but no knowledge-db store; knowledge-db keeps its store in a folder of its own \
         and leaves this one as it is: point --store (or $KNOWLEDGE_DB_HOME) at a store, \
         or at a new or empty folder to create one there",
        path.display()
    )]
    NotAStore {
        /// The folder.
        path: PathBuf,
        /// How many entries it holds.
        entries: usize,
    },

    /// A store's path that names a file (or anything else that is not a folder).
    #[error(
        "{} is a file, not a store folder; point --store (or $KNOWLEDGE_DB_HOME) at a store's folder, \
         or at a new or empty folder to create one there",
        path.display()
    )]
    StoreIsFile {
        /// The path.
        path: PathBuf,
    },

    /// `init` on a folder that already holds a store.
    #[error("a store already exists at {}", path.display())]
    StoreExists {
        /// The store's folder.
        path: PathBuf,
    },

    /// The store was written by a knowledge-db with another on-disk format.
    #[error(
        "the store at {} has format version {found}, but this knowledge-db reads version {expected}; \
         use a knowledge-db release that matches the store, or export its records and add them to a new store",
        path.display()
    )]
    FormatVersion {
        /// The store's folder.
        path: PathBuf,
        /// The version its `config.toml` names.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },

    /// Another process held the writer lock longer than the timeout.
    #[error(
        "another knowledge-db process is writing to {} (the lock stayed held for the {timeout_secs} s \
         this command waits); wait for it to finish or raise --lock-timeout \
         (or `limits.lock_timeout_secs` in the store's config.toml)",
        path.display()
    )]
    LockTimeout {
        /// The store's folder.
        path: PathBuf,
        /// The timeout asked for (`--lock-timeout`, else the config's), in
        /// seconds, as given: `0.05` is shown as `0.05`.
        timeout_secs: f64,
    },

    /// A path that had to be a regular file (a transcript, a file of records)
    /// is a FIFO, a device, a socket or a folder: it is refused before it is
    /// read, since reading it could block forever or never end.
    #[error("{}: {kind}, not a regular file; knowledge-db reads transcripts and records only from regular files", path.display())]
    NotRegularFile {
        /// The path as given.
        path: PathBuf,
        /// What it is instead (`a FIFO (named pipe)`, `a character device`, …).
        kind: &'static str,
    },

    /// Input over one of the store's size limits; nothing of it was used.
    #[error("{}: {what}, over the limit of {limit} (raise `{setting}` in the store's config.toml)", path.display())]
    OverLimit {
        /// The file, or a label such as `MCP request`.
        path: PathBuf,
        /// What is too large, and how large it is.
        what: String,
        /// The limit, readable (`256.0 MiB`).
        limit: String,
        /// The setting that raises it (`limits.max_file_bytes`).
        setting: &'static str,
    },

    /// A server scoped to one namespace (`mcp --namespace`) was asked to
    /// read or write outside it.
    #[error("{0}")]
    OutsideNamespace(String),

    /// A configuration file that does not parse or holds an invalid value.
    #[error("{}: {message}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },

    /// Reading or writing a file failed (other than a refused permission).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// The text index (tantivy) failed.
    #[error("text index: {0}; `knowledge-db verify` checks the store and `knowledge-db repair` rebuilds a damaged index")]
    Index(tantivy::TantivyError),

    /// The operating system refused to read or write a file of the store: the
    /// store is not damaged, its owner or permissions are wrong. `path` is
    /// `None` when the refusal came without one (a tantivy lock file); the CLI
    /// then names the folder it found unwritable ([`Error::name_denied_path`]).
    #[error(
        "permission denied: {}; check the owner and permissions{} (knowledge-db writes in the store \
         folder, even to search: the index takes a lock file there)",
        path.as_ref().map_or("a lock file of the store's index".into(), |p| p.display().to_string()),
        path.as_deref().map_or(String::new(), |p| format!(": ls -ld {}", existing(p).display()))
    )]
    PermissionDenied {
        /// The refused file or folder, when known.
        path: Option<PathBuf>,
    },

    /// The file system refused a write: it is mounted read-only, or it is
    /// full. The store is not damaged; what was acknowledged before is
    /// there. `path` is `None` when the refusal came without one (a tantivy
    /// lock or segment file); the CLI then names the store's folder.
    #[error(
        "{}: {reason}; nothing was written (the store is not damaged: every write that \
         returned success before is kept). {advice}",
        path.as_ref().map_or("a file of the store's index".into(), |p| p.display().to_string()),
        advice = unwritable_advice(reason)
    )]
    Unwritable {
        /// The file or folder, when known.
        path: Option<PathBuf>,
        /// `read-only file system`, `no space left on device`, `disk quota exceeded`.
        reason: String,
    },

    /// A stored record does not decode.
    #[error("record `{id}` in the store is unreadable: {message}")]
    CorruptRecord {
        /// The record's id.
        id: String,
        /// Why it does not decode.
        message: String,
    },

    /// A request that cannot be served as given (a bad option or argument).
    #[error("{0}")]
    Usage(String),

    /// An archive (L3) file or the archive's index is damaged or unusable.
    #[error("archive {}: {message}", path.display())]
    Archive {
        /// The archive file or folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// The embedding model is needed but cannot be loaded or run.
    #[error("the embedding model cannot be used: {0}")]
    Model(String),

    /// Stored bytes are damaged: a file of an index is missing, cut short or
    /// fails its checksum (found after the index library failed on it, see
    /// `crate::index::damage`). `path` is the first damaged file.
    #[error(
        "the store is damaged: {detail}; `knowledge-db verify` lists every damaged file and \
         `knowledge-db repair` rebuilds what can be rebuilt from what the store still holds \
         (it says what, if anything, was lost)"
    )]
    Damaged {
        /// The first damaged file.
        path: PathBuf,
        /// Every damaged file, with what is wrong with it.
        detail: String,
    },

    /// A bug: the program failed (panicked) on a store whose files are sound.
    #[error(
        "internal error on the store at {}: {message} (a bug, not damage: every file of its \
         indexes passed its checks; please report it with this message)",
        path.display()
    )]
    Internal {
        /// The store's folder.
        path: PathBuf,
        /// The panic's message and where it happened.
        message: String,
    },

    /// A hook could not store a session's messages; `trace` says where the
    /// marker for the next hook that can write is (see
    /// `crate::integrations::hooks::missed`), or what to run.
    #[error("could not store session {session}'s new messages: {cause}; {trace}")]
    CaptureMissed {
        /// The session.
        session: String,
        /// Why the capture failed.
        cause: Box<Error>,
        /// Where the trace is, or what to run.
        trace: String,
    },

    /// Sync with a team's Postgres failed (see `crate::sync`): the server
    /// could not be reached, refused, or holds what this build cannot read.
    #[error("sync: {0}")]
    Sync(String),
}

impl Error {
    /// An I/O error on `path`; a refused permission becomes [`Error::PermissionDenied`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if source.kind() == std::io::ErrorKind::PermissionDenied {
            return Error::PermissionDenied { path: Some(path) };
        }
        if let Some(reason) = unwritable_reason(&source) {
            return Error::Unwritable {
                path: Some(path),
                reason: reason.into(),
            };
        }
        Error::Io { path, source }
    }

    /// Names the path of a [`Error::PermissionDenied`] that came without one:
    /// the first folder of the store at `root` this process cannot write to
    /// (the store itself when none can be told apart, e.g. for root on a
    /// read-only file system).
    pub fn name_denied_path(&mut self, root: &Path) {
        if let Error::PermissionDenied { path: path @ None }
        | Error::Unwritable {
            path: path @ None, ..
        } = self
        {
            let candidates = [
                root.to_path_buf(),
                root.join("text"),
                root.join("archive"),
                root.join("archive").join("index"),
                root.join("vectors"),
            ];
            let unwritable = candidates
                .iter()
                .find(|dir| dir.is_dir() && !writable(dir))
                .cloned();
            // Else a file of the indexes (or the lock) this process may not
            // read and write: a refusal of a file names the file.
            let refused_file = || {
                candidates.iter().find_map(|dir| {
                    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
                        .ok()?
                        .flatten()
                        .map(|e| e.path())
                        .filter(|p| p.is_file())
                        .collect();
                    entries.sort();
                    entries
                        .into_iter()
                        .find(|f| !accessible(f, libc::R_OK | libc::W_OK))
                })
            };
            *path = Some(
                unwritable
                    .or_else(refused_file)
                    .unwrap_or_else(|| root.to_path_buf()),
            );
        }
    }
}

/// Whether this process may access `path` in `mode` (`libc::R_OK` …).
fn accessible(path: &Path, mode: libc::c_int) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c_path` is a valid NUL-terminated string for the call's duration.
    unsafe { libc::access(c_path.as_ptr(), mode) == 0 }
}

/// `path`, or the nearest folder above it that exists (what to look at when a
/// folder could not be created).
fn existing(path: &Path) -> &Path {
    path.ancestors().find(|p| p.exists()).unwrap_or(path)
}

/// Whether this process may create files in `dir`.
fn writable(dir: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let Ok(c_path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: `c_path` is a valid NUL-terminated string for the call's duration.
        unsafe { libc::access(c_path.as_ptr(), libc::W_OK) == 0 }
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(dir).is_ok_and(|m| !m.permissions().readonly())
    }
}

impl From<tantivy::TantivyError> for Error {
    fn from(error: tantivy::TantivyError) -> Self {
        if let Some((path, reason)) = unwritable_in(&error) {
            return Error::Unwritable {
                path,
                reason: reason.into(),
            };
        }
        match permission_denied_in(&error) {
            Some(path) => Error::PermissionDenied { path },
            None => Error::Index(error),
        }
    }
}

/// A refused write in words, when `error` is one (a read-only or full file
/// system): what [`Error::Unwritable`] says.
fn unwritable_reason(error: &std::io::Error) -> Option<&'static str> {
    match error.raw_os_error() {
        Some(libc::EROFS) => Some("read-only file system"),
        Some(libc::ENOSPC) => Some("no space left on device"),
        Some(libc::EDQUOT) => Some("disk quota exceeded"),
        _ => None,
    }
}

fn unwritable_advice(reason: &str) -> &'static str {
    if reason.starts_with("read-only") {
        "Mount it read-write: knowledge-db writes in the store folder, even to search (the \
         index takes a lock file there)"
    } else {
        "Free some space and run the command again (`knowledge-db verify` checks the store)"
    }
}

/// Whether a tantivy error is a refused write of a read-only or full file
/// system; the absolute path it names, if any, and the reason.
fn unwritable_in(error: &tantivy::TantivyError) -> Option<(Option<PathBuf>, &'static str)> {
    use tantivy::directory::error::{LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
    use tantivy::TantivyError as T;
    let named = |p: &Path| p.is_absolute().then(|| p.to_path_buf());
    match error {
        T::LockFailure(LockError::IoError(e), _) | T::IoError(e) => {
            Some((None, unwritable_reason(e)?))
        }
        T::OpenWriteError(OpenWriteError::IoError { io_error, filepath })
        | T::OpenReadError(OpenReadError::IoError { io_error, filepath }) => {
            Some((named(filepath), unwritable_reason(io_error)?))
        }
        T::OpenDirectoryError(OpenDirectoryError::IoError {
            io_error,
            directory_path,
        }) => Some((named(directory_path), unwritable_reason(io_error)?)),
        _ => None,
    }
}

/// Whether a tantivy error is the operating system refusing access, and the
/// absolute path it names if it names one.
fn permission_denied_in(error: &tantivy::TantivyError) -> Option<Option<PathBuf>> {
    use tantivy::directory::error::{LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
    use tantivy::TantivyError as T;
    let denied = |e: &std::io::Error| e.kind() == std::io::ErrorKind::PermissionDenied;
    // Tantivy names files relative to its directory: only an absolute path helps.
    let named = |p: &Path| Some(p.is_absolute().then(|| p.to_path_buf()));
    match error {
        T::LockFailure(LockError::IoError(e), _) | T::IoError(e) if denied(e) => Some(None),
        T::OpenWriteError(OpenWriteError::IoError { io_error, filepath })
        | T::OpenReadError(OpenReadError::IoError { io_error, filepath })
            if denied(io_error) =>
        {
            named(filepath)
        }
        T::OpenDirectoryError(OpenDirectoryError::IoError {
            io_error,
            directory_path,
        }) if denied(io_error) => named(directory_path),
        _ => None,
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;
    use std::sync::Arc;
    use tantivy::directory::error::{LockError, OpenWriteError};

    fn denied() -> std::io::Error {
        std::io::Error::from(ErrorKind::PermissionDenied)
    }

    #[test]
    fn a_refused_permission_is_named_once_with_the_fix() {
        // What a reader of a read-only store gets from tantivy: no path, debug output.
        let lock = tantivy::TantivyError::LockFailure(LockError::IoError(Arc::new(denied())), None);
        let mut error = Error::from(lock);
        assert!(
            matches!(error, Error::PermissionDenied { path: None }),
            "{error:?}"
        );
        let store = tempfile::tempdir().unwrap();
        error.name_denied_path(store.path());
        let text = error.to_string();
        assert!(
            text.starts_with(&format!("permission denied: {};", store.path().display())),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "check the owner and permissions: ls -ld {}",
                store.path().display()
            )),
            "{text}"
        );
        assert!(
            !text.contains("IoError") && !text.contains("repair"),
            "{text}"
        );
        // A path tantivy gives is kept; an I/O error on a path says the same.
        let write = tantivy::TantivyError::OpenWriteError(OpenWriteError::IoError {
            io_error: Arc::new(denied()),
            filepath: PathBuf::from("/store/text/meta.json"),
        });
        assert!(Error::from(write)
            .to_string()
            .starts_with("permission denied: /store/text/meta.json;"));
        let io = Error::io("/store/LOCK", denied());
        assert!(io
            .to_string()
            .starts_with("permission denied: /store/LOCK;"));
        // Other errors stay what they were.
        let missing = Error::io("/store/x", std::io::Error::from(ErrorKind::NotFound));
        assert!(matches!(missing, Error::Io { .. }));
        let busy = Error::from(tantivy::TantivyError::LockFailure(
            LockError::LockBusy,
            None,
        ));
        assert!(matches!(busy, Error::Index(_)));
    }
}
