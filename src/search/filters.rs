//! Filters: which records a search may return.
//!
//! Every filter becomes a tantivy query that narrows the candidates without
//! changing their scores; BM25 and the vector side apply the same queries, so
//! both retrievers see the same records. Scopes (namespace, project, origin)
//! say whose memory is searched; the rest (session, kind, time, file, tier)
//! say what part of it; the live context leaves out what an agent still holds
//! in its window.

use std::ops::Bound;

use serde::Serialize;
use tantivy::query::{
    AllQuery, BooleanQuery, EmptyQuery, Occur, PhraseQuery, Query, RangeQuery, TermQuery,
    TermSetQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DateTime, Term};

use crate::index::{IndexFields, NO_PROJECT};
use crate::record::parse::format_time;
use crate::record::Kind;

/// Which records a search may return.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Filters {
    /// `None` searches every namespace.
    pub namespace: Option<String>,
    /// Only records of this project, and records of no project (see
    /// `crate::record::project`); `None` for every project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Only records of this origin: `local` for the store's own, else the
    /// machine or user a pulled record came from; `None` for any origin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Only records of this session; `None` for any session.
    pub session: Option<String>,
    /// Only records of this kind; `None` for any kind.
    pub kind: Option<Kind>,
    /// Unix seconds, inclusive.
    pub since: Option<i64>,
    /// Unix seconds, inclusive.
    pub until: Option<i64>,
    /// A file path or a suffix of one (`oauth2.py` matches `src/auth/oauth2.py`).
    pub file: Option<String>,
    /// Leave out what is still in an agent's live context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveContext>,
    /// Leave out these records: what an agent was told already, or still
    /// holds (an OpenClaw context's messages).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude_ids: Vec<String>,
    /// Which tiers to search: L2 (default), the L3 archive, or both.
    #[serde(skip_serializing_if = "TierFilter::is_l2")]
    pub tier: TierFilter,
    /// Results scoring under this are dropped. `None`: the default, which is
    /// [`super::relevance::DEFAULT_MIN_SCORE`] for calibrated scores and 0 otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_score: Option<f32>,
}

/// The part of a session an agent still has in its context window: its turns
/// since the last compaction. Recall must not hand those back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveContext {
    /// The session whose context is live.
    pub session: String,
    /// The first live turn: records of the session covering this turn or a
    /// later one are left out (0: the whole session is live).
    pub from_turn: u64,
}

/// The tiers a search covers (see [`super::tiers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TierFilter {
    /// The searchable store
    #[default]
    L2,
    /// The archive only
    L3,
    /// Both, ranked together
    All,
}

impl TierFilter {
    fn is_l2(&self) -> bool {
        *self == TierFilter::L2
    }
}

impl Filters {
    /// Each filter on its own, with the flag that sets it: an empty answer
    /// says how many records each one alone keeps.
    pub(crate) fn each_alone(&self) -> Vec<(String, Filters)> {
        let none = Filters::default();
        let mut out = Vec::new();
        let mut push = |flag: String, alone: Filters| out.push((flag, alone));
        if let Some(ns) = &self.namespace {
            let alone = Filters {
                namespace: Some(ns.clone()),
                ..none.clone()
            };
            push(format!("--namespace {ns}"), alone);
        }
        if let Some(project) = &self.project {
            let alone = Filters {
                project: Some(project.clone()),
                ..none.clone()
            };
            push(format!("--project {project}"), alone);
        }
        if let Some(origin) = &self.origin {
            let alone = Filters {
                origin: Some(origin.clone()),
                ..none.clone()
            };
            push(format!("--origin {origin}"), alone);
        }
        if let Some(session) = &self.session {
            let alone = Filters {
                session: Some(session.clone()),
                ..none.clone()
            };
            push(format!("--session {session}"), alone);
        }
        if let Some(kind) = self.kind {
            let alone = Filters {
                kind: Some(kind),
                ..none.clone()
            };
            push(format!("--kind {kind}"), alone);
        }
        if let Some(t) = self.since {
            let alone = Filters {
                since: Some(t),
                ..none.clone()
            };
            push(format!("--since {}", format_time(t)), alone);
        }
        if let Some(t) = self.until {
            let alone = Filters {
                until: Some(t),
                ..none.clone()
            };
            push(format!("--until {}", format_time(t)), alone);
        }
        if let Some(file) = &self.file {
            let alone = Filters {
                file: Some(file.clone()),
                ..none.clone()
            };
            push(format!("--file {file}"), alone);
        }
        if !self.exclude_ids.is_empty() {
            let alone = Filters {
                exclude_ids: self.exclude_ids.clone(),
                ..none.clone()
            };
            push(format!("{} excluded ids", self.exclude_ids.len()), alone);
        }
        if let Some(live) = &self.live {
            let alone = Filters {
                live: Some(live.clone()),
                ..none
            };
            let flag = format!(
                "the live context (session {} from turn {})",
                live.session, live.from_turn
            );
            push(flag, alone);
        }
        out
    }
}

