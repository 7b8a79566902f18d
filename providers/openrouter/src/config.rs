//! Configuration: base URL, key, dialect, OpenRouter headers; from code, the environment or
//! JSON options. Uses only [`crate::error`] (nothing here knows the provider).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use patchbay_core::kit::{Secret, StreamLimits, env_var, read_options, redact_url};
use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;

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

/// How a structured-output request ([`RequestContext::output_schema`](patchbay_core::RequestContext::output_schema)) is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    /// `response_format: {"type": "json_schema", "json_schema": {name, description, schema,
    /// strict}}`, which OpenAI, OpenRouter, vLLM, Ollama, LM Studio and llama.cpp take; `strict`
    /// is sent only to OpenAI and OpenRouter.
    #[default]
    JsonSchema,
    /// `response_format: {"type": "json_object"}` with the schema in a system message, for
    /// servers with a JSON mode but no schemas (DeepSeek...): the shape is asked for, not
    /// enforced, and a warning says so.
    JsonObject,
}

/// How to reach the server. `Debug` never shows the key, header values or URL credentials.
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
    pub(crate) api_key: Option<Secret>,
    pub(crate) dialect: Dialect,
    pub(crate) referer: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) include_usage: bool,
    pub(crate) response_format: ResponseFormat,
    pub(crate) connect_timeout: Option<Duration>,
    pub(crate) limits: StreamLimits,
    pub(crate) record_dir: Option<PathBuf>,
}

impl fmt::Debug for OpenRouterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `HTTP-Referer` and `X-Title` are header values too: only whether they are set shows.
        let set = |value: &Option<String>| value.as_ref().map(|_| "[set]");
        f.debug_struct("OpenRouterConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("dialect", &self.dialect)
            .field("referer", &set(&self.referer))
            .field("title", &set(&self.title))
            .field(
                "headers",
                &self.headers.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .field("include_usage", &self.include_usage)
            .field("response_format", &self.response_format)
            .field("connect_timeout", &self.connect_timeout)
            .field("limits", &self.limits)
            .field("record_dir", &self.record_dir)
            .finish()
    }
}

/// The JSON options [`OpenRouterConfig::from_options`] reads (documented in the crate's
/// `# Options`). No `Debug`: it holds the key.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    base_url: Option<String>,
    api_key: Option<Secret>,
    api_key_env: Option<String>,
    dialect: Option<Dialect>,
    referer: Option<String>,
    title: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    include_usage: Option<bool>,
    response_format: Option<ResponseFormat>,
    connect_timeout_ms: Option<u64>,
    read_timeout_ms: Option<u64>,
    content_timeout_ms: Option<u64>,
    max_line_bytes: Option<usize>,
    max_error_body_bytes: Option<usize>,
    record_dir: Option<PathBuf>,
}

impl Options {
    /// Read the options with core's [`read_options`]: `null` is none; anything but an object,
    /// an unknown key or a wrong type is an error naming the key without quoting its value.
    fn read(value: &Value) -> Result<Self, Error> {
        read_options::<Self>(value).map_err(|source| Error::Options { source })
    }
}

/// Where variables are read: the process environment, or a map in tests.
type Vars<'a> = &'a dyn Fn(&str) -> Result<Option<String>, Error>;

/// One variable of the process environment ([`env_var`]): unset or blank is `None`; not Unicode
/// is [`Error::Env`].
fn process_var(name: &str) -> Result<Option<String>, Error> {
    env_var(name).map_err(|reason| Error::Env {
        name: name.to_string(),
        reason,
    })
}

/// The variable holding the key for a dialect.
fn key_variable(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::OpenRouter => "OPENROUTER_API_KEY",
        Dialect::OpenAi | Dialect::Generic => "OPENAI_API_KEY",
    }
}

