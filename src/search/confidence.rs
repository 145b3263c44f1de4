//! Low confidence: which hits a reader should not take for answers.
//!
//! A search returns what clears the minimum score (0.08), which keeps recall
//! high: the answer is in the list far more often than it is first. But a
//! list of ten hits for a question the store knows nothing about reads as
//! ten answers. So each hit says whether it is one a careful reader can
//! lean on, from the same evidence recall uses to speak unasked:
//!
//! - its calibrated score is at least [`CONFIDENT_SCORE`] (recall's default
//!   threshold: a probability of relevance of one half), and
//! - it holds at least [`CONFIDENT_COVERAGE`] of the query's weight (the
//!   words that matter), or means something close to it (cosine at least
//!   [`CONFIDENT_COSINE`], recall's `min_cosine`).
//!
//! The second condition keeps a store without vectors honest: its BM25-only
//! calibration reads a hit that matches one common word of a question about
//! something absent (`kubernetes helm chart rollback strategy`: `strategy`)
//! as likely, and only the share of the question it holds says otherwise.
//! Anything else is marked `low_confidence`; the CLI and the viewer say so.

use super::Hit;

/// The calibrated score a confident hit has at least (recall's default).
pub const CONFIDENT_SCORE: f32 = 0.5;
/// The share of the query's weight a confident hit holds at least, unless
/// its meaning is close ([`CONFIDENT_COSINE`]).
pub const CONFIDENT_COVERAGE: f32 = 0.5;
/// The cosine similarity that stands for the words (recall's `min_cosine`).
pub const CONFIDENT_COSINE: f32 = 0.35;

/// Whether a hit is one to lean on (see the module's doc).
pub fn is_confident(hit: &Hit) -> bool {
    if hit.score < CONFIDENT_SCORE {
        return false;
    }
    let covers = hit.scores.coverage.is_none_or(|c| c >= CONFIDENT_COVERAGE);
    let means = hit.scores.cosine.is_some_and(|c| c >= CONFIDENT_COSINE);
    covers || means
}

/// Marks the hits that are not confident.
pub fn mark(results: &mut [Hit]) {
    for hit in results {
        hit.low_confidence = !is_confident(hit);
    }
}
