//! Browsing: records found by what they belong to rather than by relevance.
//!
//! Search ranks; browsing lists. An agent that found a segment summary drills
//! down to the raw messages of its session and turn range; the QMD surface lists
//! the records of one collection's namespace to tell which files changed. Both
//! are exact-term lookups on the untokenized `session`, `kind` and `namespace`
//! fields, read from one searcher (one commit).

use tantivy::collector::DocSetCollector;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Searcher, TantivyDocument, Term};

use crate::error::Result;
use crate::index::IndexFields;
use crate::record::{Kind, Record};

/// The `message` records of `session` whose turn lies in `from..=to`, ordered by
/// turn (then id, so equal turns come out in a stable order).
pub fn session_messages(
    searcher: &Searcher,
    fields: &IndexFields,
    session: &str,
    from: u64,
    to: u64,
) -> Result<Vec<Record>> {
    let query = BooleanQuery::new(vec![
        (Occur::Must, term_query(fields.session, session)),
        (Occur::Must, term_query(fields.kind, Kind::Message.as_str())),
    ]);
    let mut messages: Vec<(u64, Record)> = Vec::new();
    for record in matching_records(searcher, fields, &query)? {
        let Some(turn) = record.fields.start_turn else {
            continue;
        };
        if (from..=to).contains(&turn) {
            messages.push((turn, record));
        }
    }
    messages.sort_by(|(ta, a), (tb, b)| ta.cmp(tb).then_with(|| a.id.cmp(&b.id)));
    Ok(messages.into_iter().map(|(_, r)| r).collect())
}

/// Every record of one namespace, in no particular order.
pub fn namespace_records(
    searcher: &Searcher,
    fields: &IndexFields,
    namespace: &str,
) -> Result<Vec<Record>> {
    matching_records(searcher, fields, &*term_query(fields.namespace, namespace))
}

fn term_query(field: tantivy::schema::Field, text: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, text),
        IndexRecordOption::Basic,
    ))
}

/// The live records matching `query`, read from their stored JSON.
fn matching_records(
    searcher: &Searcher,
    fields: &IndexFields,
    query: &dyn Query,
) -> Result<Vec<Record>> {
    let addresses = searcher.search(query, &DocSetCollector)?;
    let mut records = Vec::with_capacity(addresses.len());
    for address in addresses {
        let doc: TantivyDocument = searcher.doc(address)?;
        records.push(fields.record(&doc)?);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Origin;
    use crate::record::{parse_record, ParseOptions};
    use crate::store::Store;
    use std::time::Duration;

    fn record(value: serde_json::Value) -> Record {
        parse_record(value, &Origin::file("test"), &ParseOptions::default()).expect("record")
    }

    #[test]
    fn session_messages_keeps_the_turn_range_in_turn_order() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = Store::init(&dir.path().join("s")).expect("init");
        let mut records: Vec<Record> = [7, 3, 5, 4, 9]
            .iter()
            .map(|t| {
                record(serde_json::json!({
                    "session_id": "s1", "turn_index": t, "role": "user", "text": format!("turn {t}")
                }))
            })
            .collect();
        records.push(record(serde_json::json!({
            "session_id": "s2", "turn_index": 4, "role": "user", "text": "other session"
        })));
        records.push(record(serde_json::json!({
            "segment_id": "seg", "session_id": "s1", "start_turn": 3, "end_turn": 7,
            "topic": "t", "compressed_content": "summary"
        })));
        store
            .add(records, None, Duration::from_secs(5))
            .expect("add");
        let searcher = store.reader().expect("reader").searcher();
        let found = session_messages(&searcher, store.fields(), "s1", 4, 7).expect("browse");
        let ids: Vec<&str> = found.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["s1:turn:4", "s1:turn:5", "s1:turn:7"]);
        let all = namespace_records(&searcher, store.fields(), "default").expect("ns");
        assert_eq!(all.len(), 7);
        assert!(namespace_records(&searcher, store.fields(), "none")
            .expect("ns")
            .is_empty());
    }
}
