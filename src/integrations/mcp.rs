//! The MCP server: the store as tools an agent calls over stdio.
//!
//! Four tools, built on the warm [`MemoryService`]:
//! - `memory_search {query, maxResults?, minScore?, namespace?, session?, tier?}`
//!   ranks records (hybrid when the model and vectors are there, else BM25);
//! - `memory_get {id | path, from?, lines?}` returns a record, and for a segment
//!   or task one page of the raw messages of its turn range; or, for a file hit
//!   of the QMD surface, the file's lines in OpenClaw's `memory_get` shape;
//!   `memory_get {session, from, to?, lines?}` returns the raw messages of a
//!   session's turns (what the compression reminder asks the agent to read);
//! - `memory_add {records}` adds records (all or nothing); a segment the
//!   compression queue waits for moves its entry to `compressed`;
//! - `memory_stats` counts what the store holds.
//!
//! Each answer carries the payload twice, as MCP asks of structured tools: as
//! `structuredContent` for programs and as text for the model. A failure the
//! caller can act on (no such record, invalid records) is a result with
//! `isError: true`; arguments that do not fit a tool's schema are rejected
//! before the call with JSON-RPC error -32602 (invalid params). The store work runs on tokio's blocking pool,
//! so concurrent calls proceed in parallel. stdout carries the protocol; logs
//! go to stderr.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorData, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{json, Value};

use super::qmd::Collections;
use super::service::{MemoryService, SearchRequest};
use super::{mcp_schema, mcp_wire, openclaw};
use crate::search::{SearchResponse, TierFilter};

/// Results when the caller gives no `maxResults`.
const DEFAULT_RESULTS: usize = 8;

/// Most results one call may ask for.
const MAX_RESULTS: usize = 100;

// Crate-private and without a doc comment: schemars would copy one into the
// tool's input schema.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchArgs {
    /// What to look for: words, identifiers, file names, error codes, or a question
    pub query: String,
    /// More phrasings of the same need, searched together with `query` and
    /// fused by rank (at most 8 in all): what several phrasings find comes
    /// first. Past work is often remembered in other words than it was done
    /// in: ask in the user's words, by the names you guess (commands, files,
    /// settings, errors) and by the effect it had
    pub queries: Option<Vec<String>>,
    /// Number of results (default 8, at most 100)
    #[schemars(range(min = 1, max = 100))]
    pub max_results: Option<usize>,
    /// Leave out results scoring below this. Scores are calibrated probabilities
    /// of relevance (0..1); default 0.08 (when vectors are used), so a query
    /// about nothing stored gets an empty answer; 0 shows weak matches too
    pub min_score: Option<f32>,
    /// Namespace to search; "*" for all (default: the server's --namespace, else all)
    pub namespace: Option<String>,
    /// Only records of this session id
    pub session: Option<String>,
    /// Project to search: a folder (its git root names the project), or "*"
    /// for every project (default: the server's folder's project when the
    /// store holds records of it, else every project)
    pub project: Option<String>,
    /// Only records written by this origin: "local" (this store's own) or a
    /// machine sync pulled from (default: any)
    pub origin: Option<String>,
    /// Tiers to search: "l2" (the searchable store, default), "l3" (the archive)
    /// or "all" (both, ranked together by BM25)
    pub tier: Option<TierArg>,
    /// Shape of the answer: "knowledge-db" (default) or "openclaw" (OpenClaw's
    /// memory_search payload: path, startLine, endLine, score, vectorScore,
    /// textScore, snippet, source, citation)
    pub format: Option<SearchFormatArg>,
}

// Crate-private and without a doc comment: schemars would copy one into the
// tool's input schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SearchFormatArg {
    KnowledgeDb,
    Openclaw,
}

// Crate-private and without a doc comment: schemars would copy one into the
// tool's input schema.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TierArg {
    L2,
    L3,
    All,
}

// Crate-private and without a doc comment: schemars would copy one into the
// tool's input schema.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct GetArgs {
    /// Record id (from a memory_search result); give this, `path` or `session`
    pub id: Option<String>,
    /// A file hit's path (`qmd://collection/file.md`) or a record id
    pub path: Option<String>,
    /// A session id: with `from` (and `to`), the raw messages of those turns
    /// (assistant turns from 1, as the compression reminder gives them)
    pub session: Option<String>,
    /// First line of a file (1-based), or first turn of a record's or session's messages
    pub from: Option<u64>,
    /// Last turn of a session's range (with `session`; default: the last turn)
    pub to: Option<u64>,
    /// How many lines of a file, or how many messages (default 50)
    #[schemars(range(min = 1))]
    pub lines: Option<usize>,
}

