//! The vector side of search: embeddings laid out for fast similarity scans.
//!
//! Each record's embedding is stored in the text index with the record itself (so
//! a commit holds both, and nothing is lost if this folder is). For search, each
//! tantivy segment gets a flat file `vectors/<segment-id>.vec`: one row of `dim`
//! little-endian f32 per document, row = tantivy doc id. Segments never change
//! once written, so neither do these files: a file is either there and right, or
//! missing and rebuilt from the stored embeddings (never by re-embedding). Deletes
//! and upserts need nothing here: tantivy's alive set says which rows count.
//! A segment none of whose records has a vector (a BM25-only store, records
//! added with `--embed later`) has no file at all.
//!
//! Files are memory-mapped, so a one-shot search reads only the pages it touches.
//! Small segments are scanned exactly (measured by `examples/vector_scan.rs` at
//! 100k records: 14 ms p50 unfiltered, 0.4 ms with a filter that keeps 1%).
//! Large segments also get an HNSW graph ([`graph`]) that is walked instead; a
//! filter too selective for the walk falls back to the exact scan of the records
//! it keeps, so a selective filter always returns its k best, never fewer.

pub mod dot;
pub mod graph;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::query::Query;
use tantivy::schema::Value;
use tantivy::{DocAddress, DocId, Score, Searcher, SegmentOrdinal, SegmentReader, TantivyDocument};

use crate::error::{Error, Result};
use crate::index::{embedding_from_bytes as decode, IndexFields};
use dot::dot_le;
use graph::Graph;

const MAGIC: &[u8; 4] = b"KDBV";
const HEADER: usize = 16;
const FORMAT: u32 = 1;

/// The vector rows of one segment, and its graph when it has one.
struct SegmentVectors {
    map: Mmap,
    dim: usize,
    graph: Option<Graph>,
}

impl SegmentVectors {
    fn row(&self, doc: DocId) -> Option<&[u8]> {
        let start = HEADER + doc as usize * self.dim * 4;
        self.map.get(start..start + self.dim * 4)
    }

    /// Similarity of `query` to `doc`'s vector (None for a doc without one).
    fn similarity(&self, query: &[f32], doc: DocId) -> Option<f32> {
        self.row(doc).map(|row| dot_le(query, row))
    }
}

/// Memory-mapped vectors of every segment of one searcher (`None` for a
/// segment none of whose records has a vector: it has no file).
pub struct VectorIndex {
    segments: Vec<Option<SegmentVectors>>,
    dim: usize,
}

/// How many live records have vectors, and how many still wait for one.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, PartialEq, Eq)]
pub struct Coverage {
    /// Records with a vector, drafts included.
    pub with_vector: u64,
    /// Records with no vector yet (added with `--embed later`, or with no model).
    pub without_vector: u64,
    /// Records whose vector is a draft (see `crate::index::has_vector::DRAFT`).
    pub drafts: u64,
}

