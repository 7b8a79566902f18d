//! The seven MCP tools, as a patchbay [`ToolSet`] served by patchbay-mcp's tool server over
//! streamable HTTP and stdio.
//!
//! Names and parameters are those existing parent agents call. Beyond the original design:
//! `get_agent_session_status` takes `wait_seconds`, and `resume_agent_session`,
//! `get_agent_session_status` and `get_agent_session_result` take an optional
//! `response_format` too (left out: markdown, as before). The caller's own session name is the
//! request metadata [`CALLER_METADATA_KEY`] (from the `X-Agent-Session-Name` header over HTTP,
//! from `AGENT_SESSION_NAME` over stdio).

use std::time::Duration;

use patchbay::{FnTool, ToolContext, ToolResult, ToolSet};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::format::{ResponseFormat, render_blueprints, render_job_accepted, render_session, render_sessions};
use crate::service::{CALLER_METADATA_KEY, Orchestrator, ResumeRequest, RunAnswer, StartRequest};

/// The longest `wait_seconds` honoured (ten minutes, as the sync limit's default).
pub const MAX_WAIT_SECONDS: u64 = 600;

/// `list_agent_blueprints` and `list_agent_sessions` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListInput {
    /// `markdown` (default) or `json`.
    #[serde(default)]
    pub response_format: Option<String>,
}

/// `start_agent_session` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StartInput {
    /// A new unique name: letters, digits, `_` and `-`, 1 to 60 characters.
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
    pub response_format: Option<String>,
}

/// `resume_agent_session` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResumeInput {
    /// The session to continue.
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
    pub response_format: Option<String>,
}

/// `get_agent_session_status` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatusInput {
    /// The session.
    pub session_name: String,
    /// Wait up to this many seconds (at most 600) for the session to change before answering.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
    /// `markdown` (default) or `json`.
    #[serde(default)]
    pub response_format: Option<String>,
}

/// `get_agent_session_result` input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResultInput {
    /// The session.
    pub session_name: String,
    /// `markdown` (default) or `json`.
    #[serde(default)]
    pub response_format: Option<String>,
}

/// `delete_all_agent_sessions` input (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoInput {}

