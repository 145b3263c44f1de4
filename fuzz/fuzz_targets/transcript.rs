//! Any bytes read as a transcript: the Claude Code, OpenClaw and generic parsers
//! (chosen by the first byte, or detected), resumed reads from any offset, and the
//! conversion to message records must return a transcript or an error, never panic.
#![no_main]

use std::path::Path;

use knowledge_db::transcript::ingest::transcript_records;
use knowledge_db::transcript::{read_slice, Format, ReadFrom};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let format = match selector % 4 {
        0 => Some(Format::ClaudeCode),
        1 => Some(Format::Openclaw),
        2 => Some(Format::Generic),
        _ => None,
    };
    // The high bits pick a resume offset, as a saved ingest position would.
    let offset = if selector >= 128 {
        u64::from(selector - 128).min(rest.len() as u64)
    } else {
        0
    };
    let from = ReadFrom {
        offset,
        prompts_before: u64::from(selector & 7),
        session_id: (selector & 64 != 0).then(|| "resumed".to_string()),
    };
    let Ok(transcript) = read_slice(Path::new("fuzz.jsonl"), rest, format, from) else {
        return;
    };
    for message in &transcript.messages {
        let _ = message.text();
        let _ = message.files();
        let _ = message.commands();
        let _ = message.error_lines();
        let _ = message.tool_names();
    }
    let _ = transcript_records(&transcript, "default", "2026-01-01T00:00:00Z");
});
