//! The hooks' reading of the transcript: only the bytes after the saved
//! offset, a bounded amount per call, and a check of that offset that reads
//! 256 bytes whatever the file's size.
//!
//! A hook runs on every tool call, so it must never read a transcript whole
//! (a 2 GB sparse file took 1.2-2.6 s a call when it did) nor block on one
//! (a FIFO), nor hold an endless line (a sparse file is one line of zeros).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::Serialize;

use super::session::{SessionState, STATE_VERSION};
use super::{read_json, HookFiles, HookInput, HookSettings};
use crate::error::{Error, Result};
use crate::transcript::{read_slice, Format, ReadFrom};

/// Bytes before the read offset whose hash tells whether the file was rewritten.
const TAIL_BYTES: u64 = 256;

/// What reading the transcript's new bytes did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReadReport {
    /// The transcript byte offset this read started at (0 after a restart).
    pub start_offset: u64,
    /// Bytes read and folded in: whole lines only (a partial last line is read next time).
    pub bytes_read: u64,
    /// Transcript messages in those bytes.
    pub messages: usize,
    /// The saved state did not match the file (rewritten, another file): read from 0.
    pub restarted: bool,
    /// Bytes of a line longer than `[hooks] max_read_bytes` passed over
    /// without being read into the state (the line is lost to the hooks;
    /// `ingest` reports it too).
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped_bytes: u64,
    /// Bytes left after this read's `[hooks] max_read_bytes`: the next call
    /// goes on from there.
    #[serde(skip_serializing_if = "is_zero")]
    pub left_for_next_call: u64,
}

/// Claude Code can fire a hook before it has written the session's
/// transcript (Stop, PostToolUse and PreCompact, seen in tests/claude/): a
/// file missing from a folder that is there is not written yet, and the next
/// call reads all it gained. A missing folder is a wrong path, and the read
/// reports it.
pub(super) fn not_written_yet(transcript: &Path) -> bool {
    !transcript.exists() && transcript.parent().is_some_and(Path::is_dir)
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Loads the session's state and folds the transcript's new bytes into it.
///
/// Bounded in time and memory whatever the transcript is: a FIFO or a device
/// is refused before it is opened for reading; only the bytes after the saved
/// offset are read, at most `settings.max_read_bytes` per call (the rest is
/// left to the next call); whether the file is still the one the state was
/// read from is decided from its size and the hash of the 256 bytes before
/// the offset; a line longer than `max_read_bytes` is skipped to its end
/// across calls, never held whole.
pub fn update_state(
    files: &HookFiles,
    input: &HookInput,
    settings: &HookSettings,
) -> Result<(SessionState, ReadReport)> {
    let transcript = input.transcript()?;
    let saved: Option<SessionState> = match read_json(&files.state(&input.session_id)) {
        Ok(state) => state,
        Err(e) => {
            // A damaged state is rebuilt from the transcript, not fatal.
            files.log_line(
                "state",
                Some(&input.session_id),
                &format!("{e}; rebuilding"),
            );
            None
        }
    };
    let mut report = ReadReport::default();
    let mut state = match saved {
        Some(s) if s.version == STATE_VERSION && s.transcript == transcript => s,
        Some(_) => {
            report.restarted = true;
            SessionState::new(&input.session_id, transcript.to_path_buf())
        }
        None => SessionState::new(&input.session_id, transcript.to_path_buf()),
    };
    if let Some(cwd) = &input.cwd {
        state.cwd = Some(cwd.display().to_string());
    }
    if not_written_yet(transcript) {
        return Ok((state, report));
    }
    let (mut file, len) = crate::bounded::open_regular(transcript)?;
    if state.offset > 0
        && (len < state.offset
            || tail_hash(&mut file, transcript, state.offset)? != state.tail_hash)
    {
        report.restarted = true;
        state = SessionState::new(&input.session_id, transcript.to_path_buf());
    }
    report.start_offset = state.offset;
    let max_read = settings.max_read_bytes.max(1);
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(state.offset))
        .map_err(|e| Error::io(transcript, e))?;
    (&mut file)
        .take(max_read)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(transcript, e))?;
    let full_chunk = bytes.len() as u64 == max_read;
    report.left_for_next_call = len.saturating_sub(state.offset + bytes.len() as u64);
    let mut start = 0;
    if state.in_long_line {
        // Pass over the rest of the over-long line, up to its newline.
        match bytes.iter().position(|&b| b == b'\n') {
            Some(i) => {
                start = i + 1;
                state.in_long_line = false;
                state.lines += 1;
            }
            None => start = bytes.len(),
        }
        report.skipped_bytes += start as u64;
    }
    // Only whole lines: a line still being written is read next time.
    let whole = bytes[start..]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(start, |i| start + i + 1);
    if !state.in_long_line && whole == start && full_chunk {
        // One line longer than a whole read: skip it rather than hold it.
        state.in_long_line = true;
        report.skipped_bytes += (bytes.len() - start) as u64;
        files.log_line(
            "read",
            Some(&input.session_id),
            &format!(
                "{}: a line at byte {} is longer than [hooks] max_read_bytes ({}); skipping it",
                transcript.display(),
                state.offset + start as u64,
                crate::bounded::human_bytes(max_read)
            ),
        );
    }
    let consumed = if state.in_long_line {
        bytes.len()
    } else {
        whole
    };
    let lines = &bytes[start..whole];
    report.bytes_read = lines.len() as u64;
    if !lines.is_empty() {
        let from = ReadFrom {
            offset: 0,
            prompts_before: state.prompts,
            session_id: Some(input.session_id.clone()),
        };
        let mut read = read_slice(transcript, lines, Some(Format::ClaudeCode), from)?;
        report.messages = read.messages.len();
        // Lines are numbered from the file's start, not from this read's.
        for message in &mut read.messages {
            message.line += state.lines as usize;
        }
        if state.cwd.is_none() {
            state.cwd.clone_from(&read.cwd);
        }
        state.observe(&read.messages, settings.recent_turns);
        state.lines += lines.iter().filter(|&&b| b == b'\n').count() as u64;
    }
    if consumed > 0 {
        state.offset += consumed as u64;
        state.tail_hash = tail_hash(&mut file, transcript, state.offset)?;
    }
    Ok((state, report))
}

/// xxh3 of the up to [`TAIL_BYTES`] bytes before `offset`.
fn tail_hash(file: &mut File, path: &Path, offset: u64) -> Result<u64> {
    let start = offset.saturating_sub(TAIL_BYTES);
    let mut buf = vec![0u8; (offset - start) as usize];
    file.seek(SeekFrom::Start(start))
        .map_err(|e| Error::io(path, e))?;
    file.read_exact(&mut buf).map_err(|e| Error::io(path, e))?;
    Ok(xxhash_rust::xxh3::xxh3_64(&buf))
}
