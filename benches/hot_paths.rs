//! Criterion benchmarks of the hot paths: the code tokenizer, a BM25 query, the
//! HNSW graph walk and the exact vector scan, and score fusion.
//!
//! Run with `cargo bench --bench hot_paths` (not part of CI). The stores are
//! built once per benchmark group with the deterministic test embedder, so the
//! numbers measure the store, not the model.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use knowledge_db::embed::{Embedder, HashEmbedder, DIM};
use knowledge_db::error::Origin;
use knowledge_db::index::tokenizer::tokenize;
use knowledge_db::record::{parse_record, ParseOptions};
use knowledge_db::search::fusion::{fuse, Fusion};
use knowledge_db::search::{Mode, RankOptions};
use knowledge_db::{Filters, SearchEngine, Store};
use serde_json::json;

const WORDS: [&str; 24] = [
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
    "session",
    "commit",
    "branch",
    "hook",
    "transcript",
    "segment",
    "error",
    "retry",
    "timeout",
    "socket",
    "kernel",
    "schema",
];

fn text(i: usize) -> String {
    (0..12)
        .map(|j| WORDS[(i * 7 + j * 13 + i / (j + 1)) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
        + &format!(
            " src/module{}/file_{}.rs parseConfig{} E0{}",
            i % 50,
            i % 300,
            i % 40,
            i % 900
        )
}

/// A store of `n` notes with test-embedder vectors; graphs for segments of 20k+.
fn store(n: usize) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::init(&dir.path().join("s")).expect("init");
    let records = (0..n)
        .map(|i| {
            let value = json!({"id": format!("n{i}"), "text": text(i)});
            parse_record(value, &Origin::file("bench"), &ParseOptions::default()).expect("record")
        })
        .collect();
    let mut embedder = HashEmbedder::new(DIM);
    store
        .add(records, Some(&mut embedder), Duration::from_secs(60))
        .expect("add");
    (dir, store)
}

fn engine(store: &Store) -> SearchEngine {
    SearchEngine::with_embedder(
        store,
        Ok(Box::new(HashEmbedder::new(DIM)) as Box<dyn Embedder>),
    )
    .expect("engine")
}

fn tokenizer(c: &mut Criterion) {
    let sample = (0..40).map(text).collect::<Vec<_>>().join("\n");
    c.bench_function("tokenize 4 KB of agent text", |b| {
        b.iter(|| tokenize(black_box(&sample)).len())
    });
}

fn fusion(c: &mut Criterion) {
    let bm25: Vec<(f32, u32)> = (0..100).map(|i| (100.0 - i as f32, i * 3)).collect();
    let vector: Vec<(f32, u32)> = (0..100).map(|i| (1.0 - i as f32 / 200.0, i * 5)).collect();
    c.bench_function("linear fusion of two top-100 lists", |b| {
        b.iter(|| fuse(black_box(&bm25), black_box(&vector), Fusion::Linear, 0.4).len())
    });
}

fn search(c: &mut Criterion) {
    let (_dir, store) = store(50_000);
    let engine = engine(&store);
    let all = Filters::default();
    let queries: Vec<String> = (0..64)
        .map(|i| {
            text(i * 31)
                .split(' ')
                .take(4)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let mut group = c.benchmark_group("50k records, k=10");
    for (name, mode) in [
        ("bm25", Mode::Bm25),
        ("vector (HNSW)", Mode::Vector),
        ("hybrid", Mode::Hybrid),
    ] {
        let rank = RankOptions {
            mode,
            ..RankOptions::default()
        };
        let mut i = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                engine
                    .search_ids(&queries[i], 10, &all, &rank)
                    .expect("search")
                    .len()
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3));
    targets = tokenizer, fusion, search
}
criterion_main!(benches);
