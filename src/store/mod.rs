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

pub mod access;
pub mod browse;
pub use crate::index::lookup::IdLookup;
pub(crate) use crate::index::lookup::{clean_writer, first_live_doc};
pub mod config;
pub mod guard;
mod limits;
pub mod lock;
pub mod rescue;
mod rules;
pub mod scope;
pub mod tier;
pub mod tombstones;
pub mod verify;

use std::collections::HashMap;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use tantivy::schema::IndexRecordOption;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

pub use config::{Config, DEFAULT_MAX_FILE_BYTES, FORMAT_VERSION};
pub use guard::TierGuard;
use lock::WriterLock;

use tantivy::collector::TopDocs;
use tantivy::query::TermQuery;

use crate::embed::text::{embedding_text, text_hash};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::index::{record_hash, register_tokenizers, IndexFields, VectorField};
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

/// `record` with the access history (`access_count`, `last_accessed`) of the
/// version it replaces, unless its JSON sets them itself.
fn with_access_history(record: &Record, stored: &Record) -> Record {
    let mut record = record.clone();
    record.access_count = record
        .source
        .get("access_count")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(stored.access_count);
    record.last_accessed = match record.source.get("last_accessed") {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        _ => stored.last_accessed.clone(),
    };
    record
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
    /// Creates a new, empty store at `root` (the folder may exist if empty),
    /// whose writers run `guard`'s steps. Callers use `Store::init` (defined
    /// in `crate::tiers`, which supplies the guard).
    pub(crate) fn init_guarded(root: &Path, guard: &'static dyn TierGuard) -> Result<Store> {
        if root.join("config.toml").exists() || root.join("text").exists() {
            return Err(Error::StoreExists {
                path: root.to_path_buf(),
            });
        }
        let text = root.join("text");
        crate::files::create_private_dir(&text)?;
        crate::files::make_private(root)?;
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
            return Err(Error::NoStore {
                path: root.to_path_buf(),
            });
        }
        let config = Config::load(&config_path)?;
        if config.format_version != FORMAT_VERSION {
            return Err(Error::FormatVersion {
                path: root.to_path_buf(),
                found: config.format_version,
                expected: FORMAT_VERSION,
            });
        }
        let mut index = Index::open_in_dir(root.join("text"))?;
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
    pub fn reader(&self) -> Result<IndexReader> {
        Ok(self
            .index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?)
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

    /// Adds or replaces records by id, as one atomic commit.
    ///
    /// A record whose kind, namespace and JSON equal the stored version is left
    /// alone; if nothing changed, nothing is written at all. Vectors are computed
    /// first, without the writer lock (inference is slow; other writers need not
    /// wait for it): a text embedded before, by any record, reuses its vector;
    /// others go to `embedder` if there is one, else the record is stored without
    /// a vector and `embed` fills it in later.
    pub fn add(
        &self,
        records: Vec<Record>,
        embedder: Option<&mut dyn Embedder>,
        lock_timeout: Duration,
    ) -> Result<AddReport> {
        self.add_timed(records, embedder, lock_timeout)
            .map(|(report, _)| report)
    }

    /// [`Store::add`], also telling where its time went.
    pub fn add_timed(
        &self,
        records: Vec<Record>,
        embedder: Option<&mut dyn Embedder>,
        lock_timeout: Duration,
    ) -> Result<(AddReport, AddPhases)> {
        self.add_with_vectors(records, HashMap::new(), embedder, lock_timeout)
    }

    /// [`Store::add_timed`] with vectors the caller already has, by the hash of
    /// the text they were computed from (`crate::embed::text::text_hash`), as an
    /// export carries them: such texts are never embedded again.
    pub fn add_with_vectors(
        &self,
        mut records: Vec<Record>,
        known_vectors: HashMap<u64, Vec<f32>>,
        embedder: Option<&mut dyn Embedder>,
        lock_timeout: Duration,
    ) -> Result<(AddReport, AddPhases)> {
        let mut redacted = Findings::default();
        for record in &mut records {
            redacted.absorb(&crate::privacy::redact_record(self.redactor(), record));
        }
        self.add_redacted(records, redacted, known_vectors, embedder, lock_timeout)
    }

    /// [`Store::add_with_vectors`] for records the caller already sent
    /// through this store's redactor (`redacted` is what that replaced):
    /// ingest redacts each message before it links replies to prompts, and
    /// a second pass would find nothing new.
    pub(crate) fn add_redacted(
        &self,
        records: Vec<Record>,
        redacted: Findings,
        known_vectors: HashMap<u64, Vec<f32>>,
        embedder: Option<&mut dyn Embedder>,
        lock_timeout: Duration,
    ) -> Result<(AddReport, AddPhases)> {
        let mut phases = AddPhases::default();
        let mut clock = Instant::now();
        let mut lap = || {
            let seconds = clock.elapsed().as_secs_f64();
            clock = Instant::now();
            seconds
        };
        limits::check_record_sizes(&records, self.config.limits.max_record_bytes)?;
        scope::check_records(&records, self.scope())?;
        let (mut records, duplicate_ids) = last_version_per_id(records);
        let mut report = AddReport {
            duplicate_ids,
            redacted,
            ..AddReport::default()
        };
        let stones = tombstones::Tombstones::load(&self.root)?;
        if !stones.is_empty() {
            let before = records.len();
            records.retain(|r| !stones.buries(r));
            report.forgotten = before - records.len();
            for record in &mut records {
                stones.strip_buried_context(record);
            }
        }
        let snapshot = self.reader()?.searcher();
        inherit_projects(&snapshot, &self.fields, &mut records)?;
        let changed = self.changed_records(&snapshot, records, &mut report)?;
        phases.prepare_seconds = lap();
        let vectors =
            self.vectors_for(&snapshot, &changed, known_vectors, embedder, &mut report)?;
        drop(snapshot);
        phases.embed_seconds = lap();

        let (lock, writer) = self.writer(lock_timeout)?;
        // Re-read the hashes under the lock: another writer may have run meanwhile.
        let searcher = self.reader()?.searcher();
        let lookup = IdLookup::new(&searcher, &self.fields)?;
        let (mut added, mut updated, mut unchanged) = (0, 0, 0);
        for ((record, hash), vector) in changed.iter().zip(&vectors) {
            let document = match lookup.hash_of(&record.id)? {
                Some(existing) if existing == *hash => {
                    unchanged += 1;
                    continue;
                }
                Some(_) => {
                    // A new version keeps the stored one's access history.
                    let stored = match lookup.find(&record.id)? {
                        Some(address) => Some(self.fields.record(&searcher.doc(address)?)?),
                        None => None,
                    };
                    if let Some(stored) = &stored {
                        scope::check_replaced(stored, self.scope())?;
                    }
                    writer.delete_term(Term::from_field_text(self.fields.id, &record.id));
                    updated += 1;
                    match stored {
                        Some(stored) => self.fields.document(
                            &with_access_history(record, &stored),
                            *hash,
                            vector,
                        )?,
                        None => self.fields.document(record, *hash, vector)?,
                    }
                }
                None => {
                    added += 1;
                    self.fields.document(record, *hash, vector)?
                }
            };
            writer.add_document(document)?;
        }
        report.added = added;
        report.updated = updated;
        report.unchanged += unchanged;
        // A new record whose id is archived supersedes the archived copy, so
        // every id stays in exactly one tier.
        let mut new_ids = changed.iter().map(|(record, _)| record.id.as_str());
        let superseding = added > 0 && self.guard.begin_superseding(self, &lock, &mut new_ids)?;
        phases.index_seconds = lap();
        (phases.commit_seconds, phases.vectors_seconds) =
            self.commit_timed(writer, added + updated > 0)?;
        if superseding {
            self.guard.finish_superseding(self, &lock)?;
        }
        Ok((report, phases))
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

    /// The records whose stored version differs, with their version hash.
    fn changed_records(
        &self,
        searcher: &Searcher,
        records: Vec<Record>,
        report: &mut AddReport,
    ) -> Result<Vec<(Record, u64)>> {
        let lookup = IdLookup::new(searcher, &self.fields)?;
        let mut changed = Vec::with_capacity(records.len());
        for record in records {
            let hash = record_hash(&record);
            if lookup.hash_of(&record.id)? == Some(hash) {
                report.unchanged += 1;
            } else {
                changed.push((record, hash));
            }
        }
        Ok(changed)
    }

    /// The embedding of each record: reused by text hash, computed, or none.
    fn vectors_for(
        &self,
        searcher: &Searcher,
        records: &[(Record, u64)],
        known: HashMap<u64, Vec<f32>>,
        embedder: Option<&mut dyn Embedder>,
        report: &mut AddReport,
    ) -> Result<Vec<VectorField>> {
        let texts: Vec<String> = records.iter().map(|(r, _)| embedding_text(r)).collect();
        let hashes: Vec<u64> = texts.iter().map(|t| text_hash(t)).collect();
        // A draft embedder may reuse a draft; the full model only a full vector.
        let accept_drafts = embedder.as_ref().is_some_and(|e| e.is_draft());
        let mut found: HashMap<u64, (Vec<f32>, bool)> = known
            .into_iter()
            .filter(|(_, v)| v.len() == crate::embed::DIM)
            .map(|(h, v)| (h, (v, false)))
            .collect();
        for &hash in &hashes {
            if let std::collections::hash_map::Entry::Vacant(slot) = found.entry(hash) {
                if let Some(stored) = self.stored_vector(searcher, hash, accept_drafts)? {
                    slot.insert(stored);
                    report.vectors_reused += 1;
                }
            }
        }
        if let Some(embedder) = embedder {
            let draft = embedder.is_draft();
            let mut todo: Vec<(u64, &str)> = Vec::new();
            for (hash, text) in hashes.iter().zip(&texts) {
                if !found.contains_key(hash) && !todo.iter().any(|(h, _)| h == hash) {
                    todo.push((*hash, text.as_str()));
                }
            }
            for chunk in todo.chunks(crate::embed::GROUP) {
                let batch: Vec<&str> = chunk.iter().map(|(_, t)| *t).collect();
                let vectors = embedder
                    .embed(&batch)
                    .map_err(|e| Error::Usage(e.to_string()))?;
                for ((hash, _), vector) in chunk.iter().zip(vectors) {
                    found.insert(*hash, (vector, draft));
                }
                report.embedded += chunk.len();
            }
        }
        let fields: Vec<VectorField> = hashes
            .iter()
            .map(|h| {
                let stored = found.get(h);
                VectorField {
                    text_hash: *h,
                    embedding: stored.map(|(v, _)| v.clone()),
                    draft: stored.is_some_and(|(_, draft)| *draft),
                }
            })
            .collect();
        report.without_vector = fields.iter().filter(|f| f.embedding.is_none()).count();
        Ok(fields)
    }

    /// The stored vector of any live record whose embedded text has this hash,
    /// and whether it is a draft; drafts only when `accept_drafts`.
    fn stored_vector(
        &self,
        searcher: &Searcher,
        hash: u64,
        accept_drafts: bool,
    ) -> Result<Option<(Vec<f32>, bool)>> {
        use crate::index::has_vector::{DRAFT, FULL};
        let term = Term::from_field_u64(self.fields.text_hash, hash);
        let usable = |segment: &tantivy::SegmentReader, doc| {
            let kind = segment.fast_fields().u64("has_vector")?.first(doc);
            Ok(kind == Some(FULL) || (accept_drafts && kind == Some(DRAFT)))
        };
        let Some(address) = first_live_doc(searcher, &term, usable)? else {
            return Ok(None);
        };
        let draft = searcher
            .segment_reader(address.segment_ord)
            .fast_fields()
            .u64("has_vector")?
            .first(address.doc_id)
            == Some(DRAFT);
        let stored: TantivyDocument = searcher.doc(address)?;
        use tantivy::schema::Value;
        Ok(stored
            .get_first(self.fields.embedding)
            .and_then(|v| v.as_bytes())
            .and_then(|b| crate::index::embedding_from_bytes(b, crate::embed::DIM))
            .map(|v| (v, draft)))
    }

    /// How many live records wait for a vector, counted through the index's
    /// `has_vector` term (no scan of the records).
    pub fn records_without_vector(&self) -> Result<u64> {
        let searcher = self.reader()?.searcher();
        let missing = TermQuery::new(
            Term::from_field_u64(self.fields.has_vector, 0),
            IndexRecordOption::Basic,
        );
        Ok(searcher.search(&missing, &tantivy::collector::Count)? as u64)
    }

    /// Computes vectors for records stored without one, `batch` records per commit.
    /// Returns how many records got a vector.
    pub fn embed_missing(
        &self,
        embedder: &mut dyn Embedder,
        batch: usize,
        lock_timeout: Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<usize> {
        let mut done = 0;
        loop {
            let searcher = self.reader()?.searcher();
            let waiting = crate::vectors::coverage(&searcher)?.without_vector as usize;
            progress(done, done + waiting);
            if waiting == 0 {
                drop(searcher);
                self.index_vectors(lock_timeout)?;
                return Ok(done);
            }
            let missing = TermQuery::new(
                Term::from_field_u64(self.fields.has_vector, 0),
                IndexRecordOption::Basic,
            );
            let top = searcher.search(
                &missing,
                &TopDocs::with_limit(batch.max(1)).order_by_score(),
            )?;
            let mut records = Vec::with_capacity(top.len());
            for (_, address) in top {
                let doc: TantivyDocument = searcher.doc(address)?;
                records.push(self.fields.record(&doc)?);
            }
            drop(searcher);
            let count = records.len();
            self.rewrite_with_vectors(records, embedder, lock_timeout)?;
            done += count;
        }
    }

    /// Brings the vector files and graphs up to date with the text index: builds
    /// what is missing or damaged (from the stored embeddings, never by
    /// re-embedding) and removes what belongs to no segment.
    pub fn index_vectors(&self, lock_timeout: Duration) -> Result<()> {
        let _lock = WriterLock::acquire(&self.root.join("LOCK"), lock_timeout)?;
        let searcher = self.reader()?.searcher();
        self.sync_vectors(&searcher)
    }

    /// Vector files and graphs for the segments of `searcher`; see [`crate::vectors::sync`].
    fn sync_vectors(&self, searcher: &Searcher) -> Result<()> {
        crate::vectors::sync(
            &self.root,
            searcher,
            &self.fields,
            crate::embed::DIM,
            self.config.embedding.graph_min_rows(),
        )
    }

    /// Writes records again, unchanged but for their vectors.
    fn rewrite_with_vectors(
        &self,
        records: Vec<Record>,
        embedder: &mut dyn Embedder,
        lock_timeout: Duration,
    ) -> Result<()> {
        let snapshot = self.reader()?.searcher();
        let with_hashes: Vec<(Record, u64)> = records
            .into_iter()
            .map(|r| {
                let h = record_hash(&r);
                (r, h)
            })
            .collect();
        let vectors = self.vectors_for(
            &snapshot,
            &with_hashes,
            HashMap::new(),
            Some(embedder),
            &mut AddReport::default(),
        )?;
        drop(snapshot);
        let (_lock, writer) = self.writer(lock_timeout)?;
        let searcher = self.reader()?.searcher();
        let lookup = IdLookup::new(&searcher, &self.fields)?;
        let mut changed = false;
        for ((record, hash), vector) in with_hashes.iter().zip(&vectors) {
            // Skip records changed or deleted by another writer meanwhile.
            if lookup.hash_of(&record.id)? != Some(*hash) || vector.embedding.is_none() {
                continue;
            }
            writer.delete_term(Term::from_field_text(self.fields.id, &record.id));
            writer.add_document(self.fields.document(record, *hash, vector)?)?;
            changed = true;
        }
        self.commit(writer, changed)
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

/// Gives a record of a session that names no project the project of the
/// session's other records (in this batch, else in the store): a segment an
/// agent writes about its session belongs where the session's messages do.
/// The project is written into the record's JSON (`project`), so it comes
/// back with `get` and `export`.
fn inherit_projects(
    searcher: &Searcher,
    fields: &IndexFields,
    records: &mut [Record],
) -> Result<()> {
    let mut known: HashMap<String, Option<String>> = HashMap::new();
    for record in records.iter() {
        if let (Some(session), Some(project)) = (&record.fields.session_id, &record.fields.project)
        {
            known
                .entry(session.clone())
                .or_insert_with(|| Some(project.clone()));
        }
    }
    for record in records.iter_mut() {
        if record.fields.project.is_some() {
            continue;
        }
        let Some(session) = record.fields.session_id.clone() else {
            continue;
        };
        let project = match known.get(&session) {
            Some(project) => project.clone(),
            None => {
                let found = browse::session_project(searcher, fields, &session)?;
                known.insert(session, found.clone());
                found
            }
        };
        if let (Some(project), Some(object)) = (project, record.source.as_object_mut()) {
            object.insert("project".into(), serde_json::Value::String(project.clone()));
            record.fields.project = Some(project);
        }
    }
    Ok(())
}

/// Keeps the last record given for each id, in first-seen order.
fn last_version_per_id(records: Vec<Record>) -> (Vec<Record>, Vec<String>) {
    let mut position: HashMap<String, usize> = HashMap::with_capacity(records.len());
    let mut kept: Vec<Record> = Vec::with_capacity(records.len());
    let mut duplicates = Vec::new();
    for record in records {
        match position.get(&record.id) {
            Some(&i) => {
                duplicates.push(record.id.clone());
                kept[i] = record;
            }
            None => {
                position.insert(record.id.clone(), kept.len());
                kept.push(record);
            }
        }
    }
    duplicates.sort();
    duplicates.dedup();
    (kept, duplicates)
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
