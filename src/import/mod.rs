//! Import: the memory users already keep in other tools, brought into the store.
//!
//! Five tools are read from the data they keep on disk: claude-mem (its
//! SQLite database), MemPalace (its palace's ChromaDB), basic-memory (a
//! folder of markdown notes), OpenClaw (the agent workspace's `MEMORY.md` and
//! `memory/*.md`) and mem0 (a JSON or JSONL export of `get_all`, since mem0
//! keeps no single file of its own). Each source module turns the tool's
//! items into record JSON of the kind that fits (see `docs/import.md` for the
//! mapping per tool); this module does the rest, the same for every tool:
//!
//! 1. [`read_source`] reads the whole source (regular files only, within the
//!    store's size limits; SQLite opened read-only and immutable) and checks
//!    its shape and version first: a damaged or unknown source is an
//!    [`ImportError`] naming the file and the line, field or table;
//! 2. [`plan`] parses every item through the ordinary record parser
//!    ([`crate::record::parse_record`]), so an import obeys the same rules as
//!    `add`; any invalid item fails the whole import before anything is
//!    written. The plan says what would come in: counts per kind and per
//!    project, and one example of each kind (redacted);
//! 3. [`apply`] writes the plan as one all-or-nothing [`Store::add`]: the
//!    store's redaction and limits apply, records are upserted by their
//!    deterministic ids `<tool>:<source id>`, so importing again adds nothing
//!    and updates only what changed at the source. A large import is
//!    searchable by its words at once and gets its vectors from the
//!    background upkeep, as `ingest` does.

mod basic_memory;
mod claude_mem;
pub mod markdown;
mod mem0;
mod mempalace;
mod openclaw;
mod sqlite;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::embed::Embedder;
use crate::error::{Error, InputErrors, Origin};
use crate::record::{parse_record, Kind, ParseOptions, Record};
use crate::store::config::Limits;
use crate::store::{AddReport, Store};

/// The tools whose memory can be imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    /// claude-mem: `~/.claude-mem/claude-mem.db` (SQLite).
    ClaudeMem,
    /// MemPalace: a palace folder holding ChromaDB's `chroma.sqlite3`.
    Mempalace,
    /// basic-memory: a project folder of markdown notes.
    BasicMemory,
    /// OpenClaw: the agent workspace's `MEMORY.md` and `memory/*.md`.
    Openclaw,
    /// mem0: a JSON or JSONL export of `get_all`.
    Mem0,
}

impl Tool {
    /// Every tool, in this order.
    pub const ALL: [Tool; 5] = [
        Tool::ClaudeMem,
        Tool::Mempalace,
        Tool::BasicMemory,
        Tool::Openclaw,
        Tool::Mem0,
    ];

    /// The tool's name, as `--from` takes it and as ids start.
    pub fn name(self) -> &'static str {
        match self {
            Tool::ClaudeMem => "claude-mem",
            Tool::Mempalace => "mempalace",
            Tool::BasicMemory => "basic-memory",
            Tool::Openclaw => "openclaw",
            Tool::Mem0 => "mem0",
        }
    }

    /// Where the tool keeps its data by default, under `home`: for
    /// basic-memory the home itself when it holds `.basic-memory/config.json`
    /// (every project the config lists is read), else `~/basic-memory`;
    /// MemPalace's palace as `~/.mempalace/config.json` names it, else
    /// `~/.mempalace/palace`. `None` for mem0, which keeps no single file (its
    /// memories live in a vector store of the user's choice).
    pub fn default_path(self, home: &Path) -> Option<PathBuf> {
        match self {
            Tool::ClaudeMem => Some(home.join(".claude-mem")),
            Tool::Mempalace => Some(
                configured(home, ".mempalace/config.json", &|c| {
                    c.get("palace_path")?.as_str().map(str::to_string)
                })
                .unwrap_or_else(|| home.join(".mempalace").join("palace")),
            ),
            // basic-memory's home: every project its config lists.
            Tool::BasicMemory if home.join(".basic-memory/config.json").is_file() => {
                Some(home.to_path_buf())
            }
            Tool::BasicMemory => Some(home.join("basic-memory")),
            Tool::Openclaw => Some(home.join(".openclaw").join("workspace")),
            Tool::Mem0 => None,
        }
    }

    /// What the tool's data looks like, for errors about a path that is not it.
    pub fn expected(self) -> &'static str {
        match self {
            Tool::ClaudeMem => "claude-mem's folder (~/.claude-mem) or its claude-mem.db",
            Tool::Mempalace => "a MemPalace palace folder holding chroma.sqlite3, or that file",
            Tool::BasicMemory => "a basic-memory project folder of markdown notes (~/basic-memory)",
            Tool::Openclaw => {
                "an OpenClaw workspace holding MEMORY.md or memory/*.md (~/.openclaw/workspace)"
            }
            Tool::Mem0 => "a JSON or JSONL file of mem0 memories (the output of get_all)",
        }
    }
}

