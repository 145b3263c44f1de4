//! The approximate side of vector search: one HNSW graph per large segment.
//!
//! An exact scan costs one dot product per record, about 14 ms per 100k records
//! here. Segments with at least `min_rows` vectors also get a navigable
//! small-world graph (HNSW, Malkov & Yashunin): a few layers where each record
//! links to its nearest neighbours, so a query walks from a fixed entry point
//! towards its neighbourhood and touches a few thousand records, not all of them.
//!
//! The graph is built by `hnsw_rs` (parallel insertion, cosine distance on the
//! unit vectors) and then written to `vectors/<segment-id>.hnsw` in a flat layout
//! of `u32` neighbour ids that is memory-mapped and walked in place: opening it
//! costs nothing, so a one-shot CLI search reads only the pages its walk touches.
//! The walk reads vectors from the segment's `.vec` file.
//!
//! Like the `.vec` files, a graph belongs to one immutable segment: deletes and
//! upserts are tombstones (tantivy's alive set, checked during the walk), and the
//! graph is rebuilt when tantivy merges segments. A missing or damaged graph only
//! costs speed: that segment is scanned exactly. Filters are applied during the
//! walk (records that fail them are passed through but never returned); when a
//! filter keeps too few records for the walk to find `k`, the caller scans
//! exactly instead, so a selective filter still returns its `k` best.
//!
//! File layout (little-endian `u32` words):
//! ```text
//! header   magic "KDBG", format, dim, rows, m0, m, levels, entry
//! counts   levels - 1 words: the number of records on each upper level
//! level 0  rows × m0 neighbour ids (row = tantivy doc id; u32::MAX = empty slot)
//! level l  count sorted doc ids, then count × m neighbour ids
//! ```

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fs;
use std::io::Write;
use std::path::Path;

use hnsw_rs::prelude::{Distance, Hnsw};
use memmap2::Mmap;
use tantivy::DocId;

use crate::error::{Error, Result};

const MAGIC: &[u8; 4] = b"KDBG";
const FORMAT: u32 = 1;
const HEADER_WORDS: usize = 8;
const EMPTY: u32 = u32::MAX;

/// Links per record on the upper levels (level 0 keeps twice as many).
const LINKS: usize = 16;
/// Candidates considered per insertion while building.
const EF_CONSTRUCTION: usize = 100;
/// Candidates kept during a query walk, at least (raised to `k` when larger).
pub const EF_SEARCH: usize = 96;
/// Records inserted per parallel batch while building (bounds the decoded copy).
const BUILD_BATCH: usize = 16_384;

/// Cosine distance on unit vectors, never negative (rounding can push `1 - dot`
/// below zero for a vector and itself, which `hnsw_rs`'s own `DistDot` rejects).
#[derive(Debug, Default, Clone, Copy)]
struct CosineDistance;

impl Distance<f32> for CosineDistance {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - crate::vectors::dot::dot(a, b)).max(0.0)
    }
}

/// Builds the graph over `docs` (doc ids with a vector) and writes it to `path`
/// atomically. `vector` decodes one doc's vector.
pub fn build(
    path: &Path,
    dim: usize,
    rows: u32,
    docs: &[DocId],
    vector: impl Fn(DocId) -> Option<Vec<f32>>,
) -> Result<()> {
    let hnsw =
        Hnsw::<f32, CosineDistance>::new(LINKS, docs.len(), 16, EF_CONSTRUCTION, CosineDistance);
    for chunk in docs.chunks(BUILD_BATCH) {
        let decoded: Vec<(Vec<f32>, usize)> = chunk
            .iter()
            .filter_map(|&doc| vector(doc).map(|v| (v, doc as usize)))
            .collect();
        let batch: Vec<(&[f32], usize)> = decoded.iter().map(|(v, d)| (v.as_slice(), *d)).collect();
        hnsw.parallel_insert_slice(&batch);
    }
    let layout = Layout::from_hnsw(&hnsw, rows);
    write_file(path, dim, rows, &layout)
}

/// The graph in file order, built in memory.
struct Layout {
    m0: usize,
    entry: u32,
    level0: Vec<u32>,
    /// Per upper level: sorted doc ids and their neighbour slots.
    upper: Vec<(Vec<u32>, Vec<u32>)>,
}

