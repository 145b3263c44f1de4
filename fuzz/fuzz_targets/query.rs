//! Any query string against a small store: analysis, query building, BM25 search,
//! snippets and the empty-result explanation must never panic.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use knowledge_db::error::Origin;
use knowledge_db::record::{parse_record, ParseOptions};
use knowledge_db::search::{Mode, RankOptions};
use knowledge_db::{Filters, SearchEngine, Store};
use libfuzzer_sys::fuzz_target;

struct Fixture {
    _dir: tempfile::TempDir,
    engine: SearchEngine,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::init(&dir.path().join("s")).expect("store");
        let texts = [
            "error[E0502] in parseConfig() at src/config/loader.rs",
            "OAuth token refresh failed: 401 from https://auth.example.com/token",
            "Ünïcödé 日本語のテキスト ✓ emoji 🚀 and tabs\tand\nnewlines",
            "cargo test --release -- --nocapture && npm run build",
        ];
        let records = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let v = serde_json::json!({"id": format!("n{i}"), "text": t, "files": ["src/a.rs"]});
                parse_record(v, &Origin::file("fuzz"), &ParseOptions::default()).expect("record")
            })
            .collect();
        store.add(records, None, Duration::from_secs(5)).expect("add");
        let engine = SearchEngine::new(&store).expect("engine");
        Fixture { _dir: dir, engine }
    })
}

fuzz_target!(|data: &[u8]| {
    let query = String::from_utf8_lossy(data);
    let rank = RankOptions {
        mode: Mode::Bm25,
        ..RankOptions::default()
    };
    let _ = knowledge_db::index::tokenizer::tokenize(&query);
    let _ = fixture().engine.search(&query, 5, &Filters::default(), &rank);
});