/// A path a tool's JSON config file (`file`, under `home`) names, `~`
/// expanded; `None` when the file is missing, too large, not JSON or names none.
fn configured(home: &Path, file: &str, pick: &dyn Fn(&Value) -> Option<String>) -> Option<PathBuf> {
    let limit = crate::bounded::Limit {
        bytes: 1 << 20,
        setting: "a tool's config file",
    };
    let bytes = crate::bounded::read_whole(&home.join(file), limit, false).ok()?;
    let config: Value = serde_json::from_slice(&bytes).ok()?;
    let path = pick(&config)?;
    let path = path.trim();
    if path.is_empty() {
        return None;
    }
    Some(match path.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(path),
    })
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an import could not be done. Nothing was written in any case.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// mem0 was asked for without a path: it has no default file to read.
    #[error(
        "mem0 keeps no file of its own to read: export your memories with mem0's get_all \
         (in Python: json.dump(Memory().get_all(user_id=\"me\"), open(\"mem0.json\", \"w\"))) \
         and import that file: knowledge-db import --from mem0 mem0.json"
    )]
    NeedsPath,

    /// The path (given or the tool's default) holds nothing of the tool's.
    #[error("{tool}: nothing to import at {}: {why}; expected {}", path.display(), tool.expected())]
    NotFound {
        /// The tool.
        tool: Tool,
        /// The path looked at.
        path: PathBuf,
        /// What is missing.
        why: String,
    },

    /// The source is damaged or not the tool's format.
    #[error("{}{}: {message}; expected {expected}", path.display(), place.as_ref().map(|p| format!(" ({p})")).unwrap_or_default())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Where in it: `line 3`, `table observations, row 12, column facts`.
        place: Option<String>,
        /// What is wrong.
        message: String,
        /// What was expected there.
        expected: String,
    },

    /// The source was written by a version of the tool this build does not read.
    #[error("{}: {found}, which this knowledge-db does not read; it reads {supported} (import from a version of the tool it reads, or open an issue with the tool's version)", path.display())]
    UnknownVersion {
        /// The file.
        path: PathBuf,
        /// What version (or schema) was found.
        found: String,
        /// What this build reads.
        supported: String,
    },

    /// Reading a file failed, a limit was passed, the records were invalid,
    /// or the store refused the write.
    #[error(transparent)]
    Other(#[from] Error),
}

impl ImportError {
    /// A damaged-source error.
    pub(crate) fn corrupt(
        path: &Path,
        place: Option<String>,
        message: impl Into<String>,
        expected: impl Into<String>,
    ) -> ImportError {
        ImportError::Corrupt {
            path: path.to_path_buf(),
            place,
            message: message.into(),
            expected: expected.into(),
        }
    }
}

/// One item of the source, as the record JSON it becomes.
#[derive(Debug, Clone)]
pub struct Item {
    /// Where it was read: file, and line or table and row.
    pub origin: Origin,
    /// The record JSON (with `kind`, the id, time, project, files, tags and
    /// `metadata.origin`).
    pub value: Value,
    /// The project the source gives it (its own name for it), for counts.
    pub project: Option<String>,
}

/// Everything read from a source.
#[derive(Debug, Clone)]
pub struct Source {
    /// The tool.
    pub tool: Tool,
    /// The path read.
    pub path: PathBuf,
    /// The items, in the source's order.
    pub items: Vec<Item>,
    /// The source's own counts (`observations`, `entities`, `memories`…), as
    /// the tool would report them.
    pub counts: BTreeMap<String, usize>,
    /// Files read.
    pub files: usize,
    /// Bytes read (or the database's size).
    pub bytes: u64,
    /// What the import should say although it went on (a newer schema
    /// than this build was checked against, read by the columns it knows).
    pub warnings: Vec<String>,
}

