//! Criterion benchmarks of the hot paths: the code tokenizer and the analyzer
//! (tokenizer + stemming), a BM25 query, the HNSW graph walk and the exact
//! vector scan, score fusion, zstd archive frames, transcript parsing, and the
//! model's WordPiece tokenizer against Hugging Face's `tokenizers`.
//!
//! Run with `cargo bench --bench hot_paths` (not part of CI). The stores are
//! built once per benchmark group with the deterministic test embedder, so the
//! numbers measure the store, not the model. Transcript parsing and the
//! analyzer read the largest real Claude Code session in
//! `../shared/eval/transcripts` when it is there (else the project's samples).

use std::hint::black_box;
use std::time::Duration;

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use knowledge_db::archive::{frame, FRAME_BYTES, ZSTD_LEVEL};
use knowledge_db::embed::{Embedder, HashEmbedder, DIM};
use knowledge_db::error::Origin;
use knowledge_db::index::tokenizer::{analyzer, tokenize, CodeTokenizer};
use knowledge_db::record::{parse_record, ParseOptions};
use knowledge_db::search::fusion::{fuse, Fusion};
use knowledge_db::search::{Mode, RankOptions};
use knowledge_db::transcript::{self, ReadFrom};
use knowledge_db::{Filters, SearchEngine, Store};
use serde_json::json;
use tantivy::tokenizer::{Language, RemoveLongFilter, Stemmer, TextAnalyzer, TokenStream};

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

/// The largest real Claude Code transcript beside the checkout, else a sample.
fn transcript_file() -> PathBuf {
    let real = PathBuf::from("../shared/eval/transcripts/claude-code-entire-cli");
    let largest = std::fs::read_dir(&real).ok().and_then(|entries| {
        entries
            .flatten()
            .filter_map(|e| Some((e.metadata().ok()?.len(), e.path())))
            .filter(|(_, p)| p.to_string_lossy().ends_with(".jsonl.gz"))
            .max()
            .map(|(_, p)| p)
    });
    largest.unwrap_or_else(|| {
        PathBuf::from("data-samples/transcripts/7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47.jsonl.gz")
    })
}

/// The model's WordPiece tokenizer (`src/embed/wordpiece.rs`) against the
/// `tokenizers` crate it replaced, on the first 1,000 messages of the largest
/// real session (each cut at 2,000 characters, as the embedder cuts them).
/// Skipped when the model is not installed.
fn wordpiece(c: &mut Criterion) {
    let model = knowledge_db::embed::ModelLocation::locate().model_dir;
    let path = model.join("tokenizer.json");
    if !path.is_file() {
        eprintln!("wordpiece: skipped, no model at {}", model.display());
        return;
    }
    let path_of_session = transcript_file();
    let bytes = transcript::read_bytes(&path_of_session).expect("transcript bytes");
    let texts: Vec<String> =
        transcript::read_slice(&path_of_session, &bytes, None, ReadFrom::default())
            .expect("parse")
            .messages
            .iter()
            .map(|m| m.text().chars().take(2_000).collect())
            .take(1_000)
            .collect();
    let bytes: usize = texts.iter().map(String::len).sum();
    let ours = knowledge_db::embed::wordpiece::WordPiece::from_file(&path, 256).unwrap();
    let mut reference = tokenizers::Tokenizer::from_file(&path).unwrap();
    reference.with_padding(None);
    reference
        .with_truncation(Some(tokenizers::TruncationParams {
            max_length: 256,
            ..Default::default()
        }))
        .unwrap();
    let mut group = c.benchmark_group(format!("wordpiece, {} real embedding texts", texts.len()));
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("ours (src/embed/wordpiece.rs)", |b| {
        b.iter(|| texts.iter().map(|t| ours.encode(t).len()).sum::<usize>())
    });
    group.bench_function("tokenizers 0.23, one text at a time", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| reference.encode(t.as_str(), true).unwrap().len())
                .sum::<usize>()
        })
    });
    group.finish();
}

/// Tokens out of an analyzer (the count, so nothing is optimised away).
fn analyzed(analyzer: &mut TextAnalyzer, text: &str) -> usize {
    let mut stream = analyzer.token_stream(text);
    let mut count = 0;
    while stream.advance() {
        count += stream.token().text.len();
    }
    count
}

