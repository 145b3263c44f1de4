//! Upkeep: the work a store needs that nobody should have to run.
//!
//! Four things fall due as a store is used: records written without a vector
//! (hook summaries, `--embed later`, records added before the model was
//! installed) need one; the access log must be folded into the records'
//! counts; the retention policy archives and prunes; and a tier operation a
//! crash interrupted must be finished. None of it may make a write, a search
//! or a Claude Code hook wait.
//!
//! **Design.** Every process that writes, and a search that sees work
//! waiting, calls [`nudge`]: a few `stat`s, two small file reads (one is
//! `embedding-rules`) and two term counts decide whether anything is due; if
//! so, and no worker is running, it starts one (`knowledge-db upkeep
//! --background`: a detached process of its own, at the lowest CPU and I/O
//! priority) and returns at once. The worker
//! holds `upkeep/worker.lock` for its life (one worker per store; the kernel
//! frees the lock if the worker dies), does what is due in small committed
//! steps, writes its progress to `upkeep/status.json`, and exits when nothing
//! is left. A backlog of `[upkeep] draft_from` records or more is embedded
//! first by the int8 draft model (about twice as fast), so every record is
//! searchable by meaning sooner; the same run then makes the drafts again with
//! the full model (`crate::store::Store::reembed_outdated`). Why not a service: hooks and CLI calls are short-lived processes,
//! the MCP server lives only as long as its client, and nothing may need
//! installing beside the binary; a worker started on demand needs no daemon,
//! service manager or cron, and costs nothing while there is nothing to do.
//!
//! **Crash safety.** The worker is a writer like any other: each step is a
//! commit (or a journalled tier operation) that leaves the old state or the
//! new, never a mix. Killed at any moment, it loses at most the vectors of the
//! batch it was computing; the next nudge starts a worker that resumes. A
//! nudge that comes while a worker is finishing is not lost: the nudger leaves
//! a `wanted` mark before it looks at the lock, and the worker looks for the
//! mark again after it has let the lock go.
//!
//! A worker that failed is not restarted by nudges for [`BACKOFF_SECS`] (the
//! failure is in `stats` and `hook doctor`); `knowledge-db upkeep` runs it in
//! the foreground at any time.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::store::access;
use crate::store::Store;
use crate::tiers::policy::{self, MaintainReport};

/// A failed worker is not started again by nudges for this long.
pub const BACKOFF_SECS: i64 = 600;

/// How long the worker waits for the writer lock at each step: it is never in
/// a hurry, and other writers hold the lock only briefly.
const LOCK_WAIT: Duration = Duration::from_secs(120);

/// The files of the upkeep in a store's `upkeep/` folder.
#[derive(Debug, Clone)]
struct Files {
    dir: PathBuf,
}

impl Files {
    fn new(root: &Path) -> Files {
        Files {
            dir: root.join("upkeep"),
        }
    }

    fn lock(&self) -> PathBuf {
        self.dir.join("worker.lock")
    }

    fn wanted(&self) -> PathBuf {
        self.dir.join("wanted")
    }

    fn status(&self) -> PathBuf {
        self.dir.join("status.json")
    }

    fn ensure(&self) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))
    }

    /// Leaves the mark that tells a finishing worker to look again.
    fn want(&self) -> Result<()> {
        self.ensure()?;
        File::create(self.wanted())
            .map(drop)
            .map_err(|e| Error::io(self.wanted(), e))
    }

    fn is_wanted(&self) -> bool {
        self.wanted().exists()
    }

    fn clear_wanted(&self) {
        let _ = std::fs::remove_file(self.wanted());
    }

    /// The worker lock, taken without waiting; `None` when a worker holds it.
    fn try_lock(&self) -> Result<Option<File>> {
        self.ensure()?;
        crate::store::lock::try_lock_file(&self.lock())
    }

    /// Whether a worker runs now (it holds the lock).
    fn worker_running(&self) -> bool {
        if !self.lock().exists() {
            return false;
        }
        matches!(self.try_lock(), Ok(None))
    }

    fn read_status(&self) -> Status {
        std::fs::read(self.status())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn write_status(&self, status: &Status) -> Result<()> {
        self.ensure()?;
        let path = self.status();
        let bytes = serde_json::to_vec_pretty(status).map_err(|e| Error::io(&path, e.into()))?;
        // A report, rewritten by every step: not worth a disk wait.
        crate::files::replace(&path, &bytes, crate::files::Durability::Atomic)
    }
}

