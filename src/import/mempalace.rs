//! MemPalace: a palace's drawers, kept in ChromaDB (`chroma.sqlite3`).
//!
//! MemPalace files what it mines (project files, conversations) as
//! "drawers": verbatim chunks in a ChromaDB collection (`mempalace_drawers`),
//! each with metadata naming its wing (a project or person), its room (a
//! topic), the source file and when it was filed. ChromaDB keeps documents
//! and metadata in SQLite: `collections`, their `segments`, `embeddings`
//! (one row per item, with its id) and `embedding_metadata` (key/value rows,
//! the document itself under `chroma:document`). Every drawer becomes a
//! `note`: id `mempalace:<drawer id>`, title `<wing> / <room>`, text the
//! drawer, `files` its source file, time its `content_date` (the date of
//! what it holds; else `date`, `filed_at`, else when Chroma stored it); the
//! wing is kept in `metadata.wing` and counted as its project. The closets
//! (`mempalace_closets`: compressed pointers to drawers, an index MemPalace
//! derives from them) are counted but not imported: their drawers are.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::sqlite;
use super::{origin_json, record_id, ImportError, Item, Source, Tool};
use crate::error::Origin;

/// The collection holding the drawers: the verbatim memory.
const DRAWERS: &str = "mempalace_drawers";

const EXPECTED: &str =
    "a MemPalace palace: ChromaDB's chroma.sqlite3 with a mempalace_drawers collection";

fn database(path: &Path) -> Result<PathBuf, ImportError> {
    if path.is_dir() {
        let file = path.join("chroma.sqlite3");
        if !file.exists() {
            return Err(ImportError::NotFound {
                tool: Tool::Mempalace,
                path: path.to_path_buf(),
                why: "no chroma.sqlite3 in it".into(),
            });
        }
        return Ok(file);
    }
    Ok(path.to_path_buf())
}

pub(super) fn read(path: &Path, source: &mut Source) -> Result<(), ImportError> {
    let file = database(path)?;
    let connection = sqlite::open(&file, EXPECTED)?;
    source.files = 1;
    source.bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    let tables = sqlite::tables(&connection, &file, EXPECTED)?;
    let needs: [(&str, &[&str]); 4] = [
        ("collections", &["id", "name"]),
        ("segments", &["id", "scope", "collection"]),
        ("embeddings", &["id", "segment_id", "embedding_id"]),
        (
            "embedding_metadata",
            &["id", "key", "string_value", "int_value", "float_value"],
        ),
    ];
    for (table, columns) in needs {
        let missing = match tables.get(table) {
            None => Some(format!("no `{table}` table")),
            Some(have) => columns
                .iter()
                .find(|c| !have.contains(**c))
                .map(|c| format!("a `{table}` table without its `{c}` column")),
        };
        if let Some(missing) = missing {
            return Err(ImportError::UnknownVersion {
                path: file.clone(),
                found: format!("a database with {missing}"),
                supported: "ChromaDB's SQLite layout (collections, segments, embeddings, \
                            embedding_metadata) of Chroma 0.4 to 1.x"
                    .into(),
            });
        }
    }
    let collections = sqlite::rows(
        &connection,
        "SELECT id, name FROM collections WHERE name LIKE 'mempalace%' ORDER BY name",
        &file,
        "collections",
        EXPECTED,
    )?;
    if !collections
        .iter()
        .any(|c| c.get("name").and_then(Value::as_str) == Some(DRAWERS))
    {
        return Err(ImportError::corrupt(
            &file,
            Some("table collections".into()),
            "no collection named mempalace_drawers",
            EXPECTED,
        ));
    }
    let has_created = tables
        .get("embeddings")
        .is_some_and(|c| c.contains("created_at"));
    for collection in collections {
        let id = collection
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let name = collection
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let sql = format!(
            "SELECT e.id AS row, e.embedding_id AS item, {} AS stored, m.key AS key, \
             m.string_value AS s, m.int_value AS i, m.float_value AS f \
             FROM embeddings e JOIN segments g ON e.segment_id = g.id \
             LEFT JOIN embedding_metadata m ON m.id = e.id \
             WHERE g.collection = '{}' ORDER BY e.id",
            if has_created { "e.created_at" } else { "NULL" },
            id.replace('\'', "''")
        );
        let rows = sqlite::rows(&connection, &sql, &file, "embeddings", EXPECTED)?;
        // One item per embedding row, its metadata gathered from its key rows.
        let mut items: BTreeMap<i64, Gathered> = BTreeMap::new();
        for row in rows {
            let Some(number) = row.get("row").and_then(Value::as_i64) else {
                continue;
            };
            let entry = items.entry(number).or_insert_with(|| {
                (
                    row.get("item")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    row.get("stored")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    Map::new(),
                )
            });
            if let Some(key) = row.get("key").and_then(Value::as_str) {
                let value = ["s", "i", "f"]
                    .iter()
                    .filter_map(|k| row.get(*k))
                    .find(|v| !v.is_null())
                    .cloned()
                    .unwrap_or(Value::Null);
                entry.2.insert(key.to_string(), value);
            }
        }
        if name != DRAWERS {
            // Closets (and any other index MemPalace keeps) point at drawers:
            // derived from them, counted but not imported.
            source
                .counts
                .insert(format!("{name} (index, not imported)"), items.len());
            continue;
        }
        source.counts.insert("drawers".into(), items.len());
        for (number, (item_id, stored, metadata)) in items {
            source
                .items
                .push(drawer(&file, &name, number, &item_id, stored, metadata)?);
        }
    }
    Ok(())
}

