//! Turning caller JSON into records, with errors that name the field.
//!
//! The accepted shapes are the ones agents already write (see DESIGN.md): the L2
//! segment JSON (`segment_id`, `topic`, `compressed_content`, …), the cold-task
//! summary (`session_id`, `task_id`, `subject`, …), raw messages (`role`, `text`),
//! and plain notes (`{id, title, text, metadata}`, which includes BEIR corpus lines
//! with `_id`). A record may name its kind with a `kind` field; otherwise it is
//! recognised by its fields.

use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::{Date, OffsetDateTime, PrimitiveDateTime};

use super::{Fields, Kind, Record, DEFAULT_NAMESPACE};
use crate::error::{InputError, Origin};

/// How to read records: forced kind, namespace rules, and the time they arrive.
#[derive(Debug, Clone, Default)]
pub struct ParseOptions {
    /// Treat every record as this kind (e.g. `note` for BEIR corpora); `None` detects it.
    pub kind: Option<Kind>,
    /// Namespace given on the command line; wins over a record's own `namespace`.
    pub namespace: Option<String>,
    /// Take the namespace from this metadata field (`metadata.FIELD`, else `FIELD`).
    pub namespace_field: Option<String>,
    /// RFC 3339 time stamped on new records as `added_at`.
    pub added_at: String,
}

/// A field-level problem found while deriving fields: (field, message).
type FieldError = (String, String);

/// The shape of a valid segment, shown with every problem found in one, so an
/// agent that wrote it wrong can fix it in one go.
pub const SEGMENT_EXAMPLE: &str = r#"{"segment_id":"S:segment:12-40","session_id":"S","topic":"…","start_turn":12,"end_turn":40,"compressed_content":"…","key_decisions":["…"],"key_files":["src/a.rs"]}"#;

/// Fields only segments have: a record holding one without `segment_id` is a
/// segment that lost its id, not a record of unknown kind.
const SEGMENT_FIELDS: &[&str] = &[
    "compressed_content",
    "key_files",
    "compression_ratio",
    "topic",
];

fn with_segment_example(message: String) -> String {
    format!("{message}; expected a segment like {SEGMENT_EXAMPLE}")
}

/// Parses one JSON value into a record, or says exactly what is wrong with it.
pub fn parse_record(
    value: Value,
    origin: &Origin,
    options: &ParseOptions,
) -> Result<Record, InputError> {
    let plain = |field: Option<&str>, message: String| InputError::new(origin, field, message);
    let Value::Object(object) = &value else {
        return Err(plain(
            None,
            format!("expected a JSON object, found {}", type_name(&value)),
        ));
    };
    let kind = detect_kind(object, options.kind).map_err(|(f, m)| plain(f.as_deref(), m))?;
    // Problems with a segment come with the shape of a valid one.
    let fail = |field: Option<&str>, message: String| {
        let message = if kind == Kind::Segment {
            with_segment_example(message)
        } else {
            message
        };
        InputError::new(origin, field, message)
    };
    let id = record_id(kind, object).map_err(|(f, m)| fail(Some(&f), m))?;
    let namespace = namespace(object, options).map_err(|(f, m)| fail(Some(&f), m))?;
    let fields = derive_fields(kind, &value).map_err(|(f, m)| fail(Some(&f), m))?;
    // Conversation context belongs to conversational records: on a segment or
    // task a `context` key is only part of the caller's JSON.
    let context = match kind {
        Kind::Message | Kind::Note => opt_str(object, "context")
            .map_err(|(f, m)| fail(Some(&f), m))?
            .map(|c| super::context::clip(&c))
            .filter(|c| !c.trim().is_empty()),
        Kind::Segment | Kind::Task => None,
    };
    if fields.title.trim().is_empty() && fields.content.trim().is_empty() {
        return Err(fail(
            Some(text_field_name(kind)),
            "the record has no text to search (title and content are both empty)".into(),
        ));
    }
    Ok(Record {
        id,
        kind,
        namespace,
        added_at: options.added_at.clone(),
        tier: Default::default(),
        pruned: false,
        access_count: 0,
        last_accessed: None,
        context,
        context_from: None,
        source: value,
        fields,
    })
}

