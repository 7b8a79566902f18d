//! patchbay provider for OpenAI's Responses API (crate docs: work in progress).

// error: the crate's `Error`; uses nothing.
mod error;

// config: `OpenAiConfig` from code, environment, options; uses error.
mod config;

// request: the request body; uses nothing but core. Public for its docs (the mapping of every
// block and every call option); nothing in it is public.
pub mod request;

// translate: the wire (stream events to events); uses nothing but core.
pub mod translate;

// provider: `OpenAiProvider`, the I/O around the rest; uses config, error, request, translate.
mod provider;

pub use config::{KeyHeader, OPENAI_BASE_URL, OpenAiConfig};
pub use error::Error;
pub use provider::{OpenAiProvider, factory};
pub use translate::Translator;

/// The registry name: the key of `context.provider_options(NAME)`, `ProviderInfo::name`, and
/// the `provider` of every error and of the request span.
pub const NAME: &str = "openai";
