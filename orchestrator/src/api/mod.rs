//! The JSON HTTP API, served beside `/mcp` on the same loopback listener, behind the same
//! bearer token (`Authorization: Bearer <token>`) and connection limits (see
//! [`crate::http::serve`]). A browser logged in to the web view uses its session cookie
//! instead, with a CSRF header on every `POST` and `DELETE` (see [`crate::web`]).
//!
//! | Endpoint | Answer |
//! |---|---|
//! | `POST /jobs` | `201` with the queued job ([`JobView`]) and a `Location` header |
//! | `GET /jobs?session_name=&limit=&offset=` | a page of jobs in queue order ([`JobList`]) |
//! | `GET /jobs/{id}` | the job |
//! | `POST /jobs/{id}/cancel` | the cancelled job (`409` once it has ended) |
//! | `GET /sessions?limit=&offset=` | a page of sessions, oldest first ([`SessionList`]) |
//! | `GET /sessions?status=&parent_session_name=&agent_name=&after=&limit=` | a keyset page of the matching sessions, with `total` and `next_after` |
//! | `GET /sessions/by-name/{name}` | the session's report ([`SessionReport`]) |
//! | `GET /sessions/{id}` | the session's report |
//! | `GET /sessions/{id}/status` | the session's status report (the same as `GET /sessions/{id}`) |
//! | `GET /sessions/{id}/result` | the report with the result (`409` while a run is queued or going on) |
//! | `GET /sessions/{id}/events?after=&follow=` | server-sent events (see below); `429` over the stream budget |
//! | `DELETE /sessions/{id}` | the deleted session ([`SessionSummary`]); its run is cancelled |
//! | `DELETE /sessions` | how many were deleted ([`Deleted`]) |
//! | `GET /agents` | every blueprint ([`AgentList`]) |
//! | `GET /agents/{name}` | one blueprint without secrets ([`BlueprintView`]) |
//!
//! `POST /jobs` takes `{"type": "start_session" | "resume_session", "session_name", "prompt",
//! "agent_name"?, "project_dir"?, "parent_session_name"?, "callback"?}` (`agent_blueprint_name`
//! is accepted for `agent_name`, as the MCP tool calls it).
//!
//! Errors are `{"error": {"code": "...", "message": "..."}}` ([`ApiError`]) with a 4xx status
//! for what the caller can fix: `400` for bad input (a session name breaking the rule,
//! malformed JSON, unknown fields, bad query parameters), `404` for an unknown id, name, route,
//! `405` for a wrong method, `409` for a conflict (an existing name, a result asked for while
//! running, cancelling an ended job), `413` for a body over the request limit
//! ([`MAX_BODY_BYTES`] unless `--max-request-bytes` says otherwise; MCP answers a larger call
//! with a JSON-RPC error stating it), `415` for a body that is not `application/json`, `429`
//! for an event stream over the stream budget (see "Streams"); `503` while shutting down and
//! `500` for storage failures. A request without the right token is `401`, answered by the
//! listener before any route, in the same shape (`{"error": {"code": "unauthorized",
//! "message": ...}}`; `/mcp` answers JSON-RPC's shape instead). A run's scoped token is `403`
//! (`{"error": {"code": "forbidden", ...}}`) on every route: it opens `/mcp` only (see
//! [`crate::scope`]).
//!
//! # Events
//! `GET /sessions/{id}/events` is a `text/event-stream`: first the session's stored events, then
//! each new one as the worker stores it (woken by the orchestrator's notifications, never by a
//! timer). Every message is `id: <seq>` and `data: <StoredEvent JSON>`. It starts after the
//! `Last-Event-ID` header's seq when there is one (a reconnecting `EventSource`), else after the
//! `after` parameter, else from the first event. The stream ends with a message `event: end`
//! whose data is `{"reason": ...}`: `deleted` (the session was deleted), `stopping` (the
//! orchestrator shuts down), `ended` (with `follow=false`, once the session's run has ended and
//! nothing is queued), or `error` (the store failed). The end message has no id, so a client
//! reconnecting after it resumes where it was. A keep-alive comment goes out every 15 s. The
//! resume point, the frames and the replay-then-follow loop are [`patchbay_resume`]'s (the same
//! pieces an in-memory stream uses), with the session's stored events as its source.
//!
//! # Streams
//! Event streams are long-lived (with `follow`, the default, one never ends on its own) and
//! each holds a connection of the listener, whose cap
//! ([`DEFAULT_MAX_CONNECTIONS`](patchbay::mcp::DEFAULT_MAX_CONNECTIONS), 512) they share with
//! every other request, the MCP endpoint's and the web view's included. So they have a budget
//! of their own ([`StreamLimits`], set with
//! [`HttpOptions::streams`](crate::http::HttpOptions::streams)): at most
//! [`DEFAULT_STREAMS_PER_CREDENTIAL`] (64) open at once per credential, and
//! [`DEFAULT_MAX_STREAMS`] (256, half the connection cap) over all. A credential is what let
//! the request in: the bearer token is one, each web-view login (its session cookie, which the
//! web view's pages follow streams with) another. A stream over the budget is answered at once
//! `429 Too Many Requests` with `{"error": {"code": "too_many_streams", ...}}` and
//! `Retry-After: 5`, so it holds no connection; a stream gives its place back when it ends or
//! its client goes away (noticed at the latest at the next keep-alive comment). Streams with
//! `follow=false` count too: a run can go on for hours.
//!
//! # Decisions
//! - **Times are RFC 3339 text** (UTC, milliseconds), as in the MCP tools' JSON: the API
//!   shows sessions through the service's summaries and reports ([`SessionSummary`],
//!   [`SessionReport`], as the tools render them with [`crate::format`]) and jobs as
//!   [`JobView`]; the raw unix-millisecond store types are not exposed.
//! - **Sessions are shown without their stored conversation** (it can be large and the events
//!   carry the same content); the result text is whole (the 25,000-character cut is for
//!   agents' context windows, not for API clients).
//! - **The caller** of `POST /jobs` is `parent_session_name`, or else the
//!   `X-Agent-Session-Name` header; a name breaking the rule is refused. `callback: true`
//!   without a caller is refused (there would be no one to call back).
//! - **A resume runs on the session's own blueprint and folder**: `agent_name` or
//!   `project_dir` given with a resume must match the session's, else `400`.
//! - **`GET /agents` lists retired blueprints too** (a web view shows the blueprint of an old
//!   session); `GET /agents/{name}` shows provider option names, MCP header and environment
//!   names and the number of stdio arguments, never their values (they may hold keys), and
//!   redacts credentials and query strings in MCP URLs.
//! - **The stream budget counts credentials**, not addresses (every client is on loopback):
//!   the token holder and each browser login get their own share, and the total leaves half
//!   the connection cap to short requests however many logins there are. Credentials are told
//!   apart by a keyed hash of the header value (a random key per process), never kept or
//!   logged; `Authorization` counts only when it holds the token (a request let in by its
//!   cookie cannot pick fresh budgets with made-up `Authorization` values). The budget is
//!   checked before the session is read, so a flood of streams costs no store reads; `429`
//!   (not `503`) because it is this client that holds too many, and waiting for one of them
//!   to end is the remedy.
//! - **Listings are paged**: `limit` 1 to [`MAX_PAGE`] (default [`DEFAULT_PAGE`]), `offset`
//!   from 0; `next_offset` is set when the page was full. Unknown query parameters are refused.