/// How much may be read: the store's limits.
#[derive(Debug, Clone, Copy)]
pub struct ReadLimits {
    /// Largest JSON file read whole.
    pub file: crate::bounded::Limit,
    /// Largest markdown file read.
    pub markdown: crate::bounded::Limit,
    /// Longest JSONL line.
    pub line: usize,
}

impl ReadLimits {
    /// The limits of a store's config.
    pub fn of(limits: &Limits) -> ReadLimits {
        ReadLimits {
            file: limits.file_limit(),
            markdown: crate::bounded::Limit {
                bytes: limits.max_markdown_bytes,
                setting: "limits.max_markdown_bytes",
            },
            line: limits.max_record_bytes,
        }
    }
}

/// What to read of a source, and within which limits.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// The store's limits.
    pub limits: ReadLimits,
    /// Also bring in claude-mem's `user_prompts` as user messages. Off by
    /// default: a prompt is the question, not what was learned (its session's
    /// summary restates it), and as a record of its own it outranks the
    /// observation that answers it (see `docs/import.md`).
    pub claude_mem_prompts: bool,
}

/// Reads a tool's whole source at `path` (checked first: its shape and
/// version); `progress(done, total)` is told as files are read.
pub fn read_source(
    tool: Tool,
    path: &Path,
    options: &ReadOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Source, ImportError> {
    let limits = &options.limits;
    if !path.exists() {
        return Err(ImportError::NotFound {
            tool,
            path: path.to_path_buf(),
            why: "no such file or folder".into(),
        });
    }
    let mut source = Source {
        tool,
        path: path.to_path_buf(),
        items: Vec::new(),
        counts: BTreeMap::new(),
        files: 0,
        bytes: 0,
        warnings: Vec::new(),
    };
    match tool {
        Tool::ClaudeMem => claude_mem::read(path, options.claude_mem_prompts, &mut source)?,
        Tool::Mempalace => mempalace::read(path, &mut source)?,
        Tool::BasicMemory => basic_memory::read(path, limits, &mut source, progress)?,
        Tool::Openclaw => openclaw::read(path, limits, &mut source, progress)?,
        Tool::Mem0 => mem0::read(path, limits, &mut source)?,
    }
    Ok(source)
}

/// An example of what would come in: one per kind.
#[derive(Debug, Clone, Serialize)]
pub struct Example {
    /// The record's kind.
    pub kind: Kind,
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// The start of its text (redacted).
    pub text: String,
    /// Where it was read.
    pub from: String,
}

/// What an import would bring in, validated and ready to write.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The tool.
    pub tool: Tool,
    /// The path read.
    pub path: PathBuf,
    /// The source's own counts.
    pub source_counts: BTreeMap<String, usize>,
    /// Files read.
    pub files_read: usize,
    /// Bytes read.
    pub bytes_read: u64,
    /// What the source's reading had to say (see [`Source::warnings`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Records by kind.
    pub by_kind: BTreeMap<Kind, usize>,
    /// Records by the project the source gives them (`(none)` without one).
    pub by_project: BTreeMap<String, usize>,
    /// One example of each kind.
    pub examples: Vec<Example>,
    /// The records, in the source's order.
    #[serde(skip)]
    pub records: Vec<Record>,
}

/// How many characters of an example's text a plan shows.
const EXAMPLE_CHARS: usize = 200;

