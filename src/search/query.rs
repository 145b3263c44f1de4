//! The text query: from the words of a question to the BM25 query over every
//! text field, and the filters that narrow it without changing scores.
//!
//! The query text goes through the same code-aware analyzer as the records;
//! every term is looked up in every text field with that field's boost. On a
//! large store the terms most records hold are only scored, not searched for
//! ([`SearchEngine::text_query_over`]). `forget --query` matches every word
//! exactly instead ([`SearchEngine::every_word_query`]).

use tantivy::collector::TopDocs;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, EmptyQuery, Occur, Query, TermQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocAddress, Term};

use super::{filters, Filters, SearchEngine};
use crate::error::{Error, Result};
use crate::record::Record;

/// Most distinct query terms used; the rest of a very long query is ignored.
pub const MAX_QUERY_TERMS: usize = 1024;

/// When a query term counts as common (see [`SearchEngine::text_query_over`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct CommonTerms {
    share: f64,
    from_records: u64,
}

impl From<&crate::store::config::Ranking> for CommonTerms {
    fn from(ranking: &crate::store::config::Ranking) -> Self {
        CommonTerms {
            share: ranking.common_term_share,
            from_records: ranking.common_terms_from_records,
        }
    }
}

impl SearchEngine {
    pub(crate) fn check_query(&self, query: &str) -> Result<()> {
        if query.len() > self.max_query_bytes {
            return Err(Error::Usage(format!(
                "the query is {} bytes, over the limit of {} (limits.max_query_bytes in config.toml)",
                query.len(),
                self.max_query_bytes
            )));
        }
        Ok(())
    }

    /// Distinct analyzed terms of the query, in order of first appearance.
    pub(crate) fn query_terms(&self, query: &str) -> Vec<String> {
        analyze_distinct(&self.analyzer, query)
    }

    /// Every term in every text field, with the field's boost; scores add up.
    /// Document frequencies come from `stats` (one index, one namespace of
    /// it, or L2 and L3 together).
    ///
    /// Agents search with sentences ("now I'll write a failing test for the
    /// parser"), and on a store of a million records the words most of them
    /// contain (`i'll`, `the`, `for`, `test`) have posting lists of hundreds of
    /// thousands of entries each: scoring every record that holds only such
    /// words made BM25 at depth 100 take 12 ms p50 and 50-57 ms p99 at 1M
    /// records. Like Elasticsearch's common-terms query, a term in more than
    /// `common_term_share` of the records (0.1) is then only *scored*: a record
    /// must contain one of the query's other terms to be found, and its score
    /// is the same sum as before. With the store's defaults this changes
    /// nothing below `common_terms_from_records` (20,000) records, nor when
    /// every query term is common. Measured in the README (Benchmarks).
    pub(crate) fn text_query_over(
        &self,
        terms: &[String],
        stats: &dyn Bm25StatisticsProvider,
    ) -> Box<dyn Query> {
        if terms.is_empty() {
            return Box::new(EmptyQuery);
        }
        let (common, rare) = self.split_common(terms, stats);
        if common.is_empty() || rare.is_empty() {
            return Box::new(BooleanQuery::new(self.term_clauses(terms.iter(), stats)));
        }
        let rare = BooleanQuery::new(self.term_clauses(rare.into_iter(), stats));
        let common = BooleanQuery::new(self.term_clauses(common.into_iter(), stats));
        Box::new(BooleanQuery::new(vec![
            (Occur::Must, Box::new(rare) as Box<dyn Query>),
            (Occur::Should, Box::new(common)),
        ]))
    }

