//! BM25 statistics of one namespace: a search scoped to a namespace scores as
//! if the store held that namespace only.
//!
//! BM25 weighs a term by how many records hold it (its document frequency)
//! among how many records there are, and a field's length against the
//! field's average length. Taken over the whole index, those figures move
//! when another namespace adds records sharing a word, and with them every
//! score, the calibrated relevance, whether "nothing relevant" is said, the
//! order of the hits, the everyday-word weights and the coverage of a
//! query: a server confined to namespace `bob` (`mcp --namespace bob`)
//! would let its client watch `alice`'s memory grow. [`NamespaceStats`]
//! counts the namespace's live records only: records = its live records,
//! the tokens of a field = the sum of their lengths in that field (the
//! fieldnorms BM25 reads), a term's document frequency = the term's
//! postings that fall on them. Every search with a namespace filter uses it
//! (the scoped server, recall, and `search --namespace`), so a namespace is
//! ranked the same whether it shares a store or has one of its own.
//!
//! Cost: the namespace's live records are listed once per engine (one walk of
//! the namespace term's postings) and their field lengths summed once per
//! field; each term's frequency walks the shorter of its postings and the
//! namespace's list once per search (seeking in the longer one).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tantivy::query::{Bm25StatisticsProvider, Query};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::snippet::SnippetGenerator;
use tantivy::{DocId, DocSet, Searcher, Term, TERMINATED};

/// The live records of one namespace in one commit of an index.
pub(crate) struct NamespaceDocs {
    /// Per segment (by ordinal): the namespace's live docs, ascending.
    segments: Vec<Vec<DocId>>,
    /// Per segment: the same docs as bits, for walking a long posting list.
    bits: Vec<Vec<u64>>,
    count: u64,
    /// The sum of the records' lengths in each field, once asked for.
    tokens: Mutex<HashMap<Field, u64>>,
}

impl NamespaceDocs {
    /// The live records of `searcher` whose `field` (the namespace keyword) is `namespace`.
    pub(crate) fn new(
        searcher: &Searcher,
        field: Field,
        namespace: &str,
    ) -> tantivy::Result<NamespaceDocs> {
        let term = Term::from_field_text(field, namespace);
        let mut segments = Vec::with_capacity(searcher.segment_readers().len());
        let mut bits = Vec::with_capacity(segments.capacity());
        let mut count = 0u64;
        for reader in searcher.segment_readers() {
            let mut docs = Vec::new();
            let index = reader.inverted_index(field)?;
            if let Some(mut postings) = index.read_postings(&term, IndexRecordOption::Basic)? {
                let alive = reader.alive_bitset();
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        docs.push(doc);
                    }
                    doc = postings.advance();
                }
            }
            let mut set = Vec::new();
            if !docs.is_empty() {
                set = vec![0u64; (reader.max_doc() as usize).div_ceil(64)];
                for &doc in &docs {
                    set[doc as usize / 64] |= 1 << (doc % 64);
                }
            }
            count += docs.len() as u64;
            segments.push(docs);
            bits.push(set);
        }
        Ok(NamespaceDocs {
            segments,
            bits,
            count,
            tokens: Mutex::new(HashMap::new()),
        })
    }

    fn tokens(&self, searcher: &Searcher, field: Field) -> tantivy::Result<u64> {
        if let Some(&n) = self
            .tokens
            .lock()
            .ok()
            .and_then(|t| t.get(&field).copied())
            .as_ref()
        {
            return Ok(n);
        }
        let mut total = 0u64;
        for (reader, docs) in searcher.segment_readers().iter().zip(&self.segments) {
            if docs.is_empty() {
                continue;
            }
            let norms = reader.get_fieldnorms_reader(field)?;
            total += docs
                .iter()
                .map(|&d| u64::from(norms.fieldnorm(d)))
                .sum::<u64>();
        }
        if let Ok(mut tokens) = self.tokens.lock() {
            tokens.insert(field, total);
        }
        Ok(total)
    }

    fn doc_freq(&self, searcher: &Searcher, term: &Term) -> tantivy::Result<u64> {
        let mut total = 0u64;
        for (ord, reader) in searcher.segment_readers().iter().enumerate() {
            let (Some(docs), Some(bits)) = (self.segments.get(ord), self.bits.get(ord)) else {
                continue;
            };
            if docs.is_empty() {
                continue;
            }
            let index = reader.inverted_index(term.field())?;
            let Some(mut postings) = index.read_postings(term, IndexRecordOption::Basic)? else {
                continue;
            };
            if (postings.size_hint() as usize) <= docs.len() {
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if bits[doc as usize / 64] >> (doc % 64) & 1 == 1 {
                        total += 1;
                    }
                    doc = postings.advance();
                }
            } else {
                for &doc in docs {
                    let mut at = postings.doc();
                    if at < doc {
                        at = postings.seek(doc);
                    }
                    if at == TERMINATED {
                        break;
                    }
                    if at == doc {
                        total += 1;
                    }
                }
            }
        }
        Ok(total)
    }
}

/// BM25 statistics over one namespace's live records, for one search: term
/// frequencies are counted once and kept while the search runs.
pub(crate) struct NamespaceStats<'a> {
    searcher: &'a Searcher,
    docs: Arc<NamespaceDocs>,
    doc_freqs: Mutex<HashMap<Term, u64>>,
}

impl<'a> NamespaceStats<'a> {
    pub(crate) fn new(searcher: &'a Searcher, docs: Arc<NamespaceDocs>) -> Self {
        NamespaceStats {
            searcher,
            docs,
            doc_freqs: Mutex::new(HashMap::new()),
        }
    }
}

