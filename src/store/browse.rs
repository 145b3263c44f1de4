//! Browsing: records found by what they belong to rather than by relevance.
//!
//! Search ranks; browsing lists. An agent that found a segment summary drills
//! down to the raw messages of its session and turn range; the QMD surface lists
//! the records of one collection's namespace to tell which files changed; the
//! viewer (`knowledge-db ui`) lists the sessions of each group by date, a
//! session's summaries, and a record's vector state. Lookups are exact-term
//! queries on the untokenized `session`, `kind` and `namespace` fields; the
//! session list is counted from the fast fields alone (no stored record is
//! read), so listing the sessions of a 40k-record store reads a few columns.
//! Everything is read from one searcher (one commit).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use tantivy::collector::DocSetCollector;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Searcher, TantivyDocument, Term};

use crate::error::{Error, Result};
use crate::index::lookup::IdLookup;
use crate::index::{has_vector, IndexFields};
use crate::record::parse::format_time;
use crate::record::{Kind, Record};

/// The column sessions are grouped by in [`sessions`]: each session belongs
/// to the project of its records (`""` for records of no project, such as
/// notes added by hand or the OpenClaw plugin's messages).
pub const GROUP_COLUMN: &str = "project";

/// One session as a listing shows it: counted from the fast fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionEntry {
    /// The session id.
    pub session_id: String,
    /// Its group (see [`GROUP_COLUMN`]); a session whose records lie in
    /// several groups is listed once in each.
    pub group: String,
    /// Live records of the session in that group.
    pub records: u64,
    /// Those records per kind name.
    pub by_kind: BTreeMap<String, u64>,
    /// The earliest record time (RFC 3339); `None` when no record has one.
    pub first: Option<String>,
    /// The latest record time (RFC 3339).
    pub last: Option<String>,
    /// `first` in Unix seconds.
    #[serde(skip)]
    pub first_unix: Option<i64>,
    /// `last` in Unix seconds, the listing's order.
    #[serde(skip)]
    pub last_unix: Option<i64>,
}

/// One group (see [`GROUP_COLUMN`]) with its sessions counted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupEntry {
    /// The group's name.
    pub name: String,
    /// Sessions in it.
    pub sessions: u64,
    /// Live records of those sessions.
    pub records: u64,
    /// The latest record time of its sessions (RFC 3339).
    pub last: Option<String>,
}

/// Per (group, session) ordinal pair of one segment: counts and times.
#[derive(Default)]
struct Tally {
    records: u64,
    by_kind: HashMap<u64, u64>,
    first: Option<i64>,
    last: Option<i64>,
}

/// Every session with live records, per group, newest first (by its latest
/// record time; sessions without times last, then by id). Records without a
/// session (notes) are not listed.
pub fn sessions(searcher: &Searcher) -> Result<Vec<SessionEntry>> {
    let mut merged: HashMap<(String, String), SessionEntry> = HashMap::new();
    let column_error = |e: std::io::Error| Error::io("text index", e);
    for segment in searcher.segment_readers() {
        let fast = segment.fast_fields();
        let (Some(session), Some(group), Some(kind)) = (
            fast.str("session")?,
            fast.str(GROUP_COLUMN)?,
            fast.str("kind")?,
        ) else {
            continue;
        };
        let times = fast.date("timestamp")?;
        let mut tallies: HashMap<(u64, u64), Tally> = HashMap::new();
        for doc in segment.doc_ids_alive() {
            let (Some(s), Some(g)) = (session.term_ords(doc).next(), group.term_ords(doc).next())
            else {
                continue;
            };
            let tally = tallies.entry((g, s)).or_default();
            tally.records += 1;
            if let Some(k) = kind.term_ords(doc).next() {
                *tally.by_kind.entry(k).or_default() += 1;
            }
            if let Some(t) = times.first(doc).map(|t| t.into_timestamp_secs()) {
                tally.first = Some(tally.first.map_or(t, |f| f.min(t)));
                tally.last = Some(tally.last.map_or(t, |l| l.max(t)));
            }
        }
        let mut text = String::new();
        let mut name_of = |column: &tantivy::columnar::StrColumn, ord: u64| {
            text.clear();
            column.ord_to_str(ord, &mut text).map_err(column_error)?;
            Ok::<String, Error>(text.clone())
        };
        for ((g, s), tally) in tallies {
            let key = (name_of(&group, g)?, name_of(&session, s)?);
            let entry = merged.entry(key.clone()).or_insert_with(|| SessionEntry {
                session_id: key.1.clone(),
                group: key.0.clone(),
                records: 0,
                by_kind: BTreeMap::new(),
                first: None,
                last: None,
                first_unix: None,
                last_unix: None,
            });
            entry.records += tally.records;
            for (k, n) in tally.by_kind {
                *entry.by_kind.entry(name_of(&kind, k)?).or_default() += n;
            }
            let first = [tally.first, entry.first_unix].into_iter().flatten().min();
            entry.first_unix = first;
            entry.first = first.map(format_time);
            let last = [tally.last, entry.last_unix].into_iter().flatten().max();
            entry.last_unix = last;
            entry.last = last.map(format_time);
        }
    }
    let mut list: Vec<SessionEntry> = merged.into_values().collect();
    list.sort_by(|a, b| {
        b.last_unix
            .cmp(&a.last_unix)
            .then_with(|| a.session_id.cmp(&b.session_id))
            .then_with(|| a.group.cmp(&b.group))
    });
    Ok(list)
}

