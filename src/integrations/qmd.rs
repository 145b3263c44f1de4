//! A QMD-compatible backend: OpenClaw's `memory.backend = "qmd"` served by us.
//!
//! OpenClaw drives an external QMD binary with a handful of commands (see
//! `interop.md`, section 3): it registers *collections* (a name, a folder and a
//! glob mask), asks for `update` (index the files) and `embed` (fill vectors),
//! reads `status` for a `Vectors: N` line, and runs `search`/`vsearch`/`query`
//! expecting a JSON array of hits that point at real files and lines, which its
//! `memory_get` then reads from disk.
//!
//! Here a collection is indexed as `note` records in its own namespace
//! (`qmd:<name>`), one record per markdown chunk: a section under a heading, cut
//! further at blank lines when long, each with its file path and line range.
//! `update` re-chunks every matching file; records of chunks that no longer
//! exist (a file edited or removed) are deleted, unchanged ones cost nothing.
//! The collection list is a small JSON file under `$QMD_CONFIG_DIR` or
//! `$XDG_CONFIG_HOME/qmd` (OpenClaw gives each agent its own), else in the store.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Origin, Result};
use crate::record::{parse_record, ParseOptions, Record};
use crate::search::{Filters, Mode, RankOptions, SearchEngine};
use crate::store::Store;

/// File name of the collection list.
const COLLECTIONS_FILE: &str = "knowledge-db-collections.json";

/// Chunks longer than this (in characters) are cut at the next blank line.
const CHUNK_CHARS: usize = 1200;

/// Chunks longer than this are cut at the next line, blank or not (a file
/// without blank lines would otherwise be one chunk).
const MAX_CHUNK_CHARS: usize = 8 * CHUNK_CHARS;

/// Longest snippet in a search hit, in characters.
const SNIPPET_CHARS: usize = 700;

/// The mask used when `collection add` names none (QMD's default).
pub const DEFAULT_MASK: &str = "**/*.md";

/// One collection: files under `path` whose relative path matches `pattern`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Collection {
    /// The collection's name (its records live in namespace `qmd:<name>`).
    pub name: String,
    /// The folder its files are under.
    pub path: PathBuf,
    /// The glob the files' paths relative to `path` must match (`**/*.md` by default).
    pub pattern: String,
}

/// The collection list and where it is kept.
#[derive(Debug, Clone)]
pub struct Collections {
    /// The file the list is kept in.
    pub file: PathBuf,
    /// The collections, in the order they were added.
    pub list: Vec<Collection>,
}

/// The namespace a collection's records live in.
pub fn namespace(collection: &str) -> String {
    format!("qmd:{collection}")
}

/// Where the collection list lives: `$QMD_CONFIG_DIR`, else
/// `$XDG_CONFIG_HOME/qmd`, else `<store>/qmd`.
pub fn collections_file(store_root: &Path) -> PathBuf {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = env("QMD_CONFIG_DIR") {
        return PathBuf::from(dir).join(COLLECTIONS_FILE);
    }
    if let Some(dir) = env("XDG_CONFIG_HOME") {
        return PathBuf::from(dir).join("qmd").join(COLLECTIONS_FILE);
    }
    store_root.join("qmd").join(COLLECTIONS_FILE)
}

