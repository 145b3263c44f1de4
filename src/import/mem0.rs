//! mem0: an export of `get_all`.
//!
//! mem0 keeps its memories in a vector store of the user's choice (Qdrant,
//! Chroma, pgvector…), so there is no one file of its own to read: the user
//! exports them with `get_all` (`{"results": [...]}`, or the bare list older
//! versions return, or several users' answers under their names:
//! `{"alice": {"results": [...]}, ...}`) as a JSON file, or one memory a line
//! (JSONL). Each
//! memory (`id`, `memory`, `hash`, `metadata`, `categories`, `created_at`,
//! `updated_at`, `user_id`, `agent_id`, `run_id`) becomes a `note`: id
//! `mem0:<id>`, text the memory, time its `created_at`, tags its
//! `categories`; the rest is kept in `metadata`. An edited memory (same id,
//! new text) updates its note.

use std::path::Path;

use serde_json::{json, Value};

use super::{origin_json, record_id, ImportError, Item, ReadLimits, Source, Tool};
use crate::bounded::{Line, LineReader};
use crate::error::Origin;

const EXPECTED_FILE: &str =
    "mem0's get_all output: {\"results\": [{\"id\": …, \"memory\": …}, …]}, a list of such memories, such answers by user ({\"alice\": {\"results\": […]}}), or one memory a line (JSONL)";
const EXPECTED_MEMORY: &str =
    "a mem0 memory {\"id\": \"…\", \"memory\": \"…\", \"created_at\": \"…\", \"user_id\": \"…\"}";

pub(super) fn read(
    path: &Path,
    limits: &ReadLimits,
    source: &mut Source,
) -> Result<(), ImportError> {
    if path.is_dir() {
        return Err(ImportError::NotFound {
            tool: Tool::Mem0,
            path: path.to_path_buf(),
            why: "a folder; mem0 is imported from one exported file".into(),
        });
    }
    let jsonl = path
        .extension()
        .is_some_and(|e| e == "jsonl" || e == "ndjson");
    let memories: Vec<(Option<usize>, Value)> = if jsonl {
        read_lines(path, limits, source)?
    } else {
        let bytes = crate::bounded::read_whole(path, limits.file, false)?;
        source.files += 1;
        source.bytes += bytes.len() as u64;
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
            ImportError::corrupt(
                path,
                Some(format!("line {}, column {}", e.line(), e.column())),
                format!("not JSON: {e}"),
                EXPECTED_FILE,
            )
        })?;
        let list = match value {
            Value::Array(list) => list,
            Value::Object(mut o) => match o.remove("results").or_else(|| o.remove("memories")) {
                Some(Value::Array(list)) => list,
                // One get_all per user, under the user's name:
                // {"alice": {"results": [...]}, "bob": {"results": [...]}}.
                None if !o.is_empty() && o.values().all(is_memory_list) => o
                    .into_iter()
                    .flat_map(|(_, v)| match v {
                        Value::Array(list) => list,
                        Value::Object(mut inner) => match inner.remove("results") {
                            Some(Value::Array(list)) => list,
                            _ => Vec::new(),
                        },
                        _ => Vec::new(),
                    })
                    .collect(),
                _ => {
                    return Err(ImportError::corrupt(
                        path,
                        Some("field results".into()),
                        "an object without a `results` list",
                        EXPECTED_FILE,
                    ))
                }
            },
            other => {
                return Err(ImportError::corrupt(
                    path,
                    None,
                    format!("{} at the top", crate::record::parse::type_name(&other)),
                    EXPECTED_FILE,
                ))
            }
        };
        list.into_iter().map(|m| (None, m)).collect()
    };
    for (index, (line, memory)) in memories.into_iter().enumerate() {
        let place = match line {
            Some(line) => format!("line {line}"),
            None => format!("memory {}", index + 1),
        };
        source.items.push(item(path, &place, line, memory)?);
    }
    source.counts.insert("memories".into(), source.items.len());
    Ok(())
}

