//! The crate's error type: what configuration and setup can fail with.

use patchbay_core::kit::OptionsError;
use patchbay_core::{ErrorKind, ProviderError};

use crate::NAME;

/// What can go wrong while configuring the provider. Converted into a [`ProviderError`] of
/// kind [`ErrorKind::Config`] at the boundary. No variant quotes a value that may be a key or a
/// token: errors name the option or variable, never its value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No API key for OpenAI's own API in the config, the options or the environment (a base
    /// URL of another server needs none).
    #[error("no API key: set OPENAI_API_KEY, or pass one in the config")]
    MissingKey,
    /// The option `api_key_env` names a variable that is not set (the name is not shown: a
    /// key pasted into that option would be).
    #[error("option `api_key_env` names a variable that is not set")]
    MissingKeyVariable,
    /// An environment variable is set but cannot be used (not Unicode, or not a value it may
    /// take). Names the variable, never quotes its value (it may be a key).
    #[error("the environment variable `{name}` is {reason}")]
    Env {
        /// The variable.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The base URL is not an http(s) URL. The value is not shown: it may be a key pasted
    /// into the wrong field.
    #[error("the base URL from {origin} is not an http:// or https:// URL")]
    BaseUrl {
        /// Where it came from: `OPENAI_BASE_URL`, the `base_url` option or the config.
        origin: &'static str,
    },
    /// The registry options cannot be read: not a JSON object (nor `null`), an unknown key, a
    /// value of the wrong type. The source names the key ([`OptionsError::key`]) and quotes no
    /// value (a value may be a key).
    #[error("invalid openai options: {source}")]
    Options {
        /// The key at fault and what is wrong, values redacted.
        #[source]
        source: OptionsError,
    },
    /// A configured header HTTP does not allow: its name, or its value (which is never shown).
    #[error("the header `{name}` is not valid HTTP (its name or its value)")]
    Header {
        /// The header's name.
        name: String,
    },
    /// The HTTP client cannot be built (TLS setup...).
    #[error("cannot build the HTTP client")]
    Client {
        /// reqwest's error.
        #[source]
        source: reqwest::Error,
    },
}

impl From<Error> for ProviderError {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        ProviderError::new(ErrorKind::Config, message)
            .with_provider(NAME)
            .with_source(error)
    }
}
