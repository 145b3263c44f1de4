//! Fusing the BM25 and the vector ranking into one.
//!
//! The default, `calibrated`, scores each candidate by the relevance model of
//! [`super::relevance`] (a probability, the same scale for every query). Three
//! other methods stay selectable (`--fusion`) for comparison:
//! - **reciprocal-rank fusion** (RRF): each list gives `1 / (60 + rank)`; it needs
//!   no score calibration and rewards what both retrievers rank high;
//! - **linear**: each list's scores are min-max normalised to [0, 1] over its own
//!   candidates, then `alpha * vector + (1 - alpha) * bm25` (a list that misses a
//!   document gives it 0).
//! - **z-score**: each list's scores are standardised over its own candidates
//!   (`(s - mean) / std`), a document a list misses gets that list's lowest
//!   standardised score (it ranked below everything the list returned, not at
//!   zero), then `alpha * vector + (1 - alpha) * bm25`, squashed by the logistic
//!   function into (0, 1) so that callers' `minScore` thresholds keep a meaning.
//!   Unlike min-max, one outlier at the top does not flatten the rest of a list.
//!
//! Every BM25 candidate stays a candidate, so an exact identifier hit is never lost
//! to the vector side.

use std::collections::HashMap;
use std::hash::Hash;

use serde::Serialize;

/// RRF's rank offset, as in Cormack et al. (2009).
pub const RRF_K: f32 = 60.0;

/// How two ranked lists (BM25 and vectors) are fused into one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Calibrated probability of relevance, one scale for every query and store (docs/search.md)
    Calibrated,
    /// Reciprocal-rank fusion
    Rrf,
    /// Min-max normalised scores, combined linearly with --alpha
    Linear,
    /// Standardised scores, combined linearly with --alpha
    Zscore,
}

/// A document's place in each list and its fused score.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused<D> {
    /// The document.
    pub doc: D,
    /// Its fused score.
    pub score: f32,
    /// BM25 score and 1-based rank, if BM25 found it.
    pub bm25: Option<(f32, usize)>,
    /// Cosine similarity and 1-based rank, if the vector side found it.
    pub vector: Option<(f32, usize)>,
}

/// Fuses two ranked lists (best first) into one, best first, ties by document.
pub fn fuse<D: Copy + Eq + Hash + Ord>(
    bm25: &[(f32, D)],
    vector: &[(f32, D)],
    fusion: Fusion,
    alpha: f32,
) -> Vec<Fused<D>> {
    let mut by_doc: HashMap<D, Fused<D>> = HashMap::new();
    for (rank, &(score, doc)) in bm25.iter().enumerate() {
        by_doc.entry(doc).or_insert_with(|| empty(doc)).bm25 = Some((score, rank + 1));
    }
    for (rank, &(score, doc)) in vector.iter().enumerate() {
        by_doc.entry(doc).or_insert_with(|| empty(doc)).vector = Some((score, rank + 1));
    }
    let bm25_range = range(bm25);
    let vector_range = range(vector);
    let bm25_z = Standard::of(bm25);
    let vector_z = Standard::of(vector);
    let mut fused: Vec<Fused<D>> = by_doc
        .into_values()
        .map(|mut f| {
            f.score = match fusion {
                // Calibration needs more than the two lists (see
                // `search::relevance`); over lists alone it is z-score fusion.
                Fusion::Calibrated | Fusion::Zscore => logistic(
                    alpha * vector_z.score(f.vector) + (1.0 - alpha) * bm25_z.score(f.bm25),
                ),
                Fusion::Rrf => rrf(f.bm25) + rrf(f.vector),
                Fusion::Linear => {
                    alpha * normalised(f.vector, vector_range)
                        + (1.0 - alpha) * normalised(f.bm25, bm25_range)
                }
            };
            f
        })
        .collect();
    fused.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
    fused
}

fn empty<D>(doc: D) -> Fused<D> {
    Fused {
        doc,
        score: 0.0,
        bm25: None,
        vector: None,
    }
}

fn rrf(place: Option<(f32, usize)>) -> f32 {
    place.map_or(0.0, |(_, rank)| 1.0 / (RRF_K + rank as f32))
}

fn range<D>(list: &[(f32, D)]) -> (f32, f32) {
    let min = list.iter().map(|s| s.0).fold(f32::INFINITY, f32::min);
    let max = list.iter().map(|s| s.0).fold(f32::NEG_INFINITY, f32::max);
    (min, max)
}

/// A list's mean and standard deviation, for z-scores.
struct Standard {
    mean: f32,
    std: f32,
    /// The lowest z-score in the list: what a document the list missed gets.
    floor: f32,
}

