#![doc = include_str!("../README.md")]
//!
//! # Modules
//! - [`translate`]: the wire translator ([`Translator`], core's [`Wire`](patchbay_core::kit::Wire)
//!   for the Messages API), reusable without HTTP: replay a recorded body with
//!   `patchbay_core::kit::replay(Translator::new, [body])`;
//! - [`wire`]: borrowing typed views of the stream events;
//! - [`request`]: request mapping ([`build_request`], [`tool_result_block`]).
//!
//! # Options
//! [`AnthropicConfig::from_options`] (what [`factory`] builds with) reads these keys on top of
//! [`AnthropicConfig::from_env`]; `null` or `{}` is the environment alone, and `null` for a key
//! is the same as leaving it out. An unknown key or a value of the wrong type is an
//! [`Error`] naming the key, never quoting the value.
//!
//! | Key | Type | Default | Overrides |
//! |---|---|---|---|
//! | `api_key` | string | none | `ANTHROPIC_API_KEY` (sent as `x-api-key`) |
//! | `auth_token` | string | none | `ANTHROPIC_AUTH_TOKEN` (sent as `authorization: Bearer`) |
//! | `base_url` | string | [`DEFAULT_BASE_URL`] | `ANTHROPIC_BASE_URL` |
//! | `version` | string | [`DEFAULT_VERSION`] | `ANTHROPIC_VERSION` |
//! | `betas` | list of strings | none | `ANTHROPIC_BETA` (comma-separated) |
//! | `headers` | object of strings | none | (added to any set in code) |
//! | `connect_timeout_ms` | milliseconds | 10 000 | |
//! | `read_timeout_ms` | milliseconds, `0`: off | 300 000 | |
//! | `content_timeout_ms` | milliseconds, `0`: off | 900 000 | |
//! | `request_timeout_ms` | milliseconds, `0`: off | off | |
//! | `max_line_bytes` | bytes | 64 MiB | |
//! | `max_error_body_bytes` | bytes | 64 KiB | |
//! | `default_max_tokens` | integer below 2^32 | [`DEFAULT_MAX_TOKENS`] (4096) | |
//! | `structured_output` | `"auto"`, `"native"`, `"tool"` ([`StructuredOutput`]) | `"auto"` | |
//! | `record_dir` | path, `""`: off | none | `PATCHBAY_RECORD_DIR` |
//!
//! Per call, `context.provider_options("anthropic")` is a different thing: a JSON object merged
//! into the request body (see [`request`]); options that are not an object, or a `betas` or
//! `tools` that is not a list, are an `InvalidRequest` before any I/O naming the key, never
//! quoting a value (as in every provider crate).
//!
//! # Decisions
//! - Configuration: [`AnthropicConfig::from_env`] ignores unset or blank variables; one that is
//!   not Unicode ([`Error::Env`], naming the variable, never quoting its value), or an
//!   `ANTHROPIC_BASE_URL` that does not parse ([`Error::BaseUrl`]), is an error (not a silent
//!   default). `ANTHROPIC_API_KEY` wins over `ANTHROPIC_AUTH_TOKEN`; in options, a credential
//!   replaces the environment's, and `auth_token` wins when both are given. Option errors
//!   ([`Error::Options`]) keep core's [`OptionsError`](patchbay_core::kit::OptionsError) as their
//!   source (the key, what its value must be), never serde's error (its message would quote the
//!   value, which may be a key). Without credentials, only the public API is refused: a mock or
//!   a gateway may need none. The config's fields are private: set with the `with_*` methods,
//!   read with the getters of the same name (so a field can change without breaking callers,
//!   like every provider crate's config).
//! - `max_tokens` defaults to [`DEFAULT_MAX_TOKENS`] (4096; configurable), raised above a
//!   thinking budget; the last message may come from the assistant (a prefill).
//! - Citations arrive as `Source` events of their text block, as they stream ([`sources`] says
//!   how each kind maps), and web search results and fetched pages as `Source`s of their result
//!   block; server tool counts arrive as `Opaque {"type": "server_tool_usage"}` (core's `Usage`
//!   has no field for them), and the stop sequence that fired and a refusal's `stop_details` as
//!   `Opaque {"type": "stop_details"}`. All go back to the API correctly: core's
//!   `ContentBuilder` puts each citation's wire object back on its text block, and [`request`]
//!   sends the citations of the Anthropic kinds (dropping other providers' annotations) and
//!   drops the counts and the stop details. The older `Opaque {"type": "text_citations"}` of
//!   stored conversations is still accepted. [`fields`] lists what becomes of every wire field
//!   seen in the recorded streams.
//! - Structured output (`context.output_schema`): natively (`output_config.format` `json_schema`,
//!   generally available, no beta header) for Claude 4.5 and later ([`claude_version`] at least
//!   [`NATIVE_STRUCTURED_OUTPUT_SINCE`]), else through a tool named after the schema, forced unless host tools are offered too (then
//!   `tool_choice: any`) or thinking is on (then offered, with a warning); the `structured_output`
//!   option picks one way for every model. The tool's `input_json_delta`s become `TextDelta`s of
//!   its block, no tool call is emitted, and the `tool_use` stop it causes alone is `Stop`, so
//!   both ways deliver the object as the final text block ([`patchbay_core::object`]). A model
//!   name that says no Claude version (a gateway's alias) gets the tool, which works everywhere;
//!   set `"native"` for it.
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
//!   core's [`Driver`](patchbay_core::kit::Driver) around this crate's [`Translator`], run by
//!   [`patchbay_http::Call`], the runner every HTTP provider shares.
//!   Cancelling the signal ends the stream with `Cancelled` and drops the connection.
//! - Redirects are never followed: a `3xx` is a `Config` error naming the location (the key and
//!   the request must not reach another host).
//! - Each call sends its request inside core's `chat` span (OpenTelemetry GenAI attributes,
//!   [`request_span_for`](patchbay_core::kit::request_span_for)); the body size is a `debug`
//!   event in it, and failures and refused redirects are `debug` events too.
//! - Recording (`record_dir`, [`AnthropicConfig::with_record_dir`], or `PATCHBAY_RECORD_DIR` for
//!   a config from the environment; the option wins over the variable, `""` turns it off, and
//!   [`AnthropicConfig::new`] reads no variable): every call goes through a
//!   [`patchbay_http::record::Tape`], which writes the response body as received to
//!   `DIR/anthropic/recorded/<stem>.sse` (`.json` for a JSON answer or an error body), the request
//!   without `x-api-key`, `authorization` and the configured headers to
//!   `DIR/requests/anthropic/recorded/<stem>.json`, and a line of `DIR/MANIFEST.tsv` with the
//!   scenario the events showed. The key, the bearer token and every configured header value are
//!   replaced by `[redacted]` wherever they would appear. Replay a file with
//!   `cargo run -p patchbay-replay -- --family anthropic FILE`; a failed write leaves the call as
//!   it was (one warning).
//! - `Debug` of the config and provider shows no key (keys are
//!   [`kit::Secret`](patchbay_core::kit::Secret)), no header value, no URL credentials.

mod config;
mod error;
mod provider;
pub mod request;
pub mod sources;
pub mod translate;
pub mod wire;

/// What each wire field becomes: every field of every recorded stream, mapped to an event or
/// knowingly ignored with the reason (the `fields` test proves each row by changing the field).
#[doc = include_str!("../FIELDS.md")]
pub mod fields {}

pub use config::{AnthropicConfig, Auth, DEFAULT_BASE_URL, DEFAULT_VERSION};
pub use error::{Error, http_error, kind_for_error_type};
pub use provider::{AnthropicProvider, factory};
pub use request::{
    DEFAULT_MAX_TOKENS, NATIVE_STRUCTURED_OUTPUT_SINCE, RequestParts, StructuredOutput, build_request,
    build_request_with, claude_version, tool_result_block,
};
pub use translate::{RawEvent, Translator, finish_reason};

/// The provider's registry name, the key of its provider options and its span field.
pub const NAME: &str = "anthropic";
