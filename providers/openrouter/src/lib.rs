#![doc = include_str!("../README.md")]
//!
//! # Options
//! [`OpenRouterConfig::from_options`] (and so [`factory`]) reads a JSON object on top of the
//! environment ([`OpenRouterConfig::from_env`]); `null` or `{}` is the environment alone. Every
//! key is optional; any other key is an error.
//!
//! | Key | Type | Default | Overrides |
//! | --- | --- | --- | --- |
//! | `base_url` | string, `http(s)://`, the part before `/chat/completions` | OpenRouter's, or OpenAI's when only `OPENAI_API_KEY` is set | `OPENAI_BASE_URL` |
//! | `api_key` | string (sent as `Authorization: Bearer`) | the variable of the dialect: `OPENROUTER_API_KEY` for OpenRouter, else `OPENAI_API_KEY` | those variables |
//! | `api_key_env` | string: the name of the variable holding the key | - | the variable of the dialect |
//! | `dialect` | `"openrouter"`, `"openai"`, `"generic"` | detected from the base URL | - |
//! | `referer` | string (`HTTP-Referer`) | none | - |
//! | `title` | string (`X-Title`) | none | - |
//! | `headers` | object of strings, sent on every request | `{}` | - |
//! | `include_usage` | bool (`stream_options.include_usage`) | `true` | - |
//! | `response_format` | `"json_schema"`, `"json_object"` ([`ResponseFormat`]): how structured output is asked for | `"json_schema"` | - |
//! | `connect_timeout_ms` | integer, `0`: off | `30000` | - |
//! | `read_timeout_ms` | integer, `0`: off | `300000` | - |
//! | `content_timeout_ms` | integer, `0`: off | `900000` | - |
//! | `max_line_bytes` | integer (at least 1) | `67108864` | - |
//! | `max_error_body_bytes` | integer | `65536` | - |
//! | `record_dir` | path, `""`: off | none | `PATCHBAY_RECORD_DIR` |
//!
//! # Decisions
//! - **One constructor**: [`OpenRouterProvider::new`] takes an [`OpenRouterConfig`] made in
//!   code, by [`OpenRouterConfig::from_env`] or by [`OpenRouterConfig::from_options`]; it checks
//!   the base URL again, so a config built in code cannot skip the check.
//! - **Option errors** ([`Error::Options`], core's
//!   [`OptionsError`](patchbay_core::kit::OptionsError) as the source) name the key and never
//!   quote its value (a key put in the wrong place must not reach a log): serde reads the object
//!   into one struct that denies unknown keys; when that fails, the key that fails on its own is
//!   the one named, and serde's message is kept with its quoted values redacted. The same shape
//!   as every provider crate's (CONTRIBUTING, "The provider-crate shape").
//! - **Where the key comes from**: `api_key` wins over `api_key_env`; `api_key_env` naming an
//!   unset variable is an error ([`Error::MissingKeyVariable`], which does not repeat the name:
//!   it may be a key pasted there), not a silent fall back to the
//!   usual variables. With a base URL, the dialect (given or detected) names the variable, so a
//!   proxy in front of OpenRouter with `"dialect": "openrouter"` reads `OPENROUTER_API_KEY`.
//!   Without one, `dialect` picks OpenRouter's or OpenAI's URL, and `generic` is an error
//!   ([`Error::MissingBaseUrl`]). OpenRouter and OpenAI need a key; other servers do not.
//! - **Environment**: a blank variable counts as unset; one that is not Unicode is an error
//!   ([`Error::Env`], naming the variable, never quoting its value), not ignored.
//! - **Config fields** are private: set with the `with_*` methods, read with the getters
//!   ([`OpenRouterConfig::base_url`], [`OpenRouterConfig::dialect`]...), so `new` can normalize
//!   the URL and detect the dialect, and a field can change without breaking callers.
//! - **Durations** are milliseconds (`connect_timeout_ms` replaced `connect_timeout_secs`, which
//!   is now an unknown key); `0` turns a timeout off. The key is held as a
//!   [`Secret`](patchbay_core::kit::Secret).
//! - **Dialects** ([`Dialect`]): OpenRouter-only fields (`usage: {include: true}`,
//!   `reasoning_details` sent back, `reasoning.max_tokens`, `cache_control`) go only to
//!   OpenRouter, because strict servers reject unknown fields. `stream_options.include_usage`
//!   goes everywhere (turn it off with [`OpenRouterConfig::with_include_usage`]).
//! - **Provider options**: `context.provider_options("openrouter")` must be a JSON object (or
//!   `null`): anything else is an `InvalidRequest` before any I/O, never quoting the value. Its
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
//! - **Structured output** (`context.output_schema`): `response_format: {"type": "json_schema",
//!   "json_schema": {name, description, schema, strict}}`; the JSON arrives as the answer's text,
//!   which is the final text block the contract asks for. `strict` is sent only to OpenAI and
//!   OpenRouter (the dialects that define it); a generic server asked for strict gets the schema
//!   without it and a warning. For servers with a JSON mode but no schemas, the `response_format`
//!   option `"json_object"` sends `{"type": "json_object"}` and the schema in a system message,
//!   with an `unsupported_option` warning that the shape is not enforced. On OpenRouter, add
//!   `"provider": {"require_parameters": true}` to the provider options to route only to
//!   upstreams that honour `response_format`. A `response_format` in the provider options wins.
//! - **Usage**: `input` excludes cached tokens (reported as `cache_read`), like Anthropic's split.
//! - **Translation**: see [`translate`]; tool calls are emitted when their choice finishes. The
//!   `Finish` metrics come from core's [`MetricsRecorder`](patchbay_core::kit::MetricsRecorder).
//! - **Cancellation**: the signal is checked while waiting for bytes and before every event; the
//!   stream then ends with `Cancelled` and drops the response, closing the connection.
//! - **Limits** (core's [`StreamLimits`](patchbay_core::kit::StreamLimits), set with
//!   [`OpenRouterConfig::with_limits`] or the options above; a tripped one is a typed error
//!   naming its [`Limit`](patchbay_core::Limit)): connect 30 s; `read_timeout` 5 min of silence
//!   (before the headers, between body reads, in an error body); `content_timeout` 15 min of
//!   keep-alive comments (`: OPENROUTER PROCESSING`) without an event; `max_line_bytes` 64 MiB
//!   per line; error bodies read up to 64 KiB. The stream is core's
//!   [`Driver`](patchbay_core::kit::Driver), inside [`request_span_for`](patchbay_core::kit::request_span_for).
//! - **Redirects** are never followed: a `3xx` is a `Config` error naming the location (the key,
//!   custom headers and the body must not reach another host).
//! - **Recording** (`record_dir`, [`OpenRouterConfig::with_record_dir`], or
//!   `PATCHBAY_RECORD_DIR` for a config from the environment; the option wins over the variable,
//!   `""` turns it off, and [`OpenRouterConfig::new`] reads no variable): every call goes through
//!   a [`patchbay_http::record::Tape`], which writes the response body as received to
//!   `DIR/<family>/recorded/<stem>.sse` (`.json` for an error body), the request to
//!   `DIR/requests/<family>/recorded/<stem>.json` and a line of `DIR/MANIFEST.tsv` with the
//!   scenario the events showed. The family is the shipped fixtures' folder of the dialect:
//!   `openrouter`, `openai-chat` (OpenAI) or `openai-compatible`. The key is a default header of
//!   the client, so it is not in the request the recorder sees; it and every extra header value
//!   are also replaced by `[redacted]` wherever they would appear. Replay a file with
//!   `cargo run -p patchbay-replay -- --family openai FILE`; a failed write leaves the call as it
//!   was (one warning).
//! - **Secrets**: `Debug` and logs show no key, no header value (`HTTP-Referer` and `X-Title`
//!   included: only whether they are set), no URL credentials.

