//! Export and import: every stored record as one JSON line that `add` takes
//! back unchanged.
//!
//! `knowledge-db export` writes one line per record, L2 and archive (L3)
//! alike. A line is an envelope around the caller's JSON:
//!
//! ```text
//! {"knowledge_db":"export 1","id":"seg-1","kind":"segment","namespace":"default",
//!  "tier":"l2","added_at":"…","access_count":3,"last_accessed":"…","pruned":false,
//!  "vector":{"model":"all-MiniLM-L6-v2","text_hash":"9f…","f32le":"base64…"},
//!  "source":{…the record as it was given…}}
//! ```
//!
//! A draft vector (the int8 model's, see `crate::index::has_vector::DRAFT`)
//! is exported with `"draft":true` and not loaded back.
//!
//! The envelope keeps what the store added to the record (kind, namespace,
//! when it arrived, how often it was read, its tier, the conversation context
//! it was given and the record that came from; for archived records when
//! they were archived and what pruning dropped) and, unless `--no-vectors`, the
//! embedding, so loading an export never runs the model again for a text it
//! has a vector of. `add` recognises such lines by their `knowledge_db` key and
//! restores each record as it was: live records into L2, archived ones into the
//! archive, with their vectors. Exporting the restored store gives the same
//! lines. Reads not yet folded into the counts are exported with them.
//!
//! Loading an export with archived records takes up to three steps (live
//! records, then the archived ones into L2, then those into the archive); a
//! crash between them leaves archived records live in L2, never lost, and
//! adding the file again finishes the job.

use std::collections::HashMap;
use std::io::Write;

use base64::Engine as _;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::archive::l3::{locate, L3Index};
use crate::archive::{Archive, Entry};
use crate::embed::text::{embedding_text, text_hash};
use crate::error::{Error, InputError, Origin, Result};
use crate::record::parse::{format_time, parse_time, type_name};
use crate::record::{parse_record, Kind, ParseOptions, Record, Tier};
use crate::store::access::Pending;
use crate::store::tier::L2Record;
use crate::store::{AddReport, Store};
use crate::tiers::ops::ArchivedAs;

/// The value of the `knowledge_db` key that marks an export line.
pub const FORMAT: &str = "export 1";

/// Which tiers to export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tiers {
    /// Only the searchable store (L2).
    L2,
    /// Only the archive (L3).
    L3,
    /// Both: L2 first, then the archive.
    #[default]
    All,
}

/// What to export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Which tiers to read.
    pub tiers: Tiers,
    /// `None`: every kind.
    pub kind: Option<Kind>,
    /// Only records of this session id; `None`: every session.
    pub session: Option<String>,
    /// `None`: every namespace.
    pub namespace: Option<String>,
    /// Leave the embeddings out (smaller; loading it embeds the texts again).
    pub without_vectors: bool,
}

