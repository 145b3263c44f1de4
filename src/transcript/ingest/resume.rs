//! Read positions: how far each transcript was read, so that a file that
//! only grew is read from where the last ingest stopped (a hook that runs
//! every turn reads a turn, not the session), and anything else (compressed,
//! rewritten, or saved by an older release) is read whole. Saved under
//! `<store>/ingest/<hash of path>.json` after the records are committed.

use std::path::{Path, PathBuf};

use super::{filled_lines, last_timestamp, IngestState, LastPrompt};
use crate::error::{Error, Result};
use crate::privacy::Redactor;
use crate::store::Store;
use crate::transcript::{read_bytes_within, read_slice, Format, Limit, ReadFrom, Transcript};

/// After `forget`: removes the read positions of the transcripts of
/// `sessions` (the next ingest reads them whole, and tombstones keep their
/// records out), and drops the last prompt a position keeps when that prompt
/// was forgotten (it holds the prompt's text). Best effort.
pub fn forget_read_positions(
    store: &Store,
    sessions: &[String],
    gone: &std::collections::HashSet<String>,
) {
    let Ok(entries) = std::fs::read_dir(store.root().join("ingest")) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(mut state) = serde_json::from_slice::<IngestState>(&bytes) else {
            continue;
        };
        if sessions.contains(&state.session_id) {
            let _ = std::fs::remove_file(&path);
        } else if state
            .last_prompt
            .as_ref()
            .is_some_and(|p| gone.contains(&p.id))
        {
            state.last_prompt = None;
            if let Ok(text) = serde_json::to_vec_pretty(&state) {
                let _ = crate::files::replace(&path, &text, crate::files::Durability::Durable);
            }
        }
    }
}

/// Forgets how far `path` was read (the next ingest reads it whole).
pub fn forget_read_position(store: &Store, path: &Path) {
    let _ = std::fs::remove_file(state_path(store, path));
}

fn state_path(store: &Store, path: &Path) -> PathBuf {
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let key = xxhash_rust::xxh3::xxh3_64(canonical.to_string_lossy().as_bytes());
    store.root().join("ingest").join(format!("{key:016x}.json"))
}

/// The saved read position of `path`, if any and readable.
pub(super) fn saved_state(store: &Store, path: &Path) -> Option<IngestState> {
    let text = std::fs::read(state_path(store, path)).ok()?;
    serde_json::from_slice::<IngestState>(&text).ok()
}

/// What was before the bytes a read covers.
#[derive(Debug, Clone, Default)]
pub(super) struct Before {
    /// Line breaks before the part.
    pub(super) lines: u64,
    /// Non-empty lines before the part.
    pub(super) filled_lines: u64,
    /// The last `timestamp` before the part.
    pub(super) last_timestamp: Option<String>,
}

/// The bytes one ingest read of a file covers: from `base` (the saved
/// position of a file that only grew, else 0) to the end.
pub(super) struct Part {
    /// The file's (decompressed) bytes from `base` on.
    pub(super) bytes: Vec<u8>,
    /// Their offset in the file.
    pub(super) base: u64,
    /// What was before them.
    pub(super) before: Before,
    /// The latest prompt before the first message read (see [`LastPrompt`]).
    pub(super) earlier: Option<LastPrompt>,
}

/// Bytes before a resume offset whose hash tells whether a file only grew.
const TAIL_BYTES: u64 = 256;

/// Reads what is new in `path` since `saved`: for a plain file that only
/// grew (the [`TAIL_BYTES`] before the saved offset unchanged), just the
/// bytes from that offset, so a hook that runs every turn reads a turn, not
/// the session; otherwise the whole file (compressed, rewritten, or saved by
/// an older release), resuming at the saved offset when the bytes before it
/// are unchanged.
pub(super) fn read_new_part(
    path: &Path,
    saved: Option<IngestState>,
    format: Option<Format>,
    limit: Limit,
) -> Result<(Part, Transcript)> {
    let (part, mut transcript) = read_part(path, saved.clone(), format, limit)?;
    // Resumed after a header that named the working directory.
    if transcript.cwd.is_none() && transcript.start_offset > 0 {
        transcript.cwd = saved.and_then(|s| s.cwd);
    }
    Ok((part, transcript))
}

