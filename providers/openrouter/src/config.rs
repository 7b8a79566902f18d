//! Configuration: base URL, key, dialect, OpenRouter headers; from code, environment or JSON.

use std::fmt;
use std::time::Duration;

use patchbay_core::kit::{StreamLimits, redact_serde_message, redact_url};
use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;
use crate::provider::OpenRouterProvider;

/// OpenRouter's API base URL.
pub const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";
/// OpenAI's API base URL.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Which server family the base URL points at; decides the few fields that differ.
///
/// | | OpenRouter | OpenAi | Generic |
/// | --- | --- | --- | --- |
/// | `usage: {include: true}` | sent | - | - |
/// | reasoning sent back (`reasoning_details`) | yes | dropped, with a warning | dropped, with a warning |
/// | output limit | `max_tokens` | `max_completion_tokens` | `max_tokens` |
/// | `top_k` | sent | dropped, with a warning | sent |
/// | `thinking_budget` | `reasoning.max_tokens` | warning | warning |
/// | `cache_control` on text | sent | warning | warning |
/// | `HTTP-Referer` / `X-Title` | sent when set | sent when set | sent when set |
///
/// Strict servers reject unknown fields, so OpenRouter-only fields go only to OpenRouter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// openrouter.ai.
    OpenRouter,
    /// api.openai.com (and Azure OpenAI's chat endpoint).
    #[serde(alias = "openai")]
    OpenAi,
    /// Any other OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio, DeepSeek...).
    Generic,
}

impl Dialect {
    /// Guess the dialect from a base URL.
    pub fn detect(base_url: &str) -> Self {
        if base_url.contains("openrouter.ai") {
            Self::OpenRouter
        } else if base_url.contains("api.openai.com") {
            Self::OpenAi
        } else {
            Self::Generic
        }
    }
}

/// How to reach the server. `Debug` never shows the key or header values.
///
/// ```
/// use patchbay_openrouter::{Dialect, OpenRouterConfig};
/// let config = OpenRouterConfig::new("http://127.0.0.1:8080/v1")
///     .with_api_key("sk-secret")
///     .with_title("my app");
/// assert_eq!(config.dialect(), Dialect::Generic);
/// assert!(!format!("{config:?}").contains("sk-secret"));
/// ```
#[derive(Clone)]
pub struct OpenRouterConfig {
    pub(crate) base_url: String,
    pub(crate) api_key: Option<String>,
    pub(crate) dialect: Dialect,
    pub(crate) referer: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) include_usage: bool,
    pub(crate) connect_timeout: Duration,
    pub(crate) limits: StreamLimits,
}

impl fmt::Debug for OpenRouterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenRouterConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("dialect", &self.dialect)
            .field("referer", &self.referer)
            .field("title", &self.title)
            .field(
                "headers",
                &self.headers.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .field("include_usage", &self.include_usage)
            .field("connect_timeout", &self.connect_timeout)
            .field("limits", &self.limits)
            .finish()
    }
}

