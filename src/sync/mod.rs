//! Sync: stores on many machines share what they choose through a team's
//! Postgres (with pgvector), and stay local-first.
//!
//! Each machine keeps its own store and searches it offline; `knowledge-db
//! sync` (or the upkeep, when `[sync] every` is set) does two steps:
//! - **Push**: the records of the shared scopes (see [`scope`]) that changed
//!   since the last sync go into Postgres with their embeddings; records that
//!   disappeared here (deleted, forgotten) go as tombstones.
//! - **Pull**: every row written since this machine's cursor comes in:
//!   records are written with the vectors Postgres holds (no model pass when
//!   the model and the embedded text match), tombstones delete.
//!
//! **State-based, not a change log.** What changed is found by comparing the
//! store with the [`manifest`] (id → the version sync last saw), so sync
//! depends on none of the store's write paths: an `add`, an ingest, a hook,
//! a `forget` or a hand-run `delete` are all seen the same way, and a change
//! made while sync was not running is never missed. A change log would have
//! to be written inside every write path (and would be lost by any path that
//! forgot it). What it costs: each sync reads every id's hash from the
//! index's fast columns (no record decoded), a few milliseconds per 10,000
//! records.
//!
//! **Conflicts** go to the newer write, `(written_ms, origin)` compared as a
//! pair so the origin breaks a tie the same way everywhere; the server keeps
//! only the winner (see [`remote`]), and a push that lost fetches the winner
//! at once, so every machine converges on the same version of each id.
//!
//! **Crash safety.** Every step is idempotent: the server takes a version
//! only if it is new, the local write skips an unchanged version, and a
//! pulled record carries its mark (`"sync": {"origin", "version",
//! "written_at"}` in its JSON), so a store that was killed after writing
//! pulled records but before noting them in the manifest recognises them as
//! pulled copies, not as local changes to push. The manifest is appended
//! and fsynced per batch, the cursor saved after it; a SIGKILL anywhere loses
//! nothing and duplicates nothing, and the next run finishes the job.
//!
//! **Origins.** Pulled records say who wrote them (`sync.origin`, `[sync]
//! origin`, by default `user@host`); search filters on it.

pub mod connect;
pub mod local;
pub mod manifest;
pub mod remote;
pub mod scope;
pub mod state;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::record::parse::{format_time_millis, parse_time_millis};
use crate::record::Record;
use crate::store::Store;
use local::{Held, Incoming, Loaded, RemoteVector};
use manifest::{Entry, Manifest};
use remote::{Remote, Row};
use scope::Scopes;
pub use state::State;

/// The key of a pulled record's JSON that says where it came from.
pub const MARK_KEY: &str = "sync";

/// The environment variable that names the server (wins over `[sync] url`).
pub const URL_ENV: &str = "KNOWLEDGE_DB_SYNC_URL";

/// How long a sync waits for another sync of the same store to finish.
const SYNC_LOCK_WAIT: Duration = Duration::from_secs(60);

/// What to sync, beyond the store's `[sync]` settings.
#[derive(Debug, Clone, Default)]
pub struct SyncOptions {
    /// The server; `None`: `KNOWLEDGE_DB_SYNC_URL`, else `[sync] url`.
    pub url: Option<String>,
    /// The shared scopes; `None`: `[sync] share`.
    pub share: Option<Vec<String>>,
    /// Skip the push (pull only).
    pub no_push: bool,
    /// Skip the pull (push only).
    pub no_pull: bool,
    /// How long each local write waits for the store's writer lock.
    pub lock_timeout: Duration,
}

