//! What OAuth for an MCP server can fail with.

use std::time::Duration;

use rmcp::transport::auth::AuthError;

/// Why authorizing with an MCP server's authorization server failed. No variant carries a
/// credential: codes, tokens, verifiers and secrets never reach an error's text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// Discovery, client registration, the token exchange or a refresh failed (rmcp's error).
    #[error("OAuth: {0}")]
    Auth(#[source] AuthError),
    /// The host's authorization step failed (no browser, the page was closed...).
    #[error("the authorization step failed: {message}")]
    Authorization {
        /// What happened.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The authorization server sent the user back with an error (`access_denied`...).
    #[error("the authorization server refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The `error` parameter of the redirect.
        error: String,
        /// Its `error_description`, if any.
        description: Option<String>,
    },
    /// A redirect without a `code` (or without a `state`) came back.
    #[error("the authorization redirect carries no `{0}`")]
    MissingParameter(&'static str),
    /// Nothing came back in time.
    #[error("no authorization redirect within {0:?}")]
    Timeout(Duration),
    /// The server still refused after this many authorizations for one request.
    #[error("the server still refuses after {attempts} authorizations{}", scope.as_deref().map(|s| format!(" (it asks for scope `{s}`)")).unwrap_or_default())]
    TooManyAuthorizations {
        /// Authorizations made for the request.
        attempts: u32,
        /// The scope the server asked for last, if it said.
        scope: Option<String>,
    },
    /// The token store failed.
    #[error("token store: {message}")]
    Store {
        /// What failed.
        message: String,
        /// The I/O or format error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The loopback redirect listener could not bind, accept or read.
    #[error("loopback redirect listener: {message}")]
    Listener {
        /// What failed.
        message: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The server's URL cannot be used for OAuth.
    #[error("`{url}` cannot be used for OAuth")]
    Url {
        /// The URL.
        url: String,
    },
}

impl OAuthError {
    /// An error of the host's authorization step.
    pub fn authorization(message: impl Into<String>) -> Self {
        Self::Authorization {
            message: message.into(),
            source: None,
        }
    }

    /// A token store error.
    pub fn store(message: impl Into<String>, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Store {
            message: message.into(),
            source: Some(source.into()),
        }
    }
}

impl From<AuthError> for OAuthError {
    fn from(error: AuthError) -> Self {
        Self::Auth(error)
    }
}
