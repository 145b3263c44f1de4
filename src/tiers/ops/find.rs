//! Finding archived records through the L3 index: the ids and frame
//! locations a query matches, and a session's own task and segment summaries
//! wherever they are (L2 or the archive), which a pruned session's messages
//! are summarised from.

use crate::archive::l3::{self, L3Index};
use crate::archive::{Archive, Location};
use crate::error::{Error, Result};
use crate::record::{Kind, Record};
use crate::store::Store;

pub(super) fn term(field: tantivy::schema::Field, text: &str) -> Box<dyn tantivy::query::Query> {
    Box::new(tantivy::query::TermQuery::new(
        tantivy::Term::from_field_text(field, text),
        tantivy::schema::IndexRecordOption::Basic,
    ))
}

/// The ids and frame locations of the archived records `query` matches.
pub(super) fn locations_matching(
    l3: &L3Index,
    searcher: &tantivy::Searcher,
    query: &dyn tantivy::query::Query,
) -> Result<Vec<(String, Location)>> {
    let addresses = searcher.search(query, &tantivy::collector::DocSetCollector)?;
    let ids = searcher
        .segment_readers()
        .iter()
        .map(|s| s.fast_fields().str("id"))
        .collect::<tantivy::Result<Vec<_>>>()?;
    let mut out = Vec::with_capacity(addresses.len());
    for address in addresses {
        let mut id = String::new();
        if let Some(Some(column)) = ids.get(address.segment_ord as usize) {
            if let Some(ord) = column.term_ords(address.doc_id).next() {
                column
                    .ord_to_str(ord, &mut id)
                    .map_err(|e| Error::io("archive/index", e))?;
            }
        }
        if let Some(location) = l3::location_of(searcher, l3.fields(), address)? {
            out.push((id, location));
        }
    }
    Ok(out)
}

/// A query for the task and segment records of one session in one namespace.
fn summaries_query(
    fields: &crate::index::IndexFields,
    namespace: &str,
    session: &str,
) -> tantivy::query::BooleanQuery {
    use tantivy::query::{BooleanQuery, Occur};
    let kinds = BooleanQuery::new(vec![
        (Occur::Should, term(fields.kind, Kind::Task.as_str())),
        (Occur::Should, term(fields.kind, Kind::Segment.as_str())),
    ]);
    BooleanQuery::new(vec![
        (Occur::Must, term(fields.session, session)),
        (Occur::Must, term(fields.namespace, namespace)),
        (Occur::Must, Box::new(kinds)),
    ])
}

/// The session's own task and segment summaries, wherever they are: L2 (the
/// live version) and L3 (archived ones, possibly pruned to their summary fields).
pub(super) fn session_summaries(
    store: &Store,
    archive: &Archive,
    namespace: &str,
    session: &str,
) -> Result<Vec<Record>> {
    let searcher = store.reader()?.searcher();
    let query = summaries_query(store.fields(), namespace, session);
    let mut out = Vec::new();
    for address in searcher.search(&query, &tantivy::collector::DocSetCollector)? {
        let doc: tantivy::TantivyDocument = searcher.doc(address)?;
        out.push(store.fields().record(&doc)?);
    }
    if let Some(l3) = L3Index::open_existing(archive)? {
        let l3_searcher = l3.reader()?.searcher();
        let query = summaries_query(l3.fields(), namespace, session);
        for (id, location) in locations_matching(&l3, &l3_searcher, &query)? {
            if out.iter().all(|r| r.id != id) {
                out.extend(archive.read_entry(&location, &id)?.map(|e| e.record));
            }
        }
    }
    out.sort_by_key(|r| (r.fields.start_turn, r.fields.timestamp, r.id.clone()));
    Ok(out)
}
