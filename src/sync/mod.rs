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
//!
//! **Pull scopes.** A machine pulls every record (`[sync] pull = ["*"]`, the
//! default) or the projects it has worked on plus those named (see
//! [`scope::PullScope`]); a scope that grows pulls the rows it skipped
//! before (a backfill, resumable like the pull).
//!
//! **Compaction.** Tombstones leave the server once every machine that pulls
//! has seen them, or after the team's retention (see [`remote`]). A machine
//! whose cursor is behind what was compacted asks the server which of the ids
//! it synced are still there, and deletes those that are not, before it
//! pushes anything (`catch_up.rs`): a record deleted elsewhere never comes
//! back from a machine that was away.
//!
//! This file holds the settings, the report and one run's frame; the run's
//! steps are rooms of their own (`push.rs`, `pull.rs`, `catch_up.rs`), and so
//! is what `stats` shows of sync without reaching the server (`status.rs`).

mod catch_up;
pub mod connect;
pub mod libpq_files;
pub mod local;
pub mod manifest;
mod pull;
mod push;
pub mod remote;
pub mod scope;
pub mod state;
mod status;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::record::parse::parse_time_millis;
use crate::record::Record;
use crate::store::Store;
use local::Loaded;
use manifest::{Entry, Manifest};
use remote::{Remote, Row};
use scope::Scopes;
pub use state::State;
pub use status::{due, status, Status};

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
    /// The pull scopes; `None`: `[sync] pull`.
    pub pull: Option<Vec<String>>,
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
    /// Rows sent (records and tombstones), taken or not: a resumed push
    /// sends only what the server may lack.
    #[serde(default)]
    pub push_sent: u64,
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
    /// Rows received with their payload (records and tombstones; this
    /// store's own rows come without one).
    #[serde(default)]
    pub pull_received: u64,
    /// What this store pulls (`*`, or its projects and namespaces).
    #[serde(default)]
    pub pulled_scope: Vec<String>,
    /// Records pulled from before the cursor because the scope grew.
    #[serde(default)]
    pub backfilled: u64,
    /// Live records on the server outside the pull scope (left remote).
    #[serde(default)]
    pub left_remote: u64,
    /// The server's tables were migrated from this version by this sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrated_from: Option<i32>,
    /// The server had compacted deletes this store had not pulled: it
    /// checked every id it synced against the server.
    #[serde(default)]
    pub caught_up: bool,
    /// Records deleted here because the server no longer holds them (their
    /// delete was compacted while this store was away).
    #[serde(default)]
    pub compacted_deletes_here: u64,
    /// Tombstones this sync compacted on the server.
    #[serde(default)]
    pub compacted: u64,
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
    /// What is pulled (`[sync] pull`, before the projects worked on).
    pub pull: Vec<String>,
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
        let pull = options.pull.clone().unwrap_or_else(|| config.pull.clone());
        // Checked here, so a bad scope is a usage error before any connection.
        scope::PullScope::new(&pull, std::iter::empty())?;
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
            pull,
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
    // A state a newer knowledge-db wrote is left as it is.
    state.check_format(store.root())?;
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
                machine: state.machine.clone(),
                instance: Some(remote.instance().to_string()),
                server: state.server.clone(),
                last_attempt_unix: state.last_attempt_unix,
                ..State::default()
            };
            fresh.save(store.root())?;
            std::mem::swap(state, &mut fresh);
        }
        if state.machine.is_none() {
            state.machine = Some(random_id());
            let mut saved = State::read(store.root());
            saved.machine = state.machine.clone();
            saved.save(store.root())?;
        }
        let manifest = Manifest::load(&dir, &settings.scopes.fingerprint())?;
        let migrated_from = remote.migrated_from();
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
                migrated_from,
                ..SyncReport::default()
            },
            started,
        })
    }

    fn go(mut self, progress: &mut dyn FnMut(&str, u64, u64)) -> Result<SyncReport> {
        // Before anything is pushed: deletes this store missed while the
        // server compacted them.
        self.catch_up(None)?;
        if !self.options.no_push {
            let clock = Instant::now();
            self.push(progress)?;
            self.report.push_seconds = clock.elapsed().as_secs_f64();
        }
        if !self.options.no_pull {
            let clock = Instant::now();
            let since = State::read(self.store.root()).cursor;
            self.pull(progress)?;
            self.report.pull_seconds = clock.elapsed().as_secs_f64();
            // A compaction that ran while this pull read may have taken a
            // tombstone from under it.
            self.catch_up(Some(since))?;
        }
        if let Some(n) = self.remote.compact()? {
            self.report.compacted = n;
        }
        let (records, _) = self.remote.counts()?;
        self.report.remote_records = records;
        self.report.cursor = State::read(self.store.root()).cursor;
        self.report.seconds = self.started.elapsed().as_secs_f64();
        Ok(self.report)
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

fn parse_version(text: &str) -> Result<u64> {
    u64::from_str_radix(text, 16)
        .map_err(|_| Error::Sync(format!("a row's version `{text}` is not 16 hex digits")))
}

/// 32 random hex digits (a machine's id on the server).
fn random_id() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let random = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if random.is_err() {
        // No /dev/urandom: the clock, the process and the host, hashed.
        let seed = format!(
            "{:?}{}{}",
            Instant::now(),
            std::process::id(),
            default_origin()
        );
        let nanos = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
        let a = xxhash_rust::xxh3::xxh3_64(format!("{seed}{nanos}").as_bytes());
        let b = xxhash_rust::xxh3::xxh3_64(format!("{nanos}{seed}").as_bytes());
        bytes[..8].copy_from_slice(&a.to_le_bytes());
        bytes[8..].copy_from_slice(&b.to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

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
