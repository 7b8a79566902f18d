//! The OpenAI error family: the `{"error": {"message", "type", "param", "code"}}` objects that
//! OpenAI's APIs (Chat Completions and Responses) and every server imitating them send, in an
//! error body or inside a stream, as typed [`ProviderError`]s.

use serde_json::Value;

use crate::kit::{ErrorResponse, kind_for_status};
use crate::{ErrorKind, ProviderError};

/// The kind for an error code or type string of the family, if it is one we know.
fn kind_for_code(code: &str) -> Option<ErrorKind> {
    let kind = match code {
        "rate_limit_exceeded" | "rate_limit_error" | "too_many_requests" | "rate_limited" => ErrorKind::RateLimited,
        "overloaded_error"
        | "overloaded"
        | "server_overloaded"
        | "server_is_overloaded"
        | "service_unavailable"
        | "engine_overloaded"
        | "slow_down" => ErrorKind::Overloaded,
        "context_length_exceeded" | "context_too_long" | "request_too_large" => ErrorKind::ContextTooLong,
        "invalid_api_key" | "authentication_error" | "permission_error" | "unauthorized" | "insufficient_quota" => {
            ErrorKind::Auth
        }
        "invalid_request_error"
        | "invalid_request"
        | "not_found_error"
        | "model_not_found"
        | "bad_request"
        | "invalid_prompt" => ErrorKind::InvalidRequest,
        "server_error" | "api_error" | "internal_error" | "internal_server_error" => ErrorKind::Server,
        _ => return None,
    };
    Some(kind)
}

/// An HTTP-like number in a `code` (OpenRouter sends them).
fn numeric(code: &Value) -> Option<u16> {
    match code {
        Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .filter(|n| (400..=599).contains(n))
}

/// A typed error from an OpenAI-style `error` object (`{"message", "type", "code"}`, or a bare
/// message string) of `provider`. The kind comes from a known code or type string, else a
/// numeric code, else the HTTP status, else [`ErrorKind::Server`]; the code (else the type) is
/// the provider code.
///
/// ```
/// use patchbay_core::ErrorKind;
/// use patchbay_core::kit::openai_error;
/// let error = openai_error(&serde_json::json!({"message": "slow down", "code": "rate_limit_exceeded"}), None, "openai");
/// assert_eq!(error.kind(), ErrorKind::RateLimited);
/// assert_eq!(error.facts().provider_code.as_deref(), Some("rate_limit_exceeded"));
/// ```
pub fn openai_error(error: &Value, status: Option<u16>, provider: &str) -> ProviderError {
    let (message, kind_str, code) = match error {
        Value::String(message) => (message.clone(), None, None),
        Value::Object(map) => (
            map.get("message")
                .and_then(Value::as_str)
                .filter(|message| !message.is_empty())
                .unwrap_or("the server reported an error")
                .to_string(),
            map.get("type").and_then(Value::as_str),
            map.get("code"),
        ),
        _ => ("the server reported an error".to_string(), None, None),
    };
    let code_str = code.and_then(Value::as_str);
    let kind = code_str
        .and_then(kind_for_code)
        .or_else(|| kind_str.and_then(kind_for_code))
        .or_else(|| code.and_then(numeric).map(kind_for_status))
        .or_else(|| status.map(kind_for_status))
        .unwrap_or(ErrorKind::Server);
    let mut out = ProviderError::new(kind, message).with_provider(provider);
    if let Some(status) = status {
        out = out.with_status(status);
    }
    let provider_code = code_str
        .map(str::to_string)
        .or_else(|| kind_str.map(str::to_string))
        .or_else(|| code.filter(|c| !c.is_null()).map(ToString::to_string));
    if let Some(code) = provider_code {
        out = out.with_provider_code(code);
    }
    out
}

/// A typed error from a non-2xx answer of the family: `{"error": ..}` as [`openai_error`],
/// `{"message": ".."}` or any other body by its status (its first 512 bytes as the message),
/// with the request id and the `retry-after` wait.
pub fn openai_http_error(response: ErrorResponse<'_>, provider: &str) -> ProviderError {
    let (status, body) = (response.status, response.body);
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|body| body.get("message"))
        .and_then(Value::as_str);
    let mut error = match (parsed.as_ref().and_then(|body| body.get("error")), message) {
        (Some(object), _) if !object.is_null() => openai_error(object, Some(status), provider),
        (_, Some(message)) => ProviderError::new(kind_for_status(status), message)
            .with_provider(provider)
            .with_status(status),
        _ => {
            let text = String::from_utf8_lossy(&body[..body.len().min(512)]).trim().to_string();
            let message = if text.is_empty() {
                format!("HTTP {status}")
            } else {
                text
            };
            ProviderError::new(kind_for_status(status), message)
                .with_provider(provider)
                .with_status(status)
        }
    };
    if let Some(id) = response.request_id() {
        error = error.with_request_id(id);
    }
    if let Some(wait) = response.retry_after() {
        error = error.with_retry_after(wait);
    }
    error
}