/// One Chroma item as its rows give it: its id, when Chroma stored it, its
/// metadata (the document under `chroma:document`).
type Gathered = (String, Option<String>, Map<String, Value>);

fn drawer(
    file: &Path,
    collection: &str,
    number: i64,
    item_id: &str,
    stored: Option<String>,
    mut metadata: Map<String, Value>,
) -> Result<Item, ImportError> {
    let place = || Some(format!("collection {collection}, embeddings row {number}"));
    if item_id.trim().is_empty() {
        return Err(ImportError::corrupt(
            file,
            place(),
            "an item without its id (embedding_id)",
            EXPECTED,
        ));
    }
    let document = match metadata.remove("chroma:document") {
        Some(Value::String(text)) => text,
        _ => {
            return Err(ImportError::corrupt(
                file,
                place(),
                format!("item {item_id} has no document text (chroma:document)"),
                EXPECTED,
            ))
        }
    };
    let get = |key: &str| {
        metadata
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let wing = get("wing");
    let room = get("room");
    let title = match (&wing, &room) {
        (Some(w), Some(r)) => format!("{w} / {r}"),
        (Some(x), None) | (None, Some(x)) => x.clone(),
        (None, None) => collection.to_string(),
    };
    let time = ["content_date", "date", "filed_at", "timestamp"]
        .iter()
        .filter_map(|k| get(k))
        .find(|t| crate::record::parse::parse_time(t).is_some())
        .or(stored.filter(|t| crate::record::parse::parse_time(t).is_some()));
    let files: Vec<String> = get("source_file").into_iter().collect();
    let mut meta = metadata.clone();
    meta.insert("collection".into(), json!(collection));
    meta.insert(
        "origin".into(),
        origin_json(Tool::Mempalace, item_id, collection),
    );
    let mut value = json!({
        "kind": "note",
        "id": record_id(Tool::Mempalace, item_id),
        "title": title,
        "text": document,
        "files": files,
        "metadata": meta,
    });
    if let Some(time) = time {
        value["timestamp"] = json!(time);
    }
    Ok(Item {
        origin: Origin::file(format!(
            "{}: collection {collection}, item {item_id}",
            file.display()
        )),
        value,
        project: wing,
    })
}
