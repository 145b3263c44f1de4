//! Ids shortened as git shortens commits: any unique prefix of a session id
//! (or a record id) stands for it.
//!
//! Session ids are 36-character UUIDs; people copy the first eight (`4f1c9a2e`),
//! as the viewer and the CLI show them. An id that is stored as given is taken
//! as is; otherwise the stored ids that start with it are looked up in the
//! keyword field's term dictionary (cheap: one range per segment), and
//! exactly one live match stands for it. More than one is an error that
//! names them; none leaves the id as given, so the caller says what it says
//! of an unknown id.

use tantivy::collector::Count;
use tantivy::query::TermQuery;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};

use super::Store;
use crate::error::{Error, Result};

/// Candidates an ambiguity error names; it counts the rest.
const MAX_NAMED: usize = 8;

/// The session id `given` stands for: itself when stored, else the one
/// stored session whose id starts with it. Ambiguous prefixes are an
/// error naming the candidates; unknown ids come back unchanged.
pub fn resolve_session(store: &Store, given: &str) -> Result<String> {
    resolve(store, store.fields().session, given, "session")
}

/// The record id `given` stands for, as [`resolve_session`] does for sessions.
pub fn resolve_record_id(store: &Store, given: &str) -> Result<String> {
    resolve(store, store.fields().id, given, "record id")
}

fn resolve(store: &Store, field: Field, given: &str, what: &str) -> Result<String> {
    if given.is_empty() {
        return Ok(String::new());
    }
    let searcher = store.reader()?.searcher();
    if live(&searcher, field, given)? {
        return Ok(given.to_string());
    }
    let mut found = starting_with(&searcher, field, given)?;
    found.retain(|id| live(&searcher, field, id).unwrap_or(false));
    match found.len() {
        0 => Ok(given.to_string()),
        1 => Ok(found.remove(0)),
        n => {
            let named: Vec<&str> = found.iter().take(MAX_NAMED).map(String::as_str).collect();
            let more = if n > MAX_NAMED {
                format!(" and {} more", n - MAX_NAMED)
            } else {
                String::new()
            };
            Err(Error::Usage(format!(
                "{what} `{given}` is ambiguous: {n} stored {what}s start with it ({}{more}); \
                 give more of it",
                named.join(", ")
            )))
        }
    }
}

/// Whether a live record has `value` in the keyword `field`.
fn live(searcher: &Searcher, field: Field, value: &str) -> Result<bool> {
    let query = TermQuery::new(
        Term::from_field_text(field, value),
        IndexRecordOption::Basic,
    );
    Ok(searcher.search(&query, &Count)? > 0)
}

/// The distinct terms of `field` that start with `prefix`, sorted.
fn starting_with(searcher: &Searcher, field: Field, prefix: &str) -> Result<Vec<String>> {
    let mut out = std::collections::BTreeSet::new();
    for reader in searcher.segment_readers() {
        let index = reader.inverted_index(field)?;
        let mut stream = index
            .terms()
            .range()
            .ge(prefix.as_bytes())
            .into_stream()
            .map_err(tantivy::TantivyError::from)?;
        while stream.advance() {
            let key = stream.key();
            if !key.starts_with(prefix.as_bytes()) {
                break;
            }
            if let Ok(text) = std::str::from_utf8(key) {
                out.insert(text.to_string());
            }
            if out.len() > 1000 {
                break;
            }
        }
    }
    Ok(out.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store_of(sessions: &[&str]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::init(&dir.path().join("s")).expect("init");
        let records: Vec<_> = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| {
                crate::record::parse_record(
                    json!({"kind": "message", "session_id": s, "turn_index": i, "role": "user", "text": "hello"}),
                    &crate::error::Origin::file("test"),
                    &crate::record::ParseOptions::default(),
                )
                .expect("record")
            })
            .collect();
        store
            .add(records, None, std::time::Duration::from_secs(5))
            .expect("add");
        (dir, store)
    }

    #[test]
    fn a_unique_prefix_stands_for_its_session_and_an_ambiguous_one_names_them() {
        let (_dir, store) = store_of(&[
            "2cfdacb8-1111-4000-8000-000000000000",
            "2cfdacb8-2222-4000-8000-000000000000",
            "4f1c9a2e-3333-4000-8000-000000000000",
        ]);
        assert_eq!(
            resolve_session(&store, "4f1c").expect("unique"),
            "4f1c9a2e-3333-4000-8000-000000000000"
        );
        let full = "2cfdacb8-1111-4000-8000-000000000000";
        assert_eq!(resolve_session(&store, full).expect("exact"), full);
        let err = resolve_session(&store, "2cfdacb8")
            .expect_err("ambiguous")
            .to_string();
        assert!(
            err.contains("ambiguous")
                && err.contains("2cfdacb8-1111")
                && err.contains("2cfdacb8-2222"),
            "{err}"
        );
        assert_eq!(resolve_session(&store, "ffff").expect("unknown"), "ffff");
    }
}
