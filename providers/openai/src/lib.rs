#![doc = include_str!("../README.md")]
//!
//! # Options
//! [`OpenAiConfig::from_options`] (and so [`factory`]) reads a JSON object on top of the
//! environment ([`OpenAiConfig::from_env`]); `null` or `{}` is the environment alone. Every key
//! is optional; any other key is an error naming it, never quoting its value.
//!
//! | Key | Type | Default | Overrides |
//! | --- | --- | --- | --- |
//! | `base_url` | string, `http(s)://`, the part before `/responses` | [`OPENAI_BASE_URL`] | `OPENAI_BASE_URL` |
//! | `api_key` | string | `OPENAI_API_KEY` (required only for OpenAI's own URL) | that variable |
//! | `api_key_env` | string: the name of the variable holding the key | - | the variable above |
//! | `api_key_header` | string: the header the key goes in (`api-key` for Azure OpenAI); `authorization` is `Bearer {key}` | `authorization` | - |
//! | `organization` | string (`OpenAI-Organization`) | `OPENAI_ORG_ID` | - |
//! | `project` | string (`OpenAI-Project`) | `OPENAI_PROJECT_ID` | - |
//! | `headers` | object of strings, sent on every request | `{}` | - |
//! | `query` | object of strings, added to the URL of every request (Azure's `api-version`) | `{}` | - |
//! | `connect_timeout_ms` | integer, `0`: off | `30000` | - |
//! | `read_timeout_ms` | integer, `0`: off | `300000` | - |
//! | `content_timeout_ms` | integer, `0`: off | `900000` | - |
//! | `max_line_bytes` | integer (at least 1) | `67108864` | - |
//! | `max_error_body_bytes` | integer | `65536` | - |
//! | `record_dir` | path, `""`: off | none | `PATCHBAY_RECORD_DIR` |
//!
//! How messages, tools and the call options (`context.provider_options("openai")`: store,
//! reasoning, built-in tools, verbosity...) are sent is in [`request`]; how the stream is read
//! is in [`translate`].
//!
//! # Decisions
//! - **Stateless by default**: `store: false`, the whole conversation on every call, and on a
//!   reasoning call `include: ["reasoning.encrypted_content"]`. A reasoning item becomes a
//!   `Thinking` block: its summary (parts joined by a blank line) the text, its
//!   `encrypted_content` the signature. It goes back as `{"type": "reasoning", "summary",
//!   "encrypted_content"}`, the signature byte for byte.
//! - **No item ids are kept or sent back** (a departure from the issue's "id, summary,
//!   encrypted content"): with `store: false` an item id makes the server look the item up and
//!   fail ("Item with id 'rs_...' not found. Items are not persisted when `store` is set to
//!   false"), and OpenAI's own Codex client sends reasoning, message and call items without
//!   them. The encrypted content is what carries the reasoning. Hosts that want server state
//!   set `store` or `previous_response_id` (then only the messages after the last assistant
//!   message are sent).
//! - **Built-in tools** are provider-run tool calls (`ExecutedBy::Provider`) with their results
//!   and sources. With `store: false` they are not sent back (the server kept nothing to refer
//!   to; the answer's text that used them is); with `store: true` they go back as
//!   `item_reference`s. Items patchbay has no event for (`mcp_approval_request`,
//!   `computer_call`, `local_shell_call`, `custom_tool_call`...) are `Opaque` blocks sent back
//!   verbatim; a host answers an MCP approval with an `Opaque` `mcp_approval_response` item in
//!   the next user message.
//! - **Servers**: OpenAI, Azure OpenAI's v1 API ([`OpenAiConfig::azure`]: the key as `api-key`,
//!   the model the deployment), OpenRouter's Responses endpoint, vLLM, Ollama and others by
//!   base URL, key header, extra headers and query parameters.
//! - **Errors**: the OpenAI error family ([`patchbay_core::kit::openai_error`]): a known code
//!   (`rate_limit_exceeded`, `server_is_overloaded`, `context_length_exceeded`...) or type sets
//!   the kind, else the status; in the stream, `error` events and `response.failed` are the
//!   same typed errors; `retry-after` is honoured by the retry layer.
//! - **Finish when the terminal event comes**: `response.completed`, `.incomplete` or `.failed`
//!   ends the response; a body that ends before one is a `Protocol` error.
//! - **Limits, redirects, cancellation and recording** are the shared runner's
//!   ([`patchbay_http::Call`]): connect 30 s, read 5 min, content 15 min, 64 MiB lines, 64 KiB
//!   error bodies, no redirect followed (the key must not reach another host), the stream ends
//!   with `Cancelled` when the signal fires. Recordings go to family `openai-responses` with the
//!   key, header and query values redacted.
//! - **Secrets**: `Debug` and logs show no key, no header or query value, no URL credentials.

// error: the crate's `Error`; uses nothing.
mod error;

// config: `OpenAiConfig` from code, environment, options; uses error.
mod config;

// The modules in dependency order: each uses only those above it (and the root's `NAME`).
//
// request: the request body; uses nothing but core. Public for its docs (the mapping of every
// block and every call option); nothing in it is public.
pub mod request;

// translate: the wire (stream events to events); uses nothing but core.
pub mod translate;

// fields: documentation only, the table `tests/fields.rs` proves against every recording.
#[doc = include_str!("../FIELDS.md")]
pub mod fields {}

// provider: `OpenAiProvider`, the I/O around the rest; uses config, error, request, translate.
mod provider;

pub use config::{KeyHeader, OPENAI_BASE_URL, OpenAiConfig};
pub use error::Error;
pub use provider::{OpenAiProvider, factory};
pub use translate::Translator;

/// The registry name: the key of `context.provider_options(NAME)`, `ProviderInfo::name`, and
/// the `provider` of every error and of the request span.
pub const NAME: &str = "openai";
