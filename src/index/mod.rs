//! The text index: how records are laid out in tantivy.
//!
//! Tantivy is both the BM25 engine and the source of truth for L2: every record's
//! JSON is kept in the stored field `record`, and everything else in the index can
//! be re-derived from it. The searchable fields mirror the record model: `title`
//! (topic, subject or title), `content`, `decisions`, `files`, `commands` and
//! `errors`, all analysed by the code-aware [`tokenizer`]. Filters use exact
//! (untokenized) fields: `id`, `kind`, `namespace`, `session`, `tier`,
//! `project`, `origin`, plus the `timestamp` date and the last `turn` covered.
//! `hash` fingerprints a record version so re-adding it is a no-op.

pub mod damage;
pub mod lookup;
pub mod stem;
pub mod tokenizer;

use tantivy::schema::{
    DateOptions, DateTimePrecision, Field, IndexRecordOption, NumericOptions, Schema,
    TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::{DateTime, Index, TantivyDocument};

use crate::error::{Error, Result};
use crate::record::{parse::derive_fields, Record};

/// Handles to the fields of the index schema.
#[derive(Debug, Clone, Copy)]
pub struct IndexFields {
    /// The record's id (exact, stored, fast).
    pub id: Field,
    /// Its kind name (keyword, fast).
    pub kind: Field,
    /// Its namespace (keyword, fast).
    pub namespace: Field,
    /// Its session id (keyword, fast).
    pub session: Field,
    /// Its tier, `l2` or `l3` (keyword, fast).
    pub tier: Field,
    /// Its project ([`NO_PROJECT`] when it has none; keyword, fast).
    pub project: Field,
    /// Who wrote it: a team member's origin for a pulled record, else
    /// [`LOCAL_ORIGIN`] (keyword, fast).
    pub origin: Field,
    /// The last turn it covers (a message's own turn), when it has one
    /// (indexed, fast): what is still in a live context is told apart by it.
    pub turn: Field,
    /// Title text (code tokenizer).
    pub title: Field,
    /// Content text (code tokenizer).
    pub content: Field,
    /// Decisions text (code tokenizer).
    pub decisions: Field,
    /// File names (code tokenizer).
    pub files: Field,
    /// Commands (code tokenizer).
    pub commands: Field,
    /// Errors (code tokenizer).
    pub errors: Field,
    /// The record's own time, to the second (indexed, fast).
    pub timestamp: Field,
    /// The version hash, [`record_hash`] (fast).
    pub hash: Field,
    /// The whole record as JSON (stored).
    pub record: Field,
    /// The embedding, little-endian f32 bytes (stored).
    pub embedding: Field,
    /// Hash of the text the embedding was made from (indexed, fast).
    pub text_hash: Field,
    /// Which vector the record carries, a [`has_vector`] value (indexed, fast).
    pub has_vector: Field,
}

/// The `project` term of a record that has none: found from every project.
pub const NO_PROJECT: &str = "";

/// The `origin` term of the store's own records (pulled records carry the
/// name of the machine or user that wrote them).
pub const LOCAL_ORIGIN: &str = "local";

/// The searchable text fields with their names, in the order results explain them.
pub const TEXT_FIELDS: [&str; 6] = [
    "title",
    "content",
    "decisions",
    "files",
    "commands",
    "errors",
];

impl IndexFields {
    /// The schema of a new store.
    pub fn schema() -> Schema {
        let mut builder = Schema::builder();
        let keyword = STRING | FAST;
        builder.add_text_field("id", STRING | STORED | FAST);
        builder.add_text_field("kind", keyword.clone());
        builder.add_text_field("namespace", keyword.clone());
        builder.add_text_field("session", keyword.clone());
        builder.add_text_field("tier", keyword.clone());
        builder.add_text_field("project", keyword.clone());
        builder.add_text_field("origin", keyword);
        let text = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer::CODE_TOKENIZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        for name in TEXT_FIELDS {
            builder.add_text_field(name, text.clone());
        }
        builder.add_date_field(
            "timestamp",
            DateOptions::default()
                .set_indexed()
                .set_fast()
                .set_precision(DateTimePrecision::Seconds),
        );
        builder.add_u64_field("hash", NumericOptions::default().set_fast());
        builder.add_text_field("record", STORED);
        // The embedding (little-endian f32) of `text_hash`'s text; `has_vector`
        // (see `has_vector`) finds records still waiting for one, or for the
        // full model's.
        builder.add_bytes_field("embedding", STORED);
        let indexed_fast = NumericOptions::default().set_indexed().set_fast();
        builder.add_u64_field("text_hash", indexed_fast.clone());
        builder.add_u64_field("has_vector", indexed_fast.clone());
        builder.add_u64_field("turn", indexed_fast);
        builder.build()
    }

    /// Looks the fields up in an opened index's schema.
    pub fn from_schema(schema: &Schema) -> Result<IndexFields> {
        let get = |name: &str| {
            schema.get_field(name).map_err(|_| {
                Error::Index(tantivy::TantivyError::SchemaError(format!(
                    "the text index has no field `{name}`; it was not written by this knowledge-db"
                )))
            })
        };
        Ok(IndexFields {
            id: get("id")?,
            kind: get("kind")?,
            namespace: get("namespace")?,
            session: get("session")?,
            tier: get("tier")?,
            project: get("project")?,
            origin: get("origin")?,
            turn: get("turn")?,
            title: get("title")?,
            content: get("content")?,
            decisions: get("decisions")?,
            files: get("files")?,
            commands: get("commands")?,
            errors: get("errors")?,
            timestamp: get("timestamp")?,
            hash: get("hash")?,
            record: get("record")?,
            embedding: get("embedding")?,
            text_hash: get("text_hash")?,
            has_vector: get("has_vector")?,
        })
    }

    /// The text fields paired with their names.
    pub fn text_fields(&self) -> [(Field, &'static str); 6] {
        [
            (self.title, "title"),
            (self.content, "content"),
            (self.decisions, "decisions"),
            (self.files, "files"),
            (self.commands, "commands"),
            (self.errors, "errors"),
        ]
    }

    /// The tantivy document for a record, with its embedding if it has one.
    pub fn document(
        &self,
        record: &Record,
        hash: u64,
        vector: &VectorField,
    ) -> Result<TantivyDocument> {
        let mut doc = TantivyDocument::default();
        let f = &record.fields;
        doc.add_text(self.id, &record.id);
        doc.add_text(self.kind, record.kind.as_str());
        doc.add_text(self.namespace, &record.namespace);
        if let Some(session) = &f.session_id {
            doc.add_text(self.session, session);
        }
        doc.add_text(self.tier, record.tier.as_str());
        doc.add_text(self.project, f.project.as_deref().unwrap_or(NO_PROJECT));
        doc.add_text(self.origin, f.origin.as_deref().unwrap_or(LOCAL_ORIGIN));
        if let Some(turn) = f.end_turn.or(f.start_turn) {
            doc.add_u64(self.turn, turn);
        }
        for (field, text) in self.texts(record) {
            doc.add_text(field, text);
        }
        if let Some(secs) = f.timestamp {
            doc.add_date(self.timestamp, DateTime::from_timestamp_secs(secs));
        }
        doc.add_u64(self.hash, hash);
        doc.add_u64(self.text_hash, vector.text_hash);
        match &vector.embedding {
            Some(v) => {
                doc.add_bytes(self.embedding, &embedding_bytes(v));
                let kind = if vector.draft {
                    has_vector::DRAFT
                } else {
                    has_vector::FULL
                };
                doc.add_u64(self.has_vector, kind);
            }
            None => doc.add_u64(self.has_vector, has_vector::NONE),
        }
        let json = serde_json::to_string(record).map_err(|e| Error::CorruptRecord {
            id: record.id.clone(),
            message: e.to_string(),
        })?;
        doc.add_text(self.record, json);
        Ok(doc)
    }

    /// Every text of `record` that the analyzer tokenizes, with its field.
    /// The previous turn counts as more of the content (one field, so a word
    /// in both is not scored twice); snippets come from the record, not the index.
    pub fn texts<'a>(&self, record: &'a Record) -> impl Iterator<Item = (Field, &'a str)> {
        let f = &record.fields;
        let lists = [
            (self.decisions, &f.decisions),
            (self.files, &f.files),
            (self.commands, &f.commands),
            (self.errors, &f.errors),
        ];
        [
            (self.title, f.title.as_str()),
            (self.content, f.content.as_str()),
        ]
        .into_iter()
        .chain(record.context.as_deref().map(|c| (self.content, c)))
        .chain(
            lists
                .into_iter()
                .flat_map(|(field, values)| values.iter().map(move |v| (field, v.as_str()))),
        )
    }

    /// The record stored in a document, with its searchable fields re-derived.
    pub fn record(&self, doc: &TantivyDocument) -> Result<Record> {
        stored_record(doc, self.record)
    }
}

/// The record a stored document holds in `field` (its JSON), with its
/// searchable fields re-derived; also for an index of an older schema, whose
/// fields [`IndexFields`] cannot name.
pub fn stored_record(doc: &TantivyDocument, field: Field) -> Result<Record> {
    use tantivy::schema::Value;
    let json = doc
        .get_first(field)
        .and_then(|v| v.as_str())
        .ok_or_else(|| Error::CorruptRecord {
            id: "?".into(),
            message: "stored document has no record JSON".into(),
        })?;
    let mut record: Record = serde_json::from_str(json).map_err(|e| Error::CorruptRecord {
        id: "?".into(),
        message: e.to_string(),
    })?;
    rederive_fields(&mut record)?;
    Ok(record)
}

/// Re-derives a stored record's searchable fields from its JSON (they are not
/// stored, only the JSON is).
pub fn rederive_fields(record: &mut Record) -> Result<()> {
    record.fields = derive_fields(record.kind, &record.source).map_err(|(field, message)| {
        Error::CorruptRecord {
            id: record.id.clone(),
            message: format!("field `{field}`: {message}"),
        }
    })?;
    Ok(())
}

/// Little-endian bytes of a vector, as the `embedding` field stores it (and
/// the vector files copy it).
pub fn embedding_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The vector in `bytes`, if it has `dim` values.
pub fn embedding_from_bytes(bytes: &[u8], dim: usize) -> Option<Vec<f32>> {
    (bytes.len() == dim * 4).then(|| {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// The embedding part of a document: the hash of the embedded text and its vector.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VectorField {
    /// Hash of the text the embedding is (or is to be) made from.
    pub text_hash: u64,
    /// The vector; `None` when the record has none yet.
    pub embedding: Option<Vec<f32>>,
    /// The vector is a draft (`crate::embed::Embedder::is_draft`), to be made
    /// again by the full model.
    pub draft: bool,
}

/// Values of the `has_vector` field: which vector a record carries.
pub mod has_vector {
    /// None yet: the upkeep embeds it.
    pub const NONE: u64 = 0;
    /// The full model's vector of its text (or, in a store whose rules are
    /// outdated, of the text older rules chose).
    pub const FULL: u64 = 1;
    /// A draft vector, searched like any other until the full model's replaces it.
    pub const DRAFT: u64 = 2;

    /// Whether a `has_vector` value stands for a stored vector.
    pub fn carries(value: Option<u64>) -> bool {
        matches!(value, Some(FULL | DRAFT))
    }
}

/// Registers the code analyzer with an index (tokenizers are not persisted).
pub fn register_tokenizers(index: &Index) {
    index
        .tokenizers()
        .register(tokenizer::CODE_TOKENIZER, tokenizer::analyzer());
}

/// Lets searches over this index score its segments in parallel, one thread
/// per core (up to 4). A large store has several segments (after a bulk add of
/// 1M records: one of ~500k and eight of ~65k), and scoring is per segment, so
/// on two cores a BM25 query at 1M records takes about 60% of the time it takes
/// on one (`examples/search_latency.rs`). Small stores (one segment) are
/// unaffected. `KNOWLEDGE_DB_SEARCH_THREADS=1` turns it off.
pub fn search_in_parallel(index: &mut Index) -> crate::Result<()> {
    let threads = std::env::var("KNOWLEDGE_DB_SEARCH_THREADS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(4)));
    if threads > 1 {
        index.set_multithread_executor(threads)?;
    }
    Ok(())
}

/// A stable fingerprint of a record version: kind, namespace and the caller's JSON.
pub fn record_hash(record: &Record) -> u64 {
    let mut bytes = Vec::with_capacity(256);
    bytes.extend_from_slice(record.kind.as_str().as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(record.namespace.as_bytes());
    bytes.push(0);
    // serde_json with preserve_order writes keys as given, so the same input is the same bytes.
    if serde_json::to_writer(&mut bytes, &record.source).is_err() {
        bytes.extend_from_slice(record.id.as_bytes());
    }
    // A record whose conversation context changed is a new version of it.
    if let Some(context) = &record.context {
        bytes.push(0);
        bytes.extend_from_slice(context.as_bytes());
    }
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// How many live records of an index fall in each kind, tier, namespace,
/// project and origin, and the time range of their own timestamps: read from
/// the fast columns, no stored document is decoded. L2 and the L3 index share the schema, so
/// `stats` counts both tiers with it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnCounts {
    /// Live records per kind name.
    pub by_kind: std::collections::BTreeMap<String, u64>,
    /// Live records per tier (`l2`, `l3`).
    pub by_tier: std::collections::BTreeMap<String, u64>,
    /// Live records per namespace.
    pub by_namespace: std::collections::BTreeMap<String, u64>,
    /// Live records per project ([`NO_PROJECT`] for records of none).
    pub by_project: std::collections::BTreeMap<String, u64>,
    /// Live records per origin ([`LOCAL_ORIGIN`] for the store's own).
    pub by_origin: std::collections::BTreeMap<String, u64>,
    /// Unix seconds of the oldest record time; `None` when no record has one.
    pub oldest: Option<i64>,
    /// Unix seconds of the newest record time; `None` when no record has one.
    pub newest: Option<i64>,
}

/// Which documents of `segment` are in `namespace` (all when `None`); `None`
/// when the namespace has no record in the segment.
#[allow(clippy::type_complexity)]
pub fn in_namespace(
    segment: &tantivy::SegmentReader,
    namespace: Option<&str>,
) -> crate::Result<Option<Box<dyn Fn(tantivy::DocId) -> bool>>> {
    let Some(namespace) = namespace else {
        return Ok(Some(Box::new(|_| true)));
    };
    let Some(column) = segment.fast_fields().str("namespace")? else {
        return Ok(None);
    };
    let ord = column
        .dictionary()
        .term_ord(namespace)
        .map_err(|e| crate::Error::io("text index", e))?;
    Ok(ord.map(|ord| {
        Box::new(move |doc| column.term_ords(doc).any(|o| o == ord))
            as Box<dyn Fn(tantivy::DocId) -> bool>
    }))
}

impl ColumnCounts {
    /// Counts the live documents of `searcher`.
    pub fn of(searcher: &tantivy::Searcher) -> crate::Result<ColumnCounts> {
        ColumnCounts::of_namespace(searcher, None)
    }

    /// Counts the live documents of `searcher` in `namespace` (all when `None`).
    pub fn of_namespace(
        searcher: &tantivy::Searcher,
        namespace: Option<&str>,
    ) -> crate::Result<ColumnCounts> {
        let mut counts = ColumnCounts::default();
        for segment in searcher.segment_readers() {
            let fast = segment.fast_fields();
            let Some(wanted) = in_namespace(segment, namespace)? else {
                continue;
            };
            let columns = [
                (fast.str("kind")?, &mut counts.by_kind),
                (fast.str("tier")?, &mut counts.by_tier),
                (fast.str("namespace")?, &mut counts.by_namespace),
                (fast.str("project")?, &mut counts.by_project),
                (fast.str("origin")?, &mut counts.by_origin),
            ];
            for (column, map) in columns {
                let Some(column) = column else { continue };
                let mut per_ord: std::collections::HashMap<u64, u64> = Default::default();
                for doc in segment.doc_ids_alive().filter(|&doc| wanted(doc)) {
                    for ord in column.term_ords(doc) {
                        *per_ord.entry(ord).or_default() += 1;
                    }
                }
                let mut name = String::new();
                for (ord, count) in per_ord {
                    name.clear();
                    column
                        .ord_to_str(ord, &mut name)
                        .map_err(|e| crate::Error::io("text index", e))?;
                    *map.entry(name.clone()).or_default() += count;
                }
            }
            let times = fast.date("timestamp")?;
            for doc in segment.doc_ids_alive().filter(|&doc| wanted(doc)) {
                if let Some(t) = times.first(doc) {
                    counts.include_time(t.into_timestamp_secs());
                }
            }
        }
        Ok(counts)
    }

    fn include_time(&mut self, secs: i64) {
        self.oldest = Some(self.oldest.map_or(secs, |o| o.min(secs)));
        self.newest = Some(self.newest.map_or(secs, |n| n.max(secs)));
    }

    /// Adds another index's counts (the other tier) to these.
    pub fn merge(&mut self, other: &ColumnCounts) {
        for (mine, theirs) in [
            (&mut self.by_kind, &other.by_kind),
            (&mut self.by_tier, &other.by_tier),
            (&mut self.by_namespace, &other.by_namespace),
            (&mut self.by_project, &other.by_project),
            (&mut self.by_origin, &other.by_origin),
        ] {
            for (name, count) in theirs {
                *mine.entry(name.clone()).or_default() += count;
            }
        }
        for secs in other.oldest.into_iter().chain(other.newest) {
            self.include_time(secs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedding_bytes_round_trip() {
        let v = vec![0.5f32, -1.25, 3.0];
        assert_eq!(embedding_from_bytes(&embedding_bytes(&v), 3), Some(v));
        assert_eq!(embedding_from_bytes(&[0u8; 8], 3), None);
    }
}