// Crate-private and without a doc comment: schemars would copy one into the
// tool's input schema.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct AddArgs {
    /// Records as JSON objects: segments, tasks, messages or notes (see the README)
    pub records: Vec<Value>,
}

// Crate-private and without a doc comment: schemars would copy one into the
// tool's input schema.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct StatsArgs {}

// Crate-private and without a doc comment: schemars would copy one into the
// tool's input schema.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RecallArgs {
    /// The user's prompt (or any text the agent is about to act on)
    pub prompt: String,
    /// Project to recall from: a folder, or "*" for every project (default: the server's folder's project)
    pub project: Option<String>,
    /// The agent's current session: its turns from `fromTurn` on are still in its context and never recalled
    pub session: Option<String>,
    /// With `session`: the first turn still in the context (0 or absent: the whole session)
    pub from_turn: Option<u64>,
    /// Record ids never to recall: what the agent was told already or still holds
    pub exclude: Option<Vec<String>>,
    /// Namespace to recall from ("*" = all; default: the server's --namespace, else all)
    pub namespace: Option<String>,
    /// Only records written by this origin: "local" or a machine sync pulled from (default: any)
    pub origin: Option<String>,
}

/// The server: the warm service plus where the QMD collections are listed.
#[derive(Clone)]
pub struct MemoryServer {
    service: Arc<MemoryService>,
    collections_file: PathBuf,
    tool_router: ToolRouter<MemoryServer>,
}

#[tool_router]
impl MemoryServer {
    /// The store's folder (for the guard against damaged stored bytes).
    fn root(&self) -> std::path::PathBuf {
        self.service.store().root().to_path_buf()
    }

    /// A server on `service`, with the QMD collection list its store uses.
    pub fn new(service: MemoryService) -> MemoryServer {
        let collections_file = super::qmd::collections_file(service.store().root());
        MemoryServer {
            service: Arc::new(service),
            collections_file,
            tool_router: with_client_schemas(Self::tool_router()),
        }
    }

