//! What a caller asks the service to run: a start or a resume of a session.

/// A request to start a session.
#[derive(Debug, Clone, Default)]
pub struct StartRequest {
    /// The new session's unique name.
    pub session_name: String,
    /// The first prompt.
    pub prompt: String,
    /// The blueprint; `None`: `default`.
    pub blueprint: Option<String>,
    /// The working directory; `None`: the orchestrator's.
    pub project_dir: Option<String>,
    /// Return at once instead of waiting for the run.
    pub async_mode: bool,
    /// Resume the caller with the result when the run ends.
    pub callback: bool,
    /// The caller's own session name, if it is an agent.
    pub caller: Option<String>,
}

/// A request to resume a session.
#[derive(Debug, Clone, Default)]
pub struct ResumeRequest {
    /// The session.
    pub session_name: String,
    /// The next prompt.
    pub prompt: String,
    /// Return at once instead of waiting for the run.
    pub async_mode: bool,
    /// Resume the caller with the result when the run ends.
    pub callback: bool,
    /// The caller's own session name; a different one than stored becomes the new parent.
    pub caller: Option<String>,
}
