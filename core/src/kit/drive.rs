//! The byte-stream-to-event driver every HTTP provider shares: cancellation, the read and
//! content timeouts, capped error bodies, typed errors and provider tagging, once.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::time::Instant;
use tokio_util::sync::WaitForCancellationFutureOwned;

use super::{Framer, Wire};
use crate::{ErrorKind, Event, EventStream, Limit, ProviderError, Signal};

/// The limits of one streamed response, shared by every HTTP provider. `Debug` shows them all.
///
/// | limit | default | trips when | error |
/// | --- | --- | --- | --- |
/// | `read_timeout` | 300 s | no response headers, or no body bytes, for this long | `Transport`, [`Limit::ReadTimeout`] |
/// | `content_timeout` | 900 s | bytes arrive but no event (only SSE comments or `ping`s) for this long | `Transport`, [`Limit::ContentTimeout`] |
/// | `max_line_bytes` | 64 MiB | one line or SSE frame (or a whole JSON body) grows past this | `Protocol`, [`Limit::LineLength`] |
/// | `max_error_body_bytes` | 64 KiB | an error response's body is longer: the rest is not read | none: the HTTP error keeps the first bytes |
///
/// Timeouts are checked without a timer reset per chunk: a silent stream fails between its limit
/// and a twentieth more (plus the timer's 1 ms grain). `None` turns a timeout off (cancellation
/// still works).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamLimits {
    /// Longest silence before the response headers, between two reads of the body, and while
    /// reading an error body.
    pub read_timeout: Option<Duration>,
    /// Longest time without an event while the body keeps arriving: keep-alives cannot extend
    /// a stream past it.
    pub content_timeout: Option<Duration>,
    /// Cap on one line or frame of the stream, and on a whole (non-streamed) JSON body.
    pub max_line_bytes: usize,
    /// How much of an error response's body is read.
    pub max_error_body_bytes: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            read_timeout: Some(Duration::from_secs(300)),
            content_timeout: Some(Duration::from_secs(900)),
            max_line_bytes: super::MAX_LINE_BYTES,
            max_error_body_bytes: 64 * 1024,
        }
    }
}

impl StreamLimits {
    /// Set the read timeout (`None`: off).
    pub fn with_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Set the content timeout (`None`: off).
    pub fn with_content_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.content_timeout = timeout;
        self
    }

    /// Set the cap on one line or frame (at least 1).
    pub fn with_max_line_bytes(mut self, max: usize) -> Self {
        self.max_line_bytes = max.max(1);
        self
    }

    /// Set how much of an error body is read.
    pub fn with_max_error_body_bytes(mut self, max: usize) -> Self {
        self.max_error_body_bytes = max;
        self
    }
}

fn timeout_error(limit: Limit, wait: Duration, what: &str) -> ProviderError {
    let message = match limit {
        Limit::ContentTimeout => format!("{what}: only keep-alives, no content, for {wait:?} (limit {limit})"),
        _ => format!("{what}: nothing arrived for {wait:?} (limit {limit})"),
    };
    ProviderError::new(ErrorKind::Transport, message).with_limit(limit)
}

/// Await `future` (sending a request, waiting for headers) unless the signal fires (a
/// `Cancelled` error) or `read_timeout` passes (`Transport`, [`Limit::ReadTimeout`]; `what`
/// says what was awaited).
pub async fn within<T>(
    signal: &Signal,
    read_timeout: Option<Duration>,
    what: &str,
    future: impl Future<Output = T>,
) -> Result<T, ProviderError> {
    let timed = async {
        match read_timeout {
            Some(limit) => tokio::time::timeout(limit, future)
                .await
                .map_err(|_| timeout_error(Limit::ReadTimeout, limit, what)),
            None => Ok(future.await),
        }
    };
    tokio::select! {
        biased;
        _ = signal.cancelled() => Err(ProviderError::cancelled()),
        value = timed => value,
    }
}

