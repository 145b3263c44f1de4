//! The warm memory: one opened store and one loaded model, shared by every call.
//!
//! A long-running front end (the MCP server) pays for opening the store and
//! loading the embedding model once. Before each call it reads the index's
//! commit stamp (`meta.json`, a few hundred bytes: the opstamp and the segments
//! with their deletes); when another process has committed since, or `repair`
//! has swapped in a rebuilt index (whose opstamps start again), it opens a fresh
//! search engine on the new commit, so records written by the CLI meanwhile are
//! found by the next call. Searches run on a
//! shared engine without locks of their own; the model is behind a mutex that
//! queries and writes take in turn.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::hooks::queue::{add_and_settle, AddOutcome};
use super::hooks::turns::{self, TurnQuery};
use crate::embed::{EmbedError, Embedder};
use crate::error::{Error, InputError, InputErrors, Origin, Result};
use crate::record::{parse_record, ParseOptions, Record};
use crate::search::{Filters, Mode, RankOptions, SearchEngine, SearchResponse, TierFilter};
use crate::store::Store;
use crate::tiers::Stats;

/// Most messages one drill-down returns when the caller gives no `lines`.
pub const DEFAULT_PAGE: usize = 50;

/// An embedder shared between the search engine and writes.
#[derive(Clone)]
pub struct SharedEmbedder {
    inner: Arc<Mutex<Box<dyn Embedder>>>,
    model_id: String,
    dim: usize,
}

impl SharedEmbedder {
    /// Wraps `embedder` so clones share it (one call embeds at a time).
    pub fn new(embedder: Box<dyn Embedder>) -> SharedEmbedder {
        SharedEmbedder {
            model_id: embedder.model_id().to_string(),
            dim: embedder.dim(),
            inner: Arc::new(Mutex::new(embedder)),
        }
    }
}

impl Embedder for SharedEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&mut self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, EmbedError> {
        let mut inner = self
            .inner
            .lock()
            .map_err(|_| EmbedError::Inference("the embedder lock was poisoned".into()))?;
        inner.embed(texts)
    }
}

/// A search request as the agent front ends phrase it.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    /// What to look for.
    pub query: String,
    /// More phrasings of the same need, searched together with `query`
    /// (see [`crate::search::phrasings`]).
    pub also: Vec<String>,
    /// Most results to return (0 is taken as 1).
    pub max_results: usize,
    /// Leave out results scoring under this; `None`: the default minimum
    /// (see `search::relevance`), so a query about nothing stored gets nothing.
    pub min_score: Option<f32>,
    /// `None` uses the service's default namespace; `Some("*")` searches all.
    pub namespace: Option<String>,
    /// Only records of this session; `None` for any.
    pub session: Option<String>,
    /// The tiers to search (default: L2).
    pub tier: Option<TierFilter>,
    /// How to rank; `None` for hybrid (BM25 and vectors fused).
    pub mode: Option<Mode>,
    /// `None` searches the server's project (when the store holds records of
    /// it, else every project); `Some("*")` every project; else that project
    /// (a folder: its git root).
    pub project: Option<String>,
    /// Only records written by this origin: `local` (this store's own) or
    /// the name of a machine sync pulled from; `None`: any.
    pub origin: Option<String>,
}

/// A record with, for a segment or task, a page of its raw messages.
#[derive(Debug, Clone, Serialize)]
pub struct Drilldown {
    /// The record (live or archived) as [`record_json`] gives it.
    pub record: Value,
    /// The messages of the record's session within its turn range, by turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Value>>,
    /// The turn this page starts at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<u64>,
    /// Turn to pass as `from` for the next page, when there is more.
    #[serde(rename = "nextFrom", skip_serializing_if = "Option::is_none")]
    pub next_from: Option<u64>,
    /// Whether messages remain after this page.
    pub truncated: bool,
}

struct Warm {
    engine: Arc<SearchEngine>,
    stamp: u64,
}