fn text_field_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Segment => "compressed_content",
        Kind::Task => "subject",
        Kind::Message | Kind::Note => "text",
    }
}

fn detect_kind(
    object: &Map<String, Value>,
    forced: Option<Kind>,
) -> Result<Kind, (Option<String>, String)> {
    if let Some(value) = object.get("kind") {
        let name = value.as_str().ok_or_else(|| {
            (
                Some("kind".to_string()),
                format!("expected a string, found {}", type_name(value)),
            )
        })?;
        return Kind::parse(name).ok_or_else(|| {
            (
                Some("kind".to_string()),
                format!("unknown kind `{name}`; expected one of segment, task, message, note"),
            )
        });
    }
    if let Some(kind) = forced {
        return Ok(kind);
    }
    let has = |key: &str| object.contains_key(key);
    if has("segment_id") {
        Ok(Kind::Segment)
    } else if has("task_id") {
        Ok(Kind::Task)
    } else if has("role") {
        Ok(Kind::Message)
    } else if (has("id") || has("_id")) && (has("text") || has("title")) {
        Ok(Kind::Note)
    } else if SEGMENT_FIELDS.iter().any(|f| has(f)) {
        Err((
            Some("segment_id".to_string()),
            with_segment_example(
                "missing: a segment needs its `segment_id` (for a queued segment, the id the reminder gave)"
                    .into(),
            ),
        ))
    } else {
        Err((
            None,
            "cannot tell what kind of record this is: expected a segment (segment_id, compressed_content), \
             a task (session_id, task_id, subject), a message (role, text) or a note (id, text); \
             or set `kind`"
                .into(),
        ))
    }
}

fn record_id(kind: Kind, object: &Map<String, Value>) -> Result<String, FieldError> {
    match kind {
        Kind::Segment => required_id(object, "segment_id"),
        Kind::Task => {
            let session = required_id(object, "session_id")?;
            let task = required_id(object, "task_id")?;
            Ok(format!("{session}:{task}"))
        }
        Kind::Message => {
            if object.contains_key("id") {
                return required_id(object, "id");
            }
            let session = required_id(object, "session_id").map_err(|_| {
                (
                    "id".to_string(),
                    "missing: a message needs `id`, or `session_id` and `turn_index`".to_string(),
                )
            })?;
            let turn = opt_u64(object, "turn_index")?
                .or(opt_u64(object, "turn")?)
                .ok_or_else(|| {
                    (
                        "id".to_string(),
                        "missing: a message needs `id`, or `session_id` and `turn_index`"
                            .to_string(),
                    )
                })?;
            Ok(format!("{session}:turn:{turn}"))
        }
        Kind::Note => {
            let key = if object.contains_key("_id") && !object.contains_key("id") {
                "_id"
            } else {
                "id"
            };
            required_id(object, key)
        }
    }
}

/// An identifier field: a non-empty string, or an integer written as one.
fn required_id(object: &Map<String, Value>, key: &str) -> Result<String, FieldError> {
    let err = |m: String| (key.to_string(), m);
    match object.get(key) {
        None | Some(Value::Null) => Err(err("missing; every record needs an id".into())),
        Some(Value::String(s)) if s.trim().is_empty() => Err(err("is empty".into())),
        Some(Value::String(s)) if s.len() > 512 => {
            Err(err(format!("is {} bytes; ids are at most 512", s.len())))
        }
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => Ok(n.to_string()),
        Some(other) => Err(err(format!(
            "expected a string, found {}",
            type_name(other)
        ))),
    }
}

fn namespace(object: &Map<String, Value>, options: &ParseOptions) -> Result<String, FieldError> {
    let name = if let Some(field) = &options.namespace_field {
        let found = object
            .get("metadata")
            .and_then(|m| m.get(field))
            .map(|v| (format!("metadata.{field}"), v))
            .or_else(|| object.get(field).map(|v| (field.clone(), v)));
        match found {
            Some((_, Value::String(s))) => s.clone(),
            Some((_, Value::Number(n))) => n.to_string(),
            Some((path, other)) => {
                return Err((
                    path,
                    format!("expected a string namespace, found {}", type_name(other)),
                ))
            }
            None => {
                return Err((
                    format!("metadata.{field}"),
                    "missing (named by --namespace-field)".into(),
                ))
            }
        }
    } else if let Some(ns) = &options.namespace {
        ns.clone()
    } else {
        opt_str(object, "namespace")?.unwrap_or_else(|| DEFAULT_NAMESPACE.to_string())
    };
    validate_namespace(&name).map_err(|m| ("namespace".to_string(), m))?;
    Ok(name)
}