/// Read an error response's body: at most `limits.max_error_body_bytes` (the rest is never
/// read), and only while bytes keep coming within `limits.read_timeout`. A body that stalls,
/// fails or is too long gives what arrived; only cancellation is an error.
pub async fn read_error_body<B, C>(body: B, limits: &StreamLimits, signal: &Signal) -> Result<Vec<u8>, ProviderError>
where
    B: Stream<Item = Result<C, ProviderError>>,
    C: AsRef<[u8]>,
{
    let mut body = std::pin::pin!(body);
    let mut out = Vec::new();
    while out.len() < limits.max_error_body_bytes {
        let next = match within(signal, limits.read_timeout, "reading the error body", body.next()).await {
            Ok(next) => next,
            Err(error) if error.kind() == ErrorKind::Cancelled => return Err(error),
            // Stalled: the status and what arrived still make a useful error.
            Err(_) => break,
        };
        let Some(Ok(chunk)) = next else { break };
        let chunk = chunk.as_ref();
        let room = limits.max_error_body_bytes - out.len();
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    Ok(out)
}

/// Timer periods per limit: a silence is noticed at most one period late.
const TICKS: u32 = 20;

/// The idle check of a timeout, without touching a timer per chunk: activity only sets a flag,
/// and a timer that fires [`TICKS`] times per limit reads it. The silence counts from the last
/// tick that saw activity, so it is declared between the limit and one period more after the
/// last activity.
struct Watch {
    limit: Duration,
    period: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
    /// No activity since this instant (the start, or the last tick that saw activity).
    quiet_since: Instant,
    activity: bool,
}

impl Watch {
    fn new(limit: Duration) -> Self {
        let now = Instant::now();
        let period = (limit / TICKS).max(Duration::from_millis(1)).min(limit);
        Self {
            limit,
            period,
            timer: Box::pin(tokio::time::sleep_until(later(now, period))),
            quiet_since: now,
            activity: false,
        }
    }

    /// Poll the timer: `true` when nothing happened for the whole limit.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        while self.timer.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            if std::mem::take(&mut self.activity) {
                self.quiet_since = now;
            }
            let deadline = later(self.quiet_since, self.limit);
            if now >= deadline {
                return true;
            }
            self.timer.as_mut().reset(later(now, self.period).min(deadline));
        }
        false
    }
}

/// `at + by`, or about 30 years on when that overflows (a limit of `u64::MAX` milliseconds).
fn later(at: Instant, by: Duration) -> Instant {
    at.checked_add(by)
        .unwrap_or_else(|| at + Duration::from_secs(30 * 365 * 86_400))
}

type Body<C> = Pin<Box<dyn Stream<Item = Result<C, ProviderError>> + Send>>;

/// The event stream of one response body, through a [`Wire`]: reads only when polled (in the
/// caller's task, no spawned task, no channel), frames and translates in place, and drops the
/// body on cancel, on error, on a tripped limit and at the wire's end. Errors carry the
/// provider's name and the request id.
///
/// ```
/// use std::collections::VecDeque;
/// use futures::StreamExt;
/// use patchbay_core::kit::{Driver, Framing, Wire};
/// use patchbay_core::{Event, ProviderError, Signal};
///
/// /// One `TextDelta` per line.
/// struct Echo;
/// impl Wire for Echo {
///     fn framing(&self) -> Framing { Framing::Lines }
///     fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
///         Ok(Some(Event::TextDelta { index: 0, text: String::from_utf8_lossy(data).into() }))
///     }
///     fn end(&mut self) -> Result<(), ProviderError> { Ok(()) }
///     fn next_event(&mut self) -> Option<Event> { None }
///     fn is_done(&self) -> bool { false }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let body = futures::stream::iter([Ok::<_, ProviderError>(&b"hi\nth"[..]), Ok(&b"ere\n"[..])]);
/// let events: Vec<_> = Driver::new(body, Echo, &Signal::new())
///     .with_provider("echo")
///     .into_stream()
///     .collect()
///     .await;
/// assert_eq!(events.len(), 2);
/// # });
/// ```
pub struct Driver<W, C> {
    body: Option<Body<C>>,
    wire: W,
    framer: Framer,
    /// The chunk being framed in place ([`Framer::next_frame_in`]), until its last frame is taken.
    chunk: Option<C>,
    /// A whole JSON body being buffered for [`Wire::whole_body`], when the server did not stream.
    whole: Option<Vec<u8>>,
    signal: Signal,
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    read: Option<Watch>,
    content: Option<Watch>,
    provider: Option<String>,
    request_id: Option<String>,
    pending: Option<ProviderError>,
    finished: bool,
    terminated: bool,
}

