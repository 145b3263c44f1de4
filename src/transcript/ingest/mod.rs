//! Storing transcripts as `message` records, incrementally.
//!
//! Each message becomes one record (see [`message_record`]) whose id is stable
//! across reads: `<session>:<message uuid>`, or `<session>:line:<n>` when the
//! format has no ids. Re-ingesting is therefore idempotent on its own; on top of
//! that, `<store>/ingest/<hash of path>.json` remembers how far each file was
//! read (size, resume offset, a hash of the bytes before it), so a transcript
//! that grew is read only from its last message on. The state is written after
//! the records are committed, atomically (temp file, fsync, rename).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{read_bytes, Block, Format, Message, ReadFrom, Role, Skipped, Transcript, TurnAnchor};
use crate::embed::Embedder;
use crate::error::{Error, Origin, Result};
use crate::privacy::{Findings, Redactor};
use crate::record::{context, parse_record, ParseOptions, Record};
use crate::store::{AddReport, Store};

mod resume;

pub use resume::{forget_read_position, forget_read_positions};
use resume::{next_state, read_new_part, save_state, saved_state, Part};

/// Structured content larger than this is left out of a record (its text stays).
const MAX_CONTENT_JSON_BYTES: usize = 256 * 1024;
/// Text larger than this is cut (with a marker) so a record stays well under the limits.
const MAX_TEXT_BYTES: usize = 2 * 1024 * 1024;

/// The record id of a message: stable across re-reads of a growing file.
pub fn message_id(session_id: &str, message: &Message) -> String {
    match &message.uuid {
        Some(uuid) => format!("{session_id}:{uuid}"),
        None => format!("{session_id}:line:{}", message.line),
    }
}

/// Which flow wrote a message record, kept as its `origin.via`: a message
/// ingested from a transcript and one evicted from a live context are told
/// apart later (what `prune`'s summary says of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Read from a transcript file by `ingest`.
    Ingest,
    /// Evicted or truncated when a live context was rolled.
    Evict,
    /// Dropped or cut when a prompt was packed.
    Pack,
}

impl Via {
    /// The name kept as `origin.via`: `ingest`, `evict` or `pack`.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Ingest => "ingest",
            Via::Evict => "evict",
            Via::Pack => "pack",
        }
    }
}

/// The `message` record JSON for one message of `transcript`, written by `via`.
pub fn message_record(
    transcript: &Transcript,
    message: &Message,
    namespace: &str,
    via: Via,
) -> Value {
    let session = message
        .session_id
        .clone()
        .unwrap_or_else(|| transcript.session_id.clone());
    let mut text = message.text();
    if text.len() > MAX_TEXT_BYTES {
        let mut cut = MAX_TEXT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n[… cut: message longer than 2 MiB]");
    }
    if text.trim().is_empty() {
        text = format!("[{} message without text]", message.role.as_str());
    }
    let mut record = json!({
        "kind": "message",
        "id": message_id(&session, message),
        "namespace": namespace,
        "role": message.role.as_str(),
        "session_id": session,
        "turn_index": message.turn_index,
        "text": text,
        "tool_names": message.tool_names(),
        "files": message.files(),
        "commands": message.commands(),
        "errors": message.error_lines(),
        "origin": {
            "path": transcript.path.display().to_string(),
            "format": transcript.format.as_str(),
            "line": message.line,
            "via": via.as_str(),
        },
    });
    let Value::Object(map) = &mut record else {
        return record;
    };
    let mut put = |key: &str, value: Value| {
        if !value.is_null() && value != Value::Bool(false) {
            map.insert(key.to_string(), value);
        }
    };
    if let Some(cwd) = transcript.cwd.as_deref() {
        put(
            "project",
            json!(crate::record::project::project_of(Path::new(cwd))),
        );
    }
    put("timestamp", json!(message.timestamp));
    put("uuid", json!(message.uuid));
    put("parent_uuid", json!(message.parent_uuid));
    put("model", json!(message.model));
    put("usage", json!(message.usage));
    put("is_sidechain", json!(message.is_sidechain));
    put("is_meta", json!(message.is_meta));
    put("is_compact_summary", json!(message.is_compact_summary));
    put("is_compact_boundary", json!(message.is_compact_boundary));
    put("agent_id", json!(message.agent_id));
    let content = json!(message.content);
    let tool_result = json!(message.tool_use_result);
    let structured = content.to_string().len() + tool_result.to_string().len();
    if structured <= MAX_CONTENT_JSON_BYTES {
        put("content", content);
        put("tool_use_result", tool_result);
    } else {
        put("content_omitted_bytes", json!(structured));
    }
    record
}

