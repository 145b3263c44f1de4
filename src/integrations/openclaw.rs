//! OpenClaw's memory tool shapes: `memory_search` results and `memory_get` files.
//!
//! OpenClaw's memory-core plugin answers `memory_search` with a payload of
//! results that each point at a file and a line range (`path`, `startLine`,
//! `endLine`), scored overall and per retriever (`score`, `vectorScore`,
//! `textScore`), with a snippet that ends in a `Source: path#Lstart-Lend`
//! footer and the same citation on its own. `search --format openclaw` prints
//! our results in that shape, so an OpenClaw plugin (or a person comparing the
//! two) reads them without translation.
//!
//! Records map onto it like this: a record indexed from a file (the QMD surface
//! stores `path`, `start_line`, `end_line`) keeps its file and lines; any other
//! record's `path` is its id (what `memory_get` takes) and its lines are its turn
//! range. `source` is `sessions` for conversation material (records with a
//! session) and `memory` otherwise, as OpenClaw's own sources are.

use serde::Serialize;
use serde_json::Value;

use crate::search::{Hit, SearchResponse};

/// One result, in OpenClaw's `memory_search` shape.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoryResult {
    /// The file a file-backed record came from, else the record's id.
    pub path: String,
    /// First line of the file, else first turn of the record (1 when it has none).
    pub start_line: u64,
    /// Last line of the file, else last turn of the record.
    pub end_line: u64,
    /// The hit's overall score, as the results are ranked.
    pub score: f32,
    /// Cosine similarity to the query; absent when the hit has no vector score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_score: Option<f32>,
    /// BM25 relative to the best BM25 among the results (0..1); absent without a BM25 match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_score: Option<f32>,
    /// The hit's snippet, ending in a `Source: path#Lstart-Lend` footer.
    pub snippet: String,
    /// `sessions` for conversation material (a record with a session), else `memory`.
    pub source: &'static str,
    /// `path#Lstart` or `path#Lstart-Lend`.
    pub citation: String,
    /// Always `memory`.
    pub corpus: &'static str,
}

/// Where a hit's record points: a file and lines, or the record itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The record's file, else its id.
    pub path: String,
    /// First line (1 when not stored), or first turn of a record.
    pub start_line: u64,
    /// Last line (the start when not stored), or last turn of a record.
    pub end_line: u64,
}

/// The location of a record from its stored JSON and its hit.
pub fn location(hit: &Hit, source: Option<&Value>) -> Location {
    let field = |key: &str| source.and_then(|s| s.get(key));
    let line = |key: &str| field(key).and_then(Value::as_u64);
    if let Some(path) = field("path").and_then(Value::as_str) {
        let start = line("start_line").unwrap_or(1);
        return Location {
            path: path.to_string(),
            start_line: start,
            end_line: line("end_line").unwrap_or(start),
        };
    }
    let start = hit.start_turn.unwrap_or(1);
    Location {
        path: hit.id.clone(),
        start_line: start,
        end_line: hit.end_turn.unwrap_or(start),
    }
}

/// The OpenClaw `memory_search` payload for a response. `sources` gives each
/// hit's stored JSON (in result order) so file-backed records keep their lines.
pub fn search_payload(response: &SearchResponse, sources: &[Option<Value>]) -> Value {
    // textScore is BM25 relative to the best BM25 score among the results, so it
    // lies in 0..=1 like OpenClaw's own; vectorScore is the cosine similarity.
    let best_bm25 = response
        .results
        .iter()
        .filter_map(|h| h.scores.bm25)
        .fold(0.0f32, f32::max);
    let results: Vec<MemoryResult> = response
        .results
        .iter()
        .enumerate()
        .map(|(i, hit)| {
            let source = sources.get(i).and_then(Option::as_ref);
            result(hit, &location(hit, source), best_bm25)
        })
        .collect();
    let hits = results.len();
    let mut payload = serde_json::json!({
        "results": results,
        "provider": "knowledge-db",
        "model": if response.vector == "used" { crate::embed::MODEL_ID } else { "bm25" },
        "citations": "auto",
        "debug": {
            "backend": "knowledge-db",
            "vector": response.vector,
            "searchMs": response.took_ms,
            "hits": hits,
            "minScore": response.min_score,
            "belowMinScore": response.below_min_score,
        },
    });
    // An empty answer says why (nothing relevant, with the best score seen;
    // an empty store; filters), as the model reading it should be told.
    if let Some(why) = &response.explanation {
        payload["explanation"] = serde_json::json!(why);
    }
    if let Some(best) = response.best_score {
        payload["debug"]["bestScore"] = serde_json::json!(best);
    }
    // Words no record holds: results can match only the other words or the meaning.
    if !response.unknown_words.is_empty() {
        payload["unknownWords"] = serde_json::json!(response.unknown_words);
    }
    payload
}

