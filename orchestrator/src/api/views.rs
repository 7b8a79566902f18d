//! What the API answers: jobs, blueprints and listings as JSON, with RFC 3339 times.

use patchbay::context::McpTransport;
use patchbay::kit::redact_url;
use serde::{Deserialize, Serialize};

use crate::blueprint::Blueprint;
use crate::service::reports::{BlueprintSummary, SessionSummary};
use crate::service::rfc3339;
use crate::store::{Job, JobKind, JobStatus, UsageTotals};

/// A job as the API shows it: the stored job with its times as RFC 3339 text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobView {
    /// The job's id.
    pub job_id: String,
    /// `start_session` or `resume_session`.
    #[serde(rename = "type")]
    pub kind: JobKind,
    /// The session it runs.
    pub session_name: String,
    /// The blueprint name.
    pub agent_name: String,
    /// The prompt of the run.
    pub prompt: String,
    /// The working directory of the run.
    pub project_dir: String,
    /// The session that asked for the run, if any.
    pub parent_session_name: Option<String>,
    /// Whether the parent is resumed with the result when the run ends.
    pub callback: bool,
    /// `pending`, `claimed`, `running`, `completed`, `failed` or `cancelled`.
    pub status: JobStatus,
    /// Why it failed or was cancelled.
    pub error: Option<String>,
    /// The worker that claimed it.
    pub claimed_by: Option<String>,
    /// When it was accepted.
    pub created_at: String,
    /// When a worker claimed it.
    pub claimed_at: Option<String>,
    /// When its run started.
    pub started_at: Option<String>,
    /// When it ended.
    pub finished_at: Option<String>,
    /// The tokens and cost of its run so far.
    #[serde(default)]
    pub usage: UsageTotals,
}

impl From<Job> for JobView {
    fn from(job: Job) -> Self {
        Self {
            job_id: job.job_id,
            kind: job.kind,
            session_name: job.session_name,
            agent_name: job.agent_name,
            prompt: job.prompt,
            project_dir: job.project_dir,
            parent_session_name: job.parent_session_name,
            callback: job.callback,
            status: job.status,
            error: job.error,
            claimed_by: job.claimed_by,
            created_at: rfc3339(job.created_at),
            claimed_at: job.claimed_at.map(rfc3339),
            started_at: job.started_at.map(rfc3339),
            finished_at: job.finished_at.map(rfc3339),
            usage: job.usage,
        }
    }
}

/// `GET /jobs`: a page of jobs in queue order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobList {
    /// The jobs, oldest first.
    pub jobs: Vec<JobView>,
    /// The `offset` of the next page, when this page was full.
    pub next_offset: Option<u64>,
}

/// `GET /sessions`: a page of sessions, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    /// The sessions.
    pub sessions: Vec<SessionSummary>,
    /// The `offset` of the next page, when this page was full (offset paging).
    pub next_offset: Option<u64>,
    /// How many sessions match (keyset paging).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// The `after` of the next page, when this page was full (keyset paging).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after: Option<String>,
}

/// `GET /agents`: every blueprint, retired ones included (their `status` says so).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentList {
    /// The blueprints, by name.
    pub agents: Vec<BlueprintSummary>,
}

/// `DELETE /sessions`: how many sessions were deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deleted {
    /// The number of sessions deleted.
    pub deleted: u64,
}

/// A blueprint as the API shows it: everything but values that may hold secrets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlueprintView {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The provider's registry name.
    pub provider: String,
    /// The model.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// The coding tools its runs get.
    pub tools: Vec<String>,
    /// The MCP servers attached to its runs.
    pub mcp_servers: Vec<McpServerView>,
    /// Whether runs reach this orchestrator's own tools.
    pub orchestrator_tools: bool,
    /// The most model turns per run.
    pub max_steps: Option<u32>,
    /// Its own limits (what it leaves out is the orchestrator's).
    pub limits: crate::limits::BlueprintLimits,
    /// The names of its provider options (their values may be keys, so they are not shown).
    pub provider_option_keys: Vec<String>,
    /// `active` or `retired`.
    pub status: String,
    /// The file it was loaded from (`None`: built in).
    pub source: Option<String>,
}

impl BlueprintView {
    /// The view of `blueprint`, loaded from `source`.
    pub fn new(blueprint: &Blueprint, source: Option<&std::path::Path>) -> Self {
        let provider_option_keys = blueprint
            .provider_options
            .as_object()
            .map(|options| options.keys().cloned().collect())
            .unwrap_or_default();
        Self {
            name: blueprint.name.clone(),
            description: blueprint.description.clone(),
            provider: blueprint.provider.clone(),
            model: blueprint.model.clone(),
            system: blueprint.system.clone(),
            tools: blueprint.tools.clone(),
            mcp_servers: blueprint
                .mcp_servers
                .iter()
                .map(|server| McpServerView {
                    name: server.name.clone(),
                    transport: McpTransportView::new(&server.transport),
                })
                .collect(),
            orchestrator_tools: blueprint.orchestrator_tools,
            max_steps: blueprint.max_steps,
            limits: blueprint.limits,
            provider_option_keys,
            status: blueprint.status.as_str().to_owned(),
            source: source.map(|p| p.to_string_lossy().into_owned()),
        }
    }
}

/// An MCP server of a blueprint, without secrets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerView {
    /// Its name.
    pub name: String,
    /// How runs reach it.
    pub transport: McpTransportView,
}

/// How runs reach an MCP server, without header values, environment values or arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransportView {
    /// Streamable HTTP.
    Http {
        /// The URL, with credentials and query string redacted.
        url: String,
        /// The names of the extra headers.
        header_names: Vec<String>,
    },
    /// A child process.
    Stdio {
        /// The program.
        command: String,
        /// How many arguments it gets (arguments can carry keys, so they are not shown).
        arg_count: usize,
        /// The names of the extra environment variables.
        env_names: Vec<String>,
    },
}

impl McpTransportView {
    fn new(transport: &McpTransport) -> Self {
        match transport {
            McpTransport::Http { url, headers } => Self::Http {
                url: redact_url(url).into_owned(),
                header_names: headers.keys().cloned().collect(),
            },
            McpTransport::Stdio { command, args, env } => Self::Stdio {
                command: command.clone(),
                arg_count: args.len(),
                env_names: env.keys().cloned().collect(),
            },
        }
    }
}
