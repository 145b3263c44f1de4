//! The retention policy and `maintain`: archive what went cold, prune what aged.
//!
//! `config.toml`'s `[retention]` says when (defaults: archive L2 records older
//! than 7 days that nobody read for 14 days; prune archived records 30 days after
//! archiving). `maintain` applies it, and is built to be called often (a cron
//! line, a hook after every session): `archive/maintain.json` remembers the
//! earliest moment anything can become due, so a call when nothing is due reads
//! that small file, looks at the access log's size and returns.
//!
//! Why the saved moment is safe: a record becomes due for archiving at
//! `max(own time + older_than, last access + idle_for)`, and its last access is
//! never before it was added, so a record added after a run is never due before
//! that run's time + `idle_for`. Reads only postpone. So the next moment is the
//! minimum over the records present at the run, capped at run time + `idle_for`.
//! Pruning is due `prune_after` after the earliest unpruned archiving, which each
//! `archive` lowers when it adds records.

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::ops::{archive_locked, prune_locked, recover, ArchiveReport, PruneReport, Selection};
use crate::archive::Archive;
use crate::error::{Error, Result};
use crate::record::parse::format_time;
use crate::store::access;
use crate::store::Store;

/// The access log is folded into the records once it holds this much, even when
/// nothing else is due.
const FOLD_BYTES: u64 = 1024 * 1024;

/// The saved schedule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct State {
    /// The retention (seconds: older_than, idle_for, prune_after) it was computed for.
    policy: [i64; 3],
    /// Earliest moment an L2 record can be due for archiving (Unix seconds).
    next_archive: i64,
    /// Earliest moment an archived record can be due for pruning; none if none can.
    next_prune: Option<i64>,
    last_run: i64,
}

fn state_path(store: &Store) -> PathBuf {
    Archive::new(store.root()).dir().join("maintain.json")
}

fn read_state(store: &Store) -> Option<State> {
    fs::read(state_path(store))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
}

fn write_state(store: &Store, state: &State) -> Result<()> {
    let path = state_path(store);
    let bytes = serde_json::to_vec_pretty(state).map_err(|e| Error::io(&path, e.into()))?;
    // Losing it only costs one full (correct) run.
    crate::files::replace(&path, &bytes, crate::files::Durability::Atomic)
}

fn policy(store: &Store) -> Result<[i64; 3]> {
    store
        .config()
        .retention
        .seconds()
        .map_err(|message| Error::Config {
            path: store.root().join("config.toml"),
            message,
        })
}

/// Called by `archive` after records were archived at `now`: pruning becomes due
/// no later than `now + prune_after`.
pub fn note_archived(store: &Store, now: i64) -> Result<()> {
    let policy = policy(store)?;
    let mut state = read_state(store).unwrap_or(State {
        policy,
        ..State::default()
    });
    let due = now + policy[2];
    state.next_prune = Some(state.next_prune.map_or(due, |t| t.min(due)));
    write_state(store, &state)
}

/// What `maintain` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MaintainReport {
    /// Whether anything was due (false: the call only read the schedule).
    pub due: bool,
    /// Records whose access counts were updated from the access log.
    pub access_folded: usize,
    /// The archive run, when it was due.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived: Option<ArchiveReport>,
    /// The prune run, when it was due.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pruned: Option<PruneReport>,
    /// When the archive condition is checked next (RFC 3339); empty when
    /// nothing was due and no schedule was kept yet.
    pub next_archive_check: String,
    /// When the prune condition is checked next (RFC 3339); `None` while
    /// nothing archived waits for pruning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_prune_check: Option<String>,
    /// Seconds the call took.
    pub seconds: f64,
}

/// The check every successful write runs (`[retention] maintain_on_write`, on
/// by default): applies the policy when due, else costs one small file read.
/// It never waits for the writer lock: when another writer holds it, that
/// writer's own check (or the next write's) runs the policy instead. Returns
/// the report only when something was due.
pub fn maintain_after_write(store: &Store) -> Result<Option<MaintainReport>> {
    if !store.config().retention.maintain_on_write {
        return Ok(None);
    }
    match maintain(store, false, Duration::ZERO) {
        Ok(report) => Ok(report.due.then_some(report)),
        Err(Error::LockTimeout { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What of the policy is due now: (archive, prune, fold).
fn due_now(store: &Store, state: Option<&State>, now: i64) -> (bool, bool, bool) {
    let archive_due = state.is_none_or(|s| now >= s.next_archive);
    let prune_due = state.is_none_or(|s| s.next_prune.is_some_and(|t| now >= t));
    let fold_due = access::pending_bytes(store.root()) >= FOLD_BYTES;
    (archive_due, prune_due, fold_due)
}

/// Whether [`maintain`] would do anything now: the cheap check (one small
/// file read) that the background upkeep makes before it starts.
pub fn is_due(store: &Store) -> Result<bool> {
    let policy = policy(store)?;
    let state = read_state(store).filter(|s| s.policy == policy);
    let (archive, prune, fold) = due_now(store, state.as_ref(), crate::now_unix());
    Ok(archive || prune || fold)
}

/// Applies the retention policy if anything is due (or `force`).
pub fn maintain(store: &Store, force: bool, timeout: Duration) -> Result<MaintainReport> {
    let started = Instant::now();
    let policy = policy(store)?;
    let [older_than, idle_for, prune_after] = policy;
    let now = crate::now_unix();
    let state = read_state(store).filter(|s| s.policy == policy);
    let (archive_due, prune_due, fold_due) = due_now(store, state.as_ref(), now);
    let (archive_due, prune_due) = (force || archive_due, force || prune_due);
    let mut report = MaintainReport::default();
    if !archive_due && !prune_due && !fold_due {
        if let Some(s) = &state {
            report.next_archive_check = format_time(s.next_archive);
            report.next_prune_check = s.next_prune.map(format_time);
        }
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    report.due = true;
    let lock = store.lock_writer(timeout)?;
    recover(store, &lock)?;
    report.access_folded = access::fold(store, &lock)?;
    let mut next_archive = state.as_ref().map_or(0, |s| s.next_archive);
    if archive_due {
        let selection = Selection {
            older_than: Some(older_than),
            idle_for: Some(idle_for),
            ..Selection::default()
        };
        let archived = archive_locked(store, &lock, &selection, false)?;
        next_archive = archived.next_due.unwrap_or(i64::MAX).min(now + idle_for);
        report.archived = Some(archived);
    }
    // `archive` may have lowered the prune moment; read it back.
    let mut next_prune = read_state(store)
        .filter(|s| s.policy == policy)
        .and_then(|s| s.next_prune);
    if prune_due {
        let pruned = prune_locked(store, &lock, prune_after, false)?;
        next_prune = pruned.next_due;
        report.pruned = Some(pruned);
    }
    let state = State {
        policy,
        next_archive,
        next_prune,
        last_run: now,
    };
    write_state(store, &state)?;
    report.next_archive_check = format_time(state.next_archive);
    report.next_prune_check = state.next_prune.map(format_time);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