/// The groups of `sessions` (as [`sessions`] lists them), newest first.
pub fn groups(sessions: &[SessionEntry]) -> Vec<GroupEntry> {
    let mut by_name: BTreeMap<&str, (GroupEntry, Option<i64>)> = BTreeMap::new();
    for s in sessions {
        let (entry, last) = by_name.entry(&s.group).or_insert_with(|| {
            (
                GroupEntry {
                    name: s.group.clone(),
                    sessions: 0,
                    records: 0,
                    last: None,
                },
                None,
            )
        });
        entry.sessions += 1;
        entry.records += s.records;
        if s.last_unix > *last {
            *last = s.last_unix;
            entry.last.clone_from(&s.last);
        }
    }
    let mut list: Vec<(GroupEntry, Option<i64>)> = by_name.into_values().collect();
    list.sort_by(|(a, la), (b, lb)| lb.cmp(la).then_with(|| a.name.cmp(&b.name)));
    list.into_iter().map(|(g, _)| g).collect()
}

/// Which vector a live record carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorState {
    /// None yet: the upkeep (or `embed`) computes it.
    None,
    /// A draft by the int8 model, replaced by the full model's later.
    Draft,
    /// The full model's vector.
    Full,
}

/// The vector state of the live record `id`; `None` when no live record has it.
pub fn vector_state(
    searcher: &Searcher,
    fields: &IndexFields,
    id: &str,
) -> Result<Option<VectorState>> {
    let Some(address) = IdLookup::new(searcher, fields)?.find(id)? else {
        return Ok(None);
    };
    let segment = searcher.segment_reader(address.segment_ord);
    let value = segment
        .fast_fields()
        .u64("has_vector")?
        .first(address.doc_id);
    Ok(Some(match value {
        Some(has_vector::FULL) => VectorState::Full,
        Some(has_vector::DRAFT) => VectorState::Draft,
        _ => VectorState::None,
    }))
}

/// The ids of every live record of `session`, sorted, read from the `id`
/// column (no stored record is read): what deleting a whole session deletes.
pub fn session_ids(
    searcher: &Searcher,
    fields: &IndexFields,
    session: &str,
) -> Result<Vec<String>> {
    let query = term_query(fields.session, session);
    let addresses = searcher.search(&*query, &DocSetCollector)?;
    let mut columns = Vec::with_capacity(searcher.segment_readers().len());
    for segment in searcher.segment_readers() {
        columns.push(segment.fast_fields().str("id")?);
    }
    let mut ids = Vec::with_capacity(addresses.len());
    let mut text = String::new();
    for address in addresses {
        let Some(column) = columns
            .get(address.segment_ord as usize)
            .and_then(Option::as_ref)
        else {
            continue;
        };
        if let Some(ord) = column.term_ords(address.doc_id).next() {
            text.clear();
            column
                .ord_to_str(ord, &mut text)
                .map_err(|e| Error::io("text index", e))?;
            ids.push(text.clone());
        }
    }
    ids.sort();
    Ok(ids)
}

/// Characters of a session's title.
pub const TITLE_CHARS: usize = 100;

/// What a session was about, in one line: its first prompt (the first user
/// message of its first turn, not a tool result), else the title of its first
/// segment or task summary; `None` when it has neither. Reads only the
/// session's first-turn messages (a range on the turn column), so a page
/// of sessions costs a few small lookups.
pub fn session_title(
    searcher: &Searcher,
    fields: &IndexFields,
    session: &str,
) -> Result<Option<String>> {
    let first_turns = tantivy::query::RangeQuery::new(
        std::ops::Bound::Included(Term::from_field_u64(fields.turn, 0)),
        std::ops::Bound::Included(Term::from_field_u64(fields.turn, 1)),
    );
    let query = BooleanQuery::new(vec![
        (Occur::Must, term_query(fields.session, session)),
        (Occur::Must, term_query(fields.kind, Kind::Message.as_str())),
        (Occur::Must, Box::new(first_turns)),
    ]);
    let mut prompts: Vec<Record> = matching_records(searcher, fields, &query)?
        .into_iter()
        .filter(|r| r.fields.title == "user" && !r.fields.content.starts_with("[tool_"))
        .filter(|r| !r.fields.content.trim().is_empty())
        .collect();
    let line = |r: &Record| r.source.pointer("/origin/line").and_then(|l| l.as_u64());
    prompts.sort_by_key(|r| (r.fields.start_turn, r.fields.timestamp, line(r)));
    if let Some(first) = prompts.first() {
        return Ok(Some(one_line(&first.fields.content)));
    }
    let summaries = session_records(searcher, fields, session, &[Kind::Segment, Kind::Task])?;
    Ok(summaries
        .iter()
        .find(|r| !r.fields.title.trim().is_empty())
        .map(|r| one_line(&r.fields.title)))
}

