//! Configuration: the backend (Gemini API or Vertex AI), its base URL and credentials; from
//! code, the environment or JSON options. Uses only [`crate::error`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use patchbay_core::kit::{Secret, StreamLimits, env_var, read_options, redact_url};
use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;

/// The Gemini API's base URL (the part before `/models/{model}:streamGenerateContent`).
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The token command Vertex AI uses when neither a token nor an API key is configured.
pub const DEFAULT_TOKEN_COMMAND: [&str; 3] = ["gcloud", "auth", "print-access-token"];

/// Which Google service serves the model. The wire is the same; the URL, the credentials and
/// the span's `gen_ai.provider.name` differ.
///
/// | | Gemini API | Vertex AI |
/// | --- | --- | --- |
/// | base URL | [`GEMINI_BASE_URL`] | `https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/publishers/google` (`aiplatform.googleapis.com` for `global`) |
/// | credentials | `x-goog-api-key` | `Authorization: Bearer` from an access token or a token command (an API key, Vertex's express mode, is sent as `x-goog-api-key`) |
/// | `gen_ai.provider.name` | `gcp.gemini` | `gcp.vertex_ai` |
/// | recorded as family | `gemini` | `gemini` (server `vertex`) |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// generativelanguage.googleapis.com (Google AI Studio keys).
    #[serde(alias = "gemini")]
    GeminiApi,
    /// Vertex AI (a Google Cloud project and location).
    #[serde(alias = "vertex")]
    VertexAi,
}

impl Backend {
    /// The OpenTelemetry GenAI provider name (`gcp.gemini`, `gcp.vertex_ai`).
    pub fn provider_name(self) -> &'static str {
        match self {
            Self::GeminiApi => "gcp.gemini",
            Self::VertexAi => "gcp.vertex_ai",
        }
    }
}

/// How to reach Gemini. `Debug` never shows the key, the token, header values or URL
/// credentials.
///
/// ```
/// use patchbay_gemini::{Backend, GeminiConfig};
/// let config = GeminiConfig::gemini_api("AIza-secret");
/// assert_eq!(config.backend(), Backend::GeminiApi);
/// assert!(!format!("{config:?}").contains("AIza-secret"));
/// let vertex = GeminiConfig::vertex("my-project", "us-central1");
/// assert_eq!(
///     vertex.base_url(),
///     "https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/publishers/google"
/// );
/// ```
#[derive(Clone)]
pub struct GeminiConfig {
    pub(crate) backend: Backend,
    pub(crate) base_url: String,
    pub(crate) api_key: Option<Secret>,
    pub(crate) access_token: Option<Secret>,
    pub(crate) token_command: Option<Vec<String>>,
    pub(crate) token_ttl: Duration,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) connect_timeout: Option<Duration>,
    pub(crate) limits: StreamLimits,
    pub(crate) record_dir: Option<PathBuf>,
}

impl fmt::Debug for GeminiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeminiConfig")
            .field("backend", &self.backend)
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("access_token", &self.access_token)
            // The command's program only: an argument may hold a credential.
            .field(
                "token_command",
                &self.token_command.as_ref().and_then(|command| command.first()),
            )
            .field("token_ttl", &self.token_ttl)
            .field(
                "headers",
                &self.headers.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .field("connect_timeout", &self.connect_timeout)
            .field("limits", &self.limits)
            .field("record_dir", &self.record_dir)
            .finish()
    }
}

/// The JSON options [`GeminiConfig::from_options`] reads (documented in the crate's
/// `# Options`). No `Debug`: it holds the key.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    backend: Option<Backend>,
    base_url: Option<String>,
    api_key: Option<Secret>,
    api_key_env: Option<String>,
    project: Option<String>,
    location: Option<String>,
    access_token: Option<Secret>,
    token_command: Option<Vec<String>>,
    token_ttl_ms: Option<u64>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    connect_timeout_ms: Option<u64>,
    read_timeout_ms: Option<u64>,
    content_timeout_ms: Option<u64>,
    max_line_bytes: Option<usize>,
    max_error_body_bytes: Option<usize>,
    record_dir: Option<PathBuf>,
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

