#![doc = include_str!("../README.md")]
//!
//! # Modules
//! - [`translate`]: the wire translator ([`Translator`] for parsed events, [`StreamTranslator`]
//!   for bytes), reusable without HTTP;
//! - [`wire`]: borrowing typed views of the stream events;
//! - [`request`]: request mapping ([`build_request`], [`tool_result_block`]);
//! - [`replay`]: recorded streams in, events out.
//!
//! # Decisions
//! - `max_tokens` defaults to [`DEFAULT_MAX_TOKENS`] (4096; configurable), raised above a
//!   thinking budget; the last message may come from the assistant (a prefill).
//! - Citations arrive as one `Opaque {"type": "text_citations"}` after their text block, and
//!   server tool counts as `Opaque {"type": "server_tool_usage"}` (core's `Usage` has no field for
//!   them); both go back to the API correctly (citations re-attached to their text, counts dropped).
//! - `model_context_window_exceeded` ends with `Length`; `pause_turn` with `Other("pause_turn")`.
//! - A response that stops inside a tool call's input (max tokens) ends with a `Protocol` error
//!   rather than a `ToolCall` with broken input.
//! - Context fields a stateless API cannot use (`session`, `env`) give a warning on `Started`;
//!   MCP servers are the agent's tool sources' business (`mcp_servers` in provider options
//!   reaches the API's own MCP connector).
//! - Limits (each configurable; a tripped one is a typed error naming it, see
//!   [`patchbay_core::Limit`]): connect 10 s; `read_timeout` 5 min of silence (before the headers,
//!   between body reads, in an error body or a whole JSON body); `content_timeout` 15 min of
//!   keep-alives (`ping`s) without an event; `max_line_bytes` 64 MiB per SSE frame (and per whole
//!   JSON body); error bodies read up to 64 KiB; whole request: none. The stream itself is
//!   core's [`Driver`](patchbay_core::kit::Driver) around this crate's [`StreamTranslator`].
//!   Cancelling the signal ends the stream with `Cancelled` and drops the connection.
//! - Redirects are never followed: a `3xx` is a `Config` error naming the location (the key and
//!   the request must not reach another host).
//! - `Debug` of the config and provider shows no key, no header value, no URL credentials.
//!
//! # Registry
//! The facade registers [`build`] (`fn(&serde_json::Value) -> Result<Arc<dyn Provider>, _>`):
//! options `api_key`, `auth_token`, `base_url`, `version`, `betas`, `headers`,
//! `connect_timeout_ms`, `read_timeout_ms`, `content_timeout_ms` (`0`: off), `max_line_bytes`,
//! `max_error_body_bytes`, `request_timeout_ms`, `default_max_tokens` on top
//! of the environment; `null` means the environment alone.

// `ProviderError` is core's type; its size is core's decision, not this crate's.

mod config;
mod error;
mod provider;
pub mod replay;
pub mod request;
pub mod translate;
pub mod wire;

pub use config::{AnthropicConfig, Auth, DEFAULT_BASE_URL, DEFAULT_VERSION, Secret};
pub use error::{http_error, kind_for_error_type};
pub use provider::{AnthropicProvider, build};
pub use request::{DEFAULT_MAX_TOKENS, RequestParts, build_request, tool_result_block};
pub use translate::{RawEvent, StreamTranslator, Translator, finish_reason};

/// The provider's registry name, the key of its provider options and its span field.
pub const NAME: &str = "anthropic";

/// The registry entry: builds an [`AnthropicProvider`] from JSON options.
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        NAME,
        "Anthropic Messages API; options: api_key, auth_token, base_url, version, betas, headers, \
         connect_timeout_ms, read_timeout_ms, request_timeout_ms, default_max_tokens \
         (on top of ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL)",
        build,
    )
}