impl ExportOptions {
    fn keeps(&self, record: &Record) -> bool {
        self.kind.is_none_or(|k| k == record.kind)
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == record.namespace)
            && self
                .session
                .as_ref()
                .is_none_or(|s| record.fields.session_id.as_ref() == Some(s))
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ExportReport {
    /// Lines written.
    pub records: u64,
    /// Lines of live (L2) records.
    pub l2: u64,
    /// Lines of archived (L3) records.
    pub l3: u64,
    /// Lines that carry an embedding (drafts included).
    pub with_vector: u64,
    /// Bytes written, newlines included.
    pub bytes: u64,
}

/// Writes every record `options` selects to `out`, one line each: L2 first,
/// then the archive by month. `progress` gets the count so far.
pub fn export(
    store: &Store,
    options: &ExportOptions,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<ExportReport> {
    let pending = Pending::read(store.root())?;
    let mut report = ExportReport::default();
    let mut write = |line: Value, tier: Tier, report: &mut ExportReport| -> Result<()> {
        let mut bytes = serde_json::to_vec(&line).map_err(|e| Error::io("export", e.into()))?;
        bytes.push(b'\n');
        out.write_all(&bytes)
            .map_err(|e| Error::io("export output", e))?;
        report.records += 1;
        report.bytes += bytes.len() as u64;
        match tier {
            Tier::L2 => report.l2 += 1,
            Tier::L3 => report.l3 += 1,
        }
        report.with_vector += u64::from(line.get("vector").is_some());
        progress(report.records);
        Ok(())
    };
    let searcher = store.reader()?.searcher();
    if options.tiers != Tiers::L3 {
        store.for_each_l2_record(
            &searcher,
            |record| options.keeps(record),
            |mut l2: L2Record| {
                pending.apply(&mut l2.record);
                let vector = (!options.without_vectors)
                    .then(|| {
                        l2.vector
                            .embedding
                            .as_deref()
                            .map(|v| (l2.vector.text_hash, v))
                    })
                    .flatten();
                let mut line = envelope(&l2.record, vector, None);
                if l2.vector.draft {
                    mark_draft(&mut line);
                }
                write(line, Tier::L2, &mut report)
            },
        )?;
    }
    if options.tiers != Tiers::L2 {
        let archive = Archive::new(store.root());
        let Some(l3) = L3Index::open_existing(&archive)? else {
            return Ok(report);
        };
        let l3_searcher = l3.reader()?.searcher();
        for file in archive.files()? {
            for (offset, mut entry) in archive.read_file(&file)?.entries {
                if !options.keeps(&entry.record) {
                    continue;
                }
                // Only the copy the L3 index points at (a left-over copy of an
                // interrupted operation is not the record), and not an id that
                // is live in L2 (L2 wins).
                let current = locate(&l3_searcher, l3.fields(), &entry.record.id)?
                    .is_some_and(|at| at.file == file && at.offset == offset);
                if !current || store.live_ids(&searcher, [&entry.record.id])?.len() == 1 {
                    continue;
                }
                pending.apply(&mut entry.record);
                let embedding = (!options.without_vectors).then(|| entry.vector()).flatten();
                let vector = embedding.as_deref().map(|v| (entry.text_hash, v));
                write(
                    envelope(&entry.record, vector, Some(&entry)),
                    Tier::L3,
                    &mut report,
                )?;
            }
        }
    }
    Ok(report)
}

/// The export line of a live record without its vector: what `sync` stores
/// in Postgres (the vector goes beside it, in a pgvector column).
pub fn line(record: &Record) -> Value {
    envelope(record, None, None)
}

/// The export line of a record (with its archive entry when archived).
fn envelope(record: &Record, vector: Option<(u64, &[f32])>, archived: Option<&Entry>) -> Value {
    let mut line = Map::new();
    line.insert("knowledge_db".into(), json!(FORMAT));
    line.insert("id".into(), json!(record.id));
    line.insert("kind".into(), json!(record.kind));
    line.insert("namespace".into(), json!(record.namespace));
    line.insert(
        "tier".into(),
        json!(if archived.is_some() { "l3" } else { "l2" }),
    );
    line.insert("added_at".into(), json!(record.added_at));
    line.insert("access_count".into(), json!(record.access_count));
    if let Some(last) = &record.last_accessed {
        line.insert("last_accessed".into(), json!(last));
    }
    line.insert("pruned".into(), json!(record.pruned));
    if let Some(context) = &record.context {
        line.insert("context".into(), json!(context));
    }
    // Which record the context came from: search raises that turn beside
    // its reply (`search::neighbours`), so a restored store ranks as before.
    if let Some(from) = &record.context_from {
        line.insert("context_from".into(), json!(from));
    }
    if let Some(entry) = archived {
        line.insert("archived_at".into(), json!(format_time(entry.archived_at)));
        if !entry.dropped.is_empty() {
            line.insert("dropped".into(), json!(entry.dropped));
        }
    }
    if let Some((hash, vector)) = vector {
        line.insert(
            "vector".into(),
            json!({
                "model": crate::embed::MODEL_ID,
                "text_hash": format!("{hash:016x}"),
                "f32le": base64::engine::general_purpose::STANDARD
                    .encode(crate::index::embedding_bytes(vector)),
            }),
        );
    }
    line.insert("source".into(), record.source.clone());
    Value::Object(line)
}

/// Marks the line's vector as a draft (see `crate::index::has_vector::DRAFT`):
/// kept for people and tools reading the export, not loaded back (a load
/// embeds the text with the full model instead).
fn mark_draft(line: &mut Value) {
    if let Some(vector) = line.get_mut("vector").and_then(Value::as_object_mut) {
        vector.insert("draft".into(), json!(true));
    }
}

/// Whether a JSON value is an export line (has the `knowledge_db` marker).
pub fn is_export_line(value: &Value) -> bool {
    value.get("knowledge_db").is_some()
}

/// A record read back from an export line, with what the store restores.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The record as it was exported.
    pub record: Record,
    /// The exported embedding, when it is still the one of this record's text.
    pub vector: Option<(u64, Vec<f32>)>,
    /// Set for a record that was archived.
    pub archived: Option<ArchivedAs>,
}

/// Reads one export line, or says which field is wrong.
pub fn parse_line(value: Value, origin: &Origin) -> std::result::Result<Imported, InputError> {
    let fail = |field: &str, message: String| InputError::new(origin, Some(field), message);
    let Value::Object(mut line) = value else {
        return Err(InputError::new(origin, None, "expected a JSON object"));
    };
    let format = line.get("knowledge_db");
    if format.and_then(Value::as_str) != Some(FORMAT) {
        return Err(fail(
            "knowledge_db",
            format!(
                "expected \"{FORMAT}\" (an export line of this version), found {}",
                format.map_or("nothing".into(), Value::to_string)
            ),
        ));
    }
    let text =
        |line: &Map<String, Value>, key: &str| -> std::result::Result<Option<String>, InputError> {
            match line.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(fail(
                    key,
                    format!("expected a string, found {}", type_name(other)),
                )),
            }
        };
    let required = |line: &Map<String, Value>, key: &str| {
        text(line, key)?.ok_or_else(|| fail(key, "missing; every export line has it".into()))
    };
    let id = required(&line, "id")?;
    let kind_name = required(&line, "kind")?;
    let kind = Kind::parse(&kind_name).ok_or_else(|| {
        fail(
            "kind",
            format!("unknown kind `{kind_name}`; expected one of segment, task, message, note"),
        )
    })?;
    let namespace = required(&line, "namespace")?;
    let tier = match required(&line, "tier")?.as_str() {
        "l2" => Tier::L2,
        "l3" => Tier::L3,
        other => {
            return Err(fail(
                "tier",
                format!("expected \"l2\" or \"l3\", found \"{other}\""),
            ))
        }
    };
    let added_at = required(&line, "added_at")?;
    let access_count = match line.get("access_count") {
        None => 0,
        Some(v) => v.as_u64().ok_or_else(|| {
            fail(
                "access_count",
                format!("expected a whole number, found {}", type_name(v)),
            )
        })?,
    };
    let last_accessed = text(&line, "last_accessed")?;
    let pruned = match line.get("pruned") {
        None => false,
        Some(v) => v.as_bool().ok_or_else(|| {
            fail(
                "pruned",
                format!("expected true or false, found {}", type_name(v)),
            )
        })?,
    };
    let context = text(&line, "context")?;
    let context_from = text(&line, "context_from")?;
    let source = line
        .remove("source")
        .ok_or_else(|| fail("source", "missing: the record's own JSON".into()))?;
    let options = ParseOptions {
        kind: Some(kind),
        namespace: Some(namespace),
        added_at,
        ..ParseOptions::default()
    };
    let mut record = parse_record(source, origin, &options).map_err(|mut e| {
        e.field = Some(
            format!("source.{}", e.field.as_deref().unwrap_or(""))
                .trim_end_matches('.')
                .to_string(),
        );
        e
    })?;
    if record.id != id {
        return Err(fail(
            "id",
            format!(
                "\"{id}\" is not the id of its `source`, which is \"{}\"",
                record.id
            ),
        ));
    }
    record.access_count = access_count;
    record.last_accessed = last_accessed;
    record.pruned = pruned;
    record.context = context;
    record.context_from = context_from;
    let vector = match line.get("vector") {
        None | Some(Value::Null) => None,
        Some(v) => exported_vector(v).map_err(|m| fail("vector", m))?,
    }
    // A vector of another model, or of a text that is no longer the record's,
    // is not used: the record is embedded again.
    .filter(|(hash, _)| *hash == text_hash(&embedding_text(&record)));
    let archived = match tier {
        Tier::L2 => None,
        Tier::L3 => {
            let at = required(&line, "archived_at")?;
            let archived_at = parse_time(&at)
                .ok_or_else(|| fail("archived_at", format!("\"{at}\" is not a time")))?;
            let dropped = match line.get("dropped") {
                None => Vec::new(),
                Some(v) => serde_json::from_value(v.clone()).map_err(|_| {
                    fail(
                        "dropped",
                        format!("expected a list of strings, found {}", type_name(v)),
                    )
                })?,
            };
            Some(ArchivedAs {
                id: id.clone(),
                archived_at,
                dropped,
            })
        }
    };
    Ok(Imported {
        record,
        vector,
        archived,
    })
}

