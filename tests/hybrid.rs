//! The vector half and fusion through the library, with the deterministic test
//! embedder: vectors are stored with records, reused by text, kept in step with
//! upserts and deletes, rebuilt when their files are lost, and filtered exactly.

use std::time::Duration;

use knowledge_db::embed::{Embedder, HashEmbedder, DIM};
use knowledge_db::error::Origin;
use knowledge_db::record::{parse_record, ParseOptions, Record};
use knowledge_db::search::fusion::Fusion;
use knowledge_db::search::{Mode, RankOptions};
use knowledge_db::{Filters, SearchEngine, Store};
use serde_json::{json, Value};

fn records(values: Vec<Value>) -> Vec<Record> {
    values
        .into_iter()
        .map(|v| parse_record(v, &Origin::file("test"), &ParseOptions::default()).unwrap())
        .collect()
}

fn note(id: &str, text: &str, namespace: &str) -> Value {
    json!({"id": id, "text": text, "namespace": namespace})
}

fn engine(store: &Store) -> SearchEngine {
    SearchEngine::with_embedder(
        store,
        Ok(Box::new(HashEmbedder::new(DIM)) as Box<dyn Embedder>),
    )
    .unwrap()
}

fn ids(engine: &SearchEngine, query: &str, k: usize, filters: &Filters, mode: Mode) -> Vec<String> {
    let rank = RankOptions {
        mode,
        fusion: Fusion::Rrf,
        alpha: 0.5,
    };
    engine
        .search_ids(query, k, filters, &rank)
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

fn store_with(values: Vec<Value>) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init(&dir.path().join("s")).unwrap();
    let mut embedder = HashEmbedder::new(DIM);
    store
        .add(records(values), Some(&mut embedder), Duration::from_secs(5))
        .unwrap();
    (dir, store)
}

#[test]
fn vector_search_finds_neighbours_and_reports_coverage() {
    let (_dir, store) = store_with(vec![
        note("a", "token refresh failure in the oauth client", "p"),
        note("b", "garden tulips bloom in spring", "p"),
    ]);
    let e = engine(&store);
    assert_eq!(e.vector_status(), "used");
    let all = Filters::default();
    assert_eq!(ids(&e, "oauth token refresh", 1, &all, Mode::Vector), ["a"]);
    assert_eq!(ids(&e, "tulips spring", 1, &all, Mode::Vector), ["b"]);
    let stats = store.l2_stats().unwrap();
    assert_eq!(
        (stats.vectors.with_vector, stats.vectors.without_vector),
        (2, 0)
    );
}

#[test]
fn identical_texts_reuse_vectors_and_later_embedding_fills_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init(&dir.path().join("s")).unwrap();
    let later = store
        .add(
            records(vec![note("x", "shared text", "p")]),
            None,
            Duration::from_secs(5),
        )
        .unwrap();
    assert_eq!(later.without_vector, 1);
    let mut embedder = HashEmbedder::new(DIM);
    let filled = store
        .embed_missing(&mut embedder, 10, Duration::from_secs(5), &mut |_, _| {})
        .unwrap();
    assert_eq!(filled, 1);
    let report = store
        .add(
            records(vec![note("y", "shared text", "q")]),
            Some(&mut embedder),
            Duration::from_secs(5),
        )
        .unwrap();
    assert_eq!((report.vectors_reused, report.embedded), (1, 0));
    assert_eq!(store.l2_stats().unwrap().vectors.without_vector, 0);
}

/// Vector files of the segments in `store`'s folder.
fn vector_files(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(root.join("vectors")).map_or(Vec::new(), |entries| {
        entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "vec"))
            .collect()
    })
}

#[test]
fn records_without_vectors_write_no_vector_files_until_embedded() {
    // A BM25-only store used to get a file of zero rows per segment (1.5 KB per
    // record, 147 MB at 100k records, and a read of every stored record to write).
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s");
    let store = Store::init(&root).unwrap();
    let values = (0..50)
        .map(|i| note(&format!("n{i}"), &format!("kubernetes pod {i}"), "p"))
        .collect();
    store
        .add(records(values), None, Duration::from_secs(5))
        .unwrap();
    assert!(vector_files(&root).is_empty());
    let e = engine(&store);
    let all = Filters::default();
    assert!(ids(&e, "kubernetes pod", 5, &all, Mode::Vector).is_empty());
    assert_eq!(ids(&e, "kubernetes pod", 5, &all, Mode::Hybrid).len(), 5);
    let verify = knowledge_db::tiers::verify::verify(&store, &mut |_, _| {}).unwrap();
    assert!(verify.ok, "{verify:?}");

    let mut embedder = HashEmbedder::new(DIM);
    store
        .embed_missing(&mut embedder, 100, Duration::from_secs(5), &mut |_, _| {})
        .unwrap();
    assert!(!vector_files(&root).is_empty());
    assert_eq!(
        ids(&engine(&store), "kubernetes pod", 5, &all, Mode::Vector).len(),
        5
    );
    assert!(
        knowledge_db::tiers::verify::verify(&store, &mut |_, _| {})
            .unwrap()
            .ok
    );
}