/// Validated records for every message of `transcript`, written by `via`,
/// redacted by `redactor` (see [`crate::privacy`]) before replies are linked
/// to their prompts, so no context copies a secret or is cut inside one.
/// `earlier` is the latest prompt before the part read (see [`LastPrompt`]).
pub fn transcript_records(
    transcript: &Transcript,
    namespace: &str,
    added_at: &str,
    via: Via,
    earlier: Option<&LastPrompt>,
    redactor: &Redactor,
) -> Result<Vec<Record>> {
    transcript_records_redacted(transcript, namespace, added_at, via, earlier, redactor)
        .map(|(records, _)| records)
}

/// [`transcript_records`], also saying what redaction replaced.
fn transcript_records_redacted(
    transcript: &Transcript,
    namespace: &str,
    added_at: &str,
    via: Via,
    earlier: Option<&LastPrompt>,
    redactor: &Redactor,
) -> Result<(Vec<Record>, Findings)> {
    // Outputs replaced whole as the transcript was read (secrets by their
    // command or file: `transcript::seal`) count with what redaction replaces.
    let mut found = transcript.sealed.clone();
    let options = ParseOptions {
        added_at: added_at.to_string(),
        namespace: Some(namespace.to_string()),
        ..ParseOptions::default()
    };
    let path = transcript.path.display().to_string();
    let mut records = Vec::with_capacity(transcript.messages.len());
    let mut errors = Vec::new();
    for message in &transcript.messages {
        let value = message_record(transcript, message, namespace, via);
        match parse_record(value, &Origin::line(path.clone(), message.line), &options) {
            Ok(mut r) => {
                found.absorb(&crate::privacy::redact_record(redactor, &mut r));
                records.push(r);
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(Error::Input(crate::error::InputErrors(errors)));
    }
    // A prompt kept by an older build's ingest state may hold a secret.
    let earlier = earlier.map(|p| {
        let mut p = p.clone();
        redactor.redact_string(&mut p.text);
        p
    });
    link_replies_to_prompts(transcript, &mut records, earlier.as_ref(), redactor);
    Ok((records, found))
}

/// The latest user prompt read from a transcript: what the assistant's next
/// words answer. Kept in the ingest state, so that answers read on a later
/// run (a transcript that grew) still carry the prompt read before.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LastPrompt {
    /// The session the prompt belongs to.
    pub session_id: String,
    /// Its record id.
    pub id: String,
    /// Its text, cut to a context's length.
    pub text: String,
}

impl LastPrompt {
    /// The prompt `message`, redacted before it is cut to a context's length
    /// (it is copied into replies and kept in the ingest state on disk).
    fn of(transcript: &Transcript, message: &Message, redactor: &Redactor) -> LastPrompt {
        let session_id = message
            .session_id
            .clone()
            .unwrap_or_else(|| transcript.session_id.clone());
        LastPrompt {
            id: message_id(&session_id, message),
            session_id,
            text: context::clip(&redactor.redact(&message.text()).text),
        }
    }
}

/// Conversation context for a transcript (see `crate::record::context`): each
/// message in which the assistant writes words (text or reasoning, not only
/// tool calls) carries the user's latest prompt of its session, the question
/// it answers, and names it as `context_from` (search raises the prompt beside
/// a reply it finds). A developer asks later in the words of that question
/// ("why did every command hang for a second?") about an answer written in
/// other words. Tool calls and outputs carry nothing: a short output carrying
/// the words of what came before would outrank the message that holds them.
fn link_replies_to_prompts(
    transcript: &Transcript,
    records: &mut [Record],
    earlier: Option<&LastPrompt>,
    redactor: &Redactor,
) {
    let mut latest: HashMap<String, LastPrompt> = earlier
        .map(|p| (p.session_id.clone(), p.clone()))
        .into_iter()
        .collect();
    for (message, record) in transcript.messages.iter().zip(records.iter_mut()) {
        let Some(session) = record.fields.session_id.as_deref() else {
            continue;
        };
        if message.is_prompt() {
            latest.insert(
                session.to_string(),
                LastPrompt::of(transcript, message, redactor),
            );
        } else if message.role == Role::Assistant && writes_words(message) {
            if let Some(prompt) = latest.get(session) {
                if record.context.is_none() && !prompt.text.trim().is_empty() {
                    record.context = Some(prompt.text.clone());
                    record.context_from = Some(prompt.id.clone());
                }
            }
        }
    }
}

/// Whether a message holds words of its author (text or reasoning), not only
/// tool calls and outputs.
fn writes_words(message: &Message) -> bool {
    message.content.iter().any(|block| match block {
        Block::Text { text } => !text.trim().is_empty(),
        Block::Thinking { thinking } => !thinking.trim().is_empty(),
        _ => false,
    })
}

/// The records whose message the store does not hold yet with the same text:
/// a message ingested before it was evicted (or evicted twice) is stored once,
/// and keeps the `via` it was first written with instead of flipping.
pub fn not_stored_yet(store: &Store, records: Vec<Record>) -> Result<Vec<Record>> {
    let searcher = store.reader()?.searcher();
    let mut out = Vec::with_capacity(records.len());
    for record in records {
        let stored = crate::store::get_record(&searcher, store.fields(), &record.id)?;
        if stored.is_none_or(|s| s.source.get("text") != record.source.get("text")) {
            out.push(record);
        }
    }
    Ok(out)
}

/// How far a file was read, kept in `<store>/ingest/`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IngestState {
    /// The transcript file, as given to `ingest`.
    pub path: PathBuf,
    /// The format it was read as.
    pub format: Format,
    /// Size of the (decompressed) file when it was read.
    pub size: u64,
    /// Where the next read starts: the first line of the last message read (it may
    /// still grow: more lines of the same API response).
    pub resume_offset: u64,
    /// xxh3 of all the bytes before `resume_offset`, as states written before
    /// `tail_hash` check it (0 in newer states).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prefix_hash: u64,
    /// xxh3 of the up to 256 bytes before `resume_offset`: when they are
    /// unchanged the file only grew, and only what follows is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_hash: Option<u64>,
    /// Line breaks before `resume_offset`: line numbers continue from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines_before: Option<u64>,
    /// Non-empty lines before `resume_offset` (how complete a copy of its
    /// session the file is, see [`FileRank`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filled_lines_before: Option<u64>,
    /// The last `timestamp` before `resume_offset`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_timestamp: Option<String>,
    /// The session's working directory, read before `resume_offset` (an
    /// OpenClaw header is not read again on resume): its messages' project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// User prompts before `resume_offset`, so turn indices continue.
    pub prompts_before: u64,
    /// The transcript's session id (an OpenClaw header is not read again on resume).
    pub session_id: String,
    /// The latest user prompt before `resume_offset`: the context of the
    /// assistant's words read next (see [`LastPrompt`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_prompt: Option<LastPrompt>,
}

