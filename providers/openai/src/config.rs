//! Configuration: the server (OpenAI, Azure OpenAI, OpenRouter or any Responses server), its
//! base URL and credentials; from code, the environment or JSON options. Uses only
//! [`crate::error`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use patchbay_core::kit::{Secret, StreamLimits, env_var, read_options, redact_url};
use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;

/// OpenAI's base URL (the part before `/responses`).
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// How the key is sent.
///
/// | Server | Base URL | Key header |
/// | --- | --- | --- |
/// | OpenAI | [`OPENAI_BASE_URL`] | `Authorization: Bearer` ([`KeyHeader::Bearer`]) |
/// | Azure OpenAI (v1 API) | `https://{resource}.openai.azure.com/openai/v1` | `api-key` ([`KeyHeader::Named`]), or a Microsoft Entra token as bearer |
/// | OpenRouter | `https://openrouter.ai/api/v1` | bearer |
/// | vLLM, Ollama, LM Studio | `http://localhost:{port}/v1` | none needed |
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyHeader {
    /// `Authorization: Bearer {key}`.
    Bearer,
    /// The key as the value of this header (Azure's `api-key`).
    Named(String),
}

/// How to reach a Responses server. `Debug` never shows the key, header values or URL
/// credentials.
///
/// ```
/// use patchbay_openai::OpenAiConfig;
/// let config = OpenAiConfig::openai("sk-secret");
/// assert_eq!(config.base_url(), "https://api.openai.com/v1");
/// assert!(!format!("{config:?}").contains("sk-secret"));
/// let azure = OpenAiConfig::azure("https://my-resource.openai.azure.com/openai/v1", "azure-key");
/// assert_eq!(azure.key_header(), &patchbay_openai::KeyHeader::Named("api-key".into()));
/// ```
#[derive(Clone)]
pub struct OpenAiConfig {
    pub(crate) base_url: String,
    pub(crate) api_key: Option<Secret>,
    pub(crate) key_header: KeyHeader,
    pub(crate) organization: Option<String>,
    pub(crate) project: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) connect_timeout: Option<Duration>,
    pub(crate) limits: StreamLimits,
    pub(crate) record_dir: Option<PathBuf>,
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("key_header", &self.key_header)
            .field("organization", &self.organization)
            .field("project", &self.project)
            .field(
                "headers",
                &self.headers.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            // Names only: a query value may be a credential (`?key=`).
            .field("query", &self.query.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .field("connect_timeout", &self.connect_timeout)
            .field("limits", &self.limits)
            .field("record_dir", &self.record_dir)
            .finish()
    }
}

/// The JSON options [`OpenAiConfig::from_options`] reads (documented in the crate's
/// `# Options`). No `Debug`: it holds the key.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    base_url: Option<String>,
    api_key: Option<Secret>,
    api_key_env: Option<String>,
    api_key_header: Option<String>,
    organization: Option<String>,
    project: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    query: BTreeMap<String, String>,
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

