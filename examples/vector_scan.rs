//! How fast is vector search, with the HNSW graphs and with the exact scan? Adds N
//! notes with the deterministic test embedder (384 dimensions, like the real
//! model; segments of 20k+ records get graphs), then times vector-only, filtered
//! and hybrid searches both ways and reports the graph's recall@10 against the
//! exact scan. The vectors are hashes of words: a speed measure, not a quality one.
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

    let root = dir.path().join("store");
    let queries: Vec<String> = (0..200)
        .map(|i| {
            format!(
                "{} {} {} note {}",
                words[i % 10],
                words[(i * 7) % 10],
                words[(i * 3) % 10],
                i * 4999 % n
            )
        })
        .collect();
    let with_graphs = measure(&store, &queries, "with HNSW graphs")?;
    let removed = remove_graphs(&root.join("vectors"))?;
    let exact = measure(&store, &queries, "exact scan")?;
    // Hash vectors tie often, so a hit counts when it scores at least as well as
    // the exact scan's 10th result (the same id or an equally near one).
    let hits: usize = with_graphs
        .iter()
        .zip(&exact)
        .map(|(g, e)| {
            let tenth = e.last().map_or(f32::NEG_INFINITY, |(_, s)| *s);
            g.iter().filter(|(_, s)| *s >= tenth - 1e-6).count()
        })
        .sum();
    println!(
        "graph recall@10 against the exact scan: {:.3} ({removed} graph files)",
        hits as f64 / (10 * queries.len()) as f64
    );
    let t = Instant::now();
    store.index_vectors(Duration::from_secs(30))?;
    println!("graphs rebuilt in {:.1}s", t.elapsed().as_secs_f64());
    Ok(())
}

/// One query's results: ids and scores, best first.
type Ranked = Vec<(String, f32)>;

/// Times vector-only and hybrid searches; returns the unfiltered vector top 10s.
fn measure(
    store: &Store,
    queries: &[String],
    label: &str,
) -> Result<Vec<Ranked>, Box<dyn std::error::Error>> {
    let engine = SearchEngine::with_embedder(
        store,
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
    let common = Filters {
        namespace: Some("common".into()),
        ..Default::default()
    };
    let mut top = Vec::new();
    println!("{label}:");
    for (name, rank, filters) in [
        ("vector, no filter", vector, Filters::default()),
        ("vector, 99% namespace", vector, common),
        ("vector, 1% namespace", vector, rare),
        ("hybrid, no filter", hybrid, Filters::default()),
    ] {
        let mut times = Vec::new();
        for query in queries {
            let t = Instant::now();
            let hits = engine.search_ids(query, 10, &filters, &rank)?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(hits.len(), 10);
            if name == "vector, no filter" {
                top.push(hits);
            }
        }
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
        println!(
            "{name:>24}: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms",
            at(0.5),
            at(0.95),
            at(0.99)
        );
    }
    Ok(top)
}

fn remove_graphs(dir: &std::path::Path) -> std::io::Result<usize> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)?.flatten() {
        if entry.path().extension().is_some_and(|x| x == "hnsw") {
            std::fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}