/// Namespaces are short non-empty names without control characters.
pub fn validate_namespace(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("is empty".into());
    }
    if name.len() > 200 {
        return Err(format!(
            "is {} bytes; namespaces are at most 200",
            name.len()
        ));
    }
    if name.chars().any(char::is_control) {
        return Err("contains control characters".into());
    }
    Ok(())
}

/// Derives the searchable fields of a record of `kind` from its JSON.
///
/// Used when a record is added (where it validates) and when one is read back.
pub fn derive_fields(kind: Kind, value: &Value) -> Result<Fields, FieldError> {
    let Value::Object(o) = value else {
        return Err((
            "".into(),
            format!("expected a JSON object, found {}", type_name(value)),
        ));
    };
    let mut f = Fields {
        session_id: opt_id_string(o, "session_id")?,
        start_turn: opt_u64(o, "start_turn")?,
        end_turn: opt_u64(o, "end_turn")?,
        relevance_score: opt_f64(o, "relevance_score")?,
        project: lenient_str(o.get("project")),
        origin: lenient_str(o.get("sync").and_then(|sync| sync.get("origin"))),
        ..Fields::default()
    };
    match kind {
        Kind::Segment => {
            f.title = opt_str(o, "topic")?.unwrap_or_default();
            f.content = opt_str(o, "compressed_content")?.unwrap_or_default();
            f.decisions = str_list(o, "key_decisions")?;
            f.files = str_list(o, "key_files")?;
            f.commands = str_list(o, "commands_run")?;
            f.errors = str_list(o, "errors_resolved")?;
            f.timestamp = first_time(o, &["compressed_at", "timestamp"])?;
            validate_segment_numbers(o)?;
        }
        Kind::Task => {
            f.title = opt_str(o, "subject")?.unwrap_or_default();
            let mut content = str_list(o, "key_outcomes")?;
            if let Some(description) = opt_str(o, "description")? {
                content.insert(0, description);
            }
            f.content = content.join("\n");
            f.decisions = str_list(o, "key_decisions")?;
            f.files = str_list(o, "files_modified")?;
            f.commands = str_list(o, "commands_run")?;
            f.errors = str_list(o, "errors_resolved")?;
            f.timestamp = first_time(o, &["compressed_at", "completed_at", "timestamp"])?;
        }
        Kind::Message => {
            let role = opt_str(o, "role")?.unwrap_or_default();
            f.title = role;
            f.content = message_text(o)?;
            f.files = str_list(o, "files")?;
            f.commands = str_list(o, "tool_names")?;
            f.commands.extend(str_list(o, "commands")?);
            f.errors = str_list(o, "errors")?;
            let turn = opt_u64(o, "turn_index")?.or(opt_u64(o, "turn")?);
            f.start_turn = f.start_turn.or(turn);
            f.end_turn = f.end_turn.or(turn);
            f.timestamp = first_time(o, &["timestamp", "created_at"])?;
        }
        Kind::Note => {
            f.title = opt_str(o, "title")?.unwrap_or_default();
            f.content = opt_str(o, "text")?.unwrap_or_default();
            f.files = str_list(o, "files")?;
            f.timestamp = first_time(o, &["timestamp", "created_at"])?;
        }
    }
    Ok(f)
}

fn validate_segment_numbers(o: &Map<String, Value>) -> Result<(), FieldError> {
    for key in [
        "original_tokens",
        "compressed_tokens",
        "access_count",
        "message_count",
    ] {
        opt_u64(o, key)?;
    }
    opt_f64(o, "compression_ratio")?;
    if let Some(meta) = o.get("metadata") {
        if !meta.is_object() && !meta.is_null() {
            return Err((
                "metadata".into(),
                format!("expected an object, found {}", type_name(meta)),
            ));
        }
    }
    Ok(())
}

