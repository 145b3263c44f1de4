//! Unit tests of ingest: records of a transcript, read positions and resumes.

use super::*;
use crate::transcript::read_slice;
use proptest::prelude::*;

/// One Claude Code line of a generated session, by kind: 0 prompt, 1 reply
/// over two lines (one API response), 2 tool call, 3 tool result, 4 a
/// compaction (boundary and summary), 5 injected text, 6 a subagent's line.
fn session_lines(kinds: &[u8]) -> (String, Vec<(String, u64)>) {
    let mut text = String::new();
    let mut expected = Vec::new();
    let mut prompts = 0u64;
    let line = |v: serde_json::Value, text: &mut String| {
        text.push_str(&v.to_string());
        text.push('\n');
    };
    for (i, kind) in kinds.iter().enumerate() {
        let uuid = format!("u{i}");
        let at = format!("2026-03-02T09:{:02}:{:02}.000Z", i / 60 % 60, i % 60);
        let base = json!({"sessionId": "s", "uuid": uuid, "timestamp": at, "isSidechain": false});
        let with = |extra: serde_json::Value| {
            let mut v = base.clone();
            for (k, x) in extra.as_object().unwrap() {
                v[k] = x.clone();
            }
            v
        };
        match kind % 7 {
            0 => {
                prompts += 1;
                line(
                    with(
                        json!({"type": "user", "message": {"role": "user", "content": format!("ask {i}")}}),
                    ),
                    &mut text,
                );
            }
            1 => {
                for part in ["first", "second"] {
                    line(
                        with(
                            json!({"type": "assistant", "requestId": format!("r{i}"), "message": {"id": format!("m{i}"), "role": "assistant", "content": [{"type": "text", "text": format!("{part} part of {i}")}]}}),
                        ),
                        &mut text,
                    );
                }
            }
            2 => line(
                with(
                    json!({"type": "assistant", "requestId": format!("r{i}"), "message": {"id": format!("m{i}"), "role": "assistant", "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": "ls"}}]}}),
                ),
                &mut text,
            ),
            3 => line(
                with(
                    json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "ok"}]}}),
                ),
                &mut text,
            ),
            4 => {
                line(
                    with(
                        json!({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"}),
                    ),
                    &mut text,
                );
                expected.push((uuid.clone(), prompts.saturating_sub(1)));
                let summary = format!("{uuid}-summary");
                let mut v = with(
                    json!({"type": "user", "isCompactSummary": true, "message": {"role": "user", "content": [{"type": "text", "text": "This session is being continued from a previous conversation"}]}}),
                );
                v["uuid"] = json!(summary);
                line(v, &mut text);
                expected.push((summary, prompts.saturating_sub(1)));
                continue;
            }
            5 => line(
                with(
                    json!({"type": "user", "isMeta": true, "message": {"role": "user", "content": "<command-name>/clear</command-name>"}}),
                ),
                &mut text,
            ),
            _ => line(
                with(
                    json!({"type": "user", "isSidechain": true, "agentId": "a1", "message": {"role": "user", "content": "subagent task"}}),
                ),
                &mut text,
            ),
        }
        expected.push((uuid, prompts.saturating_sub(1)));
    }
    (text, expected)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// However a growing session file is cut into reads (each resuming where
    /// the last one saved its position, mid-line cuts included), and wherever
    /// compactions fall, every message gets the turn a whole read gives it:
    /// the prompts before it, counted through the whole session; and the
    /// same conversation context (the prompt an answer carries).
    #[test]
    fn turn_indices_survive_cuts_and_compactions(
        kinds in prop::collection::vec(0u8..7, 1..40),
        cuts in prop::collection::vec(0.0f64..1.0, 0..6),
    ) {
        let (text, expected) = session_lines(&kinds);
        let bytes = text.as_bytes();
        let path = Path::new("s.jsonl");
        let whole = read_slice(path, bytes, Some(Format::ClaudeCode), ReadFrom::default()).unwrap();
        let turns: std::collections::HashMap<String, u64> = whole
            .messages
            .iter()
            .map(|m| (m.uuid.clone().unwrap(), m.turn_index))
            .collect();
        for (uuid, turn) in &expected {
            prop_assert_eq!(turns.get(uuid), Some(turn), "{}", uuid);
        }
        let mut ends: Vec<usize> = cuts.iter().map(|c| (c * bytes.len() as f64) as usize).collect();
        ends.sort_unstable();
        ends.push(bytes.len());
        let context_of = |records: Vec<Record>| -> Vec<(String, Option<String>, Option<String>)> {
            records.into_iter().map(|r| (r.id, r.context, r.context_from)).collect()
        };
        let contexts: std::collections::HashMap<_, _> = context_of(
            transcript_records(&whole, "default", "2026-01-01T00:00:00Z", Via::Ingest, None, Redactor::builtin()).unwrap(),
        )
        .into_iter()
        .map(|(id, c, f)| (id, (c, f)))
        .collect();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        let mut saved: Option<IngestState> = None;
        let mut seen = std::collections::HashMap::new();
        let mut seen_contexts = std::collections::HashMap::new();
        let mut seen_places = std::collections::HashMap::new();
        for end in ends {
            // The file grows to `end` (a cut may fall inside a line).
            std::fs::write(&file, &bytes[..end]).unwrap();
            let (part, t) = read_new_part(
                &file,
                saved.clone(),
                Some(Format::ClaudeCode),
                super::super::DEFAULT_LIMIT,
            )
            .unwrap();
            for m in &t.messages {
                seen.insert(m.uuid.clone().unwrap(), m.turn_index);
                seen_places.insert(m.uuid.clone().unwrap(), (m.line, m.byte_offset));
            }
            let records =
                transcript_records(&t, "default", "2026-01-01T00:00:00Z", Via::Ingest, part.earlier.as_ref(), Redactor::builtin())
                    .unwrap();
            for (id, c, f) in context_of(records) {
                seen_contexts.insert(id, (c, f));
            }
            saved = Some(next_state(&t, &part, Redactor::builtin()).unwrap());
        }
        let places: std::collections::HashMap<String, (usize, u64)> = whole
            .messages
            .iter()
            .map(|m| (m.uuid.clone().unwrap(), (m.line, m.byte_offset)))
            .collect();
        // Read in pieces, each message keeps the line and offset of a whole read.
        prop_assert_eq!(seen_places, places);
        // The last read of each message is the one stored: it matches a whole read.
        prop_assert_eq!(seen, turns);
        prop_assert_eq!(seen_contexts, contexts);
    }
}

