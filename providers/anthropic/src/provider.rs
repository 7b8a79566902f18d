//! The provider: one streamed `POST {base}/v1/messages` per call, translated as it arrives.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;
use patchbay_core::{
    Capabilities, ErrorKind, Event, EventStream, Message, Provider, ProviderError, ProviderInfo, RequestContext,
    Signal, ToolSet, check_conversation,
};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio_util::sync::WaitForCancellationFutureOwned;
use tracing::Instrument;

use crate::config::{AnthropicConfig, Auth, DEFAULT_BASE_URL};
use crate::error::{PROVIDER, http_error, transport_error};
use crate::request::build_request;
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
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("url", &self.url.as_str())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn config_error(message: impl Into<String>) -> ProviderError {
    ProviderError::config(message).with_provider(PROVIDER)
}

impl AnthropicProvider {
    /// A provider with this configuration. Fails (kind `Config`) without credentials for the
    /// public API, on a bad base URL or a bad header.
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let base = config.base_url.trim_end_matches('/');
        if matches!(config.auth, Auth::None) && base == DEFAULT_BASE_URL {
            return Err(config_error(
                "no Anthropic API key: set ANTHROPIC_API_KEY or pass one in the config",
            ));
        }
        let url = reqwest::Url::parse(&format!("{base}/v1/messages"))
            .map_err(|e| config_error(format!("bad Anthropic base URL `{base}`: {e}")))?;
        let mut headers = HeaderMap::new();
        let mut insert = |name: &str, value: &str, sensitive: bool| -> Result<(), ProviderError> {
            let name = HeaderName::try_from(name).map_err(|_| config_error(format!("bad header name `{name}`")))?;
            let mut value =
                HeaderValue::try_from(value).map_err(|_| config_error(format!("bad value for header `{name}`")))?;
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
        let client = builder
            .build()
            .map_err(|e| config_error("cannot build the HTTP client").with_source(e))?;
        let capabilities = Capabilities::none().with_streaming().with_reasoning().with_images();
        Ok(Self {
            info: ProviderInfo::new(PROVIDER, capabilities),
            config,
            client,
            url,
            headers,
        })
    }

    /// A provider configured from the environment (see [`AnthropicConfig::from_env`]).
    pub fn from_env() -> Result<Self, ProviderError> {
        Self::new(AnthropicConfig::from_env())
    }

    /// The registry constructor: the environment with JSON options on top (see
    /// [`AnthropicConfig::from_options`]; `null` means none). Matches the facade's `BuildFn`.
    pub fn build(options: &Value) -> Result<Arc<dyn Provider>, ProviderError> {
        Ok(Arc::new(Self::new(AnthropicConfig::from_options(options)?)?))
    }

    /// The configuration.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    /// The endpoint (`{base}/v1/messages`).
    pub fn url(&self) -> &str {
        self.url.as_str()
    }
}

/// See [`AnthropicProvider::build`].
pub fn build(options: &Value) -> Result<Arc<dyn Provider>, ProviderError> {
    AnthropicProvider::build(options)
}

async fn or_cancel<T>(signal: &Signal, future: impl Future<Output = T>) -> Result<T, ProviderError> {
    tokio::select! {
        biased;
        _ = signal.cancelled() => Err(ProviderError::cancelled().with_provider(PROVIDER)),
        value = future => Ok(value),
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
        check_conversation(messages, false).map_err(|e| e.with_provider(PROVIDER))?;
        if signal.is_cancelled() {
            return Err(ProviderError::cancelled().with_provider(PROVIDER));
        }
        let translator = Translator::new().with_model(model);
        let parts = build_request(messages, tools, model, context, self.config.default_max_tokens)?;
        let body = serde_json::to_vec(&parts.body).map_err(|e| {
            ProviderError::new(patchbay_core::ErrorKind::InvalidRequest, "cannot serialize the request").with_source(e)
        })?;
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
            .chain(&parts.betas)
            .map(String::as_str)
            .collect();
        if !betas.is_empty() {
            request = request.header("anthropic-beta", betas.join(","));
        }
        let span = tracing::info_span!("patchbay.anthropic.request", model, bytes = body.len());
        let send = request.body(body).send().instrument(span.clone());
        let response = match self.config.read_timeout {
            Some(limit) => or_cancel(signal, tokio::time::timeout(limit, send))
                .await?
                .map_err(|_| idle_timeout(limit, "waiting for the response headers"))?,
            None => or_cancel(signal, send).await?,
        }
        .map_err(|e| transport_error(e, "sending the request"))?;
        let status = response.status();
        if !status.is_success() {
            let headers = response.headers().clone();
            let body = or_cancel(signal, response.bytes()).await?.unwrap_or_default();
            let error = http_error(status.as_u16(), &headers, &body);
            tracing::debug!(parent: &span, status = status.as_u16(), kind = %error.kind(), "request failed");
            return Err(error);
        }
        let mut translator = StreamTranslator::new(translator.with_warnings(parts.warnings));
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if is_json {
            // A server that ignored `stream: true`: the whole message at once.
            let bytes = or_cancel(signal, response.bytes())
                .await?
                .map_err(|e| transport_error(e, "reading the response"))?;
            let pending = translate_whole_message(translator.translator(), &bytes).err();
            return Ok(Box::pin(HttpEventStream {
                body: None,
                translator,
                signal: signal.clone(),
                cancelled: Box::pin(signal.token().clone().cancelled_owned()),
                idle: None,
                pending,
                terminated: false,
            }));
        }
        let idle = self.config.read_timeout.map(Idle::new);
        Ok(Box::pin(HttpEventStream {
            body: Some(Box::pin(response.bytes_stream())),
            translator,
            signal: signal.clone(),
            cancelled: Box::pin(signal.token().clone().cancelled_owned()),
            idle,
            pending: None,
            terminated: false,
        }))
    }
}

