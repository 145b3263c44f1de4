//! Calibrated relevance: a score that means the same for every query and store.
//!
//! A result's score is the estimated probability that it is relevant, as the
//! product of two small logistic models fitted on the dev sets' relevance
//! judgements (`scripts/fit-relevance.py`, from `eval --dump-candidates`):
//!
//! - **answerable**: does the store hold anything this query is about? Read
//!   from the best evidence any one candidate has: its cosine similarity and
//!   its normalised BM25 score (the share of the query's weight it matched,
//!   see [`QuerySignals::normalised`]), taken from the same record (with a
//!   single retriever, that retriever's best score). Fitted on the dev
//!   queries against the same number of queries from another data set (whose
//!   store holds nothing for them), so "nothing here" has examples.
//! - **relevant, if answerable**: is this candidate one of the answers? Read
//!   from its own cosine similarity and normalised BM25 score, from where it
//!   stands in each retriever's list (z-scores over the list, as z-score
//!   fusion uses them), and, with both retrievers, from how much of the query
//!   it covers next to the best-covering candidate (see [`coverage_gap`]).
//!   Fitted on every candidate of the dev queries, relevant and not, weighted
//!   so that both classes count equally.
//!
//! A candidate that holds every identifier of the query (a word with a digit,
//! code punctuation or camelCase: `E0502`, `oauth2.py`, `parseConfig`) counts
//! as answerable whatever its similarity: an exact identifier is what the
//! caller asked for, and MiniLM has no meaning for it.
//!
//! A query whose words no record holds (none of them, or only its commonest:
//! `crwth cwm llyn`, `recipe for Hungarian goulash` in a store of code
//! sessions) is answerable by meaning alone, and a middling similarity is not
//! enough for that: its answerable logit loses up to [`WORDLESS_PENALTY`] (see
//! [`wordless_penalty`]).
//!
//! A record whose own time falls on a date the query names ("on October 13,
//! 2023") has [`DATE_WEIGHT`] added to its relevance logit.
//!
//! Ranking follows the second model (the first is the same for every result of
//! a query), so the score falls with the rank. A search drops results scoring
//! under the minimum ([`DEFAULT_MIN_SCORE`]), so a query about something the
//! store does not hold gets an empty answer instead of ten confident ones.
//!
//! Each retriever combination has its own pair of models: with both sides
//! (hybrid), with BM25 alone (no embedding model, or `--mode bm25`), and with
//! vectors alone (`--mode vector`). The single-retriever models read only that
//! retriever's own score, so they rank exactly as it does and only calibrate.
//! A candidate without a vector in a hybrid search (added with `--embed
//! later`) is scored by the BM25 models, on the same probability scale.

use super::candidates::{Candidate, QuerySignals};

/// Results scoring under this are not returned unless asked for (`--all`,
/// `--min-score 0`). Chosen on the fitting halves of the dev sets (SciFact,
/// LoCoMo, the agent questions) as the highest minimum that loses at most
/// 0.005 Recall@10 on each (README, Evaluation).
pub const DEFAULT_MIN_SCORE: f32 = 0.08;

/// Added to the relevance logit of a record whose own time falls on the date
/// the query names (see [`super::dates`]). Chosen on the fitting half of the
/// LoCoMo dev questions (weights 2 to 10 tried; 3 and 4 best, 3 best on the
/// checking half; README, Evaluation). It moves a record within its query's
/// ranking; how answerable the query looks is left as it was.
pub const DATE_WEIGHT: f32 = 3.0;

/// Under this share of the query's weight matched by the best BM25 record
/// (see [`QuerySignals::normalised`]), the query's words are taken as missing
/// from the store. Every judged dev question has a best share of at least
/// 0.234 on the fitting halves (one of 1,873 on the checking halves has 0.196);
/// of the 121 hand-written negatives on the transcript store a third are under it.
pub const WORDLESS_SHARE: f32 = 0.2;

/// Taken off the answerable logit of a hybrid search whose best BM25 share is
/// zero, in proportion less up to [`WORDLESS_SHARE`] (README, Abstention).
pub const WORDLESS_PENALTY: f32 = 4.0;

/// A candidate's coverage of the query (the share of the query's IDF weight
/// in the terms it holds, see [`super::candidates::weighted_share`]) minus the best
/// coverage in the pool: 0 for the candidate that holds most of the question,
/// negative for one that misses words another holds. Relative to the pool, so
/// it orders the candidates of one query and says nothing of the query itself
/// (which the answerable model judges): as an absolute share, the fit used it
/// to tell well-covered queries from others and took weight off the cosine.
pub fn coverage_gap(coverage: f32, best_in_pool: f32) -> f32 {
    coverage - best_in_pool
}

