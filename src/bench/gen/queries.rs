//! Queries: cut from the text of the one record each targets.
//!
//! A `span` of consecutive words, an `identifier` (file name, camelCase or
//! snake_case name, error code, command) or a `paraphrase` (content words
//! shuffled, one or two left out), each with at least one word that is rare in
//! the source turns ([`DocFreq`]). Targets are chosen up front, spread uniformly
//! over the corpus.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

use super::build::{render_turn, OutRecord};
use super::rng::{Rng, TAG_QUERY, TAG_TARGETS};
use super::summary::push_unique;
use super::{GenError, Output, RESULT_CHARS};
use crate::bench::turns::Session;

/// How many turns each term occurs in, to prefer distinctive query words.
pub(super) struct DocFreq {
    counts: HashMap<u64, u32>,
    docs: u32,
}

impl DocFreq {
    pub(super) fn build(sessions: &[Session]) -> Self {
        let mut counts: HashMap<u64, u32> = HashMap::new();
        let mut seen = HashSet::new();
        let mut docs = 0u32;
        for turn in sessions
            .iter()
            .flat_map(|s| &s.turns)
            .filter(|t| t.has_content())
        {
            docs += 1;
            seen.clear();
            for term in terms_of(&render_turn(turn, RESULT_CHARS)) {
                if seen.insert(term_hash(term)) {
                    *counts.entry(term_hash(term)).or_default() += 1;
                }
            }
        }
        DocFreq { counts, docs }
    }

    fn of(&self, term: &str) -> u32 {
        self.counts.get(&term_hash(term)).copied().unwrap_or(0)
    }

    /// Rare enough to point at a few records: in at most 1% of the turns.
    fn is_rare(&self, term: &str) -> bool {
        self.of(term) <= (self.docs / 100).max(3)
    }

    fn idf(&self, term: &str) -> f64 {
        ((f64::from(self.docs) + 1.0) / (f64::from(self.of(term)) + 1.0)).ln()
    }
}

fn term_hash(term: &str) -> u64 {
    xxh3_64(term.to_lowercase().as_bytes())
}

/// Terms as a code-aware index would see them: runs of letters, digits and `_.-`.
fn terms_of(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '-'))
        .map(|t| t.trim_matches(['.', '-']))
        .filter(|t| !t.is_empty())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueryType {
    Span,
    Identifier,
    Paraphrase,
}

impl QueryType {
    fn as_str(self) -> &'static str {
        match self {
            QueryType::Span => "span",
            QueryType::Identifier => "identifier",
            QueryType::Paraphrase => "paraphrase",
        }
    }

    /// 50% spans, 30% identifiers, 20% paraphrases; the rest as fallbacks.
    fn draw(rng: &mut Rng) -> [QueryType; 3] {
        use QueryType::*;
        match rng.below(10) {
            0..=4 => [Span, Identifier, Paraphrase],
            5..=7 => [Identifier, Span, Paraphrase],
            _ => [Paraphrase, Span, Identifier],
        }
    }
}

#[derive(Serialize)]
pub(super) struct QueryLine<'a> {
    #[serde(rename = "_id")]
    pub(super) id: String,
    text: String,
    metadata: QueryMetadata<'a>,
}

#[derive(Serialize)]
struct QueryMetadata<'a> {
    target: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// Chooses target records up front (by position in the corpus) and makes a query
/// from each when it is written. A record that yields no usable query passes its
/// turn to the next record.
pub(super) struct QueryMaker {
    targets: Vec<usize>,
    next_target: usize,
    pending: usize,
    pub(super) made: usize,
    seed: u64,
}

impl QueryMaker {
    pub(super) fn new(records: usize, queries: usize, seed: u64) -> Self {
        QueryMaker {
            targets: choose_targets(records, queries.min(records), seed),
            next_target: 0,
            pending: 0,
            made: 0,
            seed,
        }
    }

    pub(super) fn offer(
        &mut self,
        position: usize,
        record: &OutRecord,
        df: &DocFreq,
        out: &mut Output,
    ) -> Result<(), GenError> {
        while self.targets.get(self.next_target) == Some(&position) {
            self.pending += 1;
            self.next_target += 1;
        }
        if self.pending == 0 {
            return Ok(());
        }
        let mut rng = Rng::derive(self.seed, &[TAG_QUERY, position as u64]);
        let Some((kind, text)) = make_query(record, df, &mut rng) else {
            return Ok(());
        };
        self.pending -= 1;
        self.made += 1;
        let target = record.id();
        let line = QueryLine {
            id: format!("q{}", self.made),
            text,
            metadata: QueryMetadata {
                target: &target,
                kind: kind.as_str(),
            },
        };
        out.write_query(&line, &target)
    }
}

