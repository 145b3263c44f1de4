//! Rolling eviction: property tests of `rolling_evict` (budget, minimum kept,
//! tool pairs, evicted messages retrievable from a real store) and the `evict`
//! and `tokens` commands on the fixtures.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::{samples, TestStore};
use knowledge_db::context::evict::{rolling_evict, EvictError, EvictOptions, NOTE_PREFIX};
use knowledge_db::context::tokens::Tokenizer;
use knowledge_db::transcript::ingest::{message_id, transcript_records};
use knowledge_db::transcript::{read_file, Block, Message, ReadFrom, Role};
use knowledge_db::Store;
use proptest::prelude::*;

const CC_FIXTURE: &str = "transcripts/7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47.jsonl.gz";

/// A conversation from a seed: an optional system prompt, then user text,
/// assistant text, and tool calls whose results follow some messages later.
fn conversation(
    system: bool,
    steps: &[(u8, u16)],
) -> (Vec<Message>, std::collections::HashMap<String, usize>) {
    let mut messages = Vec::new();
    let mut costs = std::collections::HashMap::new();
    let mut push = |mut m: Message, cost: u16, messages: &mut Vec<Message>| {
        let id = format!("u{}", messages.len());
        m.uuid = Some(id.clone());
        m.session_id = Some("prop".into());
        m.timestamp = Some(format!("2026-01-01T00:{:02}:00Z", messages.len() % 60));
        costs.insert(id, cost as usize + 1);
        messages.push(m);
    };
    if system {
        push(
            Message::new(
                Role::System,
                vec![Block::Text {
                    text: "be brief".into(),
                }],
            ),
            50,
            &mut messages,
        );
    }
    let mut open: Vec<String> = Vec::new();
    for (i, &(kind, cost)) in steps.iter().enumerate() {
        let m = match kind % 4 {
            0 => Message::new(
                Role::User,
                vec![Block::Text {
                    text: format!("question {i}"),
                }],
            ),
            1 => Message::new(
                Role::Assistant,
                vec![Block::Text {
                    text: format!("answer {i}"),
                }],
            ),
            2 => {
                let id = format!("call{i}");
                open.push(id.clone());
                Message::new(
                    Role::Assistant,
                    vec![Block::ToolUse {
                        id,
                        name: "Bash".into(),
                        input: serde_json::json!({"command": format!("ls {i}")}),
                    }],
                )
            }
            _ => match open.pop() {
                Some(id) => Message::new(
                    Role::Tool,
                    vec![Block::ToolResult {
                        tool_use_id: id,
                        content: format!("output {i}"),
                        is_error: false,
                        name: None,
                    }],
                ),
                None => Message::new(
                    Role::User,
                    vec![Block::Text {
                        text: format!("more {i}"),
                    }],
                ),
            },
        };
        push(m, cost, &mut messages);
    }
    (messages, costs)
}

