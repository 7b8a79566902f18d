//! The one trait a wire family implements: how its bytes are framed, a pure translator from
//! frames to [`Event`]s, and the mapping of its HTTP error responses. The [`Driver`](super::Driver)
//! runs a wire over a live body, [`replay`] over a recorded one; nothing else stands between a
//! wire and its callers.

use std::time::Duration;

use futures::StreamExt;
use http::HeaderMap;

use super::{Framer, Framing, kind_for_status, parse_retry_after};
use crate::{Event, EventStream, Message, Provider, ProviderError, RequestContext, Signal, ToolSet};

/// A wire family's translation: frames in, events out, plus what its HTTP errors mean.
///
/// A pure state machine (no I/O, no timers), so it is tested on recorded streams alone. The
/// caller (the [`Driver`](super::Driver) or [`replay`]) cuts the body into frames with a
/// [`Framer`] of [`framing`](Self::framing), hands each one to [`frame`](Self::frame), and
/// takes events in order: the one `frame` returns, then every one [`next_event`](Self::next_event)
/// gives, before the next frame.
///
/// An `Err` from `frame` or [`end`](Self::end) ends the stream after the events queued before
/// it. Once [`is_done`](Self::is_done), later bytes are not read.
///
/// ```
/// use std::collections::VecDeque;
/// use patchbay_core::kit::{Framing, Wire, replay};
/// use patchbay_core::{Event, FinishReason, ProviderError};
///
/// /// One text delta per line, `.` ends the answer.
/// #[derive(Default)]
/// struct Lines { queue: VecDeque<Event>, done: bool }
///
/// impl Wire for Lines {
///     fn framing(&self) -> Framing { Framing::Lines }
///     fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
///         if data == b"." {
///             self.done = true;
///             let (usage, metrics) = Default::default();
///             self.queue.push_back(Event::Finish { reason: FinishReason::Stop, usage, metrics });
///             return Ok(None);
///         }
///         Ok(Some(Event::TextDelta { index: 0, text: String::from_utf8_lossy(data).into() }))
///     }
///     fn end(&mut self) -> Result<(), ProviderError> {
///         if self.done { Ok(()) } else { Err(ProviderError::protocol("the answer never ended")) }
///     }
///     fn next_event(&mut self) -> Option<Event> { self.queue.pop_front() }
///     fn is_done(&self) -> bool { self.done }
/// }
///
/// let recordings = replay(Lines::default, [&b"Hel"[..], b"lo\n.\n"]);
/// assert_eq!(recordings[0].text(), "Hello");
/// assert!(recordings[0].error.is_none());
/// ```
pub trait Wire: Send {
    /// How the body is cut into frames.
    fn framing(&self) -> Framing;

    /// Translate one frame (an SSE frame's data, or a line). The frame's first event may be
    /// returned directly (the common one-event frame needs no queue); the rest are queued for
    /// [`next_event`](Self::next_event). Called only when the queue is empty.
    fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError>;

    /// The body ended: translate what is left and close the stream (a body that ends before
    /// the wire's own end is usually a `Protocol` error).
    fn end(&mut self) -> Result<(), ProviderError>;

    /// The next queued event, if any.
    fn next_event(&mut self) -> Option<Event>;

    /// Whether the wire's own end (or an error) was seen.
    fn is_done(&self) -> bool;

    /// A whole JSON body from a server that ignored the request to stream (the HTTP runner
    /// hands it over when the response is `application/json`). By default a `Protocol` error.
    fn whole_body(&mut self, body: &[u8]) -> Result<(), ProviderError> {
        let _ = body;
        Err(ProviderError::protocol(
            "the server answered with a JSON body instead of a stream",
        ))
    }

    /// An HTTP error response as this wire's typed error. By default the kind follows the
    /// status ([`kind_for_status`]), with the status, request id, `Retry-After` and the first
    /// 500 characters of the body.
    fn error_response(&self, response: ErrorResponse<'_>) -> ProviderError {
        response.generic_error()
    }

    /// Whether `data`, arriving after this wire is done, starts another response of a recording
    /// that holds several (`message_start` on the Messages API). [`replay`] asks; by default
    /// nothing does.
    fn starts_response(&self, data: &[u8]) -> bool {
        let _ = data;
        false
    }
}

