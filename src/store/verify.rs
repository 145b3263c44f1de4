//! L2's part of `verify` and `repair`: checking the searchable store, and
//! rebuilding what is derived from it.
//!
//! The text index is the source of truth; everything under `vectors/` is derived
//! from it. [`l2_checks`] reads all of L2: the checksum of every file of the
//! text index, every stored record (it must decode, and its id must be unique
//! among live records), every stored embedding (the right size, and equal to its
//! row in the segment's vector file), every vector file and graph (the right
//! header and size, neighbours in bounds) and leftovers of segments that no
//! longer exist. [`remove_rebuildable`] deletes the derived files that failed,
//! for `Store::index_vectors` to build again from the stored embeddings, never
//! by re-embedding; nothing here deletes a record. A text index too damaged to
//! open is re-indexed from the segments' document stores by [`super::rescue`].
//! `crate::tiers::verify` runs these with the archive's checks.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;

use tantivy::schema::Value;
use tantivy::TantivyDocument;

use super::Store;
use crate::error::Result;

pub use crate::check::Check;

/// L2's checks: the text index's checksums, every stored record and
/// embedding, and the vector files and graphs derived from them. `progress` gets
/// (records done, records total).
pub fn l2_checks(
    store: &Store,
    searcher: &tantivy::Searcher,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Vec<Check>> {
    let total = searcher.num_docs();
    let mut checks = vec![text_checksums(store)?];
    checks.push(records_and_embeddings(store, searcher, total, progress)?);
    checks.extend(crate::vectors::verify(
        store.root(),
        searcher,
        crate::embed::DIM,
        store.config().embedding.graph_min_rows(),
    )?);
    Ok(checks)
}

/// Deletes the derived files that failed `checks`, so that
/// [`Store::index_vectors`] builds them again; returns those removed.
pub fn remove_rebuildable(checks: &[Check]) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for path in checks.iter().flat_map(|c| &c.rebuildable) {
        if fs::remove_file(path).is_ok() {
            removed.push(path.clone());
        }
    }
    removed
}

/// The vector files (`vec`) or graphs (`hnsw`) present.
pub fn count_files(store: &Store, extension: &str) -> usize {
    fs::read_dir(store.root().join("vectors")).map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == extension))
            .count()
    })
}

fn text_checksums(store: &Store) -> Result<Check> {
    let damaged =
        crate::index::damage::checksum_problems(store.index(), &store.root().join("text"), "text")?;
    let names: Vec<String> = damaged.iter().map(ToString::to_string).collect();
    Ok(Check {
        warning: false,
        name: "text index checksums",
        ok: names.is_empty(),
        detail: if names.is_empty() {
            "every file of the current commit matches its checksum".into()
        } else {
            format!(
                "{} damaged file(s): {}; `knowledge-db repair` re-indexes the records from the segments' document stores",
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
        warning: false,
        name: "records",
        ok,
        detail,
        rebuildable: Vec::new(),
    })
}

fn first(list: &[String]) -> String {
    list.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
}