fn cost_of(costs: &std::collections::HashMap<String, usize>) -> impl Fn(&Message) -> usize + '_ {
    move |m: &Message| match m.uuid.as_deref().and_then(|id| costs.get(id)) {
        Some(c) => *c,
        None => Tokenizer::Estimate.message(m),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn eviction_respects_budget_minimum_and_pairs(
        system in any::<bool>(),
        steps in prop::collection::vec((0u8..4, 0u16..400), 0..80),
        window in 100usize..20_000,
        reserved in 0usize..100,
        target in 0.3f64..1.0,
        min_keep in 0usize..15,
    ) {
        let (messages, costs) = conversation(system, &steps);
        let cost = cost_of(&costs);
        let options = EvictOptions { context_window: window, reserved_output: reserved, target, min_keep };
        let max_input = window - reserved;
        let movable = messages.len() - usize::from(system);
        match rolling_evict(messages.clone(), &options, &cost) {
            Ok(e) => {
                let used: usize = e.kept.iter().map(&cost).sum();
                prop_assert_eq!(used, e.tokens_after);
                prop_assert!(used <= max_input, "{} > {}", used, max_input);
                // Everything is either kept or evicted, in order, plus at most one note.
                let notes = e.kept.iter().filter(|m| m.text().starts_with(NOTE_PREFIX)).count();
                prop_assert_eq!(notes, usize::from(!e.evicted.is_empty()));
                prop_assert_eq!(e.kept.len() - notes + e.evicted.len(), messages.len());
                // The system prompt stays first.
                if system {
                    prop_assert_eq!(&e.kept[0], &messages[0]);
                }
                // The last min_keep messages are kept.
                let kept_ids: HashSet<_> = e.kept.iter().filter_map(|m| m.uuid.clone()).collect();
                for m in messages.iter().rev().take(min_keep.min(movable)) {
                    prop_assert!(kept_ids.contains(m.uuid.as_ref().unwrap()));
                }
                // A tool call and its result are on the same side.
                let kept_calls: HashSet<String> = e.kept.iter().flat_map(|m| m.tool_use_ids().map(str::to_string)).collect();
                let evicted_calls: HashSet<String> = e.evicted.iter().flat_map(|m| m.tool_use_ids().map(str::to_string)).collect();
                for m in &e.kept {
                    for id in m.tool_result_ids() {
                        prop_assert!(!evicted_calls.contains(id), "result of {} kept, call evicted", id);
                    }
                }
                for m in &e.evicted {
                    for id in m.tool_result_ids() {
                        prop_assert!(!kept_calls.contains(id), "call {} kept, result evicted", id);
                    }
                }
                // Over target only when the minimum forbids evicting more.
                if !e.target_met && !e.evicted.is_empty() {
                    prop_assert!(e.kept.len() - notes - usize::from(system) >= min_keep);
                }
            }
            Err(EvictError::Overflow { needed, max_input: m, .. }) => {
                prop_assert_eq!(m, max_input);
                prop_assert!(needed > max_input);
                // The minimum alone (system prompt + last min_keep) must indeed not fit
                // without a note, or with one.
                let minimum: usize = messages.iter().take(usize::from(system)).map(&cost).sum::<usize>()
                    + messages.iter().rev().take(min_keep.min(movable)).map(&cost).sum::<usize>();
                prop_assert!(minimum <= needed);
            }
            Err(other) => prop_assert!(false, "unexpected error {}", other),
        }
    }
}

proptest! {
    // Each case writes to a real store (a tantivy commit): fewer cases.
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn every_evicted_message_is_retrievable_by_id(
        steps in prop::collection::vec((0u8..4, 0u16..200), 20..60),
        window in 500usize..3_000,
    ) {
        let (messages, costs) = conversation(true, &steps);
        let cost = cost_of(&costs);
        let options = EvictOptions { context_window: window, reserved_output: 0, target: 0.8, min_keep: 5 };
        let Ok(e) = rolling_evict(messages.clone(), &options, &cost) else { return Ok(()) };
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("s")).unwrap();
        let mut t = knowledge_db::transcript::read_slice(
            std::path::Path::new("prop.jsonl"), b"", Some(knowledge_db::transcript::Format::Generic), ReadFrom::default()).unwrap();
        t.session_id = "prop".into();
        t.messages = e.evicted.clone();
        let records = transcript_records(&t, "default", "2026-01-01T00:00:00Z").unwrap();
        store.add(records, None, Duration::from_secs(5)).unwrap();
        for m in &e.evicted {
            let id = message_id("prop", m);
            let record = store.get(&id).unwrap();
            prop_assert!(record.is_some(), "{} not in the store", id);
            let text = record.unwrap().source["text"].as_str().unwrap().to_string();
            prop_assert_eq!(text, m.text());
        }
    }
}