/// A borrowed wire is a wire: translate with one and read its state afterwards.
impl<W: Wire + ?Sized> Wire for &mut W {
    fn framing(&self) -> Framing {
        (**self).framing()
    }
    fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
        (**self).frame(data)
    }
    fn end(&mut self) -> Result<(), ProviderError> {
        (**self).end()
    }
    fn next_event(&mut self) -> Option<Event> {
        (**self).next_event()
    }
    fn is_done(&self) -> bool {
        (**self).is_done()
    }
    fn whole_body(&mut self, body: &[u8]) -> Result<(), ProviderError> {
        (**self).whole_body(body)
    }
    fn error_response(&self, response: ErrorResponse<'_>) -> ProviderError {
        (**self).error_response(response)
    }
    fn starts_response(&self, data: &[u8]) -> bool {
        (**self).starts_response(data)
    }
}

/// A response with an error status, for a wire's own mapping ([`Wire::error_response`]).
#[derive(Debug, Clone, Copy)]
pub struct ErrorResponse<'a> {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: &'a HeaderMap,
    /// The error body, read up to the limits' `max_error_body_bytes`.
    pub body: &'a [u8],
}

impl ErrorResponse<'_> {
    /// A header as text, if present and readable.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// How long the server asked to wait: `retry-after-ms`, else `retry-after` (seconds or an
    /// HTTP date).
    pub fn retry_after(&self) -> Option<Duration> {
        parse_retry_after(self.header("retry-after-ms"), self.header("retry-after"))
    }

    /// The server's request id (see [`request_id`]).
    pub fn request_id(&self) -> Option<String> {
        request_id(self.headers)
    }

    /// The mapping of a wire without its own ([`Wire::error_response`]'s default).
    pub fn generic_error(&self) -> ProviderError {
        let text = String::from_utf8_lossy(self.body);
        let text = text.trim();
        let message = if text.is_empty() {
            format!("HTTP {}", self.status)
        } else {
            text.chars().take(500).collect()
        };
        let mut error = ProviderError::new(kind_for_status(self.status), message).with_status(self.status);
        if let Some(id) = self.request_id() {
            error = error.with_request_id(id);
        }
        if let Some(wait) = self.retry_after() {
            error = error.with_retry_after(wait);
        }
        error
    }
}

/// The start of a frame for an error message that quotes it: its first 80 characters (read
/// from at most 120 bytes, invalid UTF-8 replaced).
pub fn frame_head(data: &[u8]) -> String {
    String::from_utf8_lossy(&data[..data.len().min(120)])
        .chars()
        .take(80)
        .collect()
}