fn read_part(
    path: &Path,
    saved: Option<IngestState>,
    format: Option<Format>,
    limit: Limit,
) -> Result<(Part, Transcript)> {
    if let Some(state) = &saved {
        if let Some(part) = grown_part(path, state, limit)? {
            let from = ReadFrom {
                offset: 0,
                prompts_before: state.prompts_before,
                session_id: Some(state.session_id.clone()),
            };
            let mut transcript = read_slice(path, &part.bytes, Some(state.format), from)?;
            shift(&mut transcript, part.base, part.before.lines);
            return Ok((part, transcript));
        }
    }
    let bytes = read_bytes_within(path, limit)?;
    let (from, earlier) = match saved {
        Some(state) => resume_point(state, &bytes),
        None => (ReadFrom::default(), None),
    };
    let transcript = read_slice(path, &bytes, format, from)?;
    let part = Part {
        bytes,
        base: 0,
        before: Before::default(),
        earlier,
    };
    Ok((part, transcript))
}

/// The bytes a plain file gained since `state` was saved, or `None` when
/// it must be read whole (compressed, shorter, rewritten before the offset,
/// or a state without the tail hash).
fn grown_part(path: &Path, state: &IngestState, limit: Limit) -> Result<Option<Part>> {
    let (Some(tail_hash), Some(lines), Some(filled_lines)) = (
        state.tail_hash,
        state.lines_before,
        state.filled_lines_before,
    ) else {
        return Ok(None);
    };
    // A FIFO or a device is refused before it is opened for reading.
    let (mut file, len) = crate::bounded::open_regular(path)?;
    let offset = state.resume_offset;
    if len < offset || is_gzip(&mut file, path)? {
        return Ok(None);
    }
    if len - offset > limit.bytes {
        return Err(limit.exceeded(
            path,
            format!(
                "the part added since the last read is {}",
                crate::bounded::human_bytes(len - offset)
            ),
        ));
    }
    let start = offset.saturating_sub(TAIL_BYTES);
    let mut window = read_range(&mut file, path, start, offset - start)?;
    if xxhash_rust::xxh3::xxh3_64(&window) != tail_hash {
        return Ok(None);
    }
    window.clear();
    let bytes = read_range(&mut file, path, offset, len - offset)?;
    Ok(Some(Part {
        bytes,
        base: offset,
        before: Before {
            lines,
            filled_lines,
            last_timestamp: state.last_timestamp.clone(),
        },
        earlier: state.last_prompt.clone(),
    }))
}

/// Whether the file starts with gzip's magic number.
fn is_gzip(file: &mut std::fs::File, path: &Path) -> Result<bool> {
    Ok(read_range(file, path, 0, 2)? == [0x1f, 0x8b])
}

/// Up to `len` bytes of `file` from `start` (fewer at its end).
fn read_range(file: &mut std::fs::File, path: &Path, start: u64, len: u64) -> Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(start))
        .map_err(|e| Error::io(path, e))?;
    let mut out = Vec::new();
    file.take(len)
        .read_to_end(&mut out)
        .map_err(|e| Error::io(path, e))?;
    Ok(out)
}

/// Makes a transcript read from bytes that started at `base` (line `lines`
/// of the file) speak in the file's offsets and line numbers.
fn shift(transcript: &mut Transcript, base: u64, lines: u64) {
    for message in &mut transcript.messages {
        message.byte_offset += base;
        message.line += lines as usize;
    }
    transcript.start_offset += base;
    transcript.end_offset += base;
    transcript.total_bytes += base;
}