fn caller(cx: &ToolContext) -> Option<String> {
    cx.metadata
        .get(CALLER_METADATA_KEY)
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn format(value: Option<&str>) -> Result<ResponseFormat, ToolResult> {
    ResponseFormat::parse_optional(value).map_err(|e| ToolResult::error(e.to_string()))
}

fn answer(answer: RunAnswer, format: ResponseFormat) -> ToolResult {
    match answer {
        RunAnswer::Ended(report) => ToolResult::text(render_session(&report, format)),
        RunAnswer::Accepted(accepted) => ToolResult::text(render_job_accepted(&accepted, format)),
    }
}

/// The seven tools over `orchestrator`.
pub fn agent_session_tools(orchestrator: &Orchestrator) -> ToolSet {
    let o = orchestrator.clone();
    let list_blueprints = FnTool::new(
        "list_agent_blueprints",
        "List the agent blueprints a session can start on: name, description, provider and model.",
        move |input: ListInput, _cx: ToolContext| {
            let o = o.clone();
            async move {
                let format = match format(input.response_format.as_deref()) {
                    Ok(f) => f,
                    Err(e) => return e,
                };
                ToolResult::text(render_blueprints(&o.list_blueprints(), format))
            }
        },
    );
    let o = orchestrator.clone();
    let list_sessions = FnTool::new(
        "list_agent_sessions",
        "List every agent session with its status, blueprint, folder and parent.",
        move |input: ListInput, _cx: ToolContext| {
            let o = o.clone();
            async move {
                let format = match format(input.response_format.as_deref()) {
                    Ok(f) => f,
                    Err(e) => return e,
                };
                match o.list_sessions().await {
                    Ok(list) => ToolResult::text(render_sessions(&list, format)),
                    Err(e) => ToolResult::error(e.to_string()),
                }
            }
        },
    );
    let o = orchestrator.clone();
    let start = FnTool::new(
        "start_agent_session",
        "Start a new agent session on a blueprint with a first prompt. By default waits for the \
         run and returns its result; with async_mode returns at once with the job id (poll with \
         get_agent_session_status, or set callback to be resumed with the result).",
        move |input: StartInput, cx: ToolContext| {
            let o = o.clone();
            async move {
                let format = match format(input.response_format.as_deref()) {
                    Ok(f) => f,
                    Err(e) => return e,
                };
                let request = StartRequest {
                    session_name: input.session_name,
                    prompt: input.prompt,
                    blueprint: input.agent_blueprint_name.filter(|b| !b.trim().is_empty()),
                    project_dir: input.project_dir,
                    async_mode: input.async_mode,
                    callback: input.callback,
                    caller: caller(&cx),
                };
                match o.start_session(request).await {
                    Ok(a) => answer(a, format),
                    Err(e) => ToolResult::error(e.to_string()),
                }
            }
        },
    );
    let o = orchestrator.clone();
    let resume = FnTool::new(
        "resume_agent_session",
        "Continue an existing agent session with a new prompt (it keeps its conversation). Waits \
         for the result unless async_mode; a resume sent while the session runs waits its turn.",
        move |input: ResumeInput, cx: ToolContext| {
            let o = o.clone();
            async move {
                let format = match format(input.response_format.as_deref()) {
                    Ok(f) => f,
                    Err(e) => return e,
                };
                let request = ResumeRequest {
                    session_name: input.session_name,
                    prompt: input.prompt,
                    async_mode: input.async_mode,
                    callback: input.callback,
                    caller: caller(&cx),
                };
                match o.resume_session(request).await {
                    Ok(a) => answer(a, format),
                    Err(e) => ToolResult::error(e.to_string()),
                }
            }
        },
    );
    let o = orchestrator.clone();
    let status = FnTool::new(
        "get_agent_session_status",
        "The status of an agent session (and its result once ended). With wait_seconds, waits up \
         to that long for the session to change first, so there is no need to poll.",
        move |input: StatusInput, cx: ToolContext| {
            let o = o.clone();
            async move {
                let format = match format(input.response_format.as_deref()) {
                    Ok(f) => f,
                    Err(e) => return e,
                };
                let wait = input.wait_seconds.map(|s| Duration::from_secs(s.min(MAX_WAIT_SECONDS)));
                match o.status_as(&input.session_name, wait, caller(&cx).as_deref()).await {
                    Ok(report) => ToolResult::text(render_session(&report, format)),
                    Err(e) => ToolResult::error(e.to_string()),
                }
            }
        },
    );
    let o = orchestrator.clone();
    let result = FnTool::new(
        "get_agent_session_result",
        "The result of an agent session whose run has ended (an error while it still runs). \
         Results over 25,000 characters are truncated.",
        move |input: ResultInput, _cx: ToolContext| {
            let o = o.clone();
            async move {
                let format = match format(input.response_format.as_deref()) {
                    Ok(f) => f,
                    Err(e) => return e,
                };
                match o.result(&input.session_name).await {
                    Ok(report) => ToolResult::text(render_session(&report, format)),
                    Err(e) => ToolResult::error(e.to_string()),
                }
            }
        },
    );
    let o = orchestrator.clone();
    let delete_all = FnTool::new(
        "delete_all_agent_sessions",
        "Delete every agent session and its events, cancelling queued and running work.",
        move |_input: NoInput, _cx: ToolContext| {
            let o = o.clone();
            async move {
                match o.delete_all_sessions().await {
                    Ok(n) => ToolResult::text(format!("Deleted {n} session{}.", if n == 1 { "" } else { "s" })),
                    Err(e) => ToolResult::error(e.to_string()),
                }
            }
        },
    );
    ToolSet::new()
        .with(list_blueprints)
        .with(list_sessions)
        .with(start)
        .with(resume)
        .with(status)
        .with(result)
        .with(delete_all)
}
