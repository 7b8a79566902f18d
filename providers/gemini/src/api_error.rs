//! Google's errors (`google.rpc.Status`: `{"error": {"code", "message", "status", "details"}}`)
//! as typed [`ProviderError`]s, with the status name as the provider code, `RetryInfo`'s delay
//! as the wait the retry layer honours, and the whole status kept as [`ApiError`], the error's
//! source (its `QuotaFailure`, `ErrorInfo` and other details).

use std::fmt;
use std::time::Duration;

use patchbay_core::kit::{ErrorResponse, kind_for_status};
use patchbay_core::{ErrorKind, ProviderError};
use serde_json::Value;

use crate::NAME;

/// The longest `retryDelay` taken as given: a day.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(86_400);

/// A Google API error as the server sent it (`google.rpc.Status`), the `source` of the
/// [`ProviderError`] it became: `error.source().downcast_ref::<ApiError>()`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApiError {
    /// The HTTP-like `code` (429, 400...).
    pub code: Option<u16>,
    /// The canonical status name (`RESOURCE_EXHAUSTED`, `INVALID_ARGUMENT`...).
    pub status: Option<String>,
    /// The message.
    pub message: String,
    /// The `details` as sent (`type.googleapis.com/google.rpc.RetryInfo`, `QuotaFailure`,
    /// `ErrorInfo`, `Help`...).
    pub details: Vec<Value>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.status {
            Some(status) => write!(f, "{status}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ApiError {}

impl ApiError {
    /// The details of one `google.rpc` type (`"QuotaFailure"`, `"RetryInfo"`, `"ErrorInfo"`...).
    pub fn details_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.details.iter().filter(move |detail| {
            detail
                .get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.rsplit('.').next() == Some(kind))
        })
    }

    /// The wait `RetryInfo.retryDelay` asks for (`"37s"`, `"1.5s"`), at most a day.
    pub fn retry_delay(&self) -> Option<Duration> {
        let delay = self.details_of("RetryInfo").find_map(|d| d.get("retryDelay"))?;
        parse_duration(delay)
    }

    /// The violations of every `QuotaFailure` detail (`quotaMetric`, `quotaId`,
    /// `quotaDimensions`, `quotaValue`...), as sent.
    pub fn quota_violations(&self) -> Vec<&Value> {
        self.details_of("QuotaFailure")
            .filter_map(|d| d.get("violations").and_then(Value::as_array))
            .flatten()
            .collect()
    }

    /// `ErrorInfo.reason` (`API_KEY_INVALID`, `RATE_LIMIT_EXCEEDED`...), if sent.
    pub fn reason(&self) -> Option<&str> {
        self.details_of("ErrorInfo")
            .find_map(|d| d.get("reason"))
            .and_then(Value::as_str)
    }
}

/// A protobuf JSON `Duration`: `"37s"`, `"1.5s"`, or `{"seconds": 37, "nanos": 0}`.
fn parse_duration(value: &Value) -> Option<Duration> {
    let seconds = match value {
        Value::String(text) => text.trim().strip_suffix('s')?.parse::<f64>().ok()?,
        Value::Object(map) => {
            let seconds = map
                .get("seconds")
                .and_then(|s| s.as_f64().or_else(|| s.as_str()?.parse().ok()))?;
            seconds + map.get("nanos").and_then(Value::as_f64).unwrap_or(0.0) / 1e9
        }
        _ => return None,
    };
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds).min(MAX_RETRY_DELAY))
}

/// The kind for a canonical status name, and for a message that says the prompt is too long.
fn kind_for(status: Option<&str>, code: Option<u16>, message: &str) -> ErrorKind {
    let too_long = message.contains("exceeds the maximum number of tokens")
        || message.contains("input token count")
        || message.contains("context length");
    match status {
        Some("RESOURCE_EXHAUSTED") => ErrorKind::RateLimited,
        Some("UNAVAILABLE") => ErrorKind::Overloaded,
        Some("UNAUTHENTICATED" | "PERMISSION_DENIED") => ErrorKind::Auth,
        Some("INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE") if too_long => ErrorKind::ContextTooLong,
        Some("INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" | "NOT_FOUND" | "ALREADY_EXISTS") => {
            ErrorKind::InvalidRequest
        }
        Some("DEADLINE_EXCEEDED" | "INTERNAL" | "UNKNOWN" | "DATA_LOSS" | "ABORTED" | "CANCELLED") => ErrorKind::Server,
        _ => match code {
            Some(code) if (400..=599).contains(&code) => kind_for_status(code),
            _ => ErrorKind::Server,
        },
    }
}