/// Whether background upkeep is on: `KNOWLEDGE_DB_UPKEEP` (`off`/`0`/`false`,
/// `on`/`1`/`true`) if set, else `[upkeep] enabled` of the store's config.
pub fn enabled(store: &Store) -> bool {
    match std::env::var("KNOWLEDGE_DB_UPKEEP").ok().as_deref() {
        Some("off" | "0" | "false" | "no") => false,
        Some("on" | "1" | "true" | "yes") => true,
        _ => store.config().upkeep.enabled,
    }
}

/// Why background upkeep is off, in words a user can act on
/// (`KNOWLEDGE_DB_UPKEEP=off` in the environment, or `[upkeep] enabled =
/// false` in config.toml); `None` when it is on.
pub fn disabled_by(store: &Store) -> Option<String> {
    if enabled(store) {
        return None;
    }
    match std::env::var("KNOWLEDGE_DB_UPKEEP").ok().as_deref() {
        Some(value @ ("off" | "0" | "false" | "no")) => Some(format!(
            "KNOWLEDGE_DB_UPKEEP={value} is set in the environment"
        )),
        _ => Some(format!(
            "`[upkeep] enabled = false` in {}",
            store.root().join("config.toml").display()
        )),
    }
}

/// Work a store has waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Due {
    /// A tier operation was interrupted (its journal is there).
    pub recovery: bool,
    /// Records without a vector, when the model is installed to compute them.
    pub vectors: u64,
    /// The access log has grown past the size the worker folds at.
    pub fold: bool,
    /// The retention policy has something due.
    pub maintenance: bool,
    /// Vector files of committed segments are missing (a writer was stopped
    /// between its commit and writing them).
    pub vector_files: bool,
    /// Vectors were made under older embedding-text rules
    /// (`crate::embed::text::RECIPE`): the texts that changed are embedded again.
    pub outdated_vectors: bool,
    /// A sync with the team's Postgres is due (`[sync] every`; see `crate::sync`).
    #[serde(default)]
    pub sync: bool,
}

impl Due {
    pub(crate) fn any(&self) -> bool {
        self.recovery
            || self.vectors > 0
            || self.fold
            || self.maintenance
            || self.vector_files
            || self.outdated_vectors
            || self.sync
    }
}

/// What is due now. `vectors_waiting`, when the caller knows it (a write that
/// just stored records without a vector, a search that counted them), saves
/// counting.
pub fn due(store: &Store, vectors_waiting: Option<u64>) -> Result<Due> {
    // A count the caller knows is sure when positive; zero may miss records
    // written earlier, so then they are counted.
    let vectors = match vectors_waiting {
        Some(n) if n > 0 => n,
        _ => store.records_without_vector()?,
    };
    Ok(Due {
        recovery: crate::archive::Archive::new(store.root()).has_journal(),
        vectors: if vectors > 0 && model_installed().is_ok() {
            vectors
        } else {
            0
        },
        fold: access::pending_bytes(store.root()) >= access::FOLD_SOON_BYTES,
        maintenance: store.config().retention.maintain_on_write && policy::is_due(store)?,
        vector_files: crate::vectors::missing_files(
            store.root(),
            &store.reader()?.searcher(),
            crate::embed::DIM,
        )? > 0,
        outdated_vectors: store.vectors_outdated()? && model_installed().is_ok(),
        sync: crate::sync::due(store),
    })
}