/// What the answerable logit loses when the store holds few of the query's
/// words: `WORDLESS_PENALTY` at a best BM25 share of 0, nothing from
/// `WORDLESS_SHARE` on.
pub fn wordless_penalty(best_share: f32) -> f32 {
    WORDLESS_PENALTY * (1.0 - best_share / WORDLESS_SHARE).clamp(0.0, 1.0)
}

/// The cosine similarity the best of `records` unrelated records reaches
/// for one prompt in twenty: chance, for a store of that size.
///
/// A prompt is compared with every record, and the best of many chance
/// similarities grows with their number: an off-topic prompt's best cosine
/// over 4 records of a coding session is about 0.22 at its 95th percentile,
/// over 15,000 about 0.44. So a cosine of 0.40 is strong evidence on a new
/// user's store of one session and none on a year's. Fitted on 81 unrelated
/// prompts (`dev-sets/recall/offtopic.jsonl` and the first-day set's
/// unrelated tuning prompts) against random subsets of 2 to 15,104 dev
/// records (95th percentile of the best cosine; `ln N` fits it within 0.03;
/// docs/memory-loop.md, "Chance").
pub fn chance_cosine(records: u64) -> f32 {
    CHANCE_AT_ONE + CHANCE_PER_LN * (records.max(1) as f32).ln()
}

/// [`chance_cosine`] of one record.
pub const CHANCE_AT_ONE: f32 = 0.1886;
/// What [`chance_cosine`] grows by when the records multiply by e.
pub const CHANCE_PER_LN: f32 = 0.0283;

/// A logistic model: `1 / (1 + exp(-(w·x + bias)))`.
#[derive(Debug, Clone, Copy)]
pub struct Logistic<const N: usize> {
    /// One weight per input.
    pub weights: [f32; N],
    /// The constant term.
    pub bias: f32,
}

impl<const N: usize> Logistic<N> {
    /// `w·x + bias`: the log-odds, before the sigmoid.
    pub fn logit(&self, x: [f32; N]) -> f32 {
        self.weights.iter().zip(x).map(|(w, v)| w * v).sum::<f32>() + self.bias
    }
}

/// The two models of one retriever combination.
#[derive(Debug, Clone, Copy)]
pub struct Models<const Q: usize, const R: usize> {
    /// Probability that the query has any relevant record, from the pool's best scores.
    pub answerable: Logistic<Q>,
    /// Probability that one candidate is relevant, from its own scores.
    pub relevant: Logistic<R>,
}

// Fitted by scripts/fit-relevance.py (see its report in the README).
/// Both retrievers: answerable from (best cosine, best normalised BM25);
/// relevant from (cosine, normalised BM25, BM25 z-score, cosine z-score,
/// coverage gap).
pub const HYBRID: Models<2, 5> = Models {
    answerable: Logistic {
        weights: [38.722, 3.682],
        bias: -17.438,
    },
    relevant: Logistic {
        weights: [3.5804, 0.5967, 0.5092, 0.4640, 5.2521],
        bias: -0.8219,
    },
};

/// BM25 alone: answerable from the best normalised BM25; relevant from the
/// normalised BM25 score (so the ranking is BM25's own).
pub const BM25_ONLY: Models<1, 1> = Models {
    answerable: Logistic {
        weights: [6.0],
        bias: -3.0,
    },
    relevant: Logistic {
        weights: [2.0],
        bias: -1.0,
    },
};

/// Vectors alone: answerable from the best cosine; relevant from the cosine
/// (so the ranking is by similarity).
pub const VECTOR_ONLY: Models<1, 1> = Models {
    answerable: Logistic {
        weights: [38.0],
        bias: -17.0,
    },
    relevant: Logistic {
        weights: [5.0],
        bias: -3.0,
    },
};

/// Which retrievers produced the candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sides {
    /// BM25 and vectors.
    Both,
    /// BM25 alone.
    Bm25,
    /// Vectors alone.
    Vector,
}

/// A candidate's two factors: how answerable its query looks, and the logit
/// of its own relevance (which ranks it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibrated {
    /// How answerable the query looks, in (0, 1]; 1 when the record holds every query identifier.
    pub level: f32,
    /// Logit of the candidate's own relevance, which ranks it.
    pub logit: f32,
}

impl Calibrated {
    /// The estimated probability that the candidate is relevant, in (0, 1).
    pub fn score(&self) -> f32 {
        self.level * sigmoid(self.logit)
    }
}

