//! The hooks' folder in a store (`<store>/hooks/`) and the files in it: a
//! session's state, its preservation block, its lock, and `hooks.log` (a hook
//! logs its errors instead of failing the agent's tool call). Everything the
//! hooks write there is redacted first: the files hold text taken from the
//! transcript, and no secret may reach disk.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::session::SessionState;
use super::{queue, HookSettings};
use crate::error::{Error, Result};

/// The log file's size past which it is rotated (to `hooks.log.1`).
const MAX_LOG_BYTES: u64 = 1024 * 1024;

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

    /// A file name safe for any session id (others are hashed): see
    /// [`crate::files::session_stem`].
    pub fn stem(session_id: &str) -> String {
        crate::files::session_stem(session_id)
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

    /// The error that keeps the hooks out of a store path that is no store's
    /// folder (a project, a home folder, a file): they write nothing there
    /// (see `crate::store::folder`); `None` when they may write.
    fn foreign(&self) -> Option<Error> {
        let root = self.dir.parent()?;
        match crate::store::folder::examine(root) {
            crate::store::folder::Folder::Foreign(_) | crate::store::folder::Folder::File => {
                crate::store::folder::no_store_error(root)
            }
            _ => None,
        }
    }

    /// Takes the session's lock without waiting: `None` when another hook of the
    /// same session is running (it will catch up on this call's bytes).
    pub(super) fn try_lock(&self, session_id: &str) -> Result<Option<File>> {
        if let Some(refused) = self.foreign() {
            return Err(refused);
        }
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
        let _ = self.log_line_checked(command, session_id, message);
    }

    /// Appends one line to `hooks.log` and says where it went: the store's
    /// log, or, when that cannot be written (a read-only or full store), the
    /// fallback log in the user's state folder
    /// (`$XDG_STATE_HOME/knowledge-db/hooks.log`). `Err` says why neither
    /// could be written, in words (`could not log: read-only file system`).
    pub fn log_line_checked(
        &self,
        command: &str,
        session_id: Option<&str>,
        message: &str,
    ) -> std::result::Result<LoggedTo, String> {
        if let Some(refused) = self.foreign() {
            // Not a store's folder: say it where the agent's client shows hook output.
            let message = crate::privacy::Redactor::builtin().redact(message).text;
            eprintln!("knowledge-db hook {command}: {message} ({refused})");
            return Err(format!("not logged: {refused}"));
        }
        let path = self.log();
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
        let store_failed = match append_line(&self.dir, &path, &line) {
            Ok(()) => return Ok(LoggedTo::Store(path)),
            Err(e) => format!("could not log to {}: {}", path.display(), os_reason(&e)),
        };
        let Some(state) = super::missed::state_dir() else {
            return Err(store_failed);
        };
        let fallback = state.join("hooks.log");
        let line = format!(
            "{} store={}\n",
            line.trim_end(),
            self.dir.parent().unwrap_or(&self.dir).display()
        );
        match append_line(&state, &fallback, &line) {
            Ok(()) => Ok(LoggedTo::Fallback {
                path: fallback,
                why: store_failed,
            }),
            Err(e) => Err(format!(
                "{store_failed}; nor to {}: {}",
                fallback.display(),
                os_reason(&e)
            )),
        }
    }
}

/// Where a line of the hooks' log went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoggedTo {
    /// The store's `hooks/hooks.log`.
    Store(PathBuf),
    /// The fallback log in the user's state folder, and why the store's
    /// could not be written.
    Fallback {
        /// The fallback log.
        path: PathBuf,
        /// Why the store's log could not be written.
        why: String,
    },
}

impl std::fmt::Display for LoggedTo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoggedTo::Store(path) => write!(f, "logged to {}", path.display()),
            LoggedTo::Fallback { path, why } => {
                write!(f, "{why}; logged to {} instead", path.display())
            }
        }
    }
}

/// Appends `line` to the log at `path` in `dir` (created if missing),
/// rotating a log past [`MAX_LOG_BYTES`] to `<name>.1`.
fn append_line(dir: &Path, path: &Path, line: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    if std::fs::metadata(path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        let mut rotated = path.as_os_str().to_owned();
        rotated.push(".1");
        let _ = std::fs::rename(path, rotated);
    }
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(line.as_bytes())?;
    Ok(())
}

/// An I/O error as a person says it: `read-only file system`, `no space
/// left on device` (the system's text, lower-cased, without its number).
pub fn os_reason(error: &std::io::Error) -> String {
    let text = error.to_string();
    let text = match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
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
pub(super) fn save_state(files: &HookFiles, session_id: &str, state: &SessionState) -> Result<()> {
    let path = files.state(session_id);
    let bytes = redacted_json(&path, state)?;
    crate::files::replace(&path, &bytes, crate::files::Durability::Atomic)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
