//! [`Error`]: what configuring and setting up the provider can fail with.

use patchbay_core::{ErrorKind, ProviderError};
use patchbay_http::reqwest;

use crate::NAME;

/// What configuration and setup can fail with. Converted into a `Config` [`ProviderError`]
/// (named `ollama`, the error kept as its source) at the crate's boundary.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The base URL (`OLLAMA_HOST` or the `base_url` option) is not an `http://` or `https://`
    /// URL. The value is not quoted: it may carry credentials.
    #[error("the base URL from {origin} is not a valid http:// or https:// URL")]
    BaseUrl {
        /// Where it came from (`OLLAMA_HOST`, `base_url`, `with_base_url`).
        origin: &'static str,
        /// Why it was refused.
        #[source]
        source: UrlError,
    },
    /// An environment variable is set but cannot be used (not Unicode). Names the variable,
    /// never quotes its value (the standard library's error would: it may be a key).
    #[error("the environment variable `{name}` is {reason}")]
    Env {
        /// The variable.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The registry options are not a JSON object, name an unknown key, or give a key a wrong
    /// type or a value out of range. The source names the key and never quotes a value. (A
    /// call's `provider_options("ollama")` that cannot be read is no `Error` but an
    /// `InvalidRequest`, as in every provider crate.)
    #[error("invalid ollama options: {source}")]
    Options {
        /// The key at fault and what is wrong, values redacted.
        #[source]
        source: patchbay_core::kit::OptionsError,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client")]
    Client {
        /// reqwest's error.
        #[source]
        source: reqwest::Error,
    },
}

/// Why a base URL was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// It does not parse as a URL.
    #[error("it does not parse as a URL")]
    Parse(#[source] url::ParseError),
    /// Its scheme is neither `http` nor `https`.
    #[error("its scheme is neither http nor https")]
    Scheme,
    /// It has no host.
    #[error("it has no host")]
    NoHost,
}

impl From<Error> for ProviderError {
    fn from(error: Error) -> Self {
        let kind = ErrorKind::Config;
        ProviderError::new(kind, error.to_string())
            .with_provider(NAME)
            .with_source(error)
    }
}
