//! Time in-process searches over an existing store: one query per line of a
//! BEIR `queries.jsonl` (as `bench gen` writes), k=10 unless given, and print p50/p95/p99.
//! Useful to compare a change to the ranking path on a large store without
//! rebuilding it (`bench run` builds fresh stores every time).
//!
//! Run with:
//! `cargo run --release --example search_latency -- STORE QUERIES [bm25|vector|hybrid] [ROUNDS] [K]`
//!
//! The hybrid and vector modes need a store with vectors and the model set up
//! (`knowledge-db setup-model`); their times exclude the query embedding.

use std::path::PathBuf;
use std::time::Instant;

use knowledge_db::embed::{Embedder, OnnxEmbedder, Workload};
use knowledge_db::search::batch::read_queries;
use knowledge_db::search::{Mode, RankOptions};
use knowledge_db::{Filters, SearchEngine, Store};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(store), Some(queries)) = (args.first(), args.get(1)) else {
        return Err("usage: search_latency STORE QUERIES [bm25|vector|hybrid] [ROUNDS] [K]".into());
    };
    let mode = match args.get(2).map(String::as_str).unwrap_or("bm25") {
        "bm25" => Mode::Bm25,
        "vector" => Mode::Vector,
        "hybrid" => Mode::Hybrid,
        other => return Err(format!("unknown mode {other}").into()),
    };
    let rounds: usize = args.get(3).map_or(Ok(1), |r| r.parse())?;
    let k: usize = args.get(4).map_or(Ok(10), |r| r.parse())?;
    let store = Store::open(&PathBuf::from(store))?;
    let engine = if mode == Mode::Bm25 {
        SearchEngine::new(&store)?
    } else {
        let model = OnnxEmbedder::load_default(Workload::Batches).map_err(|e| e.to_string());
        SearchEngine::with_embedder(&store, model.map(|m| Box::new(m) as Box<dyn Embedder>))?
    };
    let queries = read_queries(&PathBuf::from(queries))?;
    let rank = RankOptions {
        mode,
        ..RankOptions::default()
    };
    if mode != Mode::Bm25 {
        // The engine keeps query vectors; one untimed pass embeds every query,
        // so the times below exclude the embedding (as `bench run` reports).
        for query in &queries {
            engine.search_ids(&query.text, 1, &Filters::default(), &rank)?;
        }
    }
    let mut times = Vec::with_capacity(queries.len() * rounds);
    let mut slowest: Vec<(f64, &str)> = Vec::new();
    // `bench gen` queries name the record they were cut from.
    let (mut judged, mut found) = (0usize, 0usize);
    for _ in 0..rounds {
        for query in &queries {
            let started = Instant::now();
            let hits = engine.search_ids(&query.text, k, &Filters::default(), &rank)?;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            times.push(ms);
            slowest.push((ms, &query.text));
            if let Some(target) = query.metadata.get("target").and_then(|t| t.as_str()) {
                judged += 1;
                found += usize::from(hits.iter().take(10).any(|(id, _)| id == target));
            }
        }
    }
    slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (ms, text) in slowest.iter().take(5) {
        println!("slow: {ms:7.2} ms  {text}");
    }
    times.sort_by(f64::total_cmp);
    let pick = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "{} searches ({mode:?}, k={k}): p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        times.len(),
        pick(0.5),
        pick(0.95),
        pick(0.99),
        pick(1.0)
    );
    if judged > 0 {
        println!(
            "recall@10 of the generated queries: {:.3} ({judged} judged)",
            found as f64 / judged as f64
        );
    }
    Ok(())
}
