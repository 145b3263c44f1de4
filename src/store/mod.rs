//! The store: one folder that holds everything knowledge-db remembers.
//!
//! ```text
//! <store>/
//!   config.toml   format version, limits, ranking weights (written by `init`)
//!   text/         tantivy index: BM25 fields + the stored records (source of truth for L2)
//!   LOCK          one writer at a time; readers never take it
//! ```
//!
//! Durability: a write returns only after a tantivy commit, which fsyncs the new
//! segment files and then atomically replaces `meta.json`. A process killed at any
//! point leaves either the old commit or the new one, never a mix, and a write that
//! returned success survives `kill -9` and power loss.
//!
//! Two kinds of write are rooms of their own: `add.rs` (adding or replacing
//! records: sizes, scope, tombstones, what changed, access history) and
//! `embedding.rs` (the vectors of records: reused by text hash, computed,
//! filled in later, and the vector files kept in step with the text index).
//! This file holds the store itself, its reports, opening, commits, `delete`
//! and `get`.

pub mod access;
pub mod browse;
pub use crate::index::lookup::IdLookup;
pub(crate) use crate::index::lookup::{clean_writer, first_live_doc};
mod add;
pub mod config;
mod embedding;
pub mod folder;
pub mod guard;
mod limits;
pub mod lock;
pub mod prefix;
pub mod rescue;
mod rules;
pub mod scope;
pub mod state_files;
pub mod tier;
pub mod tombstones;
pub mod verify;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

pub use config::{Config, DEFAULT_MAX_FILE_BYTES, FORMAT_VERSION};
pub use guard::TierGuard;
use lock::WriterLock;

use crate::error::{Error, Result};
use crate::index::{register_tokenizers, IndexFields};
use crate::privacy::{Findings, Redactor};
use crate::record::{Kind, Record};

/// Memory tantivy may use to buffer new documents before flushing a segment
/// (shared by the indexing threads; allocated as documents arrive, so a small
/// add uses little of it). Indexing takes about 1 KB per agent record, so a
/// bulk add of up to about 1.4M records is written as one segment per
/// indexing thread, with no flushes and no merges while adding. With 128 MB,
/// 1M records became nine segments (a merge of eight flushes rewrote half of
/// them during the add), and every search then walked nine vector graphs.
const WRITER_HEAP_BYTES: usize = 1536 * 1024 * 1024;

/// An opened store.
pub struct Store {
    root: PathBuf,
    config: Config,
    index: Index,
    fields: IndexFields,
    /// The tiers layer's steps inside every write (see [`guard`]).
    guard: &'static dyn TierGuard,
    /// The namespace this store's writes are confined to (see [`scope`]).
    scope: Option<String>,
    /// What every record goes through before it is written (see
    /// [`crate::privacy`]): the built-in rules unless `[privacy]` adds some.
    redactor: StoreRedactor,
}

/// The store's redactor: the process-wide built-in one for the default
/// settings (its regexes compile once per process), else the store's own.
enum StoreRedactor {
    Builtin,
    Own(std::sync::Arc<Redactor>),
}

impl StoreRedactor {
    fn of(config: &Config, root: &Path) -> Result<StoreRedactor> {
        if config.privacy == crate::privacy::PrivacySettings::default() {
            return Ok(StoreRedactor::Builtin);
        }
        let redactor = config::redactor_of(&config.privacy, root)?;
        Ok(StoreRedactor::Own(std::sync::Arc::new(redactor)))
    }
}

/// What an `add` did with each record.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct AddReport {
    /// Records that were not stored before.
    pub added: usize,
    /// Records that replaced a stored version with a different one.
    pub updated: usize,
    /// Records identical to their stored version, left as they were.
    pub unchanged: usize,
    /// Texts embedded by the model in this call.
    pub embedded: usize,
    /// Vectors taken from records already stored with the same text.
    pub vectors_reused: usize,
    /// Records written without a vector (no model, or `--embed later`).
    pub without_vector: usize,
    /// Ids given more than once in one batch; the last version was kept.
    pub duplicate_ids: Vec<String>,
    /// Records left out because they were forgotten (`knowledge-db forget`
    /// left a tombstone for their id or session).
    #[serde(skip_serializing_if = "is_zero")]
    pub forgotten: usize,
    /// Secrets replaced by placeholders and `<private>` spans dropped before
    /// anything was written, by kind.
    #[serde(skip_serializing_if = "Findings::is_empty")]
    pub redacted: Findings,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl AddReport {
    /// Adds another write's counts to these (one `add` that wrote in steps).
    pub fn absorb(&mut self, other: &AddReport) {
        self.added += other.added;
        self.updated += other.updated;
        self.unchanged += other.unchanged;
        self.embedded += other.embedded;
        self.vectors_reused += other.vectors_reused;
        self.without_vector += other.without_vector;
        self.duplicate_ids
            .extend(other.duplicate_ids.iter().cloned());
        self.forgotten += other.forgotten;
        self.redacted.absorb(&other.redacted);
    }
}