// The modules in dependency order: each uses only those above it (and the root's `NAME`), so
// the crate reads top-down. No module uses one below it.
//
// wire: the typed views of a stream payload; uses nothing.
mod wire;

// fast: the parser-free read of a plain text chunk; uses wire.
mod fast;

// error: the crate's `Error`; uses nothing.
mod error;

// api_error: error answers of the API to `ProviderError`s; uses wire.
mod api_error;

// config: `OpenRouterConfig` from code, environment, options; uses error.
mod config;

// request: the request body; uses config (its `Dialect`).
mod request;

// translate: the wire translator (translator -> state -> convert); uses wire, fast, api_error.
pub mod translate;

// provider: `OpenRouterProvider`, the I/O around the rest; uses config, error, request, translate,
// api_error.
mod provider;

// fields: documentation only, the table `tests/fields.rs` proves against every recording.
#[doc = include_str!("../FIELDS.md")]
pub mod fields {}

pub use config::{Dialect, OPENAI_BASE_URL, OPENROUTER_BASE_URL, OpenRouterConfig, ResponseFormat};
pub use error::Error;
pub use provider::{OpenRouterProvider, factory};

/// The registry name: the key of `context.provider_options(NAME)`, `ProviderInfo::name`, and
/// the `provider` of every error and of the request span.
pub const NAME: &str = "openrouter";
