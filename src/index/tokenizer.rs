//! The code-aware tokenizer.
//!
//! Agent memory mixes prose ("we switched the parser to streaming") with code
//! identifiers (`parseConfig`, `oauth2.py`, `src/store/mod.rs`, `E0502`). A prose
//! tokenizer splits `oauth2.py` into `oauth2` and `py` and loses the file name; a
//! whitespace tokenizer keeps `parseConfig` but then `parse config` no longer finds
//! it. This tokenizer emits both views of every code-like word:
//!
//! * the **parts**: the word split on punctuation (`_ . / - :` …) and on camelCase
//!   boundaries, each at its own position, so `parse config` and phrase filters work;
//! * the **compounds**: the whole word lowercased (`oauth2.py`, `src/store/mod.rs`),
//!   every path component that is itself compound (`mod.rs`), and the parts joined
//!   without separators (`parseconfig`, which also matches `parse_config`), all at the
//!   position of the word's first part so phrases over the parts are unaffected.
//!
//! Tokens are lowercased here (camelCase detection needs the original case); stop
//! words and stemming are applied afterwards by the analyzer built in
//! [`analyzer`].

use tantivy::tokenizer::{RemoveLongFilter, TextAnalyzer, Token, TokenStream, Tokenizer};

use super::stem::CachedStemmer;

/// Name under which the analyzer is registered with tantivy.
pub const CODE_TOKENIZER: &str = "kdb_code";

/// Tokens longer than this (in bytes) are dropped: they are base64 blobs or hashes
/// that bloat the term dictionary and nobody types.
const MAX_TOKEN_BYTES: usize = 80;

/// Builds the full analyzer: code tokenizer, long-token removal, English
/// stemming (Snowball, with a per-thread map of words already stemmed: [`super::stem`]).
///
/// Stop words are kept: BM25's IDF already makes them cheap, and in code they are
/// often meaningful (`not`, `for`, `if`).
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CodeTokenizer)
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(CachedStemmer::default())
        .build()
}

/// Splits text into prose words, identifier parts and compound identifiers.
#[derive(Clone, Default)]
pub struct CodeTokenizer;

/// A token stream over tokens computed eagerly; texts are small (records, queries).
pub struct CodeTokenStream {
    tokens: Vec<Token>,
    index: usize,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream {
        CodeTokenStream {
            tokens: tokenize(text),
            index: 0,
        }
    }
}

impl TokenStream for CodeTokenStream {
    fn advance(&mut self) -> bool {
        if self.index < self.tokens.len() {
            self.index += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.index - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.index - 1]
    }
}

/// Characters that may join the parts of one code word (`a.b`, `a/b`, `a::b`, `a-b`).
fn is_connector(c: char) -> bool {
    matches!(
        c,
        '_' | '.' | '/' | '\\' | '-' | ':' | '#' | '@' | '$' | '~'
    )
}

/// Tokenizes `text` into lowercased tokens with byte offsets and positions.
pub fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut position = 0usize;
    for (start, end) in words(text) {
        position = emit_word(text, start, end, position, &mut tokens);
    }
    tokens
}

/// Byte ranges of code words: runs of alphanumerics and connectors, trimmed of
/// connectors at both ends (so a sentence's final `.` is not part of the word).
fn words(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        let inside = c.is_alphanumeric() || is_connector(c);
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                push_trimmed(text, s, i, &mut out);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        push_trimmed(text, s, text.len(), &mut out);
    }
    out
}

fn push_trimmed(text: &str, mut start: usize, mut end: usize, out: &mut Vec<(usize, usize)>) {
    let slice = &text[start..end];
    let trimmed_front = slice.trim_start_matches(is_connector);
    start += slice.len() - trimmed_front.len();
    let trimmed = trimmed_front.trim_end_matches(is_connector);
    end = start + trimmed.len();
    if start < end {
        out.push((start, end));
    }
}

