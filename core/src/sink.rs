//! Adapters for hosts built on callbacks or an event bus, and the handle of a started run.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use tokio::sync::{broadcast, watch};

use crate::error::{ErrorKind, ProviderError};
use crate::event::Event;
use crate::provider::{EventStream, ProviderResponse};
use crate::signal::Signal;
use crate::tool::ToolResult;

/// Callbacks driven from a stream by [`drive`]. Every method has an empty default.
#[allow(unused_variables)]
pub trait EventSink: Send {
    /// Text of block `index` arrived.
    fn on_text(&mut self, index: usize, text: &str) {}
    /// Reasoning of block `index` arrived.
    fn on_reasoning(&mut self, index: usize, text: &str) {}
    /// A complete tool call.
    fn on_tool_call(&mut self, id: &str, name: &str, input: &serde_json::Value) {}
    /// A tool finished.
    fn on_tool_result(&mut self, id: &str, name: &str, result: &ToolResult) {}
    /// The session id became known.
    fn on_session_id(&mut self, session_id: &str) {}
    /// Every event, after the specific callback.
    fn on_event(&mut self, event: &Event) {}
    /// The error that ended the stream.
    fn on_error(&mut self, error: &ProviderError) {}
}

/// Drive `sink` from `stream` to its end and return the collected response.
pub async fn drive(stream: EventStream, sink: &mut dyn EventSink) -> Result<ProviderResponse, ProviderError> {
    let tapped = stream.inspect(|item| match item {
        Ok(event) => {
            match event {
                Event::TextDelta { index, text } => sink.on_text(*index, text),
                Event::ReasoningDelta { index, text } => sink.on_reasoning(*index, text),
                Event::ToolCall { id, name, input, .. } => sink.on_tool_call(id, name, input),
                Event::ToolResult { id, name, result } => sink.on_tool_result(id, name, result),
                Event::Started {
                    session_id: Some(session_id),
                    ..
                } => sink.on_session_id(session_id),
                _ => {}
            }
            sink.on_event(event);
        }
        Err(error) => sink.on_error(error),
    });
    ProviderResponse::collect(tapped).await
}

/// What a broadcast subscriber receives.
#[derive(Debug, Clone)]
pub enum Broadcast {
    /// An event.
    Event(Arc<Event>),
    /// The error that ended the stream, by kind and message.
    Error {
        /// The error kind.
        kind: ErrorKind,
        /// The error's display text.
        message: String,
    },
}

/// Fans a stream out to any number of UI subscribers while the owner consumes it.
///
/// Subscribers that fall behind by more than the capacity miss events (tokio broadcast
/// semantics, reported to them as `Lagged`); the owner's stream is never slowed down.
#[derive(Debug, Clone)]
pub struct EventBroadcast {
    tx: broadcast::Sender<Broadcast>,
}

impl EventBroadcast {
    /// A fan-out keeping up to `capacity` events for slow subscribers.
    pub fn new(capacity: usize) -> Self {
        Self {
            tx: broadcast::channel(capacity.max(1)).0,
        }
    }

    /// A new subscriber; it sees events sent after this call.
    pub fn subscribe(&self) -> broadcast::Receiver<Broadcast> {
        self.tx.subscribe()
    }

    /// Wrap `stream` so that each item is also sent to subscribers.
    pub fn tap(&self, stream: EventStream) -> EventStream {
        let tx = self.tx.clone();
        Box::pin(stream.inspect(move |item| {
            let message = match item {
                Ok(event) => Broadcast::Event(Arc::new(event.clone())),
                Err(error) => Broadcast::Error {
                    kind: error.kind(),
                    message: error.to_string(),
                },
            };
            // No subscriber is not an error.
            let _ = tx.send(message);
        }))
    }
}

/// A started run: a stream of its events, a cancel method, and the session id once known.
pub struct RunHandle {
    stream: EventStream,
    signal: Signal,
    session: watch::Receiver<Option<String>>,
}

impl RunHandle {
    /// Wrap a stream and the signal that cancels it.
    pub fn new(stream: EventStream, signal: Signal) -> Self {
        let (tx, session) = watch::channel(None);
        let stream = Box::pin(stream.inspect(move |item| {
            if let Ok(Event::Started {
                session_id: Some(id), ..
            }) = item
            {
                let _ = tx.send(Some(id.clone()));
            }
        }));
        Self {
            stream,
            signal,
            session,
        }
    }

    /// Cancel the run; the stream ends promptly with `Cancelled`.
    pub fn cancel(&self) {
        self.signal.cancel();
    }

    /// The run's signal.
    pub fn signal(&self) -> &Signal {
        &self.signal
    }

    /// The session id, once `Started` carried one.
    pub fn session_id(&self) -> Option<String> {
        self.session.borrow().clone()
    }

    /// A watch on the session id, for other tasks.
    pub fn session_watch(&self) -> watch::Receiver<Option<String>> {
        self.session.clone()
    }

    /// The bare stream.
    pub fn into_stream(self) -> EventStream {
        self.stream
    }
}

impl Stream for RunHandle {
    type Item = Result<Event, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.stream.as_mut().poll_next(cx)
    }
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandle")
            .field("cancelled", &self.signal.is_cancelled())
            .field("session_id", &self.session_id())
            .finish_non_exhaustive()
    }
}
