use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::path::Path;

use flate2::write::GzEncoder;
use flate2::Compression;

use super::queries::{choose_targets, command_head, looks_like_identifier};
use super::rng::{Picker, Rng};
use super::summary::{first_sentence, sentences_of};
use super::*;

/// One small session with prompts, tool calls, an error, TaskCreate/TaskUpdate
/// and TodoWrite, plus lines that must be skipped.
const SESSION_A: &str = r#"{"type":"file-history-snapshot","messageId":"m0","snapshot":{}}
{"type":"user","uuid":"a1","sessionId":"sess-a","cwd":"/w/app","timestamp":"2026-02-01T10:00:00Z","message":{"role":"user","content":"Fix the failing parser test in src/parse.rs. It panics on empty input."}}
not json at all
{"type":"assistant","uuid":"a2","sessionId":"sess-a","timestamp":"2026-02-01T10:00:05Z","message":{"id":"msg1","role":"assistant","content":[{"type":"thinking","thinking":"secret musing"}]}}
{"type":"assistant","uuid":"a3","sessionId":"sess-a","timestamp":"2026-02-01T10:00:06Z","message":{"id":"msg1","role":"assistant","content":[{"type":"text","text":"I'll read the parser first to find where parseHeader handles empty input."},{"type":"tool_use","id":"tu1","name":"Read","input":{"file_path":"/w/app/src/parse.rs"}}]}}
{"type":"user","uuid":"a4","sessionId":"sess-a","timestamp":"2026-02-01T10:00:07Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"fn parse_header(input: &str) -> Header { let first = input.lines().next().unwrap(); }"}]}}
{"type":"progress","uuid":"p1","sessionId":"sess-a","data":{"type":"hook_progress"}}
{"type":"assistant","uuid":"a5","sessionId":"sess-a","timestamp":"2026-02-01T10:01:00Z","message":{"id":"msg2","role":"assistant","content":[{"type":"tool_use","id":"tu2","name":"TaskCreate","input":{"subject":"Handle empty input in parse_header","description":"Return an error instead of panicking"}},{"type":"tool_use","id":"tu3","name":"Bash","input":{"command":"cargo test parse_header"}}]}}
{"type":"user","uuid":"a6","sessionId":"sess-a","timestamp":"2026-02-01T10:01:30Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu3","is_error":true,"content":"error[E0308]: mismatched types in src/parse.rs\nexpected Header"}]}}
{"type":"assistant","uuid":"a7","sessionId":"sess-a","timestamp":"2026-02-01T10:02:00Z","message":{"id":"msg3","role":"assistant","content":[{"type":"text","text":"The fix is to return Result from parse_header instead of unwrapping. Rather than panicking we map the empty case to ParseError::Empty."},{"type":"tool_use","id":"tu4","name":"Edit","input":{"file_path":"/w/app/src/parse.rs","old_string":"unwrap()","new_string":"ok_or(ParseError::Empty)?"}}]}}
{"type":"user","uuid":"a8","sessionId":"sess-a","timestamp":"2026-02-01T10:02:10Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu4","content":"The file src/parse.rs has been updated."}]}}
{"type":"assistant","uuid":"a9","sessionId":"sess-a","timestamp":"2026-02-01T10:03:00Z","message":{"id":"msg4","role":"assistant","content":[{"type":"tool_use","id":"tu5","name":"TaskUpdate","input":{"taskId":"1","status":"completed"}},{"type":"text","text":"Fixed: parse_header now returns ParseError::Empty and all parser tests pass."}]}}
{"type":"user","uuid":"a10","sessionId":"sess-a","timestamp":"2026-02-01T10:04:00Z","message":{"role":"user","content":[{"type":"text","text":"Great. Now add a changelog entry for the parser fix in CHANGELOG.md please."}]}}
{"type":"assistant","uuid":"a11","sessionId":"sess-a","timestamp":"2026-02-01T10:04:20Z","message":{"id":"msg5","role":"assistant","content":[{"type":"tool_use","id":"tu6","name":"TodoWrite","input":{"todos":[{"content":"Write changelog entry for ParseError::Empty","status":"completed"},{"content":"Bump crate version to 0.4.1","status":"pending"}]}},{"type":"tool_use","id":"tu7","name":"Write","input":{"file_path":"/w/app/CHANGELOG.md","content":"- parser: empty input returns ParseError::Empty"}}]}}
{"type":"user","uuid":"a12","message":{"role":"user","content":42}}
{"type":"summary","summary":"Parser fix","leafUuid":"a11"}
{"type":"assistant","uuid":"a13","sessionId":"sess-a","isSidechain":true,"timestamp":"2026-02-01T10:05:00Z","message":{"id":"side","role":"assistant","content":[{"type":"text","text":"SIDECHAIN TEXT must not appear"}]}}
"#;

