//! The compression queue of a session: `{session_id}_pending.json`, in the
//! design's format, in `[hooks] queue_dir` (default `<store>/hooks/context_queue/`).
//!
//! ```json
//! {"pending": [{"segment_id", "topic", "start_turn", "end_turn", "message_count",
//!               "turns_since_mention", "queued_at_turn", "timestamp", …}],
//!  "compressed": [{"segment_id", "topic", "compressed_at_turn", "original_tokens",
//!                  "compressed_tokens", "compression_ratio", "storage_location",
//!                  "timestamp", …}],
//!  "last_check_turn": 60}
//! ```
//!
//! A cold item whose rule-based summary the hook stored goes to `pending`,
//! keyed by its record id (`segment_id`): the agent is asked to write its own
//! segment under that id. When such a segment arrives — through `add`, MCP
//! `memory_add` or the skill, all of which call [`segments_arrived`] — the entry
//! moves to `compressed` with its token figures. Nothing else moves it: a
//! compaction does not compress anything. Turns are assistant turns, the hooks'
//! clock; token figures are the conservative estimate of
//! [`crate::context::tokens::estimate`] on both sides, so the ratio is fair.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::cold::{ratio, ColdItem};
use super::session::SessionState;
use super::{read_json, write_json_atomically, HookFiles, HookSettings};
use crate::context::tokens::estimate;
use crate::embed::Embedder;
use crate::error::Result;
use crate::load::{add_batch, AddSummary, ReadBatch};
use crate::record::{Kind, Record};
use crate::store::Store;

/// A queued item: what to compress, and how big it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingEntry {
    /// The id to save the agent's segment under (the rule-based summary's id).
    pub segment_id: String,
    /// The item's title (the task's subject or the segment's topic).
    pub topic: String,
    /// The assistant turn the item starts at.
    pub start_turn: u64,
    /// The assistant turn the item ends at.
    pub end_turn: u64,
    /// Transcript messages in the item.
    pub message_count: u64,
    /// Turns since the item ended when it was queued (none of the last
    /// `recent_turns` turns mentioned it).
    pub turns_since_mention: u64,
    /// The assistant turn it was queued at.
    pub queued_at_turn: u64,
    /// When it was queued (RFC 3339).
    pub timestamp: String,
    /// `segment` or `task`: what the rule-based summary is.
    #[serde(default)]
    pub kind: String,
    /// Estimated tokens of the item's messages.
    #[serde(default)]
    pub original_tokens: u64,
}

/// An item the agent compressed: its segment arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompressedEntry {
    /// The queued id the agent's segment arrived under.
    pub segment_id: String,
    /// The segment's topic, else the queued item's title.
    pub topic: String,
    /// The assistant turn the segment arrived at (the queueing turn when unknown).
    pub compressed_at_turn: u64,
    /// Estimated tokens of the item's messages (from the pending entry).
    pub original_tokens: u64,
    /// Estimated tokens of the agent's segment (topic, content, decisions, files).
    pub compressed_tokens: u64,
    /// `original_tokens / compressed_tokens`, one decimal; 0 when the segment is empty.
    pub compression_ratio: f64,
    /// Where the segment is: `<store folder>#<record id>`.
    pub storage_location: String,
    /// When the segment arrived (RFC 3339).
    pub timestamp: String,
    /// The assistant turn the item started at (0 in entries of older files).
    #[serde(default)]
    pub start_turn: u64,
    /// The assistant turn the item ended at (0 in entries of older files).
    #[serde(default)]
    pub end_turn: u64,
}

/// The queue file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    /// The session this queue belongs to (set on load from the caller's id).
    #[serde(default)]
    pub session_id: String,
    /// Items queued and waiting for the agent's segment.
    #[serde(default)]
    pub pending: Vec<PendingEntry>,
    /// Items whose segment arrived.
    #[serde(default)]
    pub compressed: Vec<CompressedEntry>,
    /// The assistant turn of the last cold check.
    #[serde(default)]
    pub last_check_turn: u64,
    /// The turn the agent was last asked to compress the pending items.
    #[serde(default)]
    pub last_reminder_turn: Option<u64>,
}

