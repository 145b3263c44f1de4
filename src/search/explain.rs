//! Why a search answers what it answers: the explanation of an empty answer
//! (an empty store, a query without searchable words, no match, filters that
//! exclude every match, a minimum score nothing reaches) and the query words
//! no record holds, which results found for the rest of the query are not about.

use tantivy::query::{AllQuery, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::Term;

use super::query::whole_and_parts;
use super::{Filters, SearchEngine};
use crate::error::Result;

/// What an explanation within one namespace adds. The same words whatever
/// other namespaces hold (it says nothing about them).
const OTHER_NAMESPACES: &str = "; a search in one namespace looks at no other \
     (every namespace: `--all-namespaces`, or over MCP `namespace: \"*\"` where the server allows it)";

/// Most words [`SearchEngine::unknown_words`] reports.
pub const MAX_UNKNOWN_WORDS: usize = 10;

/// `"a", "b"`: the words as messages quote them.
pub fn quoted_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The sentence an explanation gains when some query words are held by no
/// record (empty when there are none).
pub(super) fn held_by_none(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [_] => format!("; no record holds the word {}", quoted_words(words)),
        _ => format!("; no record holds the words {}", quoted_words(words)),
    }
}

/// The explanation of an answer emptied by the minimum score.
pub(super) fn nothing_relevant(best: f32, min_score: f32) -> String {
    format!(
        "nothing relevant: the best match scores {best:.3}, under the minimum score {min_score:.2} \
         (weak matches are shown with `--all` or `--min-score 0`; over MCP, `minScore: 0`)"
    )
}