impl OpenAiConfig {
    /// A config for this base URL (the part before `/responses`), no key (a local server, or a
    /// proxy that adds it).
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_string(),
            api_key: None,
            key_header: KeyHeader::Bearer,
            organization: None,
            project: None,
            headers: Vec::new(),
            query: Vec::new(),
            connect_timeout: Some(Duration::from_secs(30)),
            limits: StreamLimits::default(),
            record_dir: None,
        }
    }

    /// OpenAI's API with this key.
    pub fn openai(api_key: impl Into<String>) -> Self {
        Self::new(OPENAI_BASE_URL).with_api_key(api_key)
    }

    /// Azure OpenAI's v1 API at this base URL (`https://{resource}.openai.azure.com/openai/v1`),
    /// the key sent as `api-key`. The model of a call is the deployment name.
    pub fn azure(base_url: impl Into<String>, api_key: impl Into<String>) -> Self {
        Self::new(base_url)
            .with_api_key(api_key)
            .with_key_header(KeyHeader::Named("api-key".into()))
    }

    /// The environment alone: `OPENAI_API_KEY`, `OPENAI_BASE_URL` (default [`OPENAI_BASE_URL`]),
    /// `OPENAI_ORG_ID` and `OPENAI_PROJECT_ID` (the variables OpenAI's SDKs read);
    /// `PATCHBAY_RECORD_DIR` records every call there. Blank variables count as unset. A key is
    /// required only for OpenAI's own URL.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_options_in(&Value::Null, &process_var)
    }

    /// [`Self::from_env`] with JSON options on top (the registry's hook; every key is listed in
    /// the crate's `# Options`). `null` or `{}` is the environment alone. An unknown key or a
    /// wrong type is [`Error::Options`] naming the key (never quoting its value).
    ///
    /// ```
    /// use patchbay_openai::OpenAiConfig;
    /// let options = serde_json::json!({ "base_url": "http://127.0.0.1:8080/v1" });
    /// let config = OpenAiConfig::from_options(&options).unwrap();
    /// assert_eq!(config.base_url(), "http://127.0.0.1:8080/v1");
    /// assert!(OpenAiConfig::from_options(&serde_json::json!({ "apikey": "k" })).is_err());
    /// ```
    pub fn from_options(options: &Value) -> Result<Self, Error> {
        Self::from_options_in(options, &process_var)
    }

    fn from_options_in(options: &Value, vars: Vars<'_>) -> Result<Self, Error> {
        let options = read_options::<Options>(options).map_err(|source| Error::Options { source })?;
        let (base_url, origin) = match options.base_url {
            Some(url) => (url, "the `base_url` option"),
            None => match vars("OPENAI_BASE_URL")? {
                Some(url) => (url, "OPENAI_BASE_URL"),
                None => (OPENAI_BASE_URL.to_string(), "the default"),
            },
        };
        let api_key = match (options.api_key, options.api_key_env) {
            (Some(key), _) => Some(key),
            (None, Some(name)) => Some(Secret::new(vars(&name)?.ok_or(Error::MissingKeyVariable)?)),
            (None, None) => vars("OPENAI_API_KEY")?.map(Secret::new),
        };
        let mut config = Self::new(base_url);
        if api_key.is_none() && config.base_url == OPENAI_BASE_URL {
            return Err(Error::MissingKey);
        }
        config.api_key = api_key;
        config.key_header = match options.api_key_header {
            Some(name) if name.eq_ignore_ascii_case("authorization") => KeyHeader::Bearer,
            Some(name) => KeyHeader::Named(name),
            None => KeyHeader::Bearer,
        };
        config.organization = match options.organization {
            Some(organization) => Some(organization),
            None => vars("OPENAI_ORG_ID")?,
        };
        config.project = match options.project {
            Some(project) => Some(project),
            None => vars("OPENAI_PROJECT_ID")?,
        };
        config.headers = options.headers.into_iter().collect();
        config.query = options.query.into_iter().collect();
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

    /// Set the API key (held as a [`Secret`]).
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(key));
        self
    }

    /// How the key is sent (default [`KeyHeader::Bearer`]).
    pub fn with_key_header(mut self, header: KeyHeader) -> Self {
        self.key_header = header;
        self
    }

    /// The organization (`OpenAI-Organization`).
    pub fn with_organization(mut self, organization: impl Into<String>) -> Self {
        self.organization = Some(organization.into());
        self
    }

    /// The project (`OpenAI-Project`).
    pub fn with_project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// An extra header on every request (its value never reaches logs or `Debug`).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// A query parameter on every request (Azure's older `api-version`); its value never
    /// reaches `Debug`.
    pub fn with_query(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.query.push((name.into(), value.into()));
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

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Whether an API key is set.
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// How the key is sent.
    pub fn key_header(&self) -> &KeyHeader {
        &self.key_header
    }

    /// The organization, if set.
    pub fn organization(&self) -> Option<&str> {
        self.organization.as_deref()
    }

    /// The project, if set.
    pub fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    /// The names and values of the extra headers sent with every request.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The query parameters sent with every request.
    pub fn query(&self) -> &[(String, String)] {
        &self.query
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
    use serde_json::{Value, json};

    use super::{Error, KeyHeader, OPENAI_BASE_URL, OpenAiConfig, Secret};

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Result<Option<String>, Error> {
        move |name| Ok(pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn the_sdk_variables_are_read_and_a_key_is_needed_only_for_openai() {
        let vars = env(&[
            ("OPENAI_API_KEY", "sk"),
            ("OPENAI_ORG_ID", "org"),
            ("OPENAI_PROJECT_ID", "proj"),
        ]);
        let config = OpenAiConfig::from_options_in(&Value::Null, &vars).unwrap();
        assert_eq!(config.api_key.as_ref().map(Secret::expose), Some("sk"));
        assert_eq!(config.base_url(), OPENAI_BASE_URL);
        assert_eq!((config.organization(), config.project()), (Some("org"), Some("proj")));
        assert!(matches!(
            OpenAiConfig::from_options_in(&Value::Null, &env(&[])),
            Err(Error::MissingKey)
        ));
        let local = env(&[("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/")]);
        let config = OpenAiConfig::from_options_in(&Value::Null, &local).unwrap();
        assert_eq!(config.base_url(), "http://127.0.0.1:8000/v1");
        assert!(!config.has_api_key());
    }

    #[test]
    fn azure_takes_its_key_header_and_api_version() {
        let options = json!({
            "base_url": "https://r.openai.azure.com/openai/v1",
            "api_key": "k",
            "api_key_header": "api-key",
            "query": {"api-version": "preview"},
        });
        let config = OpenAiConfig::from_options_in(&options, &env(&[])).unwrap();
        assert_eq!(config.key_header(), &KeyHeader::Named("api-key".into()));
        assert_eq!(config.query(), &[("api-version".to_string(), "preview".to_string())]);
        let bearer = json!({"base_url": "http://x/v1", "api_key_header": "Authorization"});
        let config = OpenAiConfig::from_options_in(&bearer, &env(&[])).unwrap();
        assert_eq!(config.key_header(), &KeyHeader::Bearer);
    }

    #[test]
    fn errors_never_quote_values() {
        let error = OpenAiConfig::from_options_in(&json!({"base_url": "sk-secret", "api_key": "k"}), &env(&[]))
            .err()
            .unwrap();
        assert!(matches!(
            error,
            Error::BaseUrl {
                origin: "the `base_url` option"
            }
        ));
        let error = OpenAiConfig::from_options_in(&json!({"headers": "sk-secret"}), &env(&[]))
            .err()
            .unwrap();
        assert!(!error.to_string().contains("sk-secret"), "{error}");
        let error = OpenAiConfig::from_options_in(&json!({"api_key_env": "NOPE"}), &env(&[]))
            .err()
            .unwrap();
        assert!(matches!(error, Error::MissingKeyVariable));
    }

    #[test]
    fn debug_hides_credentials() {
        let config = OpenAiConfig::openai("sk-key")
            .with_header("x-extra", "hidden-value")
            .with_query("key", "query-secret")
            .with_organization("org-1");
        let debug = format!("{config:?}");
        for secret in ["sk-key", "hidden-value", "query-secret"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        assert!(debug.contains("org-1"));
    }
}