/// A stamp of the newest commit: its opstamp and every segment with its deletes.
/// Any commit changes it, and so does an index rebuilt by `repair` (new segment
/// ids), even when the rebuilt index's opstamp equals the old one.
fn commit_stamp(store: &Store) -> Result<u64> {
    let metas = store.index().load_metas()?;
    let mut text = metas.opstamp.to_string();
    for segment in &metas.segments {
        text.push_str(&format!(
            ",{}:{}:{}",
            segment.id().uuid_string(),
            segment.max_doc(),
            segment.delete_opstamp().unwrap_or(0)
        ));
    }
    Ok(xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
}

/// The store and model, opened once.
///
/// A service opened with a namespace (`mcp --namespace NS`) is confined to
/// it: it reads only records of `NS` (search, get by id, the messages of a
/// record or session, QMD files of a collection whose namespace is `NS`,
/// counts), and writes only records of `NS` that replace no record of
/// another namespace (see `crate::store::scope`). Asking for anything else is
/// an error that says so, or "no record" for an id held elsewhere.
pub struct MemoryService {
    store: Store,
    embedder: Option<SharedEmbedder>,
    embedder_error: String,
    scope: Option<String>,
    /// The project of the folder the server runs in (Claude Code starts it in
    /// the project): searches default to it.
    current_project: Option<String>,
    warm: RwLock<Warm>,
}

impl MemoryService {
    /// Opens the service on `store`. `embedder` is the loaded model, or why it
    /// could not be loaded (search then runs on BM25 alone and says so).
    /// `scope` confines every read and write to that namespace (`None`: the
    /// whole store; see [`MemoryService`]).
    pub fn new(
        store: Store,
        embedder: std::result::Result<Box<dyn Embedder>, String>,
        scope: Option<String>,
    ) -> Result<MemoryService> {
        if let Some(ns) = &scope {
            crate::record::parse::validate_namespace(ns)
                .map_err(|m| Error::Usage(format!("--namespace `{ns}` {m}")))?;
        }
        let store = match &scope {
            Some(ns) => store.scoped_to(ns),
            None => store,
        };
        let (embedder, embedder_error) = match embedder {
            Ok(e) => (Some(SharedEmbedder::new(e)), String::new()),
            Err(why) => (None, why),
        };
        let stamp = commit_stamp(&store)?;
        let engine = build_engine(&store, embedder.as_ref(), &embedder_error)?;
        Ok(MemoryService {
            store,
            embedder,
            embedder_error,
            scope,
            current_project: crate::record::project::current(),
            warm: RwLock::new(Warm {
                engine: Arc::new(engine),
                stamp,
            }),
        })
    }

    /// The store the service was opened on.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The engine on the newest commit: reopened only when the index changed.
    pub fn engine(&self) -> Result<Arc<SearchEngine>> {
        let stamp = commit_stamp(&self.store)?;
        {
            let warm = self.warm.read().map_err(|_| poisoned())?;
            if warm.stamp == stamp {
                return Ok(Arc::clone(&warm.engine));
            }
        }
        let mut warm = self.warm.write().map_err(|_| poisoned())?;
        if warm.stamp != stamp {
            // The stamp is read before the engine opens, so at worst the engine is
            // newer than the stamp and the next call reopens once more.
            warm.engine = Arc::new(build_engine(
                &self.store,
                self.embedder.as_ref(),
                &self.embedder_error,
            )?);
            warm.stamp = stamp;
        }
        Ok(Arc::clone(&warm.engine))
    }

    /// The namespace the service is confined to, if any.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Whether the service may read records of `namespace`.
    pub fn may_read_namespace(&self, namespace: &str) -> bool {
        self.scope.as_deref().is_none_or(|scope| scope == namespace)
    }

    /// The namespace filter of a search: the request's (`*` for all), within
    /// the scope.
    fn search_namespace(&self, asked: Option<&str>) -> Result<Option<String>> {
        match (self.scope.as_deref(), asked) {
            (None, Some("*") | None) => Ok(None),
            (None, Some(ns)) => Ok(Some(ns.to_string())),
            (Some(scope), None) => Ok(Some(scope.to_string())),
            (Some(scope), Some(ns)) if ns == scope => Ok(Some(scope.to_string())),
            (Some(scope), Some("*")) => Err(crate::store::scope::outside(
                scope,
                "it cannot search `*` (every namespace)",
            )),
            (Some(scope), Some(ns)) => Err(crate::store::scope::outside(
                scope,
                &format!("it cannot search namespace `{ns}`"),
            )),
        }
    }

    /// Ranked results for `request`, at or above its minimum score.
    pub fn search(&self, request: &SearchRequest) -> Result<SearchResponse> {
        let namespace = self.search_namespace(request.namespace.as_deref())?;
        let engine = self.engine()?;
        let project = match request.project.as_deref() {
            Some("*") => None,
            Some(dir) => Some(crate::record::project::project_of(std::path::Path::new(
                dir,
            ))),
            None => engine.default_project(self.current_project.clone(), namespace.as_deref())?,
        };
        let filters = Filters {
            namespace,
            project,
            session: request
                .session
                .as_deref()
                .map(|s| crate::store::prefix::resolve_session(&self.store, s))
                .transpose()?,
            origin: request.origin.clone(),
            tier: request.tier.unwrap_or_default(),
            min_score: request.min_score,
            ..Filters::default()
        };
        let rank = RankOptions {
            mode: request.mode.unwrap_or(Mode::Hybrid),
            ..RankOptions::default()
        };
        let phrasings: Vec<String> = std::iter::once(request.query.clone())
            .chain(request.also.iter().cloned())
            .collect();
        let mut response =
            engine.search_phrasings(&phrasings, request.max_results.max(1), &filters, &rank)?;
        if let Some(min) = request.min_score.filter(|_| request.tier.is_some()) {
            // Archive searches rank by BM25 scores, which have no fixed
            // scale; a minimum the caller gives still applies.
            response.results.retain(|hit| hit.score >= min);
        }
        crate::upkeep::after_read(&self.store, response.records_without_vector);
        Ok(response)
    }

    /// The memories confident enough to tell an agent about a prompt (see
    /// [`crate::flows::recall`]), under the store's `[recall]` settings; a
    /// request that names no project recalls from the server's.
    pub fn recall(
        &self,
        mut request: crate::flows::recall::RecallRequest,
        settings: crate::flows::recall::RecallSettings,
    ) -> Result<crate::flows::recall::RecallAnswer> {
        let engine = self.engine()?;
        if request.project.as_deref() == Some("*") || settings.all_projects {
            request.project = None;
        } else if request.project.is_none() {
            request.project = self.current_project.clone();
        }
        request.namespace = self.search_namespace(request.namespace.as_deref())?;
        crate::flows::recall::recall(&engine, &request, &settings)
    }

    /// The record with `id`; for a segment or task with a session and turn
    /// range, also one page of its messages: `lines` of them from turn `from`.
    pub fn drilldown(
        &self,
        id: &str,
        from: Option<u64>,
        lines: Option<usize>,
    ) -> Result<Option<Drilldown>> {
        let id = &self.resolve_id(id)?;
        let searcher = self.store.reader()?.searcher();
        let visible = match crate::store::get_record(&searcher, self.store.fields(), id)? {
            Some(record) => Some(self.may_read_namespace(&record.namespace)),
            None => None,
        };
        if visible == Some(false) {
            return Ok(None);
        }
        // Through the store, so the read is counted like a CLI `get`.
        let live = match visible {
            Some(true) => self.store.get(id)?,
            _ => None,
        };
        let Some(record) = live else {
            // Not live: an archived record comes back alone (its messages, if
            // any are left after pruning, are archived too; `restore` brings
            // them back).
            let archived = crate::archive::Archive::new(self.store.root()).get(id)?;
            return Ok(archived
                .filter(|entry| self.may_read_namespace(&entry.record.namespace))
                .map(|entry| Drilldown {
                    record: record_json(&entry.record),
                    messages: None,
                    from: None,
                    next_from: None,
                    truncated: false,
                }));
        };
        let mut out = Drilldown {
            record: record_json(&record),
            messages: None,
            from: None,
            next_from: None,
            truncated: false,
        };
        let f = &record.fields;
        let range = match (&f.session_id, f.start_turn, f.end_turn) {
            (Some(session), Some(start), end) if record.kind != crate::Kind::Message => {
                Some((session.clone(), start, end.unwrap_or(start)))
            }
            _ => None,
        };
        if let Some((session, start, end)) = range {
            let first = from.unwrap_or(start).max(start);
            let page = lines.unwrap_or(DEFAULT_PAGE).max(1);
            // A session the hooks followed numbers turns by assistant responses
            // (their records and the compression queue do): read those turns.
            if turns::has_turn_index(self.store.root(), &session) && first >= 1 {
                let range = turns::read_turns(
                    self.store.root(),
                    &TurnQuery {
                        session_id: session,
                        from: first,
                        to: end.max(first),
                        limit: Some(page),
                        max_chars: Some(turns::DEFAULT_MESSAGE_CHARS),
                        namespace: self.scope.clone(),
                    },
                )?;
                out.messages = Some(
                    range
                        .messages
                        .iter()
                        .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
                        .collect(),
                );
                out.from = Some(first);
                out.next_from = range.next_from;
                out.truncated = range.truncated;
                return Ok(Some(out));
            }
            let mut all = crate::store::browse::session_messages(
                &searcher,
                self.store.fields(),
                &session,
                first,
                end,
            )?;
            all.retain(|message| self.may_read_namespace(&message.namespace));
            if all.len() > page {
                out.next_from = all[page].fields.start_turn;
                out.truncated = true;
            }
            out.messages = Some(all.iter().take(page).map(message_json).collect());
            out.from = Some(first);
        }
        Ok(Some(out))
    }

    /// Adds records given as JSON values (all or nothing), embedding them when
    /// the model is loaded; a segment the compression queue waits for moves its
    /// queue entry to `compressed` (see `hooks::queue::add_and_settle`).
    pub fn add(&self, values: Vec<Value>) -> Result<AddOutcome> {
        let options = ParseOptions {
            added_at: crate::now_rfc3339(),
            // A scoped service writes into its namespace (a record naming
            // another one is refused below).
            namespace: self.scope.clone(),
            ..ParseOptions::default()
        };
        let mut records: Vec<Record> = Vec::with_capacity(values.len());
        let mut problems: Vec<InputError> = Vec::new();
        for (i, value) in values.into_iter().enumerate() {
            let origin = Origin::file(format!("records[{i}]"));
            if let Some(problem) = self.foreign_namespace(&value, &origin) {
                problems.push(problem);
                continue;
            }
            match parse_record(value, &origin, &options) {
                Ok(record) => records.push(record),
                Err(problem) => problems.push(problem),
            }
        }
        if !problems.is_empty() {
            return Err(Error::Input(InputErrors(problems)));
        }
        if let Some(scope) = self.scope.as_deref() {
            for record in &mut records {
                let own = self.own_id(scope, &record.id)?;
                if own != record.id {
                    if let Some(Value::String(id)) = record.source.get_mut("id") {
                        id.clone_from(&own);
                    }
                    record.id = own;
                }
            }
        }
        self.refuse_archived_elsewhere(&records)?;
        let mut embedder = self.embedder.clone();
        let batch = crate::load::ReadBatch {
            records,
            ..Default::default()
        };
        let outcome = add_and_settle(
            &self.store,
            batch,
            embedder.as_mut().map(|e| e as &mut dyn Embedder),
            self.store.lock_timeout(None),
            std::time::Instant::now(),
        )?;
        // The write succeeded; the upkeep (vectors, retention) only logs its failures.
        let waiting = outcome.summary.report.without_vector as u64;
        if let Some(line) = crate::upkeep::after_write(&self.store, Some(waiting)) {
            eprintln!("knowledge-db: after memory_add: {line}");
        }
        Ok(outcome)
    }

    /// The raw messages of a session's turns `from..=to` (assistant turns, as
    /// the compression queue gives them), `lines` messages at a time.
    pub fn session_turns(
        &self,
        session: &str,
        from: u64,
        to: u64,
        lines: Option<usize>,
    ) -> Result<turns::TurnMessages> {
        turns::read_turns(
            self.store.root(),
            &TurnQuery {
                session_id: crate::store::prefix::resolve_session(&self.store, session)?,
                from,
                to,
                limit: Some(lines.unwrap_or(DEFAULT_PAGE)),
                max_chars: Some(turns::DEFAULT_MESSAGE_CHARS),
                namespace: self.scope.clone(),
            },
        )
    }

    /// A record of a scoped service that names another namespace.
    fn foreign_namespace(&self, value: &Value, origin: &Origin) -> Option<InputError> {
        let scope = self.scope.as_deref()?;
        let named = value.get("namespace").and_then(Value::as_str)?;
        (named != scope).then(|| {
            InputError::new(
                origin,
                Some("namespace"),
                format!("this server is scoped to namespace `{scope}` (--namespace); it cannot add a record to namespace `{named}`"),
            )
        })
    }

    /// The id a service scoped to `scope` stores a record given as `id`
    /// under: `id` itself when it already names one of the namespace's
    /// records (live or archived) or starts with `<scope>/`, else
    /// `<scope>/<id>`. Ids are unique across the store, so without this a
    /// write under an id another namespace holds was refused, which told
    /// the caller that the id exists there (issue 52); now the answer is the
    /// same whether the id is free or held elsewhere, and depends only on
    /// the namespace's own records.
    fn own_id(&self, scope: &str, id: &str) -> Result<String> {
        if id.starts_with(&format!("{scope}/")) || self.namespace_holds(scope, id)? {
            return Ok(id.to_string());
        }
        Ok(format!("{scope}/{id}"))
    }

    /// Whether a live or archived record `id` of namespace `scope` exists.
    fn namespace_holds(&self, scope: &str, id: &str) -> Result<bool> {
        let searcher = self.store.reader()?.searcher();
        if let Some(record) = crate::store::get_record(&searcher, self.store.fields(), id)? {
            return Ok(record.namespace == scope);
        }
        let archive = crate::archive::Archive::new(self.store.root());
        if !archive.exists() {
            return Ok(false);
        }
        Ok(archive
            .get(id)?
            .is_some_and(|entry| entry.record.namespace == scope))
    }

    /// The stored id a read of `id` means: for a scoped service, `id` when it
    /// is one of the namespace's records, else `<scope>/<id>` (what
    /// [`MemoryService::add`] stored it as).
    fn resolve_id(&self, id: &str) -> Result<String> {
        match self.scope.as_deref() {
            Some(scope)
                if !id.starts_with(&format!("{scope}/")) && !self.namespace_holds(scope, id)? =>
            {
                Ok(format!("{scope}/{id}"))
            }
            _ => Ok(id.to_string()),
        }
    }

    /// A scoped service's write must not supersede an archived record of
    /// another namespace (live ones are checked by the store under its lock).
    fn refuse_archived_elsewhere(&self, records: &[Record]) -> Result<()> {
        let Some(scope) = self.scope.as_deref() else {
            return Ok(());
        };
        let archive = crate::archive::Archive::new(self.store.root());
        if !archive.exists() {
            return Ok(());
        }
        for record in records {
            if let Some(entry) = archive.get(&record.id)? {
                if entry.record.namespace != scope {
                    return Err(crate::store::scope::taken(&record.id, scope));
                }
            }
        }
        Ok(())
    }

    /// Record counts by kind, tier and namespace, and sizes on disk (for a
    /// scoped service: the counts of its namespace only).
    pub fn stats(&self) -> Result<Stats> {
        match &self.scope {
            Some(scope) => crate::tiers::namespace_stats(&self.store, scope),
            None => crate::tiers::stats(&self.store),
        }
    }

    /// [`MemoryService::stats`] as JSON for an agent. A scoped service leaves out
    /// what it cannot count for its namespace alone: the sizes on disk, the
    /// text index's segments and the vector graphs, which grow with every
    /// namespace's records (issue 52: bob's `memory_stats` moved with
    /// alice's writes).
    pub fn stats_json(&self) -> Result<(Stats, Value)> {
        let stats = self.stats()?;
        let mut value = serde_json::to_value(&stats).unwrap_or(Value::Null);
        if self.scope.is_some() {
            if let Some(map) = value.as_object_mut() {
                for key in WHOLE_STORE_STATS {
                    map.remove(*key);
                }
                if let Some(tiers) = map.get_mut("tiers").and_then(Value::as_array_mut) {
                    for tier in tiers.iter_mut().filter_map(Value::as_object_mut) {
                        for key in WHOLE_STORE_TIER_STATS {
                            tier.remove(*key);
                        }
                    }
                }
            }
        }
        Ok((stats, value))
    }

    /// `used`, or why vectors are not used.
    pub fn vector_status(&self) -> Result<String> {
        Ok(self.engine()?.vector_status().to_string())
    }

    /// How long writes wait for the lock.
    pub fn lock_timeout(&self) -> Duration {
        self.store.lock_timeout(None)
    }
}

fn build_engine(
    store: &Store,
    embedder: Option<&SharedEmbedder>,
    why_not: &str,
) -> Result<SearchEngine> {
    let searcher = store.reader()?.searcher();
    let coverage = crate::vectors::coverage(&searcher)?;
    let model = match embedder {
        Some(_) if coverage.with_vector == 0 && coverage.without_vector > 0 => {
            Err("no record in the store has a vector yet (run `knowledge-db embed`)".to_string())
        }
        Some(e) => Ok(Box::new(e.clone()) as Box<dyn Embedder>),
        None => Err(why_not.to_string()),
    };
    SearchEngine::with_embedder(store, model)
}

fn poisoned() -> Error {
    Error::Usage("the memory service's engine lock was poisoned by a failed call".into())
}

/// Fields of [`Stats`] that count the whole store's files, whatever the
/// namespace: left out of a scoped service's answer.
const WHOLE_STORE_STATS: &[&str] = &[
    "text_index_bytes",
    "segments",
    "vector_files_bytes",
    "vector_graphs",
];

/// The same in each tier of [`Stats::tiers`].
const WHOLE_STORE_TIER_STATS: &[&str] = &[
    "bytes_on_disk",
    "archive_files_bytes",
    "index_bytes",
    "compression_ratio",
];

/// A record as front ends show it: store fields plus the caller's JSON.
pub fn record_json(record: &Record) -> Value {
    serde_json::json!({
        "id": record.id,
        "kind": record.kind,
        "namespace": record.namespace,
        "tier": record.tier.as_str(),
        "added_at": record.added_at,
        "citation": record.citation(),
        "source": record.source,
    })
}

/// A raw message, compactly: turn, role, text and its id.
fn message_json(record: &Record) -> Value {
    serde_json::json!({
        "id": record.id,
        "turn_index": record.fields.start_turn,
        "role": record.fields.title,
        "text": record.fields.content,
    })
}
