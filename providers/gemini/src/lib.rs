#![doc = include_str!("../README.md")]
//!
//! # Options
//! [`GeminiConfig::from_options`] (and so [`factory`]) reads a JSON object on top of the
//! environment ([`GeminiConfig::from_env`]); `null` or `{}` is the environment alone. Every key
//! is optional; any other key is an error naming it, never quoting its value.
//!
//! | Key | Type | Default | Overrides |
//! | --- | --- | --- | --- |
//! | `backend` | `"gemini_api"` (or `"gemini"`), `"vertex_ai"` (or `"vertex"`) | Vertex AI when `GOOGLE_GENAI_USE_VERTEXAI` is true or a `project` is given, else the Gemini API | `GOOGLE_GENAI_USE_VERTEXAI` |
//! | `base_url` | string, `http(s)://`, the part before `/models/{model}` | [`GEMINI_BASE_URL`], or [`vertex_base_url`] of the project and location | `GOOGLE_GEMINI_BASE_URL` (Gemini API), `GOOGLE_VERTEX_BASE_URL` (Vertex AI) |
//! | `api_key` | string (sent as `x-goog-api-key`; on Vertex AI, express mode) | `GEMINI_API_KEY`, else `GOOGLE_API_KEY` | those variables |
//! | `api_key_env` | string: the name of the variable holding the key | - | the variables above |
//! | `project` | string (Vertex AI) | `GOOGLE_CLOUD_PROJECT` | - |
//! | `location` | string (Vertex AI): `us-central1`, `global`... | `GOOGLE_CLOUD_LOCATION`, else `global` | - |
//! | `access_token` | string: a bearer token for Vertex AI, used as given | none | the token command |
//! | `token_command` | list of strings: a program and its arguments that print a token (no shell) | [`DEFAULT_TOKEN_COMMAND`] on Vertex AI without a key or token | - |
//! | `token_ttl_ms` | integer: how long a printed token is reused | `2700000` (45 min) | - |
//! | `headers` | object of strings, sent on every request | `{}` | - |
//! | `connect_timeout_ms` | integer, `0`: off | `30000` | - |
//! | `read_timeout_ms` | integer, `0`: off | `300000` | - |
//! | `content_timeout_ms` | integer, `0`: off | `900000` | - |
//! | `max_line_bytes` | integer (at least 1) | `67108864` | - |
//! | `max_error_body_bytes` | integer | `65536` | - |
//! | `record_dir` | path, `""`: off | none | `PATCHBAY_RECORD_DIR` |
//!
//! How messages, tools and the call options (`context.provider_options("gemini")`: server
//! tools, thinking, safety settings, cached content...) are sent is in [`request`]; how the
//! stream is read is in [`translate`].
//!
//! # Decisions
//! - **One wire, two backends** ([`Backend`]): the Gemini API and Vertex AI stream the same
//!   `GenerateContentResponse` chunks; only the URL and the credentials differ. The span's
//!   `gen_ai.provider.name` is the semantic conventions' `gcp.gemini` or `gcp.vertex_ai`
//!   (errors keep the registry name `gemini`).
//! - **Vertex AI tokens**: a given `access_token` is used as is; otherwise the token command runs
//!   before the first call (no shell, no stdin, 30 s at most, killed when the call is cancelled,
//!   its stderr tail on the `Auth` error when it fails), its token kept for `token_ttl_ms` and
//!   dropped after a `401` so the next call fetches a fresh one. The command's arguments never
//!   reach `Debug` (an argument may be a credential).
//! - **Signatures** (core's `ContentBlock::Text`, `ToolUse` and `Thinking` carry one): a
//!   `thoughtSignature` is kept on the part it came with and sent back there, byte for byte. A
//!   signature on an empty text part joins the text block before it (the part it would be in a
//!   non-streamed answer); with no text open it becomes an empty thinking block that goes back as
//!   `{"text": "", "thoughtSignature"}`. See [`translate`] for every part.
//! - **Tool call ids**: the wire's `functionCall.id` when present, else `call_N` numbered on
//!   from the calls in the conversation, so ids stay unique across an agent run. Ids are not sent
//!   back: Gemini pairs a `functionResponse` with its call by order and name.
//! - **Finishes**: `STOP` after host function calls is `ToolUse`; the safety, recitation,
//!   blocklist, prohibited-content and SPII filters are `ContentFilter`, told apart by an
//!   `Opaque` event with the raw `finishReason`, `finishMessage` and `safetyRatings` just before
//!   `Finish`; a blocked prompt (`promptFeedback.blockReason`) is `Refusal` with its feedback the
//!   same way. Gemini has no refusal finish of its own (a model declines in text and stops).
//! - **Usage**: the last `usageMetadata` wins (its counts change between chunks and can go
//!   down); `input` leaves out cached tokens (`cache_read`) and adds the tool-use prompt,
//!   `output` counts the thoughts (`reasoning`). Every count is read leniently: a broken number
//!   costs its value, not the stream.
//! - **Errors**: Google's `google.rpc.Status` (in an error body, in a one-element array, or inside
//!   the stream) becomes a typed error by its status name (`RESOURCE_EXHAUSTED` is
//!   `RateLimited`, `UNAVAILABLE` `Overloaded`, an over-long prompt `ContextTooLong`...), the
//!   status name as the provider code, `RetryInfo.retryDelay` as the wait the retry layer
//!   honours, and the whole status as the error's source ([`ApiError`]: `QuotaFailure`
//!   violations, `ErrorInfo` reason).
//! - **Finish when the body ends**: a chunk with `finishReason` does not end the stream; a
//!   trailing chunk may still carry usage, so `Finish` comes when the body ends, and a body that
//!   ends without a finish reason is a `Protocol` error.
//! - **Limits, redirects, cancellation and recording** are the shared runner's
//!   ([`patchbay_http::Call`]): connect 30 s, read 5 min, content 15 min, 64 MiB lines, 64 KiB
//!   error bodies, no redirect followed (the key must not reach another host), the stream ends
//!   with `Cancelled` when the signal fires. Recordings go to family `gemini` (server `vertex` on
//!   Vertex AI) with the key, the token and header values redacted.
//! - **Secrets**: `Debug` and logs show no key, no token, no header value, no URL credentials.

// The modules in dependency order: each uses only those above it (and the root's `NAME`).
//
// error: the crate's `Error`; uses nothing.
mod error;

// config: `GeminiConfig` from code, environment, options; uses error.
mod config;

// schema: JSON Schema to the subset Gemini's function declarations take; uses nothing.
mod schema;

// request: the request body; uses config, schema. Public for its docs (the mapping of every
// block and every call option); nothing in it is public.
pub mod request;

// api_error: Google's `google.rpc.Status` errors as `ProviderError`s; uses nothing.
mod api_error;

// translate: the wire (stream chunks to events); uses api_error.
pub mod translate;

// token: Vertex AI's bearer token, given or from a command; uses nothing.
mod token;

// provider: `GeminiProvider`, the I/O around the rest; uses config, error, request, translate,
// token.
mod provider;

// fields: documentation only, the table `tests/fields.rs` proves against every recording.
#[doc = include_str!("../FIELDS.md")]
pub mod fields {}

pub use api_error::ApiError;
pub use config::{Backend, DEFAULT_TOKEN_COMMAND, GEMINI_BASE_URL, GeminiConfig, vertex_base_url};
pub use error::Error;
pub use provider::{GeminiProvider, factory};
pub use translate::Translator;

/// The registry name: the key of `context.provider_options(NAME)`, `ProviderInfo::name`, and
/// the `provider` of every error and of the request span.
pub const NAME: &str = "gemini";
