//! Pull: every row of the pull scope written since this machine's cursor
//! comes in. Records are written with the vectors the server holds (no model
//! pass when the model and the embedded text match), tombstones delete, and
//! each applied row is noted in the manifest so it is not pushed back as a
//! local change. The server filters by scope: rows of projects this machine
//! does not pull never cross the wire.

use serde_json::{json, Value};

use std::collections::BTreeMap;

use super::local::{self, Incoming, RemoteVector};
use super::manifest::Entry;
use super::remote::{Filter, Row};
use super::scope::PullScope;
use super::state::{Backfill, ScopeSummary};
use super::{content_version, mark_of, parse_version, row_bytes, written_ms, Run, State};
use crate::error::{Error, Result};
use crate::record::parse::format_time_millis;

impl Run<'_> {
    /// Pulls every row of the pull scope past the cursor, a batch at a time;
    /// first, when the scope grew, the rows of what it added from before the
    /// cursor. Then notes on the server how far this machine has pulled.
    pub(super) fn pull(&mut self, progress: &mut dyn FnMut(&str, u64, u64)) -> Result<()> {
        let mut state = State::read(self.store.root());
        let scope = self.pull_scope()?;
        let before = PullScope::from_items(state.pulled_scope.as_deref());
        if state.cursor > 0 {
            if let Some(added) = scope.added_since(&before) {
                self.backfill(&mut state, &added, progress)?;
            }
        }
        state.backfill = None;
        state.pulled_scope = Some(scope.items());
        state.save(self.store.root())?;
        self.report.pulled_scope = scope.items();

        let filter = filter_of(&scope, Some(self.settings.origin.clone()), true);
        let (_, highest) = self.remote.counts()?;
        let start = state.cursor;
        let total = (highest - start).max(0) as u64;
        progress("pull", 0, total);
        loop {
            let rows = self.remote.pull(
                state.cursor,
                None,
                self.settings.batch as i64,
                &self.settings.origin,
                &filter,
            )?;
            let Some(last) = rows.last().map(|r| r.seq) else {
                break;
            };
            let rows = self.complete_own(rows)?;
            self.count_received(&rows);
            self.apply(rows, true)?;
            state.cursor = last;
            state.save(self.store.root())?;
            progress("pull", (last - start).max(0) as u64, total);
        }
        // Every row numbered up to `highest` had committed when it was read
        // (numbers commit in order, see `remote`), so the last, empty read
        // saw them all: those the scope left out are passed for good. A
        // scoped machine's cursor keeps up with the server's, and does not
        // hold compaction back.
        if highest > state.cursor {
            state.cursor = highest;
            state.save(self.store.root())?;
        }
        if let Some(machine) = state.machine.clone() {
            self.remote
                .register(&machine, &self.settings.origin, state.cursor)?;
        }
        self.summarise(&mut state, &scope)?;
        state.save(self.store.root())
    }

    /// The pull scope in force: `[sync] pull` and, unless it is `*`, the
    /// projects of this store's own records.
    fn pull_scope(&self) -> Result<PullScope> {
        let everything = PullScope::new(&self.settings.pull, std::iter::empty())?;
        if everything.all {
            return Ok(everything);
        }
        let held = local::held(self.store)?;
        PullScope::new(&self.settings.pull, local::worked_projects(&held))
    }

    /// Pulls the rows `added` takes up to the cursor (they were skipped while
    /// the scope was narrower), resuming an interrupted backfill of the same
    /// scope.
    fn backfill(
        &mut self,
        state: &mut State,
        added: &PullScope,
        progress: &mut dyn FnMut(&str, u64, u64),
    ) -> Result<()> {
        let items = added.items();
        let mut job = match state.backfill.take() {
            Some(job) if job.scope == items && job.until <= state.cursor => job,
            _ => Backfill {
                scope: items,
                cursor: 0,
                until: state.cursor,
            },
        };
        state.backfill = Some(job.clone());
        state.save(self.store.root())?;
        // Not this origin's rows, nor tombstones: the narrower scope took those.
        let filter = filter_of(added, None, false);
        progress("pull (a wider scope)", 0, job.until.max(0) as u64);
        loop {
            let rows = self.remote.pull(
                job.cursor,
                Some(job.until),
                self.settings.batch as i64,
                &self.settings.origin,
                &filter,
            )?;
            let Some(last) = rows.last().map(|r| r.seq) else {
                break;
            };
            let rows = self.complete_own(rows)?;
            self.count_received(&rows);
            let before = self.report.pulled;
            self.apply(rows, true)?;
            self.report.backfilled += self.report.pulled - before;
            job.cursor = last;
            state.backfill = Some(job.clone());
            state.save(self.store.root())?;
            progress(
                "pull (a wider scope)",
                last.max(0) as u64,
                job.until.max(0) as u64,
            );
        }
        Ok(())
    }

    fn count_received(&mut self, rows: &[Row]) {
        self.report.pull_bytes += rows.iter().map(row_bytes).sum::<u64>();
        self.report.pull_received += rows
            .iter()
            .filter(|r| r.deleted || r.record.is_some())
            .count() as u64;
    }

    /// What the server holds, pulled here or left remote (for `sync
    /// --status`): counted by project on the server when the scope is not
    /// everything.
    fn summarise(&mut self, state: &mut State, scope: &PullScope) -> Result<()> {
        if scope.all {
            let (records, _) = self.remote.counts()?;
            state.scopes = Some(ScopeSummary {
                pulled: vec![("*".to_string(), records)],
                remote: Vec::new(),
            });
            self.report.left_remote = 0;
            return Ok(());
        }
        let mut pulled: BTreeMap<String, u64> = BTreeMap::new();
        let mut remote: BTreeMap<String, u64> = BTreeMap::new();
        for (project, namespace, n) in self.remote.scope_counts()? {
            let namespace = namespace.unwrap_or_default();
            let project = project.filter(|p| !p.is_empty());
            let covered = scope.covers(project.as_deref(), &namespace);
            let name = match &project {
                Some(p) if !scope.namespaces.contains(&namespace) => format!("project:{p}"),
                _ => format!("namespace:{namespace}"),
            };
            *if covered { &mut pulled } else { &mut remote }
                .entry(name)
                .or_default() += n;
        }
        let largest_first = |m: BTreeMap<String, u64>| {
            let mut v: Vec<(String, u64)> = m.into_iter().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v
        };
        let summary = ScopeSummary {
            pulled: largest_first(pulled),
            remote: largest_first(remote),
        };
        self.report.left_remote = summary.totals().1;
        state.scopes = Some(summary);
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
    pub(super) fn apply(&mut self, rows: Vec<Row>, pulled: bool) -> Result<()> {
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
}

/// The rows a pull scope takes (and, when asked, this origin's own rows
/// and every tombstone).
fn filter_of(scope: &PullScope, origin: Option<String>, tombstones: bool) -> Filter {
    Filter {
        all: scope.all,
        projects: scope.projects(),
        namespaces: scope.namespaces.iter().cloned().collect(),
        origin,
        tombstones,
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
