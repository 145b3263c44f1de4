//! The candidates of one search, each seen by both retrievers.
//!
//! BM25 and the vector side each return their best `depth` records; the union is
//! what fusion ranks. A record one list missed is not unknown to that side: its
//! BM25 score is computed exactly (0 when it holds none of the query's terms),
//! and so is its cosine similarity (when it has a vector). Fusion and the
//! relevance model then compare like with like, instead of guessing a missing
//! score from the bottom of a list.
//!
//! The query itself is described by [`QuerySignals`]: how many terms it has and
//! how much they would weigh in a record that holds them all, the scale against
//! which a BM25 score means "matched most of the query" or "matched a common word".

use std::collections::HashMap;

use tantivy::query::{Bm25StatisticsProvider, EnableScoring, Query};
use tantivy::schema::IndexRecordOption;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocAddress, DocId, DocSet, Searcher, Term, TERMINATED};

use crate::error::Result;

/// One record that a retriever found, with both retrievers' view of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The record's document in the text index.
    pub doc: DocAddress,
    /// BM25 score; 0 when the record matches none of the query's terms.
    pub bm25: f32,
    /// 1-based rank in BM25's list, when BM25 returned it.
    pub bm25_rank: Option<usize>,
    /// Cosine similarity of query and record, when both have a vector.
    pub cosine: Option<f32>,
    /// 1-based rank in the vector list, when the vector side returned it.
    pub vector_rank: Option<usize>,
    /// Share of the query's identifiers (see [`identifier_terms`]) the record
    /// contains; 0 when the query has none.
    pub identifiers: f32,
    /// Whether the record's own time falls on the date the query names (see
    /// [`super::dates`]); false when the query names none or the record has no time.
    pub dated: bool,
    /// Share of the query's weight (the IDF of its terms) held by the record
    /// in any text field, however often (see [`weighted_share`]); 0 until measured.
    pub coverage: f32,
}

/// What a query weighs, to put BM25 scores on a scale that means the same for
/// every query.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QuerySignals {
    /// Distinct analysed terms.
    pub terms: usize,
    /// Sum of the terms' IDF in the content field. A record holding every term
    /// once, at average length, scores about this much in that field (BM25's
    /// term-frequency factor is 1 at tf = 1 and average length), so
    /// `bm25 / idf_sum` reads as "the share of the query's weight matched".
    pub idf_sum: f32,
}

impl QuerySignals {
    /// The signals of a query from the IDF of each of its distinct terms
    /// (see [`term_idfs`]).
    pub fn from_idfs(idfs: &[f32]) -> QuerySignals {
        QuerySignals {
            terms: idfs.len(),
            idf_sum: idfs.iter().sum(),
        }
    }

    /// `bm25` as a share of the query's weight (see [`QuerySignals::idf_sum`]).
    pub fn normalised(&self, bm25: f32) -> f32 {
        if self.idf_sum > 0.0 {
            bm25 / self.idf_sum
        } else {
            0.0
        }
    }
}

/// The weight of each of `terms` in `field`: BM25's IDF with `stats` (a
/// searcher: its live records; or one namespace's, see `super::scope`) and
/// English as a background corpus (see [`super::english::Prior`];
/// [`super::english::Prior::OFF`] gives BM25's IDF alone).
pub fn term_idfs(
    stats: &dyn Bm25StatisticsProvider,
    docs: u64,
    field: tantivy::schema::Field,
    terms: &[String],
    prior: &super::english::Prior,
) -> Vec<f32> {
    terms
        .iter()
        .map(|t| {
            let df = stats
                .doc_freq(&Term::from_field_text(field, t))
                .unwrap_or(0)
                .min(docs);
            prior.idf(t, df, docs)
        })
        .collect()
}

/// The union of both lists (best first in each), keyed by record, with each
/// side's rank where it has one. Scores missing from a side are filled by
/// [`fill_bm25`] and [`Candidate::cosine`] by the caller.
pub fn union(bm25: &[(f32, DocAddress)], vector: &[(f32, DocAddress)]) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::with_capacity(bm25.len() + vector.len());
    let mut at: HashMap<DocAddress, usize> = HashMap::with_capacity(out.capacity());
    for (rank, &(score, doc)) in bm25.iter().enumerate() {
        at.insert(doc, out.len());
        out.push(Candidate {
            doc,
            bm25: score,
            bm25_rank: Some(rank + 1),
            cosine: None,
            vector_rank: None,
            identifiers: 0.0,
            dated: false,
            coverage: 0.0,
        });
    }
    for (rank, &(score, doc)) in vector.iter().enumerate() {
        match at.get(&doc) {
            Some(&i) => {
                out[i].cosine = Some(score);
                out[i].vector_rank = Some(rank + 1);
            }
            None => {
                at.insert(doc, out.len());
                out.push(Candidate {
                    doc,
                    bm25: 0.0,
                    bm25_rank: None,
                    cosine: Some(score),
                    vector_rank: Some(rank + 1),
                    identifiers: 0.0,
                    dated: false,
                    coverage: 0.0,
                });
            }
        }
    }
    out
}

