//! Batch search: many queries against one opened store.
//!
//! Evaluation and benchmark runs send hundreds of queries; opening the store for
//! each would measure the open, not the search. A batch reads BEIR `queries.jsonl`
//! (`{"_id", "text", "metadata"}`), optionally scopes each query to the namespace
//! named by one of its metadata fields, and returns ranked ids with the time each
//! query took.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use super::{Filters, RankOptions, SearchEngine};
use crate::error::{Error, InputError, InputErrors, Origin, Result};

/// One query of a batch.
#[derive(Debug, Clone)]
pub struct BatchQuery {
    /// The query's id (`_id`, else `id`).
    pub id: String,
    /// The query text.
    pub text: String,
    /// The query's `metadata` object (`null` when absent).
    pub metadata: Value,
}

/// The answer to one batch query.
#[derive(Debug, Clone, Serialize)]
pub struct BatchResult {
    /// The id of the query answered.
    pub query_id: String,
    /// The namespace searched; `None` for every namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Ranked ids, best first.
    pub results: Vec<RankedId>,
    /// Time the query took, in milliseconds.
    pub took_ms: f64,
}

/// One result of a batch query: an id and its score.
#[derive(Debug, Clone, Serialize)]
pub struct RankedId {
    /// The record's id.
    pub id: String,
    /// Its score (the fused score).
    pub score: f32,
    /// Records with the same (or a near-identical) text, folded into this one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub duplicates: Vec<String>,
}

/// Reads a BEIR queries file, reporting every bad line.
pub fn read_queries(path: &Path) -> Result<Vec<BatchQuery>> {
    let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let name = path.display().to_string();
    let mut queries = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let origin = Origin::line(&name, i + 1);
        match parse_query_line(line, &origin) {
            Ok(q) => queries.push(q),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(queries)
    } else {
        Err(Error::Input(InputErrors(errors)))
    }
}

fn parse_query_line(line: &[u8], origin: &Origin) -> Result<BatchQuery, InputError> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| InputError::new(origin, None, format!("invalid JSON: {e}")))?;
    let id = match value.get("_id").or_else(|| value.get("id")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => {
            return Err(InputError::new(
                origin,
                Some("_id"),
                "missing: every query needs an id",
            ))
        }
    };
    let text = match value.get("text").or_else(|| value.get("query")) {
        Some(Value::String(s)) => s.clone(),
        _ => {
            return Err(InputError::new(
                origin,
                Some("text"),
                "missing: expected the query text as a string",
            ))
        }
    };
    let metadata = value.get("metadata").cloned().unwrap_or(Value::Null);
    Ok(BatchQuery { id, text, metadata })
}

impl BatchQuery {
    /// The namespace named by `metadata.FIELD`, if the query has it.
    pub fn scope(&self, field: &str) -> Option<String> {
        match self.metadata.get(field) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        }
    }
}

/// Runs every query on one engine; `scope_field` overrides the namespace per query.
pub fn run_batch(
    engine: &SearchEngine,
    queries: &[BatchQuery],
    k: usize,
    filters: &Filters,
    rank: &RankOptions,
    scope_field: Option<&str>,
    mut on_result: impl FnMut(BatchResult) -> Result<()>,
) -> Result<()> {
    for query in queries {
        let mut filters = filters.clone();
        if let Some(field) = scope_field {
            filters.namespace = query.scope(field).or(filters.namespace);
        }
        let started = Instant::now();
        let results = if filters.tier == super::TierFilter::L2 {
            engine.search_ranked_ids(&query.text, k, &filters, rank)?
        } else {
            // Tier searches read archived records from their frames.
            let response = engine.search(&query.text, k, &filters, rank)?;
            response
                .results
                .into_iter()
                .map(|hit| RankedId {
                    id: hit.id,
                    score: hit.score,
                    duplicates: hit.duplicates,
                })
                .collect()
        };
        let took_ms = started.elapsed().as_secs_f64() * 1000.0;
        on_result(BatchResult {
            query_id: query.id.clone(),
            namespace: filters.namespace.clone(),
            results,
            took_ms,
        })?;
    }
    Ok(())
}
