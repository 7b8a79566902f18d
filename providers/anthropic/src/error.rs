//! This crate's [`Error`] (configuration and setup), and Anthropic errors (HTTP statuses, error
//! bodies, `error` stream events) as patchbay kinds.

use patchbay_core::kit::{ErrorResponse, OptionsError, kind_for_status};
use patchbay_core::{ErrorKind, ProviderError};
use serde::Deserialize;

use crate::NAME;
use crate::wire::WireError;

/// The error of parsing a URL (`url::ParseError`, which reqwest does not re-export).
type UrlError = <reqwest::Url as std::str::FromStr>::Err;

/// What configuring and setting up the provider can fail with. Converts into a
/// [`ProviderError`] of kind `Config` (provider [`NAME`], this error as its source). No variant
/// shows a key, a header value, URL credentials or an option's value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An environment variable is set but cannot be used (not Unicode). Names the variable,
    /// never quotes its value (it may be a key).
    #[error("the environment variable `{name}` is {reason}")]
    Env {
        /// The variable.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The registry options cannot be read: not a JSON object (nor `null`), an unknown key, a
    /// value of the wrong type. The source names the key ([`OptionsError::key`]) and quotes no
    /// value (a value may be a key).
    #[error("invalid anthropic options: {source}")]
    Options {
        /// The key at fault and what is wrong, values redacted.
        #[source]
        source: OptionsError,
    },
    /// No credentials for the public API.
    #[error("no Anthropic API key: set ANTHROPIC_API_KEY or pass one in the config")]
    MissingKey,
    /// The base URL does not parse. The value is not shown: it may be a key pasted into the
    /// wrong field.
    #[error("the Anthropic base URL from {origin} does not parse")]
    BaseUrl {
        /// Where it came from (`ANTHROPIC_BASE_URL`, the `base_url` option, the config).
        origin: &'static str,
        /// Why it does not parse.
        #[source]
        source: UrlError,
    },
    /// A configured header HTTP does not allow: its name, or its value (which is never shown).
    #[error("the header `{name}` is not valid HTTP (its name or its value)")]
    Header {
        /// The header's name.
        name: String,
    },
    /// The HTTP client cannot be built (TLS setup...).
    #[error("cannot build the HTTP client")]
    Client {
        /// reqwest's error.
        #[source]
        source: reqwest::Error,
    },
}

impl From<Error> for ProviderError {
    fn from(error: Error) -> Self {
        ProviderError::config(error.to_string())
            .with_provider(NAME)
            .with_source(error)
    }
}

/// The patchbay kind of an Anthropic error type (`overloaded_error`...), if it names one.
///
/// `invalid_request_error` whose message says the prompt is too long becomes
/// [`ErrorKind::ContextTooLong`].
pub fn kind_for_error_type(error_type: &str, message: &str) -> Option<ErrorKind> {
    Some(match error_type {
        "overloaded_error" => ErrorKind::Overloaded,
        "rate_limit_error" => ErrorKind::RateLimited,
        "authentication_error" | "permission_error" => ErrorKind::Auth,
        "request_too_large" => ErrorKind::ContextTooLong,
        "invalid_request_error" if message.contains("prompt is too long") => ErrorKind::ContextTooLong,
        "invalid_request_error" | "not_found_error" | "billing_error" => ErrorKind::InvalidRequest,
        "timeout_error" => ErrorKind::Transport,
        "api_error" => ErrorKind::Server,
        _ => return None,
    })
}

/// The typed error of an `error` stream event.
pub(crate) fn stream_error(error: Option<&WireError<'_>>, request_id: Option<&str>) -> ProviderError {
    let error_type = error.and_then(|e| e.kind.as_deref()).unwrap_or("unknown_error");
    let message = error
        .and_then(|e| e.message.as_deref())
        .unwrap_or("the stream reported an error");
    let kind = kind_for_error_type(error_type, message).unwrap_or(ErrorKind::Server);
    let mut out = ProviderError::new(kind, message)
        .with_provider(NAME)
        .with_provider_code(error_type);
    if let Some(id) = request_id {
        out = out.with_request_id(id);
    }
    out
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(default, borrow)]
    error: Option<WireError<'a>>,
    #[serde(default, borrow)]
    request_id: Option<std::borrow::Cow<'a, str>>,
}

/// The error for an HTTP error response: kind from the body's error type when it names one,
/// else from the status; request id, `retry-after` and the provider's code attached.
pub fn http_error(response: ErrorResponse<'_>) -> ProviderError {
    let (status, body) = (response.status, response.body);
    let parsed: Option<ErrorBody<'_>> = serde_json::from_slice(body).ok();
    let wire = parsed.as_ref().and_then(|b| b.error.as_ref());
    let error_type = wire.and_then(|e| e.kind.as_deref());
    let message = match wire.and_then(|e| e.message.as_deref()) {
        Some(message) => message.to_string(),
        None => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            if text.is_empty() {
                format!("HTTP {status}")
            } else {
                text.chars().take(500).collect()
            }
        }
    };
    let kind = error_type
        .and_then(|t| kind_for_error_type(t, &message))
        .unwrap_or_else(|| kind_for_status(status));
    let mut error = ProviderError::new(kind, message)
        .with_provider(NAME)
        .with_status(status);
    if let Some(code) = error_type {
        error = error.with_provider_code(code);
    }
    let id = response.request_id().or_else(|| {
        parsed
            .as_ref()
            .and_then(|b| b.request_id.as_deref().map(str::to_string))
    });
    if let Some(id) = id {
        error = error.with_request_id(id);
    }
    if let Some(wait) = response.retry_after() {
        error = error.with_retry_after(wait);
    }
    error
}