mod error;
mod sse;
mod streams;
mod views;

use std::path::Path;
use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Extension, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

pub use self::error::ApiError;
use self::error::{Body, Id, Params};
pub use self::streams::{DEFAULT_MAX_STREAMS, DEFAULT_STREAMS_PER_CREDENTIAL, StreamLimits};
pub(crate) use self::streams::{StreamBudget, TokenCheck};
pub use self::views::{
    AgentList, BlueprintView, Deleted, JobList, JobView, McpServerView, McpTransportView, SessionList,
};
use crate::names::validate_session_name;
use crate::service::reports::{BlueprintSummary, SessionReport, SessionSummary};
use crate::service::{CALLER_HEADER, Orchestrator, StartRequest, summary};
use crate::store::{JobKind, Page, SessionFilter, SessionStatus};

/// The default largest request body: 1 MiB (see [`Orchestrator::max_request_bytes`], set with
/// `--max-request-bytes`; the same limit holds over MCP).
pub const MAX_BODY_BYTES: usize = crate::service::DEFAULT_MAX_REQUEST_BYTES;
/// The page size of listings when `limit` is not given.
pub const DEFAULT_PAGE: u32 = 100;
/// The largest `limit` of a listing.
pub const MAX_PAGE: u32 = 1000;

type ApiResult<T> = Result<T, ApiError>;

/// The API routes over `orchestrator`, to serve with the MCP endpoint (see
/// [`crate::http::serve_http`]); unknown paths and methods answer JSON errors. Event streams
/// are held to the default [`StreamLimits`], each `Authorization` value being one credential.
pub fn routes(orchestrator: Orchestrator) -> Router {
    routes_with(orchestrator, StreamBudget::new(StreamLimits::default(), None))
}