#[test]
fn selective_filters_still_return_k_results() {
    let mut values: Vec<Value> = (0..300)
        .map(|i| {
            note(
                &format!("big{i}"),
                &format!("database migration step {i}"),
                "big",
            )
        })
        .collect();
    values.extend((0..3).map(|i| {
        note(
            &format!("small{i}"),
            &format!("unrelated words {i}"),
            "small",
        )
    }));
    let (_dir, store) = store_with(values);
    let e = engine(&store);
    let only_small = Filters {
        namespace: Some("small".into()),
        ..Filters::default()
    };
    let found = ids(&e, "database migration", 3, &only_small, Mode::Vector);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found.iter().all(|id| id.starts_with("small")));
}

#[test]
fn upserts_and_deletes_keep_vectors_in_step_and_lost_files_are_rebuilt() {
    let (dir, store) = store_with(vec![
        note("a", "kubernetes pod eviction", "p"),
        note("b", "sourdough bread", "p"),
    ]);
    let mut embedder = HashEmbedder::new(DIM);
    store
        .add(
            records(vec![note("a", "sourdough starter feeding", "p")]),
            Some(&mut embedder),
            Duration::from_secs(5),
        )
        .unwrap();
    store
        .delete(&["b".to_string()], Duration::from_secs(5))
        .unwrap();
    std::fs::remove_dir_all(dir.path().join("s").join("vectors")).unwrap();
    let e = engine(&store);
    let all = Filters::default();
    assert_eq!(ids(&e, "sourdough", 5, &all, Mode::Vector), ["a"]);
    assert!(ids(&e, "kubernetes pod eviction", 5, &all, Mode::Bm25).is_empty());
}

#[test]
fn hybrid_keeps_exact_identifier_hits() {
    let (_dir, store) = store_with(vec![
        note("id", "error E0502 in loader", "p"),
        note("other", "loader loader loader borrow", "p"),
    ]);
    let e = engine(&store);
    let found = ids(&e, "E0502", 2, &Filters::default(), Mode::Hybrid);
    assert_eq!(found.first().map(String::as_str), Some("id"));
}

/// Copies of one text fold into one hit that says how many records it stands
/// for, so they never fill the top k (issue 20).
#[test]
fn identical_texts_fold_into_one_hit() {
    let copy = "the deploy script failed on the staging cluster after the upgrade";
    let (_dir, store) = store_with(vec![
        note("a", copy, "p"),
        note("b", copy, "p"),
        note("c", copy, "p"),
        note("d", "deploy rollback steps for the staging cluster", "p"),
        note("e", "garden tulips bloom in spring", "p"),
    ]);
    let e = engine(&store);
    let all = Filters {
        min_score: Some(0.0),
        ..Filters::default()
    };
    for mode in [Mode::Bm25, Mode::Hybrid] {
        let rank = RankOptions {
            mode,
            ..RankOptions::default()
        };
        let response = e
            .search("deploy script staging cluster", 3, &all, &rank)
            .unwrap();
        let ids: Vec<&str> = response.results.iter().map(|h| h.id.as_str()).collect();
        // BM25 finds two distinct texts; the vector side also the third.
        let distinct = if mode == Mode::Bm25 { 2 } else { 3 };
        assert_eq!(ids.len(), distinct, "{mode:?}: {ids:?}");
        let first = &response.results[0];
        assert!(["a", "b", "c"].contains(&first.id.as_str()), "{ids:?}");
        assert_eq!(first.copies, 3, "{mode:?}");
        let mut others = first.duplicates.clone();
        others.push(first.id.clone());
        others.sort();
        assert_eq!(others, ["a", "b", "c"]);
        assert!(
            ids[1..].contains(&"d"),
            "the distinct record is not crowded out: {ids:?}"
        );
        assert!(response.results[1..].iter().all(|h| h.copies == 1));
        let batch = e
            .search_ranked_ids("deploy script staging cluster", 3, &all, &rank)
            .unwrap();
        assert_eq!(batch[0].duplicates.len(), 2);
    }
}
