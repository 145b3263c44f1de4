//! Forgotten sessions stay forgotten in the hooks too.
//!
//! `forget --session S` removes S's records and the hooks' files of S, and
//! leaves a tombstone. A hook that runs afterwards for S (Claude Code replays
//! the same transcript on its next event, or a hook of another session id
//! reads S's transcript) would otherwise read the transcript again into
//! term lists, state, queues and captures. [`forgotten_session`] says when a
//! hook's input belongs to a forgotten session, by the hook's session id, the
//! transcript's file name (Claude Code names it `<session>.jsonl`) or the
//! session ids the transcript's first lines carry; the hook then does
//! nothing and removes the files it kept under its own id.

use std::io::Read;
use std::path::Path;

use super::{forget_session_files, HookInput};
use crate::error::Result;
use crate::store::tombstones::Tombstones;

/// Bytes of the transcript looked at for its session ids.
const HEAD_BYTES: u64 = 256 * 1024;

/// The forgotten session `input` belongs to, if any (see the module doc).
pub fn forgotten_session(store_root: &Path, input: &HookInput) -> Result<Option<String>> {
    let tombstones = Tombstones::load(store_root)?;
    if tombstones.sessions.is_empty() {
        return Ok(None);
    }
    let buried = |id: &str| tombstones.sessions.contains_key(id);
    if buried(&input.session_id) {
        return Ok(Some(input.session_id.clone()));
    }
    let Some(path) = input.transcript_path.as_deref() else {
        return Ok(None);
    };
    if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
        if buried(stem) {
            return Ok(Some(stem.to_string()));
        }
    }
    let mut head = Vec::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(HEAD_BYTES).read_to_end(&mut head);
    }
    let head = String::from_utf8_lossy(&head);
    for (at, _) in head.match_indices("\"sessionId\"") {
        let rest = head[at + "\"sessionId\"".len()..].trim_start();
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix('"') else {
            continue;
        };
        if let Some(end) = rest.find('"') {
            if buried(&rest[..end]) {
                return Ok(Some(rest[..end].to_string()));
            }
        }
    }
    Ok(None)
}

/// The hooks' gate for forgotten sessions: when `input` belongs to one, the
/// files the hooks keep under the input's own session id are removed (they
/// hold words of the forgotten transcript) and `true` says the hook must do
/// nothing else.
pub fn skip_forgotten(store_root: &Path, input: &HookInput) -> Result<bool> {
    let Some(_) = forgotten_session(store_root, input)? else {
        return Ok(false);
    };
    forget_session_files(store_root, &input.session_id);
    Ok(true)
}
