//! Hostile input: huge and strange queries, text in every script, and records
//! nested deeper than any parser should follow. Each must give an answer or a
//! clear error, never a crash, a hang or a changed store.

mod common;

use std::time::{Duration, Instant};

use common::TestStore;
use serde_json::json;

/// Words in many scripts, one record each: (script, word, sentence).
const SCRIPTS: [(&str, &str, &str); 16] = [
    ("latin", "zeitgeist", "Der zeitgeist der Woche: Überläufe"),
    ("greek", "λογαριασμός", "ο λογαριασμός δεν ενημερώθηκε"),
    ("cyrillic", "сервер", "сервер не отвечает после обновления"),
    ("armenian", "սերվեր", "սերվեր չի պատասխանում"),
    ("hebrew", "שרת", "השרת לא מגיב אחרי העדכון שרת"),
    ("arabic", "الخادم", "الخادم لا يستجيب بعد التحديث"),
    ("devanagari", "सर्वर", "सर्वर अपडेट के बाद जवाब नहीं देता"),
    ("bengali", "সার্ভার", "সার্ভার সাড়া দিচ্ছে না"),
    ("tamil", "சேவையகம்", "சேவையகம் பதிலளிக்கவில்லை"),
    ("thai", "เซิร์ฟเวอร์", "เซิร์ฟเวอร์ ไม่ตอบสนอง"),
    ("georgian", "სერვერი", "სერვერი არ პასუხობს"),
    ("ethiopic", "አገልጋይ", "አገልጋይ ምላሽ አይሰጥም"),
    ("han", "服务器", "服务器 更新后 没有响应"),
    ("japanese", "サーバー", "サーバー が 応答しません"),
    ("hangul", "서버", "서버 가 응답하지 않습니다"),
    ("emoji", "🚀", "deploy 🚀 failed 🔥 rollback ✅"),
];

fn store_with_scripts() -> TestStore {
    let store = TestStore::new();
    let lines: String = SCRIPTS
        .iter()
        .map(|(script, _, text)| json!({"id": script, "text": text}).to_string() + "\n")
        .collect();
    store.add_later("scripts.jsonl", lines.as_bytes());
    store
}

fn search(store: &TestStore, query: &str) -> std::process::Output {
    store
        .cmd()
        .args(["search", "--mode", "bm25", "--json", "--"])
        .arg(query)
        .output()
        .unwrap()
}