impl Collections {
    /// Reads the list (empty when the file does not exist yet).
    pub fn load(file: &Path) -> Result<Collections> {
        let list = match fs::read(file) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::Config {
                path: file.to_path_buf(),
                message: format!("not a collection list: {e}"),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(file, e)),
        };
        Ok(Collections {
            file: file.to_path_buf(),
            list,
        })
    }

    /// Writes the list atomically (temporary file, fsync, rename).
    pub fn save(&self) -> Result<()> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let bytes = serde_json::to_vec_pretty(&self.list)
            .map_err(|e| Error::io(&self.file, std::io::Error::other(e)))?;
        write_atomically(&self.file, &bytes)
    }

    /// The collection named `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Collection> {
        self.list.iter().find(|c| c.name == name)
    }

    /// Adds a collection, or re-points one of the same name.
    pub fn add(&mut self, collection: Collection) -> Result<()> {
        if collection.name.is_empty() || collection.name.contains('/') {
            return Err(Error::Usage(format!(
                "collection name `{}` must be non-empty and contain no `/`",
                collection.name
            )));
        }
        crate::record::parse::validate_namespace(&namespace(&collection.name))
            .map_err(|m| Error::Usage(format!("collection name {m}")))?;
        match self.list.iter_mut().find(|c| c.name == collection.name) {
            Some(existing) => *existing = collection,
            None => self.list.push(collection),
        }
        Ok(())
    }

    /// Removes a collection by name; false if there was none.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.list.len();
        self.list.retain(|c| c.name != name);
        self.list.len() != before
    }

    /// The real file a hit's path names: `qmd://<collection>/<relative path>`,
    /// or a path relative to a collection's root. Only a file `update` would
    /// index is returned: inside the collection's root (symlinks resolved),
    /// matching its mask, with no hidden folder or file on the way.
    /// Returns the file, the path as given, and the collection holding it.
    pub fn resolve(&self, path: &str) -> Option<(PathBuf, String, &Collection)> {
        if let Some(rest) = path.strip_prefix("qmd://") {
            let (name, relative) = rest.split_once('/')?;
            let collection = self.get(name)?;
            return indexed_file(collection, relative).map(|p| (p, path.to_string(), collection));
        }
        self.list.iter().find_map(|c| {
            let relative = Path::new(path)
                .strip_prefix(&c.path)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| path.to_string());
            indexed_file(c, &relative).map(|p| (p, path.to_string(), c))
        })
    }
}

/// `root/relative` of `collection` if it is a regular file that stays inside
/// the root once symlinks are resolved, whose path there matches the mask and
/// has no hidden component: the files `update` indexes, nothing else.
fn indexed_file(collection: &Collection, relative: &str) -> Option<PathBuf> {
    let root = collection.path.canonicalize().ok()?;
    let candidate = collection.path.join(relative).canonicalize().ok()?;
    let inner = candidate.strip_prefix(&root).ok()?;
    let hidden = inner
        .components()
        .any(|c| c.as_os_str().to_string_lossy().starts_with('.'));
    let inner = inner.to_string_lossy().replace('\\', "/");
    (!hidden && glob_match(&collection.pattern, &inner) && candidate.is_file()).then_some(candidate)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::files::replace(path, bytes, crate::files::Durability::Durable)
}

/// A piece of a markdown file: a section, or part of a long one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// First line (1-based).
    pub start_line: usize,
    /// Last line (1-based, inclusive).
    pub end_line: usize,
    /// The nearest heading above (or the file name).
    pub title: String,
    /// The chunk's lines (without blank lines at its edges).
    pub text: String,
}

/// Cuts markdown into chunks: a new chunk at every heading, at a blank line
/// once a chunk is longer than `CHUNK_CHARS`, and at any line once it is
/// longer than `MAX_CHUNK_CHARS`. Blank lines at the edges of a chunk are
/// left out; chunks with no text are dropped. Linear in the text's length.
pub fn chunk_markdown(text: &str, file_title: &str) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut title = file_title.to_string();
    let mut current: Vec<(usize, &str)> = Vec::new();
    let mut current_len = 0;
    let mut in_fence = false;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let heading = !in_fence && is_heading(trimmed);
        let long = current_len > CHUNK_CHARS;
        if heading || (long && line.trim().is_empty() && !in_fence) || current_len > MAX_CHUNK_CHARS
        {
            flush(&mut chunks, &mut current, &title);
            current_len = 0;
        }
        if heading {
            title = trimmed.trim_start_matches('#').trim().to_string();
        }
        current.push((number, line));
        current_len += line.len() + 1;
    }
    flush(&mut chunks, &mut current, &title);
    chunks
}

fn is_heading(line: &str) -> bool {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    (1..=6).contains(&hashes) && line[hashes..].starts_with(' ')
}

fn flush(chunks: &mut Vec<Chunk>, lines: &mut Vec<(usize, &str)>, title: &str) {
    let taken = std::mem::take(lines);
    let first = taken.iter().position(|(_, l)| !l.trim().is_empty());
    let last = taken.iter().rposition(|(_, l)| !l.trim().is_empty());
    if let (Some(first), Some(last)) = (first, last) {
        let body = &taken[first..=last];
        chunks.push(Chunk {
            start_line: body[0].0,
            end_line: body[body.len() - 1].0,
            title: title.to_string(),
            text: body.iter().map(|(_, l)| *l).collect::<Vec<_>>().join("\n"),
        });
    }
}

