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
//! record. Damage to the text index itself cannot be rebuilt from inside the
//! store, and is reported as such.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;

use serde::Serialize;
use tantivy::schema::Value;
use tantivy::TantivyDocument;

use super::Store;
use crate::error::Result;

/// One named check and what it found.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    /// What was checked, or what is wrong.
    pub detail: String,
    /// Damaged derived files `repair` would rebuild.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rebuildable: Vec<PathBuf>,
}

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
    /// Problems repair cannot fix (damage to the text index).
    pub unrepairable: Vec<String>,
    pub after: VerifyReport,
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
                "{} damaged file(s) in text/: {}; they hold records, which cannot be rebuilt from derived data: restore text/ from a backup",
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
            if has_vector.first(doc) == Some(1) {
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