/// Where the time of one `add` went, phase by phase (`bench run` reports it).
/// Tokenizing and inverting run on tantivy's indexing threads while documents
/// are handed to them, so they fall in `index_seconds` and, for the last
/// documents, in `commit_seconds`.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct AddPhases {
    /// Size checks, duplicate ids, and finding which records changed.
    pub prepare_seconds: f64,
    /// Embedding the texts (or reusing stored vectors of the same text).
    pub embed_seconds: f64,
    /// Building the documents and handing them to the indexing threads.
    pub index_seconds: f64,
    /// tantivy's commit: the indexing threads finish, the segments are
    /// written and synced, and the new generation is published.
    pub commit_seconds: f64,
    /// The new segments' vector files and HNSW graphs.
    pub vectors_seconds: f64,
}

/// What a `delete` did.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct DeleteReport {
    /// Ids that were deleted.
    pub deleted: Vec<String>,
    /// Ids that were not in the store.
    pub missing: Vec<String>,
}

/// L2's counts and sizes (`crate::tiers::stats` adds the archive's).
#[derive(Debug, Clone)]
pub struct L2Stats {
    /// The store's folder.
    pub store: PathBuf,
    /// The on-disk format version from its config.
    pub format_version: u32,
    /// Live L2 records.
    pub records: u64,
    /// Their counts by kind, tier and namespace, and their time span.
    pub counts: crate::index::ColumnCounts,
    /// Bytes of the text index (`text/`).
    pub text_index_bytes: u64,
    /// Segments of the text index.
    pub segments: usize,
    /// How many records have vectors, and how many wait for one.
    pub vectors: crate::vectors::Coverage,
    /// Bytes of the vector files and graphs (`vectors/`).
    pub vector_files_bytes: u64,
    /// Segments with an HNSW graph (the others are scanned exactly).
    pub vector_graphs: usize,
    /// The embedding-text rules the vectors were made under
    /// (`crate::embed::text::RECIPE` when current).
    pub vector_text_rules: u32,
}

/// The default store folder: `$KNOWLEDGE_DB_HOME`, else the platform data folder.
pub fn default_root() -> PathBuf {
    if let Some(home) = std::env::var_os("KNOWLEDGE_DB_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home);
    }
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("knowledge-db")
}

impl Store {
    /// Creates a new, empty store at `root` (the folder may exist if empty;
    /// anything else there is refused, see [`folder`]),
    /// whose writers run `guard`'s steps. Callers use `Store::init` (defined
    /// in `crate::tiers`, which supplies the guard).
    pub(crate) fn init_guarded(root: &Path, guard: &'static dyn TierGuard) -> Result<Store> {
        // A folder that holds anything is left as it is (see `folder`); an
        // empty one given to `init` becomes the store's and owner-only.
        let create = folder::check_init(root)?;
        if create {
            crate::files::create_private_dir(root)?;
        } else {
            crate::files::make_private_folder(root)?;
        }
        let text = root.join("text");
        crate::files::create_private_dir(&text)?;
        let index = Index::create_in_dir(&text, IndexFields::schema())?;
        rules::write(root, crate::embed::text::RECIPE)?;
        // config.toml is written last: its presence marks a complete store.
        Config::new(crate::now_rfc3339()).save(&root.join("config.toml"))?;
        drop(index);
        Store::open_guarded(root, guard)
    }

    /// Opens an existing store, checking its format version; its writers run
    /// `guard`'s steps. Callers use `Store::open` (defined in `crate::tiers`).
    pub(crate) fn open_guarded(root: &Path, guard: &'static dyn TierGuard) -> Result<Store> {
        let config_path = root.join("config.toml");
        if !config_path.exists() {
            return Err(folder::no_store_error(root).unwrap_or(Error::NoStore {
                path: root.to_path_buf(),
            }));
        }
        // A `config.toml` of something else (a site's, a tool's) does not
        // make a store.
        let config =
            Config::load(&config_path).map_err(|e| folder::no_store_error(root).unwrap_or(e))?;
        if config.format_version != FORMAT_VERSION {
            return Err(Error::FormatVersion {
                path: root.to_path_buf(),
                found: config.format_version,
                expected: FORMAT_VERSION,
            });
        }
        let text = root.join("text");
        let mut index = crate::index::damage::guarded(root, || Ok(Index::open_in_dir(&text)?))?;
        crate::index::search_in_parallel(&mut index)?;
        register_tokenizers(&index);
        let fields = IndexFields::from_schema(&index.schema())?;
        let redactor = StoreRedactor::of(&config, root)?;
        Ok(Store {
            root: root.to_path_buf(),
            config,
            index,
            fields,
            guard,
            scope: None,
            redactor,
        })
    }

    /// The store's folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The store's config, as read when it was opened.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The redactor every write of this store runs (`[privacy]` of its
    /// config): callers that write text elsewhere (hook state, logs, a
    /// remote) redact with it too.
    pub fn redactor(&self) -> &Redactor {
        match &self.redactor {
            StoreRedactor::Builtin => Redactor::builtin(),
            StoreRedactor::Own(own) => own,
        }
    }

    /// The text index's fields.
    pub fn fields(&self) -> &IndexFields {
        &self.fields
    }

