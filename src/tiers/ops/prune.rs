//! `prune`: reducing archived records to their summary fields once they have
//! been in the archive long enough. A segment, task or note keeps its summary
//! fields (a note the start of its text); a session's messages are replaced
//! by one record standing for them (what they were about, how many, which
//! turns, their ids). Each archive file is rewritten whole (temp file, fsync,
//! rename) under a journal.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

use super::find::session_summaries;
use super::{crash_point, last_copies, recover};
use crate::archive::l3::{reindex_file, L3Index};
use crate::archive::{digest, record_time, Archive, Entry, Journal};
use crate::embed::text::{embedding_text, text_hash};
use crate::error::{Error, Result};
use crate::index::record_hash;
use crate::record::parse::format_time;
use crate::record::{Kind, Record, Tier};
use crate::store::lock::WriterLock;
use crate::store::Store;

/// What `prune` did to one record (or to one range of messages).
#[derive(Debug, Clone, Serialize)]
pub struct Pruned {
    /// The pruned record's id, or the id of the summary that replaces a
    /// session's messages (`pruned-messages:…`).
    pub id: String,
    /// The record's kind (`message` for a summary of messages).
    pub kind: Kind,
    /// What was dropped: the fields left out, a note's text past its first
    /// 500 characters, the embedding, or the count of messages whose raw text went.
    pub dropped: Vec<String>,
}

/// What `prune` did (or, with `dry_run`, would do).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PruneReport {
    /// Nothing was written: the report says what would have been pruned.
    pub dry_run: bool,
    /// Records reduced to summaries (segments, tasks, notes).
    pub records_pruned: usize,
    /// Raw messages dropped, and the summaries that replace them.
    pub messages_dropped: usize,
    /// Summaries written in their place (one per session per archive file).
    pub message_summaries: usize,
    /// Archive files (months) rewritten; empty on a dry run.
    pub files_rewritten: Vec<String>,
    /// Bytes of the archive files with something to prune, before.
    pub bytes_before: u64,
    /// Bytes of the rewritten files after (0 on a dry run).
    pub bytes_after: u64,
    /// Each record pruned and each summary of messages, with what it dropped.
    pub pruned: Vec<Pruned>,
    /// Seconds the prune took.
    pub seconds: f64,
    /// Earliest time an unpruned archived record left becomes due (for `maintain`).
    #[serde(skip)]
    pub next_due: Option<i64>,
}

/// Reduces archived records older than `older_than` seconds (time in the
/// archive) to summary-only.
pub fn prune(
    store: &Store,
    older_than: i64,
    dry_run: bool,
    timeout: Duration,
) -> Result<PruneReport> {
    let lock = store.lock_writer(timeout)?;
    prune_locked(store, &lock, older_than, dry_run)
}