/// [`routes`] with event streams held to `budget`.
pub(crate) fn routes_with(orchestrator: Orchestrator, budget: StreamBudget) -> Router {
    Router::new()
        .route("/jobs", post(create_job).get(list_jobs))
        .route("/jobs/{id}", get(get_job))
        .route("/jobs/{id}/cancel", post(cancel_job))
        .route("/sessions", get(list_sessions).delete(delete_all_sessions))
        .route("/sessions/by-name/{name}", get(session_by_name))
        .route("/sessions/{id}", get(get_session).delete(delete_session))
        .route("/sessions/{id}/status", get(get_session))
        .route("/sessions/{id}/result", get(session_result))
        .route(
            "/sessions/{id}/events",
            get(sse::events).layer(Extension(Arc::new(budget))),
        )
        .route("/agents", get(list_agents))
        .route("/agents/{name}", get(get_agent))
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(orchestrator.max_request_bytes()))
        .layer(axum::middleware::from_fn(refuse_scoped_tokens))
        .with_state(orchestrator)
}

/// The body of `POST /jobs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobRequest {
    #[serde(rename = "type")]
    kind: JobKind,
    session_name: String,
    prompt: String,
    #[serde(default, alias = "agent_blueprint_name")]
    agent_name: Option<String>,
    #[serde(default)]
    project_dir: Option<String>,
    #[serde(default)]
    parent_session_name: Option<String>,
    #[serde(default)]
    callback: bool,
}

async fn create_job(
    State(o): State<Orchestrator>,
    headers: HeaderMap,
    Body(request): Body<JobRequest>,
) -> ApiResult<Response> {
    let caller = match request.parent_session_name {
        Some(name) => Some(name),
        None => caller_header(&headers)?,
    };
    if let Some(caller) = &caller {
        validate_session_name(caller).map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_name",
                format!("parent_session_name: {e}"),
            )
        })?;
    }
    if request.callback && caller.is_none() {
        return Err(ApiError::invalid(
            "`callback: true` needs a parent to call back: give `parent_session_name` \
             (or the X-Agent-Session-Name header)",
        ));
    }
    if request.kind == JobKind::ResumeSession {
        check_resume(
            &o,
            &request.session_name,
            request.agent_name.as_deref(),
            request.project_dir.as_deref(),
        )
        .await?;
    }
    let start = StartRequest {
        session_name: request.session_name,
        prompt: request.prompt,
        blueprint: request.agent_name,
        project_dir: request.project_dir,
        async_mode: true,
        callback: request.callback,
        caller,
    };
    let job = o.submit(request.kind, start).await?;
    let location = HeaderValue::from_str(&format!("/jobs/{}", job.job_id)).ok();
    let mut response = (StatusCode::CREATED, Json(JobView::from(job))).into_response();
    if let Some(location) = location {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// The caller named by the `X-Agent-Session-Name` header, if any.
fn caller_header(headers: &HeaderMap) -> ApiResult<Option<String>> {
    let Some(value) = headers.get(CALLER_HEADER) else {
        return Ok(None);
    };
    let value = value
        .to_str()
        .map_err(|_| ApiError::invalid("the X-Agent-Session-Name header is not text"))?
        .trim();
    Ok((!value.is_empty()).then(|| value.to_owned()))
}

/// A resume may repeat the session's blueprint and folder, not change them.
async fn check_resume(o: &Orchestrator, name: &str, agent: Option<&str>, dir: Option<&str>) -> ApiResult<()> {
    if agent.is_none() && dir.is_none() {
        return Ok(());
    }
    validate_session_name(name).map_err(crate::OrchestratorError::from)?;
    let session = o.session_by_name(name).await?;
    if let Some(agent) = agent
        && agent != session.agent_name
    {
        return Err(ApiError::invalid(format!(
            "session `{name}` runs on the blueprint `{}`: a resume cannot change it (leave `agent_name` out)",
            session.agent_name
        )));
    }
    if let Some(dir) = dir {
        // Read and confined as when the session started.
        let given = o.confine(Path::new(dir))?;
        if given != Path::new(&session.project_dir) {
            return Err(ApiError::invalid(format!(
                "session `{name}` runs in `{}`: a resume cannot change it (leave `project_dir` out)",
                session.project_dir
            )));
        }
    }
    Ok(())
}

/// `limit` and `offset` of a listing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    offset: Option<u64>,
}

impl PageQuery {
    fn page(&self) -> ApiResult<Page> {
        let limit = self.limit.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(ApiError::invalid(format!("`limit` must be from 1 to {MAX_PAGE}")));
        }
        Ok(Page {
            limit,
            offset: self.offset.unwrap_or(0),
        })
    }
}

