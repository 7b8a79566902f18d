//! `ProviderError`: one error type with a kind a host can act on and the facts to diagnose it.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What went wrong, as a host decides what to do about it. Retry decisions come from the
/// kind, never from the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Missing or rejected credentials (HTTP 401/403).
    Auth,
    /// Too many requests (HTTP 429); see [`ProviderError::retry_after`].
    RateLimited,
    /// The provider is overloaded (HTTP 529/503, `overloaded_error`).
    Overloaded,
    /// The request cannot be sent or was rejected as malformed (HTTP 400/404/422).
    InvalidRequest,
    /// The conversation does not fit the model's context window.
    ContextTooLong,
    /// Connection failed, reset or timed out.
    Transport,
    /// The response broke the wire format (bad JSON, a truncated stream, events out of order).
    Protocol,
    /// A child runtime process failed; see [`ProviderError::stderr_tail`].
    Process,
    /// A tool failed in a way that ends the run.
    Tool,
    /// The caller cancelled.
    Cancelled,
    /// The provider is misconfigured (no API key, bad base URL, CLI not found).
    Config,
    /// The provider reported a server-side failure (HTTP 500...).
    Server,
}

impl ErrorKind {
    /// Whether a retry layer should try again (before any event reached the caller).
    pub fn is_retryable(self) -> bool {
        matches!(self, Self::RateLimited | Self::Overloaded | Self::Transport)
    }

    /// The kind's name, as in `Debug`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "Auth",
            Self::RateLimited => "RateLimited",
            Self::Overloaded => "Overloaded",
            Self::InvalidRequest => "InvalidRequest",
            Self::ContextTooLong => "ContextTooLong",
            Self::Transport => "Transport",
            Self::Protocol => "Protocol",
            Self::Process => "Process",
            Self::Tool => "Tool",
            Self::Cancelled => "Cancelled",
            Self::Config => "Config",
            Self::Server => "Server",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of every provider call and stream.
///
/// ```
/// use patchbay_core::{ErrorKind, ProviderError};
/// use std::time::Duration;
/// let err = ProviderError::new(ErrorKind::RateLimited, "slow down")
///     .with_status(429)
///     .with_retry_after(Duration::from_secs(2));
/// assert!(err.kind().is_retryable());
/// assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
/// assert_eq!(err.to_string(), "RateLimited: slow down (HTTP 429)");
/// ```
#[derive(Debug)]
pub struct ProviderError {
    kind: ErrorKind,
    message: String,
    facts: Box<Facts>,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

/// A limit that ended a call: which one tripped, so a host can tell a dead server from a
/// hostile or misconfigured one. Each is configurable where it is set (the provider's config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Limit {
    /// Nothing arrived for too long: no response headers, or no bytes of the body
    /// (`read_timeout`).
    ReadTimeout,
    /// Only keep-alives (SSE comments, `ping` events) arrived for too long, no content event
    /// (`content_timeout`).
    ContentTimeout,
    /// One line or frame of the stream grew past its cap (`max_line_bytes`).
    LineLength,
}

impl Limit {
    /// The limit's configuration name (`read_timeout`, `content_timeout`, `max_line_bytes`...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadTimeout => "read_timeout",
            Self::ContentTimeout => "content_timeout",
            Self::LineLength => "max_line_bytes",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Diagnostic facts attached to an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Facts {
    /// The provider's name.
    pub provider: Option<String>,
    /// HTTP status, when the error came from an HTTP response.
    pub status: Option<u16>,
    /// The provider's request id (`request-id`, `x-request-id`).
    pub request_id: Option<String>,
    /// The provider's own error type (`overloaded_error`...).
    pub provider_code: Option<String>,
    /// How long the provider asked us to wait.
    pub retry_after: Option<Duration>,
    /// The agent turn (step) where it happened.
    pub turn: Option<u32>,
    /// The tool involved.
    pub tool: Option<String>,
    /// The index of the offending message, for invalid requests.
    pub message_index: Option<usize>,
    /// The last lines a child process wrote to stderr.
    pub stderr_tail: Option<String>,
    /// A child process's exit code.
    pub exit_code: Option<i32>,
    /// The limit that ended the call, when one did.
    pub limit: Option<Limit>,
}

impl ProviderError {
    /// An error of `kind` with a human-readable message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            facts: Box::default(),
            source: None,
        }
    }