fn result(hit: &Hit, at: &Location, best_bm25: f32) -> MemoryResult {
    let citation = if at.start_line == at.end_line {
        format!("{}#L{}", at.path, at.start_line)
    } else {
        format!("{}#L{}-L{}", at.path, at.start_line, at.end_line)
    };
    let source = if hit.session_id.is_some() {
        "sessions"
    } else {
        "memory"
    };
    MemoryResult {
        path: at.path.clone(),
        start_line: at.start_line,
        end_line: at.end_line,
        score: hit.score,
        vector_score: hit.scores.vector,
        text_score: hit
            .scores
            .bm25
            .map(|s| if best_bm25 > 0.0 { s / best_bm25 } else { 0.0 }),
        snippet: format!("{}\n\nSource: {citation}", hit.snippet.trim()),
        source,
        citation,
        corpus: "memory",
    }
}

/// OpenClaw's `memory_get` answer: some lines of a file.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FileLines {
    /// The file's path as asked for.
    pub path: String,
    /// The lines, joined with `\n`.
    pub text: String,
    /// Whether lines remain after this page.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The first line returned (1-based), when the caller gave `from`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<usize>,
    /// Lines returned, when the caller gave `lines`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<usize>,
    /// The line to read from next, when lines remain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_from: Option<usize>,
}

/// Lines `from..from+lines` (1-based) of `text`; all from `from` when `lines` is
/// `None`. `truncated` and `nextFrom` say when lines remain after the page.
pub fn file_lines(path: &str, text: &str, from: Option<usize>, lines: Option<usize>) -> FileLines {
    let all: Vec<&str> = text.lines().collect();
    let start = from.unwrap_or(1).max(1);
    let skip = (start - 1).min(all.len());
    let take = lines.unwrap_or(usize::MAX).min(all.len() - skip);
    let end = skip + take;
    let truncated = end < all.len();
    FileLines {
        path: path.to_string(),
        text: all[skip..end].join("\n"),
        truncated,
        from: from.map(|_| start),
        lines: lines.map(|_| take),
        next_from: truncated.then_some(end + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_lines_pages_with_next_from() {
        let text = "a\nb\nc\nd\ne\n";
        let page = file_lines("m.md", text, Some(2), Some(2));
        assert_eq!(page.text, "b\nc");
        assert!(page.truncated);
        assert_eq!(page.next_from, Some(4));
        let last = file_lines("m.md", text, Some(4), Some(10));
        assert_eq!(last.text, "d\ne");
        assert!(!last.truncated);
        assert_eq!(last.next_from, None);
        assert_eq!(last.lines, Some(2));
        let whole = file_lines("m.md", text, None, None);
        assert_eq!(whole.text, "a\nb\nc\nd\ne");
        let json = serde_json::to_value(&whole).expect("json");
        assert_eq!(
            json,
            serde_json::json!({"path": "m.md", "text": "a\nb\nc\nd\ne"})
        );
        let past_end = file_lines("m.md", text, Some(99), Some(3));
        assert_eq!(past_end.text, "");
        assert!(!past_end.truncated);
    }
}