fn millis(ms: u64) -> Option<Duration> {
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// Vertex AI's base URL for a project and location.
pub fn vertex_base_url(project: &str, location: &str) -> String {
    let host = if location == "global" {
        "aiplatform.googleapis.com".to_string()
    } else {
        format!("{location}-aiplatform.googleapis.com")
    };
    format!("https://{host}/v1/projects/{project}/locations/{location}/publishers/google")
}

/// A yes of `GOOGLE_GENAI_USE_VERTEXAI` (`true`, `1`, `yes`, any case).
fn truthy(value: &str) -> bool {
    matches!(value.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes")
}

impl GeminiConfig {
    /// A config for this base URL on the Gemini API backend, no key (a local mock or a proxy
    /// that adds it).
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            backend: Backend::GeminiApi,
            base_url: base_url.into().trim_end_matches('/').to_string(),
            api_key: None,
            access_token: None,
            token_command: None,
            token_ttl: Duration::from_secs(45 * 60),
            headers: Vec::new(),
            connect_timeout: Some(Duration::from_secs(30)),
            limits: StreamLimits::default(),
            record_dir: None,
        }
    }

    /// The Gemini API with this key.
    pub fn gemini_api(api_key: impl Into<String>) -> Self {
        Self::new(GEMINI_BASE_URL).with_api_key(api_key)
    }

    /// Vertex AI in this project and location (`us-central1`, `global`...), its token from
    /// [`DEFAULT_TOKEN_COMMAND`] until [`with_access_token`](Self::with_access_token) or
    /// [`with_token_command`](Self::with_token_command) says otherwise.
    pub fn vertex(project: &str, location: &str) -> Self {
        let mut config = Self::new(vertex_base_url(project, location));
        config.backend = Backend::VertexAi;
        config.token_command = Some(DEFAULT_TOKEN_COMMAND.iter().map(|s| s.to_string()).collect());
        config
    }

    /// The environment alone. `GOOGLE_GENAI_USE_VERTEXAI=true` picks Vertex AI (project
    /// `GOOGLE_CLOUD_PROJECT`, location `GOOGLE_CLOUD_LOCATION`, default `global`; base URL
    /// `GOOGLE_VERTEX_BASE_URL`; an API key `GOOGLE_API_KEY` for express mode, else the token
    /// from `gcloud auth print-access-token`); otherwise the Gemini API with `GEMINI_API_KEY`,
    /// else `GOOGLE_API_KEY`, at `GOOGLE_GEMINI_BASE_URL` (the variable Google's SDKs read).
    /// `PATCHBAY_RECORD_DIR` records every call there. Blank variables count as unset.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_options_in(&Value::Null, &process_var)
    }

    /// [`Self::from_env`] with JSON options on top (the registry's hook; every key is listed in
    /// the crate's `# Options`). `null` or `{}` is the environment alone. An unknown key or a
    /// wrong type is [`Error::Options`] naming the key (never quoting its value).
    ///
    /// ```
    /// use patchbay_gemini::GeminiConfig;
    /// let options = serde_json::json!({ "base_url": "http://127.0.0.1:8080/v1beta", "api_key": "k" });
    /// let config = GeminiConfig::from_options(&options).unwrap();
    /// assert_eq!(config.base_url(), "http://127.0.0.1:8080/v1beta");
    /// assert!(GeminiConfig::from_options(&serde_json::json!({ "apikey": "k" })).is_err());
    /// ```
    pub fn from_options(options: &Value) -> Result<Self, Error> {
        Self::from_options_in(options, &process_var)
    }

    fn from_options_in(options: &Value, vars: Vars<'_>) -> Result<Self, Error> {
        let options = read_options::<Options>(options).map_err(|source| Error::Options { source })?;
        let backend = match options.backend {
            Some(backend) => backend,
            None => match vars("GOOGLE_GENAI_USE_VERTEXAI")? {
                Some(value) if truthy(&value) => Backend::VertexAi,
                _ if options.project.is_some() => Backend::VertexAi,
                _ => Backend::GeminiApi,
            },
        };
        let api_key = match (options.api_key, options.api_key_env) {
            (Some(key), _) => Some(key),
            (None, Some(name)) => Some(Secret::new(vars(&name)?.ok_or(Error::MissingKeyVariable)?)),
            (None, None) => None,
        };
        let (mut config, origin) = match backend {
            Backend::GeminiApi => {
                let (base_url, origin) = match options.base_url {
                    Some(url) => (url, "the `base_url` option"),
                    None => match vars("GOOGLE_GEMINI_BASE_URL")? {
                        Some(url) => (url, "GOOGLE_GEMINI_BASE_URL"),
                        None => (GEMINI_BASE_URL.to_string(), "the default"),
                    },
                };
                let key = match api_key {
                    Some(key) => key,
                    None => vars("GEMINI_API_KEY")?
                        .or(vars("GOOGLE_API_KEY")?)
                        .map(Secret::new)
                        .ok_or(Error::MissingKey)?,
                };
                (Self::new(base_url).with_api_key(key.expose()), origin)
            }
            Backend::VertexAi => {
                let project = match options.project {
                    Some(project) => Some(project),
                    None => vars("GOOGLE_CLOUD_PROJECT")?,
                };
                let location = match options.location {
                    Some(location) => location,
                    None => vars("GOOGLE_CLOUD_LOCATION")?.unwrap_or_else(|| "global".to_string()),
                };
                let (base_url, origin) = match (options.base_url, vars("GOOGLE_VERTEX_BASE_URL")?, project) {
                    (Some(url), _, _) => (url, "the `base_url` option"),
                    (None, Some(url), _) => (url, "GOOGLE_VERTEX_BASE_URL"),
                    (None, None, Some(project)) => (vertex_base_url(&project, &location), "the project"),
                    (None, None, None) => return Err(Error::MissingProject),
                };
                let mut config = Self::new(base_url);
                config.backend = Backend::VertexAi;
                config.api_key = match api_key {
                    Some(key) => Some(key),
                    None if options.access_token.is_none() && options.token_command.is_none() => {
                        vars("GOOGLE_API_KEY")?.map(Secret::new)
                    }
                    None => None,
                };
                config.access_token = options.access_token;
                config.token_command = match options.token_command {
                    Some(command) if command.is_empty() => {
                        return Err(Error::Options {
                            source: patchbay_core::kit::OptionsError {
                                key: Some("token_command".into()),
                                message: "must name a program".into(),
                            },
                        });
                    }
                    Some(command) => Some(command),
                    None if config.api_key.is_none() && config.access_token.is_none() => {
                        Some(DEFAULT_TOKEN_COMMAND.iter().map(|s| s.to_string()).collect())
                    }
                    None => None,
                };
                (config, origin)
            }
        };
        if let Some(ms) = options.token_ttl_ms {
            config.token_ttl = Duration::from_millis(ms);
        }
        config.headers = options.headers.into_iter().collect();
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

    /// The config, or [`Error::BaseUrl`] naming `origin` when the base URL is not http(s).
    pub(crate) fn validated(self, origin: &'static str) -> Result<Self, Error> {
        if self.base_url.starts_with("http://") || self.base_url.starts_with("https://") {
            Ok(self)
        } else {
            Err(Error::BaseUrl { origin })
        }
    }

    /// Set the API key (sent as `x-goog-api-key`, held as a [`Secret`]).
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(key));
        self
    }

    /// Use this backend (its URL stays as set).
    pub fn with_backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// A bearer token for Vertex AI (`Authorization: Bearer`), used as given; it replaces the
    /// token command.
    pub fn with_access_token(mut self, token: impl Into<String>) -> Self {
        self.access_token = Some(Secret::new(token));
        self.token_command = None;
        self
    }

    /// A command that prints a bearer token (run without a shell, its output trimmed), kept
    /// for [`with_token_ttl`](Self::with_token_ttl) and fetched again after a `401`.
    pub fn with_token_command<I, S>(mut self, command: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.token_command = Some(command.into_iter().map(Into::into).collect());
        self.access_token = None;
        self
    }

    /// How long a token from the command is reused (default 45 min; `gcloud` tokens live an
    /// hour).
    pub fn with_token_ttl(mut self, ttl: Duration) -> Self {
        self.token_ttl = ttl;
        self
    }

    /// An extra header on every request (its value never reaches logs or `Debug`).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// How long connecting may take (default 30 s; `None`: no limit).
    pub fn with_connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The limits of a response: read and content timeouts, the line cap, the error body cap
    /// (defaults in [`StreamLimits`]).
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

    /// Record every call into `dir` (see [`patchbay_http::record`]).
    pub fn with_record_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.record_dir = Some(dir.into());
        self
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Whether an API key is set.
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// Whether a bearer token is set.
    pub fn has_access_token(&self) -> bool {
        self.access_token.is_some()
    }

    /// The token command, if any.
    pub fn token_command(&self) -> Option<&[String]> {
        self.token_command.as_deref()
    }

    /// How long a token from the command is reused.
    pub fn token_ttl(&self) -> Duration {
        self.token_ttl
    }

    /// The names and values of the extra headers sent with every request.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// How long connecting may take (`None`: no limit).
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }

    /// The limits of a response.
    pub fn limits(&self) -> &StreamLimits {
        &self.limits
    }

    /// The folder calls are recorded into, if any.
    pub fn record_dir(&self) -> Option<&std::path::Path> {
        self.record_dir.as_deref()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Result<Option<String>, Error> {
        move |name| Ok(pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn gemini_key_comes_from_gemini_then_google_variable() {
        let config = GeminiConfig::from_options_in(&Value::Null, &env(&[("GOOGLE_API_KEY", "g")])).unwrap();
        assert_eq!(config.api_key.as_ref().map(Secret::expose), Some("g"));
        let vars = env(&[("GOOGLE_API_KEY", "g"), ("GEMINI_API_KEY", "m")]);
        let config = GeminiConfig::from_options_in(&Value::Null, &vars).unwrap();
        assert_eq!(config.api_key.as_ref().map(Secret::expose), Some("m"));
        assert_eq!(config.base_url(), GEMINI_BASE_URL);
        assert!(matches!(
            GeminiConfig::from_options_in(&Value::Null, &env(&[])),
            Err(Error::MissingKey)
        ));
    }

    #[test]
    fn vertex_from_the_sdk_variables_defaults_to_gcloud() {
        let vars = env(&[
            ("GOOGLE_GENAI_USE_VERTEXAI", "True"),
            ("GOOGLE_CLOUD_PROJECT", "p"),
            ("GOOGLE_CLOUD_LOCATION", "europe-west4"),
        ]);
        let config = GeminiConfig::from_options_in(&Value::Null, &vars).unwrap();
        assert_eq!(config.backend(), Backend::VertexAi);
        assert_eq!(config.base_url(), vertex_base_url("p", "europe-west4"));
        assert_eq!(config.token_command().unwrap()[0], "gcloud");
        let vars = env(&[("GOOGLE_GENAI_USE_VERTEXAI", "1")]);
        assert!(matches!(
            GeminiConfig::from_options_in(&Value::Null, &vars),
            Err(Error::MissingProject)
        ));
        let global = GeminiConfig::from_options_in(&json!({"project": "p", "access_token": "t"}), &env(&[])).unwrap();
        assert!(
            global
                .base_url()
                .starts_with("https://aiplatform.googleapis.com/v1/projects/p/locations/global")
        );
        assert!(global.token_command().is_none() && global.has_access_token());
    }

    #[test]
    fn errors_never_quote_values() {
        let error = GeminiConfig::from_options_in(&json!({"base_url": "AIza-secret", "api_key": "k"}), &env(&[]))
            .err()
            .unwrap();
        assert!(matches!(
            error,
            Error::BaseUrl {
                origin: "the `base_url` option"
            }
        ));
        let error = GeminiConfig::from_options_in(&json!({"headers": "AIza-secret"}), &env(&[]))
            .err()
            .unwrap();
        assert!(!error.to_string().contains("AIza-secret"), "{error}");
        let error = GeminiConfig::from_options_in(
            &json!({"backend": "vertex", "project": "p", "token_command": []}),
            &env(&[]),
        )
        .err()
        .unwrap();
        assert!(error.to_string().contains("token_command"), "{error}");
    }

    #[test]
    fn debug_hides_credentials_and_command_arguments() {
        let config = GeminiConfig::vertex("p", "global")
            .with_token_command(["print-token", "--secret=hunter2"])
            .with_header("x-extra", "hidden-value")
            .with_api_key("AIza-key");
        let debug = format!("{config:?}");
        for secret in ["hunter2", "hidden-value", "AIza-key"] {
            assert!(!debug.contains(secret), "{debug}");
        }
    }
}
