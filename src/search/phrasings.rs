//! Several phrasings of one need, searched together.
//!
//! The words a person remembers are often not the words the session used:
//! "why did users keep getting signed out?" was stored as "the refresh token
//! expired after an hour". An agent searching for a user can try several
//! phrasings of the need: the user's own words, the names it guesses
//! (commands, files, settings, errors), the effect the work would have had.
//! Each phrasing is searched as any query is; their hits are fused by
//! reciprocal rank (RRF, `k` = [`RRF_K`]), so a record that two phrasings
//! find at ranks 3 and 4 outranks one that a single phrasing puts first, and
//! a session none of them finds first can still come out on top. A hit keeps
//! the best calibrated score any phrasing gave it (so scores keep their
//! meaning) and lists which phrasings found it.
//!
//! The CLI (`search Q --or Q2 --or Q3`), MCP `memory_search {queries: [...]}`,
//! the OpenClaw tool and the `/knowledge-db` skill all call
//! [`SearchEngine::search_phrasings`].

use std::collections::HashMap;

use super::{Filters, Hit, RankOptions, SearchEngine, SearchResponse};
use crate::error::{Error, Result};

/// Most phrasings one search takes.
pub const MAX_PHRASINGS: usize = 8;

/// RRF's constant: the rank offset that keeps one list's first place from
/// outweighing agreement between lists (the value of Cormack et al., which
/// most fusing search engines use).
pub const RRF_K: f32 = 60.0;

/// Hits each phrasing contributes: more than the `k` asked for, so a record
/// that several phrasings rank a little lower still reaches the top.
fn depth(k: usize) -> usize {
    k.saturating_mul(2).max(20)
}

impl SearchEngine {
    /// The best `k` hits for any of `phrasings` (one need, worded several
    /// ways), fused by reciprocal rank; one phrasing is a plain
    /// [`SearchEngine::search`].
    pub fn search_phrasings(
        &self,
        phrasings: &[String],
        k: usize,
        filters: &Filters,
        rank: &RankOptions,
    ) -> Result<SearchResponse> {
        let phrasings: Vec<&String> = phrasings.iter().filter(|p| !p.trim().is_empty()).collect();
        match phrasings.as_slice() {
            [] => {
                return Err(Error::Usage(
                    "no query: give words, identifiers or a question".into(),
                ))
            }
            [one] => return self.search(one, k, filters, rank),
            many if many.len() > MAX_PHRASINGS => {
                return Err(Error::Usage(format!(
                    "{} phrasings given; at most {MAX_PHRASINGS} are searched together",
                    many.len()
                )))
            }
            _ => {}
        }
        let started = std::time::Instant::now();
        let responses = phrasings
            .iter()
            .map(|q| self.search(q, depth(k), filters, rank))
            .collect::<Result<Vec<_>>>()?;
        let mut response = fuse(&responses, k);
        response.query = phrasings
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(" | ");
        response.phrasings = phrasings.iter().map(|p| p.to_string()).collect();
        response.took_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(response)
    }
}