/// `~` or `~/…` at the start of a configured path is the home folder.
pub fn expand_home(path: &str) -> PathBuf {
    let home = || {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(dirs::home_dir)
    };
    match path.strip_prefix('~') {
        Some("") => home().unwrap_or_else(|| PathBuf::from(path)),
        Some(rest) if rest.starts_with('/') => match home() {
            Some(h) => h.join(&rest[1..]),
            None => PathBuf::from(path),
        },
        _ => PathBuf::from(path),
    }
}

/// The folder of the queue files: `[hooks] queue_dir`, else `<store>/hooks/context_queue`.
pub fn queue_dir(store_root: &Path, settings: &HookSettings) -> PathBuf {
    match settings
        .queue_dir
        .as_deref()
        .filter(|d| !d.trim().is_empty())
    {
        Some(dir) => expand_home(dir.trim()),
        None => HookFiles::new(store_root).dir.join("context_queue"),
    }
}

/// The queue file of a session.
pub fn queue_path(store_root: &Path, settings: &HookSettings, session_id: &str) -> PathBuf {
    queue_dir(store_root, settings).join(format!("{}_pending.json", HookFiles::stem(session_id)))
}

/// Every session's queue in the queue folder, the most recently changed
/// first, at most `limit` of them (each file is read whole, so the caller
/// bounds the work), and how many queue files there are. A file that cannot
/// be read is skipped: one damaged queue must not hide the others.
pub fn all_queues(
    store_root: &Path,
    settings: &HookSettings,
    limit: usize,
) -> Result<(Vec<Queue>, usize)> {
    let dir = queue_dir(store_root, settings);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(crate::error::Error::io(&dir, e)),
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf, String)> = entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            let stem = name.strip_suffix("_pending.json")?.to_string();
            let modified = entry.metadata().ok()?.modified().ok()?;
            Some((modified, entry.path(), stem))
        })
        .collect();
    let total = files.len();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.2.cmp(&b.2)));
    let mut queues = Vec::new();
    for (_, path, stem) in files.into_iter().take(limit) {
        let Ok(Some(mut queue)) = super::read_json::<Queue>(&path) else {
            continue;
        };
        if queue.session_id.is_empty() {
            queue.session_id = stem;
        }
        queues.push(queue);
    }
    Ok((queues, total))
}

impl Queue {
    /// The session's queue, or an empty one. A queue file of the first layout
    /// (`<store>/hooks/<session>.queue.json`, items keyed `id`, conversation
    /// turns, moved to `compressed` at a compaction) is not carried over: its
    /// items are found again from the transcript with the right turns, and it
    /// is removed when the new queue is first saved.
    pub fn load(path: &Path, session_id: &str) -> Result<Queue> {
        let mut queue: Queue = read_json(path)?.unwrap_or_default();
        queue.session_id = session_id.to_string();
        Ok(queue)
    }

    /// Writes the queue file atomically and durably.
    pub fn save(&self, path: &Path) -> Result<()> {
        write_json_atomically(path, self)
    }

    /// Appends items not queued before (pending or compressed); returns how
    /// many were new. `turn` is the current assistant turn.
    pub fn push(&mut self, items: &[ColdItem], turn: u64) -> usize {
        let mut added = 0;
        for item in items {
            if self.contains(&item.id) {
                continue;
            }
            self.pending.push(PendingEntry {
                segment_id: item.id.clone(),
                topic: item.title.clone(),
                start_turn: item.start_turn,
                end_turn: item.end_turn,
                message_count: item.message_count,
                turns_since_mention: turn.saturating_sub(item.end_turn),
                queued_at_turn: turn,
                timestamp: crate::now_rfc3339(),
                kind: item.kind.to_string(),
                original_tokens: item.tokens,
            });
            added += 1;
        }
        added
    }

