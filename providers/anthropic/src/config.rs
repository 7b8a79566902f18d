//! Provider configuration: from code, from the environment, or from registry JSON options.

use std::fmt;
use std::time::Duration;

use patchbay_core::ProviderError;
use patchbay_core::kit::{StreamLimits, redact_url};
use serde_json::Value;

use crate::error::PROVIDER;
use crate::request::DEFAULT_MAX_TOKENS;

/// The public API.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent by default.
pub const DEFAULT_VERSION: &str = "2023-06-01";

/// A secret string whose `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself (only for building the request header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// How the provider authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Auth {
    /// `x-api-key: <key>` (the API key).
    ApiKey(Secret),
    /// `authorization: Bearer <token>` (`ANTHROPIC_AUTH_TOKEN`, gateways).
    Bearer(Secret),
    /// No credentials (a local mock or a gateway that adds them).
    None,
}

/// Configuration of an [`AnthropicProvider`](crate::AnthropicProvider). `Debug` never shows
/// credentials or header values.
///
/// ```
/// use std::time::Duration;
/// use patchbay_anthropic::AnthropicConfig;
/// let config = AnthropicConfig::new("sk-ant-test")
///     .with_base_url("http://127.0.0.1:8080")
///     .with_beta("prompt-caching-2024-07-31")
///     .with_connect_timeout(Duration::from_secs(5));
/// assert!(!format!("{config:?}").contains("sk-ant-test"));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct AnthropicConfig {
    /// Credentials.
    pub auth: Auth,
    /// Base URL without `/v1/messages` (default [`DEFAULT_BASE_URL`]).
    pub base_url: String,
    /// The `anthropic-version` header.
    pub version: String,
    /// `anthropic-beta` flags sent with every request.
    pub betas: Vec<String>,
    /// Extra headers sent with every request (values never logged).
    pub headers: Vec<(String, String)>,
    /// Connection timeout (default 10 s).
    pub connect_timeout: Duration,
    /// The limits of a streamed response: read and content timeouts, the frame cap, the error
    /// body cap (see [`StreamLimits`] for the defaults: 5 min, 15 min, 64 MiB, 64 KiB).
    pub limits: StreamLimits,
    /// Longest whole request, streaming included (default none).
    pub request_timeout: Option<Duration>,
    /// `max_tokens` when the request context sets none (default [`DEFAULT_MAX_TOKENS`]).
    pub default_max_tokens: u32,
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match self.auth {
            Auth::ApiKey(_) => "api key",
            Auth::Bearer(_) => "bearer token",
            Auth::None => "none",
        };
        f.debug_struct("AnthropicConfig")
            .field("auth", &auth)
            .field("base_url", &redact_url(&self.base_url))
            .field("version", &self.version)
            .field("betas", &self.betas)
            .field("headers", &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("connect_timeout", &self.connect_timeout)
            .field("limits", &self.limits)
            .field("request_timeout", &self.request_timeout)
            .field("default_max_tokens", &self.default_max_tokens)
            .finish()
    }
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self {
            auth: Auth::None,
            base_url: DEFAULT_BASE_URL.into(),
            version: DEFAULT_VERSION.into(),
            betas: Vec::new(),
            headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            limits: StreamLimits::default(),
            request_timeout: None,
            default_max_tokens: DEFAULT_MAX_TOKENS,
        }
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl AnthropicConfig {
    /// A config with this API key and every default.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            auth: Auth::ApiKey(Secret::new(api_key)),
            ..Self::default()
        }
    }

    /// From the environment: `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN` for bearer auth),
    /// `ANTHROPIC_BASE_URL`, `ANTHROPIC_VERSION`, `ANTHROPIC_BETA` (comma-separated).
    pub fn from_env() -> Self {
        let mut config = Self::default();
        if let Some(key) = env("ANTHROPIC_API_KEY") {
            config.auth = Auth::ApiKey(Secret::new(key));
        } else if let Some(token) = env("ANTHROPIC_AUTH_TOKEN") {
            config.auth = Auth::Bearer(Secret::new(token));
        }
        if let Some(url) = env("ANTHROPIC_BASE_URL") {
            config.base_url = url;
        }
        if let Some(version) = env("ANTHROPIC_VERSION") {
            config.version = version;
        }
        if let Some(betas) = env("ANTHROPIC_BETA") {
            config.betas = betas
                .split(',')
                .map(|b| b.trim().to_string())
                .filter(|b| !b.is_empty())
                .collect();
        }
        config
    }

    /// The environment, then registry options on top: `api_key`, `auth_token`, `base_url`,
    /// `version`, `betas` (list), `headers` (object), `connect_timeout_ms`, `read_timeout_ms`,
    /// `content_timeout_ms` (`0` turns a timeout off), `max_line_bytes`, `max_error_body_bytes`,
    /// `request_timeout_ms`, `default_max_tokens`. `null` means no options.
    pub fn from_options(options: &Value) -> Result<Self, ProviderError> {
        let mut config = Self::from_env();
        let map = match options {
            Value::Null => return Ok(config),
            Value::Object(map) => map,
            _ => return Err(ProviderError::config("anthropic options must be a JSON object").with_provider(PROVIDER)),
        };
        let string = |key: &str| -> Result<Option<String>, ProviderError> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(
                    ProviderError::config(format!("anthropic option `{key}` must be a string")).with_provider(PROVIDER),
                ),
            }
        };
        let millis = |key: &str| -> Result<Option<Duration>, ProviderError> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v.as_u64().map(|ms| Some(Duration::from_millis(ms))).ok_or_else(|| {
                    ProviderError::config(format!("anthropic option `{key}` must be milliseconds"))
                        .with_provider(PROVIDER)
                }),
            }
        };
        if let Some(key) = string("api_key")? {
            config.auth = Auth::ApiKey(Secret::new(key));
        }
        if let Some(token) = string("auth_token")? {
            config.auth = Auth::Bearer(Secret::new(token));
        }
        if let Some(url) = string("base_url")? {
            config.base_url = url;
        }
        if let Some(version) = string("version")? {
            config.version = version;
        }
        if let Some(betas) = map.get("betas").and_then(Value::as_array) {
            config.betas = betas.iter().filter_map(Value::as_str).map(str::to_string).collect();
        }
        if let Some(headers) = map.get("headers").and_then(Value::as_object) {
            for (name, value) in headers {
                if let Some(value) = value.as_str() {
                    config.headers.push((name.clone(), value.to_string()));
                }
            }
        }
        if let Some(wait) = millis("connect_timeout_ms")? {
            config.connect_timeout = wait;
        }
        let off_if_zero = |wait: Duration| (!wait.is_zero()).then_some(wait);
        if let Some(wait) = millis("read_timeout_ms")? {
            config.limits.read_timeout = off_if_zero(wait);
        }
        if let Some(wait) = millis("content_timeout_ms")? {
            config.limits.content_timeout = off_if_zero(wait);
        }
        let bytes = |key: &str| -> Result<Option<usize>, ProviderError> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .map(Some)
                    .ok_or_else(|| {
                        ProviderError::config(format!("anthropic option `{key}` must be a byte count"))
                            .with_provider(PROVIDER)
                    }),
            }
        };
        if let Some(max) = bytes("max_line_bytes")? {
            config.limits = config.limits.with_max_line_bytes(max);
        }
        if let Some(max) = bytes("max_error_body_bytes")? {
            config.limits = config.limits.with_max_error_body_bytes(max);
        }
        if let Some(wait) = millis("request_timeout_ms")? {
            config.request_timeout = Some(wait);
        }
        if let Some(max) = map.get("default_max_tokens").and_then(Value::as_u64) {
            config.default_max_tokens = u32::try_from(max).unwrap_or(u32::MAX);
        }
        Ok(config)
    }

    /// Set the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.auth = Auth::ApiKey(Secret::new(key));
        self
    }

    /// Set the base URL (`http://127.0.0.1:PORT` for a mock).
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Set the `anthropic-version` header.
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Add an `anthropic-beta` flag.
    pub fn with_beta(mut self, beta: impl Into<String>) -> Self {
        self.betas.push(beta.into());
        self
    }

    /// Add a header sent with every request.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Set the connection timeout.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Set the read timeout: longest silence before the headers or between body reads
    /// (`None`: none).
    pub fn with_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.limits.read_timeout = timeout;
        self
    }

    /// Set every stream limit at once.
    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Set the whole-request timeout (`None`: none).
    pub fn with_request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Set the default `max_tokens`.
    pub fn with_default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.default_max_tokens = max_tokens;
        self
    }
}
