//! The provider: one POST to `{base_url}/chat/completions` per call, the body streamed through
//! the [`Translator`](crate::translate::Translator) in the caller's task.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;
use patchbay_core::{
    Capabilities, ErrorKind, Event, EventStream, Message, Provider, ProviderError, ProviderInfo, RequestContext,
    Signal, ToolSet, check_conversation,
};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio_util::sync::WaitForCancellationFutureOwned;

use crate::config::OpenRouterConfig;
use crate::error::{self, Error};
use crate::request;
use crate::translate::{Framing, Translator};

/// The largest error body read from a failed HTTP answer.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A provider for OpenAI chat completions: OpenRouter, OpenAI, or any compatible server.
/// Configured once, shared freely (`Arc<dyn Provider>`), stateless between calls.
#[derive(Clone)]
pub struct OpenRouterProvider {
    info: ProviderInfo,
    config: OpenRouterConfig,
    endpoint: String,
    client: reqwest::Client,
}

impl fmt::Debug for OpenRouterProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenRouterProvider")
            .field("endpoint", &self.endpoint)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn sensitive(value: &str, name: &str) -> Result<HeaderValue, Error> {
    let mut value = HeaderValue::from_str(value).map_err(|_| Error::BadHeader(name.to_string()))?;
    value.set_sensitive(true);
    Ok(value)
}

fn transport(error: reqwest::Error) -> ProviderError {
    let message = if error.is_timeout() {
        "the connection timed out"
    } else if error.is_connect() {
        "cannot connect to the server"
    } else {
        "the connection failed"
    };
    ProviderError::new(ErrorKind::Transport, message)
        .with_provider(crate::PROVIDER_NAME)
        .with_source(error)
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

impl OpenRouterProvider {
    /// A provider from a config.
    pub fn new(config: OpenRouterConfig) -> Result<Self, Error> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            headers.insert(AUTHORIZATION, sensitive(&format!("Bearer {key}"), "authorization")?);
        }
        if let Some(referer) = &config.referer {
            headers.insert("http-referer", sensitive(referer, "HTTP-Referer")?);
        }
        if let Some(title) = &config.title {
            headers.insert("x-title", sensitive(title, "X-Title")?);
        }
        for (name, value) in &config.headers {
            let name_value = HeaderName::try_from(name.as_str()).map_err(|_| Error::BadHeader(name.clone()))?;
            headers.insert(name_value, sensitive(value, name)?);
        }
        let client = patchbay_http::client_builder()
            .default_headers(headers)
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(Error::Client)?;
        let capabilities = Capabilities::none().with_streaming().with_reasoning().with_images();
        Ok(Self {
            info: ProviderInfo::new(crate::PROVIDER_NAME, capabilities),
            endpoint: format!("{}/chat/completions", config.base_url),
            config,
            client,
        })
    }

    /// From the environment; see [`OpenRouterConfig::from_env`].
    pub fn from_env() -> Result<Self, ProviderError> {
        Ok(OpenRouterConfig::from_env()?.build()?)
    }

    /// From JSON options (the facade registry's hook); see [`OpenRouterConfig::from_options`].
    pub fn from_options(options: &Value) -> Result<Self, ProviderError> {
        Ok(OpenRouterConfig::from_options(options)?.build()?)
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
        let built = request::build(
            messages,
            tools,
            model,
            context,
            self.config.dialect,
            self.config.include_usage,
        );
        (built.body, built.warnings)
    }
}

