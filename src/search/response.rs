//! The answer to a search: [`SearchResponse`], its [`Hit`]s and their
//! [`ScoreParts`], and how a stored record becomes a hit (a snippet of its
//! best-matching passage with the matched terms highlighted, its citation).
//!
//! These are the types every caller prints or sends (the CLI, MCP, the hooks,
//! the viewer); the ranking that fills them lives in `rank.rs`.

use serde::Serialize;
use tantivy::snippet::SnippetGenerator;
use tantivy::DocAddress;

use super::{fusion, Filters};
use crate::record::parse::format_time;
use crate::record::{Kind, Record};

/// Longest snippet, in characters.
pub(crate) const SNIPPET_CHARS: usize = 220;

/// Score parts of a result: each retriever's score and rank, and the fused score.
#[derive(Debug, Clone, Serialize)]
pub struct ScoreParts {
    /// BM25 score, if BM25 found the record.
    pub bm25: Option<f32>,
    /// 1-based rank in BM25's list, if BM25 found the record.
    pub bm25_rank: Option<usize>,
    /// Cosine similarity of the query and record embeddings.
    pub vector: Option<f32>,
    /// 1-based rank in the vector list, if the vector side found the record.
    pub vector_rank: Option<usize>,
    /// The fused score (the same as the hit's `score`).
    pub fused: f32,
    /// The exact cosine similarity of the query and the record, whether or
    /// not the vector side ranked it (none without a vector).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f32>,
    /// The share of the query's IDF weight the record holds, in any field
    /// (see `candidates::weighted_share`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f32>,
}

/// One ranked result.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    /// 1-based position in the results.
    pub rank: usize,
    /// The record's id.
    pub id: String,
    /// The record's kind.
    pub kind: Kind,
    /// The record's namespace.
    pub namespace: String,
    /// The record's project (see `crate::record::project`); absent when it
    /// has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Who wrote it when it was pulled from a team's shared memory; absent
    /// for the store's own records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The score results are ranked by (the fused score).
    pub score: f32,
    /// Each retriever's score and rank.
    pub scores: ScoreParts,
    /// The record's title.
    pub title: String,
    /// The best-matching passage of the record's text (at most 220 characters).
    pub snippet: String,
    /// Byte ranges of matched terms within `snippet`.
    pub highlights: Vec<(usize, usize)>,
    /// The record's session, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// First turn the record covers, if known, counted from 1
    /// ([`Record::shown_turns`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_turn: Option<u64>,
    /// Last turn the record covers, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_turn: Option<u64>,
    /// The record's own time (RFC 3339), if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The tier the hit came from: `l2` or `l3`.
    pub tier: &'static str,
    /// Files the record names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// A short human citation, as [`Record::citation`] gives.
    pub citation: String,
    /// How many records this hit stands for: itself and the copies of its text
    /// (identical or near-identical) that folded into it.
    pub copies: usize,
    /// Ids of the other copies (at most [`MAX_DUPLICATE_IDS`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub duplicates: Vec<String>,
    /// Scored under the default minimum: shown only because a lower minimum
    /// was asked for (`--all`, `--min-score`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub weak: bool,
    /// Which phrasings found it (1-based), when several were searched
    /// together (see [`super::phrasings`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phrasings: Vec<usize>,
    /// Not one to lean on: under the confident score, or holding little of
    /// the query's words and meaning (see [`super::confidence`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub low_confidence: bool,
}

/// A hit for unit tests: `id` with the calibrated `score`, every other
/// field empty; each test sets what it reads with struct update syntax. One
/// place to name a new field of [`Hit`].
#[cfg(test)]
pub(crate) fn test_hit(id: &str, score: f32) -> Hit {
    Hit {
        rank: 1,
        id: id.into(),
        kind: crate::record::Kind::Message,
        namespace: "default".into(),
        project: None,
        origin: None,
        score,
        scores: ScoreParts {
            bm25: None,
            bm25_rank: None,
            vector: None,
            vector_rank: None,
            fused: score,
            cosine: None,
            coverage: None,
        },
        title: String::new(),
        snippet: String::new(),
        highlights: Vec::new(),
        session_id: None,
        start_turn: None,
        end_turn: None,
        timestamp: None,
        tier: "l2",
        files: Vec::new(),
        citation: String::new(),
        copies: 1,
        duplicates: Vec::new(),
        weak: false,
        phrasings: Vec::new(),
        low_confidence: false,
    }
}

/// Most duplicate ids one hit lists.
pub const MAX_DUPLICATE_IDS: usize = 20;