/// What indexing does to every field: the code tokenizer and English stemming,
/// with tantivy's stemmer as it was and with the per-thread map of stems.
fn analyze(c: &mut Criterion) {
    let path = transcript_file();
    let parsed = transcript::read_file(&path, None, ReadFrom::default()).expect("transcript");
    let text: String = parsed
        .messages
        .iter()
        .map(|m| m.text())
        .collect::<Vec<_>>()
        .join("\n");
    let mut end = text.len().min(256 * 1024);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let text = &text[..end];
    let mut group = c.benchmark_group("analyze 256 KB of a real transcript");
    group.throughput(Throughput::Bytes(text.len() as u64));
    let mut plain = TextAnalyzer::builder(CodeTokenizer)
        .filter(RemoveLongFilter::limit(80))
        .filter(Stemmer::new(Language::English))
        .build();
    group.bench_function("tokenize + tantivy stemmer", |b| {
        b.iter(|| analyzed(&mut plain, black_box(text)))
    });
    let mut cached = analyzer();
    group.bench_function("tokenize + cached stemmer", |b| {
        b.iter(|| analyzed(&mut cached, black_box(text)))
    });
    group.finish();
}

fn transcript_parsing(c: &mut Criterion) {
    let path = transcript_file();
    let bytes = transcript::read_bytes(&path).expect("transcript bytes");
    let mut group = c.benchmark_group("transcript parsing");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("largest real Claude Code session", |b| {
        b.iter(|| {
            transcript::read_slice(&path, black_box(&bytes), None, ReadFrom::default())
                .expect("parse")
                .messages
                .len()
        })
    });
    group.finish();
}

/// One archive frame: 256 KB of record JSON lines, as `archive` writes them.
fn archive_frames(c: &mut Criterion) {
    let mut jsonl = Vec::new();
    let mut records = 0u32;
    while jsonl.len() < FRAME_BYTES {
        let line =
            json!({"id": format!("n{records}"), "kind": "note", "text": text(records as usize)});
        jsonl.extend_from_slice(line.to_string().as_bytes());
        jsonl.push(b'\n');
        records += 1;
    }
    let encoded = frame::encode(&jsonl, records, ZSTD_LEVEL).expect("encode");
    let info = frame::scan_bytes(&encoded).frames[0];
    let mut group = c.benchmark_group("archive frame of 256 KB");
    group.throughput(Throughput::Bytes(jsonl.len() as u64));
    group.bench_function("compress (zstd 9) + checksum", |b| {
        b.iter(|| {
            frame::encode(black_box(&jsonl), records, ZSTD_LEVEL)
                .expect("encode")
                .len()
        })
    });
    group.bench_function("check + decompress", |b| {
        b.iter(|| {
            let scan = frame::scan_bytes(black_box(&encoded));
            frame::decode_in(&encoded, &scan.frames[0])
                .expect("decode")
                .len()
        })
    });
    group.finish();
    assert_eq!(frame::decode_in(&encoded, &info).expect("decode"), jsonl);
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

/// What tracking reads adds to a search and a get: appending the hits to the
/// access log, the upkeep's two-`stat` check after a search, and a `get`
/// (which also adds the reads waiting in the log), next to the search itself.
fn access_tracking(c: &mut Criterion) {
    let (_dir, store) = store(50_000);
    let engine = engine(&store);
    let all = Filters::default();
    let rank = RankOptions {
        mode: Mode::Bm25,
        ..RankOptions::default()
    };
    let query = text(31).split(' ').take(4).collect::<Vec<_>>().join(" ");
    let ids: Vec<String> = engine
        .search_ids(&query, 10, &all, &rank)
        .expect("search")
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut group = c.benchmark_group("access tracking, 50k records");
    group.bench_function("bm25 search, k=10 (hits logged)", |b| {
        b.iter(|| {
            engine
                .search(black_box(&query), 10, &all, &rank)
                .expect("search")
                .results
                .len()
        })
    });
    group.bench_function("log 10 hits", |b| {
        b.iter(|| knowledge_db::store::access::log(store.root(), black_box(&id_refs)))
    });
    group.bench_function("upkeep check after a read", |b| {
        b.iter(|| knowledge_db::upkeep::after_read(&store, black_box(Some(0))))
    });
    // `get` reads the reads not yet folded: with a log at the size the
    // upkeep folds at (its worst case), restored before each call.
    let log = store.root().join(knowledge_db::store::access::LOG);
    let line = format!("1767609720000\t{}\n", ids[1]);
    let full = line.repeat(knowledge_db::store::access::FOLD_SOON_BYTES as usize / line.len());
    group.bench_function("get, 64 KiB of reads waiting (added, read logged)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                std::fs::write(&log, &full).expect("log");
                let started = std::time::Instant::now();
                black_box(store.get(black_box(&ids[0])).expect("get").is_some());
                total += started.elapsed();
            }
            total
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3));
    targets = tokenizer, wordpiece, analyze, transcript_parsing, archive_frames, fusion, search, access_tracking
}
criterion_main!(benches);
