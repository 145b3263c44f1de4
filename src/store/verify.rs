//! `verify` and `repair`: checking a store end to end, and rebuilding what is derived.
//!
//! The text index is the source of truth; everything under `vectors/` is derived
//! from it. [`verify`] reads the whole store: the checksum of every file of the
//! text index, every stored record (it must decode, and its id must be unique
//! among live records), every stored embedding (the right size, and equal to its
//! row in the segment's vector file), every vector file and graph (the right
//! header and size, neighbours in bounds) and leftovers of segments that no
//! longer exist. [`repair`] deletes the derived files that failed and builds them
//! again from the stored embeddings, never by re-embedding; it never deletes a
//! record. When the text index itself is damaged (a segment's postings, terms
//! or fast fields, or `meta.json`), [`repair_root`] re-indexes the records read
//! from the segments' document stores into a fresh index (see [`super::rescue`])
//! and says which records, if any, could not be read.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;

use serde::Serialize;
use tantivy::schema::Value;
use tantivy::TantivyDocument;

use super::rescue::{self, RescueReport};
use super::Store;
use crate::error::Result;

pub use crate::check::Check;

/// The result of `verify`.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub store: PathBuf,
    pub records: u64,
    pub ok: bool,
    pub checks: Vec<Check>,
}

/// What `repair` did.
#[derive(Debug, Clone, Serialize)]
pub struct RepairReport {
    pub removed: Vec<PathBuf>,
    /// Vector files and graphs present after the rebuild.
    pub vector_files: usize,
    pub graphs: usize,
    /// Problems repair cannot fix, and records it could not read back.
    pub unrepairable: Vec<String>,
    /// The rebuild of the text index, when it was damaged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_rebuilt: Option<RescueReport>,
    pub after: VerifyReport,
}

/// Checks the store at `root`, also when its text index is too damaged to open.
pub fn verify_root(
    root: &std::path::Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<VerifyReport> {
    let problems = rescue::problems(root);
    if problems.is_empty() {
        return verify(&Store::open(root)?, progress);
    }
    Ok(VerifyReport {
        store: root.to_path_buf(),
        records: 0,
        ok: false,
        checks: vec![Check {
            name: "text index",
            ok: false,
            detail: format!(
                "{}; the other checks need a readable text index. `knowledge-db repair` re-indexes the records from the segments' document stores",
                problems.join("; ")
            ),
            rebuildable: Vec::new(),
        }],
    })
}

/// Repairs the store at `root`: first the text index, if it is damaged (records
/// re-read from the document stores and indexed again), then everything derived.
pub fn repair_root(
    root: &std::path::Path,
    lock_timeout: std::time::Duration,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RepairReport> {
    let text_rebuilt = {
        let lock = super::lock::WriterLock::acquire(&root.join("LOCK"), lock_timeout)?;
        rescue::finish_interrupted_swap(root)?;
        if rescue::problems(root).is_empty() {
            None
        } else {
            Some(rescue::rebuild(root, &lock)?)
        }
    };
    let store = Store::open(root)?;
    let mut report = repair(&store, lock_timeout, progress)?;
    if let Some(rescued) = &text_rebuilt {
        report.unrepairable.extend(
            rescued
                .lost
                .iter()
                .map(|l| format!("record not recovered: {l}")),
        );
    }
    report.text_rebuilt = text_rebuilt;
    Ok(report)
}

/// Checks the whole store; `progress` gets (records done, records total).
pub fn verify(store: &Store, progress: &mut dyn FnMut(u64, u64)) -> Result<VerifyReport> {
    let searcher = store.reader()?.searcher();
    let total = searcher.num_docs();
    let mut checks = vec![text_checksums(store)?];
    checks.push(records_and_embeddings(store, &searcher, total, progress)?);
    checks.extend(crate::vectors::verify(
        store.root(),
        &searcher,
        crate::embed::DIM,
        store.config().embedding.graph_min_rows(),
    )?);
    checks.extend(crate::archive::verify::checks(store, &searcher)?);
    Ok(VerifyReport {
        store: store.root().to_path_buf(),
        records: total,
        ok: checks.iter().all(|c| c.ok),
        checks,
    })
}

/// Rebuilds every damaged derived file and verifies again.
pub fn repair(
    store: &Store,
    lock_timeout: std::time::Duration,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RepairReport> {
    let before = verify(store, progress)?;
    let mut removed = Vec::new();
    for path in before.checks.iter().flat_map(|c| &c.rebuildable) {
        if fs::remove_file(path).is_ok() {
            removed.push(path.clone());
        }
    }
    {
        let lock = store.lock_writer(lock_timeout)?;
        crate::archive::verify::repair(store, &lock)?;
    }
    store.index_vectors(lock_timeout)?;
    let after = verify(store, progress)?;
    let unrepairable = after
        .checks
        .iter()
        .filter(|c| !c.ok && c.rebuildable.is_empty())
        .map(|c| format!("{}: {}", c.name, c.detail))
        .collect();
    Ok(RepairReport {
        removed,
        vector_files: count_files(store, "vec"),
        graphs: count_files(store, "hnsw"),
        unrepairable,
        text_rebuilt: None,
        after,
    })
}

fn count_files(store: &Store, extension: &str) -> usize {
    fs::read_dir(store.root().join("vectors")).map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == extension))
            .count()
    })
}