/// Whether `path` (relative, `/`-separated) matches a glob: `*` and `?` within
/// one path component, `**` across any number of components.
pub fn glob_match(pattern: &str, path: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
    let path: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    match_components(&pattern, &path)
}

fn match_components(pattern: &[&str], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| match_components(rest, &path[skip..])),
        Some((first, rest)) => match path.split_first() {
            Some((name, tail)) => {
                match_name(first.as_bytes(), name.as_bytes()) && match_components(rest, tail)
            }
            None => false,
        },
    }
}

fn match_name(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| match_name(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && match_name(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && match_name(rest, &name[1..]),
    }
}

/// A file `update` left out, and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SkippedFile {
    /// The file's path relative to the collection's folder.
    pub path: String,
    /// Why it was not indexed (over a limit, not a regular file, unreadable).
    pub why: String,
}

/// What `update` did to one collection.
#[derive(Debug, Clone, Default, Serialize)]
pub struct UpdateReport {
    /// The collection's name.
    pub collection: String,
    /// Files matching the collection's pattern, read.
    pub files: usize,
    /// Files matching the pattern that were not indexed (the others were);
    /// their earlier records, if any, are removed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedFile>,
    /// Chunks cut from them (records written or kept).
    pub chunks: usize,
    /// Records added.
    pub added: usize,
    /// Records updated.
    pub updated: usize,
    /// Records left unchanged.
    pub unchanged: usize,
    /// Records of files or chunks no longer there, deleted.
    pub removed: usize,
}

/// Re-indexes every collection's files; see the module docs.
pub fn update(store: &Store, collections: &Collections) -> Result<Vec<UpdateReport>> {
    collections
        .list
        .iter()
        .map(|c| update_collection(store, c))
        .collect()
}

fn update_collection(store: &Store, collection: &Collection) -> Result<UpdateReport> {
    let mut report = UpdateReport {
        collection: collection.name.clone(),
        ..UpdateReport::default()
    };
    let ns = namespace(&collection.name);
    let options = ParseOptions {
        namespace: Some(ns.clone()),
        added_at: crate::now_rfc3339(),
        ..ParseOptions::default()
    };
    let limits = &store.config().limits;
    let mut records: Vec<Record> = Vec::new();
    for relative in matching_files(&collection.path, &collection.pattern)? {
        let file = collection.path.join(&relative);
        // One file too large or unreadable must not keep the others out.
        match file_records(&file, &relative, collection, &options, limits) {
            Ok(found) => {
                report.files += 1;
                records.extend(found);
            }
            Err(why) => report.skipped.push(SkippedFile {
                path: relative,
                why: why.to_string(),
            }),
        }
    }
    report.chunks = records.len();
    let keep: BTreeSet<String> = records.iter().map(|r| r.id.clone()).collect();
    let searcher = store.reader()?.searcher();
    let stale: Vec<String> =
        crate::store::browse::namespace_records(&searcher, store.fields(), &ns)?
            .into_iter()
            .map(|r| r.id)
            .filter(|id| !keep.contains(id))
            .collect();
    drop(searcher);
    let timeout = store.lock_timeout(None);
    if !records.is_empty() {
        let added = store.add(records, None, timeout)?;
        report.added = added.added;
        report.updated = added.updated;
        report.unchanged = added.unchanged;
    }
    if !stale.is_empty() {
        report.removed = store.delete(&stale, timeout)?.deleted.len();
    }
    Ok(report)
}

/// The records of one markdown file: a regular file within
/// `limits.max_markdown_bytes`, each chunk within `limits.max_record_bytes`.
fn file_records(
    file: &Path,
    relative: &str,
    collection: &Collection,
    options: &ParseOptions,
    limits: &crate::store::config::Limits,
) -> Result<Vec<Record>> {
    let bytes = crate::bounded::read_whole(file, limits.markdown_limit(), false)?;
    // Files that are not UTF-8 are read leniently rather than failing the update.
    let text = String::from_utf8_lossy(&bytes);
    let ns = &options.namespace.clone().unwrap_or_default();
    let mut records = Vec::new();
    for chunk in chunk_markdown(&text, relative) {
        if chunk.text.len() > limits.max_record_bytes {
            return Err(Error::OverLimit {
                path: file.to_path_buf(),
                what: format!(
                    "line {} starts a chunk of {} that cannot be cut (no line break)",
                    chunk.start_line,
                    crate::bounded::human_bytes(chunk.text.len() as u64)
                ),
                limit: crate::bounded::human_bytes(limits.max_record_bytes as u64),
                setting: "limits.max_record_bytes",
            });
        }
        let value = serde_json::json!({
            "kind": "note",
            "id": format!("{ns}:{relative}:{}", chunk.start_line),
            "title": chunk.title,
            "text": chunk.text,
            "path": relative,
            "collection": collection.name,
            "start_line": chunk.start_line,
            "end_line": chunk.end_line,
        });
        let origin = Origin::file(file.display().to_string());
        records.push(
            parse_record(value, &origin, options)
                .map_err(|e| Error::Input(crate::error::InputErrors(vec![e])))?,
        );
    }
    Ok(records)
}