/// The hits of `responses` (one per phrasing) fused by reciprocal rank, the
/// best `k`; the rest of the answer from the phrasings together.
fn fuse(responses: &[SearchResponse], k: usize) -> SearchResponse {
    let mut fused: HashMap<&str, (f32, Hit)> = HashMap::new();
    for (n, response) in responses.iter().enumerate() {
        for (i, hit) in response.results.iter().enumerate() {
            let share = 1.0 / (RRF_K + (i + 1) as f32);
            let entry = fused.entry(hit.id.as_str()).or_insert_with(|| {
                (
                    0.0,
                    Hit {
                        phrasings: Vec::new(),
                        ..hit.clone()
                    },
                )
            });
            entry.0 += share;
            if hit.score > entry.1.score {
                let phrasings = std::mem::take(&mut entry.1.phrasings);
                entry.1 = Hit {
                    phrasings,
                    ..hit.clone()
                };
            }
            entry.1.phrasings.push(n + 1);
        }
    }
    let mut hits: Vec<(f32, Hit)> = fused.into_values().collect();
    hits.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| b.1.score.total_cmp(&a.1.score))
            .then_with(|| a.1.id.cmp(&b.1.id))
    });
    let results: Vec<Hit> = hits
        .into_iter()
        .take(k)
        .enumerate()
        .map(|(i, (_, hit))| Hit { rank: i + 1, ..hit })
        .collect();
    let first = &responses[0];
    let mut unknown_words: Vec<String> = Vec::new();
    for word in responses.iter().flat_map(|r| &r.unknown_words) {
        if !unknown_words.contains(word) {
            unknown_words.push(word.clone());
        }
    }
    SearchResponse {
        query: String::new(),
        phrasings: Vec::new(),
        filters: first.filters.clone(),
        explanation: if results.is_empty() {
            Some(explanation(responses))
        } else {
            None
        },
        results,
        min_score: first.min_score,
        below_min_score: responses
            .iter()
            .map(|r| r.below_min_score)
            .max()
            .unwrap_or(0),
        best_score: responses
            .iter()
            .filter_map(|r| r.best_score)
            .fold(None, |b: Option<f32>, s| Some(b.map_or(s, |b| b.max(s)))),
        vector: first.vector.clone(),
        records_without_vector: first.records_without_vector,
        chance_cosine: first.chance_cosine,
        unknown_words,
        took_ms: 0.0,
    }
}

/// Why no phrasing found anything: each one's own reason, when they differ.
fn explanation(responses: &[SearchResponse]) -> String {
    let mut reasons: Vec<String> = Vec::new();
    for r in responses {
        let why = r
            .explanation
            .clone()
            .unwrap_or_else(|| "nothing matched".into());
        if !reasons.contains(&why) {
            reasons.push(why);
        }
    }
    format!(
        "none of the {} phrasings found anything: {}",
        responses.len(),
        reasons.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: &str, score: f32) -> Hit {
        crate::search::response::test_hit(id, score)
    }

    fn response(ids: &[(&str, f32)]) -> SearchResponse {
        SearchResponse {
            query: String::new(),
            phrasings: Vec::new(),
            filters: Filters::default(),
            results: ids.iter().map(|(id, s)| hit(id, *s)).collect(),
            explanation: ids.is_empty().then(|| "nothing matched".to_string()),
            min_score: 0.08,
            below_min_score: 0,
            best_score: None,
            vector: "used".into(),
            records_without_vector: None,
            chance_cosine: None,
            unknown_words: Vec::new(),
            took_ms: 1.0,
        }
    }

    #[test]
    fn what_several_phrasings_find_outranks_what_one_puts_first() {
        // Each phrasing puts its own distractor first and the target third.
        let responses = [
            response(&[("d1", 0.9), ("e1", 0.8), ("target", 0.4)]),
            response(&[("d2", 0.9), ("e2", 0.8), ("target", 0.5)]),
            response(&[("d3", 0.9), ("e3", 0.8), ("target", 0.3)]),
        ];
        let fused = fuse(&responses, 3);
        let ids: Vec<&str> = fused.results.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids[0], "target", "{ids:?}");
        let target = &fused.results[0];
        assert_eq!(target.phrasings, [1, 2, 3]);
        // The best calibrated score any phrasing gave it, and ranks from 1.
        assert_eq!(target.score, 0.5);
        assert_eq!(
            fused.results.iter().map(|h| h.rank).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(fused.results[1].phrasings.len(), 1);
    }

    #[test]
    fn nothing_found_by_any_phrasing_says_why() {
        let fused = fuse(&[response(&[]), response(&[])], 5);
        assert!(fused.results.is_empty());
        assert!(
            fused
                .explanation
                .as_deref()
                .is_some_and(|e| e.starts_with("none of the 2 phrasings")),
            "{:?}",
            fused.explanation
        );
    }
}
