//! Reading record JSON from files, folders, JSONL and stdin.
//!
//! A path may be a `.json` file (one object, or a list of objects), a `.jsonl` /
//! `.ndjson` file (one object a line), a folder (searched recursively for both), or
//! `-` for stdin (JSON or JSONL, sniffed). Every value comes with its [`Origin`] so
//! that errors can name the file and line. Reading never stops at the first bad
//! record: all problems are collected, so one run shows them all.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{InputError, Origin};

/// One JSON value read from the input, not yet validated as a record.
#[derive(Debug)]
pub struct RawRecord {
    /// Where it was read from: the file (`-` for stdin) and its line, if any.
    pub origin: Origin,
    /// The JSON value as read.
    pub value: Value,
}

/// What reading the inputs produced.
#[derive(Debug, Default)]
pub struct ReadOutcome {
    /// The values read, in input order.
    pub records: Vec<RawRecord>,
    /// Inputs that could not be read or parsed, each with where it happened.
    pub errors: Vec<InputError>,
    /// Files seen in folders that are not JSON or JSONL and were skipped.
    pub skipped_files: Vec<PathBuf>,
    /// Bytes read, over all inputs.
    pub bytes: u64,
}

/// Reads all `paths`; `-` reads `stdin`. Records larger than `max_record_bytes` are
/// reported as errors without being parsed.
pub fn read_paths(paths: &[PathBuf], stdin: &mut dyn Read, max_record_bytes: usize) -> ReadOutcome {
    let mut out = ReadOutcome::default();
    for path in paths {
        if path.as_os_str() == "-" {
            let mut bytes = Vec::new();
            match stdin.read_to_end(&mut bytes) {
                Ok(_) => read_bytes("-", &bytes, Shape::Sniff, max_record_bytes, &mut out),
                Err(e) => out.errors.push(InputError::new(
                    &Origin::file("-"),
                    None,
                    format!("cannot read stdin: {e}"),
                )),
            }
        } else if path.is_dir() {
            read_dir(path, max_record_bytes, &mut out);
        } else {
            read_file(path, Shape::from_path(path), max_record_bytes, &mut out);
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Json,
    Jsonl,
    Sniff,
}

impl Shape {
    fn from_path(path: &Path) -> Shape {
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => Shape::Json,
            Some("jsonl") | Some("ndjson") => Shape::Jsonl,
            _ => Shape::Sniff,
        }
    }
}

fn read_dir(dir: &Path, max_record_bytes: usize, out: &mut ReadOutcome) {
    let mut files = Vec::new();
    if let Err(e) = collect_files(dir, &mut files) {
        out.errors.push(InputError::new(
            &Origin::file(dir.display().to_string()),
            None,
            e,
        ));
        return;
    }
    files.sort();
    for file in files {
        match Shape::from_path(&file) {
            Shape::Sniff => out.skipped_files.push(file),
            shape => read_file(&file, shape, max_record_bytes, out),
        }
    }
}

/// Files under `dir`, recursively, skipping hidden entries (`.git`, editor files).
fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot read folder: {e}"))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read folder: {e}"))?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect_files(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}

fn read_file(path: &Path, shape: Shape, max_record_bytes: usize, out: &mut ReadOutcome) {
    let name = path.display().to_string();
    match fs::read(path) {
        Ok(bytes) => read_bytes(&name, &bytes, shape, max_record_bytes, out),
        Err(e) => out.errors.push(InputError::new(
            &Origin::file(&name),
            None,
            format!("cannot read: {e}"),
        )),
    }
}

fn read_bytes(
    name: &str,
    bytes: &[u8],
    shape: Shape,
    max_record_bytes: usize,
    out: &mut ReadOutcome,
) {
    out.bytes += bytes.len() as u64;
    let shape = match shape {
        Shape::Sniff => sniff(bytes),
        other => other,
    };
    match shape {
        Shape::Jsonl => read_jsonl(name, bytes, max_record_bytes, out),
        _ => read_json(name, bytes, max_record_bytes, out),
    }
}

/// A document whose first non-blank line is a complete JSON value, followed by more
/// lines, is JSONL; anything else is read as one JSON document.
fn sniff(bytes: &[u8]) -> Shape {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    match (lines.next(), lines.next()) {
        (Some(first), Some(_)) if serde_json::from_str::<Value>(first).is_ok() => Shape::Jsonl,
        _ => Shape::Json,
    }
}

fn read_json(name: &str, bytes: &[u8], max_record_bytes: usize, out: &mut ReadOutcome) {
    let origin = Origin::file(name);
    let text = match decode_utf8(bytes, &origin) {
        Ok(text) => text,
        Err(e) => return out.errors.push(e),
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => {
            for (i, value) in items.into_iter().enumerate() {
                let origin = Origin::file(format!("{name}[{i}]"));
                push_sized(origin, value, max_record_bytes, out);
            }
        }
        Ok(value) => {
            if text.len() > max_record_bytes {
                out.errors
                    .push(too_large(&origin, text.len(), max_record_bytes));
            } else {
                out.records.push(RawRecord { origin, value });
            }
        }
        Err(e) => out.errors.push(json_error(&origin, &e)),
    }
}