/// Whether the model's files are where the embedder looks (a few `stat`s;
/// loading it is the worker's job).
pub fn model_installed() -> std::result::Result<(), String> {
    let location = crate::embed::ModelLocation::locate();
    if !location.runtime.is_file() {
        return Err(format!(
            "ONNX Runtime is not installed at {}",
            location.runtime.display()
        ));
    }
    for file in ["model.onnx", "tokenizer.json", "tokenizer_config.json"] {
        let path = location.model_dir.join(file);
        if !path.is_file() {
            return Err(format!("the model's {file} is not at {}", path.display()));
        }
    }
    Ok(())
}

/// What a nudge did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Nudge {
    /// Upkeep is turned off (config or environment).
    Disabled,
    /// Nothing is due.
    Idle,
    /// A worker is running; it will see the work.
    Running,
    /// A worker was started (its process id).
    Started(u32),
    /// The last worker failed recently; no new one until the backoff passes.
    BackingOff,
    /// No worker could be started (why).
    Failed(String),
}

/// Starts a background worker if work is due and none is running; never
/// waits and never fails (a failure is returned for the caller to log).
pub fn nudge(store: &Store, vectors_waiting: Option<u64>) -> Nudge {
    if !enabled(store) {
        return Nudge::Disabled;
    }
    let files = Files::new(store.root());
    // The mark first: a worker that is finishing looks for it after letting
    // the lock go, so this work is never left to nobody. (A mark left when
    // nothing was due costs the next worker one empty round.)
    if let Err(e) = files.want() {
        return Nudge::Failed(e.to_string());
    }
    // A running worker sees the work itself: no need to count it here.
    if files.worker_running() {
        return Nudge::Running;
    }
    match due(store, vectors_waiting) {
        Ok(due) if !due.any() => return Nudge::Idle,
        Ok(_) => {}
        Err(e) => return Nudge::Failed(format!("checking what is due: {e}")),
    }
    let status = files.read_status();
    if status
        .last_error
        .as_ref()
        .is_some_and(|e| crate::now_unix() - e.at_unix < BACKOFF_SECS)
    {
        return Nudge::BackingOff;
    }
    match spawn_worker(store.root()) {
        Ok(pid) => Nudge::Started(pid),
        Err(why) => Nudge::Failed(why),
    }
}

/// The binary to start workers with: this process's own when it is
/// knowledge-db (a program that links the library is not), else
/// `KNOWLEDGE_DB_BIN`.
fn worker_binary() -> std::result::Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("KNOWLEDGE_DB_BIN").filter(|b| !b.is_empty()) {
        return Ok(PathBuf::from(bin));
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot tell this program's path: {e}"))?;
    let name = exe.file_stem().and_then(|n| n.to_str()).unwrap_or_default();
    if name == "knowledge-db" {
        Ok(exe)
    } else {
        Err(format!(
            "{} is not the knowledge-db binary; set KNOWLEDGE_DB_BIN to start upkeep workers",
            exe.display()
        ))
    }
}

/// Starts `knowledge-db --store ROOT upkeep --background`, detached: its own
/// process group (a Ctrl-C in the terminal does not reach it), no terminal
/// streams. A thread reaps it if this process outlives it.
fn spawn_worker(root: &Path) -> std::result::Result<u32, String> {
    use std::os::unix::process::CommandExt;
    let binary = worker_binary()?;
    let mut command = std::process::Command::new(&binary);
    command
        .arg("--store")
        .arg(root)
        .args(["upkeep", "--background"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("starting {}: {e}", binary.display()))?;
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(pid)
}

/// The worker's state, in `upkeep/status.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Status {
    /// Whether a worker runs now (read from the lock, not from the file).
    #[serde(default)]
    pub running: bool,
    /// Process id of the running worker; `None` when none runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// When the current (or last) worker started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// When it last wrote its status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// What the worker is doing: `recovery`, `vector files`, `maintenance`,
    /// `fold`, `vectors`, `re-embedding`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Vectors computed so far by the current (or last) worker.
    #[serde(default)]
    pub embedded: u64,
    /// Records waiting for a vector when it last counted.
    #[serde(default)]
    pub vectors_waiting: u64,
    /// Records whose vector older embedding-text rules made, still to be
    /// embedded again (counted when the worker starts that step).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vectors_outdated: u64,
    /// What the last finished run did (also when it failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<Report>,
    /// Why the last run failed; `None` when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<Failure>,
    /// Why vectors cannot be computed, when the model is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_unavailable: Option<String>,
}

