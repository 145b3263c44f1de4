//! How fast is the exact vector scan? Adds N notes with the deterministic test
//! embedder (384 dimensions, like the real model), then times vector-only and
//! filtered vector searches. Not a quality measure: the vectors are hashes.
//!
//! Run with: `cargo run --release --example vector_scan -- 100000`

use std::time::{Duration, Instant};

use knowledge_db::embed::{Embedder, HashEmbedder, DIM};
use knowledge_db::error::Origin;
use knowledge_db::record::{parse_record, ParseOptions};
use knowledge_db::search::{Mode, RankOptions};
use knowledge_db::{Filters, SearchEngine, Store};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir()?;
    let store = Store::init(&dir.path().join("store"))?;
    let words = [
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
    ];
    let options = ParseOptions::default();
    let records = (0..n)
        .map(|i| {
            let text = format!(
                "{} {} {} note {i}",
                words[i % 10],
                words[(i / 10) % 10],
                words[(i / 100) % 10]
            );
            let namespace = if i % 100 == 0 { "rare" } else { "common" };
            parse_record(
                json!({"id": format!("n{i}"), "text": text, "namespace": namespace}),
                &Origin::file("gen"),
                &options,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    let mut embedder = HashEmbedder::new(DIM);
    store.add(records, Some(&mut embedder), Duration::from_secs(30))?;
    println!(
        "added {n} records with vectors in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    let engine = SearchEngine::with_embedder(
        &store,
        Ok(Box::new(HashEmbedder::new(DIM)) as Box<dyn Embedder>),
    )?;
    let vector = RankOptions {
        mode: Mode::Vector,
        ..Default::default()
    };
    let hybrid = RankOptions::default();
    let rare = Filters {
        namespace: Some("rare".into()),
        ..Default::default()
    };
    for (label, rank, filters) in [
        ("vector, no filter", vector, Filters::default()),
        ("vector, 1% namespace", vector, rare.clone()),
        ("hybrid, no filter", hybrid, Filters::default()),
    ] {
        let mut times = Vec::new();
        for i in 0..200 {
            let query = format!("{} {}", words[i % 10], words[(i * 7) % 10]);
            let t = Instant::now();
            let hits = engine.search_ids(&query, 10, &filters, &rank)?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(hits.len(), 10);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{label:>22}: p50 {:.2} ms, p95 {:.2} ms",
            times[100], times[190]
        );
    }
    Ok(())
}
