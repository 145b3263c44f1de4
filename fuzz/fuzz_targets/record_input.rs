//! Any bytes given to `knowledge-db add -` (JSON or JSONL): reading, validation
//! and field derivation must return records or errors, never panic.
#![no_main]

use knowledge_db::embed::text::embedding_text;
use knowledge_db::record::input::read_paths;
use knowledge_db::record::{parse_record, ParseOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut stdin = std::io::Cursor::new(data);
    let read = read_paths(&[std::path::PathBuf::from("-")], &mut stdin, 1 << 20);
    for raw in read.records {
        if let Ok(record) = parse_record(raw.value, &raw.origin, &ParseOptions::default()) {
            let _ = knowledge_db::index::record_hash(&record);
            let _ = embedding_text(&record);
            let _ = record.citation();
            let _ = record.display_text();
        }
    }
    for error in read.errors {
        let _ = error.to_string();
    }
});