fn translate_whole_message(translator: &mut Translator, body: &[u8]) -> Result<(), ProviderError> {
    let message: Value = serde_json::from_slice(body).map_err(|e| {
        ProviderError::protocol(format!("the JSON response is not a message: {e}")).with_provider(PROVIDER)
    })?;
    translator.push_value(&json!({ "type": "message_start", "message": message }))?;
    translator.push_value(&json!({ "type": "message_stop" }))
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

fn idle_timeout(limit: Duration, what: &str) -> ProviderError {
    ProviderError::new(ErrorKind::Transport, format!("{what}: nothing arrived for {limit:?}")).with_provider(PROVIDER)
}

/// The idle read timeout, without touching a timer per chunk: a chunk only sets a flag, and a
/// timer that fires once per period checks it. A stream is declared dead after between one and
/// two periods of silence.
struct Idle {
    limit: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
    activity: bool,
}

impl Idle {
    fn new(limit: Duration) -> Self {
        Self {
            limit,
            timer: Box::pin(tokio::time::sleep(limit)),
            activity: false,
        }
    }

    /// Poll the timer: `true` when the stream has been silent too long.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        while self.timer.as_mut().poll(cx).is_ready() {
            if !self.activity {
                return true;
            }
            self.activity = false;
            let next = tokio::time::Instant::now() + self.limit;
            self.timer.as_mut().reset(next);
        }
        false
    }
}

/// The event stream of one call: reads the body only when polled, translates in place, and
/// drops the connection on cancel, on error and after `message_stop`.
struct HttpEventStream {
    body: Option<Body>,
    translator: StreamTranslator,
    signal: Signal,
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    idle: Option<Idle>,
    pending: Option<ProviderError>,
    terminated: bool,
}

impl HttpEventStream {
    fn end(&mut self, item: Option<Result<Event, ProviderError>>) -> Poll<Option<Result<Event, ProviderError>>> {
        self.terminated = true;
        self.body = None;
        Poll::Ready(item)
    }
}

impl Stream for HttpEventStream {
    type Item = Result<Event, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.terminated {
                return Poll::Ready(None);
            }
            if this.signal.is_cancelled() {
                return this.end(Some(Err(ProviderError::cancelled().with_provider(PROVIDER))));
            }
            match this.translator.pull() {
                Ok(Some(event)) => return Poll::Ready(Some(Ok(event))),
                Ok(None) => {}
                Err(error) => {
                    // Events queued before the error go first.
                    this.pending = Some(error);
                }
            }
            if let Some(event) = this.translator.next_event() {
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(error) = this.pending.take() {
                return this.end(Some(Err(error)));
            }
            let Some(body) = this.body.as_mut() else {
                if let Err(error) = this.translator.finish() {
                    this.pending = Some(error);
                    continue;
                }
                return this.end(None);
            };
            if this.translator.is_done() {
                return this.end(None);
            }
            match body.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(bytes))) => {
                    if let Some(idle) = &mut this.idle {
                        idle.activity = true;
                    }
                    if let Err(error) = this.translator.feed(&bytes) {
                        this.pending = Some(error);
                    }
                }
                Poll::Ready(Some(Err(error))) => {
                    this.body = None;
                    this.pending = Some(transport_error(error, "reading the stream"));
                }
                Poll::Ready(None) => {
                    this.body = None;
                    if let Err(error) = this.translator.finish() {
                        this.pending = Some(error);
                    }
                }
                Poll::Pending => {
                    if this.cancelled.as_mut().poll(cx).is_ready() {
                        continue;
                    }
                    if let Some(idle) = &mut this.idle
                        && idle.expired(cx)
                    {
                        this.body = None;
                        this.pending = Some(idle_timeout(idle.limit, "reading the stream"));
                        continue;
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}