// Nothing of a driver is ever pinned in place (the body and the timers are boxed; a chunk is
// only read), so it moves freely whatever the chunk type.
impl<W: Unpin, C> Unpin for Driver<W, C> {}

impl<W, C> Driver<W, C>
where
    W: Wire + Unpin + 'static,
    C: AsRef<[u8]> + Send + 'static,
{
    /// Drive `wire` over `body` (transport failures already mapped to `ProviderError`s) with
    /// the default [`StreamLimits`].
    pub fn new<B>(body: B, wire: W, signal: &Signal) -> Self
    where
        B: Stream<Item = Result<C, ProviderError>> + Send + 'static,
    {
        let limits = StreamLimits::default();
        let framer = Framer::new(wire.framing()).with_max_bytes(limits.max_line_bytes);
        Self {
            body: Some(Box::pin(body)),
            wire,
            framer,
            chunk: None,
            whole: None,
            signal: signal.clone(),
            cancelled: Box::pin(signal.token().clone().cancelled_owned()),
            read: limits.read_timeout.map(Watch::new),
            content: limits.content_timeout.map(Watch::new),
            provider: None,
            request_id: None,
            pending: None,
            finished: false,
            terminated: false,
        }
    }

    /// Use these timeouts and this cap on one frame (and on a whole body); the error body's cap
    /// belongs to [`read_error_body`].
    pub fn with_limits(mut self, limits: &StreamLimits) -> Self {
        self.read = limits.read_timeout.map(Watch::new);
        self.content = limits.content_timeout.map(Watch::new);
        self.framer = Framer::new(self.framer.framing()).with_max_bytes(limits.max_line_bytes);
        self
    }

    /// The body is one JSON document, not a stream (a server that ignored the request to
    /// stream): it is buffered up to the frame cap and handed to [`Wire::whole_body`] at its end.
    pub fn whole_body(mut self) -> Self {
        self.whole = Some(Vec::new());
        self
    }

    /// Name this provider in every error that names none.
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// Attach this request id to every error that has none.
    pub fn with_request_id(mut self, request_id: Option<String>) -> Self {
        self.request_id = request_id;
        self
    }

    /// The driver as the boxed stream `create_response` returns.
    pub fn into_stream(self) -> EventStream {
        Box::pin(self)
    }

    fn tag(&self, mut error: ProviderError) -> ProviderError {
        if error.facts().provider.is_none()
            && let Some(provider) = &self.provider
        {
            error = error.with_provider(provider.clone());
        }
        if error.facts().request_id.is_none()
            && let Some(id) = &self.request_id
        {
            error = error.with_request_id(id.clone());
        }
        error
    }

    fn end(&mut self, item: Option<Result<Event, ProviderError>>) -> Poll<Option<Result<Event, ProviderError>>> {
        self.terminated = true;
        self.body = None;
        Poll::Ready(item.map(|item| item.map_err(|error| self.tag(error))))
    }

    /// Stop reading because of `error` (delivered after the queued events).
    fn fail(&mut self, error: ProviderError) {
        self.body = None;
        self.chunk = None;
        self.finished = true;
        self.pending.get_or_insert(error);
    }

    /// Take a chunk of the body: framed where it is (no copy), or into the whole body under
    /// the cap.
    fn take(&mut self, chunk: C) -> Result<(), ProviderError> {
        let Some(whole) = &mut self.whole else {
            self.chunk = Some(chunk);
            return Ok(());
        };
        let chunk = chunk.as_ref();
        let max = self.framer.max_bytes();
        if whole.len() + chunk.len() > max {
            return Err(ProviderError::protocol(format!(
                "the JSON response grew past {max} bytes (limit {})",
                Limit::LineLength
            ))
            .with_limit(Limit::LineLength));
        }
        whole.extend_from_slice(chunk);
        Ok(())
    }

    /// Translate the next frame of what was taken (`at_end`: the body ended, so the last
    /// unterminated one too). `Some` when there was a frame: the event it gave, if any.
    fn next_frame(&mut self, at_end: bool) -> Option<Option<Event>> {
        if self.whole.is_some() || self.wire.is_done() {
            return None;
        }
        let frame = if at_end {
            self.framer.end()
        } else {
            let chunk = self.chunk.as_ref()?;
            self.framer.next_frame_in(chunk.as_ref())
        };
        match frame {
            Ok(Some(frame)) => match self.wire.frame(frame) {
                Ok(event) => Some(event),
                Err(error) => {
                    self.fail(error);
                    Some(None)
                }
            },
            Ok(None) => {
                // The chunk is framed to its end (its unfinished tail kept by the framer).
                self.chunk = None;
                None
            }
            Err(error) => {
                self.fail(error);
                Some(None)
            }
        }
    }

    /// The body ended: its last frames are translated, then the wire's end (or its whole body).
    fn close(&mut self) {
        self.finished = true;
        let ended = match self.whole.take() {
            Some(body) => self.wire.whole_body(&body),
            None => self.wire.end(),
        };
        if let Err(error) = ended {
            self.pending = Some(error);
        }
    }

    fn event(&mut self, event: Event) -> Poll<Option<Result<Event, ProviderError>>> {
        if let Some(content) = &mut self.content {
            content.activity = true;
        }
        Poll::Ready(Some(Ok(event)))
    }
}