    #[tool(
        description = "Search long-term memory (compressed context segments, task summaries, evicted messages, notes) for a query. Past work is often remembered in other words than it was done in: pass more phrasings of the need in `queries` besides `query` (the user's words, the names you guess: commands, files, settings, errors, and the effect it had); they are searched together and fused by rank. Returns ranked results with id, kind, score, snippet, session and turn range; pass an id to memory_get to read the full record and its raw messages. A date in the query (2026-03-09, March 9, on Monday, last week, yesterday) raises records written then. `unknownWords` lists query words no stored record holds: results can match only the other words or the meaning."
    )]
    async fn memory_search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut phrasings: Vec<String> = std::iter::once(args.query)
            .chain(args.queries.unwrap_or_default())
            .filter(|q| !q.trim().is_empty())
            .collect();
        if phrasings.is_empty() {
            return Ok(failure(
                "`query` is empty: give words, identifiers or a question (or several in `queries`)",
            ));
        }
        if phrasings.len() > crate::search::phrasings::MAX_PHRASINGS {
            return Ok(failure(&format!(
                "{} phrasings given; at most {} are searched together",
                phrasings.len(),
                crate::search::phrasings::MAX_PHRASINGS
            )));
        }
        let openclaw_format = args.format == Some(SearchFormatArg::Openclaw);
        let request = SearchRequest {
            query: phrasings.remove(0),
            also: phrasings,
            max_results: args
                .max_results
                .unwrap_or(DEFAULT_RESULTS)
                .clamp(1, MAX_RESULTS),
            min_score: args.min_score,
            namespace: args.namespace,
            session: args.session,
            tier: args.tier.map(|t| match t {
                TierArg::L2 => TierFilter::L2,
                TierArg::L3 => TierFilter::L3,
                TierArg::All => TierFilter::All,
            }),
            mode: None,
            project: args.project,
            origin: args.origin,
        };
        let service = Arc::clone(&self.service);
        blocking(self.root(), move || {
            let response = service.search(&request)?;
            if openclaw_format {
                return openclaw_answer(&service, &response);
            }
            Ok(answer(search_json(&response), search_text(&response)))
        })
        .await
    }

    #[tool(
        description = "Read one memory item in full. With `id`: the record, and for a segment or task the raw messages of its session's turn range, paged with `from` (turn) and `lines` (count). With `session`, `from` and `to`: the raw messages of that session's turns (assistant turns from 1, as the compression reminder gives them), `lines` at a time. With `path`: lines of a file hit (`from`, `lines`), as OpenClaw's memory_get."
    )]
    async fn memory_get(
        &self,
        Parameters(args): Parameters<GetArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let service = Arc::clone(&self.service);
        let collections_file = self.collections_file.clone();
        blocking(self.root(), move || {
            match (args.id, args.path, args.session) {
                (None, None, Some(session)) => {
                    let Some(from) = args.from else {
                        return Ok(failure(
                            "with `session`, give `from` (first turn, from 1) and optionally `to`",
                        ));
                    };
                    let to = args.to.unwrap_or(u64::MAX);
                    let range = service.session_turns(&session, from, to, args.lines)?;
                    Ok(answer(range.to_json(), range.to_text()))
                }
                (Some(id), None, None) => get_record(&service, &id, args.from, args.lines),
                (None, Some(path), None) => {
                    let collections = Collections::load(&collections_file)?;
                    match collections.resolve(&path) {
                        Some((_, _, collection))
                            if !service.may_read_namespace(&super::qmd::namespace(&collection.name)) =>
                        {
                            Ok(failure(&format!(
                                "`{path}` is a file of QMD collection `{}`, outside this server's namespace",
                                collection.name
                            )))
                        }
                        Some((file, shown, _)) => {
                            let limit = service.store().config().limits.markdown_limit();
                            let bytes = crate::bounded::read_whole(&file, limit, false)?;
                            let text = String::from_utf8_lossy(&bytes);
                            let from = args.from.map(|f| f as usize);
                            let page = openclaw::file_lines(&shown, &text, from, args.lines);
                            let value = serde_json::to_value(&page).unwrap_or(Value::Null);
                            Ok(answer(value, page.text.clone()))
                        }
                        // Not a file of a collection: a record id given as a path.
                        None => match get_record(&service, &path, args.from, args.lines)? {
                            found if found.is_error != Some(true) => Ok(found),
                            _ => Ok(failure(&format!(
                                "`{path}` is neither a file of a QMD collection nor a record id"
                            ))),
                        },
                    }
                }
                _ => Ok(failure("give exactly one of `id`, `path` or `session`")),
            }
        })
        .await
    }

    #[tool(
        description = "Add or update records in long-term memory: an array of JSON objects (segments with segment_id, tasks with session_id+task_id, messages with role+text, notes with id+text). All or nothing: if one is invalid, nothing is written and every problem is listed. A segment saved under an id the compression queue waits for replaces the rule-based summary and is reported with its token figures."
    )]
    async fn memory_add(
        &self,
        Parameters(args): Parameters<AddArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if args.records.is_empty() {
            return Ok(failure("`records` is empty"));
        }
        if let Some(why) = over_add_limits(&args.records, &self.service.store().config().limits) {
            return Ok(failure(&why));
        }
        let service = Arc::clone(&self.service);
        blocking(self.root(), move || {
            let outcome = service.add(args.records)?;
            let report = &outcome.summary.report;
            let mut text = format!(
                "added {}, updated {}, unchanged {} ({} without a vector)",
                report.added, report.updated, report.unchanged, report.without_vector
            );
            for line in super::hooks::queue::arrival_lines(&outcome.compressed) {
                text.push('\n');
                text.push_str(&line);
            }
            if let Some(why) = &outcome.queue_error {
                text.push_str(&format!(
                    "\nthe compression queue was not updated: {why} (the next hook call settles it)"
                ));
            }
            let mut value = serde_json::to_value(report).unwrap_or(Value::Null);
            value["compressed"] = serde_json::to_value(&outcome.compressed).unwrap_or(Value::Null);
            Ok(answer(value, text))
        })
        .await
    }

    #[tool(
        description = "Recall, for a prompt, only the memories confident enough to act on: at most a few records of earlier work whose calibrated relevance clears the store's recall threshold ([recall] min_score), each with what it is, when, its session, id and how to read it whole; usually nothing (then `memories` is empty and `whyNot` says why). When no memory is confident but the prompt is plainly about past work, `leads` names up to three candidate sessions (date, id, what each was about) to open with memory_search {session} or memory_get. Leaves out the given session's live turns and the excluded ids (record ids, or session ids already named as leads). Use memory_search to look for something on purpose."
    )]
    async fn memory_recall(
        &self,
        Parameters(args): Parameters<RecallArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if args.prompt.trim().is_empty() {
            return Ok(failure("`prompt` is empty"));
        }
        let service = Arc::clone(&self.service);
        blocking(self.root(), move || {
            let settings =
                crate::flows::recall::RecallSettings::from_store(service.store().root())?;
            let request = crate::flows::recall::RecallRequest {
                prompt: args.prompt,
                project: args.project,
                namespace: args.namespace,
                origin: args.origin,
                live: args.session.map(|session| crate::search::LiveContext {
                    session,
                    from_turn: args.from_turn.unwrap_or(0),
                }),
                already: args
                    .exclude
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .collect(),
                named: args.exclude.unwrap_or_default().into_iter().collect(),
                command_prefix: None,
            };
            let recalled = service.recall(request, settings)?;
            let value = json!({
                "memories": recalled.memories,
                "leads": recalled.leads,
                "text": recalled.text,
                "bestScore": recalled.best_score,
                "whyNot": recalled.why_not,
            });
            let text = if recalled.text.is_empty() {
                format!(
                    "nothing recalled: {}",
                    recalled.why_not.as_deref().unwrap_or("nothing confident")
                )
            } else {
                recalled.text.clone()
            };
            Ok(answer(value, text))
        })
        .await
    }

    #[tool(
        description = "Count what long-term memory holds: records by kind, tier, namespace and project, vectors, time range, size on disk (a server scoped to a namespace counts that namespace's records and gives no sizes on disk)."
    )]
    async fn memory_stats(
        &self,
        Parameters(_): Parameters<StatsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let service = Arc::clone(&self.service);
        blocking(self.root(), move || {
            let (stats, mut value) = service.stats_json()?;
            value["vector"] = json!(service.vector_status()?);
            let text = format!(
                "{} records; by kind {}; namespaces {}; vectors {} of {}; vector search: {}",
                stats.records,
                json!(stats.by_kind),
                json!(stats.by_namespace),
                stats.vectors.with_vector,
                stats.records,
                value["vector"].as_str().unwrap_or_default()
            );
            Ok(answer(value, text))
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryServer {
    /// Checks the arguments against the tool's schema first (numeric strings
    /// become numbers, bounds hold; see `mcp_schema`): arguments that do not
    /// fit are a JSON-RPC error -32602 (invalid params) naming the problem.
    /// (rmcp's router would answer them as an `isError` result instead.)
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let mut request = request;
        if let (Some(tool), Some(arguments)) = (
            self.tool_router.get(&request.name),
            request.arguments.as_mut(),
        ) {
            mcp_schema::coerce_arguments(&tool.input_schema, arguments).map_err(|why| {
                ErrorData::invalid_params(
                    format!("invalid arguments for {}: {why}", request.name),
                    Some(json!({"tool": request.name})),
                )
            })?;
        }
        check_arguments(&request.name, request.arguments.as_ref())?;
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        self.tool_router.call(call).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "knowledge-db",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Long-term memory of past work: search it with memory_search before redoing \
                 something, read a hit in full with memory_get, save notes with memory_add.",
            )
    }
}

/// Why a `memory_add` call carries too much (`limits.max_add_records_per_call`,
/// `limits.max_add_bytes_per_call`), or `None` when it is within both.
fn over_add_limits(records: &[Value], limits: &crate::store::config::Limits) -> Option<String> {
    if records.len() > limits.max_add_records_per_call {
        return Some(format!(
            "{} records in one call, over the limit of {} (`limits.max_add_records_per_call` in the store's config.toml); nothing was written: send them in several calls",
            records.len(),
            limits.max_add_records_per_call
        ));
    }
    let bytes: usize = records
        .iter()
        .map(|r| serde_json::to_vec(r).map_or(0, |v| v.len()))
        .sum();
    (bytes > limits.max_add_bytes_per_call).then(|| {
        format!(
            "{} of records in one call, over the limit of {} (`limits.max_add_bytes_per_call` in the store's config.toml); nothing was written: send them in several calls",
            crate::bounded::human_bytes(bytes as u64),
            crate::bounded::human_bytes(limits.max_add_bytes_per_call as u64)
        )
    })
}

/// Whether `arguments` fit the schema of tool `name` (unknown tools are left to
/// the router, which names them).
fn check_arguments(
    name: &str,
    arguments: Option<&rmcp::model::JsonObject>,
) -> Result<(), ErrorData> {
    fn fits<T: serde::de::DeserializeOwned>(value: Value) -> Result<(), String> {
        serde_json::from_value::<T>(value)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    let value = Value::Object(arguments.cloned().unwrap_or_default());
    let checked = match name {
        "memory_search" => fits::<SearchArgs>(value),
        "memory_get" => fits::<GetArgs>(value),
        "memory_add" => fits::<AddArgs>(value),
        "memory_stats" => fits::<StatsArgs>(value),
        _ => Ok(()),
    };
    checked.map_err(|why| {
        ErrorData::invalid_params(
            format!("invalid arguments for {name}: {why}"),
            Some(json!({"tool": name})),
        )
    })
}

/// Serves MCP on stdin/stdout until the client closes the connection. Lines
/// pass through [`mcp_wire`] first, so every line gets an answer.
pub fn serve_stdio(service: MemoryService) -> crate::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| crate::Error::io("tokio runtime", e))?;
    let stdio_error = |e: String| crate::Error::io("stdio", std::io::Error::other(e));
    let max_line = service.store().config().limits.max_mcp_request_bytes;
    runtime.block_on(async {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server_end);
        let (client_read, client_write) = tokio::io::split(client_end);
        let stdout = Arc::new(tokio::sync::Mutex::new(tokio::io::stdout()));
        let in_flight =
            mcp_wire::InFlight::new(mcp_wire::MAX_IN_FLIGHT, mcp_wire::MAX_IN_FLIGHT_BYTES);
        let from_client = tokio::spawn(mcp_wire::pump_client(
            tokio::io::stdin(),
            client_write,
            Arc::clone(&stdout),
            max_line,
            Arc::clone(&in_flight),
        ));
        let to_client = tokio::spawn(mcp_wire::pump_server(client_read, stdout, in_flight));
        // The pump already refused longer lines with an answer; rmcp's own
        // limit (16 MiB, exceeded lines dropped unanswered) must not cut in.
        let transport = rmcp::transport::async_rw::AsyncRwTransport::new(server_read, server_write)
            .with_max_line_length(max_line.saturating_add(1));
        let server = MemoryServer::new(service)
            .serve(transport)
            .await
            .map_err(|e| stdio_error(e.to_string()))?;
        server
            .waiting()
            .await
            .map_err(|e| stdio_error(e.to_string()))?;
        from_client.abort();
        // The server's last answers are still in the pipe: write them out.
        let _ = to_client.await;
        Ok(())
    })
}

