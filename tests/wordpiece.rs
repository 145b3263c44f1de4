//! Our WordPiece tokenizer (`src/embed/wordpiece.rs`) against the one it
//! replaces, Hugging Face's `tokenizers`, both reading the installed model's
//! `tokenizer.json`: the same ids for real text of every kind the store holds
//! and for random text built to hit the edges (accents, CJK, control and
//! unassigned characters, special tokens written in the text, long words,
//! truncation). A different id would change the vectors, so any is a failure.
//!
//! Like `tests/real_model.rs`, these fail, not skip, when the model is missing.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use knowledge_db::embed::wordpiece::WordPiece;
use knowledge_db::embed::{ModelLocation, MAX_TOKENS};
use proptest::prelude::*;
use tokenizers::{Tokenizer, TruncationParams};

fn tokenizer_json() -> PathBuf {
    let path = ModelLocation::locate().model_dir.join("tokenizer.json");
    assert!(
        path.is_file(),
        "{} is missing (./test.sh runs scripts/setup-model.sh first)",
        path.display()
    );
    path
}

fn ours() -> WordPiece {
    WordPiece::from_file(&tokenizer_json(), MAX_TOKENS).unwrap()
}

/// The reference, set up as the embedder set it up before: cut at
/// [`MAX_TOKENS`], `[CLS]` and `[SEP]` added.
fn reference() -> Tokenizer {
    let mut t = Tokenizer::from_file(tokenizer_json()).unwrap();
    t.with_padding(None);
    t.with_truncation(Some(TruncationParams {
        max_length: MAX_TOKENS,
        ..Default::default()
    }))
    .unwrap();
    t
}

fn reference_ids(t: &Tokenizer, text: &str) -> Vec<u32> {
    t.encode(text, true).unwrap().get_ids().to_vec()
}

/// Every string value in `value`, however deep.
fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The string values of every `step`-th file of a folder of gzipped JSON lines.
fn texts_of_sessions(dir: &Path, step: usize) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl.gz"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files.iter().step_by(step) {
        let gz = flate2::read::GzDecoder::new(std::fs::File::open(file).unwrap());
        for line in BufReader::new(gz).lines() {
            let line = line.unwrap();
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) {
                strings(&value, &mut out);
            }
        }
    }
    out
}

fn texts_of_jsonl(path: &Path) -> Vec<String> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for line in BufReader::new(file).lines() {
        let value: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        strings(&value, &mut out);
    }
    out
}

fn assert_same_ids(texts: &[String], what: &str) {
    let (ours, reference) = (ours(), reference());
    let mut compared = 0;
    for text in texts.iter().filter(|t| !t.is_empty()) {
        // Longer texts are cut at 256 tokens anyway; the cut is tested here
        // with the first 20,000 characters.
        let text: String = text.chars().take(20_000).collect();
        let expected = reference_ids(&reference, &text);
        let got = ours.encode(&text);
        assert!(
            got == expected,
            "{what}: different ids for {text:?}\n  ours:      {got:?}\n  reference: {expected:?}"
        );
        compared += 1;
    }
    assert!(compared > 1_000, "{what}: only {compared} texts compared");
    eprintln!("{what}: {compared} texts, the same ids");
}

#[test]
fn real_sessions_get_the_same_ids() {
    let dir = common::shared_eval("transcripts/claude-code-entire-cli");
    assert_same_ids(&texts_of_sessions(&dir, 12), "sessions");
}

#[test]
fn scientific_abstracts_and_dialogue_get_the_same_ids() {
    let mut texts = texts_of_jsonl(&common::shared_eval("scifact-dev/corpus.jsonl"));
    texts.extend(texts_of_jsonl(&common::shared_eval(
        "scifact-dev/queries.jsonl",
    )));
    assert_same_ids(&texts, "SciFact");
}

/// Characters from the places where tokenizers differ: punctuation of every
/// script, accents and combining marks, CJK, whitespace and control
/// characters, unassigned and private-use code points, emoji.
fn edgy_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => proptest::char::range('a', 'z'),
        1 => proptest::char::range('A', 'Z'),
        1 => proptest::char::range('0', '9'),
        2 => prop::sample::select(vec![' ', ' ', '\t', '\n', '\r', '.', ',', '#', '_', '-', '/', '[', ']', '"', '\'']),
        1 => proptest::char::range('\u{0}', '\u{7f}'),
        1 => proptest::char::range('\u{80}', '\u{024f}'),
        1 => proptest::char::range('\u{0300}', '\u{036f}'),
        1 => proptest::char::range('\u{0370}', '\u{0fff}'),
        1 => proptest::char::range('\u{2000}', '\u{2bff}'),
        1 => proptest::char::range('\u{3000}', '\u{30ff}'),
        1 => proptest::char::range('\u{4e00}', '\u{4e3f}'),
        1 => proptest::char::range('\u{e000}', '\u{e00f}'),
        1 => proptest::char::range('\u{fe00}', '\u{ffff}'),
        1 => proptest::char::range('\u{1f300}', '\u{1faff}'),
        1 => proptest::char::range('\u{20000}', '\u{20010}'),
        1 => proptest::char::range('\u{e0000}', '\u{e007f}'),
    ]
}

fn edgy_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        6 => proptest::collection::vec(edgy_char(), 0..12).prop_map(|c| c.into_iter().collect::<String>()),
        1 => prop::sample::select(vec!["[SEP]", "[MASK]", "[CLS]", "[PAD]", "[UNK]", "[sep]", "[MAS", "##ing"]).prop_map(String::from),
        1 => prop::sample::select(vec!["café", "naïve", "Ünïcödé", "İstanbul", "ﬁle", "Straße", "ǅ", "ﬀ"]).prop_map(String::from),
        1 => "[a-z]{90,110}",
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    #[test]
    fn random_text_gets_the_same_ids(text in edgy_text()) {
        thread_local! {
            static BOTH: (WordPiece, Tokenizer) = (ours(), reference());
        }
        BOTH.with(|(ours, reference)| {
            prop_assert_eq!(ours.encode(&text), reference_ids(reference, &text), "text {:?}", text);
            Ok(())
        })?;
    }
}

#[test]
fn long_texts_are_cut_where_the_reference_cuts_them() {
    let texts: Vec<String> = (0..200)
        .map(|n| {
            let word = [
                "parse",
                "configuration",
                "é",
                "中",
                "!",
                "[SEP]",
                "tokenization",
            ][n % 7];
            format!(
                "{} {}",
                word.repeat(n % 13 + 1),
                "lorem ipsum dolor ".repeat(n)
            )
        })
        .collect();
    let (ours, reference) = (ours(), reference());
    for text in &texts {
        let got = ours.encode(text);
        assert_eq!(got, reference_ids(&reference, text), "{text:?}");
        assert!(got.len() <= MAX_TOKENS);
    }
}
