//! Adding or replacing records by id, as one atomic commit: size and scope
//! checks, the last version of each id, tombstones, the project a session's
//! records inherit, which records changed, and the access history a new
//! version keeps.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tantivy::{Searcher, Term};

use super::{browse, limits, scope, tombstones, AddPhases, AddReport, IdLookup, Store};
use crate::embed::Embedder;
use crate::error::Result;
use crate::index::{record_hash, IndexFields};
use crate::privacy::Findings;
use crate::record::Record;

impl Store {
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
        let redacted = crate::privacy::redact_records(self.redactor(), &mut records);
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
