//! What can go wrong in a service call, with the HTTP status each maps to.

use crate::names::NameError;
use crate::store::StoreError;

/// Why a service call was refused or failed. The message is written for the calling agent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OrchestratorError {
    /// A session name breaks the rule.
    #[error(transparent)]
    InvalidName(#[from] NameError),
    /// Some other input is wrong (an empty prompt, a missing project folder, bad JSON...).
    #[error("{0}")]
    Invalid(String),
    /// No blueprint has this name.
    #[error("no agent blueprint named `{0}`: list_agent_blueprints shows the ones there are")]
    UnknownBlueprint(String),
    /// The blueprint is retired.
    #[error("the agent blueprint `{0}` is retired: new sessions cannot start on it")]
    RetiredBlueprint(String),
    /// A session with the name exists.
    #[error("a session named `{0}` already exists: resume it with resume_agent_session, or pick another name")]
    SessionExists(String),
    /// No session has this name (or id).
    #[error("no session named `{0}`: start it with start_agent_session first")]
    SessionNotFound(String),
    /// No job has this id.
    #[error("no job `{0}`")]
    JobNotFound(String),
    /// The calling session (the `X-Agent-Session-Name` header, `AGENT_SESSION_NAME`, or the
    /// API's `parent_session_name`) is not a session of this orchestrator.
    #[error(
        "the calling session `{0}` (X-Agent-Session-Name, AGENT_SESSION_NAME or parent_session_name) is not a \
         session of this orchestrator: leave it out, or name a session that exists"
    )]
    UnknownCaller(String),
    /// `callback: true` with no calling session of this orchestrator to resume.
    #[error(
        "callback: true needs a calling session of this orchestrator to resume with the result, and this call \
         names none (X-Agent-Session-Name, AGENT_SESSION_NAME or parent_session_name): leave callback out and \
         wait with get_agent_session_status and wait_seconds instead"
    )]
    NoCallbackTarget,
    /// The resume would make a session its own parent or ancestor, or wait for itself.
    #[error("{0}")]
    Cycle(String),
    /// A limit on starts was reached (depth of the parent chain, children per parent).
    #[error("{0}")]
    LimitReached(String),
    /// A `project_dir` outside the projects root.
    #[error("project_dir `{dir}` is outside the projects root `{root}` (--projects-root): pick a folder inside it")]
    OutsideRoot {
        /// The folder asked for, resolved.
        dir: String,
        /// The projects root.
        root: String,
    },
    /// A job that has ended cannot change.
    #[error("job `{job_id}` has already ended ({status})")]
    JobEnded {
        /// The job.
        job_id: String,
        /// Its final status.
        status: String,
    },
    /// A cancel of a session with no run queued or in progress.
    #[error("session `{0}` has no run queued or in progress to cancel")]
    NothingToCancel(String),
    /// The session still has a run queued or in progress.
    #[error(
        "session `{session_name}` is still running (status {status}): wait with get_agent_session_status \
         and wait_seconds, then ask again"
    )]
    StillRunning {
        /// The session.
        session_name: String,
        /// Its status.
        status: String,
    },
    /// A run's scoped token asked for what it does not reach: deleting every session, or
    /// anything once its own session is gone (see [`crate::scope`]). A session outside its
    /// scope is [`OrchestratorError::SessionNotFound`] instead.
    #[error("{0}")]
    OutOfScope(String),
    /// The orchestrator is shutting down.
    #[error("the orchestrator is shutting down and takes no new runs")]
    ShuttingDown,
    /// The store failed.
    #[error("storage error: {0}")]
    Store(StoreError),
}

impl From<StoreError> for OrchestratorError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::SessionExists(name) => Self::SessionExists(name),
            StoreError::SessionNotFound(name) => Self::SessionNotFound(name),
            StoreError::JobNotFound(id) => Self::JobNotFound(id),
            StoreError::InvalidTransition { job_id, from, .. } => Self::JobEnded {
                job_id,
                status: from.as_str().to_owned(),
            },
            other => Self::Store(other),
        }
    }
}

impl OrchestratorError {
    /// The HTTP status of this error: 4xx for what the caller can fix, 503 while shutting
    /// down, 500 for storage failures.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::InvalidName(_) | Self::Invalid(_) | Self::NoCallbackTarget | Self::OutsideRoot { .. } => 400,
            Self::UnknownBlueprint(_) | Self::SessionNotFound(_) | Self::JobNotFound(_) | Self::UnknownCaller(_) => 404,
            Self::Cycle(_) | Self::LimitReached(_) => 409,
            Self::RetiredBlueprint(_)
            | Self::SessionExists(_)
            | Self::JobEnded { .. }
            | Self::StillRunning { .. }
            | Self::NothingToCancel(_) => 409,
            Self::OutOfScope(_) => 403,
            Self::ShuttingDown => 503,
            Self::Store(_) => 500,
        }
    }

    /// A short machine-readable code (`session_not_found`...), for JSON error bodies.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidName(_) => "invalid_name",
            Self::Invalid(_) => "invalid_request",
            Self::UnknownBlueprint(_) => "blueprint_not_found",
            Self::RetiredBlueprint(_) => "blueprint_retired",
            Self::SessionExists(_) => "session_exists",
            Self::SessionNotFound(_) => "session_not_found",
            Self::JobNotFound(_) => "job_not_found",
            Self::UnknownCaller(_) => "caller_not_found",
            Self::NoCallbackTarget => "no_callback_target",
            Self::Cycle(_) => "cycle",
            Self::LimitReached(_) => "limit_reached",
            Self::OutsideRoot { .. } => "outside_projects_root",
            Self::JobEnded { .. } => "job_ended",
            Self::StillRunning { .. } => "still_running",
            Self::NothingToCancel(_) => "nothing_to_cancel",
            Self::OutOfScope(_) => "out_of_scope",
            Self::ShuttingDown => "shutting_down",
            Self::Store(_) => "storage_error",
        }
    }
}