/// A typed error from an `error` object (in an HTTP error body or inside the stream).
pub(crate) fn from_error_object(error: &Value, http_status: Option<u16>) -> ProviderError {
    let api = ApiError {
        code: error
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok()),
        status: error.get("status").and_then(Value::as_str).map(str::to_string),
        message: match error {
            Value::String(text) => text.clone(),
            _ => error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the server reported an error")
                .to_string(),
        },
        details: error
            .get("details")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    };
    let kind = kind_for(api.status.as_deref(), api.code.or(http_status), &api.message);
    let mut out = ProviderError::new(kind, api.message.clone()).with_provider(NAME);
    if let Some(status) = http_status.or(api.code.filter(|c| (400..=599).contains(c))) {
        out = out.with_status(status);
    }
    if let Some(status) = &api.status {
        out = out.with_provider_code(status.clone());
    }
    if let Some(wait) = api.retry_delay() {
        out = out.with_retry_after(wait);
    }
    out.with_source(api)
}

/// A typed error from an HTTP error answer: Google's status object (also inside a one-element
/// array, as the non-SSE stream sends it), else the body's start by the HTTP status.
pub(crate) fn from_http(response: ErrorResponse<'_>) -> ProviderError {
    let parsed: Option<Value> = serde_json::from_slice(response.body).ok();
    let object = parsed.as_ref().and_then(|value| match value {
        Value::Array(items) => items.first().and_then(|item| item.get("error")),
        _ => value.get("error"),
    });
    let mut error = match object {
        Some(object) => from_error_object(object, Some(response.status)),
        None => response.generic_error().with_provider(NAME),
    };
    if let Some(id) = response.request_id() {
        error = error.with_request_id(id);
    }
    if error.retry_after().is_none()
        && let Some(wait) = response.retry_after()
    {
        error = error.with_retry_after(wait);
    }
    error
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn quota_error() -> Value {
        json!({
            "code": 429,
            "message": "You exceeded your current quota.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                    {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                     "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
                {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
            ]
        })
    }

    #[test]
    fn retry_info_is_the_wait_and_quota_failure_is_kept() {
        let error = from_error_object(&quota_error(), Some(429));
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(error.retry_after(), Some(Duration::from_secs(37)));
        assert_eq!(error.facts().provider_code.as_deref(), Some("RESOURCE_EXHAUSTED"));
        let api = std::error::Error::source(&error)
            .and_then(|source| source.downcast_ref::<ApiError>())
            .expect("the status is the source");
        assert_eq!(api.quota_violations().len(), 1);
        assert_eq!(
            api.quota_violations()[0]["quotaId"],
            "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
        );
    }

    #[test]
    fn durations_in_both_protobuf_forms() {
        assert_eq!(parse_duration(&json!("1.5s")), Some(Duration::from_millis(1500)));
        assert_eq!(
            parse_duration(&json!({"seconds": 2, "nanos": 500000000})),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(parse_duration(&json!("99999999s")), Some(MAX_RETRY_DELAY));
        assert_eq!(parse_duration(&json!("-1s")), None);
        assert_eq!(parse_duration(&json!("soon")), None);
    }

    #[test]
    fn kinds_by_status_name() {
        let kind = |status: &str, message: &str| {
            from_error_object(&json!({"status": status, "message": message}), None).kind()
        };
        assert_eq!(kind("UNAVAILABLE", "The model is overloaded."), ErrorKind::Overloaded);
        assert_eq!(kind("INVALID_ARGUMENT", "bad"), ErrorKind::InvalidRequest);
        assert_eq!(
            kind(
                "INVALID_ARGUMENT",
                "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
            ),
            ErrorKind::ContextTooLong
        );
        assert_eq!(kind("PERMISSION_DENIED", "no"), ErrorKind::Auth);
        assert_eq!(kind("INTERNAL", "oops"), ErrorKind::Server);
    }
}
