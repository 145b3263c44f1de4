//! The HTTP side of the viewer: axum on a tokio runtime, bound to 127.0.0.1.
//!
//! Every request passes [`guard`] first (the Host header, the token in the
//! path, and for writes the Origin and a JSON body; see [`super::guard`]), so
//! a request that fails them is refused with 403 whatever path it names. The
//! API's work is blocking (tantivy, files), so it runs on the blocking pool,
//! at most [`MAX_PARALLEL`] calls at once; the answers of [`super::api`] are
//! turned into JSON responses here. Request bodies are capped at
//! [`MAX_BODY_BYTES`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;

use super::api::{self, Params, Reply};
use super::{assets, guard, Viewer};
use crate::error::{Error, Result};

/// Largest request body accepted (a delete's ids).
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// API calls worked on at once; more wait their turn.
pub const MAX_PARALLEL: usize = 4;
/// How long open connections get to finish once the server is told to stop.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// What every handler shares.
struct Shared {
    viewer: Viewer,
    token: String,
    port: u16,
    permits: tokio::sync::Semaphore,
}

type AppState = Arc<Shared>;

/// A bound, not yet serving, viewer.
pub struct Bound {
    listener: std::net::TcpListener,
    port: u16,
    token: String,
}

impl Bound {
    /// Binds 127.0.0.1 on `port` (0: a free port the system picks) and draws
    /// the token.
    pub fn bind(port: u16) -> Result<Bound> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).map_err(|e| {
            let what = if port == 0 {
                "a free port on 127.0.0.1".to_string()
            } else {
                format!(
                    "127.0.0.1:{port} (is another server using it? `--port 0` picks a free one)"
                )
            };
            Error::io(what, e)
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::io("the viewer's socket", e))?
            .port();
        Ok(Bound {
            listener,
            port,
            token: guard::new_token()?,
        })
    }

    /// The port bound.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL to open: the only way in, token included.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/t/{}/", self.port, self.token)
    }

    /// Serves `viewer` until `stop` completes, on a runtime of its own;
    /// requests still running then get a few seconds to finish.
    pub fn serve(
        self,
        viewer: Viewer,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Error::io("tokio runtime", e))?;
        runtime.block_on(self.run(viewer, stop))
    }

    async fn run(
        self,
        viewer: Viewer,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        self.listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("the viewer's socket", e))?;
        let listener = tokio::net::TcpListener::from_std(self.listener)
            .map_err(|e| Error::io("the viewer's socket", e))?;
        let shared = Arc::new(Shared {
            viewer,
            token: self.token,
            port: self.port,
            permits: tokio::sync::Semaphore::new(MAX_PARALLEL),
        });
        let app = router(Arc::clone(&shared));
        let (stopped_tx, stopped_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped_rx.await;
                })
                .await
        });
        stop.await;
        let _ = stopped_tx.send(());
        match tokio::time::timeout(SHUTDOWN_GRACE, server).await {
            Ok(Ok(result)) => result.map_err(|e| Error::io("the viewer's socket", e)),
            // A request that outlives the grace period is dropped with the runtime.
            Ok(Err(_)) | Err(_) => Ok(()),
        }
    }
}

/// Completes when the process is told to stop: Ctrl-C (SIGINT) or SIGTERM.
pub async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// The routes, all under `/t/<token>/`, behind the guard.
fn router(shared: AppState) -> Router {
    let base = format!("/t/{}", shared.token);
    let at = |path: &str| format!("{base}{path}");
    Router::new()
        .route(&at("/"), get(page))
        .route(&at("/assets/{*name}"), get(asset))
        .route(&at("/api/info"), get(info))
        .route(&at("/api/search"), get(search))
        .route(&at("/api/groups"), get(groups))
        .route(&at("/api/scopes"), get(scopes))
        .route(&at("/api/sessions"), get(sessions))
        .route(&at("/api/session"), get(session))
        .route(&at("/api/turns"), get(turns))
        .route(&at("/api/record"), get(record))
        .route(&at("/api/health"), get(health))
        .route(&at("/api/forget"), post(forget))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(Arc::clone(&shared), guard))
        .with_state(shared)
}

/// A refusal with its reason, as plain text (a browser shows it as is).
fn refuse(status: StatusCode, why: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{why}\n"),
    )
        .into_response()
}

