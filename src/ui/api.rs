//! The viewer's answers: each API call as a function of the viewer and the
//! request's parameters, returning the JSON the page reads.
//!
//! Every answer comes from the library calls the CLI and MCP make: search is
//! [`SearchEngine::search`] with [`Filters`] (the CLI's flags, one for one);
//! a record is [`crate::tiers::find`] (reads count like `get`'s); health is
//! [`crate::tiers::stats`], [`crate::upkeep::status`], the last `verify`, the
//! hooks' queues and log; raw turns are [`read_turns`] (`show --turns`);
//! forget is [`crate::tiers::forget::forget`] (`forget`). Browsing reads
//! [`crate::store::browse`] on the warm engine's searcher. Nothing here knows
//! HTTP: [`super::server`] maps parameters in and [`Reply`]s out, so these
//! functions are tested directly.
//!
//! Every answer is bounded: a query's length, a page of results, sessions,
//! messages or queue files, and the ids of one delete are capped, and a
//! larger request is refused or cut with a note rather than answered whole.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::Viewer;
use crate::error::{Error, Result};
use crate::index::{LOCAL_ORIGIN, NO_PROJECT};
use crate::integrations::hooks::queue::all_queues;
use crate::integrations::hooks::turns::{read_turns, TurnQuery, DEFAULT_MESSAGE_CHARS};
use crate::integrations::hooks::{HookFiles, HookSettings};
use crate::record::time::parse_bound;
use crate::record::{Kind, Record};
use crate::search::{Filters, RankOptions, SearchEngine, TierFilter};
use crate::store::browse::{self, GROUP_COLUMN};
use crate::store::Store;
use crate::tiers::forget::ForgetWhat;
use crate::tiers::Found;

/// Longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 2_000;
/// Most results one search returns.
pub const MAX_RESULTS: usize = 100;
/// Most sessions one page lists.
pub const MAX_SESSIONS_PAGE: usize = 100;
/// Most messages one page of turns holds.
pub const MAX_MESSAGES_PAGE: usize = 200;
/// Most summaries (segments, tasks) shown per session.
pub const MAX_SUMMARIES: usize = 500;
/// Most queue files the health page reads.
pub const MAX_QUEUES: usize = 200;
/// Lines of `hooks.log` the health page shows.
pub const HOOK_LOG_LINES: usize = 50;
/// Most ids one delete names.
pub const MAX_DELETE_IDS: usize = 1_000;

/// The request's query parameters, by name.
pub type Params = HashMap<String, String>;

/// An answer: an HTTP status and its JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// 200, or 404 when what was asked for is not there.
    pub status: u16,
    /// The JSON body.
    pub body: Value,
}

impl Reply {
    fn ok(body: Value) -> Reply {
        Reply { status: 200, body }
    }

    fn not_found(message: String) -> Reply {
        Reply {
            status: 404,
            body: json!({ "error": message }),
        }
    }
}

/// A parameter's text, `None` when absent or blank.
fn text<'a>(params: &'a Params, name: &str) -> Option<&'a str> {
    params.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// A required parameter.
fn required<'a>(params: &'a Params, name: &str) -> Result<&'a str> {
    text(params, name).ok_or_else(|| Error::Usage(format!("`{name}` is required")))
}

/// A whole-number parameter, `default` when absent, refused above `max`.
fn number(params: &Params, name: &str, default: u64, max: u64) -> Result<u64> {
    let Some(value) = text(params, name) else {
        return Ok(default);
    };
    let n: u64 = value
        .parse()
        .map_err(|_| Error::Usage(format!("`{name}`: `{value}` is not a whole number")))?;
    if n > max {
        return Err(Error::Usage(format!("`{name}`: at most {max}, not {n}")));
    }
    Ok(n)
}

/// What the page needs to know before its first call.
pub fn info(viewer: &Viewer) -> Result<Reply> {
    let engine = viewer.service.engine()?;
    Ok(Reply::ok(json!({
        "store": viewer.service.store().root(),
        "version": env!("CARGO_PKG_VERSION"),
        "allow_delete": viewer.allow_delete,
        "vector": engine.vector_status(),
        "records": engine.num_records(),
        "group_by": GROUP_COLUMN,
        "kinds": Kind::ALL.map(Kind::as_str),
        "limits": {
            "query_chars": MAX_QUERY_CHARS,
            "results": MAX_RESULTS,
            "sessions_page": MAX_SESSIONS_PAGE,
            "messages_page": MAX_MESSAGES_PAGE,
        },
    })))
}