impl VectorIndex {
    /// Opens the vector files of `searcher`'s segments, building any that are missing.
    pub fn open(
        root: &Path,
        searcher: &Searcher,
        fields: &IndexFields,
        dim: usize,
    ) -> Result<VectorIndex> {
        let dir = root.join("vectors");
        let mut segments = Vec::with_capacity(searcher.segment_readers().len());
        for segment in searcher.segment_readers() {
            let Some(path) = ensure_segment_file(&dir, segment, fields, dim)? else {
                segments.push(None);
                continue;
            };
            let file = fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
            // SAFETY: vector files are written to a temporary name and renamed into
            // place complete; nothing ever writes to them afterwards.
            let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(&path, e))?;
            let graph = Graph::open(&graph_file(&dir, segment), dim, segment.max_doc());
            segments.push(Some(SegmentVectors { map, dim, graph }));
        }
        Ok(VectorIndex { segments, dim })
    }

    /// Dimensions of every vector in the index.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The `k` live documents most similar to `query`, optionally only among those
    /// matching `filter`.
    pub fn search(
        &self,
        searcher: &Searcher,
        query: &[f32],
        filter: Option<&dyn Query>,
        k: usize,
    ) -> Result<Vec<(f32, DocAddress)>> {
        if query.len() != self.dim {
            return Err(Error::Usage(format!(
                "query vector has {} dimensions, the store's vectors have {}",
                query.len(),
                self.dim
            )));
        }
        let filtered = match filter {
            Some(q) => Some(searcher.search(q, &SegmentDocs)?),
            None => None,
        };
        let mut scored: Vec<(f32, DocAddress)> = Vec::new();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let Some(Some(vectors)) = self.segments.get(ord) else {
                continue;
            };
            let allowed = match &filtered {
                Some(per_segment) => Allowed::Docs(docs_of(per_segment, ord as SegmentOrdinal)),
                None => Allowed::Alive,
            };
            let found = search_segment(segment, vectors, query, &allowed, k)?;
            scored.extend(
                found
                    .into_iter()
                    .map(|(s, doc)| (s, DocAddress::new(ord as SegmentOrdinal, doc))),
            );
        }
        Ok(top_k(scored, k))
    }

    /// The similarity of `query` to each of `docs` (`None` for a record without
    /// a vector). Fusion and calibration use it for candidates the vector
    /// search did not return, so every candidate is scored on both sides.
    pub fn similarities(
        &self,
        searcher: &Searcher,
        query: &[f32],
        docs: &[DocAddress],
    ) -> Result<Vec<Option<f32>>> {
        if query.len() != self.dim {
            return Ok(vec![None; docs.len()]);
        }
        Ok(self
            .rows(searcher, docs)?
            .into_iter()
            .map(|row| row.map(|row| dot_le(query, row)))
            .collect())
    }

    /// The stored vector of each of `docs` (`None` for a record without one),
    /// for comparing results with each other.
    pub fn vectors_of(
        &self,
        searcher: &Searcher,
        docs: &[DocAddress],
    ) -> Result<Vec<Option<Vec<f32>>>> {
        Ok(self
            .rows(searcher, docs)?
            .into_iter()
            .map(|row| row.and_then(|row| decode(row, self.dim)))
            .collect())
    }

    /// The vector row of each of `docs`, `None` for a record without a vector.
    fn rows(&self, searcher: &Searcher, docs: &[DocAddress]) -> Result<Vec<Option<&[u8]>>> {
        let mut has_vector = Vec::with_capacity(searcher.segment_readers().len());
        for segment in searcher.segment_readers() {
            has_vector.push(segment.fast_fields().u64("has_vector")?);
        }
        Ok(docs
            .iter()
            .map(|address| {
                let ord = address.segment_ord as usize;
                let with_vector = has_vector.get(ord).is_some_and(|column| {
                    crate::index::has_vector::carries(column.first(address.doc_id))
                });
                match self.segments.get(ord) {
                    Some(Some(vectors)) if with_vector => vectors.row(address.doc_id),
                    _ => None,
                }
            })
            .collect())
    }

    /// How many segments have a graph, out of all.
    pub fn graphs(&self) -> (usize, usize) {
        let with = self
            .segments
            .iter()
            .filter(|s| s.as_ref().is_some_and(|s| s.graph.is_some()))
            .count();
        (with, self.segments.len())
    }
}

/// Which docs of a segment a search may return.
enum Allowed<'a> {
    /// Every live doc.
    Alive,
    /// Only these (live, sorted) docs, the matches of a filter.
    Docs(&'a [DocId]),
}

fn docs_of(per_segment: &[(SegmentOrdinal, Vec<DocId>)], ord: SegmentOrdinal) -> &[DocId] {
    per_segment
        .iter()
        .find(|(o, _)| *o == ord)
        .map_or(&[][..], |(_, docs)| docs.as_slice())
}

