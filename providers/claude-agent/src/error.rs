//! This crate's errors, converted into core's [`ProviderError`] at the boundary.

use patchbay_core::{ErrorKind, ProviderError};

/// The provider's registry name.
pub const PROVIDER: &str = "claude-agent";

/// What can go wrong driving the CLI.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No CLI was found where it was looked for.
    #[error("the Claude Code CLI was not found (looked in: {looked})")]
    CliNotFound {
        /// Where it looked.
        looked: String,
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
    /// An I/O failure talking to the CLI.
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
    /// Options could not be read.
    #[error("invalid claude-agent options: {0}")]
    Options(String),
}

impl From<Error> for ProviderError {
    fn from(error: Error) -> Self {
        let kind = match &error {
            Error::CliNotFound { .. } | Error::Options(_) => ErrorKind::Config,
            Error::Spawn { .. } | Error::Io { .. } => ErrorKind::Process,
            Error::LineTooLong { .. } | Error::BadLine { .. } => ErrorKind::Protocol,
        };
        let message = error.to_string();
        let mut out = ProviderError::new(kind, message).with_provider(PROVIDER);
        if matches!(error, Error::LineTooLong { .. }) {
            out = out.with_limit(patchbay_core::Limit::LineLength);
        }
        out.with_source(error)
    }
}