/// The search filters from parameters named as the CLI's flags: `project`
/// (absent: every project; records of no project are in every project's
/// scope), `origin` (`local`, or the machine a pulled record came from),
/// `namespace` (absent: every namespace), `session`, `kind`, `since`, `until` (dates, RFC
/// 3339 times or ages such as `7d`), `file`, `tier` (`l2`, `l3`, `all`),
/// `min_score`, `all` (weak results too).
pub fn filters(params: &Params) -> Result<Filters> {
    let now = crate::now_unix();
    let time = |name: &str| -> Result<Option<i64>> {
        text(params, name)
            .map(|t| parse_bound(t, now).map_err(|e| Error::Usage(format!("`{name}`: {e}"))))
            .transpose()
    };
    let kind = text(params, "kind")
        .map(|k| {
            Kind::parse(k).ok_or_else(|| {
                Error::Usage(format!(
                    "`kind`: `{k}` is not one of {}",
                    crate::store::kind_names()
                ))
            })
        })
        .transpose()?;
    let tier = match text(params, "tier") {
        None | Some("l2") => TierFilter::L2,
        Some("l3") => TierFilter::L3,
        Some("all") => TierFilter::All,
        Some(other) => {
            return Err(Error::Usage(format!(
                "`tier`: `{other}` is not one of l2, l3, all"
            )))
        }
    };
    let min_score = match text(params, "min_score") {
        Some(s) => Some(
            s.parse::<f32>()
                .ok()
                .filter(|v| (0.0..=1.0).contains(v))
                .ok_or_else(|| {
                    Error::Usage(format!("`min_score`: `{s}` is not a score from 0 to 1"))
                })?,
        ),
        None => None,
    };
    let all = matches!(text(params, "all"), Some("1" | "true"));
    Ok(Filters {
        namespace: text(params, "namespace").map(str::to_string),
        project: text(params, "project").map(str::to_string),
        origin: text(params, "origin").map(str::to_string),
        session: text(params, "session").map(str::to_string),
        kind,
        since: time("since")?,
        until: time("until")?,
        file: text(params, "file").map(str::to_string),
        tier,
        min_score: if all { Some(0.0) } else { min_score },
        ..Filters::default()
    })
}

/// `GET api/search?q=…`: ranked hits with their score parts (the explain),
/// the abstention's explanation and best score, and the unknown words; the
/// same answer as `knowledge-db search --json` with the same filters.
pub fn search(viewer: &Viewer, params: &Params) -> Result<Reply> {
    let query = required(params, "q")?;
    let chars = query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(Error::Usage(format!(
            "the query has {chars} characters; at most {MAX_QUERY_CHARS}"
        )));
    }
    let k = number(params, "k", 20, MAX_RESULTS as u64)?.max(1) as usize;
    let mut filters = filters(params)?;
    if let Some(session) = filters.session.take() {
        filters.session = Some(crate::store::prefix::resolve_session(
            viewer.service.store(),
            &session,
        )?);
    }
    let engine = viewer.service.engine()?;
    let response = engine.search(query, k, &filters, &RankOptions::default())?;
    crate::upkeep::after_read(viewer.service.store(), response.records_without_vector);
    let body = serde_json::to_value(&response).map_err(json_error)?;
    Ok(Reply::ok(body))
}

fn json_error(e: serde_json::Error) -> Error {
    Error::io("a viewer answer", std::io::Error::other(e))
}

/// `GET api/groups`: every project (see [`GROUP_COLUMN`]; `""` for records of
/// no project) with its sessions counted.
pub fn groups(viewer: &Viewer) -> Result<Reply> {
    let engine = viewer.service.engine()?;
    let sessions = browse::sessions(engine.searcher())?;
    let groups = browse::groups(&sessions);
    Ok(Reply::ok(json!({
        "group_by": GROUP_COLUMN,
        "sessions": sessions.len(),
        "groups": groups,
    })))
}