/// The best `k` allowed docs of one segment: a graph walk when the segment has a
/// graph and the filter leaves enough docs for a walk to find them cheaply, else
/// an exact scan.
fn search_segment(
    segment: &SegmentReader,
    vectors: &SegmentVectors,
    query: &[f32],
    allowed: &Allowed,
    k: usize,
) -> Result<Vec<(f32, DocId)>> {
    let has_vector = segment.fast_fields().u64("has_vector")?;
    let with_vector = |doc: DocId| crate::index::has_vector::carries(has_vector.first(doc));
    let rows = segment.max_doc() as usize;
    if let Some(graph) = &vectors.graph {
        let ef = graph::EF_SEARCH.max(k);
        let similarity = |doc: DocId| vectors.similarity(query, doc);
        let walked = match allowed {
            Allowed::Alive => {
                let alive = segment.alive_bitset();
                let keep = |doc: DocId| alive.is_none_or(|a| a.is_alive(doc));
                Some(graph.search(similarity, keep, ef, rows))
            }
            Allowed::Docs(docs) if walk_pays(docs.len(), rows, ef) => {
                let bits = DocBits::new(docs, rows);
                // A walk through a filter keeping a share s of the docs expands
                // about ef / s nodes before it has ef results.
                let budget = (4 * ef * rows / docs.len().max(1)).min(rows);
                Some(graph.search(similarity, |doc| bits.contains(doc), ef, budget))
            }
            Allowed::Docs(_) => None,
        };
        if let Some(found) = walked.filter(|f| f.len() >= k.min(allowed_len(allowed, segment))) {
            return Ok(found.into_iter().take(k).collect());
        }
    }
    let docs: Box<dyn Iterator<Item = DocId>> = match allowed {
        Allowed::Alive => Box::new(segment.doc_ids_alive()),
        Allowed::Docs(docs) => Box::new(docs.iter().copied()),
    };
    let scored: Vec<(f32, DocAddress)> = docs
        .filter(|&doc| with_vector(doc))
        .filter_map(|doc| {
            vectors
                .similarity(query, doc)
                .map(|s| (s, DocAddress::new(0, doc)))
        })
        .collect();
    Ok(top_k(scored, k)
        .into_iter()
        .map(|(s, a)| (s, a.doc_id))
        .collect())
}

/// Whether walking the graph under a filter keeping `kept` of `rows` docs is
/// cheaper than scanning the kept docs: a scan costs `kept` dot products, a walk
/// about `ef / share` expansions of ~32 neighbours each. They cross where
/// `kept² = 32·ef·rows`.
fn walk_pays(kept: usize, rows: usize, ef: usize) -> bool {
    (kept as f64) * (kept as f64) >= 32.0 * ef as f64 * rows as f64
}

/// How many docs a search of this segment could return at most.
fn allowed_len(allowed: &Allowed, segment: &SegmentReader) -> usize {
    match allowed {
        Allowed::Alive => segment.num_docs() as usize,
        Allowed::Docs(docs) => docs.len(),
    }
}

/// A set of doc ids as bits, for constant-time membership during a walk.
struct DocBits(Vec<u64>);

impl DocBits {
    fn new(docs: &[DocId], rows: usize) -> DocBits {
        let mut bits = vec![0u64; rows.div_ceil(64)];
        for &doc in docs {
            if let Some(word) = bits.get_mut(doc as usize / 64) {
                *word |= 1 << (doc % 64);
            }
        }
        DocBits(bits)
    }

    fn contains(&self, doc: DocId) -> bool {
        self.0
            .get(doc as usize / 64)
            .is_some_and(|w| w >> (doc % 64) & 1 == 1)
    }
}

/// Counts live records with and without vectors.
pub fn coverage(searcher: &Searcher) -> Result<Coverage> {
    coverage_in(searcher, None)
}

/// [`coverage`] of the live records of `namespace` (all when `None`).
pub fn coverage_in(searcher: &Searcher, namespace: Option<&str>) -> Result<Coverage> {
    let mut coverage = Coverage::default();
    for segment in searcher.segment_readers() {
        let Some(wanted) = crate::index::in_namespace(segment, namespace)? else {
            continue;
        };
        let has_vector = segment.fast_fields().u64("has_vector")?;
        for doc in segment.doc_ids_alive().filter(|&doc| wanted(doc)) {
            let value = has_vector.first(doc);
            if crate::index::has_vector::carries(value) {
                coverage.with_vector += 1;
                coverage.drafts += u64::from(value == Some(crate::index::has_vector::DRAFT));
            } else {
                coverage.without_vector += 1;
            }
        }
    }
    Ok(coverage)
}

/// Builds the files of new segments (and the graphs of large ones) and removes
/// those of segments that are gone. Writers call it after a commit; readers build
/// missing `.vec` files on open but never graphs (a build takes seconds to
/// minutes; without a graph a segment is scanned exactly).
pub fn sync(
    root: &Path,
    searcher: &Searcher,
    fields: &IndexFields,
    dim: usize,
    graph_min_rows: u32,
) -> Result<()> {
    let dir = root.join("vectors");
    let mut live = Vec::new();
    for segment in searcher.segment_readers() {
        let Some(vec_path) = ensure_segment_file(&dir, segment, fields, dim)? else {
            continue;
        };
        live.push(vec_path.clone());
        if let Some(graph_path) = ensure_graph(&dir, segment, &vec_path, dim, graph_min_rows)? {
            live.push(graph_path);
        }
    }
    if let Ok(entries) = fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            let ours = path.extension().is_some_and(|e| e == "vec" || e == "hnsw");
            if ours && !live.contains(&path) {
                let _ = fs::remove_file(&path);
            }
        }
    }
    Ok(())
}

