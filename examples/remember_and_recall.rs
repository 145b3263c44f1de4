//! Remember a few things an agent did, then recall them by identifier, file and words.
//!
//! Run with: `cargo run --example remember_and_recall`

use std::time::Duration;

use knowledge_db::error::Origin;
use knowledge_db::record::{parse_record, ParseOptions};
use knowledge_db::search::RankOptions;
use knowledge_db::{Filters, SearchEngine, Store};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::init(&dir.path().join("memory"))?;

    let inputs = [
        json!({"segment_id": "seg-auth", "topic": "OAuth refresh fix",
               "compressed_content": "refreshToken() used the expired access token; now reads the refresh token.",
               "key_files": ["src/auth/oauth2.py"], "session_id": "s1", "start_turn": 12, "end_turn": 41}),
        json!({"session_id": "s1", "task_id": "3", "subject": "Add rate limiting to login",
               "key_outcomes": ["5 attempts per minute per IP, sliding window in Redis"],
               "files_modified": ["src/middleware/rate_limit.py"], "commands_run": ["pytest -q"]}),
        json!({"id": "note-deploy", "title": "How we deploy",
               "text": "Deploys run from main: build the image, make migrate, roll pods one at a time."}),
    ];
    let options = ParseOptions::default();
    let records = inputs
        .into_iter()
        .map(|value| parse_record(value, &Origin::file("example"), &options))
        .collect::<Result<Vec<_>, _>>()?;
    let report = store.add(records, None, Duration::from_secs(5))?;
    println!("added {} records", report.added);

    let engine = SearchEngine::new(&store)?;
    for query in [
        "oauth2.py",
        "refresh token",
        "rate limit redis",
        "make migrate",
    ] {
        let answer = engine.search(query, 1, &Filters::default(), &RankOptions::default())?;
        match answer.results.first() {
            Some(hit) => println!("{query:>18} -> {} ({})", hit.id, hit.citation),
            None => println!(
                "{query:>18} -> nothing: {}",
                answer.explanation.unwrap_or_default()
            ),
        }
    }
    Ok(())
}