fn millis(ms: u64) -> Option<Duration> {
    (ms > 0).then(|| Duration::from_millis(ms))
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
            response_format: ResponseFormat::default(),
            connect_timeout: Some(Duration::from_secs(30)),
            limits: StreamLimits::default(),
            record_dir: None,
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

    /// The environment alone: `OPENAI_BASE_URL` picks the server (its key is
    /// `OPENROUTER_API_KEY` when it is OpenRouter, else `OPENAI_API_KEY`, optional for other
    /// servers); without it, `OPENROUTER_API_KEY` means OpenRouter and `OPENAI_API_KEY` means
    /// OpenAI. `PATCHBAY_RECORD_DIR` records every call there. Blank variables count as unset;
    /// no key for OpenRouter or OpenAI, a base URL that is not http(s) or a variable that is not
    /// Unicode is an error.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_options_in(&Value::Null, &process_var)
    }

    /// [`Self::from_env`] with JSON options on top (the registry's hook; every key is listed in
    /// the crate's `# Options`). `null` or `{}` is the environment alone. An unknown key or a
    /// wrong type is [`Error::Options`] naming the key (never quoting its value).
    ///
    /// ```
    /// use patchbay_openrouter::OpenRouterConfig;
    /// let options = serde_json::json!({ "base_url": "http://127.0.0.1:8080/v1", "connect_timeout_ms": 2000 });
    /// let config = OpenRouterConfig::from_options(&options).unwrap();
    /// assert_eq!(config.base_url(), "http://127.0.0.1:8080/v1");
    /// assert!(OpenRouterConfig::from_options(&serde_json::json!({ "connect_timeout_secs": 2 })).is_err());
    /// ```
    pub fn from_options(options: &Value) -> Result<Self, Error> {
        Self::from_options_in(options, &process_var)
    }

    fn from_options_in(options: &Value, vars: Vars<'_>) -> Result<Self, Error> {
        let options = Options::read(options)?;
        let api_key = match (options.api_key, options.api_key_env) {
            (Some(key), _) => Some(key),
            (None, Some(name)) => Some(Secret::new(vars(&name)?.ok_or(Error::MissingKeyVariable)?)),
            (None, None) => None,
        };
        let (base_url, origin) = match options.base_url {
            Some(url) => (Some(url), "the `base_url` option"),
            None => (vars("OPENAI_BASE_URL")?, "OPENAI_BASE_URL"),
        };
        let mut config = Self::locate(base_url, options.dialect, api_key, vars)?;
        config.referer = options.referer;
        config.title = options.title;
        config.headers = options.headers.into_iter().collect();
        if let Some(include) = options.include_usage {
            config.include_usage = include;
        }
        if let Some(format) = options.response_format {
            config.response_format = format;
        }
        if let Some(ms) = options.connect_timeout_ms {
            config.connect_timeout = millis(ms);
        }
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
        config.record_dir = match options.record_dir {
            // An empty string turns off what PATCHBAY_RECORD_DIR turned on.
            Some(dir) => Some(dir).filter(|dir| !dir.as_os_str().is_empty()),
            None => vars(patchbay_http::record::RECORD_DIR_ENV)?.map(PathBuf::from),
        };
        config.validated(origin)
    }

    /// The server and its key. With a base URL: its dialect (given or detected) names the key's
    /// variable. Without: the dialect given picks OpenRouter or OpenAI; else a key given, or
    /// `OPENROUTER_API_KEY`, means OpenRouter and `OPENAI_API_KEY` means OpenAI.
    fn locate(
        base_url: Option<String>,
        dialect: Option<Dialect>,
        api_key: Option<Secret>,
        vars: Vars<'_>,
    ) -> Result<Self, Error> {
        let key_from = |dialect: Dialect| -> Result<Option<Secret>, Error> {
            match &api_key {
                Some(key) => Ok(Some(key.clone())),
                None => Ok(vars(key_variable(dialect))?.map(Secret::new)),
            }
        };
        let (mut config, key) = match (base_url, dialect) {
            (Some(url), dialect) => {
                let mut config = Self::new(url);
                config.dialect = dialect.unwrap_or(config.dialect);
                let key = key_from(config.dialect)?;
                (config, key)
            }
            (None, Some(Dialect::Generic)) => return Err(Error::MissingBaseUrl),
            (None, Some(Dialect::OpenAi)) => (Self::new(OPENAI_BASE_URL), key_from(Dialect::OpenAi)?),
            (None, Some(Dialect::OpenRouter)) => (Self::new(OPENROUTER_BASE_URL), key_from(Dialect::OpenRouter)?),
            (None, None) => match key_from(Dialect::OpenRouter)? {
                Some(key) => (Self::new(OPENROUTER_BASE_URL), Some(key)),
                None => (Self::new(OPENAI_BASE_URL), key_from(Dialect::OpenAi)?),
            },
        };
        if key.is_none() && config.dialect != Dialect::Generic {
            return Err(Error::MissingKey);
        }
        config.api_key = key;
        Ok(config)
    }

    /// The config, or [`Error::BaseUrl`] naming `origin` when the base URL is not http(s).
    pub(crate) fn validated(self, origin: &'static str) -> Result<Self, Error> {
        if self.base_url.starts_with("http://") || self.base_url.starts_with("https://") {
            Ok(self)
        } else {
            Err(Error::BaseUrl { origin })
        }
    }

    /// Set the API key (sent as `Authorization: Bearer`, held as a [`Secret`]).
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(key));
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

    /// How structured output is asked for (default [`ResponseFormat::JsonSchema`]).
    pub fn with_response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = format;
        self
    }

    /// How long connecting may take (default 30 s; `None`: no limit).
    pub fn with_connect_timeout(mut self, timeout: Option<Duration>) -> Self {
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

    /// Record every call into `dir`: the response body as received, the request without
    /// credentials and a manifest line, laid out like the shipped fixtures (see
    /// [`patchbay_http::record`]).
    pub fn with_record_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.record_dir = Some(dir.into());
        self
    }

    /// The folder calls are recorded into, if any.
    pub fn record_dir(&self) -> Option<&std::path::Path> {
        self.record_dir.as_deref()
    }

    /// The limits of a response.
    pub fn limits(&self) -> &StreamLimits {
        &self.limits
    }

    /// How long connecting may take (`None`: no limit).
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Whether a key is set.
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// OpenRouter's `HTTP-Referer`, if set.
    pub fn referer(&self) -> Option<&str> {
        self.referer.as_deref()
    }

    /// OpenRouter's `X-Title`, if set.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The names and values of the extra headers sent with every request.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// Whether usage is asked for in the stream (`stream_options.include_usage`).
    pub fn include_usage(&self) -> bool {
        self.include_usage
    }

    /// How structured output is asked for.
    pub fn response_format(&self) -> ResponseFormat {
        self.response_format
    }
}

#[cfg(test)]
mod tests;