/// A message's text: `text`, or `content` as a string or a list of content blocks.
fn message_text(o: &Map<String, Value>) -> Result<String, FieldError> {
    if let Some(text) = opt_str(o, "text")? {
        return Ok(text);
    }
    match o.get("content") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(blocks)) => Ok(blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                Value::Object(m) => m.get("text").and_then(Value::as_str),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")),
        Some(other) => Err((
            "content".into(),
            format!(
                "expected a string or a list of content blocks, found {}",
                type_name(other)
            ),
        )),
    }
}

/// A non-empty string value, else `None`: `project` and `sync.origin` are
/// read leniently, since JSON written before they had a meaning may hold
/// something else under those keys.
fn lenient_str(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn opt_str(o: &Map<String, Value>, key: &str) -> Result<Option<String>, FieldError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err((
            key.into(),
            format!("expected a string, found {}", type_name(other)),
        )),
    }
}

fn opt_id_string(o: &Map<String, Value>, key: &str) -> Result<Option<String>, FieldError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => Ok(Some(n.to_string())),
        _ => opt_str(o, key),
    }
}

fn opt_u64(o: &Map<String, Value>, key: &str) -> Result<Option<u64>, FieldError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| {
            (
                key.into(),
                format!("expected a non-negative integer, found {n}"),
            )
        }),
        Some(other) => Err((
            key.into(),
            format!(
                "expected a non-negative integer, found {}",
                type_name(other)
            ),
        )),
    }
}

fn opt_f64(o: &Map<String, Value>, key: &str) -> Result<Option<f64>, FieldError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err((
            key.into(),
            format!("expected a number, found {}", type_name(other)),
        )),
    }
}

fn str_list(o: &Map<String, Value>, key: &str) -> Result<Vec<String>, FieldError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err((
                    format!("{key}[{i}]"),
                    format!("expected a string, found {}", type_name(other)),
                )),
            })
            .collect(),
        Some(other) => Err((
            key.into(),
            format!("expected a list of strings, found {}", type_name(other)),
        )),
    }
}

fn first_time(o: &Map<String, Value>, keys: &[&str]) -> Result<Option<i64>, FieldError> {
    for key in keys {
        match o.get(*key) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => {
                return parse_time(s).map(Some).ok_or_else(|| {
                    (
                        key.to_string(),
                        format!(
                        "expected an RFC 3339 timestamp like 2026-01-05T10:00:00Z, found \"{s}\""
                    ),
                    )
                })
            }
            Some(Value::Number(n)) => {
                let secs = n.as_f64().unwrap_or(0.0);
                // Values past the year 5138 in seconds are milliseconds.
                let secs = if secs > 1e11 { secs / 1000.0 } else { secs };
                return Ok(Some(secs as i64));
            }
            Some(other) => {
                return Err((
                    key.to_string(),
                    format!("expected a timestamp string, found {}", type_name(other)),
                ))
            }
        }
    }
    Ok(None)
}

/// Parses RFC 3339, `YYYY-MM-DD HH:MM:SS` (UTC) or a bare date; returns Unix seconds.
pub fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(t) = OffsetDateTime::parse(text, &Rfc3339) {
        return Some(t.unix_timestamp());
    }
    let naive = time::macros::format_description!(
        "[year]-[month]-[day][first [T][ ]][hour]:[minute]:[second][optional [.[subsecond]]]"
    );
    if let Ok(t) = PrimitiveDateTime::parse(text, naive) {
        return Some(t.assume_utc().unix_timestamp());
    }
    let date = time::macros::format_description!("[year]-[month]-[day]");
    Date::parse(text, date)
        .ok()
        .map(|d| d.midnight().assume_utc().unix_timestamp())
}

/// Unix milliseconds of an RFC 3339 time (fractions of a second kept), else
/// of any time [`parse_time`] reads.
pub fn parse_time_millis(text: &str) -> Option<i64> {
    match OffsetDateTime::parse(text.trim(), &Rfc3339) {
        Ok(t) => Some((t.unix_timestamp_nanos() / 1_000_000) as i64),
        Err(_) => parse_time(text).map(|secs| secs.saturating_mul(1000)),
    }
}

