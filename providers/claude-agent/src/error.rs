//! This crate's one error type, converted into core's [`ProviderError`] at the boundary.

use patchbay_core::kit::OptionsError;
use patchbay_core::{ErrorKind, ProviderError};

use crate::NAME;

/// What configuring, starting and talking to the CLI can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An environment variable read by [`ClaudeAgentConfig::from_env`](crate::ClaudeAgentConfig::from_env)
    /// is set but cannot be used (not Unicode). Names the variable, never quotes its value.
    #[error("the environment variable `{name}` is {reason}")]
    Env {
        /// The variable.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The registry options could not be read: an unknown key, a wrong type, not an object.
    /// The source names the key ([`OptionsError::key`]) and quotes no value (a value may be a
    /// key). A call's `provider_options("claude-agent")` that cannot be read is no `Error` but an
    /// `InvalidRequest` ([`OptionsError::into_call_error`]), as in every provider crate.
    #[error("invalid claude-agent options: {source}")]
    Options {
        /// The key at fault and what is wrong, values redacted.
        #[source]
        source: OptionsError,
    },
    /// A configuration value the CLI cannot be started with (checked before any process runs).
    #[error("invalid claude-agent configuration `{field}`: {reason}")]
    Invalid {
        /// The [`ClaudeAgentConfig`](crate::ClaudeAgentConfig) field (the option of the same name).
        field: &'static str,
        /// What is wrong with it (the value is not quoted).
        reason: &'static str,
    },
    /// No CLI was found where it was looked for.
    #[error("the Claude Code CLI was not found (looked in: {looked})")]
    CliNotFound {
        /// Where it looked.
        looked: String,
    },
    /// patchbay-mcp's HTTP tool server (host tools over HTTP) did not start.
    #[error("the MCP tool server for host tools did not start")]
    ToolServer {
        /// Why.
        #[source]
        source: patchbay_mcp::Error,
    },
    /// The CLI could not be started.
    #[error("cannot start the Claude Code CLI `{path}`")]
    Spawn {
        /// The program.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An I/O failure talking to the CLI (or writing its files).
    #[error("I/O error while {what}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A stdout line exceeded the configured limit.
    #[error("a line from the CLI exceeded the limit of {limit} bytes (limit max_line_bytes)")]
    LineTooLong {
        /// The limit.
        limit: usize,
    },
    /// A stdout line was not JSON.
    #[error("the CLI wrote a line that is not JSON: {head:?}")]
    BadLine {
        /// The first characters.
        head: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
}

impl From<Error> for ProviderError {
    fn from(error: Error) -> Self {
        let kind = match &error {
            Error::Env { .. }
            | Error::Options { .. }
            | Error::Invalid { .. }
            | Error::CliNotFound { .. }
            | Error::ToolServer { .. } => ErrorKind::Config,
            Error::Spawn { .. } | Error::Io { .. } => ErrorKind::Process,
            Error::LineTooLong { .. } | Error::BadLine { .. } => ErrorKind::Protocol,
        };
        let message = error.to_string();
        let mut out = ProviderError::new(kind, message).with_provider(NAME);
        if matches!(error, Error::LineTooLong { .. }) {
            out = out.with_limit(patchbay_core::Limit::LineLength);
        }
        out.with_source(error)
    }
}
