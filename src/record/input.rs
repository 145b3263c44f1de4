//! Reading record JSON from files, folders, JSONL and stdin.
//!
//! A path may be a `.json` file (one object, or a list of objects), a `.jsonl` /
//! `.ndjson` file (one object a line), a folder (searched recursively for both), or
//! `-` for stdin (JSON or JSONL, sniffed). Every value comes with its [`Origin`] so
//! that errors can name the file and line. Reading never stops at the first bad
//! record: all problems are collected, so one run shows them all.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::bounded::{Limit, Line, LineReader};
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

/// How much of the input may be read: per record and per whole file.
#[derive(Debug, Clone, Copy)]
pub struct InputLimits {
    /// Largest record, in bytes of JSON; also the longest JSONL line kept (a
    /// longer line is skipped unread and reported).
    pub max_record_bytes: usize,
    /// Largest JSON document read whole (a `.json` file, or stdin that is not
    /// JSONL). JSONL is read line by line without a total limit.
    pub file: Limit,
}

/// Reads all `paths`; `-` reads `stdin`. Records larger than
/// `limits.max_record_bytes` are reported as errors without being parsed; a
/// path that is not a regular file (a FIFO, a device) is refused unread.
pub fn read_paths(paths: &[PathBuf], stdin: &mut dyn Read, limits: InputLimits) -> ReadOutcome {
    let mut out = ReadOutcome::default();
    for path in paths {
        if path.as_os_str() == "-" {
            read_sniffed("-", std::io::BufReader::new(&mut *stdin), limits, &mut out);
        } else if path.is_dir() {
            read_dir(path, limits, &mut out);
        } else {
            read_file(path, Shape::from_path(path), limits, &mut out);
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

fn read_dir(dir: &Path, limits: InputLimits, out: &mut ReadOutcome) {
    // Hidden entries (`.git`, editor files) are left out; symlinked folders
    // are followed, each folder once (a loop of links ends).
    let files = match crate::bounded::walk(dir, true, &|_| true) {
        Ok(files) => files,
        Err(e) => {
            out.errors.push(InputError::new(
                &Origin::file(dir.display().to_string()),
                None,
                format!("cannot read folder: {e}"),
            ));
            return;
        }
    };
    for file in files {
        match Shape::from_path(&file) {
            Shape::Sniff => out.skipped_files.push(file),
            shape => read_file(&file, shape, limits, out),
        }
    }
}

fn read_file(path: &Path, shape: Shape, limits: InputLimits, out: &mut ReadOutcome) {
    let name = path.display().to_string();
    let opened = match shape {
        // A JSON document is read whole: its size is checked before reading.
        Shape::Json => crate::bounded::read_whole(path, limits.file, false).map(|bytes| {
            out.bytes += bytes.len() as u64;
            read_json(&name, &bytes, limits.max_record_bytes, out)
        }),
        _ => crate::bounded::open_regular(path).map(|(file, _)| {
            let reader = std::io::BufReader::new(file);
            if shape == Shape::Jsonl {
                read_jsonl(&name, reader, 0, limits.max_record_bytes, out);
            } else {
                read_sniffed(&name, reader, limits, out);
            }
        }),
    };
    if let Err(e) = opened {
        out.errors.push(InputError::new(
            &Origin::file(&name),
            None,
            format!("cannot read: {}", without_path(&e, path)),
        ));
    }
}

/// An error's message without the path it starts with (the origin names it).
fn without_path(error: &crate::error::Error, path: &Path) -> String {
    let text = error.to_string();
    let prefix = format!("{}: ", path.display());
    text.strip_prefix(&prefix)
        .map(str::to_string)
        .unwrap_or(text)
}

/// Reads JSON or JSONL, told apart by [`sniff`]: up to `limits.file` is read
/// first; input longer than that must be JSONL, whose remaining lines are
/// then read one at a time.
fn read_sniffed(name: &str, mut reader: impl BufRead, limits: InputLimits, out: &mut ReadOutcome) {
    let mut head = Vec::new();
    let read = (&mut reader)
        .take(limits.file.bytes.saturating_add(1))
        .read_to_end(&mut head);
    if let Err(e) = read {
        out.errors.push(InputError::new(
            &Origin::file(name),
            None,
            format!("cannot read: {e}"),
        ));
        return;
    }
    if head.len() as u64 <= limits.file.bytes {
        return read_bytes(name, &head, Shape::Sniff, limits.max_record_bytes, out);
    }
    if sniff(&head) != Shape::Jsonl {
        let error = limits.file.exceeded(
            Path::new(name),
            format!(
                "a JSON document of more than {}",
                human_bytes(limits.file.bytes)
            ),
        );
        out.errors.push(InputError::new(
            &Origin::file(name),
            None,
            error.to_string(),
        ));
        return;
    }
    // JSONL: the whole lines read so far, then the rest line by line.
    let cut = head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let partial = head.split_off(cut);
    let lines = head.iter().filter(|&&b| b == b'\n').count();
    read_jsonl(name, &head[..], 0, limits.max_record_bytes, out);
    drop(head);
    let rest = std::io::Cursor::new(partial).chain(reader);
    read_jsonl(
        name,
        std::io::BufReader::new(rest),
        lines,
        limits.max_record_bytes,
        out,
    );
}

fn read_bytes(
    name: &str,
    bytes: &[u8],
    shape: Shape,
    max_record_bytes: usize,
    out: &mut ReadOutcome,
) {
    let shape = match shape {
        Shape::Sniff => sniff(bytes),
        other => other,
    };
    match shape {
        Shape::Jsonl => read_jsonl(name, bytes, 0, max_record_bytes, out),
        _ => {
            out.bytes += bytes.len() as u64;
            read_json(name, bytes, max_record_bytes, out)
        }
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

/// Reads JSONL from `reader`, whose first line is line `before + 1`: each
/// line at most `max_record_bytes` is parsed; a longer one is reported and
/// skipped without being kept.
fn read_jsonl(
    name: &str,
    reader: impl BufRead,
    before: usize,
    max_record_bytes: usize,
    out: &mut ReadOutcome,
) {
    let mut lines = LineReader::new(reader, max_record_bytes.saturating_add(1));
    loop {
        let line = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                out.errors.push(InputError::new(
                    &Origin::line(name, before + lines.line + 1),
                    None,
                    format!("cannot read: {e}"),
                ));
                break;
            }
        };
        let origin = Origin::line(name, before + lines.line);
        let line = match line {
            Line::Whole(line) => line,
            Line::TooLong(length) => {
                out.errors
                    .push(too_large(&origin, length as usize, max_record_bytes));
                continue;
            }
        };
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
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
    out.bytes += lines.bytes;
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
            "record is {}, over the limit of {} (raise `limits.max_record_bytes` in the store's config.toml)",
            human_bytes(size as u64),
            human_bytes(limit as u64)
        ),
    )
}

pub use crate::bounded::human_bytes;

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