/// Deletes the records of a removed collection.
pub fn forget(store: &Store, name: &str) -> Result<usize> {
    let searcher = store.reader()?.searcher();
    let ids: Vec<String> =
        crate::store::browse::namespace_records(&searcher, store.fields(), &namespace(name))?
            .into_iter()
            .map(|r| r.id)
            .collect();
    drop(searcher);
    if ids.is_empty() {
        return Ok(0);
    }
    Ok(store.delete(&ids, store.lock_timeout(None))?.deleted.len())
}

/// Relative paths (with `/`) of the files under `root` matching `pattern`, sorted.
fn matching_files(root: &Path, pattern: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let path = entry.path();
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let kind = entry.file_type().map_err(|e| Error::io(&path, e))?;
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                let relative = path
                    .strip_prefix(root)
                    .map(|p| p.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default();
                if glob_match(pattern, &relative) {
                    out.push(relative);
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// One hit in QMD's `--json` shape.
///
/// There is deliberately no `docid`: when a hit has one, OpenClaw looks it up in
/// QMD's own SQLite index (`$XDG_CACHE_HOME/qmd/index.sqlite`), which we do not
/// keep; without it OpenClaw resolves the hit from `collection` and the
/// `qmd://` path, which point at the real file.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct QmdHit {
    /// 0..=1, higher is better (see [`search`]).
    pub score: f32,
    /// The collection's name.
    pub collection: String,
    /// `qmd://<collection>/<path>`.
    pub file: String,
    /// A `@@ -start,count @@` header, then the chunk's text (cut to whole lines).
    pub snippet: String,
    /// First line of the chunk in the file (1-based).
    pub start_line: u64,
    /// Last line of the chunk in the file.
    pub end_line: u64,
    /// The chunk's title: its nearest heading, or the file name.
    pub title: String,
}

/// Which QMD command ran the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QmdMode {
    /// `search`: words (BM25)
    Search,
    /// `vsearch`: meaning (vectors)
    Vsearch,
    /// `query`: both, fused
    Query,
}

impl QmdMode {
    /// The ranking mode QMD's command stands for.
    pub fn mode(self) -> Mode {
        match self {
            QmdMode::Search => Mode::Bm25,
            QmdMode::Vsearch => Mode::Vector,
            QmdMode::Query => Mode::Hybrid,
        }
    }
}

/// Searches the named collections (all when empty), best `n` overall.
///
/// Scores are in 0..=1 as QMD's are, since OpenClaw applies its `minScore` to
/// them: a BM25 score `s` (from `search`, or any mode when no vectors are
/// available) becomes `s / (1 + s)`; cosine similarity and fused scores are
/// kept as they are.
pub fn search(
    store: &Store,
    engine: &SearchEngine,
    collections: &Collections,
    query: &str,
    mode: QmdMode,
    n: usize,
    names: &[String],
) -> Result<Vec<QmdHit>> {
    let wanted: Vec<&Collection> = if names.is_empty() {
        collections.list.iter().collect()
    } else {
        names
            .iter()
            .map(|name| {
                collections.get(name).ok_or_else(|| {
                    Error::Usage(format!(
                        "no collection named `{name}` (see `knowledge-db qmd collection list`)"
                    ))
                })
            })
            .collect::<Result<_>>()?
    };
    let rank = RankOptions {
        mode: mode.mode(),
        ..RankOptions::default()
    };
    // Without a vector side every mode ranks by BM25 alone.
    let bm25_only = mode == QmdMode::Search || engine.vector_status() != "used";
    let mut hits = Vec::new();
    for collection in wanted {
        let filters = Filters {
            namespace: Some(namespace(&collection.name)),
            ..Filters::default()
        };
        for (id, score) in engine.search_ids(query, n, &filters, &rank)? {
            let Some(record) = store.get(&id)? else {
                continue;
            };
            let score = if bm25_only {
                score / (1.0 + score)
            } else {
                score
            };
            hits.push(hit(collection, &record, score));
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(n);
    Ok(hits)
}

fn hit(collection: &Collection, record: &Record, score: f32) -> QmdHit {
    let field = |key: &str| record.source.get(key);
    let start = field("start_line").and_then(|v| v.as_u64()).unwrap_or(1);
    let end = field("end_line").and_then(|v| v.as_u64()).unwrap_or(start);
    let path = field("path").and_then(|v| v.as_str()).unwrap_or_default();
    let mut body = record.fields.content.clone();
    if body.chars().count() > SNIPPET_CHARS {
        body = body.chars().take(SNIPPET_CHARS).collect();
        // Keep whole lines so the header's line count stays true.
        if let Some(cut) = body.rfind('\n') {
            body.truncate(cut);
        }
    }
    let count = body.lines().count().max(1);
    QmdHit {
        score,
        collection: collection.name.clone(),
        file: format!("qmd://{}/{path}", collection.name),
        snippet: format!("@@ -{start},{count} @@\n{body}"),
        start_line: start,
        end_line: end,
        title: record.fields.title.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_qmd_masks() {
        assert!(glob_match("**/*.md", "notes.md"));
        assert!(glob_match("**/*.md", "a/b/notes.md"));
        assert!(!glob_match("**/*.md", "a/notes.txt"));
        assert!(glob_match("*.md", "x.md"));
        assert!(!glob_match("*.md", "dir/x.md"));
        assert!(glob_match("memory/**/2026-??-*.md", "memory/2026-08-01.md"));
        assert!(glob_match(
            "memory/**/2026-??-*.md",
            "memory/a/2026-08-01.md"
        ));
        assert!(!glob_match("memory/*.md", "other/x.md"));
    }

    #[test]
    fn chunks_follow_headings_and_keep_line_numbers() {
        let text = "# Title\n\nintro line\n\n## Router\nuse mesh node\nsecond line\n\n```\n# not a heading\n```\n\n## Empty\n\n";
        let chunks = chunk_markdown(text, "m.md");
        let summary: Vec<(usize, usize, &str)> = chunks
            .iter()
            .map(|c| (c.start_line, c.end_line, c.title.as_str()))
            .collect();
        assert_eq!(
            summary,
            [(1, 3, "Title"), (5, 11, "Router"), (13, 13, "Empty")]
        );
        assert!(chunks[1].text.starts_with("## Router\nuse mesh node"));
        let lines: Vec<&str> = text.lines().collect();
        for chunk in &chunks {
            assert_eq!(
                chunk.text,
                lines[chunk.start_line - 1..chunk.end_line].join("\n")
            );
        }
    }

    #[test]
    fn long_sections_are_cut_at_blank_lines() {
        let paragraph = "word ".repeat(100);
        let text = format!("# Long\n{paragraph}\n\n{paragraph}\n\n{paragraph}\n\n{paragraph}\n");
        let chunks = chunk_markdown(&text, "long.md");
        assert!(chunks.len() >= 2, "{chunks:?}");
        assert!(chunks.iter().all(|c| c.title == "Long"));
        assert!(chunks.windows(2).all(|w| w[0].end_line < w[1].start_line));
    }

    #[test]
    fn resolve_stays_inside_collection_roots() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("ws");
        fs::create_dir_all(root.join("memory")).expect("mkdir");
        fs::write(root.join("memory/a.md"), "hello").expect("write");
        fs::write(dir.path().join("secret.md"), "no").expect("write");
        let collections = Collections {
            file: dir.path().join("c.json"),
            list: vec![Collection {
                name: "mem".into(),
                path: root.clone(),
                pattern: DEFAULT_MASK.into(),
            }],
        };
        assert!(collections.resolve("qmd://mem/memory/a.md").is_some());
        assert!(collections.resolve("memory/a.md").is_some());
        assert!(collections.resolve("qmd://mem/../secret.md").is_none());
        assert!(collections.resolve("qmd://other/memory/a.md").is_none());
        assert!(collections.resolve("../secret.md").is_none());
    }
}