/// A second, plain (not gzipped) session in a subfolder.
const SESSION_B: &str = r#"{"type":"user","uuid":"b1","sessionId":"sess-b","cwd":"/w/web","timestamp":"2026-02-03T09:00:00Z","message":{"role":"user","content":"Why does the login page render twice? Check useSessionStore in web/src/store.ts."}}
{"type":"assistant","uuid":"b2","sessionId":"sess-b","timestamp":"2026-02-03T09:00:10Z","message":{"id":"bm1","role":"assistant","content":[{"type":"text","text":"Let me look at the store and the LoginPage component."},{"type":"tool_use","id":"bt1","name":"Grep","input":{"pattern":"useSessionStore","path":"/w/web/src"}}]}}
{"type":"user","uuid":"b3","sessionId":"sess-b","timestamp":"2026-02-03T09:00:12Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"bt1","content":"src/store.ts:12: export const useSessionStore = create(...)\nsrc/LoginPage.tsx:4: const s = useSessionStore()"}]}}
{"type":"assistant","uuid":"b4","sessionId":"sess-b","timestamp":"2026-02-03T09:01:00Z","message":{"id":"bm2","role":"assistant","content":[{"type":"text","text":"The store selector returns a new object each time, so React re-renders. We should use a shallow equality selector instead of the whole store."},{"type":"tool_use","id":"bt2","name":"Edit","input":{"file_path":"/w/web/src/LoginPage.tsx","old_string":"useSessionStore()","new_string":"useSessionStore(selectUser, shallow)"}}]}}
{"type":"user","uuid":"b5","sessionId":"sess-b","timestamp":"2026-02-03T09:02:00Z","message":{"role":"user","content":"Thanks, that fixed the double render. Run npm test to confirm."}}
{"type":"assistant","uuid":"b6","sessionId":"sess-b","timestamp":"2026-02-03T09:02:30Z","message":{"id":"bm3","role":"assistant","content":[{"type":"tool_use","id":"bt3","name":"Bash","input":{"command":"npm test -- LoginPage"}}]}}
{"type":"user","uuid":"b7","sessionId":"sess-b","timestamp":"2026-02-03T09:03:00Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"bt3","content":"PASS src/LoginPage.test.tsx (3 tests)"}]}}
{"type":"assistant","uuid":"b8","sessionId":"sess-b","timestamp":"2026-02-03T09:03:10Z","message":{"id":"bm4","role":"assistant","content":[{"type":"text","text":"All three LoginPage tests pass with the shallow selector."}]}}
"#;

fn write_gz(path: &Path, text: &str) {
    let file = File::create(path).unwrap();
    let mut encoder = GzEncoder::new(file, Compression::default());
    encoder.write_all(text.as_bytes()).unwrap();
    encoder.finish().unwrap();
}

fn transcripts_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_gz(&dir.path().join("sess-a.jsonl.gz"), SESSION_A);
    std::fs::create_dir(dir.path().join("web")).unwrap();
    std::fs::write(dir.path().join("web/sess-b.jsonl"), SESSION_B).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a transcript").unwrap();
    dir
}

fn run(from: &Path, out: &Path, records: usize, queries: usize, seed: u64) -> GenSummary {
    let opts = GenOptions {
        from: from.to_path_buf(),
        records,
        queries,
        seed,
        out: out.to_path_buf(),
    };
    generate(&opts, &mut |_| {}).unwrap()
}

fn read_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The id the store derives for a corpus line.
fn store_id(record: &serde_json::Value) -> String {
    let text = |k: &str| record[k].as_str().unwrap().to_string();
    match record["kind"].as_str().unwrap() {
        "message" => text("id"),
        "segment" => text("segment_id"),
        "task" => format!("{}:{}", text("session_id"), text("task_id")),
        other => panic!("unexpected kind {other}"),
    }
}

fn read_all(out: &Path) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    (
        std::fs::read(out.join("corpus.jsonl")).unwrap(),
        std::fs::read(out.join("queries.jsonl")).unwrap(),
        std::fs::read(out.join("qrels/test.tsv")).unwrap(),
    )
}

#[test]
fn same_seed_gives_identical_bytes() {
    let from = transcripts_dir();
    let out = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        out.path().join("a"),
        out.path().join("b"),
        out.path().join("c"),
    );
    run(from.path(), &a, 120, 30, 7);
    run(from.path(), &b, 120, 30, 7);
    run(from.path(), &c, 120, 30, 8);
    assert_eq!(read_all(&a), read_all(&b));
    assert_ne!(read_all(&a).0, read_all(&c).0);
}