/// Emits the tokens of one word starting at `position`; returns the next free position.
fn emit_word(
    text: &str,
    start: usize,
    end: usize,
    position: usize,
    tokens: &mut Vec<Token>,
) -> usize {
    let parts = parts(text, start, end);
    if parts.is_empty() {
        return position;
    }
    let first = tokens.len();
    if parts.len() > 1 {
        emit_compounds(text, start, end, &parts, position, tokens);
    }
    for (i, &(s, e)) in parts.iter().enumerate() {
        tokens.push(make_token(text[s..e].to_lowercase(), s, e, position + i, 1));
    }
    // Tantivy needs positions in order; compounds of later path components sit
    // between the parts (a stable sort keeps compounds before their first part).
    tokens[first..].sort_by_key(|t| t.position);
    position + parts.len()
}

/// The whole word, its compound path components and the joined parts.
fn emit_compounds(
    text: &str,
    start: usize,
    end: usize,
    parts: &[(usize, usize)],
    position: usize,
    tokens: &mut Vec<Token>,
) {
    let whole = text[start..end].to_lowercase();
    let mut seen: Vec<String> = vec![whole.clone()];
    tokens.push(make_token(whole, start, end, position, parts.len()));

    // Path components that are compound themselves: `oauth2.py` in `src/auth/oauth2.py`.
    let word = &text[start..end];
    if word.contains(['/', '\\']) {
        let mut offset = start;
        for component in word.split(['/', '\\']) {
            let (cs, ce) = (offset, offset + component.len());
            offset = ce + 1;
            let trimmed = component.trim_matches(is_connector);
            if trimmed.is_empty() || !trimmed.contains(is_connector) {
                continue;
            }
            let lower = trimmed.to_lowercase();
            if !seen.contains(&lower) {
                let first_part = parts.iter().position(|&(s, _)| s >= cs).unwrap_or(0);
                seen.push(lower.clone());
                tokens.push(make_token(lower, cs, ce, position + first_part, 1));
            }
        }
    }

    // Joined parts: `parse_config`, `parseConfig` and `ParseConfig` all give `parseconfig`.
    let joined: String = parts
        .iter()
        .map(|&(s, e)| text[s..e].to_lowercase())
        .collect();
    if !seen.contains(&joined) {
        tokens.push(make_token(joined, start, end, position, parts.len()));
    }
}

fn make_token(text: String, from: usize, to: usize, position: usize, length: usize) -> Token {
    Token {
        offset_from: from,
        offset_to: to,
        position,
        text,
        position_length: length,
    }
}