/// A get_all answer of one user: `{"results": [...]}`.
fn is_memory_list(value: &Value) -> bool {
    value.get("results").is_some_and(Value::is_array)
}

fn read_lines(
    path: &Path,
    limits: &ReadLimits,
    source: &mut Source,
) -> Result<Vec<(Option<usize>, Value)>, ImportError> {
    let (file, len) = crate::bounded::open_regular(path)?;
    source.files += 1;
    source.bytes += len;
    let mut reader = LineReader::new(std::io::BufReader::new(file), limits.line);
    let mut out = Vec::new();
    let mut number = 0;
    loop {
        let line = reader
            .next_line()
            .map_err(|e| crate::error::Error::io(path, e))?;
        number += 1;
        let text = match line {
            None => break,
            Some(Line::Whole(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            Some(Line::TooLong(n)) => {
                return Err(ImportError::corrupt(
                    path,
                    Some(format!("line {number}")),
                    format!("a line of {n} bytes, over limits.max_record_bytes"),
                    EXPECTED_MEMORY,
                ))
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str(&text).map_err(|e| {
            ImportError::corrupt(
                path,
                Some(format!("line {number}")),
                format!("not JSON: {e}"),
                EXPECTED_MEMORY,
            )
        })?;
        out.push((Some(number), value));
    }
    Ok(out)
}

fn item(path: &Path, place: &str, line: Option<usize>, memory: Value) -> Result<Item, ImportError> {
    let wrong = |field: &str, message: String| {
        ImportError::corrupt(
            path,
            Some(format!("{place}, field {field}")),
            message,
            EXPECTED_MEMORY,
        )
    };
    let Value::Object(m) = &memory else {
        return Err(ImportError::corrupt(
            path,
            Some(place.to_string()),
            format!(
                "{} instead of a memory",
                crate::record::parse::type_name(&memory)
            ),
            EXPECTED_MEMORY,
        ));
    };
    let id = match m.get("id") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => {
            return Err(wrong(
                "id",
                format!(
                    "{} instead of an id",
                    crate::record::parse::type_name(other)
                ),
            ))
        }
        None => return Err(wrong("id", "missing".into())),
    };
    let text = match m.get("memory").or_else(|| m.get("text")) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(wrong(
                "memory",
                format!("{} instead of text", crate::record::parse::type_name(other)),
            ))
        }
        None => return Err(wrong("memory", "missing".into())),
    };
    let str_at = |key: &str| m.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let tags: Vec<String> = match m.get("categories") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    let scope = ["user_id", "agent_id", "run_id"]
        .iter()
        .find_map(|k| str_at(k).map(|v| format!("{} {v}", k.trim_end_matches("_id"))));
    let mut metadata = serde_json::Map::new();
    for (key, value) in m {
        if !matches!(key.as_str(), "id" | "memory" | "text") && !value.is_null() {
            metadata.insert(key.clone(), value.clone());
        }
    }
    metadata.insert(
        "origin".into(),
        // Not the export's file name: two exports of the same memories
        // (JSON and JSONL, today's and last week's) are the same records.
        origin_json(Tool::Mem0, &id, "get_all"),
    );
    let mut value = json!({
        "kind": "note",
        "id": record_id(Tool::Mem0, &id),
        "text": text,
        "tags": tags,
        "metadata": metadata,
    });
    if let Some(time) = str_at("created_at").or_else(|| str_at("updated_at")) {
        if crate::record::parse::parse_time(time).is_none() {
            return Err(wrong("created_at", format!("\"{time}\" is not a time")));
        }
        value["timestamp"] = json!(time);
    }
    let origin = match line {
        Some(line) => Origin::line(path.display().to_string(), line),
        None => Origin::file(format!("{}: {place}", path.display())),
    };
    Ok(Item {
        origin,
        value,
        project: scope,
    })
}