impl SearchEngine {
    /// The words of `query` (as written, at most [`MAX_UNKNOWN_WORDS`]) that
    /// hold something no searched record holds in any text field: a
    /// technology, a name or a typo the store has never seen. A word counts
    /// as held when a record holds it whole, or holds every part of it (split
    /// at punctuation and camelCase, as the index splits it): `parseConfigV2`
    /// is named when no record holds it and one of `parse`, `config`, `v2` is
    /// new, `ischaemia/reperfusion` is not when both halves are known. A
    /// search's results for such a query match its other words only, which a
    /// model reading the answer should know. (A term held only by deleted
    /// records still counts as held, so a word is never named wrongly.)
    ///
    /// With a namespace (`namespace`: the search's filter), only that
    /// namespace's records count: an answer scoped to one namespace never
    /// tells whether another namespace holds a word.
    pub fn unknown_words(&self, query: &str, namespace: Option<&str>) -> Vec<String> {
        let fields = self.fields.text_fields();
        let scope = namespace.map(Self::namespace_only);
        let held = |term: &str| {
            fields.iter().any(|(field, _)| {
                let term = Term::from_field_text(*field, term);
                match &scope {
                    None => self.searcher.doc_freq(&term).is_ok_and(|df| df > 0),
                    Some(scope) => {
                        let query = TermQuery::new(term, IndexRecordOption::Basic);
                        self.count(&*self.filtered(&query, scope))
                            .is_ok_and(|n| n > 0)
                    }
                }
            })
        };
        let mut unknown: Vec<String> = Vec::new();
        for word in query.split_whitespace() {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric());
            let Some((whole, parts)) = whole_and_parts(&self.analyzer, word) else {
                continue;
            };
            if held(&whole) || parts.iter().all(|part| held(part)) {
                continue;
            }
            if !unknown.iter().any(|w| w.eq_ignore_ascii_case(word)) {
                unknown.push(word.to_string());
            }
            if unknown.len() == MAX_UNKNOWN_WORDS {
                break;
            }
        }
        unknown
    }

    /// Filters that keep only `namespace`.
    fn namespace_only(namespace: &str) -> Filters {
        Filters {
            namespace: Some(namespace.to_string()),
            ..Filters::default()
        }
    }

    /// Why a search returned nothing: empty store, no searchable words, filters, or no match.
    ///
    /// A search in one namespace is explained as if the store held that
    /// namespace only: its counts and reasons never depend on what other
    /// namespaces hold (a server confined to a namespace, `mcp --namespace`,
    /// must not tell which words another namespace's memory holds, or how
    /// often).
    pub(super) fn explain_empty(
        &self,
        terms: &[String],
        text_query: &dyn Query,
        filters: &Filters,
    ) -> Result<String> {
        if let Some(namespace) = &filters.namespace {
            return self.explain_empty_in(namespace, terms, text_query, filters);
        }
        if self.searcher.num_docs() == 0 {
            return Ok(match self.archived_records()? {
                0 => "the store is empty: store your sessions with `knowledge-db ingest ~/.claude/projects` \
                      (and every new one with `knowledge-db hook install`), or add records with \
                      `knowledge-db add PATH`"
                    .into(),
                n => format!(
                    "no record is left in the searchable store (L2): all {n} record{} {} archived \
                     in L3; search them with `--tier all` (or `--tier l3`; over MCP, `tier: \"l3\"`), \
                     or bring them back with `knowledge-db restore`",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "is" } else { "are" },
                ),
            });
        }
        if terms.is_empty() {
            return Ok("the query has no searchable words (only punctuation or symbols)".into());
        }
        let unfiltered = self.count(text_query)?;
        if unfiltered == 0 {
            return Ok(format!(
                "no record in the store ({} records) contains any of the query's terms: {}",
                self.searcher.num_docs(),
                terms.join(", ")
            ));
        }
        self.excluded_by_filters(unfiltered, text_query, filters)
    }

    /// [`Self::explain_empty`] within one namespace: the namespace is the store.
    fn explain_empty_in(
        &self,
        namespace: &str,
        terms: &[String],
        text_query: &dyn Query,
        filters: &Filters,
    ) -> Result<String> {
        let scope = Self::namespace_only(namespace);
        let held = self.count(&*self.filtered(&AllQuery, &scope))?;
        if held == 0 {
            let archived = self.archived_records_in(namespace)?;
            if archived > 0 {
                return Ok(format!(
                    "no record of namespace `{namespace}` is left in the searchable store (L2): \
                     all {archived} record{} {} archived in L3; search them with `--tier all` \
                     (or `--tier l3`; over MCP, `tier: \"l3\"`), or bring them back with \
                     `knowledge-db restore`",
                    if archived == 1 { "" } else { "s" },
                    if archived == 1 { "is" } else { "are" },
                ));
            }
            return Ok(format!(
                "the store is empty (namespace `{namespace}` holds no record): store your sessions \
                 with `knowledge-db ingest ~/.claude/projects` (and every new one with \
                 `knowledge-db hook install`), or add records with `knowledge-db add PATH`{OTHER_NAMESPACES}"
            ));
        }
        if terms.is_empty() {
            return Ok("the query has no searchable words (only punctuation or symbols)".into());
        }
        let in_namespace = self.count(&*self.filtered(text_query, &scope))?;
        if in_namespace == 0 {
            return Ok(format!(
                "no record in namespace `{namespace}` ({held} records) contains any of the \
                 query's terms: {}{}",
                terms.join(", "),
                OTHER_NAMESPACES
            ));
        }
        let rest = Filters {
            namespace: None,
            ..filters.clone()
        };
        let scoped_query = self.filtered(text_query, &scope);
        let mut message = self.excluded_by_filters(in_namespace, &*scoped_query, &rest)?;
        message = message.replacen(
            " the query, but",
            &format!(" the query in namespace `{namespace}`, but"),
            1,
        );
        Ok(message)
    }

    /// `N records match the query, but the filters exclude all of them (…)`,
    /// with how many each filter alone keeps of the `unfiltered` matches of
    /// `text_query`.
    fn excluded_by_filters(
        &self,
        unfiltered: usize,
        text_query: &dyn Query,
        filters: &Filters,
    ) -> Result<String> {
        let mut reasons = Vec::new();
        for (flag, single) in filters.each_alone() {
            let passing = self.count(&*self.filtered(text_query, &single))?;
            reasons.push(format!("{flag} keeps {passing}"));
        }
        let message = format!(
            "{unfiltered} record{} the query, but the filters exclude all of them ({})",
            if unfiltered == 1 {
                " matches"
            } else {
                "s match"
            },
            reasons.join("; ")
        );
        Ok(message)
    }

    /// How many records of `namespace` the archive (L3) holds.
    fn archived_records_in(&self, namespace: &str) -> Result<u64> {
        let archive = crate::archive::Archive::new(&self.root);
        let Some(index) = crate::archive::l3::L3Index::open_existing(&archive)? else {
            return Ok(0);
        };
        let query = TermQuery::new(
            Term::from_field_text(index.fields().namespace, namespace),
            IndexRecordOption::Basic,
        );
        let searcher = index.reader()?.searcher();
        Ok(searcher.search(&query, &tantivy::collector::Count)? as u64)
    }

    /// How many records the archive (L3) holds.
    fn archived_records(&self) -> Result<u64> {
        let archive = crate::archive::Archive::new(&self.root);
        Ok(
            match crate::archive::l3::L3Index::open_existing(&archive)? {
                Some(index) => index.reader()?.searcher().num_docs(),
                None => 0,
            },
        )
    }
}
