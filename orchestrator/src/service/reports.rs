//! Sessions, jobs and blueprints as the answers show them: the service's result types
//! (summaries, reports, an accepted job) and how they are made from stored rows.
//! [`crate::format`] renders them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::blueprint::Blueprint;
use crate::store::{Job, JobStatus, Session, SessionStatus, TreeUsage, UsageTotals};
use crate::text::truncate;

/// The most characters of a blueprint's description a listing carries.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;

/// What a background start or resume says (the design's own words).
pub const STARTED_IN_BACKGROUND: &str =
    "Agent started in background. Use get_agent_session_status to poll for completion.";

/// One blueprint as listed to callers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlueprintSummary {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The provider's registry name.
    pub provider: String,
    /// The model.
    pub model: String,
    /// `active` or `retired`.
    pub status: String,
}

impl From<&Blueprint> for BlueprintSummary {
    fn from(b: &Blueprint) -> Self {
        Self {
            name: b.name.clone(),
            description: truncate(&b.description, MAX_DESCRIPTION_CHARS, "description"),
            provider: b.provider.clone(),
            model: b.model.clone(),
            status: b.status.as_str().to_owned(),
        }
    }
}

/// One session as listed to callers. Times are RFC 3339 text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The caller-chosen unique name.
    pub session_name: String,
    /// The generated id.
    pub session_id: String,
    /// The blueprint it runs on.
    pub agent_name: String,
    /// `pending`, `running`, `finished`, `failed` or `cancelled`.
    pub status: String,
    /// The run's working directory.
    pub project_dir: Option<String>,
    /// The session that started (or last resumed) it.
    pub parent_session_name: Option<String>,
    /// When it was created.
    pub created_at: String,
    /// When it last changed.
    pub updated_at: String,
    /// The tokens and cost of all its runs.
    #[serde(default)]
    pub usage: UsageTotals,
}

/// One session's status and, once it ended, its result: the answer of
/// `get_agent_session_status` and `get_agent_session_result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionReport {
    /// The session.
    #[serde(flatten)]
    pub session: SessionSummary,
    /// When its last run ended.
    pub finished_at: Option<String>,
    /// Its latest job.
    pub job_id: Option<String>,
    /// That job's status.
    pub job_status: Option<String>,
    /// Why the last run failed.
    pub error: Option<String>,
    /// The last result text (truncated when rendered).
    pub result: Option<String>,
    /// The tokens and cost of the current job's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_usage: Option<UsageTotals>,
    /// The root of the session's tree (the top of its parent chain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_root: Option<String>,
    /// The tokens and cost of every session in the tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_usage: Option<UsageTotals>,
}

/// The answer of a start or resume that did not wait for the run (async mode, or the wait
/// limit reached): the design's `{"session_name", "status": "running", "message"}` plus the
/// job, and `callback_to` when a callback will come.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobAccepted {
    /// The session.
    pub session_name: String,
    /// `running`: the session has work queued or going on (the job's own status is
    /// `job_status`).
    pub status: String,
    /// What to do next ([`STARTED_IN_BACKGROUND`]).
    pub message: String,
    /// The queued job.
    pub job_id: String,
    /// The job's status (`pending`, `claimed` or `running`).
    pub job_status: String,
    /// The parent session resumed when the run ends, when a callback was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callback_to: Option<String>,
}

/// What a start or resume answers: the finished session, or the queued job when the call did
/// not wait (async mode) or its wait ended first.
#[derive(Debug, Clone, PartialEq)]
pub enum RunAnswer {
    /// The run ended (finished, failed or cancelled); the report carries its result or error.
    Ended(Box<SessionReport>),
    /// The run goes on.
    Accepted(JobAccepted),
}

/// RFC 3339 text (UTC, milliseconds) for unix milliseconds.
pub(crate) fn rfc3339(millis: i64) -> String {
    let time = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or_default());
    humantime::format_rfc3339_millis(time).to_string()
}

/// The summary of a session.
pub fn summary(s: &Session) -> SessionSummary {
    SessionSummary {
        session_name: s.session_name.clone(),
        session_id: s.session_id.clone(),
        agent_name: s.agent_name.clone(),
        status: s.status.as_str().to_owned(),
        project_dir: Some(s.project_dir.clone()),
        parent_session_name: s.parent_session_name.clone(),
        created_at: rfc3339(s.created_at),
        updated_at: rfc3339(s.updated_at),
        usage: s.usage,
    }
}

/// Whether every job of the reported session has ended (its current job is over).
pub(super) fn settled(report: &SessionReport) -> bool {
    report
        .job_status
        .as_deref()
        .is_none_or(|s| s.parse::<JobStatus>().is_ok_and(JobStatus::is_terminal))
}

/// The report of a session and its current job ([`Store::current_job`](crate::store::Store::current_job)): the status follows
/// the job (`running` while it is queued or runs, unless the session never ran), the result is
/// that job's own, and the error is why that job failed or was cancelled.
pub fn report(s: &Session, job: Option<&Job>) -> SessionReport {
    let mut session = summary(s);
    if let Some(job) = job {
        let status = match job.status {
            JobStatus::Pending if s.status == SessionStatus::Pending => SessionStatus::Pending,
            JobStatus::Pending | JobStatus::Claimed | JobStatus::Running => SessionStatus::Running,
            JobStatus::Completed => SessionStatus::Finished,
            JobStatus::Failed => SessionStatus::Failed,
            JobStatus::Cancelled => SessionStatus::Cancelled,
        };
        session.status = status.as_str().to_owned();
    }
    let ended = job.filter(|j| j.status.is_terminal());
    let result = ended.filter(|j| j.status == JobStatus::Completed).and_then(|j| {
        // Runs that ended before results were kept per run: the session's last result.
        j.result.clone().or_else(|| s.last_result.clone())
    });
    SessionReport {
        session,
        finished_at: ended.and_then(|j| j.finished_at).map(rfc3339),
        job_id: job.map(|j| j.job_id.clone()),
        job_status: job.map(|j| j.status.as_str().to_owned()),
        error: ended.and_then(|j| j.error.clone()),
        result,
        run_usage: job.map(|j| j.usage),
        tree_root: None,
        tree_usage: None,
    }
}

/// `report` with the usage of its session's tree.
pub(crate) fn with_tree(mut report: SessionReport, tree: TreeUsage) -> SessionReport {
    if let Some(root) = tree.root_session_name {
        report.tree_root = Some(root);
        report.tree_usage = Some(tree.usage);
    }
    report
}