/// The offset after `page` when it came back full.
fn next_offset(page: Page, len: usize) -> Option<u64> {
    (len >= page.limit as usize).then(|| page.offset + len as u64)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobsQuery {
    #[serde(default)]
    session_name: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    offset: Option<u64>,
}

async fn list_jobs(State(o): State<Orchestrator>, Params(query): Params<JobsQuery>) -> ApiResult<Json<JobList>> {
    let page = PageQuery {
        limit: query.limit,
        offset: query.offset,
    }
    .page()?;
    if let Some(name) = &query.session_name {
        validate_session_name(name).map_err(crate::OrchestratorError::from)?;
    }
    let jobs = o
        .store()
        .list_jobs(query.session_name.as_deref(), page)
        .await
        .map_err(crate::OrchestratorError::from)?;
    let next_offset = next_offset(page, jobs.len());
    Ok(Json(JobList {
        jobs: jobs.into_iter().map(JobView::from).collect(),
        next_offset,
    }))
}

async fn get_job(State(o): State<Orchestrator>, Id(id): Id) -> ApiResult<Json<JobView>> {
    Ok(Json(o.job(&id).await?.into()))
}

async fn cancel_job(State(o): State<Orchestrator>, Id(id): Id) -> ApiResult<Json<JobView>> {
    Ok(Json(o.cancel_job(&id).await?.into()))
}

/// `GET /sessions`: offset pages (`limit`, `offset`), or keyset pages with filters (`status`,
/// `parent_session_name`, `agent_name`, `after` = a page's `next_after`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionsQuery {
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    status: Option<SessionStatus>,
    #[serde(default)]
    parent_session_name: Option<String>,
    #[serde(default)]
    agent_name: Option<String>,
}

async fn list_sessions(
    State(o): State<Orchestrator>,
    Params(query): Params<SessionsQuery>,
) -> ApiResult<Json<SessionList>> {
    let page = PageQuery {
        limit: query.limit,
        offset: query.offset,
    }
    .page()?;
    let keyset = query.after.is_some()
        || query.status.is_some()
        || query.parent_session_name.is_some()
        || query.agent_name.is_some();
    if keyset {
        if query.offset.is_some() {
            return Err(ApiError::invalid(
                "`offset` pages the whole list; with `after` or a filter, page with `after` = next_after",
            ));
        }
        let filter = SessionFilter {
            status: query.status,
            parent_session_name: query.parent_session_name,
            agent_name: query.agent_name,
            within: None,
        };
        let (sessions, total, next_after) = o.find_sessions(&filter, query.after.as_deref(), page.limit).await?;
        return Ok(Json(SessionList {
            sessions,
            next_offset: None,
            total: Some(total),
            next_after,
        }));
    }
    let sessions = o
        .store()
        .list_sessions(page)
        .await
        .map_err(crate::OrchestratorError::from)?;
    Ok(Json(SessionList {
        next_offset: next_offset(page, sessions.len()),
        sessions: sessions.iter().map(summary).collect(),
        total: None,
        next_after: None,
    }))
}

async fn session_by_name(State(o): State<Orchestrator>, Id(name): Id) -> ApiResult<Json<SessionReport>> {
    validate_session_name(&name).map_err(crate::OrchestratorError::from)?;
    let session = o.session_by_name(&name).await?;
    Ok(Json(o.report(&session).await?))
}

async fn get_session(State(o): State<Orchestrator>, Id(id): Id) -> ApiResult<Json<SessionReport>> {
    let session = o.session(&id).await?;
    Ok(Json(o.report(&session).await?))
}

async fn session_result(State(o): State<Orchestrator>, Id(id): Id) -> ApiResult<Json<SessionReport>> {
    let session = o.session(&id).await?;
    Ok(Json(o.result(&session.session_name).await?))
}

async fn delete_session(State(o): State<Orchestrator>, Id(id): Id) -> ApiResult<Json<SessionSummary>> {
    let session = o.delete_session(&id).await?;
    Ok(Json(summary(&session)))
}

async fn delete_all_sessions(State(o): State<Orchestrator>) -> ApiResult<Json<Deleted>> {
    let deleted = o.delete_all_sessions().await?;
    Ok(Json(Deleted { deleted }))
}

async fn list_agents(State(o): State<Orchestrator>) -> Json<AgentList> {
    Json(AgentList {
        agents: o.blueprints().all().map(BlueprintSummary::from).collect(),
    })
}

async fn get_agent(State(o): State<Orchestrator>, Id(name): Id) -> ApiResult<Json<BlueprintView>> {
    let blueprint = o.blueprint(&name)?;
    Ok(Json(BlueprintView::new(blueprint, o.blueprints().source(&name))))
}

/// `403` for a request a run's scoped token let in: those open `/mcp` only (see
/// [`crate::scope`]).
async fn refuse_scoped_tokens(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if crate::scope::is_scoped(request.extensions()) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "a run's scoped token opens only the MCP endpoint (/mcp), for its own session and the sessions below \
             it: the JSON API takes the bearer token",
        )
        .into_response();
    }
    next.run(request).await
}

async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no endpoint `{method} {}`", uri.path()),
    )
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("`{}` does not take {method}", uri.path()),
    )
}
