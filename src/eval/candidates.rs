//! The candidate dump: every judged query's candidates with the signals the
//! relevance model is fitted on.

use std::collections::HashMap;
use std::path::Path;

use knowledge_db::error::{Error, Result};
use knowledge_db::search::batch::BatchQuery;
use knowledge_db::search::{Filters, SearchEngine};

use super::DEPTH;

/// Writes each query's candidates (both retrievers' top [`DEPTH`]) with their
/// exact BM25 score, cosine similarity, ranks and grade, one JSON line per query.
/// A candidate is `[id, bm25, bm25_rank, cosine, vector_rank, grade,
/// predecessor's pool index, identifier share, dated (0/1), coverage]`.
pub(super) fn dump_candidates(
    engine: &SearchEngine,
    queries: &[BatchQuery],
    qrels: &HashMap<String, HashMap<String, f64>>,
    scope_field: Option<&str>,
    path: &Path,
) -> Result<()> {
    use std::io::Write;
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut out = std::io::BufWriter::new(file);
    let none = HashMap::new();
    for query in queries {
        let filters = Filters {
            namespace: scope_field.and_then(|f| query.scope(f)),
            ..Filters::default()
        };
        let (signals, pool) = engine.candidate_pool(&query.text, &filters, DEPTH)?;
        let rels = qrels.get(&query.id).unwrap_or(&none);
        let predecessors = engine.predecessors_in_pool(&pool, 0..pool.len())?;
        let mut rows = Vec::with_capacity(pool.len());
        for (i, c) in pool.iter().enumerate() {
            let id = engine.record_id(c.doc)?;
            let grade = rels.get(&id).copied().unwrap_or(0.0);
            rows.push(serde_json::json!([
                id,
                c.bm25,
                c.bm25_rank,
                c.cosine,
                c.vector_rank,
                grade,
                predecessors.get(&i),
                c.identifiers,
                u8::from(c.dated),
                c.coverage
            ]));
        }
        let line = serde_json::json!({
            "query_id": query.id,
            "text": query.text,
            "metadata": query.metadata,
            "terms": signals.terms,
            "idf_sum": signals.idf_sum,
            "relevant": rels.values().filter(|&&g| g > 0.0).count(),
            "candidates": rows,
        });
        writeln!(out, "{line}").map_err(|e| Error::io(path, e))?;
    }
    out.flush().map_err(|e| Error::io(path, e))
}
