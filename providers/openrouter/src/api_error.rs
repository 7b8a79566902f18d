//! Error answers of the API: OpenAI-style error objects and non-2xx bodies mapped to typed
//! [`ProviderError`]s, by core's reading of the OpenAI error family
//! ([`patchbay_core::kit::openai_error`]), tagged with this crate's name.

use patchbay_core::ProviderError;
use patchbay_core::kit::{ErrorResponse, openai_error, openai_http_error};
use serde_json::Value;

use crate::NAME;

/// Build a typed error from an OpenAI-style `error` object (`{"message", "type", "code"}`).
/// The kind comes from a known code or type string, else a numeric code (OpenRouter sends
/// HTTP-like numbers), else the HTTP status, else `Server`.
pub(crate) fn from_error_object(error: &Value, status: Option<u16>) -> ProviderError {
    openai_error(error, status, NAME)
}

/// Build a typed error from a non-2xx HTTP answer.
pub(crate) fn from_http(response: ErrorResponse<'_>) -> ProviderError {
    openai_http_error(response, NAME)
}