fn push_sized(origin: Origin, value: Value, max_record_bytes: usize, out: &mut ReadOutcome) {
    let size = serde_json::to_vec(&value).map(|v| v.len()).unwrap_or(0);
    if size > max_record_bytes {
        out.errors.push(too_large(&origin, size, max_record_bytes));
    } else {
        out.records.push(RawRecord { origin, value });
    }
}

fn read_jsonl(name: &str, bytes: &[u8], max_record_bytes: usize, out: &mut ReadOutcome) {
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let origin = Origin::line(name, index + 1);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line.len() > max_record_bytes {
            out.errors
                .push(too_large(&origin, line.len(), max_record_bytes));
            continue;
        }
        let text = match decode_utf8(line, &origin) {
            Ok(text) => text,
            Err(e) => {
                out.errors.push(e);
                continue;
            }
        };
        match serde_json::from_str::<Value>(text) {
            Ok(value) => out.records.push(RawRecord { origin, value }),
            Err(e) => out.errors.push(json_error(&origin, &e)),
        }
    }
}

fn decode_utf8<'a>(bytes: &'a [u8], origin: &Origin) -> Result<&'a str, InputError> {
    std::str::from_utf8(bytes).map_err(|e| {
        InputError::new(
            origin,
            None,
            format!(
                "invalid UTF-8 at byte {}; records must be UTF-8 JSON",
                e.valid_up_to()
            ),
        )
    })
}

fn json_error(origin: &Origin, error: &serde_json::Error) -> InputError {
    let message = if origin.line.is_some() {
        format!(
            "invalid JSON at column {}: {}",
            error.column(),
            strip_position(error)
        )
    } else {
        format!(
            "invalid JSON at line {} column {}: {}",
            error.line(),
            error.column(),
            strip_position(error)
        )
    };
    InputError::new(origin, None, message)
}

/// serde_json appends " at line L column C"; we print the position ourselves.
/// serde_json's depth limit gets a plainer name.
fn strip_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let text = match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    };
    if text == "recursion limit exceeded" {
        return "nested too deeply (more than 128 levels of arrays and objects)".into();
    }
    text
}

fn too_large(origin: &Origin, size: usize, limit: usize) -> InputError {
    InputError::new(
        origin,
        None,
        format!(
            "record is {}, over the limit of {} (raise `max_record_bytes` in the store's config.toml)",
            human_bytes(size as u64),
            human_bytes(limit as u64)
        ),
    )
}

/// `1536` → `1.5 KiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, bytes: &[u8]) -> ReadOutcome {
        let mut out = ReadOutcome::default();
        read_bytes(
            name,
            bytes,
            Shape::from_path(Path::new(name)),
            1 << 20,
            &mut out,
        );
        out
    }

    #[test]
    fn jsonl_reports_the_bad_line() {
        let out = read("a.jsonl", b"{\"id\":1}\n\n{bad\n{\"id\":2}\n");
        assert_eq!(out.records.len(), 2);
        assert_eq!(out.errors.len(), 1);
        assert_eq!(out.errors[0].origin, Origin::line("a.jsonl", 3));
        assert!(out.errors[0]
            .to_string()
            .starts_with("a.jsonl:3: invalid JSON at column 2"));
    }

    #[test]
    fn invalid_utf8_is_named() {
        let out = read("a.jsonl", b"{\"id\":\"\xff\"}\n");
        assert!(out.errors[0].message.contains("invalid UTF-8 at byte 7"));
    }

    #[test]
    fn json_arrays_give_one_record_per_item() {
        let out = read("a.json", b"[{\"id\":1},{\"id\":2}]");
        assert_eq!(out.records.len(), 2);
        assert_eq!(out.records[1].origin.path, "a.json[1]");
    }

    #[test]
    fn stdin_is_sniffed() {
        assert_eq!(sniff(b"{\"a\":1}\n{\"a\":2}\n"), Shape::Jsonl);
        assert_eq!(sniff(b"{\n \"a\": 1\n}\n"), Shape::Json);
    }

    #[test]
    fn oversized_records_are_rejected_unparsed() {
        let mut out = ReadOutcome::default();
        read_bytes(
            "a.jsonl",
            b"{\"id\":\"0123456789\"}\n",
            Shape::Jsonl,
            8,
            &mut out,
        );
        assert!(out.errors[0].message.contains("over the limit of 8 B"));
    }

    #[test]
    fn human_bytes_reads_well() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(52_428_800), "50.0 MiB");
    }
}
