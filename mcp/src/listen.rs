//! The tool server's accept loop: hyper-util's HTTP/1 and HTTP/2 server behind a connection
//! cap, a header-read timeout and an idle timeout, with a bounded graceful shutdown.
//!
//! The two timeouts follow Go's `net/http` server: a connection waits for a request's headers
//! for at most the header-read timeout (from the accept for a new connection, from the first
//! byte of the next request on a kept-alive one), and waits for the next request with nothing
//! in flight for at most the idle timeout. A request is in flight from its complete headers
//! until its answer has been written (or dropped), so a slow tool or a long answer stream is
//! never cut by either limit. hyper's own HTTP/1 `header_read_timeout` is switched off: it
//! starts as soon as hyper waits for the next request, so it would close every idle HTTP/1
//! connection at the header-read limit, and it does not cover the bytes hyper-util reads to
//! tell HTTP/1 from HTTP/2 (a client that sends nothing at all).
//!
//! At the connection cap a new connection is never reset (see [`cap`]): it takes the slot of
//! the connection waiting longest for its request headers (a new connection that sent nothing
//! included), which is closed; when no connection is receiving headers, of the one idle
//! longest between requests; and only when every connection has a request in flight is it
//! answered `503 Service Unavailable` with `Retry-After: 1` and `Connection: close`, then
//! closed. So half-open connections, which any local process can open without a token, cannot
//! keep requests out, and only requests in flight (long streams among them) fill the cap for
//! good; a service serving long-lived streams bounds them itself (the orchestrator's event
//! streams have a budget per credential). The common case costs an atomic or two: a permit
//! below the cap, and one atomic word per connection that its task updates when its phase
//! changes, which the accept loop scans only at the cap.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use self::cap::{Activity, Clock, InFlight, Phase, Seat, Seats};

mod cap;

/// How long a request's headers may take to arrive: from the accept on a new connection, from
/// the request's first byte on a kept-alive one. Ten seconds: a local client sends its headers
/// in well under a millisecond, so this only ever trips on a stalled or hostile client, and it
/// frees the slot of such a client quickly.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a kept-alive connection may wait for its next request with nothing in flight.
/// Sixty seconds: longer than the idle limits of common HTTP clients (Node's 4 s, httpx's 5 s),
/// so a pooled client closes first and never races the server's close, and short enough that
/// abandoned connections give their slot back within a minute.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How many connections are served at once. At the cap a new connection takes the slot of
/// the one waiting longest for its request headers (else of the one idle longest), or is
/// answered `503` with `Retry-After` when every connection has a request in flight.
/// 512: far above what local MCP clients open (our client set opens one per call in flight),
/// and far below the usual descriptor limit of 1024, so a flood of connections leaves the
/// process descriptors for its own files, pipes and child processes.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// How long [`ToolServer::shutdown`](crate::ToolServer::shutdown) waits for open connections
/// before dropping them.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Backoff after an `accept` error such as EMFILE (doubling from the first to the last).
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(1));

/// The connection limits of one tool server.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) header_read: Duration,
    pub(crate) idle: Duration,
    pub(crate) max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read: DEFAULT_HEADER_READ_TIMEOUT,
            idle: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Serve `app` on `listener` until `stop`, then wait (up to the grace) for open connections.
pub(crate) async fn serve(listener: TcpListener, app: axum::Router, limits: Limits, stop: CancellationToken) {
    let mut seats = Seats::new(limits.max_connections);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().header_read_timeout(None::<Duration>);
    let builder = Arc::new(builder);
    let app = TowerToHyperService::new(app);
    let mut backoff = None;
    loop {
        let accepted = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                backoff = None;
                stream
            }
            Err(error) => {
                if let Some(delay) = accept_failed(&error, &mut backoff) {
                    tokio::select! {
                        () = stop.cancelled() => break,
                        () = tokio::time::sleep(delay) => {}
                    }
                }
                continue;
            }
        };
        match seats.admit() {
            Some(activity) => {
                let connection = Connection {
                    builder: builder.clone(),
                    app: app.clone(),
                    limits,
                    clock: seats.clock(),
                    stop: stop.clone(),
                    seat: Seat(activity),
                };
                tokio::spawn(connection.run(stream));
            }
            None => seats.refuse(stream),
        }
    }
    drop(listener);
    // Every connection holds a permit until it ends: all permits back means all ended. Each
    // connection bounds its own graceful end by the grace; this bound is a second line.
    seats.drained(SHUTDOWN_GRACE + Duration::from_secs(1)).await;
}

/// What to wait before the next `accept` after `error`, if anything. Errors of one connection
/// (reset before it was accepted) need no wait; the others (EMFILE, ENFILE, ENOBUFS) would
/// fail again at once, so back off instead of spinning.
fn accept_failed(error: &io::Error, backoff: &mut Option<Duration>) -> Option<Duration> {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(error.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
        tracing::debug!("MCP tool server: a connection failed before it was accepted: {error}");
        return None;
    }
    let (first, last) = ACCEPT_BACKOFF;
    let delay = backoff.map_or(first, |delay| (delay * 2).min(last));
    *backoff = Some(delay);
    tracing::warn!("MCP tool server cannot accept connections ({error}): retrying in {delay:?}");
    Some(delay)
}

type App = TowerToHyperService<axum::Router>;

/// One accepted connection, holding its slot under the cap until it ends.
struct Connection {
    builder: Arc<auto::Builder<TokioExecutor>>,
    app: App,
    limits: Limits,
    clock: Clock,
    stop: CancellationToken,
    /// The connection's slot under the cap, given back when it ends.
    seat: Seat,
}