/// `GET api/scopes`: the projects, namespaces and origins of the live
/// records, each with its records counted (for the search filters).
pub fn scopes(viewer: &Viewer) -> Result<Reply> {
    let engine = viewer.service.engine()?;
    let counts = crate::index::ColumnCounts::of(engine.searcher())?;
    Ok(Reply::ok(json!({
        "projects": counts.by_project,
        "namespaces": counts.by_namespace,
        "origins": counts.by_origin,
    })))
}

/// `GET api/sessions?group=&offset=&limit=`: one page of a project's
/// sessions, newest first. `group` absent: every project's; `group=` (empty):
/// the sessions of no project.
pub fn sessions(viewer: &Viewer, params: &Params) -> Result<Reply> {
    let offset = number(params, "offset", 0, u64::from(u32::MAX))? as usize;
    let limit = number(params, "limit", 25, MAX_SESSIONS_PAGE as u64)?.max(1) as usize;
    let group = params.get("group").map(|g| g.trim());
    let engine = viewer.service.engine()?;
    let all = browse::sessions(engine.searcher())?;
    let matching: Vec<_> = all
        .into_iter()
        .filter(|s| group.is_none_or(|g| s.group == g))
        .collect();
    let fields = viewer.service.store().fields();
    let page = matching
        .iter()
        .skip(offset)
        .take(limit)
        .map(|s| {
            let mut entry = serde_json::to_value(s).map_err(json_error)?;
            entry["title"] = json!(browse::session_title(
                engine.searcher(),
                fields,
                &s.session_id
            )?);
            Ok(entry)
        })
        .collect::<Result<Vec<Value>>>()?;
    Ok(Reply::ok(json!({
        "group": group,
        "total": matching.len(),
        "offset": offset,
        "limit": limit,
        "sessions": page,
    })))
}

/// A summary (segment or task) as the timeline shows it.
fn summary_json(record: &Record) -> Value {
    let f = &record.fields;
    let source = &record.source;
    json!({
        "id": record.id,
        "kind": record.kind,
        "title": f.title,
        "content": f.content,
        "decisions": f.decisions,
        "files": f.files,
        "commands": f.commands,
        "errors": f.errors,
        "start_turn": f.start_turn,
        "end_turn": f.end_turn,
        "timestamp": f.timestamp.map(crate::record::parse::format_time),
        "outcome": source.get("key_outcomes").or_else(|| source.pointer("/metadata/task_completed")),
        "hook_summary": crate::integrations::hooks::is_hook_summary(source),
    })
}

/// `GET api/session?id=`: a session's segments and task summaries (by turn)
/// and its compression queue.
pub fn session(viewer: &Viewer, params: &Params) -> Result<Reply> {
    let id =
        &crate::store::prefix::resolve_session(viewer.service.store(), required(params, "id")?)?;
    let engine = viewer.service.engine()?;
    let searcher = engine.searcher();
    let fields = viewer.service.store().fields();
    let mut summaries = Vec::new();
    let mut total = 0;
    for kind in [Kind::Segment, Kind::Task] {
        let records = browse::session_records(searcher, fields, id, &[kind])?;
        total += records.len();
        summaries.extend(records);
    }
    summaries.sort_by_key(|r| (r.fields.start_turn.unwrap_or(u64::MAX), r.id.clone()));
    summaries.truncate(MAX_SUMMARIES);
    let root = viewer.service.store().root();
    let settings = HookSettings::from_store(root)?;
    let queue_file = crate::integrations::hooks::queue::queue_path(root, &settings, id);
    let queue = if queue_file.is_file() {
        Some(crate::integrations::hooks::queue::Queue::load(
            &queue_file,
            id,
        )?)
    } else {
        None
    };
    Ok(Reply::ok(json!({
        "session_id": id,
        "title": browse::session_title(searcher, fields, id)?,
        "summaries": summaries.iter().map(summary_json).collect::<Vec<_>>(),
        "summaries_total": total,
        "summaries_cut": total > MAX_SUMMARIES,
        "queue": queue,
    })))
}