    /// Whether `id` is in the queue, pending or compressed.
    pub fn contains(&self, id: &str) -> bool {
        self.pending.iter().any(|e| e.segment_id == id)
            || self.compressed.iter().any(|e| e.segment_id == id)
    }

    /// Whether `id`'s segment has arrived (it is in `compressed`).
    pub fn is_compressed(&self, id: &str) -> bool {
        self.compressed.iter().any(|e| e.segment_id == id)
    }

    /// Moves the pending entry `id` to `compressed`, given the segment that
    /// arrived for it. Returns the new entry, or `None` when `id` is not pending.
    pub fn compress(
        &mut self,
        id: &str,
        segment: &Value,
        turn: Option<u64>,
        storage_location: String,
    ) -> Option<CompressedEntry> {
        let at = self.pending.iter().position(|e| e.segment_id == id)?;
        let entry = self.pending.remove(at);
        let compressed_tokens = segment_tokens(segment);
        let done = CompressedEntry {
            topic: segment
                .get("topic")
                .and_then(Value::as_str)
                .filter(|t| !t.trim().is_empty())
                .unwrap_or(&entry.topic)
                .to_string(),
            compressed_at_turn: turn.unwrap_or(entry.queued_at_turn),
            original_tokens: entry.original_tokens,
            compressed_tokens,
            compression_ratio: ratio(entry.original_tokens, compressed_tokens),
            storage_location,
            timestamp: crate::now_rfc3339(),
            start_turn: entry.start_turn,
            end_turn: entry.end_turn,
            segment_id: entry.segment_id,
        };
        self.compressed.push(done.clone());
        Some(done)
    }
}

/// Tokens of what a segment gives a reader: its topic, content, decisions and files.
pub fn segment_tokens(segment: &Value) -> u64 {
    let mut text = String::new();
    for key in ["topic", "compressed_content"] {
        if let Some(s) = segment.get(key).and_then(Value::as_str) {
            text.push_str(s);
            text.push('\n');
        }
    }
    for key in ["key_decisions", "key_files"] {
        for item in segment
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(s) = item.as_str() {
                text.push_str(s);
                text.push('\n');
            }
        }
    }
    estimate(&text) as u64
}

/// A queued item whose segment arrived.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Arrival {
    /// The session whose queue held the item.
    pub session_id: String,
    /// The entry as moved to `compressed` (its fields flattened in the JSON).
    #[serde(flatten)]
    pub entry: CompressedEntry,
    /// Items of the session still waiting.
    pub still_pending: usize,
}

/// The session a segment belongs to: its `session_id`, else the part of its id
/// before the first `:` (the hooks' ids are `<session>:…`).
fn session_of(record: &Record) -> Option<String> {
    record
        .fields
        .session_id
        .clone()
        .or_else(|| record.id.split_once(':').map(|(s, _)| s.to_string()))
        .filter(|s| !s.is_empty())
}