async fn read_error_body(response: reqwest::Response, signal: &Signal) -> Vec<u8> {
    let mut response = response;
    let mut body = Vec::new();
    loop {
        let chunk = tokio::select! {
            biased;
            _ = signal.cancelled() => break,
            chunk = response.chunk() => chunk,
        };
        match chunk {
            Ok(Some(bytes)) => {
                body.extend_from_slice(&bytes[..bytes.len().min(MAX_ERROR_BODY - body.len())]);
                if body.len() >= MAX_ERROR_BODY {
                    break;
                }
            }
            _ => break,
        }
    }
    body
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
        check_conversation(messages, false)?;
        if signal.is_cancelled() {
            return Err(ProviderError::cancelled());
        }
        // The metrics clock starts with the call, so `first_event_ms` counts the wait for headers.
        let translator = Translator::new(Framing::Sse).with_model(model);
        let built = request::build(
            messages,
            tools,
            model,
            context,
            self.config.dialect,
            self.config.include_usage,
        );
        let body = serde_json::to_vec(&built.body).map_err(|e| {
            ProviderError::new(ErrorKind::InvalidRequest, "the request cannot be serialized")
                .with_provider(crate::PROVIDER_NAME)
                .with_source(e)
        })?;
        let span = tracing::info_span!("patchbay.request", provider = crate::PROVIDER_NAME, model = %model);
        let _entered = span.enter();
        tracing::debug!(endpoint = %self.endpoint, bytes = body.len(), "sending chat completion request");
        let send = self
            .client
            .post(&self.endpoint)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body)
            .send();
        drop(_entered);
        let response = tokio::select! {
            biased;
            _ = signal.cancelled() => return Err(ProviderError::cancelled().with_provider(crate::PROVIDER_NAME)),
            response = send => response.map_err(transport)?,
        };
        let status = response.status().as_u16();
        let request_id =
            header(response.headers(), "x-request-id").or_else(|| header(response.headers(), "request-id"));
        if !(200..300).contains(&status) {
            let retry_after = patchbay_core::parse_retry_after(
                header(response.headers(), "retry-after-ms").as_deref(),
                header(response.headers(), "retry-after").as_deref(),
            );
            let body = read_error_body(response, signal).await;
            let error = error::from_http(status, &body, request_id, retry_after);
            tracing::warn!(parent: &span, status, kind = %error.kind(), "chat completion request failed");
            return Err(error);
        }
        let translator = translator.with_warnings(built.warnings);
        Ok(Box::pin(ChatStream {
            body: Box::pin(response.bytes_stream()),
            cancelled: Box::pin(signal.token().clone().cancelled_owned()),
            signal: signal.clone(),
            translator,
            out: VecDeque::new(),
            error: None,
            request_id,
            done: false,
        }))
    }
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// The event stream of one response: reads the body in the caller's task (no spawned task, no
/// channel), translates each network chunk as it comes and hands out its events one by one.
struct ChatStream {
    body: Body,
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    signal: Signal,
    translator: Translator,
    out: VecDeque<Event>,
    error: Option<ProviderError>,
    request_id: Option<String>,
    done: bool,
}

impl ChatStream {
    fn cancel(&mut self) -> Poll<Option<Result<Event, ProviderError>>> {
        self.done = true;
        self.out.clear();
        // Drop the response now: the connection closes even if the caller keeps the stream.
        self.body = Box::pin(futures::stream::empty());
        Poll::Ready(Some(
            Err(ProviderError::cancelled().with_provider(crate::PROVIDER_NAME)),
        ))
    }

    fn fail(&mut self, mut error: ProviderError) {
        if let Some(id) = &self.request_id {
            error = error.with_request_id(id.clone());
        }
        self.error = Some(error);
    }
}

impl Stream for ChatStream {
    type Item = Result<Event, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if this.signal.is_cancelled() {
                return this.cancel();
            }
            if let Some(event) = this.out.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(error) = this.error.take() {
                this.done = true;
                this.body = Box::pin(futures::stream::empty());
                return Poll::Ready(Some(Err(error)));
            }
            if this.translator.is_done() {
                this.done = true;
                return Poll::Ready(None);
            }
            let result = match this.body.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(bytes))) => this.translator.feed(&bytes, &mut this.out),
                Poll::Ready(Some(Err(error))) => Err(transport(error)),
                Poll::Ready(None) => this.translator.finish(&mut this.out),
                Poll::Pending => {
                    return match this.cancelled.as_mut().poll(cx) {
                        Poll::Ready(()) => this.cancel(),
                        Poll::Pending => Poll::Pending,
                    };
                }
            };
            if let Err(error) = result {
                this.fail(error);
            }
        }
    }
}
