//! The Claude Code hooks: the compression loop of the rolling context, and
//! keeping what matters across a compaction.
//!
//! Claude Code runs `knowledge-db hook <event>` with the event's JSON on stdin
//! (`interop.md`, section 2):
//! - **`post-tool-use`** after Bash/Write/Edit/TaskCreate/TaskUpdate/TodoWrite
//!   calls: it reads the transcript's new bytes into the session's state
//!   ([`session`]); every `check_every_turns` assistant turns, when the context
//!   is at least `usage_threshold` full, it looks for cold tasks and cold topic
//!   segments ([`cold`]), stores their rule-based summaries at once (the
//!   fallback, under deterministic ids), queues them ([`queue`]) and asks the
//!   agent to compress them ([`reminder`]): to read each turn range back
//!   ([`turns`]), write its own segment and save it under the queued id, which
//!   replaces the fallback and moves the entry to `compressed`
//!   ([`queue::segments_arrived`]). A batch still pending is announced again
//!   after `remind_after_turns` turns.
//! - **`pre-compact`**: the same update and queueing (without the gates), then
//!   the preservation block ([`preserve`]) is built and saved for the session.
//! - **`session-start`** with source `compact`: the saved block is given back to
//!   the model as `additionalContext`, once (PreCompact hooks cannot add context).
//!
//! A hook's files live in `<store>/hooks/`: `<session>.json` (state),
//! `<session>.preserve.json`, `hooks.log` (a hook never fails the agent's tool
//! call: it logs and exits 0); the queue is `{session}_pending.json` in
//! `[hooks] queue_dir` (default `<store>/hooks/context_queue/`).

pub mod brief;
pub mod capture;
pub mod cold;
pub mod extract;
pub mod preserve;
pub mod queue;
mod read;
pub mod recall;
pub mod reminder;
pub mod session;
pub mod terms;
pub mod turns;

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use self::cold::{ColdItem, HOOK_SOURCE};
use self::queue::Queue;
pub use self::read::{update_state, ReadReport};
use self::session::SessionState;
use crate::error::{Error, Origin, Result};
use crate::record::{parse_record, ParseOptions};
use crate::store::Store;

/// The log file's size past which it is rotated (to `hooks.log.1`).
const MAX_LOG_BYTES: u64 = 1024 * 1024;
/// Longest a hook waits for the store's writer lock: a busy store (a long
/// `add`) must not hold up the agent; the items are stored at a later check.
const MAX_LOCK_WAIT: Duration = Duration::from_secs(2);

/// The thresholds of the hooks: `[hooks]` in `config.toml`, flags override.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HookSettings {
    /// Look for cold items every this many assistant turns.
    pub check_every_turns: u64,
    /// … and only when the context is at least this full (0..1).
    pub usage_threshold: f64,
    /// The context window the usage is measured against, in tokens.
    pub context_window: u64,
    /// A completed task or closed topic is cold this many turns after it ended …
    pub cold_after_turns: u64,
    /// … if none of this many recent turns mentions it.
    pub recent_turns: usize,
    /// A topic segment needs this many messages to be summarized.
    pub min_segment_messages: u64,
    /// The namespace summaries are stored in.
    pub namespace: String,
    /// Where the queue files go (`~` is the home folder); default
    /// `<store>/hooks/context_queue`.
    pub queue_dir: Option<String>,
    /// A batch still pending is announced again after this many assistant turns.
    pub remind_after_turns: u64,
    /// Most transcript bytes one hook call reads (from where the last call
    /// stopped); a longer backlog is read over the next calls, and a single
    /// line longer than this is skipped.
    pub max_read_bytes: u64,
    /// Store the session's messages as the transcript grows (Stop,
    /// SessionEnd, PreCompact and the compression checks).
    pub capture: bool,
    /// Longest a capture waits for the store's writer lock, in seconds; a
    /// busy store defers the capture to the next hook call.
    pub capture_lock_wait_secs: f64,
}

impl Default for HookSettings {
    fn default() -> Self {
        HookSettings {
            check_every_turns: 10,
            usage_threshold: 0.7,
            context_window: 200_000,
            cold_after_turns: 20,
            recent_turns: 20,
            min_segment_messages: 5,
            namespace: crate::record::DEFAULT_NAMESPACE.to_string(),
            queue_dir: None,
            remind_after_turns: 20,
            max_read_bytes: 64 * 1024 * 1024,
            capture: true,
            capture_lock_wait_secs: 2.0,
        }
    }
}

