//! Upgrading a store written in an earlier on-disk format, in place.
//!
//! Format 3 gave the text index three fields: `project` (where the work
//! happened), `origin` (who wrote a record pulled from a team's memory) and
//! `turn` (the last turn a record covers). Tantivy cannot add fields to an
//! index, so a format-2 store is upgraded by indexing its records again: every
//! live document of `text/` (its record JSON, stored embedding and vector
//! state) is written into a fresh index with the new schema, which then
//! replaces the old one, and the archive's L3 index (derived data) is rebuilt
//! from the archive files. Nothing is embedded again and no record changes.
//!
//! Crash safety follows `repair`'s rebuild: the new index is built in
//! `text.rebuild.tmp/`, renamed to `text.rebuild/` once committed, then swapped
//! in (`text/` renamed aside, `text.rebuild/` renamed into place), and a crash
//! between the two renames is finished by the next writer
//! (`store::rescue::finish_interrupted_swap`). `config.toml` says format 3 only
//! after both indexes are upgraded, so a killed upgrade simply runs again; a
//! step already done (an index that has the new fields) is skipped.

use std::fs;
use std::path::Path;
use std::time::Duration;

use tantivy::schema::{Schema, Value};
use tantivy::{Index, TantivyDocument};

use crate::archive::l3::{reindex_file, L3Index};
use crate::archive::Archive;
use crate::error::{Error, Result};
use crate::index::{record_hash, register_tokenizers, IndexFields, VectorField};
use crate::store::lock::WriterLock;
use crate::store::{Config, FORMAT_VERSION};

/// The oldest format this build upgrades.
pub const OLDEST_UPGRADABLE: u32 = 2;

/// Memory for the upgrading writer.
const WRITER_HEAP_BYTES: usize = 128 * 1024 * 1024;

/// What an upgrade did.
#[derive(Debug, Clone, Default)]
pub struct UpgradeReport {
    /// The format the store was in.
    pub from: u32,
    /// L2 records indexed again.
    pub records: u64,
    /// Archive files whose records the L3 index was rebuilt from.
    pub archive_files: usize,
}

/// Upgrades the store at `root` from format [`OLDEST_UPGRADABLE`] (or later)
/// to [`FORMAT_VERSION`], taking the writer lock for up to `lock_timeout`.
/// A store already at the current format is left alone.
pub fn upgrade(root: &Path, lock_timeout: Duration) -> Result<UpgradeReport> {
    let lock = WriterLock::acquire(&root.join("LOCK"), lock_timeout)?;
    let config_path = root.join("config.toml");
    let config = Config::load(&config_path)?;
    let mut report = UpgradeReport {
        from: config.format_version,
        ..UpgradeReport::default()
    };
    if config.format_version == FORMAT_VERSION {
        return Ok(report);
    }
    if !(OLDEST_UPGRADABLE..FORMAT_VERSION).contains(&config.format_version) {
        return Err(Error::FormatVersion {
            path: root.to_path_buf(),
            found: config.format_version,
            expected: FORMAT_VERSION,
        });
    }
    crate::store::rescue::finish_interrupted_swap(root)?;
    report.records = upgrade_text_index(root, &lock)?;
    report.archive_files = upgrade_l3_index(root)?;
    set_format_version(&config_path, FORMAT_VERSION)?;
    Ok(report)
}

/// Whether an index has every field of the current schema.
fn is_current(schema: &Schema) -> bool {
    IndexFields::from_schema(schema).is_ok()
}

/// Indexes L2's records again with the current schema; returns how many.
fn upgrade_text_index(root: &Path, _lock: &WriterLock) -> Result<u64> {
    let text = root.join("text");
    let old = Index::open_in_dir(&text)?;
    if is_current(&old.schema()) {
        remove_aside(root)?;
        return Ok(0);
    }
    let building = root.join("text.rebuild.tmp");
    let fresh = root.join("text.rebuild");
    for leftover in [&building, &fresh] {
        if leftover.exists() {
            fs::remove_dir_all(leftover).map_err(|e| Error::io(leftover, e))?;
        }
    }
    fs::create_dir_all(&building).map_err(|e| Error::io(&building, e))?;
    let copied = copy_documents(&old, &building)?;
    drop(old);
    crate::files::sync_dir(&building)?;
    fs::rename(&building, &fresh).map_err(|e| Error::io(&building, e))?;
    crate::files::sync_dir(root)?;
    let aside = root.join("text.format2");
    if aside.exists() {
        fs::remove_dir_all(&aside).map_err(|e| Error::io(&aside, e))?;
    }
    fs::rename(&text, &aside).map_err(|e| Error::io(&text, e))?;
    fs::rename(&fresh, &text).map_err(|e| Error::io(&fresh, e))?;
    crate::files::sync_dir(root)?;
    remove_aside(root)?;
    Ok(copied)
}

