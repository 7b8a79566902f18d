//! The MCP tools (the design's seven, plus `cancel_agent_session` and
//! `get_agent_session_events`), as a patchbay [`ToolSet`] served by patchbay-mcp's tool server
//! over streamable HTTP and stdio.
//!
//! Names and parameters are those existing parent agents call. Beyond the original design:
//! `get_agent_session_status` takes `wait_seconds`, and `resume_agent_session`,
//! `get_agent_session_status` and `get_agent_session_result` take an optional
//! `response_format` too (left out: markdown, as before). The caller's own session name is the
//! request metadata [`CALLER_METADATA_KEY`] (from the `X-Agent-Session-Name` header over HTTP,
//! from `AGENT_SESSION_NAME` over stdio, or a run's scoped token, which wins over both). A call
//! made with a scoped token (its metadata carries
//! [`SCOPE_METADATA_KEY`](crate::scope::SCOPE_METADATA_KEY)) reaches only the token's session
//! and the sessions below it (see [`crate::scope`]).
//!
//! While a sync start or resume, or a status call with `wait_seconds`, waits, a caller that
//! listens for progress (an MCP `progressToken`) hears the session's latest activity (see
//! [`crate::progress`]).

use std::time::Duration;

use patchbay::{FnTool, Tool, ToolContext, ToolResult, ToolSet, tool::ToolProgress};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::OrchestratorError;
use crate::format::{ResponseFormat, render_blueprints, render_job_accepted, render_session, render_session_page};
use crate::scope::Scope;
use crate::service::reports::SessionReport;
use crate::service::{CALLER_METADATA_KEY, Orchestrator, ResumeRequest, RunAnswer, StartRequest};
use crate::store::{SessionFilter, SessionStatus};

/// The longest `wait_seconds` honoured (ten minutes, as the sync limit's default).
pub const MAX_WAIT_SECONDS: u64 = 600;

/// `list_agent_blueprints` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListInput {
    /// `markdown` (default) or `json`.
    #[serde(default)]
    #[schemars(extend("enum" = ["markdown", "json"]))]
    pub response_format: Option<String>,
}

/// `list_agent_sessions` input: filters and a keyset page.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListSessionsInput {
    /// Only sessions with this status.
    #[serde(default)]
    #[schemars(extend("enum" = ["pending", "running", "finished", "failed", "cancelled"]))]
    pub status: Option<String>,
    /// Only children of this session.
    #[serde(default)]
    pub parent_session_name: Option<String>,
    /// Only sessions on this blueprint.
    #[serde(default)]
    pub agent_blueprint_name: Option<String>,
    /// The `next_after` of the previous page (left out: the first page).
    #[serde(default)]
    pub after: Option<String>,
    /// The most sessions in the page (default 100, at most 1000).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
    /// `markdown` (default) or `json`.
    #[serde(default)]
    #[schemars(extend("enum" = ["markdown", "json"]))]
    pub response_format: Option<String>,
}

/// `start_agent_session` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StartInput {
    /// A new unique name: letters, digits, `_` and `-`, 1 to 60 characters.
    #[schemars(length(min = 1, max = 60), regex(pattern = r"^[a-zA-Z0-9_-]+$"))]
    pub session_name: String,
    /// The task for the new agent.
    pub prompt: String,
    /// Which blueprint to run (see list_agent_blueprints); left out: `default`.
    #[serde(default)]
    pub agent_blueprint_name: Option<String>,
    /// The folder the agent works in; left out: the orchestrator's.
    #[serde(default)]
    pub project_dir: Option<String>,
    /// Return at once with the job id instead of waiting for the result.
    #[serde(default)]
    pub async_mode: bool,
    /// When the run ends, resume the calling session with its result.
    #[serde(default)]
    pub callback: bool,
    /// `markdown` (default) or `json`.
    #[serde(default)]
    #[schemars(extend("enum" = ["markdown", "json"]))]
    pub response_format: Option<String>,
}

