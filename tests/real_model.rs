//! The real embedding path: all-MiniLM-L6-v2 on ONNX Runtime, installed by
//! `scripts/setup-model.sh` (which `./test.sh` runs first). These tests fail, not
//! skip, when the model is missing: CI must exercise the real path.

mod common;

use common::{samples, shared_eval, TestStore};
use knowledge_db::embed::{Embedder, ModelLocation, OnnxEmbedder, Workload};
use knowledge_db::vectors::dot::dot;

/// The model itself: never the vector cache `./test.sh` turns on for the
/// evaluations below, so these tests check what the model computes.
fn model() -> OnnxEmbedder {
    OnnxEmbedder::load(&ModelLocation::locate(), Workload::Batches)
        .unwrap_or_else(|e| panic!("{e} (./test.sh runs scripts/setup-model.sh first)"))
        .without_cache()
}

/// The vector cache (issue 40) hands back exactly what the model computed for
/// the same text, and a damaged cache is recomputed, never trusted.
#[test]
fn the_vector_cache_returns_what_the_model_computed() {
    let root = tempfile::tempdir().unwrap();
    let location = ModelLocation::locate();
    let cached = || model().with_cache(&location, root.path()).unwrap();
    let texts = [
        "users kept getting signed out",
        "the refresh token expired before the request",
    ];
    let reference = model().embed(&texts).unwrap();

    let mut first = cached();
    assert_eq!(first.cache().unwrap().len(), 0);
    let computed = first.embed(&texts).unwrap();
    let same = |a: &[Vec<f32>]| a.iter().zip(&reference).all(|(x, y)| dot(x, y) > 0.99999);
    assert!(same(&computed), "a miss is the model's own vector");
    drop(first);

    let mut second = cached();
    assert_eq!(second.cache().unwrap().len(), texts.len());
    assert_eq!(
        second.embed(&texts).unwrap(),
        computed,
        "read back bit for bit"
    );
    let dir = second.cache().unwrap().dir().to_path_buf();
    drop(second);

    // A changed bit in every pack: nothing is read, the model computes again.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x01;
        std::fs::write(&path, bytes).unwrap();
    }
    let mut third = cached();
    assert_eq!(third.cache().unwrap().len(), 0);
    assert!(same(&third.embed(&texts).unwrap()));
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

/// A model folder with the installed files linked in, except those left out.
fn model_dir_without(left_out: &[&str]) -> (tempfile::TempDir, ModelLocation) {
    let installed = ModelLocation::locate();
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&installed.model_dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if !left_out.iter().any(|l| name == *l) {
            std::os::unix::fs::symlink(entry.path(), dir.path().join(&name)).unwrap();
        }
    }
    let location = ModelLocation {
        model_dir: dir.path().to_path_buf(),
        runtime: installed.runtime,
    };
    (dir, location)
}

const CHECK_TEXTS: [&str; 4] = [
    "This is an example sentence",
    "",
    "E0502 cannot borrow `self.items` as mutable",
    "a much longer sentence about refreshing oauth tokens before they expire, repeated \
     so that the batch pads the short ones: refreshing oauth tokens before they expire",
];

fn max_difference(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs()))
        .fold(0.0, f32::max)
}

/// `model.ort` (the setup script's optimised copy, run in place from a memory map)
/// and `model.onnx` (the graph as converted) give the same vectors, for both ways
/// of building the session.
#[test]
fn the_fast_loading_model_gives_the_vectors_of_the_converted_graph() {
    let installed = ModelLocation::locate();
    assert!(
        installed.model_dir.join("model.ort").is_file(),
        "scripts/setup-model.sh installs model.ort"
    );
    let (_dir, onnx_only) = model_dir_without(&["model.ort"]);
    let reference = OnnxEmbedder::load(&onnx_only, Workload::Batches)
        .unwrap()
        .embed(&CHECK_TEXTS)
        .unwrap();
    for workload in [Workload::Queries, Workload::Batches] {
        let got = OnnxEmbedder::load(&installed, workload)
            .unwrap()
            .embed(&CHECK_TEXTS)
            .unwrap();
        let diff = max_difference(&got, &reference);
        assert!(diff < 1e-5, "{workload:?}: max difference {diff}");
    }
}