impl Layout {
    fn from_hnsw(hnsw: &Hnsw<f32, CosineDistance>, rows: u32) -> Layout {
        let m0 = 2 * LINKS;
        let indexation = hnsw.get_point_indexation();
        let top = indexation.get_max_level_observed() as usize;
        let mut level0 = vec![EMPTY; rows as usize * m0];
        let mut upper: Vec<Vec<(u32, Vec<u32>)>> = vec![Vec::new(); top];
        let mut entry = EMPTY;
        for point in indexation {
            let doc = point.get_origin_id() as u32;
            let level = point.get_point_id().0 as usize;
            if level == top && entry == EMPTY {
                entry = doc;
            }
            for (l, neighbours) in point
                .get_neighborhood_id()
                .iter()
                .enumerate()
                .take(level + 1)
            {
                let ids: Vec<u32> = neighbours.iter().map(|n| n.d_id as u32).collect();
                if l == 0 {
                    let slot = doc as usize * m0;
                    for (i, id) in ids.into_iter().take(m0).enumerate() {
                        level0[slot + i] = id;
                    }
                } else {
                    upper[l - 1].push((doc, ids));
                }
            }
        }
        let upper = upper
            .into_iter()
            .map(|mut nodes| {
                nodes.sort_by_key(|(doc, _)| *doc);
                nodes.dedup_by_key(|(doc, _)| *doc);
                let mut slots = vec![EMPTY; nodes.len() * LINKS];
                for (i, (_, ids)) in nodes.iter().enumerate() {
                    for (j, id) in ids.iter().take(LINKS).enumerate() {
                        slots[i * LINKS + j] = *id;
                    }
                }
                (nodes.into_iter().map(|(doc, _)| doc).collect(), slots)
            })
            .collect();
        Layout {
            m0,
            entry,
            level0,
            upper,
        }
    }
}

fn write_file(path: &Path, dim: usize, rows: u32, layout: &Layout) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    {
        let mut out = std::io::BufWriter::new(tmp.as_file_mut());
        let mut words: Vec<u32> = vec![
            u32::from_le_bytes(*MAGIC),
            FORMAT,
            dim as u32,
            rows,
            layout.m0 as u32,
            LINKS as u32,
            layout.upper.len() as u32 + 1,
            layout.entry,
        ];
        words.extend(layout.upper.iter().map(|(ids, _)| ids.len() as u32));
        let mut put = |words: &[u32]| -> Result<()> {
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            out.write_all(&bytes).map_err(|e| Error::io(path, e))
        };
        put(&words)?;
        put(&layout.level0)?;
        for (ids, slots) in &layout.upper {
            put(ids)?;
            put(slots)?;
        }
        out.flush().map_err(|e| Error::io(path, e))?;
    }
    // A cache file needs no fsync: if it is lost or torn, it is rebuilt or skipped.
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// One upper level: where its sorted ids and neighbour slots start (in words).
#[derive(Debug, Clone, Copy)]
struct Level {
    count: usize,
    ids: usize,
    slots: usize,
}

/// A memory-mapped graph of one segment.
pub struct Graph {
    map: Mmap,
    rows: u32,
    m0: usize,
    m: usize,
    entry: u32,
    level0: usize,
    upper: Vec<Level>,
}