/// `resume_agent_session` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResumeInput {
    /// The session to continue.
    #[schemars(length(min = 1, max = 60), regex(pattern = r"^[a-zA-Z0-9_-]+$"))]
    pub session_name: String,
    /// The next message for it.
    pub prompt: String,
    /// Return at once with the job id instead of waiting for the result.
    #[serde(default)]
    pub async_mode: bool,
    /// When the run ends, resume the calling session with its result.
    #[serde(default)]
    pub callback: bool,
    /// `markdown` (default) or `json`.
    #[serde(default)]
    #[schemars(extend("enum" = ["markdown", "json"]))]
    pub response_format: Option<String>,
}

/// `get_agent_session_status` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatusInput {
    /// The session.
    #[schemars(length(min = 1, max = 60), regex(pattern = r"^[a-zA-Z0-9_-]+$"))]
    pub session_name: String,
    /// Wait up to this many seconds (at most 600) for the session to settle (every run of it
    /// ended) before answering.
    #[serde(default)]
    #[schemars(range(min = 0, max = 600))]
    pub wait_seconds: Option<u64>,
    /// `markdown` (default) or `json`.
    #[serde(default)]
    #[schemars(extend("enum" = ["markdown", "json"]))]
    pub response_format: Option<String>,
}

/// `get_agent_session_result` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResultInput {
    /// The session.
    #[schemars(length(min = 1, max = 60), regex(pattern = r"^[a-zA-Z0-9_-]+$"))]
    pub session_name: String,
    /// `markdown` (default) or `json`.
    #[serde(default)]
    #[schemars(extend("enum" = ["markdown", "json"]))]
    pub response_format: Option<String>,
}

/// `cancel_agent_session` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CancelInput {
    /// The session whose run (and queued resumes) to cancel.
    #[schemars(length(min = 1, max = 60), regex(pattern = r"^[a-zA-Z0-9_-]+$"))]
    pub session_name: String,
    /// `markdown` (default) or `json`.
    #[serde(default)]
    #[schemars(extend("enum" = ["markdown", "json"]))]
    pub response_format: Option<String>,
}

/// `get_agent_session_events` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EventsInput {
    /// The session.
    #[schemars(length(min = 1, max = 60), regex(pattern = r"^[a-zA-Z0-9_-]+$"))]
    pub session_name: String,
    /// Only events after this seq (left out: from the first); a page's `next_after`.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub after: Option<i64>,
    /// The most events (default 200, at most 1000); a page also ends at 25,000 characters.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// `markdown` (default, a readable transcript) or `json` (the events as stored).
    #[serde(default)]
    #[schemars(extend("enum" = ["markdown", "json"]))]
    pub response_format: Option<String>,
}

/// `delete_all_agent_sessions` input (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoInput {}

/// Who calls a tool: its own session's name, if it named one (or a scoped token did), the
/// scope of a scoped token, and where progress goes while the call waits (nowhere unless the
/// caller listens).
struct Caller {
    name: Option<String>,
    scope: Option<Scope>,
    progress: ToolProgress,
}

impl Caller {
    fn of(cx: &ToolContext) -> Self {
        let name = cx
            .metadata
            .get(CALLER_METADATA_KEY)
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        Self {
            name,
            scope: Scope::of(&cx.metadata),
            progress: cx.progress.clone(),
        }
    }

    fn scope(&self) -> Option<&Scope> {
        self.scope.as_ref()
    }

    /// The progress reporter when the call waits, else none.
    fn progress_if(&self, waits: bool) -> ToolProgress {
        if waits {
            self.progress.clone()
        } else {
            ToolProgress::default()
        }
    }
}

fn format(value: Option<&str>) -> Result<ResponseFormat, String> {
    ResponseFormat::parse_optional(value).map_err(|e| e.to_string())
}

