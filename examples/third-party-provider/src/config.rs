//! [`OllamaConfig`]: where the server is, its optional key, and the stream limits.

use std::env::VarError;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use patchbay_core::kit::{OptionsError, Secret, StreamLimits, read_options, redact_url};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, UrlError};

/// The address of a local Ollama server.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";

/// The port Ollama listens on, added to an `OLLAMA_HOST` given without scheme and port.
const DEFAULT_PORT: u16 = 11434;

/// How to reach an Ollama server. `Clone`; `Debug` shows no key and no URL credentials.
///
/// ```
/// use std::time::Duration;
/// use patchbay_ollama::OllamaConfig;
/// let config = OllamaConfig::from_options(&serde_json::json!({"base_url": "http://gpu-box:11434"}))
///     .expect("valid options")
///     .with_read_timeout(Some(Duration::from_secs(60)));
/// assert_eq!(config.base_url(), "http://gpu-box:11434");
/// assert!(!format!("{config:?}").contains("sk-"));
/// ```
#[derive(Clone)]
pub struct OllamaConfig {
    base_url: String,
    api_key: Option<Secret>,
    limits: StreamLimits,
    connect_timeout: Option<Duration>,
    record_dir: Option<PathBuf>,
}

impl Default for OllamaConfig {
    fn default() -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key: None,
            limits: StreamLimits::default(),
            connect_timeout: Some(Duration::from_secs(10)),
            record_dir: None,
        }
    }
}

impl fmt::Debug for OllamaConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OllamaConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("limits", &self.limits)
            .field("connect_timeout", &self.connect_timeout)
            .field("record_dir", &self.record_dir)
            .finish()
    }
}

/// The JSON options, read in one go (`deny_unknown_fields`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    base_url: Option<String>,
    api_key: Option<Secret>,
    read_timeout_ms: Option<u64>,
    content_timeout_ms: Option<u64>,
    connect_timeout_ms: Option<u64>,
    max_line_bytes: Option<usize>,
    record_dir: Option<String>,
}

/// `Some(ms)` as a limit: `0` turns it off.
fn millis(ms: u64) -> Option<Duration> {
    (ms > 0).then(|| Duration::from_millis(ms))
}

impl OllamaConfig {
    /// The environment alone: `OLLAMA_HOST` (as Ollama reads it: `host`, `host:port` or a URL;
    /// default [`DEFAULT_BASE_URL`]) and `OLLAMA_API_KEY` (a bearer token for a hosted server;
    /// empty means none). A malformed `OLLAMA_HOST` is an error.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_lookup(|name| std::env::var(name))
    }

    fn from_lookup(lookup: impl Fn(&str) -> Result<String, VarError>) -> Result<Self, Error> {
        let read = |name: &'static str| match lookup(name) {
            Ok(value) if value.trim().is_empty() => Ok(None),
            Ok(value) => Ok(Some(value)),
            Err(VarError::NotPresent) => Ok(None),
            Err(VarError::NotUnicode(_)) => Err(Error::Env {
                name: name.into(),
                reason: "not valid Unicode",
            }),
        };
        let mut config = Self::default();
        if let Some(host) = read("OLLAMA_HOST")? {
            config.base_url = normalize_host(&host, "OLLAMA_HOST")?;
        }
        config.api_key = read("OLLAMA_API_KEY")?.map(|key| Secret::new(key.trim()));
        config.record_dir = read("PATCHBAY_RECORD_DIR")?.map(PathBuf::from);
        Ok(config)
    }

    /// [`from_env`](Self::from_env) with JSON options on top (`null` or `{}`: the environment
    /// alone). Keys: `base_url`, `api_key`, `read_timeout_ms`, `content_timeout_ms`,
    /// `connect_timeout_ms` (`0` turns a timeout off), `max_line_bytes` (at least 1) and
    /// `record_dir` (`""` turns recording off; see [`with_record_dir`](Self::with_record_dir)). An
    /// unknown key or a wrong type is an error naming the key, never quoting a value.
    pub fn from_options(options: &Value) -> Result<Self, Error> {
        let options: Options = read_options(options).map_err(|source| Error::Options { source })?;
        let mut config = Self::from_env()?;
        if let Some(url) = options.base_url {
            config.base_url = normalize_host(&url, "base_url")?;
        }
        if let Some(key) = options.api_key {
            config.api_key = Some(key);
        }
        if let Some(ms) = options.read_timeout_ms {
            config.limits = config.limits.with_read_timeout(millis(ms));
        }
        if let Some(ms) = options.content_timeout_ms {
            config.limits = config.limits.with_content_timeout(millis(ms));
        }
        if let Some(ms) = options.connect_timeout_ms {
            config.connect_timeout = millis(ms);
        }
        if let Some(dir) = options.record_dir {
            config.record_dir = (!dir.trim().is_empty()).then(|| PathBuf::from(dir));
        }
        match options.max_line_bytes {
            Some(0) => {
                return Err(Error::Options {
                    source: OptionsError {
                        key: Some("max_line_bytes".into()),
                        message: "must be at least 1".into(),
                    },
                });
            }
            Some(max) => config.limits = config.limits.with_max_line_bytes(max),
            None => {}
        }
        Ok(config)
    }

    /// Use this server (`http://host:port`, possibly with a path prefix behind a proxy); checked
    /// by [`OllamaProvider::new`](crate::OllamaProvider::new).
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into().trim_end_matches('/').to_string();
        self
    }

    /// Send this bearer token (a hosted Ollama); `None` sends no `authorization` header.
    pub fn with_api_key(mut self, key: Option<Secret>) -> Self {
        self.api_key = key;
        self
    }

    /// Use these stream limits (timeouts, line cap, error body cap).
    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Set the read timeout (`None`: off).
    pub fn with_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.limits = self.limits.with_read_timeout(timeout);
        self
    }

    /// Set the content timeout (`None`: off).
    pub fn with_content_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.limits = self.limits.with_content_timeout(timeout);
        self
    }

    /// Set the connect timeout (`None`: the system's).
    pub fn with_connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Set the cap on one line of the stream.
    pub fn with_max_line_bytes(mut self, max: usize) -> Self {
        self.limits = self.limits.with_max_line_bytes(max);
        self
    }

    /// Record every call into `dir` in the fixture layout (`DIR/ollama/recorded/...`, a MANIFEST
    /// line each; the key never written), readable by `FixtureRun::in_dir` and `replay`.
    pub fn with_record_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.record_dir = Some(dir.into());
        self
    }

    /// Where calls are recorded, if anywhere.
    pub fn record_dir(&self) -> Option<&Path> {
        self.record_dir.as_deref()
    }

    /// The server's base URL (no trailing slash).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The bearer token, if any.
    pub fn api_key(&self) -> Option<&Secret> {
        self.api_key.as_ref()
    }

    /// The stream limits.
    pub fn limits(&self) -> &StreamLimits {
        &self.limits
    }

    /// The connect timeout.
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }
}