    /// The text index (L2).
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// A reader on the latest commit. Readers never block writers or each other.
    /// Opening the segments reads their stored bytes: a damaged one is an
    /// [`Error::Damaged`] naming it (see [`crate::index::damage`]), never a panic.
    pub fn reader(&self) -> Result<IndexReader> {
        crate::index::damage::guarded(&self.root, || {
            Ok(self
                .index
                .reader_builder()
                .reload_policy(ReloadPolicy::Manual)
                .try_into()?)
        })
    }

    /// The lock timeout from the config, unless the caller gives one.
    pub fn lock_timeout(&self, override_secs: Option<f64>) -> Duration {
        let secs = override_secs.unwrap_or(self.config.limits.lock_timeout_secs);
        Duration::from_secs_f64(secs.max(0.0))
    }

    fn writer(&self, timeout: Duration) -> Result<(WriterLock, IndexWriter)> {
        let lock = WriterLock::acquire(&self.root.join("LOCK"), timeout)?;
        // A store an older release made, or made under a loose umask, is
        // owner-only from its next write on.
        crate::files::make_private(&self.root)?;
        self.finish_interrupted(&lock)?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let writer = clean_writer(&self.index, threads, WRITER_HEAP_BYTES)?;
        Ok((lock, writer))
    }

    /// Finishes a tier operation (archive, restore, prune, supersede) that a
    /// crash interrupted. Every writer does this first, so nobody has to run
    /// `repair` after a kill.
    fn finish_interrupted(&self, lock: &WriterLock) -> Result<()> {
        self.guard.finish_interrupted(self, lock)
    }

    /// Commits (when there is something to commit), waits for merges, and brings
    /// the vector files up to date with the new segments.
    fn commit(&self, writer: IndexWriter, changed: bool) -> Result<()> {
        self.commit_timed(writer, changed).map(|_| ())
    }

    /// [`Store::commit`], returning the seconds of its two halves: the text
    /// index's commit, and the vector files and graphs.
    fn commit_timed(&self, mut writer: IndexWriter, changed: bool) -> Result<(f64, f64)> {
        let started = Instant::now();
        if changed {
            writer.commit()?;
        }
        writer.wait_merging_threads()?;
        let text_seconds = started.elapsed().as_secs_f64();
        let started = Instant::now();
        if changed {
            let searcher = self.reader()?.searcher();
            self.sync_vectors(&searcher)?;
        }
        Ok((text_seconds, started.elapsed().as_secs_f64()))
    }

    /// Deletes records by id, as one commit. Unknown ids are reported, not errors.
    pub fn delete(&self, ids: &[String], lock_timeout: Duration) -> Result<DeleteReport> {
        let (_lock, writer) = self.writer(lock_timeout)?;
        let searcher = self.reader()?.searcher();
        let lookup = IdLookup::new(&searcher, &self.fields)?;
        let mut report = DeleteReport::default();
        for id in ids {
            if lookup.hash_of(id)?.is_some() {
                writer.delete_term(Term::from_field_text(self.fields.id, id));
                report.deleted.push(id.clone());
            } else {
                report.missing.push(id.clone());
            }
        }
        let changed = !report.deleted.is_empty();
        self.commit(writer, changed)?;
        Ok(report)
    }

    /// The record with this id, if any, with the reads not yet folded into
    /// its stored counts added (see [`access`]). The read itself
    /// is logged: the next `get` counts it.
    pub fn get(&self, id: &str) -> Result<Option<Record>> {
        let searcher = self.reader()?.searcher();
        let Some(mut record) = get_record(&searcher, &self.fields, id)? else {
            return Ok(None);
        };
        access::Pending::read_one(&self.root, id)?.apply(&mut record);
        access::log(&self.root, &[id]);
        Ok(Some(record))
    }

    /// L2's record counts by kind, tier and namespace, and its sizes on disk.
    pub fn l2_stats(&self) -> Result<L2Stats> {
        let searcher = self.reader()?.searcher();
        Ok(L2Stats {
            store: self.root.clone(),
            format_version: self.config.format_version,
            records: searcher.num_docs(),
            counts: crate::index::ColumnCounts::of(&searcher)?,
            text_index_bytes: dir_size(&self.root.join("text")),
            segments: searcher.segment_readers().len(),
            vectors: crate::vectors::coverage(&searcher)?,
            vector_files_bytes: dir_size(&self.root.join("vectors")),
            vector_graphs: crate::vectors::graph_count(&self.root),
            vector_text_rules: self.embedding_rules(),
        })
    }
}

/// Reads one record by id from a searcher.
pub fn get_record(searcher: &Searcher, fields: &IndexFields, id: &str) -> Result<Option<Record>> {
    let lookup = IdLookup::new(searcher, fields)?;
    match lookup.find(id)? {
        Some(address) => {
            let doc: TantivyDocument = searcher.doc(address)?;
            fields.record(&doc).map(Some)
        }
        None => Ok(None),
    }
}

/// Total size of the files under `dir`.
pub use crate::files::dir_size;

/// Kinds as a list for messages.
pub fn kind_names() -> String {
    Kind::ALL.map(Kind::as_str).join(", ")
}