/// A run that ended: its report, as an error answer (`isError: true` over MCP) when the run
/// failed or was cancelled, so a caller never reads a failed run as a success.
fn report_answer(report: &SessionReport, format: ResponseFormat) -> Result<String, String> {
    let text = render_session(report, format);
    match report.job_status.as_deref() {
        Some("failed" | "cancelled") => Err(text),
        _ => Ok(text),
    }
}

fn answer(answer: RunAnswer, format: ResponseFormat) -> Result<String, String> {
    match answer {
        RunAnswer::Ended(report) => report_answer(&report, format),
        RunAnswer::Accepted(accepted) => Ok(render_job_accepted(&accepted, format)),
    }
}

/// The answer for a session that does not exist: the status `not_existent`.
fn not_existent(session_name: &str, format: ResponseFormat) -> String {
    match format {
        ResponseFormat::Json => {
            serde_json::json!({ "session_name": session_name, "status": "not_existent" }).to_string()
        }
        ResponseFormat::Markdown => format!("## {session_name}\n- status: not_existent\n"),
    }
}

fn failed(error: OrchestratorError) -> String {
    error.to_string()
}

/// A tool over `orchestrator` whose `body` gets the orchestrator, the input and the caller,
/// and answers a text or an error message.
fn tool<I, F, Fut>(
    orchestrator: &Orchestrator,
    name: &str,
    description: &str,
    annotations: serde_json::Value,
    body: F,
) -> impl Tool + 'static
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(Orchestrator, I, Caller) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, String>> + Send + 'static,
{
    let orchestrator = orchestrator.clone();
    FnTool::new(name, description, move |input: I, cx: ToolContext| {
        let call = body(orchestrator.clone(), input, Caller::of(&cx));
        async move {
            match call.await {
                Ok(text) => ToolResult::text(text),
                Err(message) => ToolResult::error(message),
            }
        }
    })
    .with_annotations(annotations)
}

/// MCP annotations of a tool that only reads.
fn read_only(title: &str) -> serde_json::Value {
    serde_json::json!({"title": title, "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
}

/// MCP annotations of a tool that changes state without destroying any.
fn changes(title: &str) -> serde_json::Value {
    serde_json::json!({"title": title, "readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true})
}

/// The nine tools over `orchestrator`.
pub fn agent_session_tools(orchestrator: &Orchestrator) -> ToolSet {
    ToolSet::new()
        .with(list_blueprints_tool(orchestrator))
        .with(list_sessions_tool(orchestrator))
        .with(start_tool(orchestrator))
        .with(resume_tool(orchestrator))
        .with(status_tool(orchestrator))
        .with(result_tool(orchestrator))
        .with(cancel_tool(orchestrator))
        .with(events_tool(orchestrator))
        .with(delete_all_tool(orchestrator))
}

/// `list_agent_blueprints`: the blueprints a session can start on.
fn list_blueprints_tool(orchestrator: &Orchestrator) -> impl Tool + 'static {
    tool(
        orchestrator,
        "list_agent_blueprints",
        "List the agent blueprints a session can start on: name, description, provider and model.",
        read_only("List agent blueprints"),
        |o, input: ListInput, _caller| async move {
            let format = format(input.response_format.as_deref())?;
            Ok(render_blueprints(&o.list_blueprints(), format))
        },
    )
}

/// `list_agent_sessions`: every session with its status.
fn list_sessions_tool(orchestrator: &Orchestrator) -> impl Tool + 'static {
    tool(
        orchestrator,
        "list_agent_sessions",
        "List agent sessions with their status, blueprint, folder and parent, oldest first: filter by \
         status, parent_session_name or agent_blueprint_name; a page holds up to limit (default 100), \
         and next_after leads to the next.",
        read_only("List agent sessions"),
        |o, input: ListSessionsInput, caller| async move {
            let format = format(input.response_format.as_deref())?;
            let status = match input.status.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
                Some(text) => Some(text.parse::<SessionStatus>().map_err(|_| {
                    format!(
                        "status `{text}` is not a session status: use pending, running, finished, failed or cancelled"
                    )
                })?),
                None => None,
            };
            let mut filter = SessionFilter {
                status,
                parent_session_name: input.parent_session_name.filter(|p| !p.trim().is_empty()),
                agent_name: input.agent_blueprint_name.filter(|b| !b.trim().is_empty()),
                within: None,
            };
            if let Some(scope) = caller.scope() {
                o.scope_session(scope).await.map_err(failed)?;
                filter.within = Some(scope.session_name.clone());
            }
            let (sessions, total, next) = o
                .find_sessions(&filter, input.after.as_deref(), input.limit.unwrap_or(100))
                .await
                .map_err(failed)?;
            Ok(render_session_page(&sessions, total, next.as_deref(), format))
        },
    )
}

/// `start_agent_session`: a new session on a blueprint, waited for unless `async_mode`.
fn start_tool(orchestrator: &Orchestrator) -> impl Tool + 'static {
    tool(
        orchestrator,
        "start_agent_session",
        "Start a new agent session on a blueprint with a first prompt. By default waits for the \
         run and returns its result (sending progress notifications with the child's latest \
         activity when the request has a progressToken); with async_mode returns at once with \
         the job id (poll with get_agent_session_status, or set callback to be resumed with the \
         result).",
        changes("Start an agent session"),
        |o, input: StartInput, caller| async move {
            let format = format(input.response_format.as_deref())?;
            if let Some(scope) = caller.scope() {
                // The child goes under the token's session (the caller), while it is there.
                o.scope_session(scope).await.map_err(failed)?;
            }
            let progress = caller.progress_if(!input.async_mode);
            let session_name = input.session_name.clone();
            let request = StartRequest {
                session_name: input.session_name,
                prompt: input.prompt,
                blueprint: input.agent_blueprint_name.filter(|b| !b.trim().is_empty()),
                project_dir: input.project_dir,
                async_mode: input.async_mode,
                callback: input.callback,
                caller: caller.name,
            };
            let started = o.reporting(&session_name, &progress, o.start_session(request)).await;
            answer(started.map_err(failed)?, format)
        },
    )
}