/// `count` distinct positions in `0..records`, sorted (Floyd's sampling).
pub(super) fn choose_targets(records: usize, count: usize, seed: u64) -> Vec<usize> {
    let mut rng = Rng::derive(seed, &[TAG_TARGETS]);
    let mut chosen = BTreeSet::new();
    for j in records - count..records {
        let pick = rng.below(j + 1);
        if !chosen.insert(pick) {
            chosen.insert(j);
        }
    }
    chosen.into_iter().collect()
}

fn make_query(record: &OutRecord, df: &DocFreq, rng: &mut Rng) -> Option<(QueryType, String)> {
    let prose = record.prose();
    QueryType::draw(rng).into_iter().find_map(|kind| {
        let text = match kind {
            QueryType::Span => span_query(&prose, df, rng),
            QueryType::Identifier => identifier_query(&prose, &record.listed_names(), df, rng),
            QueryType::Paraphrase => paraphrase_query(&prose, df, rng),
        }?;
        Some((kind, text))
    })
}

const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "but", "by", "can", "could", "did", "do", "does", "done", "for", "from", "get",
    "got", "had", "has", "have", "here", "how", "i", "if", "in", "into", "is", "it", "its", "it's",
    "just", "let", "let's", "like", "me", "more", "my", "need", "new", "no", "not", "now", "of",
    "on", "one", "only", "or", "our", "out", "should", "so", "some", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "to", "too", "up", "use", "used",
    "using", "was", "we", "were", "what", "when", "where", "which", "while", "will", "with",
    "would", "you", "your", "yes", "i'll", "i'm", "don't", "see", "make", "sure", "file", "result",
    "error", "now", "check", "look", "okay", "ok", "true", "false", "null", "none",
];

fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word.to_lowercase().as_str())
}

/// A word of prose without the quotes, brackets and punctuation around it.
fn clean_word(word: &str) -> &str {
    word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
}

/// Words a person could type: letters, digits and `_.-/'` only, not too long.
fn is_typable(word: &str) -> bool {
    !word.is_empty()
        && word.chars().count() <= 40
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || "_.-/'".contains(c))
}

/// A word that carries meaning: not a stop word, at least 3 characters, has a letter.
fn is_content_word(word: &str) -> bool {
    word.chars().count() >= 3 && word.chars().any(char::is_alphabetic) && !is_stop_word(word)
}

/// 4-10 consecutive words of one line of the record, the most distinctive of a
/// few tries; at least one of them must be rare in the source turns.
fn span_query(prose: &str, df: &DocFreq, rng: &mut Rng) -> Option<String> {
    let lines: Vec<Vec<&str>> = prose
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(clean_word)
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|words| words.len() >= 4)
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut best: Option<(f64, &[&str])> = None;
    for _ in 0..10 {
        let words = &lines[rng.below(lines.len())];
        let len = rng.between(4, 10).min(words.len());
        let start = rng.below(words.len() - len + 1);
        let span = &words[start..start + len];
        let content: Vec<&&str> = span.iter().filter(|w| is_content_word(w)).collect();
        let usable = content.len() >= 2
            && span.iter().all(|w| is_typable(w))
            && content.iter().any(|w| df.is_rare(w));
        if !usable {
            continue;
        }
        let score: f64 = content.iter().map(|w| df.idf(w)).sum();
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, span));
        }
    }
    best.map(|(_, span)| span.join(" "))
}

