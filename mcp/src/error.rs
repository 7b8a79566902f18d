//! The crate's error type.

use std::time::Duration;

use patchbay_core::{ErrorKind, ProviderError};

/// What went wrong connecting to, calling or serving MCP.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A server's configuration cannot be used (a header that is not valid HTTP, say).
    #[error("MCP server `{server}`: invalid configuration: {message}")]
    Config {
        /// The server's configured name.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// The stdio server's command could not be started.
    #[error("MCP server `{server}`: cannot start `{command}`")]
    Spawn {
        /// The server's configured name.
        server: String,
        /// The program.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The MCP handshake failed (connection refused, bad answer, process exited...).
    #[error("MCP server `{server}`: handshake failed{}", stderr_note(.stderr))]
    Handshake {
        /// The server's configured name.
        server: String,
        /// The last lines the child wrote to stderr, for stdio servers.
        stderr: Option<String>,
        /// The rmcp error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server refused the request's credentials (HTTP 401 or 403).
    #[error("MCP server `{server}`: authorization refused (HTTP 401/403); check the Authorization header")]
    Unauthorized {
        /// The server's configured name.
        server: String,
    },
    /// Authorizing with the server's authorization server failed (OAuth).
    #[error("MCP server `{server}`: OAuth authorization failed")]
    OAuth {
        /// The server's configured name.
        server: String,
        /// What failed (boxed: rmcp's OAuth error is large).
        #[source]
        source: Box<crate::oauth::error::OAuthError>,
    },
    /// Listing the server's tools failed.
    #[error("MCP server `{server}`: tools/list failed")]
    ListTools {
        /// The server's configured name.
        server: String,
        /// The rmcp error (boxed: its size grows with serde_json's `preserve_order`, which
        /// the ACP SDK turns on for the whole build).
        #[source]
        source: Box<rmcp::ServiceError>,
    },
    /// Connecting (handshake plus tool listing) took longer than the timeout.
    #[error("MCP server `{server}`: no answer within {timeout:?}{}", stderr_note(.stderr))]
    Timeout {
        /// The server's configured name.
        server: String,
        /// The timeout that ran out.
        timeout: Duration,
        /// The last lines the child wrote to stderr, for stdio servers.
        stderr: Option<String>,
    },
    /// The caller cancelled while connecting.
    #[error("MCP server `{server}`: cancelled while connecting")]
    Cancelled {
        /// The server's configured name.
        server: String,
    },
    /// The tool server could not bind or serve.
    #[error("MCP tool server: {message}")]
    Serve {
        /// What failed.
        message: String,
        /// The I/O error, if any.
        #[source]
        source: Option<std::io::Error>,
    },
    /// A tool's request to its MCP caller (elicitation, sampling) failed or cannot be made.
    #[error("MCP caller: {message}")]
    Caller {
        /// What failed.
        message: String,
    },
}

fn stderr_note(stderr: &Option<String>) -> String {
    match stderr {
        Some(tail) if !tail.is_empty() => format!(" (stderr: {tail})"),
        _ => String::new(),
    }
}

impl Error {
    pub(crate) fn caller(message: impl Into<String>) -> Self {
        Self::Caller {
            message: message.into(),
        }
    }

    /// The configured name of the server this error is about, if any.
    pub fn server(&self) -> Option<&str> {
        match self {
            Self::Config { server, .. }
            | Self::Spawn { server, .. }
            | Self::Handshake { server, .. }
            | Self::Unauthorized { server }
            | Self::OAuth { server, .. }
            | Self::ListTools { server, .. }
            | Self::Timeout { server, .. }
            | Self::Cancelled { server } => Some(server),
            Self::Serve { .. } | Self::Caller { .. } => None,
        }
    }
}

impl From<Error> for ProviderError {
    fn from(error: Error) -> Self {
        let kind = match &error {
            Error::Config { .. } => ErrorKind::Config,
            Error::Cancelled { .. } => return ProviderError::cancelled(),
            _ => ErrorKind::Transport,
        };
        ProviderError::new(kind, error.to_string()).with_source(error)
    }
}