/// The filters as queries, each to be matched (`Occur::Must`) beside the
/// text query; `analyzer` splits a file filter into its parts.
pub(crate) fn filter_queries(
    fields: &IndexFields,
    analyzer: &TextAnalyzer,
    filters: &Filters,
) -> Vec<Box<dyn Query>> {
    let f = fields;
    let mut out: Vec<Box<dyn Query>> = Vec::new();
    if let Some(ns) = &filters.namespace {
        out.push(exact(f.namespace, ns));
    }
    if let Some(project) = &filters.project {
        // A record of no project belongs to every project's scope.
        out.push(Box::new(BooleanQuery::new(vec![
            (Occur::Should, exact(f.project, project)),
            (Occur::Should, exact(f.project, NO_PROJECT)),
        ])));
    }
    if let Some(origin) = &filters.origin {
        out.push(exact(f.origin, origin));
    }
    if let Some(session) = &filters.session {
        out.push(exact(f.session, session));
    }
    if let Some(kind) = filters.kind {
        out.push(exact(f.kind, kind.as_str()));
    }
    if filters.since.is_some() || filters.until.is_some() {
        let bound = |t: Option<i64>| match t {
            Some(secs) => Bound::Included(Term::from_field_date(
                f.timestamp,
                DateTime::from_timestamp_secs(secs),
            )),
            None => Bound::Unbounded,
        };
        out.push(Box::new(RangeQuery::new(
            bound(filters.since),
            bound(filters.until),
        )));
    }
    if let Some(file) = &filters.file {
        out.push(file_query(fields, analyzer, file));
    }
    if let Some(live) = &filters.live {
        out.push(outside_live_context(fields, live));
    }
    if !filters.exclude_ids.is_empty() {
        let ids = filters
            .exclude_ids
            .iter()
            .map(|id| Term::from_field_text(fields.id, id));
        out.push(Box::new(BooleanQuery::new(vec![
            (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
            (Occur::MustNot, Box::new(TermSetQuery::new(ids))),
        ])));
    }
    out
}

fn exact(field: Field, value: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, value),
        IndexRecordOption::Basic,
    ))
}

/// Every record except those of the live session that cover its first live
/// turn or a later one (a summary of turns 10-40 is live when turn 30 is).
/// A record of the session without turns counts as live.
fn outside_live_context(fields: &IndexFields, live: &LiveContext) -> Box<dyn Query> {
    let before_live: Box<dyn Query> = if live.from_turn == 0 {
        Box::new(EmptyQuery)
    } else {
        Box::new(RangeQuery::new(
            Bound::Included(Term::from_field_u64(fields.turn, 0)),
            Bound::Excluded(Term::from_field_u64(fields.turn, live.from_turn)),
        ))
    };
    let live_records = BooleanQuery::new(vec![
        (Occur::Must, exact(fields.session, &live.session)),
        (Occur::MustNot, before_live),
    ]);
    Box::new(BooleanQuery::new(vec![
        (Occur::Must, Box::new(AllQuery)),
        (Occur::MustNot, Box::new(live_records)),
    ]))
}

/// A file filter: the path's parts as a phrase in `files`, so a suffix matches.
fn file_query(fields: &IndexFields, analyzer: &TextAnalyzer, path: &str) -> Box<dyn Query> {
    let mut analyzer = analyzer.clone();
    let mut stream = analyzer.token_stream(path);
    let mut parts: Vec<(usize, Term)> = Vec::new();
    while let Some(token) = stream.next() {
        if token.position_length == 1 && parts.last().is_none_or(|(p, _)| *p < token.position) {
            parts.push((
                token.position,
                Term::from_field_text(fields.files, &token.text),
            ));
        }
    }
    match parts.len() {
        0 => Box::new(EmptyQuery),
        1 => Box::new(TermQuery::new(parts.remove(0).1, IndexRecordOption::Basic)),
        _ => {
            let first = parts[0].0;
            let parts = parts.into_iter().map(|(p, t)| (p - first, t)).collect();
            Box::new(PhraseQuery::new_with_offset(parts))
        }
    }
}
