//! Reading turns back: the raw messages of a session's assistant turns A to B,
//! for `knowledge-db show --session S --turns A-B` and MCP `memory_get` with a
//! session and a turn range — what the agent reads before compressing a queued
//! item.
//!
//! Turns are the hooks' clock: assistant responses of the main chain, from 1.
//! The hooks note where each turn starts in the transcript
//! ([`super::session::SessionState::turn_lines`]); a turn range is a range of
//! transcript lines. The messages come from the store when the session was
//! ingested (`knowledge-db ingest` keeps each message's line), else from the
//! transcript file itself. Without a turn index (the hooks never followed the
//! session), the index is built from the transcript the stored messages name.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

use super::session::SessionState;
use super::{read_json, HookFiles};
use crate::error::{Error, Result};
use crate::record::{Kind, Record};
use crate::store::Store;
use crate::transcript::{read_slice, Format, Message, ReadFrom};

/// Longest message text shown unless the caller asks for everything.
pub const DEFAULT_MESSAGE_CHARS: usize = 4_000;

/// What to read.
#[derive(Debug, Clone)]
pub struct TurnQuery {
    /// The session to read.
    pub session_id: String,
    /// First assistant turn of the range (from 1).
    pub from: u64,
    /// Last assistant turn of the range (at least `from`; cut to the turns there are).
    pub to: u64,
    /// Most messages returned (a page); `None` for all.
    pub limit: Option<usize>,
    /// Longest text per message (head and tail kept); `None` for whole texts.
    pub max_chars: Option<usize>,
    /// Only messages stored in this namespace, and never the transcript file
    /// (a server scoped to a namespace reads nothing outside it); `None` for any.
    pub namespace: Option<String>,
}