/// A segment arrived in the store (the caller's write succeeded): every one
/// whose `segment_id` is pending in its session's queue moves to `compressed`
/// with its token figures. The one step the CLI's `add` and MCP `memory_add`
/// (and so the skill) share. Rule-based summaries (the hooks' own) are not
/// arrivals. Each queue is updated under the session's hook lock.
pub fn segments_arrived(store_root: &Path, records: &[Record]) -> Result<Vec<Arrival>> {
    let mut by_session: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
    for record in records {
        if record.kind != Kind::Segment || super::is_hook_summary(&record.source) {
            continue;
        }
        if let Some(session) = session_of(record) {
            by_session.entry(session).or_default().push(record);
        }
    }
    if by_session.is_empty() {
        return Ok(Vec::new());
    }
    let settings = HookSettings::from_store(store_root)?;
    let files = HookFiles::new(store_root);
    let mut arrivals = Vec::new();
    for (session, segments) in by_session {
        let path = queue_path(store_root, &settings, &session);
        if !path.exists() {
            continue;
        }
        let _lock = files.lock_waiting(&session, std::time::Duration::from_secs(5))?;
        let mut queue = Queue::load(&path, &session)?;
        let turn = read_json::<SessionState>(&files.state(&session))
            .ok()
            .flatten()
            .map(|s| s.turn());
        let mut moved = Vec::new();
        for record in segments {
            let location = format!("{}#{}", store_root.display(), record.id);
            if let Some(entry) = queue.compress(&record.id, &record.source, turn, location) {
                moved.push(entry);
            }
        }
        if moved.is_empty() {
            continue;
        }
        queue.save(&path)?;
        let still_pending = queue.pending.len();
        arrivals.extend(moved.into_iter().map(|entry| Arrival {
            session_id: session.clone(),
            entry,
            still_pending,
        }));
    }
    Ok(arrivals)
}

/// What adding records did, queue included.
#[derive(Debug, Clone, Serialize)]
pub struct AddOutcome {
    /// What adding the records did to the store.
    pub summary: AddSummary,
    /// Queued items whose segment arrived in this add.
    pub compressed: Vec<Arrival>,
    /// Why the queue could not be updated (the write itself succeeded; the
    /// next hook call settles the queue from the store).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_error: Option<String>,
}

/// The segments of `records` that some session's queue waits for (cheap: one
/// small file read per session with segments).
fn awaited(store_root: &Path, records: &[Record]) -> Vec<Record> {
    let Ok(settings) = HookSettings::from_store(store_root) else {
        return Vec::new();
    };
    let mut queues: BTreeMap<String, Option<Queue>> = BTreeMap::new();
    records
        .iter()
        .filter(|r| r.kind == Kind::Segment && !super::is_hook_summary(&r.source))
        .filter(|r| {
            let Some(session) = session_of(r) else {
                return false;
            };
            let queue = queues.entry(session.clone()).or_insert_with(|| {
                let path = queue_path(store_root, &settings, &session);
                read_json::<Queue>(&path).ok().flatten()
            });
            queue
                .as_ref()
                .is_some_and(|q| q.pending.iter().any(|e| e.segment_id == r.id))
        })
        .cloned()
        .collect()
}