impl Graph {
    /// Opens the graph at `path` if it is there, whole, and made for a segment of
    /// `rows` documents of `dim` dimensions; `None` otherwise (the caller scans).
    pub fn open(path: &Path, dim: usize, rows: u32) -> Option<Graph> {
        let file = fs::File::open(path).ok()?;
        // SAFETY: graph files are written to a temporary name and renamed into
        // place complete; nothing writes to them afterwards.
        let map = unsafe { Mmap::map(&file) }.ok()?;
        let word = |i: usize| -> Option<u32> {
            let b = map.get(i * 4..i * 4 + 4)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let header: Vec<u32> = (0..HEADER_WORDS).map(word).collect::<Option<_>>()?;
        let [magic, format, file_dim, file_rows, m0, m, levels, entry] = header[..] else {
            return None;
        };
        if magic != u32::from_le_bytes(*MAGIC)
            || format != FORMAT
            || file_dim as usize != dim
            || file_rows != rows
            || levels == 0
            || levels > 64
            || entry >= rows
        {
            return None;
        }
        let (m0, m) = (m0 as usize, m as usize);
        let mut at = HEADER_WORDS + levels as usize - 1;
        let level0 = at;
        at += rows as usize * m0;
        let mut upper = Vec::with_capacity(levels as usize - 1);
        for l in 0..levels as usize - 1 {
            let count = word(HEADER_WORDS + l)? as usize;
            upper.push(Level {
                count,
                ids: at,
                slots: at + count,
            });
            at += count + count * m;
        }
        (map.len() == at * 4).then_some(Graph {
            map,
            rows,
            m0,
            m,
            entry,
            level0,
            upper,
        })
    }

    /// Whether every neighbour slot holds a doc of this segment or is empty, and
    /// every upper level's ids are sorted (reads the whole file).
    pub fn links_in_bounds(&self) -> bool {
        let slots_ok = |from: usize, count: usize| {
            (from..from + count).all(|i| {
                let id = self.word(i);
                id == EMPTY || id < self.rows
            })
        };
        slots_ok(self.level0, self.rows as usize * self.m0)
            && self.upper.iter().all(|l| {
                (1..l.count).all(|i| self.word(l.ids + i - 1) < self.word(l.ids + i))
                    && slots_ok(l.slots, l.count * self.m)
            })
    }

    fn word(&self, i: usize) -> u32 {
        let b = &self.map[i * 4..i * 4 + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The neighbours of `doc` on `level` (empty when it is not on that level).
    fn neighbours(&self, level: usize, doc: u32) -> impl Iterator<Item = u32> + '_ {
        let (start, width) = if level == 0 {
            (self.level0 + doc as usize * self.m0, self.m0)
        } else {
            match self.upper.get(level - 1).and_then(|l| self.slot(l, doc)) {
                Some(start) => (start, self.m),
                None => (0, 0),
            }
        };
        (start..start + width)
            .map(|i| self.word(i))
            .take_while(|&id| id != EMPTY)
            .filter(|&id| id < self.rows)
    }

    /// Where `doc`'s neighbour slots start on an upper level (binary search).
    fn slot(&self, level: &Level, doc: u32) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, level.count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.word(level.ids + mid).cmp(&doc) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Some(level.slots + mid * self.m),
            }
        }
        None
    }

    /// The best `ef` documents for which `keep` holds, by `similarity`, found by
    /// walking the graph; at most `max_visits` documents are expanded. Best first.
    pub fn search(
        &self,
        similarity: impl Fn(u32) -> Option<f32>,
        keep: impl Fn(u32) -> bool,
        ef: usize,
        max_visits: usize,
    ) -> Vec<(f32, u32)> {
        let Some(mut best) = similarity(self.entry).map(|s| (s, self.entry)) else {
            return Vec::new();
        };
        for level in (1..=self.upper.len()).rev() {
            best = self.greedy(level, best, &similarity);
        }
        self.walk_bottom(best, &similarity, &keep, ef.max(1), max_visits)
    }

    /// Moves to the closest neighbour until none is closer.
    fn greedy(
        &self,
        level: usize,
        mut best: (f32, u32),
        similarity: &impl Fn(u32) -> Option<f32>,
    ) -> (f32, u32) {
        loop {
            let mut moved = false;
            for n in self.neighbours(level, best.1) {
                if let Some(s) = similarity(n) {
                    if s > best.0 {
                        best = (s, n);
                        moved = true;
                    }
                }
            }
            if !moved {
                return best;
            }
        }
    }

    /// The beam search on level 0.
    fn walk_bottom(
        &self,
        start: (f32, u32),
        similarity: &impl Fn(u32) -> Option<f32>,
        keep: &impl Fn(u32) -> bool,
        ef: usize,
        max_visits: usize,
    ) -> Vec<(f32, u32)> {
        let mut visited = vec![0u64; (self.rows as usize).div_ceil(64)];
        let mut mark = |doc: u32| {
            let (word, bit) = (doc as usize / 64, doc % 64);
            let seen = visited[word] >> bit & 1 == 1;
            visited[word] |= 1 << bit;
            seen
        };
        mark(start.1);
        let mut candidates = BinaryHeap::from([Scored(start.0, start.1)]);
        let mut found: BinaryHeap<Reverse<Scored>> = BinaryHeap::new();
        if keep(start.1) {
            found.push(Reverse(Scored(start.0, start.1)));
        }
        let mut visits = 0;
        while let Some(Scored(score, doc)) = candidates.pop() {
            let worst = found.peek().map_or(f32::NEG_INFINITY, |Reverse(w)| w.0);
            if found.len() >= ef && score < worst {
                break;
            }
            visits += 1;
            if visits > max_visits {
                break;
            }
            for n in self.neighbours(0, doc) {
                if mark(n) {
                    continue;
                }
                let Some(s) = similarity(n) else { continue };
                let worst = found.peek().map_or(f32::NEG_INFINITY, |Reverse(w)| w.0);
                if found.len() < ef || s > worst {
                    candidates.push(Scored(s, n));
                    if keep(n) {
                        found.push(Reverse(Scored(s, n)));
                        if found.len() > ef {
                            found.pop();
                        }
                    }
                }
            }
        }
        let mut out: Vec<(f32, u32)> = found.into_iter().map(|Reverse(s)| (s.0, s.1)).collect();
        out.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        out
    }
}

