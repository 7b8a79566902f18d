//! The provider: one POST to `{base_url}/chat/completions` per call, the body streamed through
//! the [`Translator`](crate::translate::Translator) in the caller's task.

use std::fmt;

use async_trait::async_trait;
use patchbay_core::kit::{Framing, redact_url};
use patchbay_core::{
    Capabilities, EventStream, Message, Provider, ProviderError, ProviderInfo, RequestContext, Signal, ToolSet,
};
use patchbay_http::record::Recorder;
use patchbay_http::{Call, Prepared};
use reqwest::header::{ACCEPT, HeaderMap};
use serde_json::Value;

use crate::NAME;
use crate::config::{Dialect, OpenRouterConfig};
use crate::error::Error;
use crate::request;
use crate::translate::Translator;

/// A provider for OpenAI chat completions: OpenRouter, OpenAI, or any compatible server.
/// Configured once, shared freely (`Arc<dyn Provider>`), stateless between calls.
#[derive(Clone)]
pub struct OpenRouterProvider {
    info: ProviderInfo,
    config: OpenRouterConfig,
    endpoint: String,
    client: reqwest::Client,
    recorder: Option<Recorder>,
}

impl fmt::Debug for OpenRouterProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenRouterProvider")
            .field("endpoint", &redact_url(&self.endpoint))
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The HTTP client: the key, OpenRouter's headers and the extra headers on every request (all
/// marked sensitive, so no log shows them), the connect timeout, no redirects followed.
fn client(config: &OpenRouterConfig) -> Result<reqwest::Client, Error> {
    let mut headers = HeaderMap::new();
    let bearer = config.api_key.as_ref().map(|key| format!("Bearer {}", key.expose()));
    let own = [
        ("authorization", bearer.as_deref()),
        ("HTTP-Referer", config.referer.as_deref()),
        ("X-Title", config.title.as_deref()),
    ];
    let own = own.into_iter().filter_map(|(name, value)| Some((name, value?)));
    let extra = config
        .headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()));
    patchbay_http::insert_sensitive(&mut headers, own.chain(extra)).map_err(|name| Error::Header { name })?;
    let mut builder = patchbay_http::client_builder().default_headers(headers);
    if let Some(timeout) = config.connect_timeout {
        builder = builder.connect_timeout(timeout);
    }
    builder.build().map_err(|source| Error::Client { source })
}

impl OpenRouterProvider {
    /// A provider from a config: the only constructor. A base URL that is not http(s), a
    /// header that is not valid HTTP or an HTTP client that cannot be built is a `Config` error.
    pub fn new(config: OpenRouterConfig) -> Result<Self, ProviderError> {
        let config = config.validated("the config")?;
        let client = client(&config)?;
        let capabilities = Capabilities::none().with_streaming().with_reasoning().with_images();
        let recorder = config.record_dir.as_ref().map(|dir| recorder(dir, &config));
        Ok(Self {
            info: ProviderInfo::new(NAME, capabilities),
            endpoint: format!("{}/chat/completions", config.base_url),
            config,
            client,
            recorder,
        })
    }

    /// The config.
    pub fn config(&self) -> &OpenRouterConfig {
        &self.config
    }

    /// The request body this provider would send, and the warnings `Started` would carry
    /// (for logging and tests; nothing is sent).
    pub fn request_body(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        context: Option<&RequestContext>,
    ) -> (Value, Vec<patchbay_core::Warning>) {
        let built = self.build(messages, tools, model, context);
        (built.body, built.warnings)
    }

    /// The request body and warnings of one call, as this config builds them.
    fn build(
        &self,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        context: Option<&RequestContext>,
    ) -> request::Built {
        request::build(
            messages,
            tools,
            model,
            context,
            self.config.dialect,
            self.config.include_usage,
            self.config.response_format,
        )
    }
}

#[async_trait]
impl Provider for OpenRouterProvider {
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
                request::check_call_options(context)?;
                let built = self.build(messages, tools, model, context);
                let translator = Translator::new(Framing::DataLines)
                    .with_model(model)
                    .with_warnings(built.warnings);
                let request = self.client.post(&self.endpoint).header(ACCEPT, "text/event-stream");
                Prepared::json(request, &built.body, translator)
            })
            .await
    }
}

/// The recorder of a config's `record_dir`: the fixture family of its dialect (`openrouter`,
/// `openai-chat` for OpenAI, `openai-compatible` for other servers), the key and the extra
/// header values as secrets to keep out of the files.
fn recorder(dir: &std::path::Path, config: &OpenRouterConfig) -> Recorder {
    let family = match config.dialect {
        Dialect::OpenRouter => "openrouter",
        Dialect::OpenAi => "openai-chat",
        Dialect::Generic => "openai-compatible",
    };
    let mut recorder =
        Recorder::new(dir, family).with_recorded_by(concat!("patchbay-openrouter ", env!("CARGO_PKG_VERSION")));
    if let Some(key) = &config.api_key {
        recorder = recorder.with_secret(key.expose());
    }
    for (_, value) in &config.headers {
        recorder = recorder.with_secret(value.as_str());
    }
    recorder
}

/// The registry entry: builds an [`OpenRouterProvider`] from JSON options (see `# Options`).
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        NAME,
        "OpenAI-compatible chat completions (OpenRouter, OpenAI, any compatible server); options: base_url, \
         api_key, api_key_env, dialect, referer, title, headers, include_usage, connect_timeout_ms, read_timeout_ms, \
         content_timeout_ms, max_line_bytes, max_error_body_bytes, record_dir (on top of OPENROUTER_API_KEY / \
         OPENAI_API_KEY / OPENAI_BASE_URL / PATCHBAY_RECORD_DIR)",
        build,
    )
}

/// The factory's build function: the options on top of the environment, then the provider.
fn build(
    options: &serde_json::Value,
) -> Result<std::sync::Arc<dyn patchbay_core::Provider>, patchbay_core::ProviderError> {
    Ok(std::sync::Arc::new(OpenRouterProvider::new(
        OpenRouterConfig::from_options(options)?,
    )?))
}