/// A worker's failure.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Failure {
    /// When it failed (RFC 3339).
    pub at: String,
    /// The same moment in Unix seconds.
    pub at_unix: i64,
    /// The error.
    pub message: String,
}

/// What one upkeep run did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Report {
    /// When the run started (RFC 3339).
    pub started_at: String,
    /// When the run ended (RFC 3339).
    pub finished_at: String,
    /// Seconds the run took.
    pub seconds: f64,
    /// An interrupted tier operation was finished.
    pub recovered: bool,
    /// Records whose access counts the fold updated.
    pub access_folded: usize,
    /// Records archived by the retention policy.
    pub archived: usize,
    /// Records pruned by the retention policy.
    pub pruned: usize,
    /// Records that got a vector (drafts included).
    pub embedded: u64,
    /// Of `embedded`, records whose vector is a draft by the int8 model, made
    /// again by the full model later in the same run.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub drafted: u64,
    /// Records still without one (the model is missing, or new ones arrived).
    pub vectors_waiting: u64,
    /// Records whose vector the full model made again: drafts, and vectors
    /// of texts older embedding-text rules chose (`crate::embed::text::RECIPE`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reembedded: u64,
    /// Syncs with the team's Postgres this run made (a failed one counts:
    /// its error is in the sync state, and the next waits longer).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub synced: u64,
    /// Set when `run` found another worker running and did nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub another_worker: bool,
}

/// The upkeep's status: the file, with `running` read from the lock.
pub fn status(store: &Store) -> Status {
    let files = Files::new(store.root());
    let mut status = files.read_status();
    status.running = files.worker_running();
    if !status.running {
        status.pid = None;
        status.step = None;
    }
    status
}

/// How a run loads the model (only when vectors are due), and reports progress.
pub struct RunOptions<'a> {
    /// Lower this process's CPU and I/O priority first (the background worker).
    pub background: bool,
    /// Loads the full model, only when vectors are due; the error says why it
    /// cannot (kept as the status's `model_unavailable`).
    pub load_embedder: &'a mut dyn FnMut() -> std::result::Result<Box<dyn Embedder>, String>,
    /// Loads the draft model (see `crate::embed::Embedder::is_draft`) for a
    /// backlog of at least `[upkeep] draft_from` records; when it cannot be
    /// loaded, the full model embeds the backlog.
    pub load_draft_embedder: &'a mut dyn FnMut() -> std::result::Result<Box<dyn Embedder>, String>,
    /// `(step, done, total)` as work proceeds.
    pub progress: &'a mut dyn FnMut(&str, u64, u64),
}