/// What one sync did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SyncReport {
    /// The server, password hidden.
    pub server: String,
    /// This store's origin name.
    pub origin: String,
    /// The shared scopes in force.
    pub shared: Vec<String>,
    /// Records the server took from this store.
    pub pushed: u64,
    /// Tombstones (deletes here) the server took.
    pub pushed_tombstones: u64,
    /// Pushed versions that lost to a newer write elsewhere (the winner was
    /// written here instead).
    pub push_conflicts_lost: u64,
    /// Bytes of records and vectors sent.
    pub push_bytes: u64,
    /// Records written here from the server.
    pub pulled: u64,
    /// Of those, written with the vector the server had (no model pass).
    pub pulled_with_vector: u64,
    /// Records deleted here by pulled tombstones.
    pub pulled_deletes: u64,
    /// Pulled rows already here as they are (this store's own, or written
    /// before an interrupted sync noted them).
    pub pulled_unchanged: u64,
    /// Pulled rows skipped because this store holds a newer version (it is
    /// pushed next).
    pub pulled_older: u64,
    /// Bytes of records and vectors received.
    pub pull_bytes: u64,
    /// Records (not tombstones) on the server after the sync.
    pub remote_records: u64,
    /// The highest change number pulled.
    pub cursor: i64,
    /// Seconds the push took.
    pub push_seconds: f64,
    /// Seconds the pull took.
    pub pull_seconds: f64,
    /// Seconds in all.
    pub seconds: f64,
}

/// The sync settings in force for a store: `[sync]` with the options given.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The server, if any is named.
    pub url: Option<String>,
    /// Where the URL came from: `--url`, the environment, or config.toml.
    pub url_from: &'static str,
    /// What is pushed.
    pub scopes: Scopes,
    /// This store's origin name.
    pub origin: String,
    /// The tables' schema, if set.
    pub schema: Option<String>,
    /// Records per batch.
    pub batch: usize,
    /// Seconds between background syncs; `None`: no background sync.
    pub every_secs: Option<i64>,
}

impl Settings {
    /// The settings of `store` with `options` applied.
    pub fn of(store: &Store, options: &SyncOptions) -> Result<Settings> {
        let config = &store.config().sync;
        let env = std::env::var(URL_ENV).ok().filter(|u| !u.trim().is_empty());
        let (url, url_from) = match (&options.url, env) {
            (Some(url), _) => (Some(url.clone()), "--url"),
            (None, Some(url)) => (Some(url), URL_ENV),
            (None, None) if !config.url.trim().is_empty() => {
                (Some(config.url.clone()), "[sync] url")
            }
            (None, None) => (None, "nowhere"),
        };
        let scopes = match &options.share {
            Some(share) => Scopes::parse(share)?,
            None => Scopes::parse(&config.share)?,
        };
        let every_secs = if config.every.trim().is_empty() {
            None
        } else {
            Some(
                crate::record::time::parse_duration_secs(&config.every)
                    .filter(|s| *s > 0)
                    .ok_or_else(|| Error::Config {
                        path: store.root().join("config.toml"),
                        message: format!(
                            "[sync] every = \"{}\" is not a duration (e.g. 5m, 1h)",
                            config.every
                        ),
                    })?,
            )
        };
        Ok(Settings {
            url,
            url_from,
            scopes,
            origin: if config.origin.trim().is_empty() {
                default_origin()
            } else {
                config.origin.trim().to_string()
            },
            schema: Some(config.schema.trim().to_string()).filter(|s| !s.is_empty()),
            batch: config.batch.clamp(1, 100_000),
            every_secs,
        })
    }
}

/// `user@host`: who wrote a record, when `[sync] origin` does not say.
pub fn default_origin() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "user".into());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{user}@{host}")
}

/// The content version of a record: its store version hash without the
/// sync mark, so a pulled copy and the original have the same version.
pub fn content_version(record: &Record) -> u64 {
    if record.source.get(MARK_KEY).is_none() {
        return crate::index::record_hash(record);
    }
    let mut bare = record.clone();
    if let Some(source) = bare.source.as_object_mut() {
        source.remove(MARK_KEY);
    }
    crate::index::record_hash(&bare)
}

/// The sync mark of a pulled record: `(origin, version, written_ms)`.
fn mark_of(record: &Record) -> Option<(String, u64, i64)> {
    let mark = record.source.get(MARK_KEY)?;
    let origin = mark.get("origin")?.as_str()?.to_string();
    let version = u64::from_str_radix(mark.get("version")?.as_str()?, 16).ok()?;
    let written = parse_time_millis(mark.get("written_at")?.as_str()?)?;
    Some((origin, version, written))
}

