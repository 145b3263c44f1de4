//! The MCP tools' JSON Schemas as clients read them, and arguments checked against them.
//!
//! schemars describes an `Option<usize>` as `"type": ["integer", "null"]` with
//! `"format": "uint"`. Official clients trip on that: MCP Inspector renders such
//! a field as text and sends `maxResults: "2"`. So every input schema is tidied
//! before it is listed: an optional field is just its type (absence, not `null`,
//! says "not given"), formats go, and integers keep their `minimum`/`maximum`.
//! Arguments are then checked against the tidied schema before a call runs: a
//! numeric string where a number is declared becomes that number (what such a
//! client meant), and a number outside its bounds is refused with JSON-RPC
//! -32602 naming the field. Each tool also declares an `outputSchema` that
//! describes its `structuredContent`.

use serde_json::{json, Map, Value};

/// The input schema as clients should see it (see the module comment).
pub fn tidy_input_schema(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut schema = schema.clone();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            if let Value::Object(property) = property {
                tidy_property(property);
            }
        }
    }
    schema
}

fn tidy_property(property: &mut Map<String, Value>) {
    property.remove("format");
    if let Some(Value::Array(types)) = property.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let single = match kept.as_slice() {
            [one] => one.clone(),
            _ => Value::Array(kept),
        };
        property.insert("type".into(), single);
    }
    // `Option<Enum>`: schemars writes `anyOf: [{$ref}, {type: null}]`.
    if let Some(Value::Array(any_of)) = property.get("anyOf") {
        let kept: Vec<Value> = any_of
            .iter()
            .filter(|s| s.get("type") != Some(&json!("null")))
            .cloned()
            .collect();
        if let [one] = kept.as_slice() {
            property.remove("anyOf");
            if let Value::Object(inner) = one {
                for (k, v) in inner {
                    property.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
    }
    if property.get("type") == Some(&json!("integer")) && !property.contains_key("minimum") {
        // Counts, lines and turns are never negative.
        property.insert("minimum".into(), json!(0));
    }
}

/// What a tool's `structuredContent` looks like. Deliberately open (extra
/// fields allowed) so an answer that gains a field still validates.
pub fn output_schema(tool: &str) -> Option<Map<String, Value>> {
    let schema = match tool {
        "memory_search" => json!({
            "type": "object",
            "description": "Ranked results. Default form: {query, results: [{rank, id, kind, score, bm25, vector, title, snippet, session_id, start_turn, end_turn, timestamp, tier, files, citation, copies, weak}], explanation, vector, took_ms}; with format \"openclaw\": OpenClaw's memory_search payload {results: [{path, startLine, endLine, score, vectorScore, textScore, snippet, source, citation, corpus}], provider, model, citations, debug}.",
            "properties": {
                "results": {"type": "array", "items": {"type": "object"}},
                "query": {"type": "string"},
                "explanation": {"type": ["string", "null"]},
                "vector": {"type": "string"},
                "took_ms": {"type": "number"},
                "provider": {"type": "string"},
                "model": {"type": "string"}
            },
            "required": ["results"]
        }),
        "memory_get" => json!({
            "type": "object",
            "description": "By id: {record, messages?, from?, nextFrom?, truncated}; by file path: {path, text, truncated?, from?, lines?, nextFrom?}.",
            "properties": {
                "record": {"type": "object"},
                "messages": {"type": "array", "items": {"type": "object"}},
                "path": {"type": "string"},
                "text": {"type": "string"},
                "from": {"type": "integer"},
                "lines": {"type": "integer"},
                "nextFrom": {"type": "integer"},
                "truncated": {"type": "boolean"}
            }
        }),
        "memory_add" => json!({
            "type": "object",
            "properties": {
                "added": {"type": "integer"},
                "updated": {"type": "integer"},
                "unchanged": {"type": "integer"},
                "embedded": {"type": "integer"},
                "vectors_reused": {"type": "integer"},
                "without_vector": {"type": "integer"},
                "duplicate_ids": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["added", "updated", "unchanged"]
        }),
        "memory_recall" => json!({
            "type": "object",
            "properties": {
                "memories": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "kind": {"type": "string"},
                        "title": {"type": "string"},
                        "when": {"type": "string"},
                        "session_id": {"type": "string"},
                        "score": {"type": "number"},
                        "text": {"type": "string"}
                    },
                    "required": ["id", "kind", "score", "text"]
                }},
                "text": {"type": "string"},
                "bestScore": {"type": ["number", "null"]},
                "whyNot": {"type": ["string", "null"]}
            },
            "required": ["memories", "text"]
        }),
        "memory_stats" => json!({
            "type": "object",
            "properties": {
                "store": {"type": "string"},
                "records": {"type": "integer"},
                "by_kind": {"type": "object"},
                "by_namespace": {"type": "object"},
                "by_project": {"type": "object"},
                "by_origin": {"type": "object"},
                "vectors": {"type": "object"},
                "vector": {"type": "string"}
            },
            "required": ["records"]
        }),
        _ => return None,
    };
    match schema {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// `arguments` made to fit `schema`: numeric strings where numbers are declared
/// become numbers; a number outside `minimum`/`maximum` is an error naming the
/// field. Types and required fields are left to the tool's own deserializer.
pub fn coerce_arguments(
    schema: &Map<String, Value>,
    arguments: &mut Map<String, Value>,
) -> Result<(), String> {
    let Some(Value::Object(properties)) = schema.get("properties") else {
        return Ok(());
    };
    for (name, value) in arguments.iter_mut() {
        let Some(property) = properties.get(name) else {
            continue;
        };
        let declared = property.get("type").and_then(Value::as_str);
        if !matches!(declared, Some("integer" | "number")) {
            continue;
        }
        if let Value::String(text) = value {
            if let Some(number) = parse_number(text.trim(), declared == Some("integer")) {
                *value = number;
            }
        }
        let Some(number) = value.as_f64() else {
            continue;
        };
        if let Some(min) = property.get("minimum").and_then(Value::as_f64) {
            if number < min {
                return Err(format!("`{name}` is {value}, below its minimum {min}"));
            }
        }
        if let Some(max) = property.get("maximum").and_then(Value::as_f64) {
            if number > max {
                return Err(format!("`{name}` is {value}, above its maximum {max}"));
            }
        }
    }
    Ok(())
}

fn parse_number(text: &str, integer: bool) -> Option<Value> {
    if integer {
        if let Ok(n) = text.parse::<u64>() {
            return Some(json!(n));
        }
        return text.parse::<i64>().ok().map(|n| json!(n));
    }
    let n = text.parse::<f64>().ok().filter(|n| n.is_finite())?;
    serde_json::Number::from_f64(n).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn optional_integers_become_plain_integers_with_their_bounds() {
        let raw = object(json!({"type": "object", "properties": {
            "maxResults": {"type": ["integer", "null"], "format": "uint", "minimum": 1, "maximum": 100},
            "from": {"type": ["integer", "null"], "format": "uint64"},
            "minScore": {"type": ["number", "null"], "format": "float"},
            "tier": {"anyOf": [{"$ref": "#/$defs/TierArg"}, {"type": "null"}], "description": "d"}
        }}));
        let tidy = tidy_input_schema(&raw);
        let p = &tidy["properties"];
        assert_eq!(
            p["maxResults"],
            json!({"type": "integer", "minimum": 1, "maximum": 100})
        );
        assert_eq!(p["from"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(p["minScore"], json!({"type": "number"}));
        assert_eq!(
            p["tier"],
            json!({"$ref": "#/$defs/TierArg", "description": "d"})
        );
    }

    #[test]
    fn numeric_strings_are_numbers_and_bounds_are_enforced() {
        let schema = object(json!({"properties": {
            "maxResults": {"type": "integer", "minimum": 1, "maximum": 100},
            "minScore": {"type": "number"},
            "query": {"type": "string"}
        }}));
        let mut args = object(json!({"maxResults": "2", "minScore": " 0.25", "query": "7"}));
        coerce_arguments(&schema, &mut args).expect("fits");
        assert_eq!(
            Value::Object(args),
            json!({"maxResults": 2, "minScore": 0.25, "query": "7"})
        );
        for (bad, named) in [
            (json!({"maxResults": 0}), "below its minimum 1"),
            (json!({"maxResults": "0"}), "below its minimum 1"),
            (json!({"maxResults": 101}), "above its maximum 100"),
        ] {
            let mut args = object(bad);
            let why = coerce_arguments(&schema, &mut args).expect_err("refused");
            assert!(why.contains("maxResults") && why.contains(named), "{why}");
        }
        // Not a number at all: left for the deserializer to name.
        let mut args = object(json!({"maxResults": "ten"}));
        coerce_arguments(&schema, &mut args).expect("left alone");
        assert_eq!(args["maxResults"], "ten");
    }

    #[test]
    fn every_tool_has_an_output_schema() {
        for tool in ["memory_search", "memory_get", "memory_add", "memory_stats"] {
            let schema = output_schema(tool).expect(tool);
            assert_eq!(schema["type"], "object");
        }
        assert!(output_schema("nope").is_none());
    }
}
