//! Provider configuration: from code, from the environment, or from registry JSON options.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use patchbay_core::kit::{Secret, StreamLimits, read_options, redact_url};
use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;
use crate::request::{DEFAULT_MAX_TOKENS, StructuredOutput};

/// The public API.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent by default.
pub const DEFAULT_VERSION: &str = "2023-06-01";

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
/// credentials, header values or URL credentials.
///
/// ```
/// use std::time::Duration;
/// use patchbay_anthropic::AnthropicConfig;
/// let config = AnthropicConfig::new("sk-ant-test")
///     .with_base_url("http://127.0.0.1:8080")
///     .with_beta("prompt-caching-2024-07-31")
///     .with_connect_timeout(Duration::from_secs(5));
/// assert!(!format!("{config:?}").contains("sk-ant-test"));
/// assert_eq!(config.base_url(), "http://127.0.0.1:8080");
/// ```
///
/// The fields are private: set them with the `with_*` methods, read them with the getters of
/// the same name (see the crate docs' `# Decisions`).
#[derive(Clone)]
pub struct AnthropicConfig {
    /// Credentials.
    pub(crate) auth: Auth,
    /// Base URL without `/v1/messages` (default [`DEFAULT_BASE_URL`]).
    pub(crate) base_url: String,
    /// The `anthropic-version` header.
    pub(crate) version: String,
    /// `anthropic-beta` flags sent with every request.
    pub(crate) betas: Vec<String>,
    /// Extra headers sent with every request (values never logged).
    pub(crate) headers: Vec<(String, String)>,
    /// Connection timeout (default 10 s).
    pub(crate) connect_timeout: Duration,
    /// The limits of a streamed response: read and content timeouts, the frame cap, the error
    /// body cap (see [`StreamLimits`] for the defaults: 5 min, 15 min, 64 MiB, 64 KiB).
    pub(crate) limits: StreamLimits,
    /// Longest whole request, streaming included (default none).
    pub(crate) request_timeout: Option<Duration>,
    /// `max_tokens` when the request context sets none (default [`DEFAULT_MAX_TOKENS`]).
    pub(crate) default_max_tokens: u32,
    /// How a structured-output request is sent (default [`StructuredOutput::Auto`]).
    pub(crate) structured_output: StructuredOutput,
    /// Record every call (request without credentials, response body, manifest line) into this
    /// folder, laid out like the shipped fixtures (default none; see
    /// [`patchbay_http::record`]).
    pub(crate) record_dir: Option<PathBuf>,
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
            .field("structured_output", &self.structured_output)
            .field("record_dir", &self.record_dir)
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
            structured_output: StructuredOutput::default(),
            record_dir: None,
        }
    }
}

/// A variable's value; unset, empty or blank is `None`, and a value that is not Unicode is an
/// error (not quoted: it may be a key).
fn env(name: &'static str) -> Result<Option<String>, Error> {
    match std::env::var_os(name) {
        None => Ok(None),
        Some(value) => match value.into_string() {
            Ok(value) => Ok(Some(value).filter(|v| !v.trim().is_empty())),
            Err(_) => Err(Error::Env {
                name: name.into(),
                reason: "not valid Unicode",
            }),
        },
    }
}

/// The endpoint of a base URL: `{base}/v1/messages`.
pub(crate) fn messages_url(base_url: &str, origin: &'static str) -> Result<reqwest::Url, Error> {
    let base = base_url.trim_end_matches('/');
    reqwest::Url::parse(&format!("{base}/v1/messages")).map_err(|source| Error::BaseUrl { origin, source })
}

/// The registry options, read in one go (see the crate docs' `# Options`). Every field is
/// optional; `null` is the same as absent.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Options {
    api_key: Option<Secret>,
    auth_token: Option<Secret>,
    base_url: Option<String>,
    version: Option<String>,
    betas: Option<Vec<String>>,
    headers: Option<BTreeMap<String, String>>,
    connect_timeout_ms: Option<u64>,
    read_timeout_ms: Option<u64>,
    content_timeout_ms: Option<u64>,
    max_line_bytes: Option<usize>,
    max_error_body_bytes: Option<usize>,
    request_timeout_ms: Option<u64>,
    default_max_tokens: Option<u32>,
    structured_output: Option<StructuredOutput>,
    record_dir: Option<PathBuf>,
}

/// What an option's value must be: the message of an [`Error::Options`] for a value of the
/// wrong type (serde's own message would be vaguer; neither quotes the value).
fn expected(key: &str) -> &'static str {
    match key {
        "betas" => "must be a list of strings",
        "headers" => "must be an object whose values are strings",
        "default_max_tokens" => "must be a whole number below 2^32",
        "structured_output" => "must be \"auto\", \"native\" or \"tool\"",
        "max_line_bytes" | "max_error_body_bytes" => "must be a byte count (a whole number)",
        key if key.ends_with("_ms") => "must be milliseconds (a whole number)",
        _ => "must be a string",
    }
}

impl Options {
    /// Parse `options` with core's [`read_options`], which names the key at fault.
    fn parse(options: &Value) -> Result<Self, Error> {
        read_options::<Self>(options).map_err(|mut source| {
            if let Some(key) = &source.key
                && !source.message.starts_with("unknown field")
            {
                source.message = expected(key).into();
            }
            Error::Options { source }
        })
    }
}