impl<W, C> Stream for Driver<W, C>
where
    W: Wire + Unpin + 'static,
    C: AsRef<[u8]> + Send + 'static,
{
    type Item = Result<Event, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // The driver is `Unpin` (see the impl above).
        let this = self.get_mut();
        loop {
            if this.terminated {
                return Poll::Ready(None);
            }
            if this.signal.is_cancelled() {
                return this.end(Some(Err(ProviderError::cancelled())));
            }
            if let Some(event) = this.wire.next_event() {
                return this.event(event);
            }
            if let Some(error) = this.pending.take() {
                return this.end(Some(Err(error)));
            }
            if !this.finished {
                match this.next_frame(this.body.is_none()) {
                    Some(Some(event)) => return this.event(event),
                    Some(None) => continue,
                    None => {}
                }
            }
            let Some(body) = this.body.as_mut() else {
                if !this.finished {
                    this.close();
                    continue;
                }
                return this.end(None);
            };
            if this.wire.is_done() {
                return this.end(None);
            }
            match body.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    if let Some(read) = &mut this.read {
                        read.activity = true;
                    }
                    if let Err(error) = this.take(chunk) {
                        this.fail(error);
                    }
                }
                Poll::Ready(Some(Err(error))) => this.fail(error),
                Poll::Ready(None) => this.body = None,
                Poll::Pending => {
                    if this.cancelled.as_mut().poll(cx).is_ready() {
                        continue;
                    }
                    if let Some(read) = &mut this.read
                        && read.expired(cx)
                    {
                        let error = timeout_error(Limit::ReadTimeout, read.limit, "reading the stream");
                        this.fail(error);
                        continue;
                    }
                    if let Some(content) = &mut this.content
                        && content.expired(cx)
                    {
                        let error = timeout_error(Limit::ContentTimeout, content.limit, "reading the stream");
                        this.fail(error);
                        continue;
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}
