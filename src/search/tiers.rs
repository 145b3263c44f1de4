//! Searching the archive: `search --tier l3|all`.
//!
//! The L3 index (`crate::archive::l3`) has the L2 schema, so the very same query (terms
//! in every field with the field boosts, and the filters) runs on both indexes.
//! To rank both tiers **on one scale**, BM25's statistics (document count,
//! average field lengths, document frequency of each term) are those of the two
//! indexes together, as if they were one; each index scores its own candidates
//! with them, and the lists merge by score. With `--tier l3` the statistics are
//! the archive's own. Archived records keep their embeddings for `restore`, but
//! their vectors are not searched: tier searches rank by BM25 alone.
//!
//! Only the top hits are read from the archive files: the L3 index gives each
//! hit's frame location, and one frame (up to 128 records, 256 KiB of JSON)
//! is read, checked and decompressed per distinct frame among the hits. An
//! archived copy whose id is live in L2 (an interrupted `archive` or `restore`)
//! is skipped: L2 wins.

use std::collections::HashMap;

use tantivy::collector::TopDocs;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::Field;
use tantivy::{DocAddress, Searcher, TantivyDocument, Term};

use super::fusion::Fused;
use super::scope::{snippet_generator, NamespaceDocs, NamespaceStats, Statistics};
use super::{hit, Filters, Hit, SearchEngine, SearchResponse, TierFilter, SNIPPET_CHARS};
use crate::archive::l3::{location_of, L3Index};
use crate::archive::{entry_in, frame, Archive, Entry, Location};
use crate::error::Result;
use crate::record::Record;

/// BM25 statistics of several indexes (or of one namespace in each) taken together.
struct Combined<'a>(Vec<Statistics<'a>>);

impl Bm25StatisticsProvider for Combined<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.0.iter().map(|s| s.total_num_tokens(field)).sum()
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.0.iter().map(|s| s.total_num_docs()).sum()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.0.iter().map(|s| s.doc_freq(term)).sum()
    }
}

/// Extra candidates asked of the archive, in case some are shadowed by L2 copies.
const SHADOW_MARGIN: usize = 8;

