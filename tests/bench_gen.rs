//! `bench gen` on real transcripts, and `eval` on what it wrote: the benchmark
//! path end to end (on the two small sessions, so it stays quick).

mod common;

use common::{shared_eval, TestStore};

#[test]
fn generated_corpora_are_exact_deterministic_and_evaluable() {
    let from = shared_eval("transcripts/claude-code-session-share");
    let work = TestStore::uninitialised();
    let gen = |name: &str| {
        let out = work.dir.path().join(name);
        let report = work.json(&[
            "bench",
            "gen",
            "--from",
            from.to_str().unwrap(),
            "--records",
            "300",
            "--queries",
            "30",
            "--seed",
            "7",
            "--out",
            out.to_str().unwrap(),
        ]);
        (out, report)
    };
    let (first, report) = gen("a");
    assert_eq!(report["records"], 300);
    assert_eq!(report["queries"], 30);
    let (second, _) = gen("b");
    for file in ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"] {
        assert_eq!(
            std::fs::read(first.join(file)).unwrap(),
            std::fs::read(second.join(file)).unwrap(),
            "{file} differs between two runs with the same seed"
        );
    }
    let eval = work.json(&[
        "eval",
        "--corpus",
        first.to_str().unwrap(),
        "--group-by",
        "type",
        "--mode",
        "bm25",
    ]);
    assert_eq!(eval["documents"], 300);
    assert_eq!(eval["queries"], 30);
    assert!(eval["recall_at_100"].as_f64().unwrap() > 0.5, "{eval}");
}

#[test]
fn a_folder_without_transcripts_is_a_clear_error() {
    let work = TestStore::uninitialised();
    let out = work
        .cmd()
        .args(["bench", "gen", "--from"])
        .arg(work.dir.path())
        .args(["--out"])
        .arg(work.dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no transcripts found"));
}

/// `bench run` end to end on the real model: both stores are built, every
/// retriever is timed and judged, the cache fills and serves a second run, and a
/// sampled run perturbs what it did not embed.
#[test]
fn bench_run_measures_every_retriever_and_caches_vectors() {
    let from = shared_eval("transcripts/claude-code-session-share");
    let work = TestStore::uninitialised();
    let dir = work.dir.path();
    let run = |vectors: &str| {
        work.json(&[
            "bench",
            "run",
            "--from",
            from.to_str().unwrap(),
            "--records",
            "120",
            "--queries",
            "20",
            "--vectors",
            vectors,
            "--sample",
            "30",
            "--cli-runs",
            "2",
            "--work",
            dir.join("work").to_str().unwrap(),
            "--cache",
            dir.join("cache.bin").to_str().unwrap(),
        ])
    };
    let first = run("real");
    assert_eq!(first["records"], 120);
    let modes: Vec<&str> = first["search"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["bm25", "vector", "hybrid"]);
    let bm25 = &first["search"][0];
    assert!(bm25["recall_at_10"].as_f64().unwrap() > 0.5, "{first}");
    let with_vectors = &first["add_with_vectors"];
    assert!(with_vectors["texts_embedded"].as_u64().unwrap() > 0);
    assert!(first["add_bm25"]["bytes_per_record"].as_f64().unwrap() > 0.0);
    assert_eq!(first["one_shot_cli"].as_array().unwrap().len(), 2);
    // Memory is measured on separate search processes, not the benchmark's own.
    let batch = &first["search_process"];
    assert_eq!(
        (batch["mode"].as_str(), batch["queries"].as_u64()),
        (Some("hybrid"), Some(20))
    );
    assert!(batch["peak_rss_mb"].as_f64().unwrap() > 1.0, "{batch}");
    for one_shot in first["one_shot_cli"].as_array().unwrap() {
        assert!(
            one_shot["peak_rss_mb"].as_f64().unwrap() > 1.0,
            "{one_shot}"
        );
    }
    assert!(first["segments"].as_u64().unwrap() >= 1);
    // Where the add's time went: every phase that has work is timed, and the
    // phases fit in the add's own time; the model's time is in `embed`.
    assert!(first["tokens"].as_u64().unwrap() > 1000, "{first}");
    assert!(first["tokenize_seconds"].as_f64().unwrap() > 0.0);
    for add in ["add_bm25", "add_with_vectors"] {
        let phases = &first[add]["phases"];
        let seconds = |name: &str| phases[name].as_f64().unwrap();
        for name in ["prepare_seconds", "index_seconds", "commit_seconds"] {
            assert!(seconds(name) > 0.0, "{add}: {phases}");
        }
        let sum: f64 = [
            "prepare_seconds",
            "embed_seconds",
            "index_seconds",
            "commit_seconds",
            "vectors_seconds",
        ]
        .iter()
        .map(|name| seconds(name))
        .sum();
        assert!(
            sum <= first[add]["seconds"].as_f64().unwrap() + 1e-3,
            "{add}: {phases}"
        );
    }
    let phases = &with_vectors["phases"];
    assert!(phases["embed_seconds"].as_f64().unwrap() > 0.0, "{phases}");
    assert!(
        phases["vectors_seconds"].as_f64().unwrap() > 0.0,
        "{phases}"
    );

    let second = run("real");
    assert_eq!(
        second["add_with_vectors"]["texts_embedded"], 0,
        "all cached"
    );

    let sampled = run("sampled");
    assert!(
        sampled["add_with_vectors"]["texts_perturbed"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(sampled["note"].as_str().unwrap().contains("perturbations"));
}