/// The router with the schemas clients read: tidied input schemas and an
/// output schema for every tool (see `mcp_schema`).
fn with_client_schemas(mut router: ToolRouter<MemoryServer>) -> ToolRouter<MemoryServer> {
    for route in router.map.values_mut() {
        let tool = &mut route.attr;
        tool.input_schema = Arc::new(mcp_schema::tidy_input_schema(&tool.input_schema));
        tool.output_schema = mcp_schema::output_schema(&tool.name).map(Arc::new);
    }
    router
}

/// memory_search in OpenClaw's payload shape (`format: "openclaw"`): each hit
/// keeps its stored file path and lines when it has them (the QMD surface).
fn openclaw_answer(
    service: &MemoryService,
    response: &SearchResponse,
) -> crate::Result<CallToolResult> {
    let searcher = service.store().reader()?.searcher();
    let sources = response
        .results
        .iter()
        .map(|hit| {
            Ok(
                crate::store::get_record(&searcher, service.store().fields(), &hit.id)?
                    .map(|record| record.source),
            )
        })
        .collect::<crate::Result<Vec<_>>>()?;
    let payload = openclaw::search_payload(response, &sources);
    let text = serde_json::to_string_pretty(&payload).unwrap_or_default();
    Ok(answer(payload, text))
}

