//! The question sets under `dev-sets/` stay what their READMEs promise: every
//! question has an answer session, every answer session is one of the dev
//! sessions of `agent-questions/transcripts.txt` (never the held-out quarter),
//! and the paraphrase sets keep a third of their questions out of tuning.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn dev_sets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("dev-sets")
}

/// The session ids of the dev transcripts: each listed file's name ends with
/// its session's id (`<id>.jsonl.gz` or `<date>-<id>.jsonl.gz`).
fn dev_sessions() -> BTreeSet<String> {
    let list = std::fs::read_to_string(dev_sets().join("agent-questions/transcripts.txt")).unwrap();
    list.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let name = Path::new(line).file_name().unwrap().to_string_lossy();
            let stem = name.split('.').next().unwrap();
            stem[stem.len().saturating_sub(36)..].to_string()
        })
        .collect()
}

/// query id -> its answer sessions, from `qrels/sessions.tsv`.
fn answer_sessions(set: &str) -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(dev_sets().join(set).join("qrels/sessions.tsv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("query-id\tcorpus-id\tscore"),
        "{set}: header"
    );
    let mut answers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (n, line) in lines.enumerate() {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(
            fields.len(),
            3,
            "{set}/qrels/sessions.tsv:{}: {line:?}",
            n + 2
        );
        answers
            .entry(fields[0].into())
            .or_default()
            .insert(fields[1].into());
    }
    answers
}

/// (query id, part) of every question of `queries.jsonl`.
fn parts(set: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dev_sets().join(set).join("queries.jsonl")).unwrap();
    text.lines()
        .map(|line| {
            let query: serde_json::Value = serde_json::from_str(line).unwrap();
            let part = query["metadata"]["part"]
                .as_str()
                .unwrap_or("tune")
                .to_string();
            (query["_id"].as_str().unwrap().to_string(), part)
        })
        .collect()
}

#[test]
fn every_question_is_answered_by_a_dev_session() {
    let dev = dev_sessions();
    assert!(dev.len() >= 200, "{} dev sessions listed", dev.len());
    for set in ["agent-questions", "paraphrase", "paraphrase-hard"] {
        let answers = answer_sessions(set);
        for (id, _) in parts(set) {
            let sessions = answers
                .get(&id)
                .unwrap_or_else(|| panic!("{set}: {id} has no answer session"));
            for session in sessions {
                assert!(
                    dev.contains(session),
                    "{set}: {id}'s answer session {session} is not a dev session"
                );
            }
        }
    }
}

#[test]
fn the_paraphrase_sets_keep_a_third_out_of_tuning() {
    for set in ["paraphrase", "paraphrase-hard"] {
        let parts = parts(set);
        let check = parts.iter().filter(|(_, part)| part == "check").count();
        let tune = parts.iter().filter(|(_, part)| part == "tune").count();
        assert_eq!(
            check + tune,
            parts.len(),
            "{set}: a part other than tune or check"
        );
        assert_eq!(
            check * 3,
            parts.len(),
            "{set}: {check} of {} questions kept out of tuning",
            parts.len()
        );
    }
}

#[test]
fn the_hard_set_has_one_question_per_session() {
    let answers = answer_sessions("paraphrase-hard");
    let sessions: BTreeSet<_> = answers.values().flatten().collect();
    assert_eq!(
        sessions.len(),
        answers.len(),
        "two hard questions share an answer session"
    );
    assert!(answers.len() >= 36);
}