/// Where to resume reading a file whose whole bytes are `bytes`, given its
/// saved state, and the latest prompt before that point: the saved position
/// if the bytes before it are unchanged, else the start.
fn resume_point(state: IngestState, bytes: &[u8]) -> (ReadFrom, Option<LastPrompt>) {
    let offset = state.resume_offset as usize;
    if offset > bytes.len() {
        return (ReadFrom::default(), None);
    }
    let unchanged = match state.tail_hash {
        Some(hash) => {
            xxhash_rust::xxh3::xxh3_64(&bytes[offset.saturating_sub(TAIL_BYTES as usize)..offset])
                == hash
        }
        None => xxhash_rust::xxh3::xxh3_64(&bytes[..offset]) == state.prefix_hash,
    };
    if !unchanged {
        return (ReadFrom::default(), None);
    }
    let from = ReadFrom {
        offset: state.resume_offset,
        prompts_before: state.prompts_before,
        session_id: Some(state.session_id),
    };
    (from, state.last_prompt)
}

/// The state to save after reading `part` into `t`: the next read starts at
/// the last message (it may still grow), or before an unterminated last line;
/// the prompts before that point are counted so turn indices continue
/// exactly where a whole read would have them.
pub(super) fn next_state(t: &Transcript, part: &Part, redactor: &Redactor) -> Result<IngestState> {
    let resume = t
        .messages
        .last()
        .map_or(t.end_offset, |last| last.byte_offset.min(t.end_offset))
        .max(part.base);
    let before = t
        .messages
        .iter()
        .filter(|m| m.byte_offset < resume && m.is_prompt())
        .count() as u64;
    let prompts = t.prompts_before + before;
    let last_prompt = t
        .messages
        .iter()
        .rfind(|m| m.byte_offset < resume && m.is_prompt())
        .map(|m| LastPrompt::of(t, m, redactor))
        .or_else(|| part.earlier.clone());
    let end = (part.base + part.bytes.len() as u64).min(resume.max(part.base));
    let read = &part.bytes[..(end - part.base) as usize];
    let tail_start = end.saturating_sub(TAIL_BYTES);
    let tail_hash = if tail_start >= part.base {
        xxhash_rust::xxh3::xxh3_64(&read[(tail_start - part.base) as usize..])
    } else {
        // The window reaches before this read: take it from the file.
        let mut file = std::fs::File::open(&t.path).map_err(|e| Error::io(&t.path, e))?;
        xxhash_rust::xxh3::xxh3_64(&read_range(
            &mut file,
            &t.path,
            tail_start,
            end - tail_start,
        )?)
    };
    let timestamp = Some(last_timestamp(read)).filter(|s| !s.is_empty());
    Ok(IngestState {
        path: t.path.clone(),
        format: t.format,
        size: part.base + part.bytes.len() as u64,
        resume_offset: end,
        prefix_hash: 0,
        tail_hash: Some(tail_hash),
        lines_before: Some(part.before.lines + read.iter().filter(|&&b| b == b'\n').count() as u64),
        filled_lines_before: Some(part.before.filled_lines + filled_lines(read)),
        last_timestamp: timestamp.or_else(|| part.before.last_timestamp.clone()),
        prompts_before: prompts,
        session_id: t.session_id.clone(),
        last_prompt,
        cwd: t.cwd.clone(),
    })
}

/// Saves a read position. A last prompt that a tombstone buries (its record
/// or its session was forgotten) is not kept: forgetting a session and then
/// ingesting its transcript again must not write the forgotten prompt's text
/// back to disk (issue 52).
pub(super) fn save_state(store: &Store, state: &IngestState) -> Result<()> {
    let path = state_path(store, &state.path);
    let stones = crate::store::tombstones::Tombstones::load(store.root())?;
    let buried = state.last_prompt.as_ref().is_some_and(|p| {
        stones.ids.contains_key(&p.id)
            || stones.sessions.contains_key(&p.session_id)
            || stones.sessions.contains_key(&state.session_id)
    });
    let kept;
    let state = if buried {
        kept = IngestState {
            last_prompt: None,
            ..state.clone()
        };
        &kept
    } else {
        state
    };
    let text = serde_json::to_vec_pretty(state).map_err(|e| Error::io(&path, e.into()))?;
    crate::files::replace(&path, &text, crate::files::Durability::Durable)
}
