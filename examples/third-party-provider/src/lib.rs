//! A patchbay provider for [Ollama](https://ollama.com)'s native `/api/chat` API, built outside
//! the patchbay workspace as a third party would: it streams newline-delimited JSON from a
//! local (or hosted) Ollama server and turns it into patchbay's events, with reasoning
//! (`think`), images (base64) and host tool calls.
//!
//! ```no_run
//! use patchbay_core::{ProviderExt, RequestContext};
//! use patchbay_ollama::{OllamaConfig, OllamaProvider};
//! # async fn run() -> Result<(), patchbay_core::ProviderError> {
//! let provider = OllamaProvider::new(OllamaConfig::from_env()?)?;
//! let text = provider.generate_text("Say hello.", "llama3.2", Some(&RequestContext::new())).await?;
//! # let _ = text; Ok(()) }
//! ```
//!
//! # Options
//!
//! [`OllamaConfig::from_options`] reads one JSON object on top of the environment:
//!
//! | key | type | default | environment |
//! | --- | --- | --- | --- |
//! | `base_url` | string: a URL, `host` or `host:port` | `http://127.0.0.1:11434` | `OLLAMA_HOST` |
//! | `api_key` | string: a bearer token (hosted Ollama) | none | `OLLAMA_API_KEY` |
//! | `read_timeout_ms` | integer, `0` off | 300000 | |
//! | `content_timeout_ms` | integer, `0` off | 900000 | |
//! | `connect_timeout_ms` | integer, `0` the system's | 10000 | |
//! | `max_line_bytes` | integer, at least 1 | 67108864 (64 MiB) | |
//!
//! Per call, `context.provider_options("ollama")` may hold `think` (`true`, `false`, `"low"`,
//! `"medium"`, `"high"`), `keep_alive` (as Ollama takes it), `format` (`"json"` or a JSON schema)
//! and `options` (Ollama model options such as `num_ctx`, over the ones set from sampling). An
//! unknown key is an `InvalidRequest` error before any I/O.
//!
//! # Decisions
//!
//! - **Request**: `POST {base_url}/api/chat` with `stream: true`. The system prompt is the first
//!   `system` message; tool results become `tool` messages with `tool_name` (the name of the call
//!   they answer; Ollama has no call ids, and no error flag: the result's text says it failed);
//!   thinking goes back as the assistant's `thinking`, its signature is dropped (Ollama has
//!   none). Images are sent as base64 `images`; an image by URL is an `InvalidRequest` error (the
//!   server cannot fetch it). Sampling maps to `options`: `temperature`, `top_p`, `top_k`,
//!   `num_predict` (max tokens), `stop`.
//! - **Structured output** (`context.output_schema`): Ollama's `format` takes a JSON schema, so
//!   the schema goes there (a `format` call option wins); the object arrives as the answer's
//!   text, the final text block. `strict` has no Ollama equivalent and is ignored: `format`
//!   already constrains the output to the schema.
//! - **Reasoning**: `think` is sent as the call option says, else `true` when a thinking budget
//!   is set (with an `unsupported_option` warning: Ollama's `think` has no budget).
//! - **Warnings on `Started`** (`unsupported_option`): `tool_choice` `Any` or `Tool` (Ollama
//!   cannot force a call; `None` leaves the tools out), `session`, the system prompt's
//!   `cache_control`; `mcp_servers_ignored` for MCP servers nobody attached;
//!   `unsupported_content` when redacted reasoning or opaque blocks of the history are dropped.
//!   `working_dir`, `env` and block-level cache markers mean nothing to an HTTP API and are
//!   ignored.
//! - **Stream**: each line's `thinking` is a `ReasoningDelta`, `content` a `TextDelta` (a new
//!   block index whenever the kind changes or a tool call came between). A tool call arrives
//!   whole: `ToolCallStart`, one `ToolCallDelta` with the arguments, `ToolCall`. Its id is made
//!   up, `call_<n>`, numbered on from the calls already in the conversation, so ids are stable
//!   for one response and unique over an agent run.
//! - **End**: the `done` line gives `Usage` (`prompt_eval_count`, `eval_count`) and `Finish`:
//!   `stop` is `Stop` (`ToolUse` when the response made tool calls), `length` is `Length`,
//!   anything else `Other`. A body that ends before it is a `Protocol` error.
//! - **Errors**: an HTTP error's kind comes from its status (`kind_for_status`), its message from
//!   Ollama's `{"error": "..."}` body, `retry-after` is kept. An in-stream `{"error": "..."}` line
//!   carries no type or status, so it is a `Server` error. A redirect is refused
//!   (`redirect_error`); limits, timeouts and cancellation come from `patchbay_core::kit::Driver`.
//! - **Wire mock**: [`mock::OllamaWire`] (feature `mock`) is public, so a host's tests can serve
//!   Ollama-shaped streams through `patchbay_conformance`'s mock servers too.

mod config;
mod error;
#[cfg(feature = "mock")]
pub mod mock;
mod provider;
mod request;
mod translate;

pub use config::{DEFAULT_BASE_URL, OllamaConfig};
pub use error::{Error, UrlError};
pub use provider::{OllamaProvider, factory};
pub use translate::OllamaTranslator;

/// The registry name: `ProviderInfo::name`, the key of `context.provider_options`, the
/// `provider` of every error and of the request span.
pub const NAME: &str = "ollama";
