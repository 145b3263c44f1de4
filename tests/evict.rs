//! Rolling eviction: property tests of `rolling_evict` (budget, minimum kept,
//! tool pairs, evicted messages retrievable from a real store) and the `evict`
//! and `tokens` commands on the fixtures.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::{samples, TestStore};
use knowledge_db::context::evict::{
    atomic_groups, rolling_evict, EvictError, EvictOptions, NOTE_PREFIX,
};
use knowledge_db::context::priority::{classify, pack_prompt, Priority, PriorityOptions};
use knowledge_db::context::tokens::Tokenizer;
use knowledge_db::transcript::ingest::{message_id, transcript_records, Via};
use knowledge_db::transcript::{read_file, Block, Message, ReadFrom, Role};
use knowledge_db::Store;
use proptest::prelude::*;

/// A Claude Code session without a compaction (all of it is live context).
const CC_FIXTURE: &str = "transcripts/uncompacted-session.jsonl.gz";
/// The same session compacted once: only the summary and what follows are live.
const CC_COMPACTED: &str = "transcripts/7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47.jsonl.gz";

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
        overhead in prop_oneof![Just(0usize), 0usize..3_000],
    ) {
        let (messages, costs) = conversation(system, &steps);
        let cost = cost_of(&costs);
        let options = EvictOptions { context_window: window, reserved_output: reserved, target, min_keep, overhead };
        let max_input = window - reserved;
        let movable = messages.len() - usize::from(system);
        match rolling_evict(messages.clone(), &options, &cost) {
            Ok(e) => {
                // The prompt is the kept messages plus what is sent besides them.
                let used: usize = overhead + e.kept.iter().map(&cost).sum::<usize>();
                prop_assert_eq!(used, e.tokens_after);
                prop_assert_eq!(e.overhead_tokens, overhead);
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
                let minimum: usize = overhead + messages.iter().take(usize::from(system)).map(&cost).sum::<usize>()
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
        let options = EvictOptions { context_window: window, reserved_output: 0, target: 0.8, min_keep: 5, overhead: 0 };
        let Ok(e) = rolling_evict(messages.clone(), &options, &cost) else { return Ok(()) };
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("s")).unwrap();
        let mut t = knowledge_db::transcript::read_slice(
            std::path::Path::new("prop.jsonl"), b"", Some(knowledge_db::transcript::Format::Generic), ReadFrom::default()).unwrap();
        t.session_id = "prop".into();
        t.messages = e.evicted.clone();
        let records = transcript_records(&t, "default", "2026-01-01T00:00:00Z", Via::Evict, None, knowledge_db::privacy::Redactor::builtin()).unwrap();
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
        // The messages alone: the fixture's usage figures report 13k more.
        .args([
            "--context-window",
            "700",
            "--min-keep",
            "4",
            "--overhead",
            "0",
        ])
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
    let evicted = 14 + 1 - kept.len();
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
        "--overhead",
        "0",
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

/// Runs the binary and parses its stdout as JSONL messages.
fn kept_messages(out: &std::process::Output) -> Vec<serde_json::Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn evict_starts_after_the_last_compaction() {
    let store = TestStore::new();
    let fixture = samples().join(CC_COMPACTED);
    let report = store.json(&[
        "evict",
        "--transcript",
        fixture.to_str().unwrap(),
        "--context-window",
        "100000",
        "--dry-run",
    ]);
    // 16 messages in the file; the boundary and the 12 before it are not live.
    assert_eq!(report["messages_before"], 16);
    assert_eq!(report["compacted_messages"], 13);
    assert_eq!(report["evicted_count"], 0);
    let kept = report["kept"].as_array().unwrap();
    assert_eq!(kept.len(), 3);
    assert_eq!(kept[0]["is_compact_summary"], true);
    assert_eq!(kept[1]["uuid"], "m14");
    // Evicting from the live part never reaches older messages, and the
    // compaction summary (the only trace of them) is pinned: m14 and m15 are
    // all that could go, and a note would cost more than they do.
    let report = store.json(&[
        "evict",
        "--transcript",
        fixture.to_str().unwrap(),
        "--context-window",
        "200",
        "--target",
        "0.5",
        "--min-keep",
        "0",
        "--overhead",
        "0",
    ]);
    let session = "7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47";
    assert_eq!(report["evicted_count"], 0, "{report}");
    assert_eq!(report["target_met"], false, "{report}");
    let kept = report["kept"].as_array().unwrap();
    assert_eq!(kept[0]["is_compact_summary"], true, "{report}");
    assert_eq!(store.json(&["stats"])["records"], 0);
    assert!(
        store
            .cmd()
            .args(["get", &format!("{session}:m01")])
            .output()
            .unwrap()
            .status
            .code()
            != Some(0)
    );
}

/// A generic transcript of `steps` Bash calls; step `long` prints a long log
/// with an error line, the others a short line naming a rare word.
fn tool_session(store: &TestStore, steps: usize, long: usize) -> std::path::PathBuf {
    let mut lines = String::new();
    let mut push = |m: Message| {
        lines.push_str(&serde_json::to_string(&m).unwrap());
        lines.push('\n');
    };
    let mut system = Message::new(
        Role::System,
        vec![Block::Text {
            text: "You fix builds.".into(),
        }],
    );
    system.uuid = Some("sys".into());
    push(system);
    let mut ask = Message::new(
        Role::User,
        vec![Block::Text {
            text: "Make the build pass.".into(),
        }],
    );
    ask.uuid = Some("ask".into());
    push(ask);
    for i in 0..steps {
        let mut call = Message::new(
            Role::Assistant,
            vec![Block::ToolUse {
                id: format!("t{i}"),
                name: "Bash".into(),
                input: serde_json::json!({"command": format!("make step{i}")}),
            }],
        );
        call.uuid = Some(format!("c{i}"));
        push(call);
        let output = if i == long {
            format!(
                "{}error: linker `cc` failed quokkasaurus\nExit code 2",
                "compiling crate number seven hundred\n".repeat(400)
            )
        } else {
            format!("done step{i} with wombatix{i}")
        };
        let mut result = Message::new(
            Role::Tool,
            vec![Block::ToolResult {
                tool_use_id: format!("t{i}"),
                content: output,
                is_error: i == long,
                name: None,
            }],
        );
        result.uuid = Some(format!("r{i}"));
        push(result);
    }
    store.write("tools.jsonl", lines.as_bytes())
}

#[test]
fn truncated_tool_outputs_are_stored_whole_and_named_by_their_placeholder() {
    let store = TestStore::new();
    let file = tool_session(&store, 10, 1);
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["evict", "--transcript", file.to_str().unwrap()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(["--context-window", "2000", "--min-keep", "6"].map(String::from));
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // Without truncation the long log forces messages out.
    let plain = store.json(
        &args(&["--dry-run"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(plain["evicted_count"].as_u64().unwrap() >= 4, "{plain}");
    // With it, nothing has to leave: outputs older than 5 steps and the long
    // one become placeholders.
    let out = store
        .cmd()
        .args(args(&["--truncate-tools"]))
        .output()
        .unwrap();
    let kept = kept_messages(&out);
    assert_eq!(kept.len(), 22, "everything stays, shortened");
    let texts: Vec<String> = kept
        .iter()
        .map(|m| {
            m["content"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let long = &texts[5];
    assert!(
        long.starts_with("[tool output truncated: Bash; exit 2;")
            && long.contains("full output in record tools:r1]")
            && long.contains("error: linker `cc` failed quokkasaurus"),
        "{long}"
    );
    assert!(!long.contains("seven hundred"));
    assert!(
        texts[3].contains("full output in record tools:r0"),
        "{}",
        texts[3]
    );
    // Steps 5..9 are recent and short: unchanged.
    assert_eq!(texts[13], "done step5 with wombatix5");
    // The full outputs are in the store before the placeholders were printed.
    let record = store.json(&["get", "tools:r1"]);
    assert!(record["source"]["text"]
        .as_str()
        .unwrap()
        .contains("seven hundred"));
    assert_eq!(store.search_ids(&["quokkasaurus"])[0], "tools:r1");
    assert_eq!(store.search_ids(&["wombatix0"])[0], "tools:r0");
    assert_eq!(store.json(&["stats"])["records"], 5);

    // The JSON report says what was truncated; the note does too when messages go.
    let report = store.json(
        &args(&[
            "--truncate-tools",
            "--tool-steps",
            "1",
            "--tool-max-tokens",
            "50",
            "--dry-run",
        ])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
    );
    assert_eq!(report["truncation"]["outputs_truncated"], 9);
    assert_eq!(report["evicted_count"], 0);
    assert!(report["tokens_after"].as_u64().unwrap() < 1000, "{report}");
    let tight = store.json(&[
        "evict",
        "--transcript",
        file.to_str().unwrap(),
        "--context-window",
        "300",
        "--min-keep",
        "4",
        "--truncate-tools",
        "--dry-run",
    ]);
    let note = tight["note"].as_str().unwrap();
    assert!(note.contains("tool outputs truncated ("), "{note}");
    assert!(
        note.ends_with("their placeholders name the record holding the full output.]")
            || note.ends_with("each placeholder names the record holding the full output.]"),
        "{note}"
    );
}

#[test]
fn truncation_flags_need_truncate_tools() {
    let store = TestStore::new();
    let file = tool_session(&store, 2, 9);
    store
        .cmd()
        .args([
            "evict",
            "--transcript",
            file.to_str().unwrap(),
            "--context-window",
            "1000",
        ])
        .args(["--tool-steps", "3"])
        .assert()
        .code(2);
}

#[test]
fn pack_trims_by_priority_and_stores_what_it_drops() {
    let store = TestStore::new();
    let file = tool_session(&store, 10, 1);
    let system = store.write("system.txt", b"You are a build fixer. Never push to main.");
    let claude = store.write("CLAUDE.md", b"Run cargo fmt before every commit.");
    let out = store
        .cmd()
        .args([
            "pack",
            "--transcript",
            file.to_str().unwrap(),
            "--budget",
            "400",
        ])
        .arg("--system")
        .arg(&system)
        .arg("--instructions")
        .arg(&claude)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["tokens_after"].as_u64().unwrap() <= 400, "{report}");
    let kept = report["kept"].as_array().unwrap();
    assert_eq!(
        kept[0]["content"][0]["text"],
        "You are a build fixer. Never push to main."
    );
    let note = kept[1]["content"][0]["text"].as_str().unwrap();
    assert!(
        note.starts_with("[Context rolled: ") && note.contains("dropped by priority"),
        "{note}"
    );
    assert!(
        kept.iter().any(|m| m["is_meta"] == true),
        "the instructions stay"
    );
    // The long log is the stale tool output that goes; the user's task stays.
    let dropped: Vec<&str> = report["dropped_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(dropped.contains(&"tools:r1"), "{dropped:?}");
    assert!(!dropped.contains(&"tools:ask"));
    assert!(
        report["dropped_by_priority"]["current task"].is_null(),
        "{report}"
    );
    assert!(store.json(&["get", "tools:r1"])["source"]["text"]
        .as_str()
        .unwrap()
        .contains("quokkasaurus"));
    // A system prompt over the budget fails with the numbers and writes nothing.
    let fresh = TestStore::new();
    let before = fresh.snapshot();
    fresh
        .cmd()
        .args([
            "pack",
            "--transcript",
            file.to_str().unwrap(),
            "--budget",
            "5",
        ])
        .arg("--system")
        .arg(&system)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("context overflow"));
    assert_eq!(fresh.snapshot(), before);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn packing_fits_the_budget_and_drops_the_least_important_first(
        system in any::<bool>(),
        steps in prop::collection::vec((0u8..4, 0u16..400), 0..60),
        budget in 0usize..8_000,
        recent in 1u64..4,
    ) {
        let (mut messages, costs) = conversation(system, &steps);
        // Turns: each user question opens one; some user lines are instructions.
        let mut turn = 0;
        for (i, m) in messages.iter_mut().enumerate() {
            if m.role == Role::User && m.text().starts_with("question") {
                turn += 1;
                m.is_meta = i % 7 == 3;
            }
            m.turn_index = turn;
        }
        let cost = cost_of(&costs);
        let options = PriorityOptions { recent_turns: recent, recent_tool_steps: (budget % 7) + 1 };
        match pack_prompt(messages.clone(), budget, &options, &cost, &|m| m.uuid.clone().unwrap_or_default()) {
            Ok(p) => {
                let used: usize = p.kept.iter().map(&cost).sum();
                prop_assert_eq!(used, p.tokens_after);
                prop_assert!(used <= budget, "{} > {}", used, budget);
                let notes = usize::from(p.note.is_some());
                prop_assert_eq!(p.kept.len() - notes + p.dropped.len(), messages.len());
                if system {
                    prop_assert_eq!(&p.kept[0], &messages[0]);
                }
                // Groups (a call with its results) go whole; a kept group is never
                // less important than a dropped one (older first within a priority).
                let priorities = classify(&messages, &options);
                let pinned = usize::from(system);
                let dropped: HashSet<&str> = p.dropped.iter().filter_map(|(_, m)| m.uuid.as_deref()).collect();
                let mut kept_groups = Vec::new();
                let mut dropped_groups = Vec::new();
                for (s, e) in atomic_groups(&messages, pinned) {
                    let priority: Priority = *priorities[s..=e].iter().min().unwrap();
                    let gone: Vec<bool> = messages[s..=e].iter().map(|m| dropped.contains(m.uuid.as_deref().unwrap())).collect();
                    prop_assert!(gone.iter().all(|g| *g) || gone.iter().all(|g| !*g), "group {}..={} split", s, e);
                    if gone[0] { dropped_groups.push((priority, s)) } else { kept_groups.push((priority, s)) }
                }
                for &(dp, ds) in &dropped_groups {
                    for &(kp, ks) in &kept_groups {
                        prop_assert!(kp < dp || (kp == dp && ks > ds),
                            "kept {:?} at {} while dropping {:?} at {}", kp, ks, dp, ds);
                    }
                }
            }
            Err(e) => {
                // Only when the system prompt and the note alone do not fit.
                let system_cost: usize = messages.iter().take(usize::from(system)).map(&cost).sum();
                prop_assert!(e.needed > budget);
                prop_assert!(system_cost <= e.needed);
            }
        }
    }
}

/// A Claude Code session of `steps` prompt/tool/answer rounds whose responses
/// report prompts `overhead` tokens larger than their messages (as an agent's
/// system prompt and tool definitions make them).
fn session_with_usage(store: &TestStore, steps: usize, overhead: u64) -> std::path::PathBuf {
    let mut lines = String::new();
    let mut counted = 0u64;
    let mut n = 0;
    let mut push = |v: serde_json::Value, counted: &mut u64| {
        n += 1;
        let mut v = v;
        v["uuid"] = format!("u{n}").into();
        v["sessionId"] = "usage-session".into();
        v["timestamp"] = format!("2026-04-01T10:{:02}:{:02}.000Z", n / 60, n % 60).into();
        if v["type"] == "assistant" {
            // The prompt this response saw: the overhead plus the messages so far.
            v["message"]["usage"] = serde_json::json!({"input_tokens": 3, "cache_read_input_tokens": overhead + *counted, "cache_creation_input_tokens": 0, "output_tokens": 40});
        }
        let m = knowledge_db::transcript::read_slice(
            std::path::Path::new("x.jsonl"),
            v.to_string().as_bytes(),
            Some(knowledge_db::transcript::Format::ClaudeCode),
            ReadFrom::default(),
        )
        .unwrap();
        *counted += m
            .messages
            .iter()
            .map(|m| Tokenizer::Estimate.message(m) as u64)
            .sum::<u64>();
        lines.push_str(&v.to_string());
        lines.push('\n');
    };
    for i in 0..steps {
        push(
            serde_json::json!({"type": "user", "message": {"role": "user", "content": format!("step {i}: make the parser accept trailing commas in lists")}}),
            &mut counted,
        );
        push(
            serde_json::json!({"type": "assistant", "requestId": format!("q{i}"), "message": {"id": format!("r{i}"), "role": "assistant", "model": "claude-opus-4-6", "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": format!("cargo test parser_{i}")}}]}}),
            &mut counted,
        );
        push(
            serde_json::json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": format!("running 12 tests\ntest parser_{i} ... ok\ntest result: ok. 12 passed")}]}}),
            &mut counted,
        );
        push(
            serde_json::json!({"type": "assistant", "requestId": format!("a{i}"), "message": {"id": format!("s{i}"), "role": "assistant", "model": "claude-opus-4-6", "content": [{"type": "text", "text": format!("Step {i} passes: the list rule now allows a trailing comma before the closing bracket.")}]}}),
            &mut counted,
        );
    }
    store.write("usage.jsonl", lines.as_bytes())
}

#[test]
fn evict_budgets_against_the_prompt_its_usage_reports() {
    let store = TestStore::new();
    let file = session_with_usage(&store, 12, 5_000);
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "evict",
            "--transcript",
            file.to_str().unwrap(),
            "--context-window",
            "7000",
            "--min-keep",
            "4",
            "--dry-run",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run =
        |extra: &[&str]| store.json(&args(extra).iter().map(String::as_str).collect::<Vec<_>>());
    // The messages alone fit a 7,000-token window easily...
    let messages_only = run(&["--overhead", "0"]);
    assert_eq!(messages_only["evicted_count"], 0, "{messages_only}");
    let counted = messages_only["tokens_before"].as_u64().unwrap();
    assert!(counted < 2_000, "{counted}");
    // ...but each prompt was 5,000 tokens larger: the live prompt is over the
    // 5,600-token target (0.8 of the window), and eviction gets it under.
    let report = run(&[]);
    let overhead = report["overhead_tokens"].as_u64().unwrap();
    assert!((4_990..=5_010).contains(&overhead), "{report}");
    assert_eq!(
        report["tokens_before"].as_u64().unwrap(),
        counted + overhead
    );
    assert!(report["evicted_count"].as_u64().unwrap() > 0, "{report}");
    assert!(
        report["tokens_after"].as_u64().unwrap() <= 5_600,
        "{report}"
    );
    assert_eq!(report["target_met"], true, "{report}");
    assert_eq!(report["reported_prompt"]["overhead_tokens"], overhead);
    // --overhead overrides the measurement; `tokens` shows it.
    let given = run(&["--overhead", "5500"]);
    assert_eq!(given["overhead_tokens"], 5500);
    let tokens = store.json(&["tokens", file.to_str().unwrap()]);
    assert_eq!(tokens["reported_prompt"]["overhead_tokens"], overhead);
}

/// The sessions the issue named, from the real transcripts: their messages
/// count far less than the prompts their usage figures report.
#[test]
fn real_sessions_are_budgeted_by_their_reported_prompt() {
    let dir = common::shared_eval("transcripts/claude-code-entire-cli");
    if !dir.is_dir() {
        eprintln!("skipped: {} is missing", dir.display());
        return;
    }
    let store = TestStore::new();
    for (session, reported, evicted_before) in [
        ("0a76fbfe-d767-433e-b4b1-a39e044f21e8", 95_353, 27),
        ("1c38adc0-5071-4382-9e53-de8c30e2265f", 68_534, 0),
    ] {
        let file = dir.join(format!("{session}.jsonl.gz"));
        let evict = |extra: &[&str]| {
            let mut args = vec![
                "evict",
                "--transcript",
                file.to_str().unwrap(),
                "--context-window",
                "50000",
                "--dry-run",
            ];
            args.extend_from_slice(extra);
            store.json(&args)
        };
        let messages_only = evict(&["--overhead", "0"]);
        assert_eq!(messages_only["evicted_count"], evicted_before, "{session}");
        let report = evict(&[]);
        assert_eq!(
            report["reported_prompt"]["reported_tokens"], reported,
            "{session}"
        );
        let before = report["tokens_before"].as_u64().unwrap();
        assert!(before >= reported * 99 / 100, "{session}: {before}");
        assert!(
            report["evicted_count"].as_u64().unwrap() > evicted_before,
            "{session}"
        );
        assert!(
            report["tokens_after"].as_u64().unwrap() <= 50_000,
            "{session}"
        );
    }
}

#[test]
fn pack_keeps_the_compaction_summary() {
    let store = TestStore::new();
    let fixture = samples().join(CC_COMPACTED);
    let report = store.json(&[
        "pack",
        "--transcript",
        fixture.to_str().unwrap(),
        "--budget",
        "150",
    ]);
    assert!(report["tokens_after"].as_u64().unwrap() <= 150, "{report}");
    let kept = report["kept"].as_array().unwrap();
    assert_eq!(kept[0]["is_compact_summary"], true, "{report}");
    assert!(
        !report["dropped_ids"].to_string().contains(":cs1"),
        "{report}"
    );
    // Too small for the summary and the note: it fails and writes nothing.
    let before = store.snapshot();
    store
        .cmd()
        .args([
            "pack",
            "--transcript",
            fixture.to_str().unwrap(),
            "--budget",
            "60",
        ])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("context overflow"));
    assert_eq!(store.snapshot(), before);
}

/// A conversation of independent small units (a question, an answer, or a tool
/// call with its result right after it) whose costs come from `units`.
fn small_units(
    units: &[(u8, u16, u16)],
) -> (Vec<Message>, std::collections::HashMap<String, usize>) {
    let mut messages = Vec::new();
    let mut costs = std::collections::HashMap::new();
    let mut turn = 0;
    for (i, &(kind, a, b)) in units.iter().enumerate() {
        let mut unit = match kind % 3 {
            0 => {
                turn += 1;
                vec![(
                    Message::new(
                        Role::User,
                        vec![Block::Text {
                            text: format!("question {i}"),
                        }],
                    ),
                    a,
                )]
            }
            1 => vec![(
                Message::new(
                    Role::Assistant,
                    vec![Block::Text {
                        text: format!("answer {i}"),
                    }],
                ),
                a,
            )],
            _ => vec![
                (
                    Message::new(
                        Role::Assistant,
                        vec![Block::ToolUse {
                            id: format!("c{i}"),
                            name: "Bash".into(),
                            input: serde_json::json!({"command": "ls"}),
                        }],
                    ),
                    a,
                ),
                (
                    Message::new(
                        Role::Tool,
                        vec![Block::ToolResult {
                            tool_use_id: format!("c{i}"),
                            content: format!("out {i}"),
                            is_error: false,
                            name: None,
                        }],
                    ),
                    b,
                ),
            ],
        };
        for (m, cost) in unit.iter_mut() {
            let id = format!("u{}", messages.len());
            m.uuid = Some(id.clone());
            m.turn_index = turn;
            costs.insert(id, *cost as usize + 1);
            messages.push(m.clone());
        }
    }
    (messages, costs)
}

/// Words of a seeded text: `n` words, some of them paths and numbers.
fn words(seed: u64, n: usize) -> String {
    let vocabulary = [
        "the",
        "parser",
        "src/lexer.rs",
        "fails",
        "on",
        "trailing",
        "comma",
        "42",
        "test",
        "fixed",
        "error[E0502]",
        "borrow",
        "list",
    ];
    (0..n)
        .map(|i| {
            vocabulary[((seed.wrapping_mul(31).wrapping_add(i as u64 * 7))
                % vocabulary.len() as u64) as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Made of small messages, a prompt over its budget is packed to within
    /// 90-100% of it (dropping whole small groups never leaves more unused).
    #[test]
    fn packing_small_messages_lands_within_ten_percent_of_the_budget(
        units in prop::collection::vec((0u8..3, 0u16..40, 0u16..40), 100..300),
        share in 0.2f64..0.95,
        recent in 1u64..4,
    ) {
        let (messages, costs) = small_units(&units);
        let cost = cost_of(&costs);
        let total: usize = messages.iter().map(&cost).sum();
        let budget = (total as f64 * share) as usize;
        prop_assume!(budget >= 2_500);
        let options = PriorityOptions { recent_turns: recent, recent_tool_steps: 5 };
        let p = pack_prompt(messages, budget, &options, &cost, &|m| m.uuid.clone().unwrap_or_default()).unwrap();
        prop_assert!(p.tokens_after <= budget, "{} > {}", p.tokens_after, budget);
        prop_assert!(p.tokens_after * 10 >= budget * 9, "landed at {} of {}", p.tokens_after, budget);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// With real text (counted by the estimate), large tool outputs and long
    /// messages are cut rather than dropped whole: the prompt lands within
    /// 90-100% of its budget, never over; whatever is cut or dropped is
    /// returned in full for the store, under the id its placeholder names.
    #[test]
    fn packing_real_text_lands_within_ten_percent_of_the_budget(
        steps in prop::collection::vec((0u8..3, 1usize..400), 5..60),
        share in 0.1f64..0.95,
    ) {
        let mut messages: Vec<Message> = Vec::new();
        let mut turn = 0;
        let push = |mut m: Message, turn: u64, messages: &mut Vec<Message>| {
            m.uuid = Some(format!("u{}", messages.len()));
            m.session_id = Some("p".into());
            m.turn_index = turn;
            messages.push(m);
        };
        push(Message::new(Role::System, vec![Block::Text { text: "You fix builds.".into() }]), 0, &mut messages);
        for (i, &(kind, n)) in steps.iter().enumerate() {
            let seed = i as u64;
            match kind {
                0 => {
                    turn += 1;
                    push(Message::new(Role::User, vec![Block::Text { text: words(seed, n) }]), turn, &mut messages);
                }
                1 => push(Message::new(Role::Assistant, vec![Block::Text { text: words(seed, n * 2) }]), turn, &mut messages),
                _ => {
                    push(Message::new(Role::Assistant, vec![Block::ToolUse { id: format!("c{i}"), name: "Read".into(), input: serde_json::json!({"file_path": format!("src/f{i}.rs")}) }]), turn, &mut messages);
                    push(Message::new(Role::Tool, vec![Block::ToolResult { tool_use_id: format!("c{i}"), content: words(seed, n * 20), is_error: false, name: None }]), turn, &mut messages);
                }
            }
        }
        let cost = |m: &Message| Tokenizer::Estimate.message(m);
        let total: usize = messages.iter().map(cost).sum();
        // The pack keeps room for its note at the note's longest (about 130
        // tokens) and may write a shorter one; under about 1,300 tokens that
        // room is over a tenth of the budget, so the 90% floor is promised
        // only above it (as for small messages above). CI found the case: a
        // 400-token budget packed to 356.
        let budget = ((total as f64 * share) as usize).max(1_500);
        prop_assume!(budget < total);
        let record_id = |m: &Message| format!("p:{}", m.uuid.clone().unwrap_or_default());
        let p = pack_prompt(messages.clone(), budget, &PriorityOptions::default(), &cost, &record_id).unwrap();
        prop_assert!(p.tokens_after <= budget, "{} > {}", p.tokens_after, budget);
        prop_assert!(p.tokens_after * 10 >= budget * 9, "landed at {} of {}", p.tokens_after, budget);
        prop_assert_eq!(p.kept.iter().map(cost).sum::<usize>(), p.tokens_after);
        // Nothing is lost: every original message is kept whole, cut (and
        // returned in full) or dropped (returned in full).
        let cut: std::collections::HashMap<&str, &Message> = p.cut.iter().map(|(id, m)| (id.as_str(), m)).collect();
        let dropped: HashSet<&str> = p.dropped.iter().filter_map(|(_, m)| m.uuid.as_deref()).collect();
        for m in &messages {
            let id = record_id(m);
            let whole = p.kept.contains(m);
            let in_cut = cut.get(id.as_str()).is_some_and(|full| *full == m);
            let gone = dropped.contains(m.uuid.as_deref().unwrap()) && p.dropped.iter().any(|(_, d)| d == m);
            prop_assert!(whole || in_cut || gone, "{} is lost", id);
        }
        // A cut message names the record with its full text.
        for k in &p.kept {
            if let Some(id) = k.uuid.as_deref().map(|u| format!("p:{u}")) {
                if cut.contains_key(id.as_str()) {
                    prop_assert!(k.text().contains(&format!("record {id}")), "{}", k.text());
                }
            }
        }
    }
}
