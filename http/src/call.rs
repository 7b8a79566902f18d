//! The one call runner of every HTTP provider: everything `create_response` does besides
//! building its request and translating its wire.

use patchbay_core::kit::{self, Driver, StreamLimits, Wire, check_conversation, request_id};
use patchbay_core::{ErrorKind, EventStream, Message, ProviderError, RequestContext, Signal};
use reqwest::header::CONTENT_TYPE;
use serde::Serialize;
use tracing::Instrument;

use crate::record::{Recorder, Tape};
use crate::send::{body_stream, send};

/// What a provider prepares for one call: the request (URL and headers set), its body, and the
/// wire that reads the answer.
#[derive(Debug)]
pub struct Prepared<W> {
    request: reqwest::RequestBuilder,
    body: Vec<u8>,
    wire: W,
}

impl<W> Prepared<W> {
    /// `request` with `body` serialized as its JSON (an `InvalidRequest` error if it cannot
    /// be), answered through `wire`.
    pub fn json(request: reqwest::RequestBuilder, body: &impl Serialize, wire: W) -> Result<Self, ProviderError> {
        let body = serde_json::to_vec(body).map_err(|e| {
            ProviderError::new(ErrorKind::InvalidRequest, "cannot serialize the request").with_source(e)
        })?;
        Ok(Self {
            request: request.header(CONTENT_TYPE, "application/json"),
            body,
            wire,
        })
    }
}

/// One model call over HTTP, the runner every HTTP provider's `create_response` calls: check
/// the conversation, open the call's span, prepare the request, record it when a recorder is
/// set, send it (one send path: headers awaited under the signal and the read timeout, no
/// redirect followed, an error status mapped by the wire), and drive the body through the wire
/// inside the span.
///
/// ```no_run
/// # use patchbay_core::kit::Wire;
/// # use patchbay_core::{EventStream, Message, ProviderError, Signal};
/// # use patchbay_http::{Call, Prepared};
/// # async fn create_response<W: Wire + Unpin + 'static>(
/// #     client: &patchbay_http::reqwest::Client, messages: &[Message], model: &str, signal: &Signal,
/// #     wire: W,
/// # ) -> Result<EventStream, ProviderError> {
/// Call::new("example", messages, model, signal, None)
///     .run(|| {
///         let body = serde_json::json!({ "model": model, "stream": true });
///         Prepared::json(client.post("http://127.0.0.1:8080/v1/chat"), &body, wire)
///     })
///     .await
/// # }
/// ```
#[derive(Debug)]
pub struct Call<'a> {
    provider: &'static str,
    messages: &'a [Message],
    model: &'a str,
    signal: &'a Signal,
    context: Option<&'a RequestContext>,
    limits: StreamLimits,
    recorder: Option<&'a Recorder>,
    user_last: bool,
    system: Option<&'static str>,
}

impl<'a> Call<'a> {
    /// A call of `provider` (the name its errors and span carry) with `create_response`'s
    /// arguments, the default [`StreamLimits`] and no recorder.
    pub fn new(
        provider: &'static str,
        messages: &'a [Message],
        model: &'a str,
        signal: &'a Signal,
        context: Option<&'a RequestContext>,
    ) -> Self {
        Self {
            provider,
            messages,
            model,
            signal,
            context,
            limits: StreamLimits::default(),
            recorder: None,
            user_last: false,
            system: None,
        }
    }

    /// Refuse, before any I/O, a conversation whose last message is not the user's (a wire
    /// that cannot continue an assistant turn); see [`check_conversation`].
    pub fn requiring_user_last(mut self) -> Self {
        self.user_last = true;
        self
    }

    /// Use these limits for the headers, the body and an error body.
    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Name the span's `gen_ai.provider.name` this way instead of by the patchbay provider
    /// (the semantic conventions' well-known value: `gcp.gemini` or `gcp.vertex_ai` for the
    /// Gemini provider); errors keep the patchbay name.
    pub fn with_system(mut self, system: &'static str) -> Self {
        self.system = Some(system);
        self
    }

    /// Record the exchange with this recorder (`None`: record nothing).
    pub fn with_recorder(mut self, recorder: Option<&'a Recorder>) -> Self {
        self.recorder = recorder;
        self
    }

    /// Run the call: `prepare` builds the request after the input checks passed and before
    /// the span opens, so a wire's metrics clock starts with the call. Every error names the
    /// provider. A `200 application/json` answer (a server that ignored the request to stream)
    /// goes to [`Wire::whole_body`].
    pub async fn run<W>(
        self,
        prepare: impl FnOnce() -> Result<Prepared<W>, ProviderError>,
    ) -> Result<EventStream, ProviderError>
    where
        W: Wire + Unpin + 'static,
    {
        let provider = self.provider;
        check_conversation(self.messages, self.user_last).map_err(|e| e.with_provider(provider))?;
        if self.signal.is_cancelled() {
            return Err(ProviderError::cancelled().with_provider(provider));
        }
        let Prepared { request, body, wire } = prepare().map_err(|e| e.with_provider(provider))?;
        let span = kit::request_span_for(self.system.unwrap_or(provider), self.model, self.messages, self.context);
        tracing::debug!(parent: &span, bytes = body.len(), "sending the request");
        let tape = Tape::start(self.recorder, self.model);
        let response = send(
            &tape,
            request.body(body),
            &self.limits,
            self.signal,
            provider,
            |failure| wire.error_response(failure),
        )
        .instrument(span.clone())
        .await
        .map_err(|e| kit::record_error(&span, e))?;
        let request_id = request_id(response.headers());
        let whole = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let body = body_stream(&tape, response, "reading the stream", provider);
        let mut driver = Driver::new(body, wire, self.signal)
            .with_limits(&self.limits)
            .with_provider(provider)
            .with_request_id(request_id);
        if whole {
            driver = driver.whole_body();
        }
        Ok(kit::in_span(tape.watch(driver.into_stream()), span))
    }
}