impl Connection {
    async fn run(self, stream: TcpStream) {
        let activity = self.seat.0.clone();
        let io = TokioIo::new(Watched::new(stream, activity.clone()));
        let service = Tracked {
            app: self.app.clone(),
            activity: activity.clone(),
        };
        let conn = self.builder.serve_connection(io, service);
        tokio::pin!(conn);
        let stop = self.stop.cancelled();
        tokio::pin!(stop);
        let limits = self.limits;
        let clock = self.clock;
        let deadline = tokio::time::sleep(limits.header_read);
        tokio::pin!(deadline);
        let mut phase = Phase::Head;
        let mut stopping = false;
        // One hand-written poll instead of a `select!` loop: the phase changes happen inside
        // `conn`'s own poll (HTTP/1) and are read right after it, so a request costs no extra
        // wake-up or second poll of the connection.
        let tripped_in = std::future::poll_fn(|cx| {
            loop {
                activity.polling.store(true, Ordering::SeqCst);
                if activity.waiting.evicted() {
                    return Poll::Ready(Some(Closed::Evicted));
                }
                if let Poll::Ready(ended) = conn.as_mut().poll(cx) {
                    if let Err(error) = ended {
                        tracing::debug!("MCP tool server connection ended: {error}");
                    }
                    return Poll::Ready(None);
                }
                if !stopping && stop.as_mut().poll(cx).is_ready() {
                    // hyper closes an idle connection at once and a busy one after its answer.
                    stopping = true;
                    conn.as_mut().graceful_shutdown();
                    deadline.as_mut().reset((Instant::now() + SHUTDOWN_GRACE).into());
                    continue;
                }
                let now = activity.phase();
                if !stopping && now != phase {
                    phase = now;
                    // Busy was published by the request itself (see `Activity::begin`).
                    if phase != Phase::Busy {
                        let at = Instant::now();
                        let (limit, word) = match phase {
                            Phase::Head => (limits.header_read, clock.head(at)),
                            _ => (limits.idle, clock.idle(at)),
                        };
                        activity.waiting.set(word);
                        deadline.as_mut().reset((at + limit).into());
                    }
                }
                if (stopping || phase != Phase::Busy) && deadline.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Closed::Tripped { phase, stopping }));
                }
                // An answer ending on another task (HTTP/2) wakes this one, unless it ended
                // while this poll was running: look once more after saying we are done.
                activity.waker.register(cx.waker());
                activity.polling.store(false, Ordering::SeqCst);
                // Likewise for an eviction by the accept loop.
                if (stopping || activity.phase() == phase) && !activity.waiting.evicted() {
                    return Poll::Pending;
                }
            }
        });
        match tripped_in.await {
            Some(Closed::Tripped { phase, stopping }) => tripped(phase, stopping, &limits),
            Some(Closed::Evicted) => tracing::debug!(
                "MCP tool server: connection cap of {} (max_connections) reached: closing this connection, the one \
                 waiting longest, to make room for a new one",
                limits.max_connections
            ),
            None => {}
        }
    }
}

/// Why a connection was closed by the server rather than by its client or hyper.
enum Closed {
    /// A limit: the header-read or idle timeout, or the shutdown grace.
    Tripped { phase: Phase, stopping: bool },
    /// The accept loop gave its slot to a newer connection (see [`cap`]).
    Evicted,
}

/// Say which limit closed a connection.
fn tripped(phase: Phase, stopping: bool, limits: &Limits) {
    if stopping {
        tracing::debug!("MCP tool server: shutdown grace of {SHUTDOWN_GRACE:?} over: closing a connection");
    } else if phase == Phase::Head {
        tracing::debug!(
            "MCP tool server: header-read timeout of {:?} (header_read_timeout) reached: closing a connection \
             whose request headers did not arrive in time",
            limits.header_read
        );
    } else {
        tracing::debug!(
            "MCP tool server: idle timeout of {:?} (idle_timeout) reached: closing a connection with no request",
            limits.idle
        );
    }
}

/// The connection's socket, noting when bytes arrive.
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
    protocol: Protocol,
}

/// What the first bytes of a connection say it speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// This many bytes of the HTTP/2 preface matched so far.
    Unknown(usize),
    Http1,
    /// Frames between requests (acks, window updates, pings) are no request's headers: only
    /// the idle timeout applies between requests.
    Http2,
}

/// What an HTTP/2 client sends first (prior knowledge: the server speaks cleartext only).
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

impl Watched {
    fn new(stream: TcpStream, activity: Arc<Activity>) -> Self {
        Self {
            stream,
            activity,
            protocol: Protocol::Unknown(0),
        }
    }

    fn note(&mut self, bytes: &[u8]) {
        if let Protocol::Unknown(matched) = self.protocol {
            let wanted = &HTTP2_PREFACE[matched..];
            let n = bytes.len().min(wanted.len());
            self.protocol = if bytes[..n] != wanted[..n] {
                Protocol::Http1
            } else if n == wanted.len() {
                Protocol::Http2
            } else {
                Protocol::Unknown(matched + n)
            };
        }
        if self.protocol != Protocol::Http2 {
            self.activity.bytes_read();
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.note(&buf.filled()[before..]);
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// The app, marking each request in flight until its answer is done.
#[derive(Clone)]
struct Tracked {
    app: App,
    activity: Arc<Activity>,
}

impl Service<hyper::Request<Incoming>> for Tracked {
    type Response = hyper::Response<Answer>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        let in_flight = self.activity.begin();
        let answer = self.app.call(request.map(axum::body::Body::new));
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(|body| Answer {
                body,
                _in_flight: in_flight,
            }))
        })
    }
}

/// An answer's body, keeping its request in flight until it is written or dropped.
struct Answer {
    body: axum::body::Body,
    _in_flight: InFlight,
}

impl Body for Answer {
    type Data = hyper::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
