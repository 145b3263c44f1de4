//! Errors of the library.
//!
//! Every error says what went wrong and, where there is one, what to do next. Input
//! errors name the file, the line (for JSONL) and the field, so a user can go straight
//! to the bad spot.

use std::fmt;
use std::path::PathBuf;

/// Where an input record came from: a file (or `-` for stdin) and, for JSONL, a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub path: String,
    pub line: Option<usize>,
}

impl Origin {
    pub fn file(path: impl Into<String>) -> Self {
        Origin {
            path: path.into(),
            line: None,
        }
    }

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
    pub origin: Origin,
    pub field: Option<String>,
    pub message: String,
}

impl InputError {
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
pub struct InputErrors(pub Vec<InputError>);

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

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Input(InputErrors),

    #[error("no knowledge-db store at {}: create one with `knowledge-db init --store {}`", path.display(), path.display())]
    NoStore { path: PathBuf },

    #[error("a store already exists at {}", path.display())]
    StoreExists { path: PathBuf },

    #[error(
        "the store at {} has format version {found}, but this knowledge-db reads version {expected}; \
         use a knowledge-db release that matches the store, or export its records and add them to a new store",
        path.display()
    )]
    FormatVersion {
        path: PathBuf,
        found: u32,
        expected: u32,
    },

    #[error(
        "another knowledge-db process is writing to {} (lock held for more than {waited_secs:.1}s); \
         wait for it to finish or raise --lock-timeout",
        path.display()
    )]
    LockTimeout { path: PathBuf, waited_secs: f64 },

    #[error("{}: {message}", path.display())]
    Config { path: PathBuf, message: String },

    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("text index: {0}; `knowledge-db verify` checks the store and `knowledge-db repair` rebuilds a damaged index")]
    Index(#[from] tantivy::TantivyError),

    #[error("record `{id}` in the store is unreadable: {message}")]
    CorruptRecord { id: String, message: String },

    #[error("{0}")]
    Usage(String),

    #[error("archive {}: {message}", path.display())]
    Archive { path: PathBuf, message: String },

    #[error("the embedding model cannot be used: {0}")]
    Model(String),
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
