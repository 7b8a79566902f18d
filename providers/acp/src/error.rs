//! This crate's one error type, converted into core's [`ProviderError`] at the boundary.

use patchbay_core::kit::OptionsError;
use patchbay_core::{ErrorKind, ProviderError};

use crate::NAME;

/// What configuring, starting and talking to an ACP agent can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An environment variable read by [`AcpConfig::from_env`](crate::AcpConfig::from_env) is
    /// set but cannot be used. Names the variable, never quotes its value.
    #[error("the environment variable `{name}` is {reason}")]
    Env {
        /// The variable.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The registry options could not be read: an unknown key, a wrong type, not an object.
    /// The source names the key and quotes no value.
    #[error("invalid acp options: {source}")]
    Options {
        /// The key at fault and what is wrong, values redacted.
        #[source]
        source: OptionsError,
    },
    /// A configuration value the agent cannot be started with (checked before any process runs).
    #[error("invalid acp configuration `{field}`: {reason}")]
    Invalid {
        /// The [`AcpConfig`](crate::AcpConfig) field (the option of the same name).
        field: &'static str,
        /// What is wrong with it (the value is not quoted).
        reason: &'static str,
    },
    /// The agent's program was not found where it was looked for.
    #[error("the ACP agent `{program}` was not found (looked in: {looked})")]
    AgentNotFound {
        /// The program asked for.
        program: String,
        /// Where it looked.
        looked: String,
    },
    /// patchbay-mcp's HTTP tool server (host tools) did not start.
    #[error("the MCP tool server for host tools did not start")]
    ToolServer {
        /// Why.
        #[source]
        source: patchbay_mcp::Error,
    },
    /// The agent could not be started.
    #[error("cannot start the ACP agent `{program}`")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An I/O failure preparing the agent's files.
    #[error("I/O error while {what}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The agent did not answer `initialize` (or `session/new`) in time.
    #[error("the ACP agent did not answer `{method}` within {seconds} s")]
    Timeout {
        /// The request.
        method: &'static str,
        /// The limit.
        seconds: u64,
    },
    /// The agent answered a request with a JSON-RPC error.
    #[error("the ACP agent refused `{method}`: {message} (code {code})")]
    Refused {
        /// The request.
        method: &'static str,
        /// The JSON-RPC error code.
        code: i32,
        /// The agent's message.
        message: String,
    },
    /// The agent went away (its process exited, or it closed stdout) before the turn ended.
    #[error("the ACP agent exited before the turn ended{status}{tail}")]
    Exited {
        /// `: exit status N`, or empty.
        status: String,
        /// The last lines it wrote to stderr, or empty.
        tail: String,
    },
    /// A line from the agent exceeded the configured limit.
    #[error("a line from the ACP agent exceeded the limit of {limit} bytes (limit max_line_bytes)")]
    LineTooLong {
        /// The limit.
        limit: usize,
    },
    /// The agent broke the protocol (a line that is not JSON-RPC, an answer that does not parse).
    #[error("the ACP agent broke the protocol: {message}")]
    Protocol {
        /// What was wrong (no payload quoted beyond a short head).
        message: String,
    },
}

impl From<Error> for ProviderError {
    fn from(error: Error) -> Self {
        let kind = match &error {
            Error::Env { .. }
            | Error::Options { .. }
            | Error::Invalid { .. }
            | Error::AgentNotFound { .. }
            | Error::ToolServer { .. } => ErrorKind::Config,
            Error::Spawn { .. } | Error::Io { .. } | Error::Exited { .. } => ErrorKind::Process,
            Error::Timeout { .. } => ErrorKind::Process,
            Error::Refused { code, .. } => refused_kind(*code),
            Error::LineTooLong { .. } | Error::Protocol { .. } => ErrorKind::Protocol,
        };
        let message = error.to_string();
        let mut out = ProviderError::new(kind, message).with_provider(NAME);
        if matches!(error, Error::LineTooLong { .. }) {
            out = out.with_limit(patchbay_core::Limit::LineLength);
        }
        out.with_source(error)
    }
}

/// The kind of a JSON-RPC error the agent answered with: ACP's `auth_required` (-32000) is
/// `Auth`, invalid params or request `InvalidRequest`, the rest `Server`.
fn refused_kind(code: i32) -> ErrorKind {
    match code {
        -32000 => ErrorKind::Auth,
        -32602 | -32600 => ErrorKind::InvalidRequest,
        _ => ErrorKind::Server,
    }
}