/// `(text hash, vector)` of an exported `vector` object; `None` when it is of
/// another model or a draft.
fn exported_vector(value: &Value) -> std::result::Result<Option<(u64, Vec<f32>)>, String> {
    let model = value.get("model").and_then(Value::as_str);
    // A draft is not loaded back: the full model embeds the text instead.
    let draft = value.get("draft").and_then(Value::as_bool) == Some(true);
    if model != Some(crate::embed::MODEL_ID) || draft {
        return Ok(None);
    }
    let hash = value
        .get("text_hash")
        .and_then(Value::as_str)
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .ok_or("`text_hash` must be 16 hex digits")?;
    let bytes = value
        .get("f32le")
        .and_then(Value::as_str)
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .ok_or("`f32le` must be base64 of little-endian f32s")?;
    let vector = crate::index::embedding_from_bytes(&bytes, crate::embed::DIM)
        .ok_or(format!("`f32le` must hold {} numbers", crate::embed::DIM))?;
    Ok(Some((hash, vector)))
}

/// Restores imported records: live ones into L2, archived ones into L2 and
/// then into the archive as they were (see the module docs). An archived
/// record already archived with the same content is left alone.
pub fn restore_imported(
    store: &Store,
    imported: Vec<Imported>,
    embedder: Option<&mut dyn crate::embed::Embedder>,
    lock_timeout: std::time::Duration,
) -> Result<AddReport> {
    let (live, archived): (Vec<Imported>, Vec<Imported>) =
        imported.into_iter().partition(|i| i.archived.is_none());
    let (archived, already) = not_yet_archived(store, archived)?;
    let mut report = add_with_vectors(store, live, embedder, lock_timeout)?;
    report.unchanged += already;
    if archived.is_empty() {
        return Ok(report);
    }
    let as_given: Vec<ArchivedAs> = archived.iter().filter_map(|i| i.archived.clone()).collect();
    // Archived records keep exactly the vector they had (or none): no model.
    report.absorb(&add_with_vectors(store, archived, None, lock_timeout)?);
    let lock = store.lock_writer(lock_timeout)?;
    crate::tiers::ops::archive_as_given(store, &lock, &as_given)?;
    Ok(report)
}