#[test]
fn the_requested_record_count_is_met_exactly() {
    let from = transcripts_dir();
    let out = tempfile::tempdir().unwrap();
    // Fewer than one pass gives, and many passes.
    for records in [1, 5, 17, 400] {
        let dir = out.path().join(records.to_string());
        let summary = run(from.path(), &dir, records, 10, 1);
        let corpus = read_lines(&dir.join("corpus.jsonl"));
        assert_eq!(corpus.len(), records);
        assert_eq!(summary.records, records);
        assert_eq!(summary.messages + summary.segments + summary.tasks, records);
    }
}

#[test]
fn ids_are_unique_and_the_mix_holds_over_many_passes() {
    let from = transcripts_dir();
    let out = tempfile::tempdir().unwrap();
    let summary = run(from.path(), out.path(), 600, 50, 3);
    let corpus = read_lines(&out.path().join("corpus.jsonl"));
    let ids: HashSet<String> = corpus.iter().map(store_id).collect();
    assert_eq!(ids.len(), corpus.len());
    let lines: HashSet<String> = corpus.iter().map(|r| r.to_string()).collect();
    assert_eq!(lines.len(), corpus.len(), "no byte-identical records");
    let share = |n: usize| n as f64 / 600.0;
    assert!((0.5..0.7).contains(&share(summary.messages)), "{summary:?}");
    assert!(
        (0.15..0.35).contains(&share(summary.segments)),
        "{summary:?}"
    );
    assert!((0.07..0.25).contains(&share(summary.tasks)), "{summary:?}");
    assert!(corpus
        .iter()
        .any(|r| r["session_id"].as_str().unwrap().ends_with("~p3")));
}

#[test]
fn every_query_has_one_qrel_to_a_record_in_the_corpus() {
    let from = transcripts_dir();
    let out = tempfile::tempdir().unwrap();
    let summary = run(from.path(), out.path(), 200, 40, 11);
    let corpus = read_lines(&out.path().join("corpus.jsonl"));
    let ids: HashSet<String> = corpus.iter().map(store_id).collect();
    let queries = read_lines(&out.path().join("queries.jsonl"));
    assert_eq!(queries.len(), 40);
    assert_eq!(summary.queries, 40);
    let qrels = std::fs::read_to_string(out.path().join("qrels/test.tsv")).unwrap();
    let mut qrel_lines = qrels.lines();
    assert_eq!(qrel_lines.next(), Some("query-id\tcorpus-id\tscore"));
    let qrel_lines: Vec<&str> = qrel_lines.collect();
    assert_eq!(qrel_lines.len(), queries.len());
    for (query, qrel) in queries.iter().zip(qrel_lines) {
        let target = query["metadata"]["target"].as_str().unwrap();
        assert!(ids.contains(target), "{target} is not in the corpus");
        assert_eq!(
            qrel,
            format!("{}\t{target}\t1", query["_id"].as_str().unwrap())
        );
        let kind = query["metadata"]["type"].as_str().unwrap();
        assert!(["span", "identifier", "paraphrase"].contains(&kind));
        assert!(query["text"].as_str().unwrap().len() >= 3);
    }
}

#[test]
fn malformed_and_unknown_lines_are_skipped() {
    let from = transcripts_dir();
    let out = tempfile::tempdir().unwrap();
    let summary = run(from.path(), out.path(), 40, 0, 5);
    assert_eq!(summary.sessions_read, 2);
    assert_eq!(
        summary.source_lines,
        SESSION_A.lines().count() + SESSION_B.lines().count()
    );
    let corpus = std::fs::read_to_string(out.path().join("corpus.jsonl")).unwrap();
    assert!(!corpus.contains("SIDECHAIN"));
    assert!(!corpus.contains("secret musing"), "thinking is left out");
    let records = read_lines(&out.path().join("corpus.jsonl"));
    let base_session = |r: &serde_json::Value| {
        r["session_id"]
            .as_str()
            .unwrap()
            .split('~')
            .next()
            .unwrap()
            .to_string()
    };
    assert!(records
        .iter()
        .all(|r| ["sess-a", "sess-b"].contains(&base_session(r).as_str())));
}