/// The checks every request passes before any route; and the headers every
/// answer carries.
async fn guard(State(shared): State<AppState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if !guard::host_allowed(host, shared.port) {
        return secured(refuse(
            StatusCode::FORBIDDEN,
            "refused: the Host header must be 127.0.0.1:<port> or localhost:<port>",
        ));
    }
    if guard::strip_token(request.uri().path(), &shared.token).is_none() {
        return secured(refuse(
            StatusCode::FORBIDDEN,
            "refused: open the URL `knowledge-db ui` printed (it carries the access token)",
        ));
    }
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        let origin = headers.get(header::ORIGIN).and_then(|h| h.to_str().ok());
        if !guard::same_origin(origin, shared.port) {
            return secured(refuse(
                StatusCode::FORBIDDEN,
                "refused: a write must come from the viewer's own page (Origin)",
            ));
        }
        if !is_json(headers) {
            return secured(refuse(
                StatusCode::FORBIDDEN,
                "refused: a write must send JSON (Content-Type: application/json)",
            ));
        }
    }
    secured(next.run(request).await)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .and_then(|t| t.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Adds the headers that keep the page to itself: nothing loads from
/// elsewhere, no framing, no referrer (it would carry the token), no caching.
fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = |headers: &mut HeaderMap, name: header::HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::REFERRER_POLICY, "no-referrer");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::CACHE_CONTROL, "no-store");
    response
}

async fn not_found() -> Response {
    refuse(StatusCode::NOT_FOUND, "no such page in the viewer")
}

async fn page() -> Response {
    asset_response("index.html")
}

async fn asset(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    asset_response(&name)
}

fn asset_response(name: &str) -> Response {
    match assets::get(name) {
        Some((body, content_type)) => {
            ([(header::CONTENT_TYPE, content_type)], Body::from(body)).into_response()
        }
        None => refuse(StatusCode::NOT_FOUND, "no such file in the viewer"),
    }
}

/// Runs an API call on the blocking pool, one of at most [`MAX_PARALLEL`].
async fn answer<F>(shared: AppState, work: F) -> Response
where
    F: FnOnce(&Viewer) -> Result<Reply> + Send + 'static,
{
    let Ok(_permit) = shared.permits.acquire().await else {
        return json_response(500, json!({"error": "the viewer is stopping"}));
    };
    let worker = Arc::clone(&shared);
    // A panic on damaged stored bytes becomes the error naming the damaged
    // file (`crate::index::damage`).
    let outcome = tokio::task::spawn_blocking(move || {
        let root = worker.viewer.service().store().root().to_path_buf();
        crate::index::damage::guarded(&root, || work(&worker.viewer))
    })
    .await;
    match outcome {
        Ok(Ok(reply)) => json_response(reply.status, reply.body),
        Ok(Err(Error::Usage(why))) => json_response(400, json!({ "error": why })),
        Ok(Err(e)) => json_response(500, json!({ "error": e.to_string() })),
        Err(_) => json_response(
            500,
            json!({"error": "the call failed (a bug; please report it)"}),
        ),
    }
}

fn json_response(status: u16, body: serde_json::Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(body)).into_response()
}

async fn info(State(s): State<AppState>) -> Response {
    answer(s, api::info).await
}

async fn search(State(s): State<AppState>, Query(p): Query<Params>) -> Response {
    answer(s, move |v| api::search(v, &p)).await
}

async fn groups(State(s): State<AppState>) -> Response {
    answer(s, api::groups).await
}

async fn scopes(State(s): State<AppState>) -> Response {
    answer(s, api::scopes).await
}

async fn sessions(State(s): State<AppState>, Query(p): Query<Params>) -> Response {
    answer(s, move |v| api::sessions(v, &p)).await
}

async fn session(State(s): State<AppState>, Query(p): Query<Params>) -> Response {
    answer(s, move |v| api::session(v, &p)).await
}

async fn turns(State(s): State<AppState>, Query(p): Query<Params>) -> Response {
    answer(s, move |v| api::turns(v, &p)).await
}

async fn record(State(s): State<AppState>, Query(p): Query<Params>) -> Response {
    answer(s, move |v| api::record(v, &p)).await
}

async fn health(State(s): State<AppState>) -> Response {
    answer(s, api::health).await
}

async fn forget(State(s): State<AppState>, body: Bytes) -> Response {
    let request: api::DeleteRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => {
            return json_response(
                400,
                json!({"error": format!("the body is not {{\"ids\": [...]}} or {{\"session\": \"...\"}}: {e}")}),
            )
        }
    };
    answer(s, move |v| api::forget(v, &request)).await
}