/// A search over the tiers `filters.tier` names, ranked by BM25 on one scale.
pub fn search(
    engine: &SearchEngine,
    query: &str,
    k: usize,
    filters: &Filters,
) -> Result<SearchResponse> {
    let started = std::time::Instant::now();
    engine.check_query(query)?;
    let (root, l2, fields) = engine.parts();
    let archive = Archive::new(root);
    let l3 = L3Index::open_existing(&archive)?;
    let l3_searcher = match &l3 {
        Some(index) => Some(index.reader()?.searcher()),
        None => None,
    };
    let with_l2 = filters.tier == TierFilter::All;
    let mut sources: Vec<Statistics> = Vec::new();
    if with_l2 {
        sources.push(engine.statistics(filters)?);
    }
    if let (Some(s), Some(index)) = (&l3_searcher, &l3) {
        // Within one namespace, the archive counts for its records only too.
        sources.push(match &filters.namespace {
            Some(ns) => Statistics::Namespace(NamespaceStats::new(
                s,
                std::sync::Arc::new(NamespaceDocs::new(s, index.fields().namespace, ns)?),
            )),
            None => Statistics::Index(s),
        });
    }
    let stats = Combined(sources);
    let terms = engine.query_terms(query);
    let text_query = engine.text_query_over(&terms, &stats);
    let filtered = engine.filtered(&*text_query, filters);
    let top = TopDocs::with_limit(k.max(1) + SHADOW_MARGIN).order_by_score();
    let mut candidates: Vec<(f32, bool, DocAddress)> = Vec::new();
    if with_l2 {
        for (score, address) in l2.search_with_statistics_provider(&*filtered, &top, &stats)? {
            candidates.push((score, false, address));
        }
    }
    if let Some(s) = &l3_searcher {
        for (score, address) in s.search_with_statistics_provider(&*filtered, &top, &stats)? {
            candidates.push((score, true, address));
        }
    }
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0));

    let lookup = crate::index::lookup::IdLookup::new(l2, fields)?;
    let snippets_of =
        |s: &Searcher| snippet_generator(s, &*text_query, fields.content, &stats, SNIPPET_CHARS);
    let l2_snippets = snippets_of(l2)?;
    let l3_snippets = match &l3_searcher {
        Some(s) => Some(snippets_of(s)?),
        None => None,
    };
    let mut frames = FrameCache::new(&archive);
    let mut results = Vec::new();
    for (score, archived, address) in candidates {
        if results.len() >= k {
            break;
        }
        let record = if archived {
            let (Some(s), Some(index)) = (&l3_searcher, &l3) else {
                continue;
            };
            match archived_record(s, index, address, &mut frames)? {
                Some(r) if lookup.find(&r.id)?.is_none() => r,
                _ => continue,
            }
        } else {
            let doc: TantivyDocument = l2.doc(address)?;
            fields.record(&doc)?
        };
        let fused = Fused {
            doc: address,
            score,
            bm25: Some((score, results.len() + 1)),
            vector: None,
        };
        let snippets = match (&l3_snippets, archived) {
            (Some(g), true) => g,
            _ => &l2_snippets,
        };
        results.push(hit(results.len() + 1, &fused, record, snippets));
    }
    in_id_order_within_ties(&mut results);
    let explanation = results.is_empty().then(|| {
        // Within one namespace, whether another namespace archived anything
        // is not told.
        if l3.is_none() && filters.namespace.is_none() {
            "nothing is archived yet (`knowledge-db archive --help`)".to_string()
        } else {
            format!(
                "no {} record matches the query and filters",
                if with_l2 {
                    "L2 or archived"
                } else {
                    "archived"
                }
            )
        }
    });
    Ok(SearchResponse {
        query: query.to_string(),
        phrasings: Vec::new(),
        filters: filters.clone(),
        results,
        explanation,
        min_score: 0.0,
        below_min_score: 0,
        best_score: None,
        vector: "off: --tier l3 and --tier all rank by BM25 alone".into(),
        chance_cosine: None,
        records_without_vector: None,
        unknown_words: Vec::new(),
        took_ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}

/// Hits of equal score in id order, ranks renumbered: the order tantivy
/// returns ties in follows the segments' layout, which other namespaces'
/// records change, and one namespace's answer must not.
fn in_id_order_within_ties(results: &mut [Hit]) {
    results.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    for (i, hit) in results.iter_mut().enumerate() {
        hit.rank = i + 1;
        hit.scores.bm25_rank = Some(i + 1);
    }
}

/// The archived record behind an L3 index hit, read from its frame.
fn archived_record(
    searcher: &Searcher,
    l3: &L3Index,
    address: DocAddress,
    frames: &mut FrameCache,
) -> Result<Option<Record>> {
    let doc: TantivyDocument = searcher.doc(address)?;
    use tantivy::schema::Value;
    let Some(id) = doc
        .get_first(l3.fields().id)
        .and_then(|v| v.as_str())
        .map(str::to_string)
    else {
        return Ok(None);
    };
    let Some(location) = location_of(searcher, l3.fields(), address)? else {
        return Ok(None);
    };
    Ok(frames.entry(&location, &id)?.map(|e| e.record))
}

/// Frames already decompressed during one search.
struct FrameCache<'a> {
    archive: &'a Archive,
    frames: HashMap<Location, Vec<u8>>,
}

impl<'a> FrameCache<'a> {
    fn new(archive: &'a Archive) -> Self {
        FrameCache {
            archive,
            frames: HashMap::new(),
        }
    }

    fn entry(&mut self, location: &Location, id: &str) -> Result<Option<Entry>> {
        if !self.frames.contains_key(location) {
            let path = self.archive.file_path(&location.file);
            // A frame gone or moved (a prune or restore committed its file but
            // not yet the index): skip the hit rather than fail the search.
            let Ok(lines) = frame::read_at(&path, location.offset) else {
                return Ok(None);
            };
            self.frames.insert(location.clone(), lines);
        }
        match self.frames.get(location) {
            Some(lines) => entry_in(lines, id),
            None => Ok(None),
        }
    }
}
