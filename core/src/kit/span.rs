//! The one span of a model call, and an event stream polled inside it.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;

use crate::error::ProviderError;
use crate::event::Event;
use crate::provider::EventStream;

/// The span every provider opens around one model call: `patchbay.request{provider, model}`.
///
/// ```
/// let span = patchbay_core::kit::request_span("anthropic", "claude-sonnet-4-5");
/// let _entered = span.enter();
/// ```
pub fn request_span(provider: &str, model: &str) -> tracing::Span {
    tracing::info_span!("patchbay.request", provider = %provider, model = %model)
}

/// `stream` polled inside `span`: whatever the provider logs while translating (and the
/// driver's limit errors) belongs to the call's span although the host polls the stream later,
/// outside it.
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
    Box::pin(InSpan { inner: stream, span })
}

struct InSpan {
    inner: EventStream,
    span: tracing::Span,
}

impl Stream for InSpan {
    type Item = Result<Event, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let _entered = this.span.enter();
        this.inner.as_mut().poll_next(cx)
    }
}