/// A `model.ort` the runtime cannot read costs load time, never vectors.
#[test]
fn a_damaged_fast_loading_model_falls_back_to_the_onnx_graph() {
    let (dir, location) = model_dir_without(&["model.ort"]);
    std::fs::write(dir.path().join("model.ort"), b"not a model").unwrap();
    let got = OnnxEmbedder::load(&location, Workload::Queries)
        .unwrap()
        .embed(&CHECK_TEXTS[..1])
        .unwrap();
    let reference = model().embed(&CHECK_TEXTS[..1]).unwrap();
    assert!(max_difference(&got, &reference) < 1e-5);
}

#[test]
fn missing_tokenizer_files_are_named() {
    for missing in ["tokenizer.json", "tokenizer_config.json", "model.onnx"] {
        let (_dir, location) = model_dir_without(&[missing]);
        let error = OnnxEmbedder::load(&location, Workload::Queries)
            .err()
            .unwrap_or_else(|| panic!("loaded without {missing}"))
            .to_string();
        assert!(
            error.contains(missing) && error.contains("setup-model.sh"),
            "{error}"
        );
    }
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
        // On a store this small the paraphrase is a weak match (see Search).
        "--all",
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

/// `eval` of a dev set with the default ranking, also measuring abstention on
/// the repository's negative queries.
fn eval(name: &str) -> serde_json::Value {
    let dir = shared_eval(name);
    let negatives = samples().join("../dev-sets/negatives/queries.jsonl");
    TestStore::uninitialised().json(&[
        "eval",
        "--corpus",
        dir.to_str().unwrap(),
        "--negatives",
        negatives.to_str().unwrap(),
    ])
}

/// The abstention numbers the README publishes (issue 20): the share of
/// negative queries answered with nothing, and what the minimum score costs.
fn assert_abstains(report: &serde_json::Value, share: f64, max_cost: f64) {
    let abstained = report["abstention"]["share"].as_f64().unwrap();
    assert!(
        abstained >= share,
        "answered nothing on {abstained} < {share}"
    );
    let with = report["recall_at_10"].as_f64().unwrap();
    let without = report["without_minimum"]["recall_at_10"].as_f64().unwrap();
    assert!(
        without - with <= max_cost,
        "the minimum score costs {} Recall@10",
        without - with
    );
}

/// The published dense retriever (DRAGON) reaches 0.675 Recall@10 on LoCoMo turns;
/// the default hybrid (calibrated scores, each turn with the turn before it as
/// context, the turn a high-ranking turn replies to raised, turns of a date the
/// question names raised, coverage of the question's words) measures 0.807
/// (0.795 before coverage, 0.779 before the dates).
#[test]
fn hybrid_beats_the_published_dense_retriever_on_locomo() {
    let report = eval("locomo-dev");
    assert_eq!(report["vector"], "used");
    let recall = report["recall_at_10"].as_f64().unwrap();
    assert!(recall >= 0.80, "LoCoMo Recall@10 {recall} below 0.80");
    // The minimum's cost rose from 0.0030 to 0.0040 with the everyday words
    // (issue 37), while Recall@10 with the minimum rose 0.8068 -> 0.8081 and
    // without it 0.8098 -> 0.8121: more is found on both sides of it.
    assert_abstains(&report, 0.97, 0.005);
}

/// Published: BM25 0.665, all-MiniLM-L6-v2 alone about 0.645, bge-small 0.713;
/// the default hybrid measures 0.730. The minimum costs 0.0074 Recall@10: the
/// relevant records it drops are ranked in the top 10 of queries that look
/// unanswerable (scores 0.006-0.055), two of them only since coverage put them
/// there (README, Abstention).
#[test]
fn hybrid_beats_bm25_on_scifact() {
    let report = eval("scifact-dev");
    assert_eq!(report["vector"], "used");
    let ndcg = report["ndcg_at_10"].as_f64().unwrap();
    assert!(ndcg >= 0.72, "SciFact nDCG@10 {ndcg} below 0.72");
    assert_abstains(&report, 0.95, 0.008);
}