/// Does everything due, step by step, until nothing is; then returns. Only
/// one run per store at a time: if a worker holds the lock, returns at once
/// with `another_worker` set.
pub fn run(store: &Store, options: RunOptions<'_>) -> Result<Report> {
    let files = Files::new(store.root());
    let started = Instant::now();
    let mut report = Report {
        started_at: crate::now_rfc3339(),
        ..Report::default()
    };
    if options.background && !normal_priority_asked() {
        lower_priority();
    }
    let mut worker = Worker {
        store,
        files: files.clone(),
        status: files.read_status(),
        embedder: None,
        options,
    };
    let mut first = true;
    loop {
        let Some(lock) = take_worker_lock(&files)? else {
            report.another_worker = first;
            break;
        };
        first = false;
        worker.status.running = true;
        worker.status.pid = Some(std::process::id());
        worker.status.started_at = Some(report.started_at.clone());
        worker.status.embedded = 0;
        let result = worker.until_idle(&mut report);
        report.finished_at = crate::now_rfc3339();
        report.seconds = started.elapsed().as_secs_f64();
        worker.finish(&report, result.as_ref().err());
        drop(lock);
        result?;
        // A nudge that came while this worker was finishing left the mark.
        if !files.is_wanted() {
            break;
        }
    }
    Ok(report)
}

/// Which records a vector pass embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Records stored without a vector, by the full model.
    Missing,
    /// Records stored without a vector, by the draft model: a large backlog.
    Draft,
    /// Drafts, and records whose vector older embedding-text rules made.
    Outdated,
}

/// One worker's state while it runs.
struct Worker<'a, 'o> {
    store: &'a Store,
    files: Files,
    status: Status,
    embedder: Option<Box<dyn Embedder>>,
    options: RunOptions<'o>,
}

impl Worker<'_, '_> {
    /// Rounds of every step until a round finds nothing due, or does nothing
    /// (a policy due again at once, as with `archive_idle_for = "0s"`, must
    /// not keep a worker busy).
    fn until_idle(&mut self, report: &mut Report) -> Result<()> {
        loop {
            self.files.clear_wanted();
            let due = due(self.store, None)?;
            self.status.model_unavailable = model_installed().err();
            report.vectors_waiting = self.store.records_without_vector()?;
            self.status.vectors_waiting = report.vectors_waiting;
            if !due.any() && access::pending_bytes(self.store.root()) == 0 {
                return Ok(());
            }
            let before = report.clone();
            if due.recovery {
                self.step("recovery")?;
                let lock = self.store.lock_writer(LOCK_WAIT)?;
                report.recovered |= crate::tiers::ops::recover(self.store, &lock)?;
            }
            if due.vector_files {
                // What a writer stopped after its commit did not write.
                self.step("vector files")?;
                self.store.index_vectors(LOCK_WAIT)?;
                report.recovered = true;
            }
            // The policy first (it may archive records that then need no
            // vector), then the fold, then vectors.
            if due.maintenance {
                self.step("maintenance")?;
                let done = policy::maintain(self.store, false, LOCK_WAIT)?;
                report.access_folded += done.access_folded;
                count_maintained(report, &done);
            }
            if access::pending_bytes(self.store.root()) > 0 {
                self.step("fold")?;
                let lock = self.store.lock_writer(LOCK_WAIT)?;
                report.access_folded += access::fold(self.store, &lock)?;
            }
            if due.vectors > 0 {
                let draft_from = self.store.config().upkeep.draft_from;
                let pass = if draft_from > 0 && due.vectors >= draft_from {
                    Pass::Draft
                } else {
                    Pass::Missing
                };
                self.vectors(pass, report)?;
            }
            // Sync after the vectors (records go out with theirs); what it
            // pulls without a vector is embedded by the next round of this run. A failure is the sync state's (it backs off),
            // never the run's: vectors and retention go on. Once per run:
            // `every` is the least time between syncs, not a loop.
            if due.sync && report.synced == 0 {
                self.step("sync")?;
                let options = crate::sync::SyncOptions {
                    lock_timeout: LOCK_WAIT,
                    ..Default::default()
                };
                let progress = &mut self.options.progress;
                let _ = crate::sync::sync(self.store, &options, &mut |step, done, total| {
                    progress(step, done, total)
                });
                report.synced += 1;
            }
            // Records without any vector first: an outdated vector still works.
            if due.outdated_vectors {
                self.vectors(Pass::Outdated, report)?;
            }
            let did = (report.recovered && !before.recovered)
                || report.access_folded > before.access_folded
                || report.archived + report.pruned > before.archived + before.pruned
                || report.embedded > before.embedded
                || report.reembedded > before.reembedded
                || report.synced > before.synced;
            if !did {
                return Ok(());
            }
        }
    }

