#![doc = include_str!("../README.md")]
//!
//! # Decisions
//! - **Dialects** ([`Dialect`]): OpenRouter-only fields (`usage: {include: true}`,
//!   `reasoning_details` sent back, `reasoning.max_tokens`, `cache_control`) go only to
//!   OpenRouter, because strict servers reject unknown fields. `stream_options.include_usage`
//!   goes everywhere (turn it off with [`OpenRouterConfig::with_include_usage`]).
//! - **Provider options**: `context.provider_options("openrouter")` must be a JSON object; its
//!   keys are merged into the request body as given (provider routing `provider`, `reasoning`,
//!   `models`, `transforms`, `reasoning_effort`...), overriding what patchbay set.
//! - **Messages**: tool calls become `tool_calls`, tool results `tool` messages placed right after
//!   the assistant message. A multi-part result keeps its text (JSON as text, resources as text
//!   with their URI; a failed result starts with `Error: `); its images, which tool messages cannot
//!   carry, follow in one user message. Reasoning goes back only to OpenRouter, as
//!   `reasoning_details` (text with signature; encrypted reasoning verbatim); other servers get a
//!   `reasoning_not_sent` warning. `Opaque` blocks (extra choices, incomplete tool calls) are
//!   not sent.
//! - **Warnings on `Started`**: sessions, `top_k` for OpenAI, a token reasoning budget outside
//!   OpenRouter, caching markers outside OpenRouter. Working directory, environment, metadata,
//!   approval and MCP servers belong to the agent loop and tools, not to this provider.
//! - **Usage**: `input` excludes cached tokens (reported as `cache_read`), like Anthropic's split.
//! - **Translation**: see [`translate`]; tool calls are emitted when their choice finishes.
//! - **Cancellation**: the signal is checked while waiting for bytes and before every event; the
//!   stream then ends with `Cancelled` and drops the response, closing the connection.
//! - **Limits** (core's [`StreamLimits`](patchbay_core::kit::StreamLimits), set with
//!   [`OpenRouterConfig::with_limits`] or the options `read_timeout_ms`, `content_timeout_ms`,
//!   `max_line_bytes`, `max_error_body_bytes`; a tripped one is a typed error naming its
//!   [`Limit`](patchbay_core::Limit)): connect 30 s; `read_timeout` 5 min of silence (before
//!   the headers, between body reads, in an error body); `content_timeout` 15 min of keep-alive
//!   comments (`: OPENROUTER PROCESSING`) without an event; `max_line_bytes` 64 MiB per line;
//!   error bodies read up to 64 KiB. The stream is core's [`Driver`](patchbay_core::kit::Driver).
//! - **Redirects** are never followed: a `3xx` is a `Config` error naming the location (the key,
//!   custom headers and the body must not reach another host).
//! - **Secrets**: `Debug` and logs show no key, no header value, no URL credentials.

mod config;
mod error;
mod provider;
mod request;
pub mod translate;
mod wire;

pub use config::{Dialect, OPENAI_BASE_URL, OPENROUTER_BASE_URL, OpenRouterConfig};
pub use error::Error;
pub use provider::OpenRouterProvider;

/// The provider's registry name, and the key of its provider options.
pub const PROVIDER_NAME: &str = "openrouter";

/// The registry entry: builds an [`OpenRouterProvider`] from JSON options.
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        PROVIDER_NAME,
        "OpenAI-compatible chat completions; OPENROUTER_API_KEY / OPENAI_API_KEY / OPENAI_BASE_URL, options override",
        |options| Ok(std::sync::Arc::new(OpenRouterProvider::from_options(options)?)),
    )
}