/// The segment's graph, built if the segment has enough vectors and no valid
/// graph yet; `None` for a segment too small to need one.
fn ensure_graph(
    dir: &Path,
    segment: &SegmentReader,
    vec_path: &Path,
    dim: usize,
    min_rows: u32,
) -> Result<Option<PathBuf>> {
    let path = graph_file(dir, segment);
    if Graph::open(&path, dim, segment.max_doc()).is_some() {
        return Ok(Some(path));
    }
    let has_vector = segment.fast_fields().u64("has_vector")?;
    let docs: Vec<DocId> = segment
        .doc_ids_alive()
        .filter(|&doc| crate::index::has_vector::carries(has_vector.first(doc)))
        .collect();
    if docs.len() < min_rows as usize {
        return Ok(None);
    }
    let file = fs::File::open(vec_path).map_err(|e| Error::io(vec_path, e))?;
    // SAFETY: as in `VectorIndex::open`: vector files never change once renamed in.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(vec_path, e))?;
    let rows = SegmentVectors {
        map,
        dim,
        graph: None,
    };
    graph::build(&path, dim, segment.max_doc(), &docs, |doc| {
        rows.row(doc).and_then(|r| decode(r, dim))
    })?;
    Ok(Some(path))
}

/// How many graph files the store's `vectors/` folder holds.
pub fn graph_count(root: &Path) -> usize {
    fs::read_dir(root.join("vectors")).map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "hnsw"))
            .count()
    })
}

/// Checks every segment's vector file (header, size, and each stored embedding
/// equal to its row), its graph when the segment is large enough to need one,
/// and files left by segments that no longer exist.
pub fn verify(
    root: &Path,
    searcher: &Searcher,
    dim: usize,
    graph_min_rows: u32,
) -> Result<Vec<crate::check::Check>> {
    use crate::check::Check;
    let dir = root.join("vectors");
    let fields = IndexFields::from_schema(&searcher.schema().clone())?;
    let (mut bad_files, mut mismatched_rows, mut missing) = (Vec::new(), 0u64, 0usize);
    let (mut bad_graphs, mut missing_graphs, mut graphs) = (Vec::new(), 0usize, 0usize);
    let mut live = Vec::new();
    for segment in searcher.segment_readers() {
        let path = segment_file(&dir, segment);
        live.push(path.clone());
        let graph_path = graph_file(&dir, segment);
        live.push(graph_path.clone());
        if !path.exists() {
            if has_any_vector(segment)? {
                missing += 1;
            }
        } else if !header_matches(&path, dim, segment.max_doc())
            || fs::metadata(&path).map_or(0, |m| m.len())
                != (HEADER + segment.max_doc() as usize * dim * 4) as u64
        {
            bad_files.push(path.clone());
        } else {
            let rows = rows_differing(&path, segment, &fields, dim)?;
            if rows > 0 {
                mismatched_rows += rows;
                bad_files.push(path.clone());
            }
        }
        let has_vector = segment.fast_fields().u64("has_vector")?;
        let with_vectors = segment
            .doc_ids_alive()
            .filter(|&d| crate::index::has_vector::carries(has_vector.first(d)))
            .count();
        if graph_path.exists() {
            graphs += 1;
            let sound = Graph::open(&graph_path, dim, segment.max_doc())
                .is_some_and(|g| g.links_in_bounds());
            if !sound {
                bad_graphs.push(graph_path);
            }
        } else if with_vectors >= graph_min_rows as usize {
            missing_graphs += 1;
        }
    }
    let orphans: Vec<PathBuf> = fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let ours = p.extension().is_some_and(|e| e == "vec" || e == "hnsw");
                    (ours && !live.contains(p)) || is_stale_temporary(p)
                })
                .collect()
        })
        .unwrap_or_default();
    let segments = searcher.segment_readers().len();
    let vector_ok = bad_files.is_empty() && missing == 0;
    let mut vector_detail = if vector_ok {
        format!("{segments} segment vector file(s) match the stored embeddings")
    } else {
        format!(
            "{} damaged, {missing} missing of {segments} vector files ({mismatched_rows} row(s) differ from the stored embeddings); `knowledge-db repair` rebuilds them from the stored embeddings",
            bad_files.len()
        )
    };
    if !orphans.is_empty() {
        vector_detail.push_str(&format!(
            "; {} file(s) of removed segments or killed writes",
            orphans.len()
        ));
    }
    let graph_ok = bad_graphs.is_empty() && missing_graphs == 0;
    let graph_detail = if graph_ok {
        format!(
            "{graphs} graph(s) sound; segments under {graph_min_rows} vectors are scanned exactly"
        )
    } else {
        format!(
            "{} damaged, {missing_graphs} missing graph(s) (search scans those segments exactly); `knowledge-db repair` rebuilds them",
            bad_graphs.len()
        )
    };
    let mut rebuild_vectors = bad_files;
    rebuild_vectors.extend(orphans);
    Ok(vec![
        Check {
            warning: false,
            name: "vector files",
            ok: vector_ok && rebuild_vectors.is_empty(),
            detail: vector_detail,
            rebuildable: rebuild_vectors,
        },
        Check {
            warning: false,
            name: "vector graphs",
            ok: graph_ok,
            detail: graph_detail,
            rebuildable: bad_graphs,
        },
    ])
}