    /// Computes vectors for every record waiting (`Pass::Missing`, or
    /// `Pass::Draft` with the draft model), or makes again with the full model
    /// drafts and vectors older embedding-text rules made (`Pass::Outdated`), a
    /// committed batch at a time. A model that is installed but cannot be
    /// loaded fails the run (nudges then back off instead of starting a worker
    /// at every write); a draft model that cannot be loaded leaves the backlog
    /// to the full one.
    fn vectors(&mut self, pass: Pass, report: &mut Report) -> Result<()> {
        let step = match pass {
            Pass::Missing => "vectors",
            Pass::Draft => "draft vectors",
            Pass::Outdated => "re-embedding",
        };
        self.step(step)?;
        let mut draft = match pass {
            Pass::Draft => (self.options.load_draft_embedder)().ok(),
            _ => None,
        };
        if draft.is_none() {
            self.load_embedder()?;
        }
        let store = self.store;
        let Some(embedder) = draft.as_mut().or(self.embedder.as_mut()) else {
            return Ok(());
        };
        let batch = store.config().upkeep.embed_batch.max(1);
        let (files, status, progress) = (&self.files, &mut self.status, &mut self.options.progress);
        let embedded_before = report.embedded;
        let mut last_write = Instant::now();
        let mut on_progress = |done: usize, total: usize| {
            let (done, total) = (done as u64, total as u64);
            match pass {
                Pass::Missing | Pass::Draft => {
                    status.embedded = embedded_before + done;
                    status.vectors_waiting = total.saturating_sub(done);
                    progress(step, status.embedded, embedded_before + total);
                }
                Pass::Outdated => {
                    status.vectors_outdated = total.saturating_sub(done);
                    progress(step, done, total);
                }
            }
            // The status is for people and `stats`: a write a second is plenty.
            if last_write.elapsed() >= Duration::from_secs(1) || done == total {
                status.updated_at = Some(crate::now_rfc3339());
                let _ = files.write_status(status);
                last_write = Instant::now();
            }
        };
        let embedder = embedder.as_mut();
        let drafting = embedder.is_draft();
        let done = match pass {
            Pass::Missing | Pass::Draft => {
                store.embed_missing(embedder, batch, LOCK_WAIT, &mut on_progress)?
            }
            Pass::Outdated => {
                store.reembed_outdated(embedder, batch, LOCK_WAIT, &mut on_progress)?
            }
        } as u64;
        match pass {
            Pass::Missing | Pass::Draft => report.embedded += done,
            Pass::Outdated => report.reembedded += done,
        }
        if drafting {
            report.drafted += done;
        }
        Ok(())
    }

    /// Loads the full model once per worker. A model that is installed but
    /// cannot be loaded fails the run.
    fn load_embedder(&mut self) -> Result<()> {
        if self.embedder.is_none() {
            let embedder = (self.options.load_embedder)().map_err(|why| {
                self.status.model_unavailable = Some(why.clone());
                Error::Model(why)
            })?;
            self.embedder = Some(embedder);
        }
        Ok(())
    }

    fn step(&mut self, name: &str) -> Result<()> {
        (self.options.progress)(name, 0, 0);
        self.status.step = Some(name.to_string());
        self.status.updated_at = Some(crate::now_rfc3339());
        self.files.write_status(&self.status)
    }