impl HookSettings {
    /// How long a capture waits for the store's writer lock.
    pub fn lock_wait(&self) -> Duration {
        Duration::from_secs_f64(self.capture_lock_wait_secs.clamp(0.0, 60.0))
    }

    /// The `[hooks]` table of the store's `config.toml` (defaults when the file or
    /// the table is missing).
    pub fn from_store(root: &Path) -> Result<HookSettings> {
        crate::store::config::read_section(root, "hooks")
    }
}

/// The fields of a hook's stdin the hooks use (others are ignored).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct HookInput {
    /// The Claude Code session the hook runs for (never empty).
    pub session_id: String,
    /// The session's transcript (JSONL); the hooks that read it fail without it.
    #[serde(default)]
    pub transcript_path: Option<PathBuf>,
    /// The session's working directory, if Claude Code sent it.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The event's name as Claude Code sends it (`PostToolUse`, `PreCompact`, …).
    #[serde(default)]
    pub hook_event_name: Option<String>,
    /// PostToolUse: the tool whose call triggered the hook.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// SessionStart: `startup|resume|clear|compact|fork`.
    #[serde(default)]
    pub source: Option<String>,
    /// PreCompact: `auto|manual`.
    #[serde(default)]
    pub trigger: Option<String>,
    /// UserPromptSubmit: what the user typed.
    #[serde(default)]
    pub prompt: Option<String>,
    /// SessionEnd: why the session ended (`clear`, `logout`, `prompt_input_exit`, …).
    #[serde(default)]
    pub reason: Option<String>,
}

impl HookInput {
    /// Reads the hook JSON Claude Code writes on stdin.
    pub fn parse(bytes: &[u8]) -> Result<HookInput> {
        let input: HookInput = serde_json::from_slice(bytes).map_err(|e| {
            Error::Usage(format!(
                "hook input on stdin: not the hook JSON at line {}, column {}: {e}",
                e.line(),
                e.column()
            ))
        })?;
        if input.session_id.trim().is_empty() {
            return Err(Error::Usage(
                "hook input on stdin: `session_id` is empty".into(),
            ));
        }
        Ok(input)
    }

    fn transcript(&self) -> Result<&Path> {
        self.transcript_path
            .as_deref()
            .filter(|p| !p.as_os_str().is_empty())
            .ok_or_else(|| Error::Usage("hook input on stdin: no `transcript_path`".into()))
    }
}

/// The hooks' folder in a store, and the files in it.
#[derive(Debug, Clone)]
pub struct HookFiles {
    /// `<store>/hooks/`.
    pub dir: PathBuf,
}

impl HookFiles {
    /// The hooks' folder of the store at `store_root`.
    pub fn new(store_root: &Path) -> HookFiles {
        HookFiles {
            dir: store_root.join("hooks"),
        }
    }

    /// A file name safe for any session id (others are hashed).
    pub fn stem(session_id: &str) -> String {
        let safe = !session_id.is_empty()
            && session_id.len() <= 128
            && session_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !session_id.starts_with('.');
        if safe {
            session_id.to_string()
        } else {
            format!(
                "session-{:016x}",
                xxhash_rust::xxh3::xxh3_64(session_id.as_bytes())
            )
        }
    }

    /// The session's state file, `<session>.json`.
    pub fn state(&self, session_id: &str) -> PathBuf {
        self.dir.join(format!("{}.json", Self::stem(session_id)))
    }

    /// The queue file of the first layout, replaced by `{session}_pending.json`.
    pub fn old_queue(&self, session_id: &str) -> PathBuf {
        self.dir
            .join(format!("{}.queue.json", Self::stem(session_id)))
    }

    /// The session's saved preservation block, `<session>.preserve.json`.
    pub fn preserve(&self, session_id: &str) -> PathBuf {
        self.dir
            .join(format!("{}.preserve.json", Self::stem(session_id)))
    }

    /// The hooks' log, `hooks.log`.
    pub fn log(&self) -> PathBuf {
        self.dir.join("hooks.log")
    }

    /// Takes the session's lock without waiting: `None` when another hook of the
    /// same session is running (it will catch up on this call's bytes).
    fn try_lock(&self, session_id: &str) -> Result<Option<File>> {
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let path = self.dir.join(format!("{}.lock", Self::stem(session_id)));
        crate::store::lock::try_lock_file(&path)
    }