fn text_checksums(store: &Store) -> Result<Check> {
    let damaged = store.index().validate_checksum()?;
    let mut names: Vec<String> = damaged.iter().map(|p| p.display().to_string()).collect();
    names.sort();
    Ok(Check {
        name: "text index checksums",
        ok: names.is_empty(),
        detail: if names.is_empty() {
            "every file of the current commit matches its checksum".into()
        } else {
            format!(
                "{} damaged file(s) in text/: {}; `knowledge-db repair` re-indexes the records from the segments' document stores",
                names.len(),
                names.join(", ")
            )
        },
        rebuildable: Vec::new(),
    })
}

/// Every live record decodes, ids are unique, embeddings have the model's size.
fn records_and_embeddings(
    store: &Store,
    searcher: &tantivy::Searcher,
    total: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Check> {
    let fields = store.fields();
    let mut ids: HashMap<String, u32> = HashMap::with_capacity(total as usize);
    let (mut done, mut bad, mut bad_vectors) = (0u64, Vec::new(), 0u64);
    for segment in searcher.segment_readers() {
        let docs = match segment.get_store_reader(64) {
            Ok(docs) => docs,
            Err(e) => {
                bad.push(format!(
                    "segment {}: {e}",
                    segment.segment_id().uuid_string()
                ));
                continue;
            }
        };
        let has_vector = segment.fast_fields().u64("has_vector")?;
        for doc in segment.doc_ids_alive() {
            done += 1;
            let stored: TantivyDocument = match docs.get(doc) {
                Ok(stored) => stored,
                Err(e) => {
                    bad.push(format!(
                        "segment {} doc {doc}: {e}",
                        segment.segment_id().uuid_string()
                    ));
                    continue;
                }
            };
            match fields.record(&stored) {
                Ok(record) => *ids.entry(record.id).or_default() += 1,
                Err(e) => bad.push(e.to_string()),
            }
            if crate::index::has_vector::carries(has_vector.first(doc)) {
                let size = stored
                    .get_first(fields.embedding)
                    .and_then(|v| v.as_bytes())
                    .map_or(0, <[u8]>::len);
                if size != crate::embed::DIM * 4 {
                    bad_vectors += 1;
                }
            }
            if done.is_multiple_of(10_000) {
                progress(done, total);
            }
        }
    }
    progress(done, total);
    let duplicates: Vec<&String> = ids
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| id)
        .collect();
    let ok = bad.is_empty() && duplicates.is_empty() && bad_vectors == 0;
    let detail = if ok {
        format!(
            "{done} records decode, ids unique, embeddings {} values",
            crate::embed::DIM
        )
    } else {
        let mut parts = Vec::new();
        if !bad.is_empty() {
            parts.push(format!(
                "{} record(s) do not decode: {}",
                bad.len(),
                first(&bad)
            ));
        }
        if !duplicates.is_empty() {
            parts.push(format!(
                "{} id(s) stored twice, e.g. {}",
                duplicates.len(),
                duplicates[0]
            ));
        }
        if bad_vectors > 0 {
            parts.push(format!(
                "{bad_vectors} stored embedding(s) of the wrong size"
            ));
        }
        parts.join("; ")
    };
    Ok(Check {
        name: "records",
        ok,
        detail,
        rebuildable: Vec::new(),
    })
}

fn first(list: &[String]) -> String {
    list.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
}