#[test]
fn every_script_is_stored_and_found_by_its_own_words() {
    let store = store_with_scripts();
    for (script, word, _) in SCRIPTS {
        let out = search(&store, word);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{script}: {stdout}");
        if script == "emoji" {
            // Symbols are not words to the tokenizer: an empty answer, no error.
            continue;
        }
        assert!(
            stdout.contains(&format!("\"id\": \"{script}\"")),
            "{script}: `{word}` did not find its record: {stdout}"
        );
    }
    // All scripts in one query: an answer, not a crash.
    let all: String = SCRIPTS.iter().map(|(_, w, _)| format!("{w} ")).collect();
    assert!(search(&store, &all).status.success());
    // Control characters, bidi overrides, zero-width joiners, combining marks,
    // noncharacters, terminal escapes (a NUL cannot be an argument; the
    // `query` fuzz target covers it).
    for odd in [
        "\u{202e}drow\u{202c}",
        "a\u{200d}b\u{200b}c",
        "e\u{301}\u{301}\u{301}\u{301}",
        "\u{fffd}\u{fffe}",
        "control\u{1}\u{7}\u{1b}[31mchars",
        "\u{1f3f3}\u{fe0f}\u{200d}\u{1f308}",
    ] {
        let out = search(&store, odd);
        assert!(
            out.status.success(),
            "{odd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn punctuation_only_queries_explain_that_nothing_is_searchable() {
    let store = store_with_scripts();
    for query in [
        "!!!",
        "?.,;:",
        "()[]{}<>",
        "--- *** ///",
        "'\"`~^",
        "。、！？",
    ] {
        let out = search(&store, query);
        assert!(
            out.status.success(),
            "{query}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(response["results"].as_array().unwrap().len(), 0, "{query}");
    }
}

#[test]
fn a_100_kb_query_is_refused_naming_the_limit_then_allowed_when_raised() {
    let store = store_with_scripts();
    let query = "server ".repeat(100 * 1024 / 7 + 1);
    let out = search(&store, &query);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr.contains("limits.max_query_bytes"), "{stderr}");
    assert!(stderr.contains("65536"), "{stderr}");
    // Raised in config.toml, the same query runs.
    let old = store.set_config(&[("max_query_bytes", "1000000")]);
    assert_eq!(old, ["65536"]);
    let out = search(&store, &query);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_query_of_10000_distinct_terms_answers_in_bounded_time() {
    let store = store_with_scripts();
    let query: String = (0..10_000).map(|i| format!("t{i} ")).collect();
    assert!(query.len() < 65536);
    let started = Instant::now();
    // Only the first 1,024 distinct terms are used (search::MAX_QUERY_TERMS).
    let out = search(&store, &format!("сервер {query}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("cyrillic"));
    // Generous for a debug build on a loaded machine: the point is no blow-up.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn deeply_nested_metadata_is_a_clear_error_not_a_stack_overflow() {
    let store = store_with_scripts();
    let before = store.snapshot();
    let depth = 10_000;
    let nested = format!(
        "{{\"id\": \"deep\", \"text\": \"nested\", \"metadata\": {}1{}}}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let input = store.write("deep.jsonl", nested.as_bytes());
    let out = store.cmd().arg("add").arg(&input).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("deep.jsonl:1:"), "{stderr}");
    assert!(stderr.contains("nested too deeply"), "{stderr}");
    assert_eq!(before, store.snapshot(), "the store changed");
    // Objects too, and as a whole JSON file rather than a line.
    let objects = format!("{}{}", "{\"a\":".repeat(depth), "}".repeat(depth));
    let input = store.write("deep.json", objects.as_bytes());
    let out = store.cmd().arg("add").arg(&input).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nested too deeply"));
    // The same through the MCP server's JSON-RPC parser and stdin.
    let out = store
        .cmd()
        .args(["add", "-"])
        .write_stdin(nested.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // A transcript line nested that deep is skipped as not JSON, not a crash.
    let transcript = store.write(
        "deep-transcript.jsonl",
        format!(
            "{{\"role\": \"user\", \"content\": \"hello nested world\"}}\n{{\"role\": \"user\", \"content\": {}\"x\"{}}}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        )
        .as_bytes(),
    );
    let out = store
        .cmd()
        .args(["ingest", "--embed", "later"])
        .arg(&transcript)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_record_over_the_size_limit_is_refused_by_every_writer() {
    let store = store_with_scripts();
    let old = store.set_config(&[("max_record_bytes", "2000")]);
    assert_eq!(old, ["8388608"]);
    let before = store.snapshot();
    let long = "long ".repeat(1000);
    // `add` of a file.
    let input = store.write(
        "big.jsonl",
        (json!({"id": "big", "text": long}).to_string() + "\n").as_bytes(),
    );
    let out = store.cmd().arg("add").arg(&input).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("big.jsonl:1:") && stderr.contains("raise `limits.max_record_bytes`"),
        "{stderr}"
    );
    // `ingest` of a transcript whose message makes a record over the limit.
    let transcript = store.write(
        "big-transcript.jsonl",
        (json!({"role": "user", "content": long}).to_string() + "\n").as_bytes(),
    );
    let out = store
        .cmd()
        .args(["ingest", "--embed", "later"])
        .arg(&transcript)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("limits.max_record_bytes"), "{stderr}");
    assert!(
        stderr.contains("over the limit of 2.0 KiB") || stderr.contains("over the limit of 2000"),
        "{stderr}"
    );
    assert_eq!(before, store.snapshot(), "the store changed");
}