/// Runs store work on the blocking pool; library errors become `isError` results.
/// A panic on damaged stored bytes becomes the error naming the damaged
/// file (`crate::index::damage`), answered like any other.
async fn blocking<F>(root: std::path::PathBuf, work: F) -> Result<CallToolResult, ErrorData>
where
    F: FnOnce() -> crate::Result<CallToolResult> + Send + 'static,
{
    let guarded = move || crate::index::damage::guarded(&root, work);
    match tokio::task::spawn_blocking(guarded).await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(error)) => Ok(failure(&error.to_string())),
        Err(join) => Err(ErrorData::internal_error(
            format!("the tool call failed: {join}"),
            None,
        )),
    }
}

fn get_record(
    service: &MemoryService,
    id: &str,
    from: Option<u64>,
    lines: Option<usize>,
) -> crate::Result<CallToolResult> {
    match service.drilldown(id, from, lines)? {
        Some(found) => {
            let value = serde_json::to_value(&found).unwrap_or(Value::Null);
            let text = serde_json::to_string_pretty(&value).unwrap_or_default();
            Ok(answer(value, text))
        }
        None => Ok(failure(&format!("no record with id `{id}`"))),
    }
}

/// A successful result: the payload as structured content and as text.
fn answer(value: Value, text: String) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(value);
    result
}

