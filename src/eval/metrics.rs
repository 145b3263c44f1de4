//! Retrieval metrics, defined as in trec_eval / BEIR.
//!
//! `rels` maps a document id to its graded relevance; grades of 0 or less are not
//! relevant. nDCG uses linear gain (the grade itself), as pytrec_eval does.

use std::collections::HashMap;

/// Normalised discounted cumulative gain of the first `k` results.
pub fn ndcg_at(k: usize, ranked: &[String], rels: &HashMap<String, f64>) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, id)| rels.get(id).copied().unwrap_or(0.0).max(0.0) / (i as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<f64> = rels.values().copied().filter(|&r| r > 0.0).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, r)| r / (i as f64 + 2.0).log2())
        .sum();
    if idcg > 0.0 {
        dcg / idcg
    } else {
        0.0
    }
}

/// Share of the relevant documents found in the first `k` results.
pub fn recall_at(k: usize, ranked: &[String], rels: &HashMap<String, f64>) -> f64 {
    let relevant = rels.values().filter(|&&r| r > 0.0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked
        .iter()
        .take(k)
        .filter(|id| rels.get(*id).is_some_and(|&r| r > 0.0))
        .count();
    found as f64 / relevant as f64
}

/// Reciprocal rank of the first relevant result within the first `k`.
pub fn mrr_at(k: usize, ranked: &[String], rels: &HashMap<String, f64>) -> f64 {
    ranked
        .iter()
        .take(k)
        .position(|id| rels.get(id).is_some_and(|&r| r > 0.0))
        .map_or(0.0, |i| 1.0 / (i as f64 + 1.0))
}

/// The `p`-th percentile (0–100) of `values`, nearest-rank on a sorted copy.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn rels(list: &[(&str, f64)]) -> HashMap<String, f64> {
        list.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn perfect_ranking_scores_one() {
        let r = rels(&[("a", 1.0), ("b", 1.0)]);
        assert!((ndcg_at(10, &ids(&["a", "b", "c"]), &r) - 1.0).abs() < 1e-12);
        assert_eq!(recall_at(2, &ids(&["a", "b"]), &r), 1.0);
        assert_eq!(mrr_at(10, &ids(&["a"]), &r), 1.0);
    }

    #[test]
    fn known_values() {
        let r = rels(&[("a", 1.0)]);
        // Relevant at rank 2: DCG = 1/log2(3), IDCG = 1.
        assert!((ndcg_at(10, &ids(&["x", "a"]), &r) - 1.0 / 3f64.log2()).abs() < 1e-12);
        assert_eq!(mrr_at(10, &ids(&["x", "y", "a"]), &r), 1.0 / 3.0);
        assert_eq!(mrr_at(2, &ids(&["x", "y", "a"]), &r), 0.0);
        let r = rels(&[("a", 1.0), ("b", 1.0), ("z", 0.0)]);
        assert_eq!(recall_at(5, &ids(&["a", "z"]), &r), 0.5);
    }

    #[test]
    fn graded_relevance_uses_linear_gain() {
        let r = rels(&[("a", 2.0), ("b", 1.0)]);
        let worse = ndcg_at(10, &ids(&["b", "a"]), &r);
        let expected = (1.0 + 2.0 / 3f64.log2()) / (2.0 + 1.0 / 3f64.log2());
        assert!((worse - expected).abs() < 1e-12);
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 95.0), 95.0);
        assert_eq!(percentile(&[3.0], 99.0), 3.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }
}