    /// Shorthand for a [`ErrorKind::Cancelled`] error.
    pub fn cancelled() -> Self {
        Self::new(ErrorKind::Cancelled, "the call was cancelled")
    }

    /// Shorthand for a [`ErrorKind::Protocol`] error.
    pub fn protocol(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Protocol, message)
    }

    /// Shorthand for an [`ErrorKind::InvalidRequest`] error about message `index`.
    pub fn invalid_message(index: usize, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest, message).with_message_index(index)
    }

    /// Shorthand for a [`ErrorKind::Config`] error.
    pub fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config, message)
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The human-readable message, without the facts.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// All diagnostic facts.
    pub fn facts(&self) -> &Facts {
        &self.facts
    }

    /// HTTP status, if any.
    pub fn status(&self) -> Option<u16> {
        self.facts.status
    }

    /// The provider's request id, if any.
    pub fn request_id(&self) -> Option<&str> {
        self.facts.request_id.as_deref()
    }

    /// How long the provider asked us to wait, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.facts.retry_after
    }

    /// The stderr tail of a failed child process, if any.
    pub fn stderr_tail(&self) -> Option<&str> {
        self.facts.stderr_tail.as_deref()
    }

    /// Set the provider name.
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.facts.provider = Some(provider.into());
        self
    }

    /// Set the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.facts.status = Some(status);
        self
    }

    /// Set the provider's request id.
    pub fn with_request_id(mut self, id: impl Into<String>) -> Self {
        self.facts.request_id = Some(id.into());
        self
    }

    /// Set the provider's own error code.
    pub fn with_provider_code(mut self, code: impl Into<String>) -> Self {
        self.facts.provider_code = Some(code.into());
        self
    }

    /// Set the requested wait before a retry.
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.facts.retry_after = Some(wait);
        self
    }

    /// Set the agent turn.
    pub fn with_turn(mut self, turn: u32) -> Self {
        self.facts.turn = Some(turn);
        self
    }

    /// Set the tool involved.
    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.facts.tool = Some(tool.into());
        self
    }

    /// Set the offending message index.
    pub fn with_message_index(mut self, index: usize) -> Self {
        self.facts.message_index = Some(index);
        self
    }

    /// Attach a child process's stderr tail.
    pub fn with_stderr_tail(mut self, tail: impl Into<String>) -> Self {
        self.facts.stderr_tail = Some(tail.into());
        self
    }

    /// Attach a child process's exit code.
    pub fn with_exit_code(mut self, code: i32) -> Self {
        self.facts.exit_code = Some(code);
        self
    }

    /// Record the limit that ended the call.
    pub fn with_limit(mut self, limit: Limit) -> Self {
        self.facts.limit = Some(limit);
        self
    }

    /// The limit that ended the call, when one did.
    pub fn limit(&self) -> Option<Limit> {
        self.facts.limit
    }

    /// Keep the underlying error as the source.
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        let facts = &self.facts;
        if let Some(status) = facts.status {
            write!(f, " (HTTP {status})")?;
        }
        if let Some(code) = &facts.provider_code {
            write!(f, " [{code}]")?;
        }
        if let Some(id) = &facts.request_id {
            write!(f, " [request {id}]")?;
        }
        if let Some(turn) = facts.turn {
            write!(f, " [turn {turn}]")?;
        }
        if let Some(tool) = &facts.tool {
            write!(f, " [tool {tool}]")?;
        }
        if let Some(index) = facts.message_index {
            write!(f, " [message {index}]")?;
        }
        if let Some(code) = facts.exit_code {
            write!(f, " [exit code {code}]")?;
        }
        if let Some(limit) = facts.limit {
            write!(f, " [limit {limit}]")?;
        }
        if let Some(tail) = &facts.stderr_tail {
            write!(f, "\nstderr (last lines):\n{tail}")?;
        }
        Ok(())
    }
}

impl StdError for ProviderError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn StdError + 'static))
    }
}
