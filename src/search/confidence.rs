//! Low confidence: which hits a reader should not take for answers.
//!
//! A search returns what clears the minimum score (0.08), which keeps recall
//! high: the answer is in the list far more often than it is first. But a
//! list of ten hits for a question the store knows nothing about reads as
//! ten answers. So each hit says whether it is one a careful reader can
//! lean on, from the evidence recall uses to speak unasked:
//!
//! - its calibrated score is at least [`CONFIDENT_SCORE`] (recall's default
//!   threshold: a probability of relevance of one half), and
//! - with vectors, it holds at least [`CONFIDENT_COVERAGE`] of the query's
//!   weight (the words that matter), or means something close to it (cosine
//!   at least [`CONFIDENT_COSINE`], recall's `min_cosine`);
//! - with BM25 alone (no vectors yet, or `--mode bm25`), the question has no
//!   word of substance that no stored record holds: BM25's calibration reads
//!   a hit that matches the other words of `kubernetes helm chart rollback
//!   strategy` as likely, but a store that has never seen `kubernetes` or
//!   `helm` holds no answer about them.
//!
//! Anything else is marked `low_confidence`; the CLI and the viewer say so.

use super::everyday::is_everyday;
use super::{Hit, SearchResponse};

/// The calibrated score a confident hit has at least (recall's default).
pub const CONFIDENT_SCORE: f32 = 0.5;
/// The share of the query's weight a confident hit holds at least, unless
/// its meaning is close ([`CONFIDENT_COSINE`]).
pub const CONFIDENT_COVERAGE: f32 = 0.5;
/// The cosine similarity that stands for the words (recall's `min_cosine`).
pub const CONFIDENT_COSINE: f32 = 0.35;

/// Whether a hit of a search that used vectors (`with_vectors`; else BM25
/// alone, for a question with `unknown_substance` words no record holds)
/// is one to lean on (see the module's doc).
pub fn is_confident(hit: &Hit, with_vectors: bool, unknown_substance: bool) -> bool {
    if hit.score < CONFIDENT_SCORE {
        return false;
    }
    if !with_vectors {
        return !unknown_substance;
    }
    let covers = hit.scores.coverage.is_none_or(|c| c >= CONFIDENT_COVERAGE);
    let means = hit.scores.cosine.is_some_and(|c| c >= CONFIDENT_COSINE);
    covers || means
}

/// Marks the hits of `response` that are not confident.
pub fn mark(response: &mut SearchResponse) {
    let with_vectors = response.vector == "used";
    let unknown_substance = response.unknown_words.iter().any(|word| {
        let mut analyzer = crate::index::tokenizer::analyzer();
        let mut stream = analyzer.token_stream(word);
        let mut substance = false;
        use tantivy::tokenizer::TokenStream as _;
        while let Some(token) = stream.next() {
            substance |= !is_everyday(&token.text);
        }
        substance
    });
    for hit in &mut response.results {
        hit.low_confidence = !is_confident(hit, with_vectors, unknown_substance);
    }
}