/// `GET api/turns?session=&from=&to=&limit=`: a page of a session's raw
/// messages by assistant turn, as `knowledge-db show --turns A-B` reads them
/// (from the store, else the transcript). When no turn index can be had (the
/// hooks never followed the session and its transcript is gone), the stored
/// messages by conversation turn instead, said so in `clock`.
pub fn turns(viewer: &Viewer, params: &Params) -> Result<Reply> {
    let session = &crate::store::prefix::resolve_session(
        viewer.service.store(),
        required(params, "session")?,
    )?;
    // `message=ID`: from the turn that holds that stored message (a search
    // hit's link), whatever clock its own turn number is on.
    let at_message = match text(params, "message") {
        Some(id) => crate::tiers::find(viewer.service.store(), id)?
            .and_then(|found| found.record().source.pointer("/origin/line")?.as_u64())
            .map(|line| {
                crate::integrations::hooks::turns::turn_of_line(
                    viewer.service.store().root(),
                    session,
                    line,
                )
            })
            .transpose()
            .unwrap_or(None),
        None => None,
    };
    let from = match at_message {
        Some(turn) => turn,
        None => number(params, "from", 1, u64::MAX)?.max(1),
    };
    let to = number(params, "to", u64::MAX, u64::MAX)?.max(from);
    let limit = number(params, "limit", 50, MAX_MESSAGES_PAGE as u64)?.max(1) as usize;
    let query = TurnQuery {
        session_id: session.to_string(),
        from,
        to,
        limit: Some(limit),
        max_chars: Some(DEFAULT_MESSAGE_CHARS),
        namespace: None,
    };
    match read_turns(viewer.service.store().root(), &query) {
        Ok(turns) => {
            let mut body = turns.to_json();
            body["clock"] = json!("assistant");
            Ok(Reply::ok(body))
        }
        Err(Error::Usage(why)) => {
            let engine = viewer.service.engine()?;
            stored_turns(
                viewer.service.store(),
                engine.as_ref(),
                session,
                from,
                limit,
                &why,
            )
        }
        Err(e) => Err(e),
    }
}

/// The stored messages of `session` from conversation turn `from` on (turns
/// as `ingest` numbers them: one per user prompt), whole turns per page.
fn stored_turns(
    store: &Store,
    engine: &SearchEngine,
    session: &str,
    from: u64,
    limit: usize,
    why: &str,
) -> Result<Reply> {
    // Turns are shown from 1; a transcript's messages are stored from 0
    // (`Record::shown_turns`), so read from one turn earlier and keep those
    // shown at `from` or later.
    let mut messages = browse::session_messages(
        engine.searcher(),
        store.fields(),
        session,
        from.saturating_sub(1),
        u64::MAX,
    )?;
    messages.retain(|r| r.shown_turns().0.is_none_or(|t| t >= from));
    if messages.is_empty() {
        return Ok(Reply::not_found(why.to_string()));
    }
    let mut page: Vec<&Record> = messages.iter().take(limit).collect();
    let mut next_from = None;
    if let Some(next) = messages.get(limit) {
        let next_turn = next.shown_turns().0.unwrap_or(from);
        // Whole turns per page when the page holds more than one.
        if page.iter().any(|r| r.shown_turns().0 != Some(next_turn)) {
            page.retain(|r| r.shown_turns().0 != Some(next_turn));
            next_from = Some(next_turn);
        } else {
            next_from = Some(next_turn + 1);
        }
    }
    let rows: Vec<Value> = page
        .iter()
        .map(|r| {
            json!({
                "turn": r.shown_turns().0,
                "line": r.source.pointer("/origin/line"),
                "role": r.fields.title,
                "text": clip(&r.fields.content, DEFAULT_MESSAGE_CHARS),
                "timestamp": r.source.get("timestamp"),
                "id": r.id,
                "tools": r.source.get("tool_names"),
            })
        })
        .collect();
    Ok(Reply::ok(json!({
        "session_id": session,
        "from": from,
        "source": "store",
        "clock": "conversation",
        "note": format!("{why}; showing the stored messages by conversation turn (one per user prompt)"),
        "messages": rows,
        "nextFrom": next_from,
        "truncated": next_from.is_some(),
    })))
}