#[test]
fn records_carry_what_the_transcript_says() {
    let from = transcripts_dir();
    let out = tempfile::tempdir().unwrap();
    // One pass holds 15 messages; ask for everything it plans.
    run(from.path(), out.path(), 1000, 0, 2);
    let corpus = read_lines(&out.path().join("corpus.jsonl"));
    let first_pass = |r: &&serde_json::Value| !r["session_id"].as_str().unwrap().contains('~');
    let edit = corpus
        .iter()
        .filter(first_pass)
        .find(|r| {
            r["kind"] == "message" && r["text"].as_str().unwrap().contains("[Edit] src/parse.rs")
        })
        .expect("the Edit call is rendered with a relative path");
    assert_eq!(edit["role"], "assistant");
    assert_eq!(edit["files"][0], "src/parse.rs");
    let task = corpus
        .iter()
        .filter(first_pass)
        .find(|r| r["kind"] == "task" && r["task_id"] == "task-1")
        .expect("TaskCreate gives a task");
    assert_eq!(task["subject"], "Handle empty input in parse_header");
    assert!(task["key_outcomes"]
        .to_string()
        .contains("Marked completed"));
    assert!(task["errors_resolved"][0]
        .as_str()
        .unwrap()
        .contains("E0308"));
    assert!(corpus.iter().any(|r| r["task_id"] == "todo-2"));
    let segment = corpus.iter().find(|r| r["kind"] == "segment").unwrap();
    assert!(segment["compressed_content"].as_str().unwrap().len() > 50);
    assert!(
        crate::bench::turns::parse_rfc3339(segment["compressed_at"].as_str().unwrap()).is_some()
    );
}

#[test]
fn missing_or_empty_sources_are_explained() {
    let empty = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let opts = |from: &Path| GenOptions {
        from: from.to_path_buf(),
        records: 10,
        queries: 1,
        seed: 0,
        out: out.path().join("o"),
    };
    let err = generate(&opts(empty.path()), &mut |_| {}).unwrap_err();
    assert!(matches!(err, GenError::NoTranscripts(_)), "{err}");
    assert!(err.to_string().contains("no transcripts found under"));

    std::fs::write(
        empty.path().join("junk.jsonl"),
        "garbage\n{\"type\":\"system\"}\n",
    )
    .unwrap();
    let err = generate(&opts(empty.path()), &mut |_| {}).unwrap_err();
    assert!(matches!(err, GenError::NoTurns(_)), "{err}");

    let err = generate(&opts(&empty.path().join("nope")), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn progress_reports_the_final_count() {
    let from = transcripts_dir();
    let out = tempfile::tempdir().unwrap();
    for (records, expected) in [
        (2100, vec![1000, 2000, 2100]),
        (2000, vec![1000, 2000]),
        (0, vec![0]),
    ] {
        let mut seen = Vec::new();
        let opts = GenOptions {
            from: from.path().to_path_buf(),
            records,
            queries: 5,
            seed: 9,
            out: out.path().to_path_buf(),
        };
        let summary = generate(&opts, &mut |n| seen.push(n)).unwrap();
        assert_eq!(seen, expected);
        assert_eq!(summary.queries, 5.min(records));
    }
}

#[test]
fn picker_keeps_exactly_the_wanted_number() {
    for (wanted, total) in [(0, 10), (3, 10), (10, 10), (7, 1000)] {
        let mut picker = Picker::new(wanted, total, Rng::derive(1, &[wanted as u64]));
        assert_eq!((0..total).filter(|_| picker.take()).count(), wanted);
    }
}

#[test]
fn targets_are_distinct_and_in_range() {
    let targets = choose_targets(50, 50, 4);
    assert_eq!(targets, (0..50).collect::<Vec<_>>());
    let targets = choose_targets(1000, 30, 4);
    assert_eq!(targets.len(), 30);
    assert!(targets.windows(2).all(|w| w[0] < w[1]) && targets[29] < 1000);
}

#[test]
fn identifiers_are_recognised() {
    for word in [
        "parseHeader",
        "useSessionStore",
        "parse_header",
        "LoginPage",
        "E0308",
        "store.ts",
    ] {
        assert!(looks_like_identifier(word), "{word}");
    }
    for word in ["the", "Hello", "1.2.3", "_", "ok", "https"] {
        assert!(!looks_like_identifier(word), "{word}");
    }
    assert_eq!(
        command_head("cd /w && cargo test --all"),
        Some("cargo test".to_string())
    );
    assert_eq!(command_head("ls"), None);
}

#[test]
fn sentences_split_on_ends_and_lines() {
    let text = "## Plan\nFirst do this. Then that! Version 1.2 stays.\n- a bullet";
    assert_eq!(
        sentences_of(text),
        vec![
            "Plan",
            "First do this.",
            "Then that!",
            "Version 1.2 stays.",
            "a bullet"
        ]
    );
    assert_eq!(
        first_sentence("A very long sentence indeed", 12),
        "A very long"
    );
    assert_eq!(
        first_sentence("Eval this:\nthe tests are slow. Why?", 80),
        "Eval this: the tests are slow."
    );
}