/// The answer to one search.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResponse {
    /// The query as given (several phrasings: joined by ` | `).
    pub query: String,
    /// The phrasings searched together, when there were several (see
    /// [`super::phrasings`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phrasings: Vec<String>,
    /// The filters applied.
    pub filters: Filters,
    /// The hits, best first.
    pub results: Vec<Hit>,
    /// Why there are no results, when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The minimum score applied (0 when none).
    pub min_score: f32,
    /// Results left out for scoring under the minimum.
    #[serde(skip_serializing_if = "is_zero")]
    pub below_min_score: usize,
    /// The best score of any candidate, when none is returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_score: Option<f32>,
    /// What the vector side did: `used`, `off`, or `unavailable: <why>`.
    pub vector: String,
    /// Records that match no vector yet (added with `--embed later` or without a model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records_without_vector: Option<u64>,
    /// The cosine similarity that chance gives the best of the records
    /// searched (see [`super::relevance::chance_cosine`]); `None` without
    /// vectors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chance_cosine: Option<f32>,
    /// Words of the query that no searched record holds (see
    /// [`SearchEngine::unknown_words`](super::SearchEngine::unknown_words)):
    /// results found for the rest of the query are not about them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown_words: Vec<String>,
    /// Time the search took, in milliseconds.
    pub took_ms: f64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

pub(crate) fn hit(
    rank: usize,
    fused: &fusion::Fused<DocAddress>,
    record: Record,
    snippets: &SnippetGenerator,
) -> Hit {
    let mut snippet = snippets.snippet(&record.fields.content);
    if snippet.is_empty() {
        snippet = snippets.snippet(&record.display_text());
    }
    let (text, highlights) = if snippet.fragment().is_empty() {
        (
            leading_chars(&record.fields.content, SNIPPET_CHARS),
            Vec::new(),
        )
    } else {
        let fragment = snippet.fragment();
        let marked: Vec<(usize, usize)> = snippet
            .highlighted()
            .iter()
            .map(|r| (r.start, r.end))
            .collect();
        let ranges = merge_adjacent(substantive(fragment, marked).into_iter());
        (fragment.to_string(), ranges)
    };
    let citation = record.citation();
    let (start_turn, end_turn) = record.shown_turns();
    let f = record.fields;
    Hit {
        rank,
        id: record.id,
        kind: record.kind,
        namespace: record.namespace,
        project: f.project.filter(|p| !p.is_empty()),
        origin: f
            .origin
            .filter(|o| !o.is_empty() && o != crate::index::LOCAL_ORIGIN),
        score: fused.score,
        scores: ScoreParts {
            bm25: fused.bm25.map(|(s, _)| s),
            bm25_rank: fused.bm25.map(|(_, r)| r),
            vector: fused.vector.map(|(s, _)| s),
            vector_rank: fused.vector.map(|(_, r)| r),
            fused: fused.score,
            cosine: fused.vector.map(|(s, _)| s),
            coverage: None,
        },
        title: f.title,
        snippet: text,
        highlights,
        session_id: f.session_id,
        start_turn,
        end_turn,
        timestamp: f.timestamp.map(format_time),
        tier: record.tier.as_str(),
        files: f.files,
        citation,
        copies: 1,
        duplicates: Vec::new(),
        weak: false,
        phrasings: Vec::new(),
        low_confidence: false,
    }
}

/// The marked words that say what the query is about: everyday words
/// (`the`, `why`, `did`: [`super::everyday`]) are not marked, unless the
/// query holds nothing else.
fn substantive(text: &str, ranges: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    use tantivy::tokenizer::TokenStream as _;
    let everyday = |&(start, end): &(usize, usize)| {
        text.get(start..end).is_some_and(|word| {
            let mut analyzer = crate::index::tokenizer::analyzer();
            let mut stream = analyzer.token_stream(word);
            let mut any = false;
            let mut all = true;
            while let Some(token) = stream.next() {
                any = true;
                all &= super::everyday::is_everyday(&token.text);
            }
            any && all
        })
    };
    let kept: Vec<(usize, usize)> = ranges.iter().filter(|r| !everyday(r)).copied().collect();
    if kept.is_empty() {
        ranges
    } else {
        kept
    }
}

/// Joins touching or overlapping ranges: `parse` + `Config` highlight as `parseConfig`.
fn merge_adjacent(ranges: impl Iterator<Item = (usize, usize)>) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (start, end) in ranges {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// The first `n` characters of `text`, cut at a word boundary where possible.
fn leading_chars(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let cut: String = text.chars().take(n).collect();
    match cut.rfind(char::is_whitespace) {
        Some(i) if i > n / 2 => format!("{}…", &cut[..i]),
        _ => format!("{cut}…"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everyday_words_are_not_marked_unless_nothing_else_is() {
        let text = "The refresh token failed because the clock drifted";
        let ranges = vec![(0, 3), (4, 11), (34, 37)];
        assert_eq!(substantive(text, ranges), [(4, 11)]);
        assert_eq!(substantive(text, vec![(0, 3)]), [(0, 3)]);
    }

    #[test]
    fn adjacent_highlights_merge() {
        let merged = merge_adjacent([(0, 5), (5, 11), (13, 15), (14, 18)].into_iter());
        assert_eq!(merged, [(0, 11), (13, 18)]);
    }

    #[test]
    fn leading_chars_cuts_at_a_word() {
        assert_eq!(leading_chars("short", 10), "short");
        assert_eq!(leading_chars("alpha beta gamma", 12), "alpha beta…");
    }
}