/// What to ingest and how.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// The transcript format; `None` detects it per file.
    pub format: Option<Format>,
    /// The namespace the message records go to.
    pub namespace: String,
    /// Read and convert only; write nothing (also no state).
    pub dry_run: bool,
    /// Ignore the saved read positions and read every file whole.
    pub full: bool,
    /// Embed inline only up to this many records: a larger batch (a history
    /// brought in at once) is stored for BM25 search without vectors, which
    /// the background upkeep adds (int8 drafts first for a large backlog),
    /// instead of holding the caller for minutes. `None`: always inline.
    pub inline_embed_max: Option<usize>,
    /// Set (by a Ctrl-C handler) to stop before the next file: what was read
    /// is committed, the rest is left for the next run.
    pub stop: Option<&'static std::sync::atomic::AtomicBool>,
}

/// One file's part of an ingest.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// The transcript file.
    pub path: PathBuf,
    /// The format it was read as.
    pub format: Format,
    /// The transcript's session id.
    pub session_id: String,
    /// Where reading started (0, or the saved position of a grown file).
    pub start_offset: u64,
    /// Bytes read from `start_offset` to the end of the (decompressed) file.
    pub bytes_read: u64,
    /// Lines read.
    pub lines: usize,
    /// Messages read.
    pub messages: usize,
    /// Tool calls in the messages read.
    pub tool_calls: usize,
    /// Lines skipped for being non-JSON or of an unknown type.
    pub skipped_lines: usize,
}