fn failure(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_string())])
}

fn search_json(response: &SearchResponse) -> Value {
    let results: Vec<Value> = response
        .results
        .iter()
        .map(|h| {
            json!({
                "rank": h.rank,
                "id": h.id,
                "kind": h.kind,
                "namespace": h.namespace,
                "score": h.score,
                "bm25": h.scores.bm25,
                "vector": h.scores.vector,
                "title": h.title,
                "snippet": h.snippet,
                "session_id": h.session_id,
                "start_turn": h.start_turn,
                "end_turn": h.end_turn,
                "timestamp": h.timestamp,
                "tier": h.tier,
                "files": h.files,
                "citation": h.citation,
                "copies": h.copies,
                "duplicates": h.duplicates,
                "weak": h.weak,
                "phrasings": h.phrasings,
            })
        })
        .collect();
    json!({
        "query": response.query,
        "phrasings": response.phrasings,
        "results": results,
        "explanation": response.explanation,
        "minScore": response.min_score,
        "belowMinScore": response.below_min_score,
        "bestScore": response.best_score,
        "unknownWords": response.unknown_words,
        "vector": response.vector,
        "took_ms": response.took_ms,
    })
}

/// Results as the model reads them: one block per hit with its citation.
fn search_text(response: &SearchResponse) -> String {
    if response.results.is_empty() {
        return format!(
            "No results. {}",
            response.explanation.as_deref().unwrap_or_default()
        );
    }
    let mut out = String::new();
    for h in &response.results {
        let mut notes = String::new();
        if h.weak {
            notes.push_str(", weak");
        }
        if h.copies > 1 {
            notes.push_str(&format!(", {} copies", h.copies));
        }
        if !h.phrasings.is_empty() {
            let which: Vec<String> = h.phrasings.iter().map(|n| n.to_string()).collect();
            notes.push_str(&format!(", found by phrasing {}", which.join(", ")));
        }
        out.push_str(&format!(
            "{}. [{}] {} (score {:.3}{notes}, id {})\n   {}\n   {}\n",
            h.rank,
            h.kind,
            h.title,
            h.score,
            h.id,
            h.citation,
            h.snippet.replace('\n', " ")
        ));
    }
    if response.below_min_score > 0 {
        out.push_str(&format!(
            "({} weaker result{} left out: scored under minScore {:.2})\n",
            response.below_min_score,
            if response.below_min_score == 1 {
                ""
            } else {
                "s"
            },
            response.min_score
        ));
    }
    if !response.unknown_words.is_empty() {
        out.push_str(&format!(
            "(no record holds {}: results can match only the other words or the meaning)\n",
            crate::search::quoted_words(&response.unknown_words)
        ));
    }
    if !response.vector.starts_with("used") {
        out.push_str(&format!("(vector: {})\n", response.vector));
    }
    out
}