/// `resume_agent_session`: a new prompt for an existing session.
fn resume_tool(orchestrator: &Orchestrator) -> impl Tool + 'static {
    tool(
        orchestrator,
        "resume_agent_session",
        "Continue an existing agent session with a new prompt (it keeps its conversation). Waits \
         for the result unless async_mode (sending progress notifications with the child's \
         latest activity when the request has a progressToken); a resume sent while the session \
         runs waits its turn.",
        changes("Resume an agent session"),
        |o, input: ResumeInput, caller| async move {
            let format = format(input.response_format.as_deref())?;
            o.check_scope(caller.scope(), &input.session_name)
                .await
                .map_err(failed)?;
            let progress = caller.progress_if(!input.async_mode);
            let session_name = input.session_name.clone();
            let request = ResumeRequest {
                session_name: input.session_name,
                prompt: input.prompt,
                async_mode: input.async_mode,
                callback: input.callback,
                caller: caller.name,
            };
            let resumed = o.reporting(&session_name, &progress, o.resume_session(request)).await;
            answer(resumed.map_err(failed)?, format)
        },
    )
}

/// `get_agent_session_status`: a session's status, optionally waiting for a change.
fn status_tool(orchestrator: &Orchestrator) -> impl Tool + 'static {
    tool(
        orchestrator,
        "get_agent_session_status",
        "The status of an agent session (and its result once ended). With wait_seconds, waits up \
         to that long for the session to settle first, so there is no need to poll (sending \
         progress notifications with its latest activity when the request has a progressToken).",
        read_only("Get an agent session's status"),
        |o, input: StatusInput, caller| async move {
            let format = format(input.response_format.as_deref())?;
            let wait = input.wait_seconds.map(|s| Duration::from_secs(s.min(MAX_WAIT_SECONDS)));
            let progress = caller.progress_if(wait.is_some_and(|w| !w.is_zero()));
            let report = match o.check_scope(caller.scope(), &input.session_name).await {
                Ok(()) => {
                    let status = o.status_as(&input.session_name, wait, caller.name.as_deref());
                    o.reporting(&input.session_name, &progress, status).await
                }
                Err(error) => Err(error),
            };
            match report {
                Ok(report) => Ok(render_session(&report, format)),
                Err(OrchestratorError::SessionNotFound(_)) => Ok(not_existent(&input.session_name, format)),
                Err(error) => Err(failed(error)),
            }
        },
    )
}

