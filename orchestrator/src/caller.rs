//! How a call names its caller's own session: over MCP, HTTP and in a run's environment.

/// The metadata key (and MCP header) naming the caller's own session.
pub const CALLER_METADATA_KEY: &str = "agent_session_name";
/// The HTTP header naming the caller's own session.
pub const CALLER_HEADER: &str = "x-agent-session-name";
/// The environment variable naming the caller's own session (stdio), and every run's own.
pub const CALLER_ENV: &str = "AGENT_SESSION_NAME";