impl Standard {
    fn of<D>(list: &[(f32, D)]) -> Standard {
        if list.is_empty() {
            return Standard {
                mean: 0.0,
                std: 1.0,
                floor: 0.0,
            };
        }
        let n = list.len() as f32;
        let mean = list.iter().map(|s| s.0).sum::<f32>() / n;
        let variance = list.iter().map(|s| (s.0 - mean).powi(2)).sum::<f32>() / n;
        // All scores equal: every document is average.
        let std = if variance > 0.0 { variance.sqrt() } else { 1.0 };
        let min = list.iter().map(|s| s.0).fold(f32::INFINITY, f32::min);
        Standard {
            mean,
            std,
            floor: (min - mean) / std,
        }
    }

    fn score(&self, place: Option<(f32, usize)>) -> f32 {
        place.map_or(self.floor, |(score, _)| (score - self.mean) / self.std)
    }
}

fn logistic(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Min-max normalisation; a list whose scores are all equal maps them to 1.
fn normalised(place: Option<(f32, usize)>, (min, max): (f32, f32)) -> f32 {
    match place {
        None => 0.0,
        Some((score, _)) if max > min => (score - min) / (max - min),
        Some(_) => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_rewards_agreement() {
        let bm25 = [(9.0, 1), (5.0, 2), (1.0, 3)];
        let vector = [(0.9, 2), (0.8, 4), (0.1, 1)];
        let fused = fuse(&bm25, &vector, Fusion::Rrf, 0.5);
        assert_eq!(fused[0].doc, 2, "ranked 2nd and 1st beats 1st and 3rd");
        assert_eq!(fused[0].bm25, Some((5.0, 2)));
        assert_eq!(fused[0].vector, Some((0.9, 1)));
        assert_eq!(fused.len(), 4, "the union of both lists");
        assert!((fused[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-6);
    }

    #[test]
    fn linear_alpha_moves_between_the_lists() {
        let bm25 = [(10.0, 1), (0.0, 2)];
        let vector = [(0.9, 2), (0.1, 1)];
        assert_eq!(fuse(&bm25, &vector, Fusion::Linear, 0.0)[0].doc, 1);
        assert_eq!(fuse(&bm25, &vector, Fusion::Linear, 1.0)[0].doc, 2);
        let half = fuse(&bm25, &vector, Fusion::Linear, 0.5);
        assert!((half[0].score - 0.5).abs() < 1e-6);
    }

    #[test]
    fn zscore_ranks_by_standardised_scores_and_stays_in_zero_one() {
        // BM25 has one outlier at the top; min-max would flatten docs 2-4 to ~0.
        let bm25 = [(30.0, 1), (6.0, 2), (5.0, 3), (4.0, 4)];
        let vector = [(0.9, 3), (0.5, 2), (0.4, 1)];
        let fused = fuse(&bm25, &vector, Fusion::Zscore, 0.4);
        assert_eq!(fused.len(), 4);
        assert!(fused.iter().all(|f| f.score > 0.0 && f.score < 1.0));
        assert_eq!(fused[0].doc, 1, "the BM25 outlier stays first");
        assert_eq!(
            fused[1].doc, 3,
            "the vector side's best beats BM25's runner-up"
        );
        // Doc 4 is missing from the vector list: it gets that list's floor.
        let four = fused.iter().find(|f| f.doc == 4).unwrap();
        assert!(four.vector.is_none());
        assert_eq!(fused[3].doc, 4);
    }

    #[test]
    fn zscore_of_one_list_or_equal_scores_is_finite() {
        let bm25 = [(2.0, 5), (2.0, 3)];
        let fused = fuse(&bm25, &[], Fusion::Zscore, 0.4);
        assert_eq!(fused.iter().map(|f| f.doc).collect::<Vec<_>>(), [3, 5]);
        assert!(fused.iter().all(|f| (f.score - 0.5).abs() < 1e-6));
    }

    #[test]
    fn bm25_only_hits_survive_fusion() {
        let bm25 = [(3.0, 7)];
        let vector: [(f32, i32); 2] = [(0.9, 1), (0.8, 2)];
        let fused = fuse(&bm25, &vector, Fusion::Rrf, 0.5);
        assert!(fused.iter().any(|f| f.doc == 7));
    }

    #[test]
    fn equal_scores_normalise_to_one_and_ties_sort_by_doc() {
        let bm25 = [(2.0, 5), (2.0, 3)];
        let fused = fuse(&bm25, &[], Fusion::Linear, 0.3);
        assert_eq!(fused.iter().map(|f| f.doc).collect::<Vec<_>>(), [3, 5]);
        assert!((fused[0].score - 0.7).abs() < 1e-6);
    }
}