#[test]
fn evict_command_stores_first_and_prints_the_note() {
    let store = TestStore::new();
    let fixture = samples().join(CC_FIXTURE);
    let out = store
        .cmd()
        .args(["evict", "--transcript", fixture.to_str().unwrap()])
        .args(["--context-window", "700", "--min-keep", "4"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kept: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let note = kept[0]["content"][0]["text"].as_str().unwrap();
    let evicted = 16 + 1 - kept.len();
    assert!(
        note.starts_with(&format!("[Context rolled: {evicted} messages evicted ("))
            && note.contains("tokens). Full transcript searchable via memory_search. Evicted range: 2026-03-02T09:00:00.000Z to "),
        "{note}"
    );
    assert!(evicted >= 3, "{evicted}");
    // The call/result pairs of the kept part are whole: every result has its call.
    let calls: HashSet<&str> = kept
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    for b in kept.iter().flat_map(|m| m["content"].as_array().unwrap()) {
        if b["type"] == "tool_result" {
            assert!(calls.contains(b["tool_use_id"].as_str().unwrap()), "{b}");
        }
    }
    // The evicted messages are in the store, findable by id and by search.
    let first = store.json(&["get", "7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47:m01"]);
    assert!(first["source"]["text"]
        .as_str()
        .unwrap()
        .contains("tests/lexer.rs"));
    let ids = store.search_ids(&["nondeterminism keyword table"]);
    assert_eq!(ids[0], "7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47:m02");
    // The output is a generic transcript: it reads back, with the call/result pairs whole.
    let file = store.dir.path().join("kept.jsonl");
    std::fs::write(
        &file,
        kept.iter().map(|v| format!("{v}\n")).collect::<String>(),
    )
    .unwrap();
    let back = read_file(&file, None, ReadFrom::default()).unwrap();
    assert_eq!(back.messages.len(), kept.len());
}

#[test]
fn evict_json_reports_counts_and_dry_run_writes_nothing() {
    let store = TestStore::new();
    let fixture = samples().join(CC_FIXTURE);
    let report = store.json(&[
        "evict",
        "--transcript",
        fixture.to_str().unwrap(),
        "--context-window",
        "700",
        "--min-keep",
        "4",
        "--dry-run",
    ]);
    assert!(report["evicted_count"].as_u64().unwrap() >= 3);
    assert_eq!(report["tokenizer"], "estimate");
    assert!(report["tokens_after"].as_u64().unwrap() <= report["target_tokens"].as_u64().unwrap());
    assert_eq!(report["stored"], serde_json::Value::Null);
    assert_eq!(store.json(&["stats"])["records"], 0);
    // With a GPT model the count is exact o200k.
    let gpt = store.json(&[
        "evict",
        "--transcript",
        fixture.to_str().unwrap(),
        "--context-window",
        "100000",
        "--model",
        "gpt-4o",
        "--dry-run",
    ]);
    assert_eq!(gpt["tokenizer"], "o200k");
    assert_eq!(gpt["evicted_count"], 0);
}

#[test]
fn overflow_fails_with_the_numbers_and_writes_nothing() {
    let store = TestStore::new();
    let before = store.snapshot();
    let fixture = samples().join(CC_FIXTURE);
    store
        .cmd()
        .args(["evict", "--transcript", fixture.to_str().unwrap()])
        .args(["--context-window", "300", "--reserved-output", "50"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("context overflow"))
        .stderr(predicates::str::contains("leaves 250"));
    assert_eq!(store.snapshot(), before);
}

#[test]
fn tokens_counts_per_message_and_total() {
    let store = TestStore::new();
    let fixture = samples().join("transcripts/generic-session.jsonl.gz");
    let report = store.json(&["tokens", fixture.to_str().unwrap()]);
    let messages = report["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5);
    let sum: u64 = messages.iter().map(|m| m["o200k"].as_u64().unwrap()).sum();
    assert_eq!(report["total"]["o200k"].as_u64().unwrap(), sum);
    // "You are a careful release engineer." is 7 o200k tokens, plus 4 per message.
    assert_eq!(messages[0]["o200k"], 11);
    // The fallback over-counts a transcript as a whole.
    assert!(report["total"]["estimate"].as_u64() >= report["total"]["o200k"].as_u64());
}

#[test]
fn message_ids_are_stable_across_reads() {
    let fixture = samples().join(CC_FIXTURE);
    let a = read_file(&fixture, None, ReadFrom::default()).unwrap();
    let b = read_file(&fixture, None, ReadFrom::default()).unwrap();
    let ids = |t: &knowledge_db::transcript::Transcript| -> Vec<String> {
        t.messages
            .iter()
            .map(|m| message_id(&t.session_id, m))
            .collect()
    };
    assert_eq!(ids(&a), ids(&b));
    assert_eq!(
        ids(&a).iter().collect::<HashSet<_>>().len(),
        a.messages.len()
    );
}