/// Both factors of every candidate of one query, in pool order.
pub fn calibrate(pool: &[Candidate], query: &QuerySignals, sides: Sides) -> Vec<Calibrated> {
    let bm25_z = Standard::of(
        pool.iter()
            .filter(|c| c.bm25_rank.is_some())
            .map(|c| c.bm25),
    );
    let cosine_z = Standard::of(
        pool.iter()
            .filter(|c| c.vector_rank.is_some())
            .filter_map(|c| c.cosine),
    );
    let normalised: Vec<f32> = pool.iter().map(|c| query.normalised(c.bm25)).collect();
    let best_bm25 = normalised.iter().copied().fold(0.0f32, f32::max);
    let best_coverage = pool.iter().map(|c| c.coverage).fold(0.0f32, f32::max);
    let best_cosine = pool.iter().filter_map(|c| c.cosine).fold(0.0f32, f32::max);
    // Both signals of one record: a long message that shares a question's
    // words but not its meaning, beside another that is merely similar, is
    // no evidence that anything here answers it.
    let best_joint = pool
        .iter()
        .zip(&normalised)
        .map(|(c, &bn)| HYBRID.answerable.logit([c.cosine.unwrap_or(0.0), bn]))
        .fold(HYBRID.answerable.logit([0.0, 0.0]), f32::max);
    let answerable = |sides: Sides| match sides {
        Sides::Both => sigmoid(best_joint - wordless_penalty(best_bm25)),
        Sides::Bm25 => sigmoid(BM25_ONLY.answerable.logit([best_bm25])),
        Sides::Vector => sigmoid(VECTOR_ONLY.answerable.logit([best_cosine])),
    };
    let query_level = answerable(sides);
    // Records without a vector in a hybrid search: the BM25 models' scale.
    let bm25_level = answerable(Sides::Bm25);
    pool.iter()
        .zip(&normalised)
        .map(|(c, &bn)| {
            // A record holding every identifier of the query (`E0502`,
            // `parse_config`) is about what was asked, however the rest scores.
            let vouched = c.identifiers >= 1.0;
            let zb = bm25_z.score(c.bm25_rank.map(|_| c.bm25));
            let zv = cosine_z.score(c.vector_rank.and(c.cosine));
            let (level, logit) = match (sides, c.cosine) {
                (Sides::Both, Some(cos)) => {
                    let gap = coverage_gap(c.coverage, best_coverage);
                    (query_level, HYBRID.relevant.logit([cos, bn, zb, zv, gap]))
                }
                (Sides::Both | Sides::Bm25, _) => (
                    if sides == Sides::Bm25 {
                        query_level
                    } else {
                        bm25_level
                    },
                    BM25_ONLY.relevant.logit([bn]),
                ),
                (Sides::Vector, cos) => (
                    query_level,
                    VECTOR_ONLY.relevant.logit([cos.unwrap_or(0.0)]),
                ),
            };
            Calibrated {
                level: if vouched { 1.0 } else { level },
                logit: if c.dated { logit + DATE_WEIGHT } else { logit },
            }
        })
        .collect()
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// A list's mean and standard deviation, for z-scores; a value the list does
/// not hold gets the list's lowest z-score (it ranked below all of them).
struct Standard {
    mean: f32,
    std: f32,
    floor: f32,
}

impl Standard {
    fn of(values: impl Iterator<Item = f32> + Clone) -> Standard {
        let n = values.clone().count();
        if n == 0 {
            return Standard {
                mean: 0.0,
                std: 1.0,
                floor: 0.0,
            };
        }
        let mean = values.clone().sum::<f32>() / n as f32;
        let variance = values.clone().map(|v| (v - mean).powi(2)).sum::<f32>() / n as f32;
        let std = if variance > 0.0 { variance.sqrt() } else { 1.0 };
        let min = values.fold(f32::INFINITY, f32::min);
        Standard {
            mean,
            std,
            floor: (min - mean) / std,
        }
    }

    fn score(&self, value: Option<f32>) -> f32 {
        value.map_or(self.floor, |v| (v - self.mean) / self.std)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::DocAddress;

    fn candidate(doc: u32, bm25: f32, cosine: f32, identifiers: f32) -> Candidate {
        Candidate {
            doc: DocAddress::new(0, doc),
            bm25,
            bm25_rank: (bm25 > 0.0).then_some(doc as usize + 1),
            cosine: Some(cosine),
            vector_rank: Some(doc as usize + 1),
            identifiers,
            dated: false,
            coverage: 0.0,
        }
    }

    const QUERY: QuerySignals = QuerySignals {
        terms: 3,
        idf_sum: 10.0,
    };

    #[test]
    fn unrelated_candidates_score_under_the_minimum_and_close_ones_over_it() {
        let unrelated = [candidate(0, 1.0, 0.12, 0.0), candidate(1, 0.0, 0.08, 0.0)];
        let best = calibrate(&unrelated, &QUERY, Sides::Both)
            .iter()
            .map(Calibrated::score)
            .fold(0.0f32, f32::max);
        assert!(best < DEFAULT_MIN_SCORE, "{best}");
        let close = [candidate(0, 9.0, 0.72, 0.0), candidate(1, 2.0, 0.2, 0.0)];
        let scores: Vec<f32> = calibrate(&close, &QUERY, Sides::Both)
            .iter()
            .map(Calibrated::score)
            .collect();
        assert!(
            scores[0] > DEFAULT_MIN_SCORE && scores[0] < 1.0,
            "{scores:?}"
        );
        assert!(scores[0] > scores[1], "{scores:?}");
    }

    #[test]
    fn answerable_evidence_comes_from_one_record() {
        // The words of the query in one record, its meaning in another: less
        // evidence than one record holding both.
        let split = [candidate(0, 9.0, 0.2, 0.0), candidate(1, 0.0, 0.7, 0.0)];
        let joint = [candidate(0, 9.0, 0.7, 0.0), candidate(1, 0.0, 0.2, 0.0)];
        let level = |pool: &[Candidate]| calibrate(pool, &QUERY, Sides::Both)[0].level;
        assert!(
            level(&split) < level(&joint),
            "{} {}",
            level(&split),
            level(&joint)
        );
        assert_eq!(
            level(&joint),
            sigmoid(HYBRID.answerable.logit([0.7, QUERY.normalised(9.0)]))
        );
    }

    #[test]
    fn a_query_whose_words_no_record_holds_needs_closer_meaning() {
        let similar = |bm25: f32| [candidate(0, bm25, 0.47, 0.0), candidate(1, 0.0, 0.3, 0.0)];
        let level = |pool: &[Candidate]| calibrate(pool, &QUERY, Sides::Both)[0].level;
        // No word of the query anywhere: the similarity alone must carry it.
        let wordless = level(&similar(0.0));
        assert_eq!(
            wordless,
            sigmoid(HYBRID.answerable.logit([0.47, 0.0]) - WORDLESS_PENALTY)
        );
        // A record matching a fifth of the query's weight: no penalty.
        let worded = level(&similar(2.0));
        assert_eq!(
            worded,
            sigmoid(HYBRID.answerable.logit([0.47, QUERY.normalised(2.0)]))
        );
        assert!(wordless * 10.0 < worded, "{wordless} {worded}");
        assert_eq!(wordless_penalty(0.1), WORDLESS_PENALTY / 2.0);
        assert_eq!(wordless_penalty(0.9), 0.0);
        // BM25 and vector searches alone are calibrated as before.
        assert_eq!(
            calibrate(&similar(0.0), &QUERY, Sides::Vector)[0].level,
            sigmoid(VECTOR_ONLY.answerable.logit([0.47]))
        );
    }

    #[test]
    fn covering_more_of_the_query_ranks_higher_and_only_relative_to_the_pool() {
        let with_coverage = |a: f32, b: f32| {
            let mut pool = [candidate(0, 4.0, 0.5, 0.0), candidate(1, 4.0, 0.5, 0.0)];
            pool[0].coverage = a;
            pool[1].coverage = b;
            calibrate(&pool, &QUERY, Sides::Both)
        };
        let ranked = with_coverage(0.9, 0.4);
        assert!(ranked[0].logit > ranked[1].logit, "{ranked:?}");
        assert_eq!(ranked[0].level, ranked[1].level);
        // The best-covering candidate reads a gap of 0 however much it covers.
        assert_eq!(with_coverage(0.9, 0.4)[0], with_coverage(0.6, 0.1)[0]);
        assert_eq!(coverage_gap(0.4, 0.9), 0.4 - 0.9);
        // BM25 alone ranks as BM25 does: coverage is a hybrid input only.
        let pool = [candidate(0, 4.0, 0.5, 0.0), candidate(1, 4.0, 0.5, 0.0)];
        let mut covered = pool.clone();
        covered[0].coverage = 0.9;
        assert_eq!(
            calibrate(&pool, &QUERY, Sides::Bm25),
            calibrate(&covered, &QUERY, Sides::Bm25)
        );
    }

    #[test]
    fn a_record_holding_every_identifier_is_answerable() {
        let pool = [candidate(0, 2.0, 0.1, 1.0), candidate(1, 0.0, 0.09, 0.0)];
        let calibrated = calibrate(&pool, &QUERY, Sides::Both);
        assert_eq!(calibrated[0].level, 1.0);
        assert!(calibrated[1].level < 0.01, "{:?}", calibrated[1]);
    }
}