/// A response's request id: `request-id`, else `x-request-id` (behind proxies).
pub fn request_id(headers: &HeaderMap) -> Option<String> {
    ["request-id", "x-request-id"]
        .iter()
        .find_map(|name| headers.get(*name))
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// What was seen of one response: its events in order and the error that ended it, if any.
/// What [`replay`] gives per response and what the conformance suite compares and validates.
#[derive(Debug, Default)]
pub struct Recording {
    /// Events in order.
    pub events: Vec<Event>,
    /// The error that ended the stream.
    pub error: Option<ProviderError>,
}

impl Recording {
    /// Check the recording against the lifecycle rules ([`validate`](fn@crate::validate::validate)).
    pub fn validate(&self) -> Result<(), Vec<crate::validate::Violation>> {
        crate::validate::validate(self.events.iter().map(Ok).chain(self.error.iter().map(Err)))
    }

    /// The events and the error, apart.
    pub fn into_parts(self) -> (Vec<Event>, Option<ProviderError>) {
        (self.events, self.error)
    }

    /// The text of every `TextDelta`, joined in order (reasoning and tool input left out).
    pub fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(|event| match event {
                Event::TextDelta { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Read a stream to its end: every event, then the error that ended it. Items after an
    /// error are kept too, so the validator sees a provider that goes on after failing.
    pub async fn collect(mut stream: EventStream) -> Self {
        let mut recording = Self::default();
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => recording.events.push(event),
                Err(error) if recording.error.is_none() => recording.error = Some(error),
                Err(_) => {}
            }
        }
        recording
    }

    /// One `create_response` call, collected; an error before the stream is the recording's
    /// error with no events.
    pub async fn call(
        provider: &dyn Provider,
        messages: &[Message],
        tools: &ToolSet,
        model: &str,
        signal: &Signal,
        context: Option<&RequestContext>,
    ) -> Self {
        match provider.create_response(messages, tools, model, signal, context).await {
            Ok(stream) => Self::collect(stream).await,
            Err(error) => Self {
                events: Vec::new(),
                error: Some(error),
            },
        }
    }
}

/// Translate a body holding one response, fed in chunks cut anywhere, framed as `wire` says:
/// what the [`Driver`](super::Driver) does, without I/O, timers or caps beyond the framer's.
/// Frames after the wire's end are not read.
pub fn translate<'a, W, I>(mut wire: W, chunks: I) -> Recording
where
    W: Wire,
    I: IntoIterator<Item = &'a [u8]>,
{
    let mut framer = Framer::new(wire.framing());
    let mut recording = Recording::default();
    let step = |wire: &mut W, data: &[u8], recording: &mut Recording| -> Result<(), ProviderError> {
        if wire.is_done() {
            return Ok(());
        }
        let failed = match wire.frame(data) {
            Ok(event) => {
                recording.events.extend(event);
                None
            }
            Err(error) => Some(error),
        };
        while let Some(event) = wire.next_event() {
            recording.events.push(event);
        }
        failed.map_or(Ok(()), Err)
    };
    let mut fed = Ok(());
    for chunk in chunks {
        fed = framer.push(chunk, |data| step(&mut wire, data, &mut recording));
        if fed.is_err() {
            break;
        }
    }
    let ended = fed
        .and_then(|()| framer.finish(|data| step(&mut wire, data, &mut recording)))
        .and_then(|()| wire.end());
    while let Some(event) = wire.next_event() {
        recording.events.push(event);
    }
    recording.error = ended.err();
    recording
}

/// Translate a recorded body, fed in chunks cut anywhere, with wires from `new_wire`: one
/// [`Recording`] per response.
///
/// The framing is the wire's, or one JSON payload per line when the first non-blank line
/// starts with `{` (raw captures). A body that starts with `[` is one JSON answer (Gemini's
/// stream without `alt=sse` is a JSON array of chunks): it goes to [`Wire::whole_body`] whole,
/// one recording. After a response ends, frames are skipped until one
/// [starts another](Wire::starts_response); a frame that starts another response while one is
/// failing closes the failed one and starts the next. A framing error (a line past the cap)
/// ends the recording.
pub fn replay<'a, W, I>(mut new_wire: impl FnMut() -> W, chunks: I) -> Vec<Recording>
where
    W: Wire,
    I: IntoIterator<Item = &'a [u8]>,
{
    let chunks: Vec<&[u8]> = chunks.into_iter().collect();
    let wire = new_wire();
    // The first byte that is not white space, however the body was cut.
    let first = chunks
        .iter()
        .flat_map(|chunk| chunk.iter())
        .find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        let mut wire = wire;
        let body = chunks.concat();
        let mut recording = Recording::default();
        let result = wire.whole_body(&body);
        while let Some(event) = wire.next_event() {
            recording.events.push(event);
        }
        recording.error = result.err();
        return vec![recording];
    }
    let json_lines = first == Some(&b'{');
    let framing = if json_lines { Framing::Lines } else { wire.framing() };
    let mut framer = Framer::new(framing);
    let mut replay = Replayer {
        done: Vec::new(),
        wire,
        current: Recording::default(),
        new_wire,
    };
    for chunk in chunks {
        if let Err(error) = framer.push(chunk, |data| {
            replay.frame(data);
            Ok(())
        }) {
            replay.current.error.get_or_insert(error);
            return replay.close_last();
        }
    }
    if let Err(error) = framer.finish(|data| {
        replay.frame(data);
        Ok(())
    }) {
        replay.current.error.get_or_insert(error);
    }
    replay.close_last()
}

/// The state of [`replay`]: the responses closed so far and the one being read.
struct Replayer<W, F> {
    done: Vec<Recording>,
    wire: W,
    current: Recording,
    new_wire: F,
}

impl<W: Wire, F: FnMut() -> W> Replayer<W, F> {
    fn frame(&mut self, data: &[u8]) {
        if self.wire.is_done() || self.current.error.is_some() {
            if !self.wire.starts_response(data) {
                return;
            }
            self.next_response();
        }
        let result = self.wire.frame(data);
        let failed = match result {
            Ok(event) => {
                self.current.events.extend(event);
                None
            }
            Err(error) => Some(error),
        };
        self.drain();
        if let Some(error) = failed {
            let restart = !self.current.events.is_empty() && self.wire.starts_response(data);
            self.current.error.get_or_insert(error);
            if restart {
                // A new response spliced into an unfinished one: the old one failed, the new one
                // starts with this frame.
                self.next_response();
                self.frame(data);
            }
        }
    }

    fn drain(&mut self) {
        while let Some(event) = self.wire.next_event() {
            self.current.events.push(event);
        }
    }

    /// Close the current response (its wire's end decides how it ended) and start another.
    fn next_response(&mut self) {
        self.close();
        self.wire = (self.new_wire)();
    }

    fn close(&mut self) {
        if let Err(error) = self.wire.end() {
            self.current.error.get_or_insert(error);
        }
        self.drain();
        self.done.push(std::mem::take(&mut self.current));
    }

    fn close_last(mut self) -> Vec<Recording> {
        self.close();
        self.done
    }
}