/// A base URL from `OLLAMA_HOST` or an option, read as Ollama reads `OLLAMA_HOST`: without a
/// scheme, `http://` and (without a port) port 11434; with one, the URL as given.
pub(crate) fn normalize_host(raw: &str, origin: &'static str) -> Result<String, Error> {
    let raw = raw.trim();
    let refuse = |source| Error::BaseUrl { origin, source };
    let (text, bare) = match raw.contains("://") {
        true => (raw.to_string(), false),
        false => (format!("http://{raw}"), true),
    };
    let mut url = url::Url::parse(&text).map_err(|e| refuse(UrlError::Parse(e)))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refuse(UrlError::Scheme));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(refuse(UrlError::NoHost));
    }
    if bare && url.port().is_none() {
        url.set_port(Some(DEFAULT_PORT))
            .map_err(|()| refuse(UrlError::NoHost))?;
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_host_is_read_the_way_ollama_reads_it() {
        for (raw, want) in [
            ("127.0.0.1", "http://127.0.0.1:11434"),
            ("0.0.0.0:8080", "http://0.0.0.0:8080"),
            ("gpu-box", "http://gpu-box:11434"),
            ("https://ollama.example/", "https://ollama.example"),
            ("http://proxy:80/ollama/", "http://proxy/ollama"),
        ] {
            assert_eq!(normalize_host(raw, "OLLAMA_HOST").expect(raw), want, "{raw}");
        }
        for raw in ["ftp://x", "http://", "http://[::1"] {
            assert!(normalize_host(raw, "OLLAMA_HOST").is_err(), "{raw}");
        }
    }

    #[test]
    fn the_environment_alone_gives_host_and_key() {
        let env = |name: &str| match name {
            "OLLAMA_HOST" => Ok("box:1234".to_string()),
            "OLLAMA_API_KEY" => Ok("sk-secret".to_string()),
            _ => Err(VarError::NotPresent),
        };
        let config = OllamaConfig::from_lookup(env).expect("valid environment");
        assert_eq!(config.base_url(), "http://box:1234");
        assert_eq!(config.api_key().map(Secret::expose), Some("sk-secret"));
        assert!(!format!("{config:?}").contains("sk-secret"));
        let broken = |name: &str| match name {
            "OLLAMA_HOST" => Ok("ftp://box".to_string()),
            _ => Err(VarError::NotPresent),
        };
        assert!(matches!(OllamaConfig::from_lookup(broken), Err(Error::BaseUrl { .. })));
    }

    /// A key with a stray byte in `OLLAMA_API_KEY` is refused naming the variable, never
    /// showing the value (neither the error nor its sources).
    #[cfg(unix)]
    #[test]
    fn a_variable_that_is_not_unicode_is_refused_without_its_value() {
        use std::os::unix::ffi::OsStringExt;
        let env = |name: &str| match name {
            "OLLAMA_API_KEY" => Err(VarError::NotUnicode(std::ffi::OsString::from_vec(
                b"sk-CANARY-\xff".to_vec(),
            ))),
            _ => Err(VarError::NotPresent),
        };
        let error = OllamaConfig::from_lookup(env).expect_err("not Unicode");
        let mut shown = format!("{error} {error:?}");
        let mut source = std::error::Error::source(&error);
        while let Some(next) = source {
            shown.push_str(&format!(" | {next} {next:?}"));
            source = next.source();
        }
        assert!(shown.contains("OLLAMA_API_KEY"), "{shown}");
        assert!(!shown.contains("CANARY"), "{shown}");
    }
}