    /// Records how the run ended.
    fn finish(&mut self, report: &Report, error: Option<&Error>) {
        self.status.running = false;
        self.status.pid = None;
        self.status.step = None;
        self.status.updated_at = Some(crate::now_rfc3339());
        self.status.last_run = Some(report.clone());
        self.status.last_error = error.map(|e| Failure {
            at: crate::now_rfc3339(),
            at_unix: crate::now_unix(),
            message: e.to_string(),
        });
        let _ = self.files.write_status(&self.status);
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn count_maintained(report: &mut Report, done: &MaintainReport) {
    report.archived += done.archived.as_ref().map_or(0, |a| a.records);
    report.pruned += done.pruned.as_ref().map_or(0, |p| p.records_pruned);
}

/// The worker lock, waiting a moment when it is held: `upkeep --status`,
/// `stats` and a nudge look at the lock by taking it for an instant, and a
/// worker starting in that instant must not take it for another worker and
/// leave its work to nobody. A real worker holds the lock for its whole run,
/// far longer than this wait.
fn take_worker_lock(files: &Files) -> Result<Option<File>> {
    const WAIT: Duration = Duration::from_millis(500);
    let started = Instant::now();
    loop {
        if let Some(lock) = files.try_lock()? {
            return Ok(Some(lock));
        }
        if started.elapsed() >= WAIT {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// `KNOWLEDGE_DB_UPKEEP_PRIORITY=normal`: the background worker keeps the
/// priority it was started with. For a machine whose every core is always
/// busy, where a worker at the lowest priority gets no CPU and its work
/// never gets done (the tests that wait for a worker set it: on a CI machine
/// at load 10-15 a nice-19 worker waited minutes for its first second).
fn normal_priority_asked() -> bool {
    std::env::var("KNOWLEDGE_DB_UPKEEP_PRIORITY").is_ok_and(|v| v == "normal")
}

/// The lowest CPU priority (nice 19) and the idle I/O class: the worker takes
/// only what nobody else wants.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: both calls only change this process's scheduling attributes.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
        const IOPRIO_WHO_PROCESS: libc::c_long = 1;
        const IOPRIO_CLASS_IDLE: libc::c_long = 3;
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0 as libc::c_long,
            IOPRIO_CLASS_IDLE << 13,
        );
    }
}

/// What a read (a search) calls after it answered: starts the upkeep only on
/// signs that cost two `stat`s (vectors the search saw missing, a large
/// access log, an interrupted operation), so searches stay as fast as before.
pub fn after_read(store: &Store, vectors_waiting: Option<u64>) {
    if !enabled(store) {
        return;
    }
    let signs = vectors_waiting.is_some_and(|n| n > 0)
        || access::pending_bytes(store.root()) >= access::FOLD_SOON_BYTES
        || crate::archive::Archive::new(store.root()).has_journal()
        || crate::sync::due(store);
    if signs {
        nudge(store, vectors_waiting);
    }
}

/// What a write calls after it succeeded: start the upkeep if work is due; or,
/// with upkeep off, apply the retention policy here as before (`[retention]
/// maintain_on_write`). Returns a line for stderr when something is worth
/// saying; never fails the write.
pub fn after_write(store: &Store, vectors_waiting: Option<u64>) -> Option<String> {
    if enabled(store) {
        return match nudge(store, vectors_waiting) {
            Nudge::Failed(why) => Some(format!("warning: background upkeep not started: {why}")),
            _ => None,
        };
    }
    match policy::maintain_after_write(store) {
        Ok(Some(report)) => {
            let archived = report.archived.as_ref().map_or(0, |a| a.records);
            let pruned = report.pruned.as_ref().map_or(0, |p| p.records_pruned);
            (archived + pruned > 0).then(|| {
                format!(
                    "maintain: retention policy archived {archived} and pruned {pruned} record(s) \
                     (config.toml [retention]; `knowledge-db maintain --json` for details)"
                )
            })
        }
        Ok(None) => None,
        Err(e) => Some(format!(
            "warning: the write succeeded, but the retention check failed: {e} \
             (run `knowledge-db maintain` to retry)"
        )),
    }
}
