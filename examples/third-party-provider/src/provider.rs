//! [`OllamaProvider`]: the thin I/O around the request plan and the translator.

use patchbay_core::kit::{
    Driver, MetricsRecorder, check_conversation, kind_for_status, record_error, redact_url, request_span_for,
};
use patchbay_core::{
    Capabilities, EventStream, Message, Provider, ProviderError, ProviderInfo, RequestContext, Signal, ToolSet,
    async_trait,
};
use patchbay_http::record::Tape;
use patchbay_http::{Failure, reqwest};
use serde_json::Value;
use tracing::Instrument;

use crate::NAME;
use crate::config::{OllamaConfig, normalize_host};
use crate::error::Error;
use crate::request::plan;
use crate::translate::OllamaTranslator;

/// An Ollama server's `/api/chat` as a patchbay [`Provider`]: streaming, reasoning (`think`),
/// images, host tools. Configured once, shared by any number of calls.
///
/// ```
/// use patchbay_core::Provider;
/// use patchbay_ollama::{OllamaConfig, OllamaProvider};
/// let provider = OllamaProvider::new(OllamaConfig::default()).expect("a client");
/// assert_eq!(provider.info().name, "ollama");
/// ```
pub struct OllamaProvider {
    config: OllamaConfig,
    endpoint: String,
    client: reqwest::Client,
    info: ProviderInfo,
}

impl std::fmt::Debug for OllamaProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OllamaProvider")
            .field("endpoint", &redact_url(&self.endpoint))
            .field("config", &self.config)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl OllamaProvider {
    /// A provider for this configuration: checks the base URL and builds the HTTP client
    /// (redirects are never followed). The only constructor.
    pub fn new(config: OllamaConfig) -> Result<Self, ProviderError> {
        let base = normalize_host(config.base_url(), "the configured base_url")?;
        let mut builder = patchbay_http::client_builder();
        if let Some(timeout) = config.connect_timeout() {
            builder = builder.connect_timeout(timeout);
        }
        let client = builder.build().map_err(|source| Error::Client { source })?;
        let capabilities = Capabilities::none().with_streaming().with_reasoning().with_images();
        Ok(Self {
            endpoint: format!("{base}/api/chat"),
            config,
            client,
            info: ProviderInfo::new(NAME, capabilities),
        })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &OllamaConfig {
        &self.config
    }

    /// POST the body; a `2xx` response with its body still unread, or the typed error.
    async fn send(&self, body: &Value, signal: &Signal) -> Result<reqwest::Response, ProviderError> {
        let mut request = self.client.post(&self.endpoint).json(body);
        if let Some(key) = self.config.api_key() {
            request = request.bearer_auth(key.expose());
        }
        patchbay_http::send(&Tape::off(), request, self.config.limits(), signal, NAME, http_error).await
    }
}

/// The error of a non-`2xx` answer: the kind from the status, the message from Ollama's
/// `{"error": "..."}` body (or the body's first bytes), `retry-after` when sent.
fn http_error(failure: Failure<'_>) -> ProviderError {
    let status = failure.status;
    let message = serde_json::from_slice::<Value>(failure.body)
        .ok()
        .and_then(|body| body.get("error").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(failure.body).trim().to_string());
    let message = if message.is_empty() {
        format!("the Ollama server answered HTTP {status}")
    } else {
        message
    };
    let mut error = ProviderError::new(kind_for_status(status), message).with_status(status);
    if let Some(wait) = failure.retry_after() {
        error = error.with_retry_after(wait);
    }
    error
}

#[async_trait]
impl Provider for OllamaProvider {
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
        let metrics = MetricsRecorder::start();
        check_conversation(messages, true).map_err(|e| e.with_provider(NAME))?;
        let plan = plan(messages, tools, model, context).map_err(|e| e.with_provider(NAME))?;
        let span = request_span_for(NAME, model, messages, context);
        let response = self
            .send(&plan.body, signal)
            .instrument(span.clone())
            .await
            .map_err(|e| record_error(&span, e))?;
        let limits = self.config.limits();
        let translator = OllamaTranslator::new(model, plan.warnings)
            .with_first_call(plan.first_call)
            .with_max_line_bytes(limits.max_line_bytes)
            .with_metrics(metrics);
        let body = patchbay_http::body_stream(&Tape::off(), response, "reading the stream", NAME);
        let stream = Driver::new(body, translator, signal)
            .with_limits(limits)
            .with_provider(NAME)
            .into_stream();
        Ok(patchbay_core::kit::in_span(stream, span))
    }
}

/// The factory a registry lists: builds an [`OllamaProvider`] from JSON options (see the crate
/// docs' `# Options`) on top of the environment.
///
/// ```
/// let factory = patchbay_ollama::factory();
/// assert_eq!(factory.name, "ollama");
/// assert!(factory.build(&serde_json::json!({"colour": "blue"})).is_err());
/// ```
pub fn factory() -> patchbay_core::ProviderFactory {
    patchbay_core::ProviderFactory::new(
        NAME,
        "Ollama's native /api/chat (local or hosted); options: base_url, api_key, read_timeout_ms, \
         content_timeout_ms, connect_timeout_ms, max_line_bytes",
        build,
    )
}

fn build(
    options: &serde_json::Value,
) -> Result<std::sync::Arc<dyn patchbay_core::Provider>, patchbay_core::ProviderError> {
    Ok(std::sync::Arc::new(OllamaProvider::new(OllamaConfig::from_options(
        options,
    )?)?))
}