    /// The query terms in more than the configured share of records (by their
    /// frequency in `content`, the field every record has), and the others.
    fn split_common<'t>(
        &self,
        terms: &'t [String],
        stats: &dyn Bm25StatisticsProvider,
    ) -> (Vec<&'t String>, Vec<&'t String>) {
        let records = stats.total_num_docs().unwrap_or(0);
        if records < self.common_terms.from_records.max(1) {
            return (Vec::new(), terms.iter().collect());
        }
        let limit = self.common_terms.share * records as f64;
        terms.iter().partition(|term| {
            let term = Term::from_field_text(self.fields.content, term);
            stats.doc_freq(&term).is_ok_and(|df| df as f64 > limit)
        })
    }

    /// Each term in each text field, boosted by the field's boost and by
    /// [`SearchEngine::english_boost`].
    fn term_clauses<'t>(
        &self,
        terms: impl Iterator<Item = &'t String> + Clone,
        stats: &dyn Bm25StatisticsProvider,
    ) -> Vec<(Occur, Box<dyn Query>)> {
        let english: Vec<f32> = terms
            .clone()
            .map(|term| self.english_boost(term, stats))
            .collect();
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for ((field, _), field_boost) in self.fields.text_fields().into_iter().zip(self.boosts) {
            if field_boost <= 0.0 {
                continue;
            }
            for (term, english) in terms.clone().zip(&english) {
                let boost = field_boost * english;
                let query = TermQuery::new(
                    Term::from_field_text(field, term),
                    IndexRecordOption::WithFreqs,
                );
                let query: Box<dyn Query> = if (boost - 1.0).abs() < f32::EPSILON {
                    Box::new(query)
                } else {
                    Box::new(BoostQuery::new(Box::new(query), boost))
                };
                clauses.push((Occur::Should, query));
            }
        }
        clauses
    }

    /// What turns BM25's weight of `term` (its IDF over `stats`' records)
    /// into its weight with English as the background (see
    /// [`super::english`]): their ratio, read in the content field, the one
    /// every record has. 1 without English.
    fn english_boost(&self, term: &str, stats: &dyn Bm25StatisticsProvider) -> f32 {
        if !self.english.is_on() {
            return 1.0;
        }
        let docs = stats.total_num_docs().unwrap_or(0);
        let df = stats
            .doc_freq(&Term::from_field_text(self.fields.content, term))
            .unwrap_or(0)
            .min(docs);
        let store = super::english::Prior::OFF.idf(term, df, docs);
        if store > 0.0 {
            self.english.idf(term, df, docs) / store
        } else {
            1.0
        }
    }

    /// The best `k` records for the text query under the filters, scored
    /// with `stats`.
    pub(super) fn top_docs(
        &self,
        text_query: &dyn Query,
        filters: &Filters,
        k: usize,
        stats: &dyn Bm25StatisticsProvider,
    ) -> Result<Vec<(f32, DocAddress)>> {
        let query = self.filtered(text_query, filters);
        Ok(self.searcher.search_with_statistics_provider(
            &*query,
            &TopDocs::with_limit(k.max(1)).order_by_score(),
            stats,
        )?)
    }

    /// The text query restricted by the filters, which do not change scores.
    pub(crate) fn filtered(&self, text_query: &dyn Query, filters: &Filters) -> Box<dyn Query> {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text_query.box_clone())];
        for filter in filters::filter_queries(&self.fields, &self.analyzer, filters) {
            clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(filter, 0.0))));
        }
        if clauses.len() == 1 {
            return text_query.box_clone();
        }
        Box::new(BooleanQuery::new(clauses))
    }

    /// The filters alone as one query, or `None` when there are none.
    pub(super) fn filter_only(&self, filters: &Filters) -> Option<Box<dyn Query>> {
        let clauses: Vec<(Occur, Box<dyn Query>)> =
            filters::filter_queries(&self.fields, &self.analyzer, filters)
                .into_iter()
                .map(|q| (Occur::Must, q))
                .collect();
        (!clauses.is_empty()).then(|| Box::new(BooleanQuery::new(clauses)) as Box<dyn Query>)
    }

    /// A query for the records that hold every word of `query` in some
    /// text field (a word: its whole analysed form, or else all of its
    /// parts), whatever their score: what `forget --query` deletes, so it
    /// matches exactly, not by relevance. `None` when the query has no
    /// searchable word.
    pub fn every_word_query(&self, query: &str) -> Option<Box<dyn Query>> {
        let in_any_field = |term: &str| -> Box<dyn Query> {
            Box::new(BooleanQuery::new(
                self.fields
                    .text_fields()
                    .iter()
                    .map(|(field, _)| {
                        let q: Box<dyn Query> = Box::new(TermQuery::new(
                            Term::from_field_text(*field, term),
                            IndexRecordOption::Basic,
                        ));
                        (Occur::Should, q)
                    })
                    .collect(),
            ))
        };
        let mut words: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for word in query.split_whitespace() {
            let Some((whole, parts)) = whole_and_parts(&self.analyzer, word) else {
                continue;
            };
            let mut either: Vec<(Occur, Box<dyn Query>)> =
                vec![(Occur::Should, in_any_field(&whole))];
            if parts.len() > 1 {
                let all_parts = parts
                    .iter()
                    .map(|p| (Occur::Must, in_any_field(p)))
                    .collect();
                either.push((Occur::Should, Box::new(BooleanQuery::new(all_parts))));
            }
            words.push((Occur::Must, Box::new(BooleanQuery::new(either))));
        }
        (!words.is_empty()).then(|| Box::new(BooleanQuery::new(words)) as Box<dyn Query>)
    }

    /// Whether `record`'s own text (title, content, decisions, files,
    /// commands, errors, and its context when it has one) holds every word
    /// of `query`, as [`SearchEngine::every_word_query`] matches them.
    pub fn holds_every_word(&self, record: &Record, query: &str) -> bool {
        let mut text = record.fields.title.clone();
        text.push('\n');
        text.push_str(&record.display_text());
        if let Some(context) = &record.context {
            text.push('\n');
            text.push_str(context);
        }
        let held: std::collections::HashSet<String> = analyze_distinct(&self.analyzer, &text)
            .into_iter()
            .collect();
        query
            .split_whitespace()
            .all(|word| match whole_and_parts(&self.analyzer, word) {
                None => true,
                Some((whole, parts)) => {
                    held.contains(&whole)
                        || (parts.len() > 1 && parts.iter().all(|p| held.contains(p)))
                }
            })
    }
}

/// A word's analysed form as a whole (the first token: the tokenizer emits a
/// code word whole before its parts) and its parts (one position each, no
/// punctuation); `None` for a word with no searchable characters.
pub(super) fn whole_and_parts(
    analyzer: &TextAnalyzer,
    word: &str,
) -> Option<(String, Vec<String>)> {
    let mut analyzer = analyzer.clone();
    let mut stream = analyzer.token_stream(word);
    let mut whole = None;
    let mut parts = Vec::new();
    while let Some(token) = stream.next() {
        whole.get_or_insert_with(|| token.text.clone());
        if token.position_length == 1 && token.text.chars().all(char::is_alphanumeric) {
            parts.push(token.text.clone());
        }
    }
    whole.map(|whole| (whole, parts))
}

/// Distinct analyzed terms of `text`, in order of first appearance.
fn analyze_distinct(analyzer: &TextAnalyzer, text: &str) -> Vec<String> {
    let mut analyzer = analyzer.clone();
    let mut stream = analyzer.token_stream(text);
    let mut terms: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while let Some(token) = stream.next() {
        if terms.len() >= MAX_QUERY_TERMS {
            break;
        }
        if seen.insert(token.text.clone()) {
            terms.push(token.text.clone());
        }
    }
    terms
}