/// A similarity and a doc, ordered by similarity.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scored(f32, u32);

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unit vectors on a circle in the first two dimensions, plus noise dims.
    fn vectors(n: usize, dim: usize) -> Vec<Vec<f32>> {
        (0..n)
            .map(|i| {
                let mut v: Vec<f32> = (0..dim)
                    .map(|d| ((i * 31 + d * 17) as f32 * 0.618).sin())
                    .collect();
                crate::embed::normalize(&mut v);
                v
            })
            .collect()
    }

    fn exact(data: &[Vec<f32>], q: &[f32], k: usize, keep: impl Fn(u32) -> bool) -> Vec<u32> {
        let mut all: Vec<(f32, u32)> = data
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i as u32))
            .map(|(i, v)| (crate::vectors::dot::dot(q, v), i as u32))
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0));
        all.into_iter().take(k).map(|(_, d)| d).collect()
    }

    fn built(data: &[Vec<f32>], dir: &Path) -> Graph {
        let path = dir.join("g.hnsw");
        let docs: Vec<u32> = (0..data.len() as u32).collect();
        build(&path, data[0].len(), data.len() as u32, &docs, |d| {
            data.get(d as usize).cloned()
        })
        .unwrap();
        Graph::open(&path, data[0].len(), data.len() as u32).unwrap()
    }

    #[test]
    fn walk_finds_the_exact_neighbours_of_most_queries() {
        let data = vectors(3000, 32);
        let dir = tempfile::tempdir().unwrap();
        let graph = built(&data, dir.path());
        let queries = vectors(3100, 32).split_off(3000);
        let mut hits = 0;
        for q in &queries {
            let sim = |d: u32| data.get(d as usize).map(|v| crate::vectors::dot::dot(q, v));
            let got: Vec<u32> = graph
                .search(sim, |_| true, 64, usize::MAX)
                .into_iter()
                .take(10)
                .map(|(_, d)| d)
                .collect();
            let want = exact(&data, q, 10, |_| true);
            hits += want.iter().filter(|d| got.contains(d)).count();
        }
        let recall = hits as f64 / 1000.0;
        assert!(recall > 0.95, "recall@10 {recall}");
    }

    #[test]
    fn filtered_walk_returns_only_kept_docs() {
        let data = vectors(2000, 16);
        let dir = tempfile::tempdir().unwrap();
        let graph = built(&data, dir.path());
        let q = &data[7];
        let sim = |d: u32| data.get(d as usize).map(|v| crate::vectors::dot::dot(q, v));
        let keep = |d: u32| d % 10 == 3;
        let got = graph.search(sim, keep, 20, usize::MAX);
        assert!(got.len() >= 10);
        assert!(got.iter().all(|(_, d)| d % 10 == 3));
        let want = exact(&data, q, 5, keep);
        let top: Vec<u32> = got.iter().take(5).map(|(_, d)| *d).collect();
        assert_eq!(top, want);
    }

    #[test]
    fn damaged_or_mismatched_files_are_not_opened() {
        let data = vectors(500, 8);
        let dir = tempfile::tempdir().unwrap();
        let _ = built(&data, dir.path());
        let path = dir.path().join("g.hnsw");
        assert!(Graph::open(&path, 8, 501).is_none(), "row count differs");
        assert!(Graph::open(&path, 9, 500).is_none(), "dimension differs");
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(Graph::open(&path, 8, 500).is_none(), "truncated");
        assert!(Graph::open(&dir.path().join("missing"), 8, 500).is_none());
    }
}