/// A batch larger than `inline_embed_max` is stored without vectors (the
/// upkeep adds them) and says so; a batch within it is embedded inline.
#[test]
fn a_large_batch_leaves_its_vectors_to_the_upkeep() {
    let dir = tempfile::tempdir().unwrap();
    let (text, _) = session_lines(&[0, 1, 0, 1, 0, 1]);
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, text).unwrap();
    let run = |name: &str, max: usize| {
        let store = crate::store::Store::init(&dir.path().join(name)).unwrap();
        let options = IngestOptions {
            format: Some(Format::ClaudeCode),
            namespace: "default".into(),
            dry_run: false,
            full: false,
            inline_embed_max: Some(max),
            stop: None,
        };
        let mut embedder = crate::embed::HashEmbedder::new(16);
        ingest(
            Some(&store),
            std::slice::from_ref(&file),
            &options,
            Some(&mut embedder),
            Duration::from_secs(5),
            &mut |_| {},
        )
        .unwrap()
    };
    let deferred = run("small-limit", 2);
    let stored = deferred.store.as_ref().unwrap();
    assert!(stored.added > 2, "{stored:?}");
    assert_eq!(deferred.vectors_deferred, stored.added);
    assert_eq!(stored.without_vector, stored.added);
    let inline = run("large-limit", 1_000);
    assert_eq!(inline.vectors_deferred, 0);
    assert_eq!(inline.store.as_ref().unwrap().without_vector, 0);
}