impl AnthropicConfig {
    /// A config with this API key and every default.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            auth: Auth::ApiKey(Secret::new(api_key)),
            ..Self::default()
        }
    }

    /// From the environment alone: `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN` for bearer
    /// auth), `ANTHROPIC_BASE_URL`, `ANTHROPIC_VERSION`, `ANTHROPIC_BETA` (comma-separated),
    /// `PATCHBAY_RECORD_DIR` (record every call there). Unset or blank variables are ignored;
    /// one that is not Unicode, or a base URL that does not parse, is an error.
    pub fn from_env() -> Result<Self, Error> {
        let mut config = Self::default();
        if let Some(key) = env("ANTHROPIC_API_KEY")? {
            config.auth = Auth::ApiKey(Secret::new(key));
        } else if let Some(token) = env("ANTHROPIC_AUTH_TOKEN")? {
            config.auth = Auth::Bearer(Secret::new(token));
        }
        if let Some(url) = env("ANTHROPIC_BASE_URL")? {
            messages_url(&url, "ANTHROPIC_BASE_URL")?;
            config.base_url = url;
        }
        if let Some(version) = env("ANTHROPIC_VERSION")? {
            config.version = version;
        }
        if let Some(betas) = env("ANTHROPIC_BETA")? {
            config.betas = betas
                .split(',')
                .map(|b| b.trim().to_string())
                .filter(|b| !b.is_empty())
                .collect();
        }
        if let Some(dir) = env(patchbay_http::record::RECORD_DIR_ENV)? {
            config.record_dir = Some(dir.into());
        }
        Ok(config)
    }

    /// [`from_env`](Self::from_env), then the registry options on top (`null` or `{}`: the
    /// environment alone). Every key is listed in the crate docs' `# Options`; an unknown key
    /// or a value of the wrong type is an error naming the key (never quoting the value).
    ///
    /// ```
    /// use patchbay_anthropic::{AnthropicConfig, Error};
    /// let config = AnthropicConfig::from_options(&serde_json::json!({"read_timeout_ms": 0})).unwrap();
    /// assert_eq!(config.limits().read_timeout, None);
    /// let error = AnthropicConfig::from_options(&serde_json::json!({"api_kee": "sk"})).unwrap_err();
    /// assert!(matches!(error, Error::Options { ref source } if source.key.as_deref() == Some("api_kee")));
    /// ```
    pub fn from_options(options: &Value) -> Result<Self, Error> {
        let options = Options::parse(options)?;
        let mut config = Self::from_env()?;
        if let Some(key) = options.api_key {
            config.auth = Auth::ApiKey(key);
        }
        if let Some(token) = options.auth_token {
            config.auth = Auth::Bearer(token);
        }
        if let Some(url) = options.base_url {
            messages_url(&url, "the `base_url` option")?;
            config.base_url = url;
        }
        if let Some(version) = options.version {
            config.version = version;
        }
        if let Some(betas) = options.betas {
            config.betas = betas;
        }
        config.headers.extend(options.headers.unwrap_or_default());
        let millis = Duration::from_millis;
        let off_if_zero = |ms: u64| (ms != 0).then(|| millis(ms));
        if let Some(ms) = options.connect_timeout_ms {
            config.connect_timeout = millis(ms);
        }
        if let Some(ms) = options.read_timeout_ms {
            config.limits.read_timeout = off_if_zero(ms);
        }
        if let Some(ms) = options.content_timeout_ms {
            config.limits.content_timeout = off_if_zero(ms);
        }
        if let Some(max) = options.max_line_bytes {
            config.limits = config.limits.with_max_line_bytes(max);
        }
        if let Some(max) = options.max_error_body_bytes {
            config.limits = config.limits.with_max_error_body_bytes(max);
        }
        if let Some(ms) = options.request_timeout_ms {
            config.request_timeout = off_if_zero(ms);
        }
        if let Some(max) = options.default_max_tokens {
            config.default_max_tokens = max;
        }
        if let Some(mode) = options.structured_output {
            config.structured_output = mode;
        }
        if let Some(dir) = options.record_dir {
            // An empty string turns off what PATCHBAY_RECORD_DIR turned on.
            config.record_dir = Some(dir).filter(|dir| !dir.as_os_str().is_empty());
        }
        Ok(config)
    }

    /// Set the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.auth = Auth::ApiKey(Secret::new(key));
        self
    }

    /// Set a bearer token (`authorization: Bearer`), replacing any API key.
    pub fn with_auth_token(mut self, token: impl Into<String>) -> Self {
        self.auth = Auth::Bearer(Secret::new(token));
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

    /// Set how structured output is asked for.
    pub fn with_structured_output(mut self, mode: StructuredOutput) -> Self {
        self.structured_output = mode;
        self
    }

    /// Record every call into `dir` (see [`record_dir`](Self::record_dir)).
    pub fn with_record_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.record_dir = Some(dir.into());
        self
    }

    /// The credentials.
    pub fn auth(&self) -> &Auth {
        &self.auth
    }

    /// The base URL (without `/v1/messages`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The `anthropic-version` header.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The `anthropic-beta` flags sent with every request.
    pub fn betas(&self) -> &[String] {
        &self.betas
    }

    /// The names and values of the extra headers sent with every request.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The connection timeout.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The limits of a streamed response.
    pub fn limits(&self) -> &StreamLimits {
        &self.limits
    }

    /// The whole-request timeout (`None`: none).
    pub fn request_timeout(&self) -> Option<Duration> {
        self.request_timeout
    }

    /// `max_tokens` when the request context sets none.
    pub fn default_max_tokens(&self) -> u32 {
        self.default_max_tokens
    }

    /// How a structured-output request is sent.
    pub fn structured_output(&self) -> StructuredOutput {
        self.structured_output
    }

    /// The folder every call is recorded into, if any.
    pub fn record_dir(&self) -> Option<&std::path::Path> {
        self.record_dir.as_deref()
    }
}