/// RFC 3339 text of Unix milliseconds, with the milliseconds
/// (`2026-01-05T10:42:00.125Z`).
pub fn format_time_millis(millis: i64) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
        .ok()
        .and_then(|t| t.format(format).ok())
        .unwrap_or_else(|| format_time(millis.div_euclid(1000)))
}

/// RFC 3339 text of Unix seconds.
pub fn format_time(secs: i64) -> String {
    OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| secs.to_string())
}

/// How an error message names a JSON value's type: `null`, `a boolean`, `a number`…
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<Record, InputError> {
        parse_record(
            value,
            &Origin::line("in.jsonl", 3),
            &ParseOptions::default(),
        )
    }

    #[test]
    fn only_messages_and_notes_carry_a_conversation_context() {
        let note =
            parse(json!({"kind": "note", "id": "n1", "text": "t", "context": "before"})).unwrap();
        assert_eq!(note.context.as_deref(), Some("before"));
        let task = parse(json!({"kind": "task", "session_id": "s", "task_id": "1", "subject": "s", "context": "before"})).unwrap();
        assert_eq!(task.context, None);
        assert_eq!(
            task.source["context"], "before",
            "kept as the caller's JSON"
        );
    }

    #[test]
    fn segment_json_is_accepted_verbatim() {
        let source = json!({
            "segment_id": "seg-1", "topic": "OAuth refresh", "session_id": "s1",
            "start_turn": 10, "end_turn": 25, "compressed_at": "2026-01-05T10:00:00Z",
            "compressed_content": "Fixed token refresh in oauth2.py",
            "key_decisions": ["use PKCE"], "key_files": ["src/auth/oauth2.py"],
            "metadata": {"contains_code": true}, "unknown_extra": [1, 2]
        });
        let r = parse(source.clone()).unwrap();
        assert_eq!(r.id, "seg-1");
        assert_eq!(r.kind, Kind::Segment);
        assert_eq!(r.source, source);
        assert_eq!(r.fields.title, "OAuth refresh");
        assert_eq!(r.fields.files, ["src/auth/oauth2.py"]);
        assert_eq!(r.fields.timestamp, Some(1767607200));
        assert_eq!(r.namespace, "default");
    }

    #[test]
    fn task_id_is_session_and_task() {
        let r = parse(json!({"session_id": "s1", "task_id": "3", "subject": "Add login",
            "key_outcomes": ["login works"], "files_modified": ["a.rs"], "commands_run": ["cargo test"]}))
        .unwrap();
        assert_eq!(r.id, "s1:3");
        assert_eq!(r.kind, Kind::Task);
        assert_eq!(r.fields.commands, ["cargo test"]);
    }

    #[test]
    fn beir_lines_are_notes() {
        let r =
            parse(json!({"_id": "4983", "title": "T", "text": "body", "metadata": {}})).unwrap();
        assert_eq!((r.id.as_str(), r.kind), ("4983", Kind::Note));
    }

    #[test]
    fn messages_take_content_blocks() {
        let r = parse(
            json!({"session_id": "s", "turn_index": 4, "role": "assistant",
            "content": [{"type": "text", "text": "hello"}, {"type": "tool_use"}]}),
        )
        .unwrap();
        assert_eq!(r.id, "s:turn:4");
        assert_eq!(r.fields.content, "hello");
        assert_eq!(r.fields.start_turn, Some(4));
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = parse(json!({"segment_id": "x", "compressed_content": "c", "start_turn": "ten"}))
            .unwrap_err();
        assert!(e.to_string().starts_with(
            "in.jsonl:3: field `start_turn`: expected a non-negative integer, found a string; expected a segment like {"
        ));
        let e = parse(json!({"segment_id": "x", "compressed_content": "c", "key_files": ["a", 3]}))
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("key_files[1]"));
    }

    #[test]
    fn a_wrong_segment_is_refused_with_the_field_and_the_expected_shape() {
        // What an agent gets wrong: the id left out, a list written as a string,
        // a turn as text. Each error names the field and shows a valid segment.
        let e = parse(json!({"topic": "OAuth", "compressed_content": "Fixed the refresh."}))
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("segment_id"));
        assert!(e.message.contains(SEGMENT_EXAMPLE), "{e}");
        let e = parse(json!({"segment_id": "s:segment:1-9", "compressed_content": "c", "key_files": "src/a.rs"}))
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("key_files"));
        assert!(
            e.message.starts_with(
                "expected a list of strings, found a string; expected a segment like {"
            ),
            "{e}"
        );
        let e = parse(
            json!({"segment_id": "s:segment:1-9", "compressed_content": "c", "end_turn": "nine"}),
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("end_turn"));
        assert!(e.to_string().contains("\"start_turn\":12"), "{e}");
        let e = parse(json!({"kind": "segment", "compressed_content": "c"})).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("segment_id"));
        assert!(e.message.contains(SEGMENT_EXAMPLE));
        // Other kinds keep their short messages.
        let e = parse(json!({"kind": "note", "text": "x"})).unwrap_err();
        assert!(!e.message.contains("expected a segment"));
        // The example itself is a valid segment.
        let example: Value = serde_json::from_str(SEGMENT_EXAMPLE).unwrap();
        assert_eq!(parse(example).unwrap().kind, Kind::Segment);
    }

    #[test]
    fn missing_id_unknown_kind_and_empty_text_are_rejected() {
        let e = parse(json!({"kind": "note", "text": "x"})).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("id"));
        let e = parse(json!({"kind": "banana", "id": "1", "text": "x"})).unwrap_err();
        assert!(e.message.contains("unknown kind `banana`"));
        let e = parse(json!({"id": "1", "text": "  "})).unwrap_err();
        assert!(e.message.contains("no text"));
        let e = parse(json!({"foo": 1})).unwrap_err();
        assert!(e.message.contains("cannot tell"));
        let e = parse(json!([1])).unwrap_err();
        assert!(e.message.contains("expected a JSON object"));
    }

    #[test]
    fn namespace_field_reads_metadata() {
        let options = ParseOptions {
            namespace_field: Some("conv".into()),
            ..Default::default()
        };
        let r = parse_record(
            json!({"_id": "1", "text": "t", "metadata": {"conv": "conv-26"}}),
            &Origin::file("f"),
            &options,
        )
        .unwrap();
        assert_eq!(r.namespace, "conv-26");
        let e = parse_record(
            json!({"_id": "1", "text": "t"}),
            &Origin::file("f"),
            &options,
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("metadata.conv"));
    }

    #[test]
    fn times_parse_in_common_forms() {
        assert_eq!(parse_time("2026-01-05T10:00:00Z"), Some(1767607200));
        assert_eq!(parse_time("2026-01-05T12:00:00+02:00"), Some(1767607200));
        assert_eq!(parse_time("2026-01-05 10:00:00"), Some(1767607200));
        assert_eq!(parse_time("2026-01-05"), Some(1767571200));
        assert_eq!(parse_time("yesterday"), None);
    }

    /// JSON values of any type, to place under record keys.
    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            "\\PC{0,20}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    const KEYS: [&str; 16] = [
        "kind",
        "id",
        "_id",
        "segment_id",
        "task_id",
        "session_id",
        "subject",
        "topic",
        "text",
        "role",
        "content",
        "key_files",
        "start_turn",
        "compressed_at",
        "metadata",
        "namespace",
    ];

    proptest::proptest! {
        /// Records built from known keys with values of any type either parse or
        /// give an error naming a field or the record; they never panic.
        #[test]
        fn records_with_arbitrary_values_never_panic(
            entries in proptest::collection::vec((0..KEYS.len(), any_json()), 0..8)
        ) {
            let object: serde_json::Map<String, Value> =
                entries.into_iter().map(|(k, v)| (KEYS[k].to_string(), v)).collect();
            match parse(Value::Object(object)) {
                Ok(record) => proptest::prop_assert!(!record.id.is_empty()),
                Err(e) => proptest::prop_assert!(!e.message.is_empty()),
            }
        }

        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,300}") {
            if let Ok(v) = serde_json::from_str::<Value>(&s) {
                let _ = parse(v);
            }
        }
    }
}