/// The exact BM25 score of `text_query` (with `stats`) for each candidate
/// BM25 did not return (0 for a record that matches none of its terms).
pub fn fill_bm25(
    searcher: &Searcher,
    stats: &dyn Bm25StatisticsProvider,
    text_query: &dyn Query,
    candidates: &mut [Candidate],
) -> Result<()> {
    let missing: Vec<usize> = (0..candidates.len())
        .filter(|&i| candidates[i].bm25_rank.is_none())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let docs: Vec<DocAddress> = missing.iter().map(|&i| candidates[i].doc).collect();
    for (i, score) in missing
        .into_iter()
        .zip(scores_at(searcher, stats, text_query, &docs)?)
    {
        candidates[i].bm25 = score.unwrap_or(0.0);
    }
    Ok(())
}

/// The score `query` gives each of `docs` with `stats`, `None` where it does
/// not match: one scorer per segment, moved forward through that segment's
/// docs in order.
pub fn scores_at(
    searcher: &Searcher,
    stats: &dyn Bm25StatisticsProvider,
    query: &dyn Query,
    docs: &[DocAddress],
) -> Result<Vec<Option<f32>>> {
    let mut out = vec![None; docs.len()];
    let mut sorted: Vec<(DocAddress, usize)> = docs.iter().copied().zip(0..).collect();
    sorted.sort_by_key(|(doc, _)| *doc);
    let weight = query.weight(EnableScoring::enabled_from_statistics_provider(
        stats, searcher,
    ))?;
    let mut start = 0;
    while start < sorted.len() {
        let segment_ord = sorted[start].0.segment_ord;
        let end = start
            + sorted[start..]
                .iter()
                .take_while(|(d, _)| d.segment_ord == segment_ord)
                .count();
        let mut scorer = weight.scorer(searcher.segment_reader(segment_ord), 1.0)?;
        for &(doc, i) in &sorted[start..end] {
            let target: DocId = doc.doc_id;
            let mut current = scorer.doc();
            if current == TERMINATED {
                break;
            }
            if current < target {
                current = scorer.seek(target);
            }
            if current == target {
                out[i] = Some(scorer.score());
            }
        }
        start = end;
    }
    Ok(out)
}

/// The identifiers of a query, as the index holds them whole: words with a
/// digit and a letter (`E0502`, `oauth2`), with code punctuation (`oauth2.py`,
/// `parse_config`, `src/auth`), or in camelCase (`parseConfig`). Plain words,
/// numbers, hyphenated prose (`end-to-end`) and units or brands with a capital
/// inside (`pH`, `iOS`) are not identifiers.
pub fn identifier_terms(analyzer: &TextAnalyzer, query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query.split(|c: char| c.is_whitespace() || "()[]{}<>,;\"'`!?*=".contains(c)) {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric());
        if !is_identifier(word) {
            continue;
        }
        let mut analyzer = analyzer.clone();
        let mut stream = analyzer.token_stream(word);
        // The first token of a code word is the whole word (see `index::tokenizer`).
        if stream.advance() {
            let term = stream.token().text.clone();
            if !out.contains(&term) {
                out.push(term);
            }
        }
    }
    out
}

fn is_identifier(word: &str) -> bool {
    let letters = word.chars().any(char::is_alphabetic);
    let digits = word.chars().any(|c| c.is_ascii_digit());
    let code_punctuation = word.contains(['_', '.', '/', '\\', ':', '#', '@', '$', '~']);
    let chars: Vec<char> = word.chars().collect();
    // A capital inside a word that goes on in lower case (`parseConfig`), not
    // a unit or a brand (`pH`, `iOS`, `macOS`).
    let camel = chars
        .windows(3)
        .any(|w| w[0].is_lowercase() && w[1].is_uppercase() && w[2].is_lowercase());
    letters && (digits || code_punctuation || camel)
}

/// Per candidate, the share of `terms` (identifier terms) it contains in any
/// text field.
pub fn identifier_share(
    searcher: &Searcher,
    fields: &[tantivy::schema::Field],
    terms: &[String],
    candidates: &[Candidate],
) -> Result<Vec<f32>> {
    let equal = vec![1.0; terms.len()];
    weighted_share(searcher, fields, terms, &equal, candidates)
}