impl Bm25StatisticsProvider for NamespaceStats<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.docs.tokens(self.searcher, field)
    }

    /// At least 1, so that an empty namespace's average length is a number
    /// (nothing of it is scored anyway).
    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs.count.max(1))
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        if let Some(&n) = self
            .doc_freqs
            .lock()
            .ok()
            .and_then(|m| m.get(term).copied())
            .as_ref()
        {
            return Ok(n);
        }
        let n = self.docs.doc_freq(self.searcher, term)?;
        if let Ok(mut m) = self.doc_freqs.lock() {
            m.insert(term.clone(), n);
        }
        Ok(n)
    }
}

/// The statistics a search ranks with: the whole index's, or one namespace's.
pub(crate) enum Statistics<'a> {
    Index(&'a Searcher),
    Namespace(NamespaceStats<'a>),
}

impl Statistics<'_> {
    /// Live records counted: the index's (not its deleted ones, which
    /// BM25's own document count includes), or the namespace's.
    pub(crate) fn live_docs(&self) -> u64 {
        match self {
            Statistics::Index(s) => s.num_docs(),
            Statistics::Namespace(n) => n.docs.count,
        }
    }
}

impl Bm25StatisticsProvider for Statistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        match self {
            Statistics::Index(s) => Bm25StatisticsProvider::total_num_tokens(*s, field),
            Statistics::Namespace(n) => n.total_num_tokens(field),
        }
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        match self {
            Statistics::Index(s) => Bm25StatisticsProvider::total_num_docs(*s),
            Statistics::Namespace(n) => n.total_num_docs(),
        }
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        match self {
            Statistics::Index(s) => s.doc_freq(term),
            Statistics::Namespace(n) => n.doc_freq(term),
        }
    }
}

/// The snippet generator of [`SnippetGenerator::create`], with the query
/// terms' document frequencies (which pick the fragment shown) taken from
/// `stats` rather than the whole index.
pub(crate) fn snippet_generator(
    searcher: &Searcher,
    query: &dyn Query,
    field: Field,
    stats: &dyn Bm25StatisticsProvider,
    max_chars: usize,
) -> tantivy::Result<SnippetGenerator> {
    let mut terms: Vec<Term> = Vec::new();
    query.query_terms(&mut |term, _| {
        if term.field() == field {
            terms.push(term.clone());
        }
    });
    let mut weights = std::collections::BTreeMap::new();
    for term in terms {
        let Some(text) = term.value().as_str().map(str::to_string) else {
            continue;
        };
        let doc_freq = stats.doc_freq(&term)?;
        if doc_freq > 0 {
            weights.insert(text, 1.0 / (1.0 + doc_freq as f32));
        }
    }
    let tokenizer = searcher.index().tokenizer_for_field(field)?;
    Ok(SnippetGenerator::new(weights, tokenizer, field, max_chars))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::{HashEmbedder, DIM};
    use crate::error::Origin;
    use crate::record::{parse_record, ParseOptions, Record};
    use crate::store::Store;

    fn note(id: &str, namespace: &str, text: &str) -> Record {
        let value =
            serde_json::json!({"id": id, "namespace": namespace, "title": "", "text": text});
        parse_record(value, &Origin::file("test"), &ParseOptions::default()).expect("record")
    }

    #[test]
    fn a_namespace_counts_its_live_records_only() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = Store::init(&dir.path().join("s")).expect("init");
        let mut embedder = HashEmbedder::new(DIM);
        let wait = std::time::Duration::from_secs(5);
        let mut records = vec![
            note("b1", "bob", "parser bug"),
            note("b2", "bob", "parser rewrite done"),
            note("b3", "bob", "zebra"),
        ];
        records.extend((0..5).map(|i| note(&format!("a{i}"), "alice", "parser parser")));
        store.add(records, Some(&mut embedder), wait).expect("add");
        // Replacing b2 leaves a deleted copy in the index: not counted.
        store
            .add(
                vec![note("b2", "bob", "parser rewrite")],
                Some(&mut embedder),
                wait,
            )
            .expect("replace");
        let searcher = store.reader().expect("reader").searcher();
        let fields = store.fields();
        let docs = NamespaceDocs::new(&searcher, fields.namespace, "bob").expect("docs");
        let stats = NamespaceStats::new(&searcher, Arc::new(docs));
        let term = |t: &str| Term::from_field_text(fields.content, t);
        assert_eq!(stats.total_num_docs().expect("docs"), 3);
        // 5 alice postings, 2 of bob's: the namespace's list is walked.
        assert_eq!(stats.doc_freq(&term("parser")).expect("df"), 2);
        // 1 posting: the term's list is walked.
        assert_eq!(stats.doc_freq(&term("zebra")).expect("df"), 1);
        assert_eq!(
            stats.doc_freq(&term("done")).expect("df"),
            0,
            "deleted copy"
        );
        // parser bug (2) + parser rewrite (2) + zebra (1).
        assert_eq!(stats.total_num_tokens(fields.content).expect("tokens"), 5);
        let empty = NamespaceDocs::new(&searcher, fields.namespace, "carol").expect("docs");
        let empty = NamespaceStats::new(&searcher, Arc::new(empty));
        assert_eq!(empty.total_num_docs().expect("docs"), 1, "never 0");
        assert_eq!(empty.doc_freq(&term("parser")).expect("df"), 0);
    }
}