/// The JSON options [`OpenRouterConfig::from_options`] reads.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
    dialect: Option<Dialect>,
    referer: Option<String>,
    title: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    include_usage: Option<bool>,
    connect_timeout_secs: Option<u64>,
    read_timeout_ms: Option<u64>,
    content_timeout_ms: Option<u64>,
    max_line_bytes: Option<usize>,
    max_error_body_bytes: Option<usize>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl OpenRouterConfig {
    /// A config for this base URL (the part before `/chat/completions`), dialect detected
    /// from it, no key.
    pub fn new(base_url: impl Into<String>) -> Self {
        let base_url = base_url.into().trim_end_matches('/').to_string();
        Self {
            dialect: Dialect::detect(&base_url),
            base_url,
            api_key: None,
            referer: None,
            title: None,
            headers: Vec::new(),
            include_usage: true,
            connect_timeout: Duration::from_secs(30),
            limits: StreamLimits::default(),
        }
    }

    /// OpenRouter with this key.
    pub fn openrouter(api_key: impl Into<String>) -> Self {
        Self::new(OPENROUTER_BASE_URL).with_api_key(api_key)
    }

    /// OpenAI with this key.
    pub fn openai(api_key: impl Into<String>) -> Self {
        Self::new(OPENAI_BASE_URL).with_api_key(api_key)
    }

    /// From the environment: `OPENAI_BASE_URL` picks the server (its key is
    /// `OPENROUTER_API_KEY` when it is OpenRouter, else `OPENAI_API_KEY`, optional for local
    /// servers); without it, `OPENROUTER_API_KEY` means OpenRouter and `OPENAI_API_KEY` means
    /// OpenAI. Neither key and no base URL is a config error.
    pub fn from_env() -> Result<Self, Error> {
        Self::resolve(None, None)
    }

    fn resolve(base_url: Option<String>, api_key: Option<String>) -> Result<Self, Error> {
        let base_url = base_url.or_else(|| env("OPENAI_BASE_URL"));
        let config = match base_url {
            Some(url) => {
                let mut config = Self::new(url);
                let from_env = if config.dialect == Dialect::OpenRouter {
                    env("OPENROUTER_API_KEY")
                } else {
                    env("OPENAI_API_KEY")
                };
                config.api_key = api_key.or(from_env);
                if config.api_key.is_none() && config.dialect != Dialect::Generic {
                    return Err(Error::MissingApiKey);
                }
                config
            }
            None => match (api_key, env("OPENROUTER_API_KEY"), env("OPENAI_API_KEY")) {
                (Some(key), _, _) | (None, Some(key), _) => Self::openrouter(key),
                (None, None, Some(key)) => Self::openai(key),
                (None, None, None) => return Err(Error::MissingApiKey),
            },
        };
        config.validated()
    }

    /// From JSON options (the registry hook), all fields optional:
    ///
    /// ```json
    /// { "base_url": "https://openrouter.ai/api/v1", "api_key": "...", "api_key_env": "MY_KEY",
    ///   "dialect": "openrouter" | "openai" | "generic", "referer": "https://my.app",
    ///   "title": "My App", "headers": { "X-Extra": "1" }, "include_usage": true,
    ///   "connect_timeout_secs": 30, "read_timeout_ms": 300000, "content_timeout_ms": 900000,
    ///   "max_line_bytes": 67108864, "max_error_body_bytes": 65536 }
    /// ```
    ///
    /// A timeout of `0` turns it off (see [`StreamLimits`] for what each limit does).
    ///
    /// Missing `base_url` or key fall back to the environment as in [`Self::from_env`];
    /// `api_key_env` names the variable holding the key. Unknown fields are an error.
    pub fn from_options(options: &Value) -> Result<Self, Error> {
        let options = if options.is_null() {
            Options::default()
        } else {
            Options::deserialize(options).map_err(|e| Error::BadOptions(redact_serde_message(&e.to_string())))?
        };
        let key = options.api_key.or_else(|| options.api_key_env.as_deref().and_then(env));
        let mut config = Self::resolve(options.base_url, key)?;
        if let Some(dialect) = options.dialect {
            config.dialect = dialect;
        }
        config.referer = options.referer;
        config.title = options.title;
        config.headers = options.headers.into_iter().collect();
        if let Some(include) = options.include_usage {
            config.include_usage = include;
        }
        if let Some(secs) = options.connect_timeout_secs {
            config.connect_timeout = Duration::from_secs(secs);
        }
        let millis = |ms: u64| (ms > 0).then(|| Duration::from_millis(ms));
        if let Some(ms) = options.read_timeout_ms {
            config.limits.read_timeout = millis(ms);
        }
        if let Some(ms) = options.content_timeout_ms {
            config.limits.content_timeout = millis(ms);
        }
        if let Some(max) = options.max_line_bytes {
            config.limits = config.limits.with_max_line_bytes(max);
        }
        if let Some(max) = options.max_error_body_bytes {
            config.limits = config.limits.with_max_error_body_bytes(max);
        }
        Ok(config)
    }

    fn validated(self) -> Result<Self, Error> {
        if self.base_url.starts_with("http://") || self.base_url.starts_with("https://") {
            Ok(self)
        } else {
            Err(Error::BadBaseUrl(redact_url(&self.base_url).into_owned()))
        }
    }

    /// Set the API key (sent as `Authorization: Bearer`).
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Override the detected dialect.
    pub fn with_dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// OpenRouter's `HTTP-Referer` (your app's URL, for its rankings).
    pub fn with_referer(mut self, referer: impl Into<String>) -> Self {
        self.referer = Some(referer.into());
        self
    }

    /// OpenRouter's `X-Title` (your app's name).
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// An extra header on every request (its value never reaches logs or `Debug`).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Ask for usage in the stream (`stream_options.include_usage`, on by default); turn it
    /// off for servers that reject `stream_options`.
    pub fn with_include_usage(mut self, include: bool) -> Self {
        self.include_usage = include;
        self
    }

    /// How long connecting may take (default 30 s).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The limits of a response: read and content timeouts, the line cap, the error body cap
    /// (defaults in [`StreamLimits`]: 5 min, 15 min, 64 MiB, 64 KiB).
    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Set the read timeout: longest silence before the headers or between body reads
    /// (`None`: none).
    pub fn with_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.limits.read_timeout = timeout;
        self
    }

    /// The limits of a response.
    pub fn limits(&self) -> &StreamLimits {
        &self.limits
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Build the provider.
    pub fn build(self) -> Result<OpenRouterProvider, Error> {
        OpenRouterProvider::new(self.validated()?)
    }
}