/// `text` cut to `max` characters with a marker.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!(
            "{}\n[… {} more characters]",
            &text[..at],
            text[at..].chars().count()
        ),
        None => text.to_string(),
    }
}

/// `GET api/record?id=`: the record's JSON, project, origin (`local`, or the
/// machine it was pulled from), tier, access count and the reads the access
/// log still holds, its vector state and its provenance (the transcript file
/// and line and the flow that stored it).
pub fn record(viewer: &Viewer, params: &Params) -> Result<Reply> {
    let id = required(params, "id")?;
    let store = viewer.service.store();
    let Some(found) = crate::tiers::find(store, id)? else {
        return Ok(Reply::not_found(format!(
            "no record with id {id} in either tier"
        )));
    };
    let record = found.record();
    let pending = crate::store::access::Pending::read_one(store.root(), id)?;
    let reads: Vec<String> = pending
        .reads_of(id)
        .into_iter()
        .map(crate::record::parse::format_time_millis)
        .collect();
    let (vector, archived) = match &found {
        Found::Live(_) => {
            let engine = viewer.service.engine()?;
            let state = browse::vector_state(engine.searcher(), store.fields(), id)?;
            (json!(state), Value::Null)
        }
        Found::Archived(entry) => (
            json!(if entry.embedding.is_some() {
                "archived"
            } else {
                "none"
            }),
            json!({
                "archived_at": crate::record::parse::format_time(entry.archived_at),
                "dropped": entry.dropped,
            }),
        ),
    };
    let provenance = record.source.get("origin").cloned().unwrap_or(Value::Null);
    Ok(Reply::ok(json!({
        "id": record.id,
        "kind": record.kind,
        "namespace": record.namespace,
        "project": record.fields.project.as_deref().unwrap_or(NO_PROJECT),
        "origin": record.fields.origin.as_deref().unwrap_or(LOCAL_ORIGIN),
        "tier": record.tier.as_str(),
        "citation": record.citation(),
        "session_id": record.fields.session_id,
        "start_turn": record.shown_turns().0,
        "end_turn": record.shown_turns().1,
        "access": {
            "count": record.access_count,
            "last_accessed": record.last_accessed,
            "reads_not_folded": reads,
        },
        "vector": vector,
        "archived": archived,
        "provenance": provenance,
        "record": serde_json::to_value(record).map_err(json_error)?,
    })))
}

/// `GET api/health`: what `stats`, `upkeep --status` and the last `verify`
/// say, the compression queue of each session, the hooks' last log lines.
pub fn health(viewer: &Viewer) -> Result<Reply> {
    let store = viewer.service.store();
    let root = store.root();
    let stats = crate::tiers::stats(store)?;
    let upkeep = crate::upkeep::status(store);
    let verify = crate::tiers::verify::last_verify(root);
    let settings = HookSettings::from_store(root)?;
    let (queues, queue_files) = all_queues(root, &settings, MAX_QUEUES)?;
    let queues: Vec<Value> = queues
        .iter()
        .map(|q| {
            json!({
                "session_id": q.session_id,
                "pending": q.pending,
                "compressed": q.compressed.len(),
                "original_tokens": q.compressed.iter().map(|c| c.original_tokens).sum::<u64>(),
                "compressed_tokens": q.compressed.iter().map(|c| c.compressed_tokens).sum::<u64>(),
                "last_check_turn": q.last_check_turn,
            })
        })
        .collect();
    let hook_log = HookFiles::new(root).recent_log(HOOK_LOG_LINES)?;
    Ok(Reply::ok(json!({
        "stats": stats,
        "upkeep": upkeep,
        "upkeep_off": crate::upkeep::disabled_by(store),
        "verify": match verify {
            Ok(last) => json!(last),
            Err(e) => json!({"error": e.to_string()}),
        },
        "queues": queues,
        "queue_files": queue_files,
        "queues_shown": queues.len(),
        "hook_log": hook_log,
        "access_log_bytes": crate::store::access::pending_bytes(root),
    })))
}

/// What a forget asks for: ids, or a whole session.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteRequest {
    /// Record ids to forget.
    #[serde(default)]
    pub ids: Vec<String>,
    /// A session all of whose records are forgotten (any unique start of its id).
    #[serde(default)]
    pub session: Option<String>,
}