/// A temporary file left by a process killed while writing a vector file or a
/// graph. Young ones may belong to a process still writing, so only files older
/// than a minute count.
fn is_stale_temporary(path: &Path) -> bool {
    let temporary = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(".tmp"));
    let age = fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok());
    temporary && age.is_some_and(|a| a > std::time::Duration::from_secs(60))
}

/// Rows of a vector file that differ from the stored embeddings they copy.
fn rows_differing(
    path: &Path,
    segment: &SegmentReader,
    fields: &IndexFields,
    dim: usize,
) -> Result<u64> {
    let file = fs::File::open(path).map_err(|e| Error::io(path, e))?;
    // SAFETY: as in `VectorIndex::open`.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    let rows = SegmentVectors {
        map,
        dim,
        graph: None,
    };
    let store = segment
        .get_store_reader(64)
        .map_err(|e| Error::io(path, e))?;
    let zeros = vec![0u8; dim * 4];
    let mut differing = 0;
    for doc in 0..segment.max_doc() {
        // An unreadable document is reported by the records check.
        let Ok(stored) = store.get::<TantivyDocument>(doc) else {
            continue;
        };
        let expected = stored
            .get_first(fields.embedding)
            .and_then(|v| v.as_bytes())
            .filter(|b| b.len() == dim * 4)
            .unwrap_or(&zeros);
        if rows.row(doc) != Some(expected) {
            differing += 1;
        }
    }
    Ok(differing)
}

fn graph_file(dir: &Path, segment: &SegmentReader) -> PathBuf {
    dir.join(format!("{}.hnsw", segment.segment_id().uuid_string()))
}

fn segment_file(dir: &Path, segment: &SegmentReader) -> PathBuf {
    dir.join(format!("{}.vec", segment.segment_id().uuid_string()))
}

/// How many segments with vectors have no vector file of the right size: a
/// writer was stopped between its commit and writing them (cheap: one `stat`
/// per segment; readers and the upkeep build them).
pub fn missing_files(root: &Path, searcher: &Searcher, dim: usize) -> Result<usize> {
    let dir = root.join("vectors");
    let mut missing = 0;
    for segment in searcher.segment_readers() {
        let expected = (HEADER + segment.max_doc() as usize * dim * 4) as u64;
        let present = fs::metadata(segment_file(&dir, segment)).is_ok_and(|m| m.len() == expected);
        if !present && has_any_vector(segment)? {
            missing += 1;
        }
    }
    Ok(missing)
}

/// Whether any record of the segment (live or deleted) was stored with a vector.
fn has_any_vector(segment: &SegmentReader) -> Result<bool> {
    Ok(segment.fast_fields().u64("has_vector")?.max_value() > 0)
}

