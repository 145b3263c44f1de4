//! Unit tests of the hooks as a whole: reading a transcript in pieces gives
//! the state reading it whole does, and how full the context is.

use std::io::Read;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::json;

use super::session::SessionState;
use super::{context_usage, post_tool_use, read_json, Gates, HookFiles, HookInput, HookSettings};
use crate::transcript::{read_slice, Format, ReadFrom};

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
    // The store's own folder: a folder holding the transcript is not one.
    let store = dir.path().join("store");
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
        let report = post_tool_use(&store, &input, &settings, Gates::default()).expect("hook");
        assert!(!report.checked);
    }
    let mut state: SessionState = read_json(&HookFiles::new(&store).state("s"))
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