pub(crate) fn prune_locked(
    store: &Store,
    lock: &WriterLock,
    older_than: i64,
    dry_run: bool,
) -> Result<PruneReport> {
    let started = Instant::now();
    if !dry_run {
        recover(store, lock)?;
    }
    let archive = Archive::new(store.root());
    let now = crate::now_unix();
    let cutoff = now - older_than;
    let mut report = PruneReport {
        dry_run,
        ..PruneReport::default()
    };
    let mut summaries: HashMap<(String, String), Vec<Record>> = HashMap::new();
    for file in archive.files()? {
        let current = archive.read_file(&file)?;
        let entries = last_copies(current.entries.into_iter().map(|(_, e)| e), &HashSet::new());
        let due = |e: &Entry| !e.record.pruned && e.archived_at <= cutoff;
        for e in entries.iter().filter(|e| !due(e) && !e.record.pruned) {
            let at = e.archived_at + older_than;
            report.next_due = Some(report.next_due.map_or(at, |d: i64| d.min(at)));
        }
        if !entries.iter().any(due) {
            continue;
        }
        let old_ids: Vec<String> = entries.iter().map(|e| e.record.id.clone()).collect();
        let mut kept = Vec::with_capacity(entries.len());
        let mut messages: BTreeMap<(String, String), Vec<Entry>> = BTreeMap::new();
        for entry in entries {
            if !due(&entry) {
                kept.push(entry);
            } else if entry.record.kind == Kind::Message {
                let session = entry.record.fields.session_id.clone().unwrap_or_default();
                messages
                    .entry((entry.record.namespace.clone(), session))
                    .or_default()
                    .push(entry);
            } else {
                let pruned = prune_entry(entry)?;
                report.records_pruned += 1;
                report.pruned.push(Pruned {
                    id: pruned.record.id.clone(),
                    kind: pruned.record.kind,
                    dropped: pruned.dropped.clone(),
                });
                kept.push(pruned);
            }
        }
        for ((namespace, session), group) in messages {
            report.messages_dropped += group.len();
            let key = (namespace.clone(), session.clone());
            if !summaries.contains_key(&key) {
                let found = if session.is_empty() {
                    Vec::new()
                } else {
                    session_summaries(store, &archive, &namespace, &session)?
                };
                summaries.insert(key.clone(), found);
            }
            let summary = message_summary(&namespace, &session, &group, &summaries[&key], now)?;
            report.message_summaries += 1;
            report.pruned.push(Pruned {
                id: summary.record.id.clone(),
                kind: Kind::Message,
                dropped: summary.dropped.clone(),
            });
            kept.push(summary);
        }
        report.bytes_before += current.bytes;
        if dry_run {
            continue;
        }
        archive.write_journal(&Journal {
            op: "prune".into(),
            ids: old_ids.clone(),
            files: vec![file.clone()],
        })?;
        archive.rewrite(&file, &kept)?;
        crash_point("prune-rewritten");
        report.bytes_after += std::fs::metadata(archive.file_path(&file)).map_or(0, |m| m.len());
        let l3 = L3Index::open_or_create(&archive)?;
        let mut writer = l3.writer()?;
        l3.delete_ids(&writer, &old_ids);
        reindex_file(&archive, &l3, &writer, &file)?;
        writer.commit()?;
        writer.wait_merging_threads()?;
        archive.clear_journal()?;
        report.files_rewritten.push(file);
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Whether a pruned record of `kind` keeps the field `key`; the rest is dropped.
fn is_kept(kind: Kind, key: &str) -> bool {
    const COMMON: [&str; 12] = [
        "kind",
        "namespace",
        "session_id",
        "start_turn",
        "end_turn",
        "compressed_at",
        "completed_at",
        "timestamp",
        "created_at",
        "last_accessed",
        "id",
        "_id",
    ];
    let own: &[&str] = match kind {
        Kind::Segment => &["segment_id", "topic", "compressed_content"],
        Kind::Task => &["task_id", "subject", "key_outcomes"],
        Kind::Note => &["title", "text"],
        Kind::Message => &[],
    };
    COMMON.contains(&key) || own.contains(&key)
}

/// A note keeps this many characters of its text when pruned.
const NOTE_KEEP_CHARS: usize = 500;

/// A segment, task or note reduced to its summary fields.
fn prune_entry(mut entry: Entry) -> Result<Entry> {
    let kind = entry.record.kind;
    let Value::Object(source) = std::mem::take(&mut entry.record.source) else {
        return Err(Error::CorruptRecord {
            id: entry.record.id.clone(),
            message: "archived record is not a JSON object".into(),
        });
    };
    let mut reduced = Map::new();
    let mut dropped = Vec::new();
    for (key, value) in source {
        if is_kept(kind, &key) {
            reduced.insert(key, value);
        } else {
            dropped.push(key);
        }
    }
    if kind == Kind::Note {
        if let Some(Value::String(text)) = reduced.get_mut("text") {
            let chars = text.chars().count();
            if chars > NOTE_KEEP_CHARS {
                *text = text.chars().take(NOTE_KEEP_CHARS).collect::<String>() + "…";
                dropped.push(format!(
                    "text after {NOTE_KEEP_CHARS} of {chars} characters"
                ));
            }
        }
    }
    if entry.embedding.is_some() {
        dropped.push("embedding".into());
    }
    entry.record.source = Value::Object(reduced);
    finish_pruned(entry, dropped)
}

/// Marks an entry pruned, re-derives its fields and hashes.
fn finish_pruned(mut entry: Entry, dropped: Vec<String>) -> Result<Entry> {
    let record = &mut entry.record;
    record.pruned = true;
    record.fields = crate::record::parse::derive_fields(record.kind, &record.source).map_err(
        |(field, message)| Error::CorruptRecord {
            id: record.id.clone(),
            message: format!("pruned record, field `{field}`: {message}"),
        },
    )?;
    entry.hash = record_hash(record);
    entry.text_hash = text_hash(&embedding_text(record));
    entry.embedding = None;
    entry.dropped = dropped;
    Ok(entry)
}

/// One record standing for a session's pruned messages: what they were about
/// (see [`digest`]), how many, how they were written, which turns, what
/// time range, and their ids (so nothing disappears without a trace).
fn message_summary(
    namespace: &str,
    session: &str,
    group: &[Entry],
    session_summaries: &[Record],
    now: i64,
) -> Result<Entry> {
    let times: Vec<i64> = group.iter().map(|e| record_time(&e.record)).collect();
    let turns: Vec<u64> = group
        .iter()
        .filter_map(|e| e.record.fields.start_turn.or(e.record.fields.end_turn))
        .collect();
    let (first, last) = (
        times.iter().min().copied().unwrap_or(0),
        times.iter().max().copied().unwrap_or(0),
    );
    let (start_turn, end_turn) = (turns.iter().min().copied(), turns.iter().max().copied());
    let session_label = if session.is_empty() {
        "no session"
    } else {
        session
    };
    let turn_text = match (start_turn, end_turn) {
        (Some(s), Some(e)) => format!(", turns {s}-{e}"),
        _ => String::new(),
    };
    let records: Vec<&Record> = group.iter().map(|e| &e.record).collect();
    let digest = digest::digest(&records, session_summaries);
    let text = format!(
        "Session {session_label}{turn_text}, {} to {}: the raw text of {} messages ({}) was pruned from the archive; \
         this summary keeps what they were about, their count, time range and ids.\n{}",
        format_time(first),
        format_time(last),
        group.len(),
        digest.written.describe(),
        digest.text,
    );
    let id = format!(
        "pruned-messages:{session_label}:{}-{}",
        start_turn.map_or(first.to_string(), |t| t.to_string()),
        end_turn.map_or(last.to_string(), |t| t.to_string())
    );
    let mut source = serde_json::json!({
        "id": id,
        "kind": "message",
        "role": "summary",
        "text": text,
        "timestamp": format_time(last),
        "files": digest.files,
        "commands": digest.commands,
        "errors": digest.errors,
        "pruned_messages": {
            "count": group.len(),
            "ingested": digest.written.ingested,
            "evicted": digest.written.evicted,
            "added": digest.written.added,
            "first_time": format_time(first),
            "last_time": format_time(last),
            "summarised_from": session_summaries.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
            "ids": group.iter().map(|e| e.record.id.clone()).collect::<Vec<_>>(),
        },
    });
    if !session.is_empty() {
        source["session_id"] = Value::String(session.to_string());
    }
    if let (Some(s), Some(e)) = (start_turn, end_turn) {
        source["start_turn"] = s.into();
        source["end_turn"] = e.into();
    }
    let record = Record {
        id,
        kind: Kind::Message,
        namespace: namespace.to_string(),
        added_at: crate::record::parse::format_time(now),
        tier: Tier::L3,
        pruned: false,
        access_count: 0,
        last_accessed: None,
        context: None,
        context_from: None,
        source,
        fields: Default::default(),
    };
    let entry = Entry {
        record,
        hash: 0,
        text_hash: 0,
        embedding: None,
        archived_at: group.iter().map(|e| e.archived_at).min().unwrap_or(now),
        dropped: Vec::new(),
    };
    finish_pruned(entry, vec![format!("{} messages (raw text)", group.len())])
}
