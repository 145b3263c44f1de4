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

/// The project the records of `session` belong to: that of the first live
/// record of the session that names one (read from the fast column, no
/// stored document decoded); `None` when none does.
pub fn session_project(
    searcher: &Searcher,
    fields: &IndexFields,
    session: &str,
) -> Result<Option<String>> {
    let query = BooleanQuery::new(vec![
        (Occur::Must, term_query(fields.session, session)),
        (
            Occur::MustNot,
            term_query(fields.project, crate::index::NO_PROJECT),
        ),
    ]);
    let docs = searcher.search(
        &query,
        &tantivy::collector::TopDocs::with_limit(1).order_by_score(),
    )?;
    let Some((_, address)) = docs.first() else {
        return Ok(None);
    };
    let segment = searcher.segment_reader(address.segment_ord);
    let Some(column) = segment.fast_fields().str("project")? else {
        return Ok(None);
    };
    let mut project = String::new();
    if let Some(ord) = column.term_ords(address.doc_id).next() {
        column
            .ord_to_str(ord, &mut project)
            .map_err(|e| crate::Error::io("text index", e))?;
    }
    Ok((!project.is_empty()).then_some(project))
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

/// One session as a list of sessions shows it: read from the fast columns,
/// no stored document decoded.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionSpan {
    /// The session id.
    pub session_id: String,
    /// Live records of the session.
    pub records: u64,
    /// Unix seconds of its oldest record time, if any has one.
    pub first: Option<i64>,
    /// Unix seconds of its newest record time, if any has one.
    pub last: Option<i64>,
}

/// The sessions with records in `project` (`None`: in any project, sessions
/// of no project included), newest first (by their newest record; sessions
/// without times last, by id).
pub fn project_sessions(
    searcher: &Searcher,
    fields: &IndexFields,
    project: Option<&str>,
) -> Result<Vec<SessionSpan>> {
    let query: Box<dyn Query> = match project {
        Some(project) => term_query(fields.project, project),
        None => Box::new(tantivy::query::AllQuery),
    };
    let addresses = searcher.search(&*query, &DocSetCollector)?;
    let mut spans: std::collections::HashMap<String, SessionSpan> = Default::default();
    let mut by_segment: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
    for address in addresses {
        by_segment
            .entry(address.segment_ord)
            .or_default()
            .push(address.doc_id);
    }
    let mut name = String::new();
    for (ord, docs) in by_segment {
        let segment = searcher.segment_reader(ord);
        let fast = segment.fast_fields();
        let Some(sessions) = fast.str("session")? else {
            continue;
        };
        let times = fast.date("timestamp")?;
        for doc in docs {
            let Some(session_ord) = sessions.term_ords(doc).next() else {
                continue;
            };
            name.clear();
            sessions
                .ord_to_str(session_ord, &mut name)
                .map_err(|e| crate::Error::io("text index", e))?;
            let span = spans.entry(name.clone()).or_insert_with(|| SessionSpan {
                session_id: name.clone(),
                records: 0,
                first: None,
                last: None,
            });
            span.records += 1;
            if let Some(time) = times.first(doc).map(|t| t.into_timestamp_secs()) {
                span.first = Some(span.first.map_or(time, |f| f.min(time)));
                span.last = Some(span.last.map_or(time, |l| l.max(time)));
            }
        }
    }
    let mut list: Vec<SessionSpan> = spans.into_values().collect();
    list.sort_by(|a, b| {
        b.last
            .cmp(&a.last)
            .then_with(|| a.session_id.cmp(&b.session_id))
    });
    Ok(list)
}

/// The records of `session` of the given kinds, in turn order (records
/// without a turn last).
pub fn session_records(
    searcher: &Searcher,
    fields: &IndexFields,
    session: &str,
    kinds: &[Kind],
) -> Result<Vec<Record>> {
    let kinds: Vec<(Occur, Box<dyn Query>)> = kinds
        .iter()
        .map(|k| (Occur::Should, term_query(fields.kind, k.as_str())))
        .collect();
    let query = BooleanQuery::new(vec![
        (Occur::Must, term_query(fields.session, session)),
        (Occur::Must, Box::new(BooleanQuery::new(kinds))),
    ]);
    let mut records = matching_records(searcher, fields, &query)?;
    records.sort_by(|a, b| {
        let turn = |r: &Record| r.fields.start_turn.unwrap_or(u64::MAX);
        turn(a).cmp(&turn(b)).then_with(|| a.id.cmp(&b.id))
    });
    Ok(records)
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