/// The first line of `text` with words, at most [`TITLE_CHARS`] characters.
fn one_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    match line.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

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

/// What `session` was asked first: the earliest user message of its main
/// chain in its first turn. Only that turn's records are read. A subagent's
/// prompt (a sidechain user message of the same session and turn) is not
/// what the session was about (the real Claude Code showed both).
pub fn first_prompt(
    searcher: &Searcher,
    fields: &IndexFields,
    session: &str,
) -> Result<Option<Record>> {
    let query = BooleanQuery::new(vec![
        (Occur::Must, term_query(fields.session, session)),
        (Occur::Must, term_query(fields.kind, Kind::Message.as_str())),
        (
            Occur::Must,
            Box::new(TermQuery::new(
                Term::from_field_u64(fields.turn, 0),
                IndexRecordOption::Basic,
            )),
        ),
    ]);
    Ok(first_main_prompt(matching_records(
        searcher, fields, &query,
    )?))
}

/// The earliest user message of the main chain among `messages`, by time,
/// then by line in the transcript.
pub fn first_main_prompt(messages: Vec<Record>) -> Option<Record> {
    let order = |m: &Record| {
        let time = m
            .source
            .get("timestamp")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_string();
        let line = m
            .source
            .pointer("/origin/line")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(u64::MAX);
        (time, line)
    };
    messages
        .into_iter()
        .filter(|m| m.fields.title == "user")
        .filter(|m| {
            m.source
                .get("is_sidechain")
                .and_then(serde_json::Value::as_bool)
                != Some(true)
        })
        .min_by_key(order)
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

    #[test]
    fn sessions_are_counted_per_group_newest_first_and_listed_by_id() {
        let dir = tempfile::tempdir().expect("tmp");
        let store = Store::init(&dir.path().join("s")).expect("init");
        let message = |session: &str, ns: &str, turn: u64, time: &str| {
            record(serde_json::json!({
                "session_id": session, "project": ns, "turn_index": turn,
                "role": "user", "text": format!("turn {turn}"), "timestamp": time
            }))
        };
        let records = vec![
            message("old", "a", 1, "2026-01-01T10:00:00Z"),
            message("old", "a", 2, "2026-01-01T11:00:00Z"),
            message("new", "a", 1, "2026-02-01T10:00:00Z"),
            message("other", "b", 1, "2026-01-15T10:00:00Z"),
            record(serde_json::json!({
                "segment_id": "seg", "session_id": "old", "project": "a",
                "start_turn": 1, "end_turn": 2, "topic": "t", "compressed_content": "x",
                "compressed_at": "2026-01-01T12:00:00Z"
            })),
            record(serde_json::json!({"id": "note", "text": "no session"})),
        ];
        store
            .add(records, None, Duration::from_secs(5))
            .expect("add");
        let searcher = store.reader().expect("reader").searcher();
        let list = sessions(&searcher).expect("sessions");
        let order: Vec<(&str, &str)> = list
            .iter()
            .map(|s| (s.group.as_str(), s.session_id.as_str()))
            .collect();
        assert_eq!(order, [("a", "new"), ("b", "other"), ("a", "old")]);
        let old = &list[2];
        assert_eq!(old.records, 3);
        assert_eq!(old.by_kind.get("message"), Some(&2));
        assert_eq!(old.by_kind.get("segment"), Some(&1));
        assert_eq!(old.first.as_deref(), Some("2026-01-01T10:00:00Z"));
        assert_eq!(old.last.as_deref(), Some("2026-01-01T12:00:00Z"));

        let groups = groups(&list);
        let names: Vec<(&str, u64, u64)> = groups
            .iter()
            .map(|g| (g.name.as_str(), g.sessions, g.records))
            .collect();
        assert_eq!(names, [("a", 2, 4), ("b", 1, 1)]);

        let ids = session_ids(&searcher, store.fields(), "old").expect("ids");
        assert_eq!(ids, ["old:turn:1", "old:turn:2", "seg"]);
        let summaries =
            session_records(&searcher, store.fields(), "old", &[Kind::Segment]).expect("segments");
        assert_eq!(summaries.len(), 1);
        assert_eq!(summaries[0].id, "seg");
        assert_eq!(
            vector_state(&searcher, store.fields(), "seg").expect("state"),
            Some(VectorState::None)
        );
        assert_eq!(
            vector_state(&searcher, store.fields(), "missing").expect("state"),
            None
        );
    }
}