/// When this version of a record was written here, Unix milliseconds.
fn written_ms(record: &Record) -> i64 {
    parse_time_millis(&record.added_at).unwrap_or(0)
}

fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// Runs one sync of `store`: push, then pull. `progress` gets `(step,
/// done, total)`; a total of 0 means unknown. The outcome is recorded in
/// `<store>/sync/state.json` either way.
pub fn sync(
    store: &Store,
    options: &SyncOptions,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<SyncReport> {
    let settings = Settings::of(store, options)?;
    let Some(url) = settings.url.clone() else {
        return Err(Error::Usage(format!(
            "no sync server: pass --url, set {URL_ENV}, or set [sync] url in {}",
            store.root().join("config.toml").display()
        )));
    };
    let target = connect::Target::parse(&url)?;
    let _lock = lock_sync(store)?;
    let mut state = State::read(store.root());
    state.last_attempt_unix = Some(crate::now_unix());
    state.server = Some(target.shown().to_string());
    let result =
        Run::start(store, &settings, options, &target, &mut state).and_then(|run| run.go(progress));
    match &result {
        Ok(report) => {
            state.last_error = None;
            state.failures = 0;
            state.last_sync_unix = Some(crate::now_unix());
            state.last_sync = Some(crate::now_rfc3339());
            state.remote_records = Some(report.remote_records);
            state.last_report = Some(report.clone());
        }
        Err(e) => state.fail(e.to_string()),
    }
    // The cursor in `state` is the one the run saved last.
    let mut saved = State::read(store.root());
    saved.server = state.server.clone();
    saved.last_attempt_unix = state.last_attempt_unix;
    saved.last_error = state.last_error.clone();
    saved.failures = state.failures;
    if result.is_ok() {
        saved.last_sync = state.last_sync.clone();
        saved.last_sync_unix = state.last_sync_unix;
        saved.remote_records = state.remote_records;
        saved.last_report = state.last_report.clone();
    }
    saved.save(store.root())?;
    result
}

/// One sync at a time per store (the upkeep and a person may both start one).
fn lock_sync(store: &Store) -> Result<std::fs::File> {
    let dir = state::dir(store.root());
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let path = dir.join("sync.lock");
    let started = Instant::now();
    loop {
        if let Some(file) = crate::store::lock::try_lock_file(&path)? {
            return Ok(file);
        }
        if started.elapsed() >= SYNC_LOCK_WAIT {
            return Err(Error::Sync(format!(
                "another sync of this store has run for over {}s (it holds {})",
                SYNC_LOCK_WAIT.as_secs(),
                path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Manifest entries to record, by id.
type Notes = Vec<(String, Entry)>;

/// One sync in progress.
struct Run<'a> {
    store: &'a Store,
    settings: &'a Settings,
    options: &'a SyncOptions,
    remote: Remote,
    manifest: Manifest,
    report: SyncReport,
    started: Instant,
}

impl<'a> Run<'a> {
    fn start(
        store: &'a Store,
        settings: &'a Settings,
        options: &'a SyncOptions,
        target: &connect::Target,
        state: &mut State,
    ) -> Result<Run<'a>> {
        let started = Instant::now();
        let client = target.connect()?;
        let remote = Remote::open(client, settings.schema.as_deref())?;
        let dir = state::dir(store.root());
        if state.instance.as_deref() != Some(remote.instance()) {
            // Other tables: what this store knew of the old ones says nothing here.
            let _ = std::fs::remove_file(dir.join("manifest.jsonl"));
            let mut fresh = State {
                instance: Some(remote.instance().to_string()),
                server: state.server.clone(),
                last_attempt_unix: state.last_attempt_unix,
                ..State::default()
            };
            fresh.save(store.root())?;
            std::mem::swap(state, &mut fresh);
        }
        let manifest = Manifest::load(&dir, &settings.scopes.fingerprint())?;
        Ok(Run {
            store,
            settings,
            options,
            remote,
            manifest,
            report: SyncReport {
                server: target.shown().to_string(),
                origin: settings.origin.clone(),
                shared: settings.scopes.names(),
                ..SyncReport::default()
            },
            started,
        })
    }

    fn go(mut self, progress: &mut dyn FnMut(&str, u64, u64)) -> Result<SyncReport> {
        if !self.options.no_push {
            let clock = Instant::now();
            self.push(progress)?;
            self.report.push_seconds = clock.elapsed().as_secs_f64();
        }
        if !self.options.no_pull {
            let clock = Instant::now();
            self.pull(progress)?;
            self.report.pull_seconds = clock.elapsed().as_secs_f64();
        }
        let (records, _) = self.remote.counts()?;
        self.report.remote_records = records;
        self.report.cursor = State::read(self.store.root()).cursor;
        self.report.seconds = self.started.elapsed().as_secs_f64();
        Ok(self.report)
    }

    /// Finds what changed here since the manifest and pushes it, a batch at
    /// a time.
    fn push(&mut self, progress: &mut dyn FnMut(&str, u64, u64)) -> Result<()> {
        let held = local::held(self.store)?;
        let (candidates, unshared) = self.candidates(&held);
        self.manifest.record(unshared)?;
        let tombstones = self.disappeared(&held)?;
        let total = (candidates.len() + tombstones.len()) as u64;
        let mut done = 0u64;
        progress("push", done, total);
        for chunk in candidates.chunks(self.settings.batch) {
            let loaded = local::load(self.store, chunk)?;
            let rows = self.classify(loaded)?;
            self.push_rows(rows)?;
            done += chunk.len() as u64;
            progress("push", done, total);
        }
        for chunk in tombstones.chunks(self.settings.batch) {
            self.push_rows(chunk.iter().map(|row| (row.clone(), None)).collect())?;
            done += chunk.len() as u64;
            progress("push", done, total);
        }
        Ok(())
    }

    /// Ids whose version differs from the manifest's, and the new ids that a
    /// namespace alone shows to be unshared (noted without reading them).
    fn candidates(&self, held: &HashMap<String, Held>) -> (Vec<(String, bool)>, Notes) {
        let mut candidates = Vec::new();
        let mut unshared = Vec::new();
        for (id, h) in held {
            let known = self.manifest.get(id);
            if known.and_then(Entry::local) == Some(h.hash) {
                continue;
            }
            let never_synced = !matches!(known, Some(Entry::Synced { .. } | Entry::Gone { .. }));
            if never_synced
                && self.settings.scopes.decides_by_namespace(&h.namespace) == Some(false)
                && !id.starts_with("pruned-messages:")
            {
                // A pulled copy of an unshared namespace lands here too after
                // an interrupted pull; the pull sets its entry right.
                unshared.push((id.clone(), Entry::Local { local: h.hash }));
                continue;
            }
            candidates.push((id.clone(), h.archived));
        }
        candidates.sort();
        (candidates, unshared)
    }

    /// Tombstones for synced records no longer held here (retention's
    /// pruning excepted: that is this machine's choice, not a delete).
    fn disappeared(&self, held: &HashMap<String, Held>) -> Result<Vec<Row>> {
        let gone: Vec<&String> = self
            .manifest
            .iter()
            .filter(|(id, entry)| matches!(entry, Entry::Synced { .. }) && !held.contains_key(*id))
            .map(|(id, _)| id)
            .collect();
        if gone.is_empty() {
            return Ok(Vec::new());
        }
        let pruned = local::pruned_ids(self.store, held)?;
        let now = now_ms();
        let mut rows: Vec<Row> = gone
            .into_iter()
            .filter(|id| !pruned.contains(*id))
            .map(|id| tombstone(id, &self.settings.origin, now))
            .collect();
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(rows)
    }

    /// Decides for each changed record: push it, or note it (a pulled copy,
    /// a pruned copy, an unshared record, a version the server has). Rows
    /// come with the store version hash of the record they push.
    fn classify(&mut self, loaded: Vec<Loaded>) -> Result<Vec<(Row, Option<u64>)>> {
        let mut rows = Vec::new();
        let mut notes = Vec::new();
        for l in loaded {
            let version = content_version(&l.record);
            let id = l.record.id.clone();
            if local::is_pruned_copy(&l.record) {
                notes.push((id, Entry::Local { local: l.hash }));
                continue;
            }
            if let Some((origin, marked, written)) = mark_of(&l.record) {
                if marked == version {
                    notes.push((
                        id,
                        Entry::Synced {
                            local: l.hash,
                            version,
                            origin,
                            written_ms: written,
                        },
                    ));
                    continue;
                }
            }
            if let Some(Entry::Synced {
                version: known,
                origin,
                written_ms,
                ..
            }) = self.manifest.get(&id)
            {
                if *known == version {
                    let entry = Entry::Synced {
                        local: l.hash,
                        version,
                        origin: origin.clone(),
                        written_ms: *written_ms,
                    };
                    notes.push((id, entry));
                    continue;
                }
            }
            if !self.settings.scopes.shares(&l.record) {
                notes.push((id, Entry::Local { local: l.hash }));
                continue;
            }
            rows.push((self.row_of(&l, version), Some(l.hash)));
        }
        self.manifest.record(notes)?;
        Ok(rows)
    }

    /// The row that pushes a local record.
    fn row_of(&self, l: &Loaded, version: u64) -> Row {
        // Every write redacted this record already; a store written before
        // redaction existed (or before a `[privacy]` pattern was added) may
        // still hold a secret, and nothing private leaves the machine. A
        // record that changes goes without its vector (made from the secret):
        // the puller embeds it.
        let mut record = l.record.clone();
        let redacted =
            !crate::privacy::redact_record(self.store.redactor(), &mut record).is_empty();
        let l = &Loaded {
            record,
            hash: l.hash,
            vector: if redacted { None } else { l.vector.clone() },
        };
        let mut line = crate::export::line(&l.record);
        if let Some(object) = line.as_object_mut() {
            // Reads are each machine's own; the tier and pruning too.
            for key in ["access_count", "last_accessed", "archived_at", "dropped"] {
                object.remove(key);
            }
            object.insert("tier".into(), json!("l2"));
            object.insert("pruned".into(), json!(false));
            if let Some(source) = object.get_mut("source").and_then(Value::as_object_mut) {
                source.remove(MARK_KEY);
            }
        }
        let (text_hash, embedding) = match &l.vector {
            Some((hash, v)) => (Some(format!("{hash:016x}")), Some(v.clone())),
            None => (None, None),
        };
        Row {
            id: l.record.id.clone(),
            seq: 0,
            origin: self.settings.origin.clone(),
            written_ms: written_ms(&l.record),
            deleted: false,
            kind: Some(l.record.kind.as_str().to_string()),
            namespace: Some(l.record.namespace.clone()),
            project: l
                .record
                .source
                .get("project")
                .and_then(Value::as_str)
                .map(str::to_string),
            version: format!("{version:016x}"),
            record: Some(line.to_string()),
            model: embedding
                .as_ref()
                .map(|_| crate::embed::MODEL_ID.to_string()),
            recipe: embedding
                .as_ref()
                .and_then(|_| i32::try_from(self.store.embedding_rules()).ok()),
            text_hash,
            embedding,
        }
    }

    /// Pushes rows (with the store version hash of each record pushed; none
    /// for tombstones); notes what the server took, and writes here the
    /// newer versions that beat the others.
    fn push_rows(&mut self, batch: Vec<(Row, Option<u64>)>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let (rows, hashes): (Vec<Row>, Vec<Option<u64>>) = batch.into_iter().unzip();
        self.report.push_bytes += rows.iter().map(row_bytes).sum::<u64>();
        let taken: HashSet<String> = self.remote.push(&rows)?.into_iter().collect();
        let mut notes = Vec::new();
        let mut lost = Vec::new();
        for (row, hash) in rows.iter().zip(hashes) {
            if !taken.contains(&row.id) {
                lost.push(row.id.clone());
                continue;
            }
            if row.deleted {
                self.report.pushed_tombstones += 1;
                notes.push((
                    row.id.clone(),
                    Entry::Gone {
                        origin: row.origin.clone(),
                        written_ms: row.written_ms,
                    },
                ));
            } else {
                self.report.pushed += 1;
                notes.push((
                    row.id.clone(),
                    Entry::Synced {
                        local: hash.unwrap_or(0),
                        version: parse_version(&row.version)?,
                        origin: row.origin.clone(),
                        written_ms: row.written_ms,
                    },
                ));
            }
        }
        self.manifest.record(notes)?;
        if !lost.is_empty() {
            let winners = self.remote.rows(&lost)?;
            // Ids whose row the server has as we sent it (an earlier push of
            // ours) are noted; the others lost to a newer write.
            let mut changed = Vec::new();
            for row in winners {
                let ours = rows.iter().find(|r| r.id == row.id);
                let same = ours.is_some_and(|o| {
                    o.deleted == row.deleted && (row.deleted || o.version == row.version)
                });
                if !same {
                    self.report.push_conflicts_lost += 1;
                }
                changed.push(row);
            }
            self.apply(changed, false)?;
        }
        Ok(())
    }

    /// Pulls every row past the cursor, a batch at a time.
    fn pull(&mut self, progress: &mut dyn FnMut(&str, u64, u64)) -> Result<()> {
        let mut state = State::read(self.store.root());
        let (_, highest) = self.remote.counts()?;
        let start = state.cursor;
        let total = (highest - start).max(0) as u64;
        progress("pull", 0, total);
        loop {
            let rows = self.remote.pull(
                state.cursor,
                self.settings.batch as i64,
                &self.settings.origin,
            )?;
            let Some(last) = rows.last().map(|r| r.seq) else {
                break;
            };
            let rows = self.complete_own(rows)?;
            self.report.pull_bytes += rows.iter().map(row_bytes).sum::<u64>();
            self.apply(rows, true)?;
            state.cursor = last;
            state.save(self.store.root())?;
            progress("pull", (last - start).max(0) as u64, total);
        }
        Ok(())
    }

    /// This store's own rows come from the pull without their payload: those
    /// the manifest knows as they are are noted as unchanged and dropped; the
    /// others (a store that lost its copy) are read whole.
    fn complete_own(&mut self, rows: Vec<Row>) -> Result<Vec<Row>> {
        let mut keep = Vec::with_capacity(rows.len());
        let mut fetch = Vec::new();
        for row in rows {
            let own = row.origin == self.settings.origin && !row.deleted && row.record.is_none();
            if !own {
                keep.push(row);
                continue;
            }
            let known = match self.manifest.get(&row.id) {
                Some(Entry::Synced {
                    version,
                    origin,
                    written_ms,
                    ..
                }) => {
                    format!("{version:016x}") == row.version
                        && *origin == row.origin
                        && *written_ms == row.written_ms
                }
                _ => false,
            };
            if known {
                self.report.pulled_unchanged += 1;
            } else {
                fetch.push(row.id);
            }
        }
        if !fetch.is_empty() {
            keep.extend(self.remote.rows(&fetch)?);
        }
        Ok(keep)
    }

    /// Writes pulled rows here: newer versions replace, tombstones delete,
    /// versions already here are only noted. `pulled` counts them as pulled
    /// (false: winners fetched after a lost push).
    fn apply(&mut self, rows: Vec<Row>, pulled: bool) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let here = self.held_now(&ids)?;
        let mut writes: Vec<Incoming> = Vec::new();
        let mut deletes: Vec<String> = Vec::new();
        let mut notes = Vec::new();
        for row in rows {
            let known = self.manifest.get(&row.id);
            let local = here.get(&row.id);
            let changed_here = local.is_some_and(|l| known.and_then(Entry::local) != Some(l.hash));
            let unshared_here = matches!(known, Some(Entry::Local { .. }));
            if let Some(l) = local.filter(|_| changed_here || unshared_here) {
                // A change here not pushed yet, or a record of the same id
                // that is not shared: the newer write wins.
                let mine = (written_ms(&l.record), self.settings.origin.as_str());
                if mark_of(&l.record).is_none() && mine > (row.written_ms, row.origin.as_str()) {
                    self.report.pulled_older += 1;
                    continue;
                }
            }
            let stamp = Entry::Gone {
                origin: row.origin.clone(),
                written_ms: row.written_ms,
            };
            if row.deleted {
                match local {
                    Some(_) => deletes.push(row.id.clone()),
                    None => self.report.pulled_unchanged += u64::from(pulled),
                }
                notes.push((row.id.clone(), stamp));
                continue;
            }
            let version = parse_version(&row.version)?;
            if let Some(l) = local.filter(|l| content_version(&l.record) == version) {
                self.report.pulled_unchanged += u64::from(pulled);
                notes.push((row.id.clone(), synced(&row, l.hash, version)));
                continue;
            }
            let incoming = incoming_of(&row)?;
            let hash = crate::index::record_hash(&incoming.record);
            if pulled {
                self.report.pulled += 1;
                self.report.pulled_with_vector += u64::from(incoming.vector.is_some());
            }
            notes.push((row.id.clone(), synced(&row, hash, version)));
            writes.push(incoming);
        }
        let timeout = self.options.lock_timeout;
        local::write(self.store, writes, timeout)?;
        let deleted = local::delete(self.store, &deletes, timeout)?;
        self.report.pulled_deletes += deleted as u64;
        self.manifest.record(notes)?;
        Ok(())
    }

    /// The records of `ids` held here now, read whole.
    fn held_now(&self, ids: &[String]) -> Result<HashMap<String, Loaded>> {
        let searcher = self.store.reader()?.searcher();
        let mut out: HashMap<String, Loaded> = self
            .store
            .l2_records_by_id(&searcher, ids)?
            .into_iter()
            .map(|l2| {
                (
                    l2.record.id.clone(),
                    Loaded {
                        hash: l2.hash,
                        vector: None,
                        record: l2.record,
                    },
                )
            })
            .collect();
        let archive = crate::archive::Archive::new(self.store.root());
        if archive.exists() {
            for id in ids {
                if out.contains_key(id) {
                    continue;
                }
                if let Some(entry) = archive.get(id)? {
                    out.insert(
                        id.clone(),
                        Loaded {
                            hash: entry.hash,
                            vector: None,
                            record: entry.record,
                        },
                    );
                }
            }
        }
        Ok(out)
    }
}

fn synced(row: &Row, local: u64, version: u64) -> Entry {
    Entry::Synced {
        local,
        version,
        origin: row.origin.clone(),
        written_ms: row.written_ms,
    }
}

fn tombstone(id: &str, origin: &str, written_ms: i64) -> Row {
    Row {
        id: id.to_string(),
        seq: 0,
        origin: origin.to_string(),
        written_ms,
        deleted: true,
        kind: None,
        namespace: None,
        project: None,
        version: String::new(),
        record: None,
        model: None,
        recipe: None,
        text_hash: None,
        embedding: None,
    }
}

fn parse_version(text: &str) -> Result<u64> {
    u64::from_str_radix(text, 16)
        .map_err(|_| Error::Sync(format!("a row's version `{text}` is not 16 hex digits")))
}

/// A pulled row as the record to write here.
fn incoming_of(row: &Row) -> Result<Incoming> {
    let text = row
        .record
        .as_deref()
        .ok_or_else(|| Error::Sync(format!("remote record `{}` has no record", row.id)))?;
    let line: Value = serde_json::from_str(text)
        .map_err(|e| Error::Sync(format!("remote record `{}`: {e}", row.id)))?;
    let written_at = format_time_millis(row.written_ms);
    let mark = json!({
        "origin": row.origin,
        "version": row.version,
        "written_at": written_at,
    });
    local::incoming(
        &row.id,
        line,
        mark,
        &written_at,
        RemoteVector {
            model: row.model.clone(),
            recipe: row.recipe,
            text_hash: row.text_hash.clone(),
            embedding: row.embedding.clone(),
        },
    )
}

/// About how many bytes a row takes on the wire.
fn row_bytes(row: &Row) -> u64 {
    let text = row.id.len()
        + row.origin.len()
        + row.version.len()
        + row.record.as_ref().map_or(0, String::len)
        + row.text_hash.as_ref().map_or(0, String::len)
        + 32;
    (text + row.embedding.as_ref().map_or(0, |v| v.len() * 4)) as u64
}

/// What `stats` and `hook doctor` show of sync.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Whether a server is named (`--url` aside).
    pub configured: bool,
    /// Where the URL comes from.
    pub url_from: String,
    /// The server, password hidden.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// This store's origin name.
    pub origin: String,
    /// The shared scopes.
    pub shared: Vec<String>,
    /// Seconds between background syncs, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every_secs: Option<i64>,
    /// When the last sync succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync: Option<String>,
    /// Records changed here since the last sync that the next one pushes
    /// (tombstones included).
    pub pending_pushes: u64,
    /// Records on the server at the last sync.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_records: Option<u64>,
    /// Records pulled from the server that this store holds.
    pub pulled_here: u64,
    /// The last error, if the last sync failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<state::Failure>,
    /// Failures in a row.
    pub failures: u32,
}

/// The sync state of `store`, without reaching the server: the state file,
/// and the pending pushes counted as the next push would find them.
pub fn status(store: &Store) -> Result<Status> {
    let settings = Settings::of(store, &SyncOptions::default())?;
    let state = State::read(store.root());
    let manifest = Manifest::load(&state::dir(store.root()), &settings.scopes.fingerprint())?;
    let held = local::held(store)?;
    let mut pending = 0u64;
    for (id, h) in &held {
        let known = manifest.get(id);
        if known.and_then(Entry::local) == Some(h.hash) {
            continue;
        }
        let synced_before = matches!(known, Some(Entry::Synced { .. }));
        if synced_before || settings.scopes.decides_by_namespace(&h.namespace) != Some(false) {
            pending += 1;
        }
    }
    let gone = manifest
        .iter()
        .filter(|(id, e)| matches!(e, Entry::Synced { .. }) && !held.contains_key(*id))
        .count() as u64;
    let pulled_here = manifest
        .iter()
        .filter(|(id, e)| {
            matches!(e, Entry::Synced { origin, .. } if *origin != settings.origin)
                && held.contains_key(*id)
        })
        .count() as u64;
    Ok(Status {
        configured: settings.url.is_some(),
        url_from: if settings.url.is_some() {
            settings.url_from.to_string()
        } else {
            "the last sync".to_string()
        },
        server: settings
            .url
            .as_deref()
            .map(connect::hide_password)
            .or(state.server.clone()),
        origin: settings.origin,
        shared: settings.scopes.names(),
        every_secs: settings.every_secs,
        last_sync: state.last_sync,
        pending_pushes: pending + gone,
        remote_records: state.remote_records,
        pulled_here,
        last_error: state.last_error,
        failures: state.failures,
    })
}

/// Whether the upkeep should sync now: a server and `[sync] every` are set,
/// and `every` has passed since the last attempt (longer after failures).
/// Reads one small file; never reaches the server.
pub fn due(store: &Store) -> bool {
    let Ok(settings) = Settings::of(store, &SyncOptions::default()) else {
        return false;
    };
    let (Some(_), Some(every)) = (&settings.url, settings.every_secs) else {
        return false;
    };
    State::read(store.root()).next_due_unix(every) <= crate::now_unix()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(source: Value) -> Record {
        crate::record::parse_record(
            source,
            &crate::error::Origin::file("t"),
            &crate::record::ParseOptions::default(),
        )
        .unwrap()
    }

    #[test]
    fn the_mark_does_not_change_the_content_version() {
        let bare = record(json!({"id": "n1", "text": "use PKCE"}));
        let marked = record(json!({"id": "n1", "text": "use PKCE",
            "sync": {"origin": "a@b", "version": "00000000000000ff", "written_at": "2026-01-01T00:00:00.000Z"}}));
        assert_eq!(content_version(&bare), content_version(&marked));
        assert_ne!(
            crate::index::record_hash(&bare),
            crate::index::record_hash(&marked)
        );
        assert_eq!(
            mark_of(&marked),
            Some(("a@b".to_string(), 0xff, 1_767_225_600_000))
        );
        assert_eq!(mark_of(&bare), None);
    }

    #[test]
    fn origin_names_user_and_host() {
        let origin = default_origin();
        assert!(origin.contains('@'), "{origin}");
    }
}
