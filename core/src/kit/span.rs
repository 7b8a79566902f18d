//! The one span of a model call, and an event stream polled inside it.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;

use crate::context::RequestContext;
use crate::error::ProviderError;
use crate::event::Event;
use crate::message::Message;
use crate::provider::EventStream;
use crate::telemetry::{SpanRecorder, chat_span};

/// Record on a model call's span that the call failed before its stream began (an error status,
/// a connection refused): `error.type` and the error status. Returns the error, for
/// `send(..).await.map_err(|e| record_error(&span, e))?`.
pub fn record_error(span: &tracing::Span, error: ProviderError) -> ProviderError {
    SpanRecorder::new(span.clone()).observe(Err(&error));
    error
}

/// The span every provider opens around one model call: `chat` (exported to OpenTelemetry as
/// `chat {model}`), with the GenAI attributes of [`telemetry::chat_span`](crate::telemetry::chat_span)
/// but no request parameters; prefer [`request_span_for`].
///
/// ```
/// let span = patchbay_core::kit::request_span("anthropic", "claude-sonnet-4-5");
/// let _entered = span.enter();
/// ```
pub fn request_span(provider: &str, model: &str) -> tracing::Span {
    chat_span(provider, model, &[], None)
}

/// The span of one model call with the request's parameters (max tokens, sampling, the
/// session's conversation id) and, while content is captured, its messages and system prompt.
///
/// ```
/// use patchbay_core::Message;
/// let span = patchbay_core::kit::request_span_for("mine", "m", &[Message::user("hi")], None);
/// let _entered = span.enter();
/// ```
pub fn request_span_for(
    provider: &str,
    model: &str,
    messages: &[Message],
    context: Option<&RequestContext>,
) -> tracing::Span {
    chat_span(provider, model, messages, context)
}

/// `stream` polled inside `span`: whatever the provider logs while translating (and the
/// driver's limit errors) belongs to the call's span although the host polls the stream later,
/// outside it. The span's response attributes (response id and model, usage, finish reason,
/// time to first chunk, `error.type`) are filled in from the items as they pass
/// ([`SpanRecorder`]); the span ends when the stream is dropped.
///
/// ```
/// use futures::StreamExt;
/// use patchbay_core::kit::{in_span, request_span};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let events: patchbay_core::EventStream = Box::pin(futures::stream::empty());
/// let mut events = in_span(events, request_span("mine", "m"));
/// assert!(events.next().await.is_none());
/// # });
/// ```
pub fn in_span(stream: EventStream, span: tracing::Span) -> EventStream {
    observed(stream, SpanRecorder::new(span))
}

/// `stream` polled inside the recorder's span, each item noted by the recorder.
pub(crate) fn observed(stream: EventStream, recorder: SpanRecorder) -> EventStream {
    let span = recorder.span().clone();
    Box::pin(InSpan {
        inner: stream,
        span,
        recorder,
    })
}

struct InSpan {
    inner: EventStream,
    span: tracing::Span,
    recorder: SpanRecorder,
}

impl Stream for InSpan {
    type Item = Result<Event, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let _entered = this.span.enter();
        let item = this.inner.as_mut().poll_next(cx);
        if let Poll::Ready(Some(item)) = &item {
            this.recorder.observe(item.as_ref());
        }
        item
    }
}
