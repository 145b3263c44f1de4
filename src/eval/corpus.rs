//! Where the documents of an evaluation come from: a BEIR `corpus.jsonl`, or
//! agent transcripts listed in `transcripts.txt`; how they are added to the
//! store; and the metadata field that scopes each query to its conversation.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use knowledge_db::embed::Embedder;
use knowledge_db::error::{Error, Result};
use knowledge_db::load::add_paths;
use knowledge_db::record::ParseOptions;
use knowledge_db::search::batch::BatchQuery;
use knowledge_db::store::Store;
use knowledge_db::transcript::ingest::{ingest, IngestOptions};

use super::times;

/// Where the documents of an evaluation come from.
pub(super) enum Corpus {
    /// A BEIR `corpus.jsonl`.
    Beir(PathBuf),
    /// Agent transcripts, ingested as `knowledge-db ingest` would.
    Transcripts(Vec<PathBuf>),
}

/// What adding a corpus took.
pub(super) struct Added {
    pub(super) records: usize,
    pub(super) seconds: f64,
    pub(super) embedded: usize,
}

impl Corpus {
    /// `transcripts.txt` when the folder has one, else `corpus.jsonl`.
    pub(super) fn of(dir: &Path) -> Result<Corpus> {
        let list = dir.join("transcripts.txt");
        if !list.is_file() {
            return Ok(Corpus::Beir(dir.join("corpus.jsonl")));
        }
        let text = std::fs::read_to_string(&list).map_err(|e| Error::io(&list, e))?;
        let mut files = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let path = dir.join(line);
            if !path.is_file() {
                return Err(Error::Usage(format!(
                    "{}:{}: no transcript at {} (the evaluation data lives in ../shared/eval beside the checkout)",
                    list.display(),
                    i + 1,
                    path.display()
                )));
            }
            files.push(path);
        }
        Ok(Corpus::Transcripts(files))
    }

    pub(super) fn add_to(
        &self,
        store: &Store,
        namespace_field: Option<String>,
        embedder: Option<&mut dyn Embedder>,
        progress: &mut dyn FnMut(&str, usize, usize),
    ) -> Result<Added> {
        let started = std::time::Instant::now();
        match self {
            Corpus::Beir(path) => {
                let copy = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
                let path = times::with_record_times(path, copy.path())?.unwrap_or(path.clone());
                let parse = ParseOptions {
                    namespace_field,
                    added_at: knowledge_db::now_rfc3339(),
                    ..ParseOptions::default()
                };
                let added = add_paths(
                    store,
                    std::slice::from_ref(&path),
                    &mut std::io::empty(),
                    &parse,
                    embedder,
                    Duration::from_secs(30),
                )?;
                Ok(Added {
                    records: added.records,
                    seconds: added.seconds,
                    embedded: added.report.embedded,
                })
            }
            Corpus::Transcripts(files) => {
                let options = IngestOptions {
                    format: None,
                    namespace: knowledge_db::record::DEFAULT_NAMESPACE.to_string(),
                    dry_run: false,
                    full: false,
                    inline_embed_max: None,
                    stop: None,
                };
                let report = ingest(
                    Some(store),
                    files,
                    &options,
                    embedder,
                    Duration::from_secs(30),
                    &mut |at| progress("ingesting", at.files_done, at.files_total),
                )?;
                let stored = report.store.unwrap_or_default();
                Ok(Added {
                    records: stored.added + stored.updated + stored.unchanged,
                    seconds: started.elapsed().as_secs_f64(),
                    embedded: stored.embedded,
                })
            }
        }
    }
}

/// A metadata field present on every query and on the corpus's first document,
/// with string values: the conversation (or project) a query belongs to.
pub(super) fn detect_scope_field(corpus: &Path, queries: &[BatchQuery]) -> Result<Option<String>> {
    let first_doc = first_json_line(corpus)?;
    let Some(doc_meta) = first_doc.get("metadata").and_then(Value::as_object) else {
        return Ok(None);
    };
    let Some(first_query) = queries.first() else {
        return Ok(None);
    };
    let Some(query_meta) = first_query.metadata.as_object() else {
        return Ok(None);
    };
    for (key, value) in query_meta {
        let shared = value.is_string() && doc_meta.get(key).is_some_and(Value::is_string);
        if shared && queries.iter().all(|q| q.scope(key).is_some()) {
            return Ok(Some(key.clone()));
        }
    }
    Ok(None)
}

pub(super) fn first_json_line(path: &Path) -> Result<Value> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(|e| Error::io(path, e))?;
        if !line.trim().is_empty() {
            return Ok(serde_json::from_str(&line).unwrap_or(Value::Null));
        }
    }
    Ok(Value::Null)
}
