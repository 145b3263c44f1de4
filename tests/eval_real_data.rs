//! Ranking quality on real evaluation data (../shared/eval), through the CLI.
//! These guard the numbers the README publishes against regressions.

mod common;

use common::{shared_eval, TestStore};

fn eval(name: &str, mode: &str) -> serde_json::Value {
    let dir = shared_eval(name);
    assert!(
        dir.join("corpus.jsonl").is_file(),
        "missing evaluation data at {}",
        dir.display()
    );
    TestStore::uninitialised().json(&["eval", "--corpus", dir.to_str().unwrap(), "--mode", mode])
}

#[test]
fn scifact_bm25_matches_the_published_baseline() {
    let report = eval("scifact-dev", "bm25");
    assert_eq!(report["queries"], 809);
    let ndcg = report["ndcg_at_10"].as_f64().unwrap();
    assert!(ndcg >= 0.66, "nDCG@10 {ndcg} fell below 0.66");
}

#[test]
fn locomo_is_scoped_per_conversation() {
    let report = eval("locomo-dev", "bm25");
    assert_eq!(report["scope_field"], "conv");
    let recall = report["recall_at_10"].as_f64().unwrap();
    // 0.613 without conversation context, 0.729 with it.
    assert!(recall >= 0.70, "Recall@10 {recall} fell below 0.70");
}