/// What an ingest read and wrote.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestReport {
    /// Each file's part, in the order read.
    pub files: Vec<FileReport>,
    /// Messages read, over all files.
    pub messages: usize,
    /// Tool calls in the messages read, over all files.
    pub tool_calls: usize,
    /// Lines read, over all files.
    pub lines: usize,
    /// Lines that did not become messages, by reason, over all files.
    pub skipped: Skipped,
    /// Bytes read (decompressed), over all files.
    pub bytes_read: u64,
    /// Seconds spent parsing bytes into messages (reading files and storing not included).
    pub parse_seconds: f64,
    /// Parse throughput over the (decompressed) bytes read.
    pub parse_mb_per_s: f64,
    /// What the store wrote; `None` on a dry run.
    pub store: Option<AddReport>,
    /// Messages not written because a more complete file holds the same message
    /// (a session copied into two files): the copy from the file with more of
    /// the session's lines wins.
    pub superseded: usize,
    /// Records left to the background upkeep's embedding because the batch
    /// was larger than [`IngestOptions::inline_embed_max`] (0: none).
    pub vectors_deferred: usize,
    /// Seconds the whole ingest took.
    pub seconds: f64,
    /// Whether nothing was written (`dry_run` asked, or no store).
    pub dry_run: bool,
    /// Whether `stop` ended the run before every file was read: what was
    /// read is committed, and the next run reads on from there.
    pub interrupted: bool,
}

/// How complete a copy of a session a transcript file is, judged by its
/// content: the lines it holds, then the time of its last line, then its path
/// (so ties break the same way every time). A checkpoint or partial copy holds
/// a prefix of the session's lines, so the full file has more of them, whatever
/// their size on disk (a `.jsonl.gz` is a tenth of the `.jsonl` it holds). A
/// file that cannot be read ranks lowest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileRank(Option<(u64, String, String)>);

impl FileRank {
    /// The rank of the file at `path`, read (and decompressed) now.
    pub fn of(path: &str) -> FileRank {
        match read_bytes(Path::new(path)) {
            Ok(bytes) => FileRank::of_bytes(path, &bytes),
            Err(_) => FileRank(None),
        }
    }

    /// The rank of a file whose (decompressed) bytes are `bytes`.
    pub fn of_bytes(path: &str, bytes: &[u8]) -> FileRank {
        FileRank(Some((
            filled_lines(bytes),
            last_timestamp(bytes),
            path.to_string(),
        )))
    }

    /// The rank of a file read from `part.base` on, knowing what was before.
    fn of_part(path: &str, part: &Part) -> FileRank {
        let timestamp = Some(last_timestamp(&part.bytes))
            .filter(|t| !t.is_empty())
            .or_else(|| part.before.last_timestamp.clone())
            .unwrap_or_default();
        let lines = part.before.filled_lines + filled_lines(&part.bytes);
        FileRank(Some((lines, timestamp, path.to_string())))
    }
}

