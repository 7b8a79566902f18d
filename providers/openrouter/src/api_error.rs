//! Error answers of the API: OpenAI-style error objects and non-2xx bodies mapped to typed
//! [`ProviderError`]s (kind from a known code, a numeric code, or the HTTP status).

use patchbay_core::kit::{ErrorResponse, kind_for_status};
use patchbay_core::{ErrorKind, ProviderError};
use serde_json::Value;

use crate::NAME;
use crate::wire::ErrorBody;

/// The kind for an error code or type string, if it is one we know.
fn kind_for_code(code: &str) -> Option<ErrorKind> {
    let kind = match code {
        "rate_limit_exceeded" | "rate_limit_error" | "too_many_requests" | "rate_limited" => ErrorKind::RateLimited,
        "overloaded_error" | "overloaded" | "server_overloaded" | "service_unavailable" | "engine_overloaded" => {
            ErrorKind::Overloaded
        }
        "context_length_exceeded" | "context_too_long" | "request_too_large" => ErrorKind::ContextTooLong,
        "invalid_api_key" | "authentication_error" | "permission_error" | "unauthorized" | "insufficient_quota" => {
            ErrorKind::Auth
        }
        "invalid_request_error" | "invalid_request" | "not_found_error" | "model_not_found" | "bad_request" => {
            ErrorKind::InvalidRequest
        }
        "server_error" | "api_error" | "internal_error" | "internal_server_error" => ErrorKind::Server,
        _ => return None,
    };
    Some(kind)
}

fn numeric(code: &Value) -> Option<u16> {
    match code {
        Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .filter(|n| (400..=599).contains(n))
}

/// Build a typed error from an OpenAI-style `error` object (`{"message", "type", "code"}`).
/// The kind comes from a known code or type string, else a numeric code (OpenRouter sends
/// HTTP-like numbers), else the HTTP status, else [`ErrorKind::Server`].
pub(crate) fn from_error_object(error: &Value, status: Option<u16>) -> ProviderError {
    let (message, kind_str, code) = match error {
        Value::String(message) => (message.clone(), None, None),
        Value::Object(map) => (
            map.get("message")
                .and_then(Value::as_str)
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
    let mut out = ProviderError::new(kind, message).with_provider(NAME);
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

/// Build a typed error from a non-2xx HTTP answer.
pub(crate) fn from_http(response: ErrorResponse<'_>) -> ProviderError {
    let (status, body) = (response.status, response.body);
    let parsed: Option<ErrorBody<'_>> = serde_json::from_slice(body).ok();
    let mut error = match parsed {
        Some(ErrorBody { error: Some(error), .. }) => {
            let value = serde_json::json!({
                "message": error.message.as_deref().unwrap_or("the server reported an error"),
                "type": error.kind.as_deref(),
                "code": error.code,
            });
            from_error_object(&value, Some(status))
        }
        Some(ErrorBody {
            message: Some(message), ..
        }) => ProviderError::new(kind_for_status(status), message.0.into_owned())
            .with_provider(NAME)
            .with_status(status),
        _ => {
            let text = String::from_utf8_lossy(&body[..body.len().min(512)]).trim().to_string();
            let message = if text.is_empty() {
                format!("HTTP {status}")
            } else {
                text
            };
            ProviderError::new(kind_for_status(status), message)
                .with_provider(NAME)
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
