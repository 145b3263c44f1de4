//! The JSON Schemas in `schema/` describe what the tool really accepts and prints:
//! the data samples validate against the input schemas, and real `search --json`
//! output validates against the output schemas.
//!
//! The validator here covers the keywords the schemas use (type, required,
//! properties, items, enum, anyOf, minimum, minLength); it is small on purpose.

mod common;

use std::path::Path;

use common::{samples, TestStore};
use serde_json::Value;

fn schema(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn type_matches(expected: &str, value: &Value) -> bool {
    match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => false,
    }
}

/// Problems of `value` against `schema`, with JSON paths.
fn validate(schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    if let Some(t) = schema.get("type") {
        let ok = match t {
            Value::String(s) => type_matches(s, value),
            Value::Array(list) => list
                .iter()
                .filter_map(Value::as_str)
                .any(|s| type_matches(s, value)),
            _ => true,
        };
        if !ok {
            errors.push(format!("{path}: expected type {t}, found {value}"));
            return;
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.contains(value) {
            errors.push(format!("{path}: {value} not in {options:?}"));
        }
    }
    if let (Some(min), Some(n)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) {
        if n < min {
            errors.push(format!("{path}: {n} < minimum {min}"));
        }
    }
    if let (Some(min), Some(s)) = (
        schema.get("minLength").and_then(Value::as_u64),
        value.as_str(),
    ) {
        if (s.chars().count() as u64) < min {
            errors.push(format!("{path}: shorter than {min}"));
        }
    }
    if let Some(Value::Array(required)) = schema.get("required") {
        for key in required.iter().filter_map(Value::as_str) {
            if value.get(key).is_none() {
                errors.push(format!("{path}: missing required `{key}`"));
            }
        }
    }
    if let Some(Value::Array(any)) = schema.get("anyOf") {
        let passes = any.iter().any(|s| {
            let mut sub = Vec::new();
            validate(s, value, path, &mut sub);
            sub.is_empty()
        });
        if !passes {
            errors.push(format!("{path}: matches none of anyOf"));
        }
    }
    if let (Some(Value::Object(props)), Some(object)) =
        (schema.get("properties"), value.as_object())
    {
        for (key, sub) in props {
            if let Some(v) = object.get(key) {
                validate(sub, v, &format!("{path}.{key}"), errors);
            }
        }
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (i, v) in list.iter().enumerate() {
            validate(items, v, &format!("{path}[{i}]"), errors);
        }
    }
}

fn assert_valid(schema_name: &str, value: &Value) {
    let mut errors = Vec::new();
    validate(&schema(schema_name), value, "$", &mut errors);
    assert!(errors.is_empty(), "{schema_name}: {errors:#?}");
}

fn jsonl(name: &str) -> Vec<Value> {
    std::fs::read_to_string(samples().join(name))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn samples_match_the_input_schemas() {
    for entry in std::fs::read_dir(samples().join("compressed_context")).unwrap() {
        let value: Value =
            serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap()).unwrap();
        assert_valid("segment.schema.json", &value);
    }
    jsonl("tasks.jsonl")
        .iter()
        .for_each(|v| assert_valid("task.schema.json", v));
    jsonl("notes.jsonl")
        .iter()
        .for_each(|v| assert_valid("note.schema.json", v));
    jsonl("messages.jsonl")
        .iter()
        .for_each(|v| assert_valid("message.schema.json", v));
}

#[test]
fn the_validator_catches_wrong_records() {
    let mut errors = Vec::new();
    let bad = serde_json::json!({"segment_id": "s", "start_turn": -1, "key_files": [1]});
    validate(&schema("segment.schema.json"), &bad, "$", &mut errors);
    assert!(errors.len() >= 3, "{errors:?}");
}

#[test]
fn search_and_batch_output_match_their_schemas() {
    let store = TestStore::new();
    store.add_samples();
    for query in ["oauth2.py", "nothing-matches-this", "parse config"] {
        assert_valid("search-output.schema.json", &store.json(&["search", query]));
    }
    let queries = store.write(
        "q.jsonl",
        b"{\"_id\": \"1\", \"text\": \"redis rate limit\"}\n",
    );
    let out = store
        .cmd()
        .args(["search", "--queries"])
        .arg(&queries)
        .arg("--json")
        .output()
        .unwrap();
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid("batch-output.schema.json", &line);
}
