//! The provider: one POST to `{base_url}/responses` per call, the body streamed through the
//! [`Translator`](crate::translate::Translator).

use std::fmt;

use async_trait::async_trait;
use patchbay_core::kit::redact_url;
use patchbay_core::{
    Capabilities, EventStream, Message, Provider, ProviderError, ProviderInfo, RequestContext, Signal, ToolSet, Warning,
};
use patchbay_http::record::Recorder;
use patchbay_http::{Call, Prepared};
use reqwest::header::{ACCEPT, HeaderMap};
use serde_json::Value;

use crate::NAME;
use crate::config::{KeyHeader, OpenAiConfig};
use crate::error::Error;
use crate::request;
use crate::translate::Translator;

/// The span's `gen_ai.provider.name` (the OpenTelemetry GenAI semantic conventions' value).
const SYSTEM: &str = "openai";

/// A provider for a Responses server (OpenAI, Azure OpenAI, OpenRouter, vLLM...). Configured
/// once, shared freely (`Arc<dyn Provider>`), stateless between calls.
#[derive(Clone)]
pub struct OpenAiProvider {
    info: ProviderInfo,
    config: OpenAiConfig,
    client: reqwest::Client,
    endpoint: String,
    /// The endpoint with the query parameters (their values may be credentials: never shown).
    url: reqwest::Url,
    recorder: Option<Recorder>,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("base_url", &redact_url(&self.config.base_url))
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The HTTP client: the key, the organization, the project and the extra headers on every
/// request (marked sensitive, so no log shows them), the connect timeout, no redirects
/// followed.
fn client(config: &OpenAiConfig) -> Result<reqwest::Client, Error> {
    let mut headers = HeaderMap::new();
    let bearer = config.api_key.as_ref().map(|key| format!("Bearer {}", key.expose()));
    let key = match (&config.key_header, &config.api_key, &bearer) {
        (KeyHeader::Bearer, _, Some(bearer)) => Some(("authorization", bearer.as_str())),
        (KeyHeader::Named(name), Some(key), _) => Some((name.as_str(), key.expose())),
        _ => None,
    };
    let organization = config
        .organization
        .as_deref()
        .map(|value| ("openai-organization", value));
    let project = config.project.as_deref().map(|value| ("openai-project", value));
    let extra = config
        .headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()));
    let all = key.into_iter().chain(organization).chain(project).chain(extra);
    patchbay_http::insert_sensitive(&mut headers, all).map_err(|name| Error::Header { name })?;
    let mut builder = patchbay_http::client_builder().default_headers(headers);
    if let Some(timeout) = config.connect_timeout {
        builder = builder.connect_timeout(timeout);
    }
    builder.build().map_err(|source| Error::Client { source })
}

impl OpenAiProvider {
    /// A provider from a config: the only constructor. A base URL that is not http(s), a
    /// header that is not valid HTTP or an HTTP client that cannot be built is a `Config` error.
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let config = config.validated("the config")?;
        let client = client(&config)?;
        let capabilities = Capabilities::none().with_streaming().with_reasoning().with_images();
        let recorder = config.record_dir.as_ref().map(|dir| recorder(dir, &config));
        let endpoint = format!("{}/responses", config.base_url);
        let mut url = reqwest::Url::parse(&endpoint).map_err(|_| Error::BaseUrl { origin: "the config" })?;
        if !config.query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (name, value) in &config.query {
                pairs.append_pair(name, value);
            }
        }
        Ok(Self {
            info: ProviderInfo::new(NAME, capabilities),
            config,
            client,
            endpoint,
            url,
            recorder,
        })
    }

    /// The config.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The URL every call posts to (`{base_url}/responses`, without the query parameters).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The request body this provider would send, and the warnings `Started` would carry
    /// (for logging and tests; nothing is sent). Bad per-call options are an error.
    pub fn request_body(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        context: Option<&RequestContext>,
    ) -> Result<(Value, Vec<Warning>), ProviderError> {
        let built = request::build(messages, tools, model, context)?;
        Ok((built.body, built.warnings))
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
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
            .with_system(SYSTEM)
            .with_limits(self.config.limits)
            .with_recorder(self.recorder.as_ref())
            .requiring_user_last()
            .run(|| {
                let built = request::build(messages, tools, model, context)?;
                let translator = Translator::new(model)
                    .with_history(messages)
                    .with_warnings(built.warnings);
                let request = self.client.post(self.url.clone()).header(ACCEPT, "text/event-stream");
                Prepared::json(request, &built.body, translator)
            })
            .await
    }
}

/// The recorder of a config's `record_dir`: family `openai-responses`, the key, the header
/// and query values as secrets to keep out of the files.
fn recorder(dir: &std::path::Path, config: &OpenAiConfig) -> Recorder {
    let mut recorder =
        Recorder::new(dir, "openai-responses").with_recorded_by(concat!("patchbay-openai ", env!("CARGO_PKG_VERSION")));
    if let Some(key) = &config.api_key {
        recorder = recorder.with_secret(key.expose());
    }
    for (_, value) in config.headers.iter().chain(&config.query) {
        recorder = recorder.with_secret(value.as_str());
    }
    recorder
}

/// The registry entry: builds an [`OpenAiProvider`] from JSON options (see `# Options`).
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        NAME,
        "OpenAI's Responses API (OpenAI, Azure OpenAI, OpenRouter, vLLM...); options: base_url, api_key, api_key_env, \
         api_key_header, organization, project, headers, query, connect_timeout_ms, read_timeout_ms, \
         content_timeout_ms, max_line_bytes, max_error_body_bytes, record_dir (on top of OPENAI_API_KEY / \
         OPENAI_BASE_URL / OPENAI_ORG_ID / OPENAI_PROJECT_ID / PATCHBAY_RECORD_DIR)",
        build,
    )
}

/// The factory's build function: the options on top of the environment, then the provider.
fn build(options: &Value) -> Result<std::sync::Arc<dyn Provider>, ProviderError> {
    Ok(std::sync::Arc::new(OpenAiProvider::new(OpenAiConfig::from_options(
        options,
    )?)?))
}
