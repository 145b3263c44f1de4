//! Duplicates in results: one hit per text.
//!
//! Agent memory holds many copies of the same words: a session copied into a
//! checkpoint file, the same file read twice, a tool's output repeated, a
//! summary stored again under a new id. Ten copies of one text would fill the
//! top ten and hide everything else, so a search walks its ranking best first
//! and folds every candidate that repeats a hit already kept into that hit:
//! records whose embedded text is identical (the same text hash), and records
//! whose embeddings are near-identical (cosine similarity at least
//! [`NEAR_DUPLICATE`]: the same text with a timestamp, a path or a line number
//! changed). The hit keeps the best-ranked copy and says how many records it
//! stands for: the copies of its text anywhere in the store (under the
//! filters) and the near-identical candidates that folded into it.

use tantivy::collector::TopDocs;
use tantivy::query::TermQuery;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocAddress, Term};

use super::rank::RankedHit;
use super::{Filters, Hit, MAX_DUPLICATE_IDS};
use crate::error::Result;

/// Cosine similarity from which two records count as the same text: a changed
/// timestamp, id or line count moves MiniLM's embedding of a text by less than
/// this, a changed statement by more. Not yet tuned on a labelled set of pairs.
/// The synthetic vectors of `bench run --vectors sampled` (perturbed copies of
/// a sample, cosine about 0.99 to their base) fold into one another at this
/// level; the benchmark credits a hit with its folded copies.
pub const NEAR_DUPLICATE: f32 = 0.985;

/// One kept hit: the index of its best-ranked copy and of the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Index of the hit's best-ranked copy.
    pub lead: usize,
    /// Indices of its other copies, best first.
    pub copies: Vec<usize>,
}

/// Groups items `0..n` (best first) into at most `k` hits. `same(kept, item)`
/// says whether `item` repeats the kept hit `kept`. Items after the `k`-th hit
/// still join the hit they repeat, so a hit counts every copy ranked.
pub fn collapse(n: usize, k: usize, mut same: impl FnMut(usize, usize) -> bool) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::with_capacity(k.min(n));
    for item in 0..n {
        match groups.iter().position(|g| same(g.lead, item)) {
            Some(i) => groups[i].copies.push(item),
            None if groups.len() < k => groups.push(Group {
                lead: item,
                copies: Vec::new(),
            }),
            None => {}
        }
    }
    groups
}

/// Whether two records repeat each other: the same embedded text, or
/// embeddings at least [`NEAR_DUPLICATE`] alike.
pub fn same_text(
    hash_a: Option<u64>,
    hash_b: Option<u64>,
    vector_a: Option<&[f32]>,
    vector_b: Option<&[f32]>,
) -> bool {
    if hash_a.is_some() && hash_a == hash_b {
        return true;
    }
    match (vector_a, vector_b) {
        (Some(a), Some(b)) => crate::vectors::dot::dot(a, b) >= NEAR_DUPLICATE,
        _ => false,
    }
}

impl super::SearchEngine {
    /// Counts the copies a hit stands for: every record in the store (under
    /// the filters) with the same embedded text, and the near-identical
    /// candidates that folded into it.
    pub(super) fn add_copies(
        &self,
        hit: &mut Hit,
        ranked: &RankedHit,
        filters: &Filters,
    ) -> Result<()> {
        let hash = self.text_hashes(&[ranked.fused.doc])?[0];
        let mut ids: Vec<String> = Vec::new();
        let mut same_hash = 0;
        if let Some(hash) = hash {
            let query = TermQuery::new(
                Term::from_field_u64(self.fields.text_hash, hash),
                IndexRecordOption::Basic,
            );
            let query = self.filtered(
                &query,
                &Filters {
                    min_score: None,
                    ..filters.clone()
                },
            );
            let (count, docs) = self.searcher.search(
                &*query,
                &(
                    tantivy::collector::Count,
                    TopDocs::with_limit(MAX_DUPLICATE_IDS + 1).order_by_score(),
                ),
            )?;
            same_hash = count.saturating_sub(1);
            for (_, doc) in docs {
                if doc != ranked.fused.doc && ids.len() < MAX_DUPLICATE_IDS {
                    ids.push(self.id_of(doc)?);
                }
            }
        }
        let hashes = self.text_hashes(&ranked.copies)?;
        let mut near = 0;
        for (&doc, copy_hash) in ranked.copies.iter().zip(hashes) {
            if copy_hash.is_some() && copy_hash == hash {
                continue; // counted above
            }
            near += 1;
            if ids.len() < MAX_DUPLICATE_IDS {
                ids.push(self.id_of(doc)?);
            }
        }
        hit.copies = 1 + same_hash + near;
        hit.duplicates = ids;
        Ok(())
    }

    /// The text hash (of the embedded text) of each of `docs`.
    pub(super) fn text_hashes(&self, docs: &[DocAddress]) -> Result<Vec<Option<u64>>> {
        let mut columns = Vec::with_capacity(self.searcher.segment_readers().len());
        for segment in self.searcher.segment_readers() {
            columns.push(segment.fast_fields().u64("text_hash")?);
        }
        Ok(docs
            .iter()
            .map(|d| {
                columns
                    .get(d.segment_ord as usize)
                    .and_then(|c| c.first(d.doc_id))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_join_the_first_hit_and_never_take_a_place() {
        // Items 0, 2 and 4 are one text; 1 and 3 are distinct.
        let text = [7, 1, 7, 3, 7];
        let groups = collapse(5, 2, |a, b| text[a] == text[b]);
        assert_eq!(
            groups,
            [
                Group {
                    lead: 0,
                    copies: vec![2, 4]
                },
                Group {
                    lead: 1,
                    copies: vec![]
                }
            ]
        );
    }

    #[test]
    fn fewer_distinct_items_than_k() {
        let groups = collapse(3, 10, |_, _| true);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].copies, [1, 2]);
    }

    #[test]
    fn same_hash_or_near_identical_vectors() {
        let a = [1.0, 0.0];
        let b = [0.999, 0.0447];
        let c = [0.8, 0.6];
        assert!(same_text(Some(1), Some(1), None, None));
        assert!(!same_text(None, None, None, None));
        assert!(same_text(Some(1), Some(2), Some(&a), Some(&b)));
        assert!(!same_text(Some(1), Some(2), Some(&a), Some(&c)));
    }
}
