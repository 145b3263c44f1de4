//! The real embedding path: all-MiniLM-L6-v2 on ONNX Runtime, installed by
//! `scripts/setup-model.sh` (which `./test.sh` runs first). These tests fail, not
//! skip, when the model is missing: CI must exercise the real path.

mod common;

use common::{samples, shared_eval, TestStore};
use knowledge_db::embed::{dot, Embedder, FastEmbedder, ModelLocation};

fn model() -> FastEmbedder {
    FastEmbedder::load(&ModelLocation::locate())
        .unwrap_or_else(|e| panic!("{e} (./test.sh runs scripts/setup-model.sh first)"))
}

#[test]
fn vectors_match_the_published_model() {
    let mut model = model();
    let v = model
        .embed(&["This is an example sentence"])
        .unwrap()
        .remove(0);
    assert_eq!(v.len(), 384);
    let published = [0.06766, 0.06350, 0.04871, 0.07930, 0.03745];
    for (got, want) in v.iter().zip(published) {
        assert!((got - want).abs() < 1e-4, "{:?} vs {published:?}", &v[..5]);
    }
    assert!((dot(&v, &v) - 1.0).abs() < 1e-4, "vectors are unit length");
}

#[test]
fn batching_and_padding_do_not_change_vectors() {
    let mut model = model();
    let texts = [
        "short",
        "a much longer sentence about refreshing oauth tokens before they expire",
    ];
    let together = model.embed(&texts).unwrap();
    for (i, text) in texts.iter().enumerate() {
        let alone = model.embed(&[text]).unwrap().remove(0);
        assert!(dot(&alone, &together[i]) > 0.99999, "{text}");
    }
}

#[test]
fn meaning_finds_records_that_share_no_words_with_the_query() {
    let store = TestStore::new();
    store.cmd().arg("add").arg(samples()).assert().success();
    let stats = store.json(&["stats"]);
    assert_eq!(stats["vectors"]["with_vector"], 10, "{stats}");
    let out = store.json(&[
        "search",
        "users kept getting signed out",
        "--mode",
        "vector",
        "-k",
        "1",
    ]);
    assert_eq!(out["results"][0]["id"], "seg-auth-0001", "{out}");
    assert_eq!(out["vector"], "used");
    let hybrid = store.json(&["search", "E0502", "-k", "1"]);
    assert_eq!(hybrid["results"][0]["id"], "seg-build-0002");
    assert!(hybrid["results"][0]["scores"]["bm25_rank"]
        .as_u64()
        .is_some());
}

#[test]
fn embed_later_then_backfill() {
    let store = TestStore::new();
    store
        .cmd()
        .args(["add", "--embed", "later"])
        .arg(samples())
        .assert()
        .success();
    assert_eq!(store.json(&["stats"])["vectors"]["without_vector"], 10);
    let out = store.json(&["search", "oauth refresh"]);
    assert_eq!(
        out["vector"],
        "unavailable: no record in the store has a vector yet (run `knowledge-db embed`)"
    );
    assert_eq!(store.json(&["embed"])["embedded"], 10);
    assert_eq!(store.json(&["stats"])["vectors"]["without_vector"], 0);
    assert_eq!(store.json(&["search", "oauth refresh"])["vector"], "used");
}

fn eval(name: &str) -> serde_json::Value {
    let dir = shared_eval(name);
    TestStore::uninitialised().json(&["eval", "--corpus", dir.to_str().unwrap()])
}

/// The published dense retriever (DRAGON) reaches 0.675 Recall@10 on LoCoMo turns;
/// the default hybrid (z-score fusion, each turn with the turn before it as
/// context) measures 0.755 against the 0.75 target.
#[test]
fn hybrid_beats_the_published_dense_retriever_on_locomo() {
    let report = eval("locomo-dev");
    assert_eq!(report["vector"], "used");
    let recall = report["recall_at_10"].as_f64().unwrap();
    assert!(recall >= 0.75, "LoCoMo Recall@10 {recall} below 0.75");
}

/// Published: BM25 0.665, all-MiniLM-L6-v2 alone about 0.645, bge-small 0.713.
#[test]
fn hybrid_beats_bm25_on_scifact() {
    let report = eval("scifact-dev");
    assert_eq!(report["vector"], "used");
    let ndcg = report["ndcg_at_10"].as_f64().unwrap();
    assert!(ndcg >= 0.70, "SciFact nDCG@10 {ndcg} below 0.70");
}