/// One message of a turn range.
#[derive(Debug, Clone, Serialize)]
pub struct TurnMessage {
    /// The assistant turn the message belongs to.
    pub turn: u64,
    /// The message's line in the transcript.
    pub line: u64,
    /// The speaker: `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// The message's text, shortened to `max_chars` when asked.
    pub text: String,
    /// The message's timestamp, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Characters cut from the middle of the text (0 when whole).
    #[serde(skip_serializing_if = "is_zero")]
    pub cut_chars: usize,
    /// The message's record id (the id `ingest` gives it, whether or not it
    /// is stored), for `get`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tools the message calls or answers (a tool call's line), if any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The messages of a turn range and where they came from.
#[derive(Debug, Clone, Serialize)]
pub struct TurnMessages {
    /// The session read.
    pub session_id: String,
    /// First assistant turn of the range.
    pub from: u64,
    /// Last assistant turn of the range (cut to the turns the session has).
    pub to: u64,
    /// Turns the session has so far.
    pub turns: u64,
    /// `store` (ingested messages) or `transcript` (read from the file).
    pub source: &'static str,
    /// The session's transcript, when known.
    pub transcript: Option<PathBuf>,
    /// Transcript line where the range starts.
    pub first_line: u64,
    /// Transcript line where the range ends; `None` when it runs to the end.
    pub last_line: Option<u64>,
    /// The messages in the range, by line (a page of them when `limit` was given).
    pub messages: Vec<TurnMessage>,
    /// The turn to read from next, when a page did not hold the whole range.
    #[serde(rename = "nextFrom", skip_serializing_if = "Option::is_none")]
    pub next_from: Option<u64>,
    /// Whether `limit` cut the range (`nextFrom` says where to go on).
    pub truncated: bool,
}

/// Where each turn starts, and the transcript.
struct TurnIndex {
    turn_lines: Vec<u64>,
    transcript: Option<PathBuf>,
}

impl TurnIndex {
    /// The turn a transcript line belongs to.
    fn turn_of(&self, line: u64) -> u64 {
        self.turn_lines
            .partition_point(|&start| start <= line)
            .max(1) as u64
    }
}

/// The turn (as [`read_turns`] counts them) that holds transcript line
/// `line` of `session`: where a stored message's raw turns begin (the
/// viewer opens a message's session there).
pub fn turn_of_line(store_root: &Path, session: &str, line: u64) -> Result<u64> {
    let stored = match Store::open(store_root) {
        Ok(store) => session_messages(&store, session)?,
        Err(Error::NoStore { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    Ok(turn_index(store_root, session, &stored)?.turn_of(line))
}

/// Reads turns `from..=to` of a session: from the store, else the transcript.
pub fn read_turns(store_root: &Path, query: &TurnQuery) -> Result<TurnMessages> {
    let session = query.session_id.as_str();
    if query.from == 0 || query.to < query.from {
        return Err(Error::Usage(format!(
            "turns {}-{}: turns count the assistant's responses from 1; give A-B with 1 <= A <= B",
            query.from, query.to
        )));
    }
    let store = match Store::open(store_root) {
        Ok(store) => Some(store),
        Err(Error::NoStore { .. }) => None,
        Err(e) => return Err(e),
    };
    let mut stored = match &store {
        Some(store) => session_messages(store, session)?,
        None => Vec::new(),
    };
    if let Some(namespace) = &query.namespace {
        stored.retain(|r| &r.namespace == namespace);
        if stored.is_empty() {
            return Err(Error::OutsideNamespace(format!(
                "session {session}: no messages of it are stored in namespace `{namespace}`, \
                 the only one this server reads (--namespace)"
            )));
        }
    }
    let index = turn_index(store_root, session, &stored)?;
    let turns = index.turn_lines.len() as u64;
    if query.from > turns {
        return Err(Error::Usage(format!(
            "session {session} has {turns} turn(s) so far; turn {} is not there yet",
            query.from
        )));
    }
    let to = query.to.min(turns);
    let first_line = index.turn_lines[(query.from - 1) as usize];
    let last_line = index.turn_lines.get(to as usize).map(|next| next - 1);
    let in_range = |line: u64| line >= first_line && last_line.is_none_or(|last| line <= last);
    let from_store: Vec<&Record> = stored
        .iter()
        .filter(|r| line_of(r).is_some_and(in_range) && !is_sidechain(r))
        .collect();
    // The store answers when it holds the range's first message and, for a
    // closed range, something at or past its end (an ingest that stopped
    // midway leaves the rest to the transcript).
    let complete = from_store.iter().any(|r| line_of(r) == Some(first_line))
        && last_line.is_none_or(|last| stored.iter().any(|r| line_of(r).is_some_and(|l| l > last)));
    // A scoped read answers from its namespace's stored messages only.
    let readable =
        query.namespace.is_none() && index.transcript.as_deref().is_some_and(Path::is_file);
    let (source, mut messages) = if !from_store.is_empty() && (complete || !readable) {
        let messages: Vec<TurnMessage> = from_store
            .iter()
            .map(|r| stored_message(r, &index, query.max_chars))
            .collect();
        ("store", messages)
    } else if let Some(path) = index.transcript.as_deref().filter(|_| readable) {
        let messages = transcript_messages(path, session, first_line, last_line)?
            .iter()
            .map(|m| transcript_message(m, session, &index, query.max_chars))
            .collect();
        ("transcript", messages)
    } else {
        return Err(not_available(session, index.transcript.as_deref()));
    };
    messages.sort_by_key(|m: &TurnMessage| m.line);
    let mut out = TurnMessages {
        session_id: session.to_string(),
        from: query.from,
        to,
        turns,
        source,
        transcript: index.transcript.clone(),
        first_line,
        last_line,
        messages,
        next_from: None,
        truncated: false,
    };
    if let Some(limit) = query.limit.map(|l| l.max(1)) {
        if out.messages.len() > limit {
            // Pages end at a turn boundary when they can, so a page holds whole turns.
            let next_turn = out.messages[limit].turn;
            let cut_at = out
                .messages
                .iter()
                .position(|m| m.turn == next_turn)
                .filter(|&i| i > 0)
                .unwrap_or(limit);
            out.next_from = Some(out.messages[cut_at].turn.max(query.from + 1));
            out.messages.truncate(cut_at);
            out.truncated = true;
        }
    }
    Ok(out)
}

fn not_available(session: &str, transcript: Option<&Path>) -> Error {
    match transcript {
        Some(path) => Error::Usage(format!(
            "session {session}: its messages are not in the store and its transcript {} is gone; \
             nothing can show these turns",
            path.display()
        )),
        None => Error::Usage(format!(
            "session {session}: no messages in the store and no transcript known; \
             run `knowledge-db ingest <its transcript .jsonl>` to store them, then ask again"
        )),
    }
}

/// The session's stored messages.
fn session_messages(store: &Store, session: &str) -> Result<Vec<Record>> {
    let searcher = store.reader()?.searcher();
    crate::store::browse::session_messages(&searcher, store.fields(), session, 0, u64::MAX)
}

fn line_of(record: &Record) -> Option<u64> {
    record.source.get("origin")?.get("line")?.as_u64()
}

fn is_sidechain(record: &Record) -> bool {
    record.source.get("is_sidechain").and_then(Value::as_bool) == Some(true)
}

/// Whether the hooks followed a session (and so number its turns).
pub fn has_turn_index(store_root: &Path, session: &str) -> bool {
    read_json::<SessionState>(&HookFiles::new(store_root).state(session))
        .ok()
        .flatten()
        .is_some_and(|s| !s.turn_lines.is_empty())
}

/// The turn index: the hooks' state of the session, else one built from the
/// transcript its stored messages were read from.
fn turn_index(store_root: &Path, session: &str, stored: &[Record]) -> Result<TurnIndex> {
    let files = HookFiles::new(store_root);
    if let Some(state) = read_json::<SessionState>(&files.state(session))
        .ok()
        .flatten()
    {
        if !state.turn_lines.is_empty() {
            return Ok(TurnIndex {
                turn_lines: state.turn_lines,
                transcript: Some(state.transcript),
            });
        }
    }
    let transcript = stored
        .iter()
        .filter(|r| r.kind == Kind::Message)
        .find_map(|r| {
            r.source
                .get("origin")?
                .get("path")?
                .as_str()
                .map(PathBuf::from)
        });
    match transcript {
        Some(path) if path.is_file() => {
            let messages = read_transcript(&path, session)?;
            let mut state = SessionState::new(session, path.clone());
            state.observe(&messages, 1);
            Ok(TurnIndex {
                turn_lines: state.turn_lines,
                transcript: Some(path),
            })
        }
        Some(path) => Err(Error::Usage(format!(
            "session {session}: the hooks kept no turn index and its transcript {} is gone; \
             `knowledge-db search --session {session} --kind message` lists its stored messages \
             by conversation turn",
            path.display()
        ))),
        None => Err(not_available(session, None)),
    }
}

/// Every message of a Claude Code transcript (gzipped or not), lines
/// numbered from the file's start (a regular file within the transcript size
/// limit only: the path comes from a stored record, which anyone may have
/// written).
fn read_transcript(path: &Path, session: &str) -> Result<Vec<Message>> {
    let bytes = crate::transcript::read_bytes(path)?;
    let from = ReadFrom {
        session_id: Some(session.to_string()),
        ..ReadFrom::default()
    };
    Ok(read_slice(path, &bytes, Some(Format::ClaudeCode), from)?.messages)
}

/// The main-chain messages of the transcript lines `first..=last`.
fn transcript_messages(
    path: &Path,
    session: &str,
    first: u64,
    last: Option<u64>,
) -> Result<Vec<Message>> {
    Ok(read_transcript(path, session)?
        .into_iter()
        .filter(|m| {
            let line = m.line as u64;
            !m.is_sidechain && line >= first && last.is_none_or(|l| line <= l)
        })
        .collect())
}

/// `text` cut to `max` characters, keeping its head and tail; and how many
/// characters went.
fn shorten(text: &str, max: Option<usize>) -> (String, usize) {
    let count = text.chars().count();
    match max {
        Some(max) if count > max => {
            let head: String = text.chars().take(max * 3 / 4).collect();
            let tail: String = text.chars().skip(count - max / 4).collect();
            let gone = count - max * 3 / 4 - max / 4;
            (
                format!("{head}\n[… {gone} characters cut; `--full` shows them]\n{tail}"),
                gone,
            )
        }
        _ => (text.to_string(), 0),
    }
}

fn stored_message(record: &Record, index: &TurnIndex, max: Option<usize>) -> TurnMessage {
    let line = line_of(record).unwrap_or(0);
    let text = record
        .source
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (text, cut_chars) = shorten(text, max);
    TurnMessage {
        turn: index.turn_of(line),
        line,
        role: record.fields.title.clone(),
        text,
        timestamp: record
            .source
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_string),
        cut_chars,
        id: Some(record.id.clone()),
        tools: record
            .source
            .get("tool_names")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn transcript_message(
    message: &Message,
    session: &str,
    index: &TurnIndex,
    max: Option<usize>,
) -> TurnMessage {
    let line = message.line as u64;
    let (text, cut_chars) = shorten(&message.text(), max);
    TurnMessage {
        turn: index.turn_of(line),
        line,
        role: message.role.as_str().to_string(),
        text,
        timestamp: message.timestamp.clone(),
        cut_chars,
        id: Some(crate::transcript::ingest::message_id(session, message)),
        tools: message.tool_names(),
    }
}

impl TurnMessages {
    /// The range as text for a reader: a heading per turn, then each message.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "session {} turns {}-{} of {} (transcript lines {}-{}; from the {}{})\n",
            self.session_id,
            self.from,
            self.to,
            self.turns,
            self.first_line,
            self.last_line.map_or("end".to_string(), |l| l.to_string()),
            self.source,
            self.transcript
                .as_ref()
                .filter(|_| self.source == "transcript")
                .map(|p| format!(" {}", p.display()))
                .unwrap_or_default()
        );
        let mut turn = 0;
        for m in &self.messages {
            if m.turn != turn {
                turn = m.turn;
                out.push_str(&format!("\n── turn {turn} ──\n"));
            }
            out.push_str(&format!("[{}] {}\n", m.role, m.text.trim_end()));
        }
        if let Some(next) = self.next_from {
            out.push_str(&format!("\n… more from turn {next}\n"));
        }
        out
    }

    /// The range as JSON: what `show --json` and MCP `memory_get` return.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| json!({}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_map_to_turns() {
        let index = TurnIndex {
            turn_lines: vec![3, 5, 9],
            transcript: None,
        };
        assert_eq!(index.turn_of(3), 1);
        assert_eq!(index.turn_of(4), 1);
        assert_eq!(index.turn_of(5), 2);
        assert_eq!(index.turn_of(12), 3);
        assert_eq!(index.turn_of(1), 1);
    }

    #[test]
    fn long_texts_keep_head_and_tail() {
        let text = "a".repeat(100) + &"b".repeat(100);
        let (short, gone) = shorten(&text, Some(40));
        assert_eq!(gone, 160);
        assert!(short.starts_with(&"a".repeat(30)) && short.ends_with(&"b".repeat(10)));
        assert_eq!(shorten("abc", Some(40)), ("abc".to_string(), 0));
        assert_eq!(shorten(&text, None).1, 0);
    }
}
