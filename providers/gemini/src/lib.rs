#![doc = include_str!("../README.md")]

// The modules in dependency order: each uses only those above it (and the root's `NAME`).
//
// error: the crate's `Error`; uses nothing.
mod error;

// config: `GeminiConfig` from code, environment, options; uses error.
mod config;

// schema: JSON Schema to the subset Gemini's function declarations take; uses nothing.
mod schema;

// request: the request body; uses config, schema.
mod request;

// api_error: Google's `google.rpc.Status` errors as `ProviderError`s; uses nothing.
mod api_error;

// translate: the wire (stream chunks to events); uses api_error.
pub mod translate;

// token: Vertex AI's bearer token, given or from a command; uses nothing.
mod token;

// provider: `GeminiProvider`, the I/O around the rest; uses config, error, request, translate,
// token.
mod provider;

pub use api_error::ApiError;
pub use config::{Backend, DEFAULT_TOKEN_COMMAND, GEMINI_BASE_URL, GeminiConfig, vertex_base_url};
pub use error::Error;
pub use provider::{GeminiProvider, factory};
pub use translate::Translator;

/// The registry name: the key of `context.provider_options(NAME)`, `ProviderInfo::name`, and
/// the `provider` of every error and of the request span.
pub const NAME: &str = "gemini";