/// A file name, identifier, error code or command of the record; one of the rarest.
fn identifier_query(prose: &str, listed: &[String], df: &DocFreq, rng: &mut Rng) -> Option<String> {
    let mut candidates: Vec<String> = Vec::new();
    for name in listed {
        if let Some(base) = name.rsplit('/').next().filter(|b| looks_like_file_name(b)) {
            push_unique(&mut candidates, base);
        }
        if let Some(command) = command_head(name) {
            push_unique(&mut candidates, &command);
        }
    }
    for word in prose.split_whitespace().map(clean_word) {
        let word = word.rsplit('/').next().unwrap_or(word);
        if looks_like_identifier(word) && is_typable(word) {
            push_unique(&mut candidates, word);
        }
    }
    candidates.retain(|c| {
        c.chars().count() >= 3 && !is_stop_word(c) && terms_of(c).all(|t| df.is_rare(t))
    });
    if candidates.is_empty() {
        return None;
    }
    // Rarest first; the order of first appearance breaks ties.
    candidates.sort_by_key(|c| terms_of(c).map(|t| df.of(t)).max().unwrap_or(0));
    let pool = candidates.len().min(3);
    Some(candidates.swap_remove(rng.below(pool)))
}

/// The program and subcommand of a shell command (`cargo test`, `go build`).
pub(super) fn command_head(command: &str) -> Option<String> {
    if looks_like_file_name(command.rsplit('/').next().unwrap_or_default()) {
        return None;
    }
    let command = command.rsplit("&& ").next().unwrap_or(command);
    let words: Vec<&str> = command
        .split_whitespace()
        .take_while(|w| w.chars().all(|c| c.is_alphanumeric() || "_-.:".contains(c)))
        .take(2)
        .collect();
    (words.len() == 2 && words.concat().len() >= 5).then(|| words.join(" "))
}

fn looks_like_file_name(word: &str) -> bool {
    let Some((stem, ext)) = word.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && (1..=5).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.chars().any(|c| c.is_ascii_alphabetic())
        && stem.chars().any(char::is_alphabetic)
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || "_.-".contains(c))
}

/// camelCase, PascalCase with two capitals, snake_case, error codes, file names.
pub(super) fn looks_like_identifier(word: &str) -> bool {
    let length = word.chars().count();
    if !(3..=60).contains(&length) {
        return false;
    }
    if looks_like_file_name(word) {
        return true;
    }
    let alnum = word.chars().all(|c| c.is_ascii_alphanumeric());
    let uppers = word.chars().filter(char::is_ascii_uppercase).count();
    let lowers = word.chars().filter(char::is_ascii_lowercase).count();
    let digits = word.chars().filter(char::is_ascii_digit).count();
    let first = word.chars().next().unwrap_or(' ');
    let camel = alnum && first.is_ascii_lowercase() && uppers >= 1;
    let pascal = alnum && first.is_ascii_uppercase() && uppers >= 2 && lowers >= 1;
    let snake = word.contains('_')
        && !word.starts_with('_')
        && !word.ends_with('_')
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && lowers + uppers >= 3;
    let error_code = alnum && lowers == 0 && uppers >= 1 && digits >= 3;
    camel || pascal || snake || error_code
}

/// A few content words from one stretch of the record (the most distinctive of a
/// few tries), shuffled, with one or two of the commoner ones left out.
fn paraphrase_query(prose: &str, df: &DocFreq, rng: &mut Rng) -> Option<String> {
    let words: Vec<&str> = prose.split_whitespace().map(clean_word).collect();
    if words.len() < 6 {
        return None;
    }
    let mut best: Option<(f64, Vec<String>)> = None;
    for _ in 0..6 {
        let picked = content_words_near(&words, rng);
        let score: f64 = picked.iter().map(|w| df.idf(w)).sum();
        let usable = picked.len() >= 4 && picked.iter().any(|w| df.is_rare(w));
        if usable && best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, picked));
        }
    }
    let (_, mut picked) = best?;
    let drop = if picked.len() >= 6 { 2 } else { 1 };
    for _ in 0..drop {
        let commonest = (0..picked.len()).max_by_key(|&i| df.of(&picked[i]))?;
        picked.remove(commonest);
    }
    rng.shuffle(&mut picked);
    Some(picked.join(" "))
}

/// Up to 8 distinct plain content words (lowercased) from a random 20-word stretch.
fn content_words_near(words: &[&str], rng: &mut Rng) -> Vec<String> {
    let len = 20.min(words.len());
    let start = rng.below(words.len() - len + 1);
    let mut picked: Vec<String> = Vec::new();
    for word in &words[start..start + len] {
        let plain = word
            .chars()
            .all(|c| c.is_alphabetic() || c == '-' || c == '\'');
        if plain && is_content_word(word) && !picked.iter().any(|p| p.eq_ignore_ascii_case(word)) {
            picked.push(word.to_lowercase());
        }
    }
    picked.truncate(8);
    picked
}
