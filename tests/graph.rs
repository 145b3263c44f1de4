//! The HNSW graphs of large segments, through the library with the deterministic
//! test embedder: built after a commit, equal to the exact scan on most queries,
//! honouring deletes and selective filters, and rebuilt by `index_vectors` when lost.
//!
//! `KNOWLEDGE_DB_HNSW_MIN_ROWS` lowers the size at which a segment gets a graph, so
//! a store of a few thousand records exercises the graph path.

use std::path::Path;
use std::time::Duration;

use knowledge_db::embed::{Embedder, HashEmbedder, DIM};
use knowledge_db::error::Origin;
use knowledge_db::record::{parse_record, ParseOptions};
use knowledge_db::search::fusion::Fusion;
use knowledge_db::search::{Mode, RankOptions};
use knowledge_db::{Filters, SearchEngine, Store};
use serde_json::json;

const WORDS: [&str; 16] = [
    "token",
    "refresh",
    "database",
    "migration",
    "parser",
    "config",
    "deploy",
    "cache",
    "index",
    "lock",
    "borrow",
    "checker",
    "tulip",
    "garden",
    "kernel",
    "socket",
];

fn text(i: usize) -> String {
    format!(
        "{} {} {} {} item{}",
        WORDS[i % 16],
        WORDS[(i / 16) % 16],
        WORDS[(i / 256) % 16],
        WORDS[(i * 7 + 3) % 16],
        i % 97
    )
}

fn store_of(n: usize) -> (tempfile::TempDir, Store) {
    std::env::set_var("KNOWLEDGE_DB_HNSW_MIN_ROWS", "500");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init(&dir.path().join("s")).unwrap();
    let records = (0..n)
        .map(|i| {
            let ns = if i % 50 == 0 { "rare" } else { "common" };
            let value = json!({"id": format!("n{i}"), "text": text(i), "namespace": ns});
            parse_record(value, &Origin::file("gen"), &ParseOptions::default()).unwrap()
        })
        .collect();
    let mut embedder = HashEmbedder::new(DIM);
    store
        .add(records, Some(&mut embedder), Duration::from_secs(30))
        .unwrap();
    (dir, store)
}

fn graph_files(root: &Path) -> usize {
    std::fs::read_dir(root.join("vectors"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "hnsw"))
        .count()
}

fn vector_ids(store: &Store, query: &str, k: usize, filters: &Filters) -> Vec<String> {
    let engine = SearchEngine::with_embedder(
        store,
        Ok(Box::new(HashEmbedder::new(DIM)) as Box<dyn Embedder>),
    )
    .unwrap();
    let rank = RankOptions {
        mode: Mode::Vector,
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

fn remove_graphs(root: &Path) {
    for entry in std::fs::read_dir(root.join("vectors")).unwrap().flatten() {
        if entry.path().extension().is_some_and(|x| x == "hnsw") {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
}

#[test]
fn graph_walk_agrees_with_the_exact_scan_and_is_rebuilt_when_lost() {
    let (dir, store) = store_of(2000);
    let root = dir.path().join("s");
    assert!(
        graph_files(&root) >= 1,
        "a 2000-record segment gets a graph"
    );
    let queries: Vec<String> = (0..25).map(|i| text(i * 37 + 5)).collect();
    let all = Filters::default();
    let walked: Vec<Vec<String>> = queries
        .iter()
        .map(|q| vector_ids(&store, q, 10, &all))
        .collect();

    remove_graphs(&root);
    let exact: Vec<Vec<String>> = queries
        .iter()
        .map(|q| vector_ids(&store, q, 10, &all))
        .collect();
    let hits: usize = walked
        .iter()
        .zip(&exact)
        .map(|(w, e)| e.iter().filter(|id| w.contains(id)).count())
        .sum();
    let recall = hits as f64 / (10 * queries.len()) as f64;
    assert!(
        recall >= 0.9,
        "graph recall@10 against the exact scan: {recall}"
    );
    assert!(walked.iter().all(|w| w.len() == 10));

    store.index_vectors(Duration::from_secs(5)).unwrap();
    assert!(
        graph_files(&root) >= 1,
        "index_vectors rebuilds lost graphs"
    );
}

#[test]
fn deleted_records_are_never_returned_and_selective_filters_fill_k() {
    let (_dir, store) = store_of(1500);
    let query = text(1234);
    let all = Filters::default();
    let before = vector_ids(&store, &query, 5, &all);
    store.delete(&before, Duration::from_secs(5)).unwrap();
    let after = vector_ids(&store, &query, 5, &all);
    assert_eq!(after.len(), 5);
    assert!(
        after.iter().all(|id| !before.contains(id)),
        "{before:?} {after:?}"
    );

    let rare = Filters {
        namespace: Some("rare".into()),
        ..Filters::default()
    };
    let found = vector_ids(&store, &query, 10, &rare);
    assert_eq!(found.len(), 10);
    for id in &found {
        let n: usize = id.trim_start_matches('n').parse().unwrap();
        assert_eq!(n % 50, 0, "{id} is outside the filter");
    }
    // A filter that keeps most records is applied during the graph walk.
    let common = Filters {
        namespace: Some("common".into()),
        ..Filters::default()
    };
    let found = vector_ids(&store, &query, 10, &common);
    assert_eq!(found.len(), 10);
    assert!(found
        .iter()
        .all(|id| id.trim_start_matches('n').parse::<usize>().unwrap() % 50 != 0));
}
