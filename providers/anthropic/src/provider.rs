//! The provider: one streamed `POST {base}/v1/messages` per call, translated as it arrives.

use async_trait::async_trait;
use patchbay_core::kit::check_conversation;
use patchbay_core::kit::{self, Driver, StreamLimits, redact_url};
use patchbay_core::{
    Capabilities, Event, EventStream, Limit, Message, Provider, ProviderError, ProviderInfo, RequestContext, Signal,
    ToolSet,
};
use patchbay_http::record::{Recorder, Tape};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tracing::Instrument;

use crate::NAME;
use crate::config::{AnthropicConfig, Auth, DEFAULT_BASE_URL, messages_url};
use crate::error::{Error, http_error};
use crate::request::build_request_with;
use crate::translate::{StreamTranslator, Translator};

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
            let name = HeaderName::try_from(name).map_err(|source| Error::HeaderName {
                name: name.to_string(),
                source,
            })?;
            let mut value = HeaderValue::try_from(value).map_err(|source| Error::HeaderValue {
                name: name.to_string(),
                source,
            })?;
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
        let client = builder.build().map_err(Error::Client)?;
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

    /// The POST with the configured headers and the `anthropic-beta` flags (config's, then the
    /// request's), still without its body.
    fn request(&self, request_betas: &[String]) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream");
        let betas: Vec<&str> = self
            .config
            .betas
            .iter()
            .chain(request_betas)
            .map(String::as_str)
            .collect();
        if !betas.is_empty() {
            request = request.header("anthropic-beta", betas.join(","));
        }
        request
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
        check_conversation(messages, false).map_err(|e| e.with_provider(NAME))?;
        if signal.is_cancelled() {
            return Err(ProviderError::cancelled().with_provider(NAME));
        }
        let mut translator = Translator::new().with_model(model);
        let parts = build_request_with(
            messages,
            tools,
            model,
            context,
            self.config.default_max_tokens,
            self.config.structured_output,
        )?;
        if let Some(tool) = &parts.output_tool {
            translator = translator.with_output_tool(tool.clone());
        }
        let body = encode_body(&parts.body)?;
        let request = self.request(&parts.betas);
        let span = kit::request_span_for(NAME, model, messages, context);
        tracing::debug!(parent: &span, bytes = body.len(), "sending the request");
        let limits = self.config.limits;
        let tape = Tape::start(self.recorder.as_ref(), model);
        let response = patchbay_http::send(&tape, request.body(body), &limits, signal, NAME, |failure| {
            http_error(failure.status, failure.headers, failure.body)
        })
        .instrument(span.clone())
        .await
        .map_err(|e| kit::record_error(&span, e))?;
        let translator =
            StreamTranslator::new(translator.with_warnings(parts.warnings)).with_max_frame_bytes(limits.max_line_bytes);
        let events = event_stream(response, translator, &limits, signal, &tape);
        Ok(kit::in_span(tape.watch(events), span))
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

/// The request body as bytes.
fn encode_body(body: &Value) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(body).map_err(|e| {
        ProviderError::new(patchbay_core::ErrorKind::InvalidRequest, "cannot serialize the request")
            .with_provider(NAME)
            .with_source(e)
    })
}

/// The events of a successful response: streamed server-sent events, or a whole JSON message
/// from a server that ignored `stream: true`.
fn event_stream(
    response: reqwest::Response,
    translator: StreamTranslator,
    limits: &StreamLimits,
    signal: &Signal,
    tape: &Tape,
) -> EventStream {
    let request_id = patchbay_http::request_id(response.headers());
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let body = patchbay_http::body_stream(tape, response, "reading the stream", NAME);
    if is_json {
        // A server that ignored `stream: true`: the whole message at once.
        let whole = WholeMessage {
            body: Vec::new(),
            max: limits.max_line_bytes,
            translator,
        };
        Driver::new(body, whole, signal)
            .with_limits(limits)
            .with_provider(NAME)
            .with_request_id(request_id)
            .into_stream()
    } else {
        Driver::new(body, translator, signal)
            .with_limits(limits)
            .with_provider(NAME)
            .with_request_id(request_id)
            .into_stream()
    }
}

/// A `200 application/json` answer: the whole message, buffered up to the line cap, translated
/// when the body ends.
struct WholeMessage {
    body: Vec<u8>,
    max: usize,
    translator: StreamTranslator,
}

impl kit::StreamTranslator for WholeMessage {
    fn feed(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        if self.body.len() + bytes.len() > self.max {
            return Err(ProviderError::protocol(format!(
                "the JSON response grew past {} bytes (limit {})",
                self.max,
                Limit::LineLength
            ))
            .with_limit(Limit::LineLength));
        }
        self.body.extend_from_slice(bytes);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), ProviderError> {
        translate_whole_message(self.translator.translator(), &self.body)
    }

    fn next_event(&mut self) -> Option<Result<Event, ProviderError>> {
        self.translator.next_event().map(Ok)
    }

    fn is_done(&self) -> bool {
        false
    }
}

fn translate_whole_message(translator: &mut Translator, body: &[u8]) -> Result<(), ProviderError> {
    let message: Value = serde_json::from_slice(body)
        .map_err(|e| ProviderError::protocol(format!("the JSON response is not a message: {e}")).with_provider(NAME))?;
    translator.push_value(&json!({ "type": "message_start", "message": message }))?;
    translator.push_value(&json!({ "type": "message_stop" }))
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