/// Non-empty lines of `bytes`.
fn filled_lines(bytes: &[u8]) -> u64 {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .count() as u64
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The `timestamp` of the last line that has one ("" when none does).
fn last_timestamp(bytes: &[u8]) -> String {
    const KEY: &[u8] = b"\"timestamp\"";
    bytes
        .rsplit(|&b| b == b'\n')
        // Parse only lines that can hold one: most of a file is not read.
        .filter(|line| line.windows(KEY.len()).any(|w| w == KEY))
        .find_map(|line| {
            let value: Value = serde_json::from_slice(line.trim_ascii()).ok()?;
            value.get("timestamp")?.as_str().map(str::to_string)
        })
        .unwrap_or_default()
}

/// The file a stored or new message record came from.
fn origin_path(record: &Record) -> Option<&str> {
    record.source.get("origin")?.get("path")?.as_str()
}

/// One record per id, from the most complete file that holds it.
///
/// The same session can sit in two files (a checkpoint copy repeats the first
/// lines of a later one, a partial copy its first lines), so the same message id
/// comes from both. Keeping the copy from the more complete file ([`FileRank`]),
/// here and against what the store already holds, makes ingest stable: reading
/// the files again, in any order, changes nothing, whatever part of each file a
/// resumed read covers. Returns the records to write and how many were left out.
fn most_complete_copies(
    store: &Store,
    records: Vec<(FileRank, Record)>,
) -> Result<(Vec<Record>, usize)> {
    let total = records.len();
    let mut best: Vec<(FileRank, Record)> = Vec::with_capacity(total);
    let mut position: std::collections::HashMap<String, usize> =
        std::collections::HashMap::with_capacity(total);
    for (rank, record) in records {
        match position.get(&record.id) {
            Some(&i) if best[i].0 > rank => {}
            Some(&i) => best[i] = (rank, record),
            None => {
                position.insert(record.id.clone(), best.len());
                best.push((rank, record));
            }
        }
    }
    let searcher = store.reader()?.searcher();
    let lookup = crate::store::IdLookup::new(&searcher, store.fields())?;
    let mut ranks: std::collections::HashMap<String, FileRank> = std::collections::HashMap::new();
    let mut kept = Vec::with_capacity(best.len());
    for (rank, record) in best {
        if let Some(address) = lookup.find(&record.id)? {
            let doc: tantivy::TantivyDocument = searcher.doc(address)?;
            let stored = store.fields().record(&doc)?;
            let stored_path = origin_path(&stored).unwrap_or_default();
            if Some(stored_path) != origin_path(&record) {
                let stored_rank = ranks
                    .entry(stored_path.to_string())
                    .or_insert_with(|| FileRank::of(stored_path));
                if *stored_rank > rank {
                    continue;
                }
            }
        }
        kept.push(record);
    }
    let superseded = total - kept.len();
    Ok((kept, superseded))
}

/// Records read before they are committed: an ingest of a whole history is
/// stored in steps of about this many records, so memory stays bounded and
/// an interrupted ingest keeps every step it committed (a rerun reads on
/// from the saved positions). At least the default
/// [`crate::store::config::Embedding::ingest_inline_max`], so that whether a
/// run embeds inline is decided by its first step as for a run in one commit.
pub const RECORDS_PER_COMMIT: usize = 8_192;

/// [`RECORDS_PER_COMMIT`], or `KNOWLEDGE_DB_INGEST_STEP` when set to a
/// positive number (the tests interrupt an ingest between small steps).
fn records_per_commit() -> usize {
    std::env::var("KNOWLEDGE_DB_INGEST_STEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(RECORDS_PER_COMMIT)
}

/// Where an ingest is, for a progress display.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct IngestProgress {
    /// `true` while a step is being committed, `false` while files are read.
    pub storing: bool,
    /// Files read so far, of `files_total`.
    pub files_done: usize,
    /// Files to read.
    pub files_total: usize,
    /// Bytes on disk of the files read so far, of `bytes_total`.
    pub bytes_done: u64,
    /// Bytes on disk of the files to read.
    pub bytes_total: u64,
    /// Messages read so far.
    pub messages_read: usize,
    /// Records committed so far (added, updated or unchanged).
    pub records_stored: usize,
    /// Records being committed in the current step (when `storing`).
    pub records_storing: usize,
}

/// What one step holds until it is committed.
#[derive(Default)]
struct Step {
    records: Vec<(FileRank, Record)>,
    states: Vec<IngestState>,
    redacted: Findings,
}

/// Reads `files` and stores their messages, committing every
/// [`RECORDS_PER_COMMIT`] records or so and saving the read positions of the
/// files each commit covers. Without a store (or with `dry_run`) it only
/// reads and counts. When `options.stop` is set (Ctrl-C), it stops before
/// the next file, commits what it read, and says so in `interrupted`.
pub fn ingest(
    store: Option<&Store>,
    files: &[PathBuf],
    options: &IngestOptions,
    mut embedder: Option<&mut dyn Embedder>,
    lock_timeout: Duration,
    progress: &mut dyn FnMut(&IngestProgress),
) -> Result<IngestReport> {
    let started = Instant::now();
    let mut report = IngestReport {
        dry_run: options.dry_run || store.is_none(),
        ..IngestReport::default()
    };
    let writing = store.filter(|_| !options.dry_run);
    let added_at = crate::now_rfc3339();
    // Larger files first: of two copies of one session (a checkpoint copy
    // and the whole file) the more complete is then stored first and the
    // other left out, instead of being stored in one step and replaced in a
    // later one. The outcome is the same either way (see
    // `most_complete_copies`); a first ingest then reports no updates.
    let mut sized: Vec<(u64, &PathBuf)> = files
        .iter()
        .map(|p| (std::fs::metadata(p).map_or(0, |m| m.len()), p))
        .collect();
    sized.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let mut at = IngestProgress {
        files_total: files.len(),
        bytes_total: sized.iter().map(|(size, _)| size).sum(),
        ..IngestProgress::default()
    };
    let mut step = Step::default();
    let per_commit = records_per_commit();
    let mut defer: Option<bool> = None;
    let mut committed = false;
    let mut parse_time = Duration::ZERO;
    let mut parents = ParentSessions::default();
    for (i, &(size, path)) in sized.iter().enumerate() {
        if options
            .stop
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
        {
            report.interrupted = true;
            break;
        }
        progress(&at);
        let saved = match store {
            Some(store) if !options.full => saved_state(store, path),
            _ => None,
        };
        let t = Instant::now();
        let limit = store.map_or(super::DEFAULT_LIMIT, |s| s.config().limits.file_limit());
        let (part, mut transcript) = read_new_part(path, saved, options.format, limit)?;
        parse_time += t.elapsed();
        let earlier = part.earlier.clone();
        if transcript.is_subagent() {
            let anchors = parents.anchors(store, &transcript)?;
            transcript.align_subagent_turns(&anchors);
        }
        if let Some(store) = writing {
            let rank = FileRank::of_part(&path.display().to_string(), &part);
            let (part_records, found) = transcript_records_redacted(
                &transcript,
                &options.namespace,
                &added_at,
                Via::Ingest,
                earlier.as_ref(),
                store.redactor(),
            )?;
            step.redacted.absorb(&found);
            step.records
                .extend(part_records.into_iter().map(|r| (rank.clone(), r)));
            step.states
                .push(next_state(&transcript, &part, store.redactor())?);
        }
        report.add_file(&transcript);
        at.files_done = i + 1;
        at.bytes_done += size;
        at.messages_read = report.messages;
        if let Some(store) = writing.filter(|_| step.records.len() >= per_commit) {
            let more_to_come = i + 1 < files.len();
            commit_step(
                store,
                &mut step,
                options,
                &mut embedder,
                &mut defer,
                more_to_come,
                lock_timeout,
                &mut report,
                &mut at,
                progress,
            )?;
            committed = true;
        }
    }
    if let Some(store) = writing.filter(|_| !committed || !step.states.is_empty()) {
        commit_step(
            store,
            &mut step,
            options,
            &mut embedder,
            &mut defer,
            false,
            lock_timeout,
            &mut report,
            &mut at,
            progress,
        )?;
    }
    progress(&at);
    report.parse_seconds = parse_time.as_secs_f64();
    report.parse_mb_per_s = report.bytes_read as f64 / 1e6 / report.parse_seconds.max(1e-9);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Commits one step's records, then saves the read positions of its files.
/// The first step decides, for the whole run, whether vectors are made
/// inline: not when more steps follow or the step holds more than
/// `inline_embed_max` records (the upkeep makes them).
#[allow(clippy::too_many_arguments)]
fn commit_step(
    store: &Store,
    step: &mut Step,
    options: &IngestOptions,
    embedder: &mut Option<&mut dyn Embedder>,
    defer: &mut Option<bool>,
    more_to_come: bool,
    lock_timeout: Duration,
    report: &mut IngestReport,
    at: &mut IngestProgress,
    progress: &mut dyn FnMut(&IngestProgress),
) -> Result<()> {
    let (records, superseded) = most_complete_copies(store, std::mem::take(&mut step.records))?;
    report.superseded += superseded;
    let deferred = *defer.get_or_insert_with(|| match options.inline_embed_max {
        Some(max) => embedder.is_some() && (more_to_come || records.len() > max),
        None => false,
    });
    if deferred {
        report.vectors_deferred += records.len();
    }
    at.storing = true;
    at.records_storing = records.len();
    progress(at);
    let embedder = if deferred {
        None
    } else {
        embedder.as_mut().map(|e| &mut **e as &mut dyn Embedder)
    };
    // Redacted when read, before replies were linked to their prompts.
    let (added, _) = store.add_redacted(
        records,
        std::mem::take(&mut step.redacted),
        HashMap::new(),
        embedder,
        lock_timeout,
    )?;
    for state in step.states.drain(..) {
        save_state(store, &state)?;
    }
    at.storing = false;
    at.records_stored += added.added + added.updated + added.unchanged;
    at.records_storing = 0;
    match &mut report.store {
        Some(total) => total.absorb(&added),
        None => report.store = Some(added),
    }
    Ok(())
}

/// The turns of the sessions that subagent transcripts belong to, read once
/// per session: from the session's own file beside the subagent's, else from
/// the session's messages already in the store.
#[derive(Default)]
struct ParentSessions {
    by_file: std::collections::HashMap<PathBuf, Vec<TurnAnchor>>,
}

impl ParentSessions {
    fn anchors(&mut self, store: Option<&Store>, sub: &Transcript) -> Result<Vec<TurnAnchor>> {
        if let Some(parent) = super::parent_session_file(&sub.path) {
            if let Some(anchors) = self.by_file.get(&parent) {
                return Ok(anchors.clone());
            }
            let read = super::read_file(&parent, Some(sub.format), ReadFrom::default())?;
            let anchors = TurnAnchor::of(&read.messages);
            self.by_file.insert(parent, anchors.clone());
            return Ok(anchors);
        }
        let Some(store) = store else {
            return Ok(Vec::new());
        };
        let searcher = store.reader()?.searcher();
        let records = crate::store::browse::session_messages(
            &searcher,
            store.fields(),
            &sub.session_id,
            0,
            u64::MAX,
        )?;
        Ok(records
            .iter()
            .filter(|r| r.source.get("is_sidechain") != Some(&Value::Bool(true)))
            .map(|r| TurnAnchor {
                timestamp: r
                    .source
                    .get("timestamp")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                turn: r.fields.start_turn.unwrap_or(0),
                agent_id: r
                    .source
                    .get("tool_use_result")
                    .and_then(|t| t.get("agentId"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
            .collect())
    }
}

impl IngestReport {
    fn add_file(&mut self, t: &Transcript) {
        let file = FileReport {
            path: t.path.clone(),
            format: t.format,
            session_id: t.session_id.clone(),
            start_offset: t.start_offset,
            bytes_read: t.total_bytes - t.start_offset,
            lines: t.lines,
            messages: t.messages.len(),
            tool_calls: t.tool_calls(),
            skipped_lines: t.skipped.skipped_lines(),
        };
        self.messages += file.messages;
        self.tool_calls += file.tool_calls;
        self.lines += file.lines;
        self.bytes_read += file.bytes_read;
        self.skipped.merge(&t.skipped);
        self.files.push(file);
    }
}

#[cfg(test)]
mod tests;