/// Parses every item of `source` as a record (the same parser as `add`);
/// fails with every invalid item named if any is invalid. `redactor`
/// redacts the examples shown.
pub fn plan(
    source: Source,
    options: &ParseOptions,
    redactor: &crate::privacy::Redactor,
) -> Result<Plan, ImportError> {
    let mut records = Vec::with_capacity(source.items.len());
    let mut errors = Vec::new();
    let mut by_kind = BTreeMap::new();
    let mut by_project = BTreeMap::new();
    let mut examples: Vec<Example> = Vec::new();
    for item in source.items {
        match parse_record(item.value, &item.origin, options) {
            Ok(record) => {
                *by_kind.entry(record.kind).or_insert(0) += 1;
                let project = item.project.unwrap_or_else(|| "(none)".to_string());
                *by_project.entry(project).or_insert(0) += 1;
                if !examples.iter().any(|e| e.kind == record.kind) {
                    let mut shown = record.clone();
                    crate::privacy::redact_record(redactor, &mut shown);
                    examples.push(Example {
                        kind: shown.kind,
                        id: shown.id.clone(),
                        title: shown.fields.title.clone(),
                        text: shown.fields.content.chars().take(EXAMPLE_CHARS).collect(),
                        from: item.origin.to_string(),
                    });
                }
                records.push(record);
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(Error::Input(InputErrors(errors)).into());
    }
    crate::record::context::link_previous_turns(&mut records);
    Ok(Plan {
        tool: source.tool,
        path: source.path,
        source_counts: source.counts,
        files_read: source.files,
        bytes_read: source.bytes,
        warnings: source.warnings,
        by_kind,
        by_project,
        examples,
        records,
    })
}

/// What an import did.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    /// What was read and would come in.
    #[serde(flatten)]
    pub plan: Plan,
    /// Records read from the source.
    pub records: usize,
    /// What the store did; `None` on a dry run.
    pub store: Option<AddReport>,
    /// Records left to the background upkeep's embedding because the import
    /// was larger than the inline limit (0: none).
    pub vectors_deferred: usize,
    /// Seconds the import took, reading included.
    pub seconds: f64,
    /// Whether nothing was written.
    pub dry_run: bool,
}

impl ImportReport {
    /// The report of a dry run: what would come in.
    pub fn dry_run(plan: Plan, started: Instant) -> ImportReport {
        ImportReport {
            records: plan.records.len(),
            plan,
            store: None,
            vectors_deferred: 0,
            seconds: started.elapsed().as_secs_f64(),
            dry_run: true,
        }
    }
}

/// Writes the plan's records as one commit. With `inline_embed_max`, an
/// import larger than it is stored without vectors (searchable by its words
/// at once); the background upkeep adds them, as for `ingest`.
pub fn apply(
    store: &Store,
    mut plan: Plan,
    embedder: Option<&mut dyn Embedder>,
    inline_embed_max: Option<usize>,
    lock_timeout: Duration,
    started: Instant,
) -> Result<ImportReport, ImportError> {
    let records = std::mem::take(&mut plan.records);
    let count = records.len();
    let mut vectors_deferred = 0;
    let embedder = match inline_embed_max {
        Some(max) if embedder.is_some() && count > max => {
            vectors_deferred = count;
            None
        }
        _ => embedder,
    };
    let report = store.add(records, embedder, lock_timeout)?;
    Ok(ImportReport {
        plan,
        records: count,
        store: Some(report),
        vectors_deferred,
        seconds: started.elapsed().as_secs_f64(),
        dry_run: false,
    })
}

/// The `metadata.origin` every imported record carries: the tool, the item's
/// id at the source, and where it was read (relative to the source's root,
/// so moving the source does not change the record).
pub(crate) fn origin_json(tool: Tool, source_id: &str, at: &str) -> Value {
    serde_json::json!({"tool": tool.name(), "id": source_id, "at": at})
}

/// The record id of a source item: `<tool>:<source id>`.
pub(crate) fn record_id(tool: Tool, source_id: &str) -> String {
    format!("{}:{}", tool.name(), source_id)
}

/// A path shown relative to `root` when it is under it.
pub(crate) fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Unix seconds (or milliseconds past the year 5138) as RFC 3339.
pub(crate) fn time_of_epoch(value: i64) -> String {
    let secs = if value > 100_000_000_000 {
        value / 1000
    } else {
        value
    };
    crate::record::parse::format_time(secs)
}

/// The text of a regular file within `limit`; a file that is not UTF-8 is
/// a damaged source, named with the byte where its text breaks.
pub(crate) fn read_text(
    path: &Path,
    limit: crate::bounded::Limit,
    source: &mut Source,
) -> Result<String, ImportError> {
    let bytes = crate::bounded::read_whole(path, limit, false)?;
    source.files += 1;
    source.bytes += bytes.len() as u64;
    String::from_utf8(bytes).map_err(|e| {
        ImportError::corrupt(
            path,
            Some(format!("byte {}", e.utf8_error().valid_up_to())),
            "not UTF-8 text",
            "a UTF-8 text file",
        )
    })
}

/// A heading as an id part: lowercase words joined by `-`.
pub(crate) fn slug(text: &str) -> String {
    let mut out = String::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push('-');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    if out.is_empty() {
        out.push_str("section");
    }
    out
}

#[cfg(test)]
mod tests;