/// The segment's vector file, written from the stored embeddings if missing or
/// damaged; `None` when no record of the segment has a vector (a BM25-only
/// store, or records added with `--embed later`): a file of zero rows would
/// cost 1.5 KB per record on disk and a read of every stored record to write.
/// A valid file written before that rule is kept.
fn ensure_segment_file(
    dir: &Path,
    segment: &SegmentReader,
    fields: &IndexFields,
    dim: usize,
) -> Result<Option<PathBuf>> {
    let path = segment_file(dir, segment);
    let expected = (HEADER + segment.max_doc() as usize * dim * 4) as u64;
    if fs::metadata(&path).is_ok_and(|m| m.len() == expected)
        && header_matches(&path, dim, segment.max_doc())
    {
        return Ok(Some(path));
    }
    if !has_any_vector(segment)? {
        return Ok(None);
    }
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let store = segment
        .get_store_reader(64)
        .map_err(|e| Error::io(&path, e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    {
        let mut out = std::io::BufWriter::new(tmp.as_file_mut());
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&FORMAT.to_le_bytes());
        header.extend_from_slice(&(dim as u32).to_le_bytes());
        header.extend_from_slice(&segment.max_doc().to_le_bytes());
        out.write_all(&header).map_err(|e| Error::io(&path, e))?;
        let zeros = vec![0u8; dim * 4];
        for doc in 0..segment.max_doc() {
            let stored: TantivyDocument = store.get(doc)?;
            let bytes = stored
                .get_first(fields.embedding)
                .and_then(|v| v.as_bytes());
            match bytes {
                Some(b) if b.len() == dim * 4 => out.write_all(b),
                _ => out.write_all(&zeros),
            }
            .map_err(|e| Error::io(&path, e))?;
        }
        out.flush().map_err(|e| Error::io(&path, e))?;
    }
    // A cache file needs no fsync: if it is lost or torn, it is rebuilt.
    tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
    Ok(Some(path))
}

fn header_matches(path: &Path, dim: usize, rows: u32) -> bool {
    let Ok(mut file) = fs::File::open(path) else {
        return false;
    };
    let mut header = [0u8; HEADER];
    if std::io::Read::read_exact(&mut file, &mut header).is_err() {
        return false;
    }
    let word =
        |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    &header[0..4] == MAGIC && word(4) == FORMAT && word(8) == dim as u32 && word(12) == rows
}

/// The `k` highest scores, best first.
fn top_k(mut scored: Vec<(f32, DocAddress)>, k: usize) -> Vec<(f32, DocAddress)> {
    let by_score =
        |a: &(f32, DocAddress), b: &(f32, DocAddress)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if scored.len() > k && k > 0 {
        scored.select_nth_unstable_by(k - 1, by_score);
        scored.truncate(k);
    }
    scored.sort_by(by_score);
    scored.truncate(k);
    scored
}

/// Collects the matching doc ids of each segment (no scores).
struct SegmentDocs;

struct SegmentDocsCollector {
    ord: SegmentOrdinal,
    docs: Vec<DocId>,
}

impl Collector for SegmentDocs {
    type Fruit = Vec<(SegmentOrdinal, Vec<DocId>)>;
    type Child = SegmentDocsCollector;

    fn for_segment(
        &self,
        ord: SegmentOrdinal,
        _: &SegmentReader,
    ) -> tantivy::Result<SegmentDocsCollector> {
        Ok(SegmentDocsCollector {
            ord,
            docs: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(
        &self,
        fruits: Vec<(SegmentOrdinal, Vec<DocId>)>,
    ) -> tantivy::Result<Self::Fruit> {
        Ok(fruits)
    }
}

impl SegmentCollector for SegmentDocsCollector {
    type Fruit = (SegmentOrdinal, Vec<DocId>);

    fn collect(&mut self, doc: DocId, _: Score) {
        self.docs.push(doc);
    }

    fn collect_block(&mut self, docs: &[DocId]) {
        self.docs.extend_from_slice(docs);
    }

    fn harvest(self) -> Self::Fruit {
        (self.ord, self.docs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_orders_and_cuts() {
        let scored = (0..10)
            .map(|i| (i as f32 % 4.0, DocAddress::new(0, i)))
            .collect();
        let top = top_k(scored, 3);
        assert_eq!(top.iter().map(|t| t.0).collect::<Vec<_>>(), [3.0, 3.0, 2.0]);
        assert_eq!(top[0].1, DocAddress::new(0, 3));
    }
}
