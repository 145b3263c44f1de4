//! A BEIR document's own time, when its data set keeps it in the metadata.
//!
//! Records carry their time at the top level (`timestamp`, `created_at`), as
//! messages and notes written by agents do. LoCoMo keeps each turn's session
//! time in `metadata.date_time` instead, in its own words ("1:56 pm on 8 May,
//! 2023"). A memory of that conversation would know when each turn was said, so
//! `eval` gives the records that time: a copy of the corpus with `timestamp` set
//! from `metadata.date_time` is what gets added. Documents with a timestamp of
//! their own, or a `date_time` that does not read, are copied unchanged.

use std::io::{BufRead, BufWriter, Write};
use std::path::Path;

use serde_json::Value;
use time::{PrimitiveDateTime, Time};

use knowledge_db::error::{Error, Result};
use knowledge_db::search::dates::DateHint;

/// A copy of `corpus` with each document's `metadata.date_time` as its
/// `timestamp`, in `dir`; `None` when the first document has no `date_time`
/// (the corpus is added as it is).
pub(super) fn with_record_times(corpus: &Path, dir: &Path) -> Result<Option<std::path::PathBuf>> {
    let first_has_time = super::corpus::first_json_line(corpus)?
        .pointer("/metadata/date_time")
        .is_some_and(Value::is_string);
    if !first_has_time {
        return Ok(None);
    }
    let file = std::fs::File::open(corpus).map_err(|e| Error::io(corpus, e))?;
    let path = dir.join("corpus.jsonl");
    let out = std::fs::File::create(&path).map_err(|e| Error::io(&path, e))?;
    let mut out = BufWriter::new(out);
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(|e| Error::io(corpus, e))?;
        writeln!(out, "{}", timed(&line)).map_err(|e| Error::io(&path, e))?;
    }
    out.flush().map_err(|e| Error::io(&path, e))?;
    Ok(Some(path))
}

/// The line with `timestamp` set from `metadata.date_time`, or as it was.
fn timed(line: &str) -> String {
    let Ok(Value::Object(mut doc)) = serde_json::from_str::<Value>(line) else {
        return line.to_string();
    };
    if doc.contains_key("timestamp") {
        return line.to_string();
    }
    let Some(time) = doc
        .get("metadata")
        .and_then(|m| m.get("date_time"))
        .and_then(Value::as_str)
        .and_then(session_time)
    else {
        return line.to_string();
    };
    doc.insert("timestamp".into(), Value::String(time));
    Value::Object(doc).to_string()
}

/// "1:56 pm on 8 May, 2023" as RFC 3339 (UTC).
fn session_time(text: &str) -> Option<String> {
    let (clock, day) = text.split_once(" on ")?;
    let DateHint::Day(date) = DateHint::of(day)? else {
        return None;
    };
    let at = PrimitiveDateTime::new(date, clock_time(clock.trim())?).assume_utc();
    at.format(&time::format_description::well_known::Rfc3339)
        .ok()
}

/// "1:56 pm" as a time of day.
fn clock_time(text: &str) -> Option<Time> {
    let (hm, half) = text.split_once(' ')?;
    let (h, m) = hm.split_once(':')?;
    let (h, m): (u8, u8) = (h.parse().ok()?, m.parse().ok()?);
    let hour = match (half.to_ascii_lowercase().as_str(), h) {
        ("am", 12) => 0,
        ("am", h) => h,
        ("pm", 12) => 12,
        ("pm", h) => h + 12,
        _ => return None,
    };
    Time::from_hms(hour, m, 0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locomo_session_times_read_as_rfc3339() {
        assert_eq!(
            session_time("1:56 pm on 8 May, 2023").as_deref(),
            Some("2023-05-08T13:56:00Z")
        );
        assert_eq!(
            session_time("12:09 am on 13 October, 2023").as_deref(),
            Some("2023-10-13T00:09:00Z")
        );
        assert_eq!(session_time("sometime last spring"), None);
    }

    #[test]
    fn a_document_gets_its_date_time_as_timestamp_unless_it_has_one() {
        let doc = r#"{"_id":"c|D1:3","text":"hi","metadata":{"conv":"c","date_time":"1:56 pm on 8 May, 2023"}}"#;
        let out: Value = serde_json::from_str(&timed(doc)).unwrap();
        assert_eq!(out["timestamp"], "2023-05-08T13:56:00Z");
        let own = r#"{"_id":"x","text":"hi","timestamp":"2020-01-01T00:00:00Z","metadata":{"date_time":"1:56 pm on 8 May, 2023"}}"#;
        assert_eq!(timed(own), own);
        assert_eq!(timed("not json"), "not json");
    }
}