/// Adds a batch of records to the store (all or nothing, as `add` does), then
/// moves the queue entries of the segments that arrived to `compressed`: the
/// path every writer of agent segments takes (`add`, MCP `memory_add`, the
/// skill). `started` is when reading the batch began.
pub fn add_and_settle(
    store: &Store,
    batch: ReadBatch,
    embedder: Option<&mut dyn Embedder>,
    lock_timeout: Duration,
    started: Instant,
) -> Result<AddOutcome> {
    let awaited = awaited(store.root(), &batch.records);
    let summary = add_batch(store, batch, embedder, lock_timeout, started)?;
    let (compressed, queue_error) = match segments_arrived(store.root(), &awaited) {
        Ok(arrivals) => (arrivals, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    Ok(AddOutcome {
        summary,
        compressed,
        queue_error,
    })
}

/// One line per arrival, for people and agents: what was compressed by how much.
pub fn arrival_lines(arrivals: &[Arrival]) -> Vec<String> {
    arrivals
        .iter()
        .map(|a| {
            format!(
                "queued segment {} compressed: {} → {} tokens ({}x); {} still pending in session {}",
                a.entry.segment_id,
                a.entry.original_tokens,
                a.entry.compressed_tokens,
                a.entry.compression_ratio,
                a.still_pending,
                a.session_id
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(id: &str, start: u64, end: u64) -> ColdItem {
        ColdItem {
            id: id.into(),
            kind: "segment",
            title: "OAuth refresh".into(),
            start_turn: start,
            end_turn: end,
            message_count: 12,
            tokens: 2400,
            record: json!({}),
        }
    }

    #[test]
    fn all_queues_lists_each_sessions_file_and_skips_a_damaged_one() {
        let dir = tempfile::tempdir().unwrap();
        let settings = HookSettings::default();
        assert_eq!(all_queues(dir.path(), &settings, 10).unwrap().1, 0);
        for session in ["s1", "s2"] {
            let mut queue =
                Queue::load(&queue_path(dir.path(), &settings, session), session).unwrap();
            queue.push(&[item(&format!("{session}:segment:1-5"), 1, 5)], 9);
            queue
                .save(&queue_path(dir.path(), &settings, session))
                .unwrap();
        }
        let folder = queue_dir(dir.path(), &settings);
        std::fs::write(folder.join("bad_pending.json"), b"{not json").unwrap();
        std::fs::write(folder.join("unrelated.json"), b"{}").unwrap();
        let (queues, total) = all_queues(dir.path(), &settings, 10).unwrap();
        assert_eq!(total, 3);
        let mut sessions: Vec<&str> = queues.iter().map(|q| q.session_id.as_str()).collect();
        sessions.sort();
        assert_eq!(sessions, ["s1", "s2"]);
        assert!(queues.iter().all(|q| q.pending.len() == 1));
        // The limit bounds the files read (a damaged one among them).
        assert!(all_queues(dir.path(), &settings, 1).unwrap().0.len() <= 1);
    }

    #[test]
    fn entries_queue_once_and_move_only_when_a_segment_arrives() {
        let mut queue = Queue::default();
        assert_eq!(queue.push(&[item("s:segment:15-35", 15, 35)], 60), 1);
        assert_eq!(queue.push(&[item("s:segment:15-35", 15, 35)], 70), 0);
        let pending = &queue.pending[0];
        assert_eq!(
            (
                pending.turns_since_mention,
                pending.queued_at_turn,
                pending.message_count
            ),
            (25, 60, 12)
        );
        let segment = json!({"segment_id": "s:segment:15-35", "topic": "OAuth2 refresh",
            "compressed_content": "Refresh sends the refresh token; tests pass."});
        assert!(queue
            .compress("s:other", &segment, Some(65), "x".into())
            .is_none());
        let done = queue
            .compress(
                "s:segment:15-35",
                &segment,
                Some(65),
                "/store#s:segment:15-35".into(),
            )
            .expect("pending");
        assert!(queue.pending.is_empty());
        assert_eq!(done.original_tokens, 2400);
        assert_eq!(done.compressed_at_turn, 65);
        assert_eq!(done.topic, "OAuth2 refresh");
        assert!(done.compressed_tokens > 0 && done.compressed_tokens < 40);
        assert_eq!(done.compression_ratio, ratio(2400, done.compressed_tokens));
        // The design's field names, exactly.
        let value = serde_json::to_value(&queue).unwrap();
        for key in [
            "segment_id",
            "topic",
            "compressed_at_turn",
            "original_tokens",
            "compressed_tokens",
            "compression_ratio",
            "storage_location",
            "timestamp",
        ] {
            assert!(value["compressed"][0].get(key).is_some(), "{key}");
        }
        assert!(value.get("last_check_turn").is_some());
    }

    #[test]
    fn home_is_expanded_in_the_queue_folder() {
        let settings = HookSettings {
            queue_dir: Some("~/.claude/data/context_queue".into()),
            ..HookSettings::default()
        };
        let dir = queue_dir(Path::new("/s"), &settings);
        assert!(dir.ends_with(".claude/data/context_queue"));
        assert!(!dir.to_string_lossy().starts_with('~'));
        assert_eq!(
            queue_path(Path::new("/s"), &HookSettings::default(), "abc"),
            Path::new("/s/hooks/context_queue/abc_pending.json")
        );
    }
}
