#![doc = include_str!("../README.md")]
//!
//! # Modules
//! - [`translate`]: the wire translator ([`Translator`] for parsed events, [`StreamTranslator`]
//!   for bytes), reusable without HTTP;
//! - [`sse`]: the SSE framing parser;
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
//! - Timeouts: connect (10 s), idle read (5 min, also bounds the wait for headers), whole request
//!   (none). Cancelling the signal ends the stream with `Cancelled` and drops the connection.
//!
//! # Registry
//! The facade registers [`build`] (`fn(&serde_json::Value) -> Result<Arc<dyn Provider>, _>`):
//! options `api_key`, `auth_token`, `base_url`, `version`, `betas`, `headers`,
//! `connect_timeout_ms`, `read_timeout_ms`, `request_timeout_ms`, `default_max_tokens` on top
//! of the environment; `null` means the environment alone.

// `ProviderError` is core's type; its size is core's decision, not this crate's.

mod config;
mod error;
mod provider;
pub mod replay;
pub mod request;
pub mod sse;
pub mod translate;
pub mod wire;

pub use config::{AnthropicConfig, Auth, DEFAULT_BASE_URL, DEFAULT_VERSION, Secret};
pub use error::{http_error, kind_for_error_type};
pub use provider::{AnthropicProvider, build};
pub use request::{DEFAULT_MAX_TOKENS, RequestParts, build_request, tool_result_block};
pub use translate::{RawEvent, StreamTranslator, Translator, finish_reason};