/// `get_agent_session_result`: the result of a session whose run has ended.
fn result_tool(orchestrator: &Orchestrator) -> impl Tool + 'static {
    tool(
        orchestrator,
        "get_agent_session_result",
        "The result of an agent session whose run has ended (an error while it still runs). \
         Results over 25,000 characters are truncated.",
        read_only("Get an agent session's result"),
        |o, input: ResultInput, caller| async move {
            let format = format(input.response_format.as_deref())?;
            o.check_scope(caller.scope(), &input.session_name)
                .await
                .map_err(failed)?;
            report_answer(&o.result(&input.session_name).await.map_err(failed)?, format)
        },
    )
}

/// `cancel_agent_session`: stop a session's run and its queued resumes.
fn cancel_tool(orchestrator: &Orchestrator) -> impl Tool + 'static {
    tool(
        orchestrator,
        "cancel_agent_session",
        "Cancel an agent session's run in progress and the resumes queued behind it (the session \
         keeps its conversation as before the run, and can be resumed). An error when nothing is \
         queued or running.",
        serde_json::json!({"title": "Cancel an agent session", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false}),
        |o, input: CancelInput, caller| async move {
            let format = format(input.response_format.as_deref())?;
            o.check_scope(caller.scope(), &input.session_name)
                .await
                .map_err(failed)?;
            let report = o.cancel_session(&input.session_name).await.map_err(failed)?;
            Ok(render_session(&report, format))
        },
    )
}

/// `get_agent_session_events`: a page of a session's transcript.
fn events_tool(orchestrator: &Orchestrator) -> impl Tool + 'static {
    tool(
        orchestrator,
        "get_agent_session_events",
        "A page of an agent session's events (its transcript: text, tool calls and results, \
         errors), after an event seq. Markdown joins the text; json gives the events as stored. \
         Ask again with after = next_after for more.",
        read_only("Get an agent session's events"),
        |o, input: EventsInput, caller| async move {
            let format = format(input.response_format.as_deref())?;
            o.check_scope(caller.scope(), &input.session_name)
                .await
                .map_err(failed)?;
            let session = o.session_by_name(&input.session_name).await.map_err(failed)?;
            let after = input.after.unwrap_or(0).max(0);
            let events = o
                .store()
                .events_since(&session.session_id, after)
                .await
                .map_err(|e| failed(e.into()))?;
            let limit = input.limit.unwrap_or(crate::transcript::DEFAULT_EVENTS);
            Ok(crate::transcript::page(&session.session_name, &events, limit, format))
        },
    )
}

/// `delete_all_agent_sessions`: delete every session and its events.
fn delete_all_tool(orchestrator: &Orchestrator) -> impl Tool + 'static {
    tool(
        orchestrator,
        "delete_all_agent_sessions",
        "Delete every agent session and its events, cancelling queued and running work.",
        serde_json::json!({"title": "Delete all agent sessions", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}),
        |o, _input: NoInput, caller| async move {
            if let Some(scope) = caller.scope() {
                return Err(failed(OrchestratorError::OutOfScope(format!(
                    "delete_all_agent_sessions deletes every session, and this token reaches only `{}` and the \
                     sessions below it: it needs the orchestrator's bearer token",
                    scope.session_name
                ))));
            }
            let n = o.delete_all_sessions().await.map_err(failed)?;
            Ok(format!("Deleted {n} session{}.", if n == 1 { "" } else { "s" }))
        },
    )
}