/// Per candidate, the share of `weights` (one per term) of the `terms` it
/// holds in any of `fields`; all 0 when the weights sum to nothing. Reads the
/// postings lists directly (no scoring): per segment and term, one pass
/// through the candidates of that segment in document order.
///
/// With the terms' IDF as weights this is a candidate's **coverage** of the
/// query: BM25 rewards a record that repeats one word of the query, coverage
/// one that holds all of them, the rare ones most (a question's distinctive
/// words are what its answer shares with it).
pub fn weighted_share(
    searcher: &Searcher,
    fields: &[tantivy::schema::Field],
    terms: &[String],
    weights: &[f32],
    candidates: &[Candidate],
) -> Result<Vec<f32>> {
    let mut share = vec![0.0f32; candidates.len()];
    let total: f32 = weights.iter().sum();
    if terms.is_empty() || total <= 0.0 {
        return Ok(share);
    }
    let mut sorted: Vec<(DocAddress, usize)> = candidates.iter().map(|c| c.doc).zip(0..).collect();
    sorted.sort_by_key(|(doc, _)| *doc);
    for segment in sorted.chunk_by(|a, b| a.0.segment_ord == b.0.segment_ord) {
        let reader = searcher.segment_reader(segment[0].0.segment_ord);
        let indexes = fields
            .iter()
            .map(|&field| Ok((field, reader.inverted_index(field)?)))
            .collect::<Result<Vec<_>>>()?;
        for (term, weight) in terms.iter().zip(weights) {
            let mut held = vec![false; segment.len()];
            for (field, index) in &indexes {
                let term = Term::from_field_text(*field, term);
                let postings = index
                    .read_postings(&term, IndexRecordOption::Basic)
                    .map_err(tantivy::TantivyError::from)?;
                let Some(mut postings) = postings else {
                    continue;
                };
                for (found, &(doc, _)) in held.iter_mut().zip(segment) {
                    if *found {
                        continue;
                    }
                    let mut current = postings.doc();
                    if current < doc.doc_id {
                        current = postings.seek(doc.doc_id);
                    }
                    if current == TERMINATED {
                        break;
                    }
                    *found = current == doc.doc_id;
                }
            }
            for (found, &(_, i)) in held.iter().zip(segment) {
                if *found {
                    share[i] += weight / total;
                }
            }
        }
    }
    Ok(share)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(doc: u32) -> DocAddress {
        DocAddress::new(0, doc)
    }

    #[test]
    fn union_keeps_both_ranks_and_every_record_once() {
        let bm25 = [(9.0, at(1)), (5.0, at(2))];
        let vector = [(0.8, at(2)), (0.6, at(3))];
        let pool = union(&bm25, &vector);
        assert_eq!(pool.len(), 3);
        assert_eq!(pool[1].doc, at(2));
        assert_eq!((pool[1].bm25_rank, pool[1].vector_rank), (Some(2), Some(1)));
        assert_eq!(pool[1].cosine, Some(0.8));
        assert_eq!((pool[2].bm25, pool[2].bm25_rank), (0.0, None));
        assert_eq!(pool[0].cosine, None);
    }

    #[test]
    fn identifiers_are_code_words_not_prose() {
        let analyzer = crate::index::tokenizer::analyzer();
        let terms = identifier_terms(
            &analyzer,
            "why does E0502 break parseConfig in src/auth/oauth2.py, end-to-end, in 1998?",
        );
        // The index stems a path's last word, as it stems every word.
        assert_eq!(terms, ["e0502", "parseconfig", "src/auth/oauth2.pi"]);
        assert!(identifier_terms(&analyzer, "plain words and 42 numbers").is_empty());
        assert!(is_identifier("ShutdownTimeout") && is_identifier("CCL19"));
        assert!(!is_identifier("Telemetry") && !is_identifier("short-lived"));
        assert!(!is_identifier("pH") && !is_identifier("iOS") && !is_identifier("macOS"));
    }

    #[test]
    fn idf_matches_tantivy_and_normalising_needs_weight() {
        let idf = |df, n| super::super::english::Prior::OFF.idf("term", df, n);
        assert!((idf(0, 10) - (1.0f32 + 10.5 / 0.5).ln()).abs() < 1e-6);
        assert!(
            idf(10, 10) > 0.0,
            "a term in every record still weighs a little"
        );
        let none = QuerySignals::default();
        assert_eq!(none.normalised(3.0), 0.0);
        let q = QuerySignals {
            terms: 2,
            idf_sum: 4.0,
        };
        assert_eq!(q.normalised(2.0), 0.5);
    }
}