    /// Takes the session's lock, waiting up to `wait` for another hook of the
    /// session to finish.
    pub fn lock_waiting(&self, session_id: &str, wait: Duration) -> Result<File> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(lock) = self.try_lock(session_id)? {
                return Ok(lock);
            }
            if Instant::now() >= deadline {
                return Err(Error::Usage(format!(
                    "another knowledge-db hook of session {session_id} kept its lock for {:.0} s",
                    wait.as_secs_f64()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last `max_lines` lines of `hooks.log` (and of `hooks.log.1` before
    /// it, when the log was just rotated), oldest first: what the hooks had
    /// to report (a hook logs its errors instead of failing the agent's tool
    /// call). Reads at most the last 256 KiB of each file.
    pub fn recent_log(&self, max_lines: usize) -> Result<Vec<String>> {
        const TAIL: u64 = 256 * 1024;
        let mut lines: Vec<String> = Vec::new();
        for path in [self.dir.join("hooks.log.1"), self.log()] {
            let mut file = match File::open(&path) {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(&path, e)),
            };
            let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
            let start = len.saturating_sub(TAIL);
            file.seek(SeekFrom::Start(start))
                .map_err(|e| Error::io(&path, e))?;
            let mut bytes = Vec::new();
            file.take(TAIL)
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io(&path, e))?;
            let text = String::from_utf8_lossy(&bytes);
            let mut part: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            if start > 0 && !part.is_empty() {
                part.remove(0); // cut mid-line
            }
            lines.extend(part.into_iter().map(str::to_string));
        }
        let skip = lines.len().saturating_sub(max_lines);
        Ok(lines.split_off(skip))
    }

    /// Appends one line to `hooks.log` (best effort: a hook has nowhere else to report).
    pub fn log_line(&self, command: &str, session_id: Option<&str>, message: &str) {
        let _ = std::fs::create_dir_all(&self.dir);
        let path = self.log();
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
            let _ = std::fs::rename(&path, self.dir.join("hooks.log.1"));
        }
        // An error may quote the input it failed on: redacted like the rest.
        let message = match redactor_near(&path) {
            Ok(redactor) => redactor.redact(message).text.into_owned(),
            Err(_) => crate::privacy::Redactor::builtin()
                .redact(message)
                .text
                .into_owned(),
        };
        let line = format!(
            "{} {command} session={} {}\n",
            crate::now_rfc3339(),
            escape_controls(session_id.unwrap_or("-")),
            escape_controls(&message.replace('\n', " | "))
        );
        if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(&path) {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// `text` on one line with no control character left: each becomes `\n`,
/// `\t`, `\r` or `\u{..}`, so a value from the hook input (a session id with
/// a newline, a terminal escape) cannot forge a line of `hooks.log` or
/// rewrite the terminal that shows it.
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// After `forget --session`: removes the hooks' files of the session (its
/// state, preservation block, recall list, lock, deferred capture and
/// compression queue), which hold text of its messages. Returns how many.
pub fn forget_session_files(store_root: &Path, session_id: &str) -> usize {
    let files = HookFiles::new(store_root);
    let stem = HookFiles::stem(session_id);
    let mut removed = 0;
    let mut remove = |path: PathBuf| {
        if std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    };
    for suffix in [
        ".json",
        ".preserve.json",
        ".recall.json",
        ".lock",
        ".queue.json",
    ] {
        remove(files.dir.join(format!("{stem}{suffix}")));
    }
    remove(
        files
            .dir
            .join("capture-pending")
            .join(format!("{stem}.json")),
    );
    if let Ok(settings) = HookSettings::from_store(store_root) {
        remove(queue::queue_path(store_root, &settings, session_id));
    }
    removed
}

/// A JSON file, or `None` when it does not exist.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Config {
                path: path.to_path_buf(),
                message: format!("not valid JSON at line {}: {e}", e.line()),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Writes JSON atomically and durably (temporary file, fsync, rename),
/// redacted first (see [`redacted_json`]).
pub(crate) fn write_json_atomically<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let bytes = redacted_json(path, value)?;
    crate::files::replace(path, &bytes, crate::files::Durability::Durable)
}

/// `value` as JSON with every string redacted by the redactor of the store
/// the file lies in (its `[privacy]`; the built-in rules for a file outside
/// any store): the hooks' files hold task subjects, commands, errors and
/// summaries taken from the transcript, and no secret may reach disk.
fn redacted_json<T: Serialize>(path: &Path, value: &T) -> Result<Vec<u8>> {
    let as_io = |e: serde_json::Error| Error::io(path, std::io::Error::other(e));
    let mut json = serde_json::to_value(value).map_err(as_io)?;
    crate::privacy::redact_value(&*redactor_near(path)?, &mut json);
    serde_json::to_vec(&json).map_err(as_io)
}

/// The redactor of the store holding `path` (the nearest folder above it
/// with a `config.toml`, at most three levels up); the default settings'
/// for a file outside any store.
fn redactor_near(path: &Path) -> Result<std::sync::Arc<crate::privacy::Redactor>> {
    use std::sync::{Arc, OnceLock};
    static DEFAULT: OnceLock<Arc<crate::privacy::Redactor>> = OnceLock::new();
    match path
        .ancestors()
        .skip(1)
        .take(3)
        .find(|dir| dir.join("config.toml").is_file())
    {
        Some(root) => crate::store::config::redactor_for(root),
        None => Ok(Arc::clone(DEFAULT.get_or_init(|| {
            // The built-in rules are part of the binary (see `Redactor::builtin`).
            Arc::new(
                crate::privacy::Redactor::new(&crate::privacy::PrivacySettings::default())
                    .expect("the built-in secret rules load (tested by privacy::rules)"),
            )
        }))),
    }
}

/// Saves a session's state: atomically (temporary file, rename) but without
/// an fsync. The state is a cache of what the transcript says: one lost to a
/// power cut (or left empty by it) is rebuilt from the transcript on the next
/// call, and what it records of the store's side (items already summarized)
/// is found again there (stored summaries are rewritten unchanged, the agent's
/// own segments left alone, the queue deduplicates). So every call saves it
/// without waiting for the disk.
fn save_state(files: &HookFiles, session_id: &str, state: &SessionState) -> Result<()> {
    let path = files.state(session_id);
    let bytes = redacted_json(&path, state)?;
    crate::files::replace(&path, &bytes, crate::files::Durability::Atomic)
}

/// How full the context is: tokens, their share of the window, and where the
/// number comes from (`usage` figures of the transcript, else an `estimate`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ContextUsage {
    /// Tokens in the context: the last `usage` figures, else the estimate.
    pub tokens: u64,
    /// `tokens` as a share of `context_window` (may exceed 1).
    pub fraction: f64,
    /// `usage` or `estimate`.
    pub source: &'static str,
}

/// How full the session's context is against `settings.context_window`.
pub fn context_usage(state: &SessionState, settings: &HookSettings) -> ContextUsage {
    let (tokens, source) = match state.usage_tokens {
        Some(tokens) => (tokens, "usage"),
        None => (state.estimated_tokens, "estimate"),
    };
    ContextUsage {
        tokens,
        fraction: tokens as f64 / settings.context_window.max(1) as f64,
        source,
    }
}

/// What `hook post-tool-use` did.
#[derive(Debug, Clone, Serialize)]
pub struct PostToolUseReport {
    /// The session the hook ran for.
    pub session_id: String,
    /// `false` when another hook of this session held its lock (nothing done).
    pub ran: bool,
    /// What reading the transcript's new bytes did (default when the hook did not run).
    pub read: ReadReport,
    /// Assistant turns in the session so far.
    pub assistant_turns: u64,
    /// How full the context is; `None` when the hook did not run.
    pub usage: Option<ContextUsage>,
    /// Whether the cold check ran (due by turns and over the usage threshold).
    pub checked: bool,
    /// Cold tasks found by the check.
    pub cold_tasks: usize,
    /// Cold topic segments found by the check.
    pub cold_segments: usize,
    /// Records written (added or updated).
    pub stored: usize,
    /// Records already stored as given (left unchanged).
    pub unchanged: usize,
    /// Items queued for the first time.
    pub queued: usize,
    /// Items waiting in the queue now.
    pub pending: usize,
    /// Whether the agent was asked (again) to compress the pending items.
    pub reminded: bool,
    /// The queue file.
    pub queue: PathBuf,
    /// What to tell the agent, if anything.
    pub message: Option<String>,
    /// What capturing the transcript's new messages stored (at the checks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captured: Option<crate::flows::capture::CaptureReport>,
    /// Wall-clock time the hook took, in seconds.
    pub seconds: f64,
}

/// Which gates a `post-tool-use` call skips.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gates {
    /// Check now, whatever the turn count and the context usage (`--force`).
    pub force: bool,
    /// Skip only the every-N-turns gate (`FORCE_COMPRESSION_CHECK=1`).
    pub ignore_turns: bool,
}

/// `hook post-tool-use`: update the session; when due, summarize cold items,
/// store and queue them and ask the agent to compress them; remind it of a
/// batch still pending after `remind_after_turns` turns.
pub fn post_tool_use(
    store_root: &Path,
    input: &HookInput,
    settings: &HookSettings,
    gates: Gates,
) -> Result<PostToolUseReport> {
    let started = Instant::now();
    let files = HookFiles::new(store_root);
    let queue_path = queue::queue_path(store_root, settings, &input.session_id);
    let mut report = PostToolUseReport {
        session_id: input.session_id.clone(),
        ran: false,
        read: ReadReport::default(),
        assistant_turns: 0,
        usage: None,
        checked: false,
        cold_tasks: 0,
        cold_segments: 0,
        stored: 0,
        unchanged: 0,
        queued: 0,
        pending: 0,
        reminded: false,
        queue: queue_path.clone(),
        message: None,
        captured: None,
        seconds: 0.0,
    };
    let Some(_lock) = files.try_lock(&input.session_id)? else {
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    };
    report.ran = true;
    let (mut state, read) = update_state(&files, input, settings)?;
    report.read = read;
    report.assistant_turns = state.turn();
    let usage = context_usage(&state, settings);
    report.usage = Some(usage);
    let due = gates.ignore_turns
        || state.turn().saturating_sub(state.last_check_turn) >= settings.check_every_turns.max(1);
    let mut queue = Queue::load(&queue_path, &input.session_id)?;
    let queue_before = queue.clone();
    if gates.force || (due && usage.fraction >= settings.usage_threshold) {
        report.checked = true;
        let outcome = summarize_cold(store_root, &mut queue, &mut state, settings);
        // The state is saved even when storing failed: the items stay unsummarized
        // and are found again at the next check.
        save_state(&files, &input.session_id, &state)?;
        let summary = outcome?;
        report.cold_tasks = summary.items.iter().filter(|i| i.kind == "task").count();
        report.cold_segments = summary.items.iter().filter(|i| i.kind == "segment").count();
        report.stored = summary.written;
        report.unchanged = summary.unchanged;
        report.queued = summary.queued;
        report.captured =
            match capture::capture_session(store_root, input, settings, settings.lock_wait()) {
                Ok(captured) => captured,
                Err(e) => {
                    files.log_line(
                        "post-tool-use",
                        Some(&input.session_id),
                        &format!("capture: {e}"),
                    );
                    None
                }
            };
    } else {
        save_state(&files, &input.session_id, &state)?;
    }
    let now = state.turn();
    let quiet_for = now.saturating_sub(
        queue
            .last_reminder_turn
            .or_else(|| queue.pending.iter().map(|e| e.queued_at_turn).min())
            .unwrap_or(now),
    );
    let remind = report.queued > 0
        || (!queue.pending.is_empty() && quiet_for >= settings.remind_after_turns.max(1));
    if remind && report.queued == 0 {
        // Before asking again: a segment may have arrived without the queue
        // hearing of it (a writer killed between its commit and the queue).
        settle_arrived(store_root, &mut queue, now);
    }
    if remind && !queue.pending.is_empty() {
        let prefix = reminder::command_prefix(store_root);
        report.message = reminder::reminder(&queue, Some(usage), settings, &prefix);
        report.reminded = report.message.is_some();
        queue.last_reminder_turn = Some(now);
    }
    report.pending = queue.pending.len();
    if queue != queue_before {
        save_queue(&files, &queue, &queue_path)?;
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Saves the queue; the first time, removes the session's queue file of the
/// first layout (its items are found again with the right turns).
fn save_queue(files: &HookFiles, queue: &Queue, path: &Path) -> Result<()> {
    queue.save(path)?;
    let old = files.old_queue(&queue.session_id);
    if old.exists() && std::fs::remove_file(&old).is_ok() {
        files.log_line(
            "queue",
            Some(&queue.session_id),
            &format!(
                "replaced {} (first queue layout) by {}",
                old.display(),
                path.display()
            ),
        );
    }
    Ok(())
}

/// Moves pending entries whose record in the store is no longer the hooks'
/// rule-based summary (the agent's segment replaced it) to `compressed`.
/// Best effort: a store that cannot be opened leaves the queue as it is.
fn settle_arrived(store_root: &Path, queue: &mut Queue, turn: u64) {
    let Ok(store) = Store::open(store_root) else {
        return;
    };
    let ids: Vec<String> = queue.pending.iter().map(|e| e.segment_id.clone()).collect();
    for id in ids {
        let Ok(Some(record)) = store.get(&id) else {
            continue;
        };
        if record.kind == crate::record::Kind::Segment && !is_hook_summary(&record.source) {
            let location = format!("{}#{id}", store_root.display());
            queue.compress(&id, &record.source, Some(turn), location);
        }
    }
}

/// Whether a stored record is the hooks' rule-based summary.
pub fn is_hook_summary(source: &Value) -> bool {
    source.get("source").and_then(Value::as_str) == Some(HOOK_SOURCE)
}

/// What one cold check found and did.
struct ColdSummary {
    items: Vec<ColdItem>,
    /// Items queued for the first time.
    queued: usize,
    /// Records written (added or updated).
    written: usize,
    /// Records already stored as given.
    unchanged: usize,
}

/// Finds the cold items, stores their rule-based summaries (never over the
/// agent's own segment for an item), queues them; marks them in the state.
fn summarize_cold(
    store_root: &Path,
    queue: &mut Queue,
    state: &mut SessionState,
    settings: &HookSettings,
) -> Result<ColdSummary> {
    let items = cold::find(state, settings, &settings.namespace);
    let mut summary = ColdSummary {
        items: Vec::new(),
        queued: 0,
        written: 0,
        unchanged: 0,
    };
    if !items.is_empty() {
        let fresh: Vec<ColdItem> = items
            .iter()
            .filter(|i| !queue.is_compressed(&i.id))
            .cloned()
            .collect();
        let stored = store_items(store_root, &fresh)?;
        summary.written = stored.written;
        summary.unchanged = stored.unchanged;
        let to_queue: Vec<ColdItem> = fresh
            .into_iter()
            .filter(|i| !stored.agents_own.contains(&i.id))
            .collect();
        summary.queued = queue.push(&to_queue, state.turn());
    }
    queue.last_check_turn = state.turn();
    cold::mark_summarized(state, &items);
    state.last_check_turn = state.turn();
    summary.items = items;
    Ok(summary)
}

/// What storing the rule-based summaries did.
struct Stored {
    written: usize,
    unchanged: usize,
    /// Items the store already holds the agent's own segment for (left alone).
    agents_own: Vec<String>,
}

/// Opens the store (creating it on first use) and writes the summaries in one
/// commit, without embeddings (the upkeep adds them); an item whose stored
/// record is no longer the hooks' summary is not overwritten.
fn store_items(store_root: &Path, items: &[ColdItem]) -> Result<Stored> {
    let mut stored = Stored {
        written: 0,
        unchanged: 0,
        agents_own: Vec::new(),
    };
    if items.is_empty() {
        return Ok(stored);
    }
    let store = open_or_init(store_root)?;
    let options = ParseOptions {
        added_at: crate::now_rfc3339(),
        ..ParseOptions::default()
    };
    let mut records = Vec::with_capacity(items.len());
    for item in items {
        if let Some(existing) = store.get(&item.id)? {
            if !is_hook_summary(&existing.source) {
                stored.agents_own.push(item.id.clone());
                continue;
            }
        }
        let origin = Origin::file(format!("hook summary {}", item.id));
        let record = parse_record(item.record.clone(), &origin, &options)
            .map_err(|e| Error::Input(crate::error::InputErrors(vec![e])))?;
        records.push(record);
    }
    if records.is_empty() {
        return Ok(stored);
    }
    let timeout = store.lock_timeout(None).min(MAX_LOCK_WAIT);
    let report = store.add(records, None, timeout)?;
    // The summaries were stored without vectors: the background upkeep
    // computes them (never while the hook waits).
    crate::upkeep::nudge(&store, Some(report.without_vector as u64));
    stored.written = report.added + report.updated;
    stored.unchanged = report.unchanged;
    Ok(stored)
}

fn open_or_init(root: &Path) -> Result<Store> {
    match Store::open(root) {
        Err(Error::NoStore { .. }) => match Store::init(root) {
            Err(Error::StoreExists { .. }) => Store::open(root),
            other => other,
        },
        other => other,
    }
}

/// The hook output JSON that adds `text` to the model's context.
pub fn additional_context(event: &str, text: &str) -> Value {
    json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
}

/// The preservation block saved by `pre-compact`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedBlock {
    /// The session the block was built for.
    pub session_id: String,
    /// When the block was saved (RFC 3339).
    pub created_at: String,
    /// PreCompact's trigger (`auto|manual`), if Claude Code sent one.
    pub trigger: Option<String>,
    /// The preservation block's text.
    pub block: String,
    /// Given back to the model already (it is given once).
    pub injected: bool,
}

/// What `hook pre-compact` did.
#[derive(Debug, Clone, Serialize)]
pub struct PreCompactReport {
    /// The session the hook ran for.
    pub session_id: String,
    /// Whether the hook ran: always `true` in a returned report (it waits for
    /// the session's lock, else fails).
    pub ran: bool,
    /// Cold items found before the block was built (0 when storing their
    /// summaries failed).
    pub cold_items: usize,
    /// Length of the preservation block, in characters.
    pub block_chars: usize,
    /// Where the block was saved (`<session>.preserve.json`); always set in a
    /// returned report.
    pub saved: Option<PathBuf>,
    /// What capturing the transcript's new messages stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captured: Option<crate::flows::capture::CaptureReport>,
    /// Wall-clock time the hook took, in seconds.
    pub seconds: f64,
}

/// `hook pre-compact`: update the session, summarize and queue what is cold (no
/// gates), build the preservation block and save it. The queue's pending items
/// stay pending: a compaction compresses nothing.
pub fn pre_compact(
    store_root: &Path,
    input: &HookInput,
    settings: &HookSettings,
) -> Result<PreCompactReport> {
    let started = Instant::now();
    let files = HookFiles::new(store_root);
    let mut report = PreCompactReport {
        session_id: input.session_id.clone(),
        ran: false,
        cold_items: 0,
        block_chars: 0,
        saved: None,
        captured: None,
        seconds: 0.0,
    };
    // A post-tool-use hook may be finishing: wait a little for it.
    let _lock = files.lock_waiting(&input.session_id, Duration::from_secs(5))?;
    report.ran = true;
    let (mut state, _) = update_state(&files, input, settings)?;
    let queue_path = queue::queue_path(store_root, settings, &input.session_id);
    let mut queue = Queue::load(&queue_path, &input.session_id)?;
    let outcome = summarize_cold(store_root, &mut queue, &mut state, settings);
    save_state(&files, &input.session_id, &state)?;
    match &outcome {
        Ok(summary) => report.cold_items = summary.items.len(),
        // The block is still worth saving without the new summaries.
        Err(e) => files.log_line(
            "pre-compact",
            Some(&input.session_id),
            &format!("storing summaries: {e}"),
        ),
    }
    save_queue(&files, &queue, &queue_path)?;
    // Everything the compaction is about to drop from the context is stored
    // first; a busy store defers it to the next hook call.
    report.captured =
        match capture::capture_session(store_root, input, settings, settings.lock_wait()) {
            Ok(captured) => captured,
            Err(e) => {
                files.log_line(
                    "pre-compact",
                    Some(&input.session_id),
                    &format!("capture: {e}"),
                );
                None
            }
        };
    let cwd = input
        .cwd
        .clone()
        .or_else(|| state.cwd.as_ref().map(PathBuf::from));
    let block = preserve::build(
        &state,
        &queue,
        store_root,
        cwd.as_deref(),
        input.trigger.as_deref(),
    );
    let saved = SavedBlock {
        session_id: input.session_id.clone(),
        created_at: crate::now_rfc3339(),
        trigger: input.trigger.clone(),
        block,
        injected: false,
    };
    let path = files.preserve(&input.session_id);
    write_json_atomically(&path, &saved)?;
    report.block_chars = saved.block.chars().count();
    report.saved = Some(path);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// `hook session-start`: after a compaction (`source: compact`), the saved
/// block, once; when a session starts or resumes, the brief of the project's
/// recent work ([`brief`]). Returns the text to add to the context, if any.
pub fn session_start(store_root: &Path, input: &HookInput) -> Result<Option<String>> {
    match input.source.as_deref() {
        Some("compact") => {}
        Some("startup" | "resume") => return brief::brief(store_root, input),
        _ => return Ok(None),
    }
    let files = HookFiles::new(store_root);
    let path = files.preserve(&input.session_id);
    let Some(mut saved) = read_json::<SavedBlock>(&path)? else {
        return Ok(None);
    };
    if saved.injected || saved.block.trim().is_empty() {
        return Ok(None);
    }
    // Marked before it is printed: a block is never given twice.
    saved.injected = true;
    write_json_atomically(&path, &saved)?;
    Ok(Some(saved.block))
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use proptest::prelude::*;

    use super::*;
    use crate::transcript::{read_slice, Format, ReadFrom};

    #[test]
    fn recent_log_gives_the_last_lines_across_the_rotation() {
        let dir = tempfile::tempdir().expect("tmp");
        let files = HookFiles::new(dir.path());
        assert!(files.recent_log(5).expect("no log").is_empty());
        std::fs::create_dir_all(&files.dir).expect("dir");
        std::fs::write(files.dir.join("hooks.log.1"), "old 1\nold 2\n").expect("write");
        files.log_line("post-tool-use", Some("s1"), "error: one\ntwo");
        let lines = files.recent_log(2).expect("log");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], "old 2");
        assert!(
            lines[1].ends_with("post-tool-use session=s1 error: one | two"),
            "{lines:?}"
        );
        assert_eq!(files.recent_log(10).expect("log").len(), 3);
    }

    fn fixture() -> Vec<u8> {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("data-samples/hooks/tasks-session.jsonl.gz");
        let raw = std::fs::read(path).expect("fixture");
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .expect("gunzip");
        out
    }

    /// The state after the hook ran once per cut, the file growing to each cut
    /// (cuts may fall inside a line or inside a split API response).
    fn final_state(bytes: &[u8], cuts: &[usize]) -> SessionState {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("t.jsonl");
        let input = HookInput {
            session_id: "s".into(),
            transcript_path: Some(path.clone()),
            ..HookInput::default()
        };
        let settings = HookSettings {
            check_every_turns: u64::MAX,
            ..HookSettings::default()
        };
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        points.sort_unstable();
        points.push(bytes.len());
        for point in points {
            std::fs::write(&path, &bytes[..point]).expect("write");
            let report =
                post_tool_use(dir.path(), &input, &settings, Gates::default()).expect("hook");
            assert!(!report.checked);
        }
        let mut state: SessionState = read_json(&HookFiles::new(dir.path()).state("s"))
            .expect("state")
            .expect("saved");
        // Token estimates are per read (a response read in two parts is estimated
        // in two parts); everything else must not depend on how the file was read.
        state.transcript = PathBuf::new();
        state.estimated_tokens = 0;
        for task in &mut state.tasks {
            task.activity.tokens = 0;
        }
        state.since_task_change.tokens = 0;
        for segment in state
            .closed_segments
            .iter_mut()
            .chain(state.open_segment.as_mut())
        {
            segment.activity.tokens = 0;
        }
        state
    }

    /// The messages of Claude Code transcript lines.
    fn read_lines(lines: &[serde_json::Value]) -> Vec<crate::transcript::Message> {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        read_slice(
            Path::new("s.jsonl"),
            text.as_bytes(),
            Some(Format::ClaudeCode),
            ReadFrom::default(),
        )
        .expect("read")
        .messages
    }

    #[test]
    fn usage_falls_back_to_an_estimate_and_restarts_at_a_compaction() {
        let words = "parse the config loader again ".repeat(80);
        let lines = [
            json!({"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":words}}),
            json!({"type":"assistant","sessionId":"s","uuid":"a1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Done."}]}}),
        ];
        let mut state = SessionState::new("s", "s.jsonl".into());
        state.observe(&read_lines(&lines), 20);
        let settings = HookSettings {
            context_window: 1_000,
            ..HookSettings::default()
        };
        let usage = context_usage(&state, &settings);
        assert_eq!(usage.source, "estimate");
        assert!(usage.fraction > 0.6, "{usage:?}");

        let after = [
            json!({"type":"system","subtype":"compact_boundary","sessionId":"s","uuid":"cb","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":900}}),
            json!({"type":"assistant","sessionId":"s","uuid":"a2","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"Resuming."}],"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":20}}}),
        ];
        state.observe(&read_lines(&after), 20);
        let usage = context_usage(&state, &settings);
        assert_eq!((usage.source, usage.tokens), ("usage", 120));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        #[test]
        fn reading_in_pieces_equals_reading_whole(cuts in proptest::collection::vec(0usize..60_000, 1..8)) {
            let bytes = fixture();
            prop_assert_eq!(final_state(&bytes, &cuts), final_state(&bytes, &[]));
        }
    }
}
