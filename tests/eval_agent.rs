//! `eval` on an agent-questions folder (issue 20): transcripts listed in
//! `transcripts.txt` are ingested at eval time, and each question is scored by
//! session hit@5 and evidence hit@10 per kind; `--negatives` reports the share
//! of queries without a relevant record answered with nothing.

mod common;

use common::{samples, TestStore};

#[test]
fn agent_questions_are_scored_per_kind_with_sessions_and_evidence() {
    let store = TestStore::new();
    let dir = store.dir.path().join("questions");
    std::fs::create_dir_all(dir.join("qrels")).unwrap();
    let transcripts = samples().join("transcripts");
    let list: Vec<String> = ["generic-session", "openclaw-session", "uncompacted-session"]
        .iter()
        .map(|name| {
            transcripts
                .join(format!("{name}.jsonl.gz"))
                .display()
                .to_string()
        })
        .collect();
    std::fs::write(
        dir.join("transcripts.txt"),
        format!("# sample transcripts\n{}\n", list.join("\n")),
    )
    .unwrap();
    std::fs::write(
        dir.join("queries.jsonl"),
        concat!(
            r#"{"_id": "k1", "text": "git tag v0.4.2", "metadata": {"kind": "keyword"}}"#,
            "\n",
            r#"{"_id": "p1", "text": "which release did we publish", "metadata": {"kind": "paraphrase"}}"#,
            "\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("qrels/records.tsv"),
        "query-id\tcorpus-id\tscore\nk1\tgeneric-session:g1\t1\np1\tgeneric-session:g4\t1\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("qrels/sessions.tsv"),
        "query-id\tcorpus-id\tscore\nk1\tgeneric-session\t1\np1\tgeneric-session\t1\n",
    )
    .unwrap();
    let negatives = dir.join("negatives.jsonl");
    std::fs::write(
        &negatives,
        r#"{"_id": "n1", "text": "xqzvbn wplmrt", "metadata": {"kind": "nonsense"}}"#,
    )
    .unwrap();

    let report = TestStore::uninitialised().json(&[
        "eval",
        "--corpus",
        dir.to_str().unwrap(),
        "--mode",
        "bm25",
        "--negatives",
        negatives.to_str().unwrap(),
    ]);
    assert!(report["documents"].as_u64().unwrap() > 5, "{report}");
    assert_eq!(report["agent"]["queries"], 2, "{report}");
    let keyword = &report["agent_by_kind"]["keyword"];
    assert_eq!(keyword["session_hit_at_5"], 1.0, "{report}");
    assert_eq!(keyword["evidence_hit_at_10"], 1.0, "{report}");
    assert_eq!(report["agent_by_kind"]["paraphrase"]["queries"], 1);
    assert_eq!(report["abstention"]["queries"], 1);
    assert_eq!(report["abstention"]["answered_nothing"], 1);

    // A listed transcript that is missing is named with its line.
    std::fs::write(dir.join("transcripts.txt"), "missing.jsonl.gz\n").unwrap();
    let out = TestStore::uninitialised()
        .cmd()
        .args(["eval", "--corpus", dir.to_str().unwrap(), "--mode", "bm25"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("transcripts.txt:1") && stderr.contains("missing.jsonl.gz"),
        "{stderr}"
    );
}