/// `POST api/forget` with `{"ids": [...]}` or `{"session": "..."}`: forgets
/// the records for good through [`crate::tiers::forget::forget`], the call
/// `knowledge-db forget` makes: both tiers, gone from disk, and tombstoned
/// so a later ingest does not bring them back (`forget --undo` lifts that).
/// A session's hook files go too. Refused unless the viewer was started
/// with `--allow-delete`.
pub fn forget(viewer: &Viewer, request: &DeleteRequest) -> Result<Reply> {
    if !viewer.allow_delete {
        return Ok(Reply {
            status: 403,
            body: json!({"error": "this viewer is read-only: start it with `knowledge-db ui --allow-delete` to forget records from the page, or run `knowledge-db forget ID`"}),
        });
    }
    let store = viewer.service.store();
    let what = match (&request.session, request.ids.is_empty()) {
        (Some(session), true) => {
            ForgetWhat::Session(crate::store::prefix::resolve_session(store, session)?)
        }
        (None, false) if request.ids.len() <= MAX_DELETE_IDS => {
            ForgetWhat::Ids(request.ids.clone())
        }
        (None, false) => {
            return Err(Error::Usage(format!(
                "{} ids in one forget; at most {MAX_DELETE_IDS}",
                request.ids.len()
            )))
        }
        _ => {
            return Err(Error::Usage(
                "give either `ids` or `session`, not both or neither".into(),
            ))
        }
    };
    let report = crate::tiers::forget::forget(store, &what, false, viewer.lock_timeout)?;
    if report.l2.is_empty() && report.l3.is_empty() {
        return Ok(Reply::not_found(
            "nothing stored matches: no record was forgotten".into(),
        ));
    }
    let hook_files: usize = report
        .sessions
        .iter()
        .map(|s| crate::integrations::hooks::forget_session_files(store.root(), s))
        .sum();
    Ok(Reply::ok(json!({
        "forgotten": report.l2.len() + report.l3.len(),
        "live": report.l2,
        "archived": report.l3,
        "session": report.sessions.first(),
        "hook_files_removed": hook_files,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn filters_read_the_clis_flags_and_name_a_bad_one() {
        let f = filters(&params(&[
            ("namespace", "proj"),
            ("project", "/work/alpha"),
            ("origin", "ana@laptop"),
            ("kind", "segment"),
            ("since", "2026-01-05"),
            ("file", "oauth2.py"),
            ("tier", "all"),
            ("all", "1"),
        ]))
        .expect("filters");
        assert_eq!(f.namespace.as_deref(), Some("proj"));
        assert_eq!(f.project.as_deref(), Some("/work/alpha"));
        assert_eq!(f.origin.as_deref(), Some("ana@laptop"));
        assert_eq!(f.kind, Some(Kind::Segment));
        assert_eq!(f.since, crate::record::parse::parse_time("2026-01-05"));
        assert_eq!(f.tier, TierFilter::All);
        assert_eq!(f.min_score, Some(0.0));
        let blank = filters(&params(&[
            ("namespace", " "),
            ("session", ""),
            ("project", ""),
        ]))
        .expect("blank");
        assert_eq!(
            (blank.namespace, blank.session, blank.project),
            (None, None, None)
        );
        for (name, value) in [
            ("kind", "page"),
            ("since", "yesterday-ish"),
            ("tier", "l9"),
            ("min_score", "2"),
        ] {
            let error = filters(&params(&[(name, value)]))
                .expect_err(name)
                .to_string();
            assert!(error.contains(name) && error.contains(value), "{error}");
        }
    }

    #[test]
    fn numbers_are_bounded() {
        let p = params(&[("limit", "101"), ("offset", "x")]);
        assert!(number(&p, "limit", 25, 100).is_err());
        assert!(number(&p, "offset", 0, 10).is_err());
        assert_eq!(number(&p, "absent", 7, 10).expect("default"), 7);
    }

    #[test]
    fn clip_marks_what_it_cut() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("abcdef", 4), "abcd\n[… 2 more characters]");
    }
}