/// Removes what an upgrade leaves when it is killed: the old index set
/// aside after the swap, a half-built new one.
fn remove_aside(root: &Path) -> Result<()> {
    for leftover in ["text.format2", "text.rebuild.tmp"] {
        let dir = root.join(leftover);
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        }
    }
    Ok(())
}

/// Writes every live document of `old` into a new index at `dir`, keeping
/// each record's JSON, embedding and vector state; returns how many.
fn copy_documents(old: &Index, dir: &Path) -> Result<u64> {
    let schema = old.schema();
    let field = |name: &str| {
        schema.get_field(name).map_err(|_| {
            Error::Index(tantivy::TantivyError::SchemaError(format!(
                "the text index to upgrade has no field `{name}`"
            )))
        })
    };
    let (record_field, embedding_field) = (field("record")?, field("embedding")?);
    let new = Index::create_in_dir(dir, IndexFields::schema())?;
    register_tokenizers(&new);
    let fields = IndexFields::from_schema(&new.schema())?;
    let mut writer: tantivy::IndexWriter = new.writer_with_num_threads(1, WRITER_HEAP_BYTES)?;
    let searcher = old.reader()?.searcher();
    let mut copied = 0;
    for segment in searcher.segment_readers() {
        let store = segment
            .get_store_reader(64)
            .map_err(|e| Error::io(dir, e))?;
        let has_vector = segment.fast_fields().u64("has_vector")?;
        let text_hash = segment.fast_fields().u64("text_hash")?;
        for doc_id in segment.doc_ids_alive() {
            let doc: TantivyDocument = store.get(doc_id)?;
            let record = crate::index::stored_record(&doc, record_field)?;
            let embedding = doc
                .get_first(embedding_field)
                .and_then(|v| v.as_bytes())
                .and_then(|b| crate::index::embedding_from_bytes(b, crate::embed::DIM));
            let vector = VectorField {
                text_hash: text_hash.first(doc_id).unwrap_or_default(),
                draft: embedding.is_some()
                    && has_vector.first(doc_id) == Some(crate::index::has_vector::DRAFT),
                embedding,
            };
            writer.add_document(fields.document(&record, record_hash(&record), &vector)?)?;
            copied += 1;
        }
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    Ok(copied)
}

/// Rebuilds the L3 index with the current schema from the archive files;
/// returns how many files it read (0 when there is no archive or the index
/// is current).
fn upgrade_l3_index(root: &Path) -> Result<usize> {
    let archive = Archive::new(root);
    let dir = archive.dir().join("index");
    if !dir.join("meta.json").exists() {
        return Ok(0);
    }
    if is_current(&Index::open_in_dir(&dir)?.schema()) {
        return Ok(0);
    }
    fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let l3 = L3Index::open_or_create(&archive)?;
    let mut writer = l3.writer()?;
    let files = archive.files()?;
    for file in &files {
        reindex_file(&archive, &l3, &writer, file)?;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    Ok(files.len())
}

/// Rewrites the `format_version` line of `config.toml`, keeping every other
/// line (and the user's comments) as it is.
fn set_format_version(path: &Path, version: u32) -> Result<()> {
    let text = fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut replaced = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if !replaced && line.trim_start().starts_with("format_version") {
                replaced = true;
                format!("format_version = {version}")
            } else {
                line.to_string()
            }
        })
        .collect();
    let mut out = lines.join("\n");
    if !replaced {
        out = format!("format_version = {version}\n{out}");
    }
    out.push('\n');
    crate::store::config::write_durably(path, out.as_bytes())
}