fn add_with_vectors(
    store: &Store,
    imported: Vec<Imported>,
    embedder: Option<&mut dyn crate::embed::Embedder>,
    lock_timeout: std::time::Duration,
) -> Result<AddReport> {
    if imported.is_empty() {
        return Ok(AddReport::default());
    }
    let mut known = HashMap::new();
    let mut records = Vec::with_capacity(imported.len());
    for i in imported {
        if let Some((hash, vector)) = i.vector {
            known.insert(hash, vector);
        }
        records.push(i.record);
    }
    store
        .add_with_vectors(records, known, embedder, lock_timeout)
        .map(|(report, _)| report)
}

/// The archived imports whose id is not archived already with the same
/// content, and how many are (those are unchanged: nothing to do).
fn not_yet_archived(store: &Store, archived: Vec<Imported>) -> Result<(Vec<Imported>, usize)> {
    let archive = Archive::new(store.root());
    let Some(l3) = L3Index::open_existing(&archive)? else {
        return Ok((archived, 0));
    };
    let searcher = l3.reader()?.searcher();
    let lookup = crate::store::IdLookup::new(&searcher, l3.fields())?;
    let total = archived.len();
    let mut out = Vec::with_capacity(total);
    for i in archived {
        let same = lookup.hash_of(&i.record.id)? == Some(crate::index::record_hash(&i.record));
        if !same {
            out.push(i);
        }
    }
    let already = total - out.len();
    Ok((out, already))
}