/// Splits a word into alphanumeric parts, then each part on camelCase boundaries.
fn parts(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut run_start: Option<usize> = None;
    for (i, c) in text[start..end].char_indices() {
        let at = start + i;
        match (c.is_alphanumeric(), run_start) {
            (true, None) => run_start = Some(at),
            (false, Some(s)) => {
                split_camel(text, s, at, &mut out);
                run_start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = run_start {
        split_camel(text, s, end, &mut out);
    }
    out
}

/// `parseConfig` → `parse`, `Config`; `HTTPServer` → `HTTP`, `Server`; digits stay
/// with their letters (`oauth2`, `E0502`, `utf8`).
fn split_camel(text: &str, start: usize, end: usize, out: &mut Vec<(usize, usize)>) {
    // Most words are one lowercase run: nothing to split, nothing to look at twice.
    let run = &text[start..end];
    if !run.chars().any(char::is_uppercase) {
        out.push((start, end));
        return;
    }
    let mut part_start = start;
    let mut chars = run.char_indices().map(|(i, c)| (start + i, c)).peekable();
    let mut prev: Option<char> = None;
    while let Some((at, cur)) = chars.next() {
        if let Some(prev) = prev {
            let next_is_lower = chars.peek().is_some_and(|&(_, n)| n.is_lowercase());
            let lower_to_upper =
                (prev.is_lowercase() || prev.is_ascii_digit()) && cur.is_uppercase();
            let acronym_end = prev.is_uppercase() && cur.is_uppercase() && next_is_lower;
            if lower_to_upper || acronym_end {
                out.push((part_start, at));
                part_start = at;
            }
        }
        prev = Some(cur);
    }
    out.push((part_start, end));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(input: &str) -> Vec<String> {
        tokenize(input).into_iter().map(|t| t.text).collect()
    }

    fn analyzed(input: &str) -> Vec<String> {
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(input);
        let mut out = Vec::new();
        while let Some(token) = stream.next() {
            out.push(token.text.clone());
        }
        out
    }

    #[test]
    fn prose_is_split_into_lowercase_words() {
        assert_eq!(
            texts("The Parser failed, again."),
            ["the", "parser", "failed", "again"]
        );
    }

    #[test]
    fn file_names_keep_whole_form_and_parts() {
        let t = texts("edit oauth2.py now");
        assert!(t.contains(&"oauth2.py".to_string()));
        assert!(t.contains(&"oauth2".to_string()));
        assert!(t.contains(&"py".to_string()));
    }

    #[test]
    fn camel_and_snake_case_share_a_joined_form() {
        let camel = texts("parseConfig");
        let snake = texts("parse_config");
        for t in [&camel, &snake] {
            assert!(t.contains(&"parse".to_string()));
            assert!(t.contains(&"config".to_string()));
            assert!(t.contains(&"parseconfig".to_string()));
        }
    }

    #[test]
    fn acronyms_split_before_the_next_word() {
        let t = texts("HTTPServer");
        assert!(t.contains(&"http".to_string()));
        assert!(t.contains(&"server".to_string()));
    }

    #[test]
    fn error_codes_and_digits_stay_whole() {
        assert_eq!(texts("error[E0502]"), ["error", "e0502"]);
        assert_eq!(texts("utf8"), ["utf8"]);
    }

    #[test]
    fn paths_emit_compound_components() {
        let t = texts("see src/auth/oauth2.py:42");
        assert!(t.contains(&"src/auth/oauth2.py:42".to_string()));
        assert!(t.contains(&"oauth2.py:42".to_string()));
        assert!(t.contains(&"auth".to_string()));
        assert!(t.contains(&"42".to_string()));
    }

    #[test]
    fn trailing_punctuation_is_not_part_of_a_word() {
        assert_eq!(texts("see main.rs."), texts("see main.rs"));
    }

    #[test]
    fn parts_have_consecutive_positions_and_compounds_share_the_first() {
        let tokens = tokenize("a parseConfig b");
        let pos = |s: &str| tokens.iter().find(|t| t.text == s).map(|t| t.position);
        assert_eq!(pos("a"), Some(0));
        assert_eq!(pos("parseconfig"), Some(1));
        assert_eq!(pos("parse"), Some(1));
        assert_eq!(pos("config"), Some(2));
        assert_eq!(pos("b"), Some(3));
    }

    #[test]
    fn analyzer_stems_prose() {
        assert_eq!(analyzed("running tests"), ["run", "test"]);
    }

    #[test]
    fn non_latin_scripts_are_tokenized() {
        assert_eq!(texts("проверка データ"), ["проверка", "データ"]);
    }

    /// The first, simpler split (a char vector per run): the oracle for the
    /// faster one above.
    fn split_camel_by_char_vector(text: &str) -> Vec<(usize, usize)> {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let mut out = Vec::new();
        let mut part_start = 0;
        for w in 1..chars.len() {
            let (prev, cur) = (chars[w - 1].1, chars[w].1);
            let next_is_lower = chars.get(w + 1).is_some_and(|&(_, n)| n.is_lowercase());
            let lower_to_upper =
                (prev.is_lowercase() || prev.is_ascii_digit()) && cur.is_uppercase();
            let acronym_end = prev.is_uppercase() && cur.is_uppercase() && next_is_lower;
            if lower_to_upper || acronym_end {
                out.push((part_start, chars[w].0));
                part_start = chars[w].0;
            }
        }
        out.push((part_start, text.len()));
        out
    }

    proptest! {
        #[test]
        fn camel_split_matches_the_char_vector_split(run in "[a-zA-Z0-9ÄäßΣσ]{1,24}") {
            let mut fast = Vec::new();
            split_camel(&run, 0, run.len(), &mut fast);
            prop_assert_eq!(fast, split_camel_by_char_vector(&run));
        }
    }

    proptest! {
        #[test]
        fn offsets_are_char_boundaries_and_positions_never_decrease(input in "\\PC{0,200}") {
            let tokens = tokenize(&input);
            let mut last = 0;
            for t in &tokens {
                prop_assert!(input.is_char_boundary(t.offset_from));
                prop_assert!(input.is_char_boundary(t.offset_to));
                prop_assert!(t.offset_from < t.offset_to);
                prop_assert!(t.position >= last);
                prop_assert!(!t.text.is_empty());
                last = t.position;
            }
        }
    }
}
