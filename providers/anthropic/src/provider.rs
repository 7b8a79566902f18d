//! The provider: one streamed `POST {base}/v1/messages` per call, translated as it arrives.

use async_trait::async_trait;
use patchbay_core::kit::redact_url;
use patchbay_core::{
    Capabilities, EventStream, Message, Provider, ProviderError, ProviderInfo, RequestContext, Signal, ToolSet,
};
use patchbay_http::Call;
use patchbay_http::record::Recorder;
use reqwest::header::{ACCEPT, HeaderMap, HeaderName, HeaderValue};

use crate::NAME;
use crate::config::{AnthropicConfig, Auth, DEFAULT_BASE_URL, messages_url};
use crate::error::Error;
use crate::request::{self, Sending};

/// The Anthropic Messages API as a patchbay [`Provider`].
///
/// Stateless and cheap to share (`Arc<dyn Provider>`); one HTTP connection pool per provider.
pub struct AnthropicProvider {
    info: ProviderInfo,
    config: AnthropicConfig,
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    recorder: Option<Recorder>,
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("url", &redact_url(self.url.as_str()))
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// A provider with this configuration: the only constructor. Fails (kind `Config`, source
    /// an [`Error`]) without credentials for the public API, on a bad base URL, a bad header or
    /// an HTTP client that cannot be built.
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        Ok(Self::setup(config)?)
    }

    fn setup(config: AnthropicConfig) -> Result<Self, Error> {
        if matches!(config.auth, Auth::None) && config.base_url.trim_end_matches('/') == DEFAULT_BASE_URL {
            return Err(Error::MissingKey);
        }
        let url = messages_url(&config.base_url, "the config")?;
        let mut headers = HeaderMap::new();
        let mut insert = |name: &str, value: &str, sensitive: bool| -> Result<(), Error> {
            let bad = || Error::Header { name: name.to_string() };
            let name = HeaderName::try_from(name).map_err(|_| bad())?;
            let mut value = HeaderValue::try_from(value).map_err(|_| bad())?;
            value.set_sensitive(sensitive);
            headers.insert(name, value);
            Ok(())
        };
        match &config.auth {
            Auth::ApiKey(key) => insert("x-api-key", key.expose(), true)?,
            Auth::Bearer(token) => insert("authorization", &format!("Bearer {}", token.expose()), true)?,
            Auth::None => {}
        }
        insert("anthropic-version", &config.version, false)?;
        for (name, value) in &config.headers {
            insert(name, value, true)?;
        }
        let mut builder = patchbay_http::client_builder()
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("patchbay-anthropic/", env!("CARGO_PKG_VERSION")));
        if let Some(timeout) = config.request_timeout {
            builder = builder.timeout(timeout);
        }
        let client = builder.build().map_err(|source| Error::Client { source })?;
        let capabilities = Capabilities::none().with_streaming().with_reasoning().with_images();
        let recorder = config.record_dir.as_ref().map(|dir| recorder(dir, &config));
        Ok(Self {
            info: ProviderInfo::new(NAME, capabilities),
            config,
            client,
            url,
            headers,
            recorder,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    /// The endpoint (`{base}/v1/messages`).
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The POST with the configured headers, still without its body and its per-call flags.
    fn post(&self) -> reqwest::RequestBuilder {
        self.client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(ACCEPT, "text/event-stream")
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    async fn create_response(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        Call::new(NAME, messages, model, signal, context)
            .with_limits(self.config.limits)
            .with_recorder(self.recorder.as_ref())
            .run(|| {
                let sending = Sending {
                    post: self.post(),
                    betas: &self.config.betas,
                    default_max_tokens: self.config.default_max_tokens,
                    structured: self.config.structured_output,
                };
                request::prepare(sending, messages, tools, model, context)
            })
            .await
    }
}

/// The recorder of a config's `record_dir`: family `anthropic`, and every credential and
/// configured header value as a secret to keep out of the files.
fn recorder(dir: &std::path::Path, config: &AnthropicConfig) -> Recorder {
    let mut recorder =
        Recorder::new(dir, NAME).with_recorded_by(concat!("patchbay-anthropic ", env!("CARGO_PKG_VERSION")));
    match &config.auth {
        Auth::ApiKey(secret) | Auth::Bearer(secret) => recorder = recorder.with_secret(secret.expose()),
        Auth::None => {}
    }
    for (_, value) in &config.headers {
        recorder = recorder.with_secret(value.as_str());
    }
    recorder
}

/// The registry entry: builds an [`AnthropicProvider`] from JSON options (see `# Options`).
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        NAME,
        "Anthropic Messages API; options: api_key, auth_token, base_url, version, betas, headers, \
         connect_timeout_ms, read_timeout_ms, content_timeout_ms, request_timeout_ms, max_line_bytes, \
         max_error_body_bytes, default_max_tokens, structured_output, record_dir (on top of ANTHROPIC_API_KEY, \
         ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, ANTHROPIC_VERSION, ANTHROPIC_BETA, PATCHBAY_RECORD_DIR)",
        build,
    )
}

/// The factory's build function: [`AnthropicConfig::from_options`], then [`AnthropicProvider::new`].
fn build(
    options: &serde_json::Value,
) -> Result<std::sync::Arc<dyn patchbay_core::Provider>, patchbay_core::ProviderError> {
    Ok(std::sync::Arc::new(AnthropicProvider::new(
        AnthropicConfig::from_options(options)?,
    )?))
}
