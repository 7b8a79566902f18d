//! The provider: one POST to `{base_url}/models/{model}:streamGenerateContent?alt=sse` per
//! call, the body streamed through the [`Translator`](crate::translate::Translator).

use std::fmt;

use async_trait::async_trait;
use patchbay_core::kit::{Secret, check_conversation, redact_url};
use patchbay_core::{
    Capabilities, ErrorKind, EventStream, Message, Provider, ProviderError, ProviderInfo, RequestContext, Signal,
    ToolSet, Warning,
};
use patchbay_http::record::Recorder;
use patchbay_http::{Call, Prepared};
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::Value;

use crate::NAME;
use crate::config::{Backend, GeminiConfig};
use crate::error::Error;
use crate::request;
use crate::token::TokenSource;
use crate::translate::Translator;

/// A provider for Gemini models on the Gemini API or Vertex AI. Configured once, shared freely
/// (`Arc<dyn Provider>`), stateless between calls (a token from the token command is kept).
#[derive(Clone)]
pub struct GeminiProvider {
    info: ProviderInfo,
    config: GeminiConfig,
    client: reqwest::Client,
    token: Option<TokenSource>,
    recorder: Option<Recorder>,
}

impl fmt::Debug for GeminiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeminiProvider")
            .field("base_url", &redact_url(&self.config.base_url))
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The HTTP client: the API key and the extra headers on every request (marked sensitive, so
/// no log shows them), the connect timeout, no redirects followed.
fn client(config: &GeminiConfig) -> Result<reqwest::Client, Error> {
    let mut headers = HeaderMap::new();
    let key = config.api_key.as_ref().map(|key| ("x-goog-api-key", key.expose()));
    let extra = config
        .headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()));
    patchbay_http::insert_sensitive(&mut headers, key.into_iter().chain(extra))
        .map_err(|name| Error::Header { name })?;
    let mut builder = patchbay_http::client_builder().default_headers(headers);
    if let Some(timeout) = config.connect_timeout {
        builder = builder.connect_timeout(timeout);
    }
    builder.build().map_err(|source| Error::Client { source })
}

/// The path of a model: `models/{model}` for a bare name (a `models/` prefix is kept as
/// given), a resource name with its own collection (`tunedModels/x`) as is.
fn model_path(model: &str) -> String {
    if model.contains('/') {
        model.to_string()
    } else {
        format!("models/{model}")
    }
}

impl GeminiProvider {
    /// A provider from a config: the only constructor. A base URL that is not http(s), a
    /// header that is not valid HTTP or an HTTP client that cannot be built is a `Config` error.
    pub fn new(config: GeminiConfig) -> Result<Self, ProviderError> {
        let config = config.validated("the config")?;
        let client = client(&config)?;
        let token = match (&config.access_token, &config.token_command) {
            (Some(token), _) => Some(TokenSource::Fixed(token.clone())),
            (None, Some(command)) => Some(TokenSource::command(command, config.token_ttl)),
            (None, None) => None,
        };
        let capabilities = Capabilities::none().with_streaming().with_reasoning().with_images();
        let recorder = config.record_dir.as_ref().map(|dir| recorder(dir, &config));
        Ok(Self {
            info: ProviderInfo::new(NAME, capabilities),
            config,
            client,
            token,
            recorder,
        })
    }

    /// The config.
    pub fn config(&self) -> &GeminiConfig {
        &self.config
    }

    /// The URL one call to `model` posts to.
    pub fn endpoint(&self, model: &str) -> String {
        format!(
            "{}/{}:streamGenerateContent?alt=sse",
            self.config.base_url,
            model_path(model)
        )
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
        let built = request::build(messages, tools, model, context, self.config.backend)?;
        Ok((built.body, built.warnings))
    }

    /// The bearer token of this call (Vertex AI), if the config has a source for one.
    async fn bearer(&self, signal: &Signal) -> Result<Option<HeaderValue>, ProviderError> {
        let Some(source) = &self.token else {
            return Ok(None);
        };
        let token: Secret = source.token(signal).await?;
        let value = patchbay_http::sensitive_header(&format!("Bearer {}", token.expose())).ok_or_else(|| {
            ProviderError::new(ErrorKind::Auth, "the token is not valid in a header").with_provider(NAME)
        })?;
        Ok(Some(value))
    }
}

#[async_trait]
impl Provider for GeminiProvider {
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
        // With a token to fetch (a command to run), the input is checked and the body built
        // first: a bad conversation or option must not cost a `gcloud` run.
        let mut built = None;
        if self.token.is_some() {
            check_conversation(messages, true).map_err(|error| error.with_provider(NAME))?;
            built = Some(request::build(messages, tools, model, context, self.config.backend)?);
        }
        let bearer = self.bearer(signal).await?;
        let result = Call::new(NAME, messages, model, signal, context)
            .with_system(self.config.backend.provider_name())
            .with_limits(self.config.limits)
            .with_recorder(self.recorder.as_ref())
            .requiring_user_last()
            .run(|| {
                let built = match built {
                    Some(built) => built,
                    None => request::build(messages, tools, model, context, self.config.backend)?,
                };
                let translator = Translator::new(model)
                    .with_history(messages)
                    .with_warnings(built.warnings);
                let mut request = self
                    .client
                    .post(self.endpoint(model))
                    .header(ACCEPT, "text/event-stream");
                if let Some(bearer) = bearer {
                    request = request.header(AUTHORIZATION, bearer);
                }
                Prepared::json(request, &built.body, translator)
            })
            .await;
        if let (Err(error), Some(source)) = (&result, &self.token)
            && error.status() == Some(401)
        {
            // The next call fetches a fresh token (this one expired or was revoked).
            source.invalidate().await;
        }
        result
    }
}

/// The recorder of a config's `record_dir`: family `gemini`, server `vertex` on Vertex AI, the
/// key, the token and the extra header values as secrets to keep out of the files.
fn recorder(dir: &std::path::Path, config: &GeminiConfig) -> Recorder {
    let mut recorder =
        Recorder::new(dir, "gemini").with_recorded_by(concat!("patchbay-gemini ", env!("CARGO_PKG_VERSION")));
    if config.backend == Backend::VertexAi {
        recorder = recorder.with_server("vertex");
    }
    for secret in [&config.api_key, &config.access_token].into_iter().flatten() {
        recorder = recorder.with_secret(secret.expose());
    }
    for (_, value) in &config.headers {
        recorder = recorder.with_secret(value.as_str());
    }
    recorder
}

/// The registry entry: builds a [`GeminiProvider`] from JSON options (see `# Options`).
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        NAME,
        "Google Gemini on the Gemini API or Vertex AI; options: backend, base_url, api_key, api_key_env, project, \
         location, access_token, token_command, token_ttl_ms, headers, connect_timeout_ms, read_timeout_ms, \
         content_timeout_ms, max_line_bytes, max_error_body_bytes, record_dir (on top of GEMINI_API_KEY / \
         GOOGLE_API_KEY / GOOGLE_GEMINI_BASE_URL / GOOGLE_GENAI_USE_VERTEXAI / GOOGLE_CLOUD_PROJECT / \
         GOOGLE_CLOUD_LOCATION / GOOGLE_VERTEX_BASE_URL / PATCHBAY_RECORD_DIR)",
        build,
    )
}

/// The factory's build function: the options on top of the environment, then the provider.
fn build(options: &Value) -> Result<std::sync::Arc<dyn Provider>, ProviderError> {
    Ok(std::sync::Arc::new(GeminiProvider::new(GeminiConfig::from_options(
        options,
    )?)?))
}
