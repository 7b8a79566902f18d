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
//! # Registry
//! The facade registers [`build`] (`fn(&serde_json::Value) -> Result<Arc<dyn Provider>, _>`):
//! options `api_key`, `auth_token`, `base_url`, `version`, `betas`, `headers`,
//! `connect_timeout_ms`, `read_timeout_ms`, `request_timeout_ms`, `default_max_tokens` on top
//! of the environment; `null` means the environment alone.

// `ProviderError` is core's type; its size is core's decision, not this crate's.
#![allow(clippy::result_large_err)]

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
