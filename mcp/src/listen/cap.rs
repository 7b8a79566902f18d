//! The connection cap: which connection gets a slot when all are taken.
//!
//! Below the cap a new connection takes a permit of the semaphore (one atomic). At the cap the
//! accept loop looks through the open connections for the one waiting longest for a request:
//! first the connections still receiving their request headers (a new connection that sent
//! nothing counts), oldest first; then, only if there is none, the kept-alive connections with
//! no request in flight, longest idle first. It closes that one and hands its permit to the new
//! connection. When every connection has a request in flight, the new one is answered `503`
//! with `Retry-After` and closed.
//!
//! Each connection publishes how long it has been waiting in one atomic word (see [`Waiting`]):
//! its task writes it when its phase changes, the accept loop only reads it, and claims a
//! connection by swapping in [`Waiting::EVICTED`] with a compare-and-swap, so a connection whose
//! request headers complete at that very moment is never closed under its request (its own
//! swap to "busy" wins, or it sees that it was claimed before the request began).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::task::AtomicWaker;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// What a connection is doing, and so which limit applies.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Phase {
    /// Receiving a request's headers: the header-read timeout.
    Head,
    /// Waiting for the next request: the idle timeout.
    Idle,
    /// Serving at least one request: no limit.
    Busy,
}

/// What one connection's reader, service and answers tell its task. The reader and the
/// service run inside the connection's poll; an answer may end on another task (HTTP/2). The
/// accept loop reads `waiting` and may claim the connection (see the module docs).
pub(super) struct Activity {
    /// Requests whose answer is not written yet.
    pub(super) in_flight: AtomicUsize,
    /// Bytes arrived while nothing was in flight: a request's headers are on their way (a new
    /// connection starts so).
    pub(super) reading: AtomicBool,
    /// The connection's task is polling, and looks at the phase when done.
    pub(super) polling: AtomicBool,
    pub(super) waker: AtomicWaker,
    /// What the connection waits for and since when, for the accept loop at the cap.
    pub(super) waiting: Waiting,
    /// The slot under the cap.
    pub(super) permit: Permit,
}

impl Activity {
    /// A new connection, waiting for its first request's headers since `stamp`.
    pub(super) fn new(stamp: u64, permit: OwnedSemaphorePermit) -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            reading: AtomicBool::new(true),
            polling: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            waiting: Waiting::new(stamp),
            permit: Permit::new(permit),
        }
    }

    pub(super) fn take_permit(&self) -> Option<OwnedSemaphorePermit> {
        self.permit.take()
    }

    pub(super) fn phase(&self) -> Phase {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            Phase::Busy
        } else if self.reading.load(Ordering::SeqCst) {
            Phase::Head
        } else {
            Phase::Idle
        }
    }

    pub(super) fn bytes_read(&self) {
        if self.in_flight.load(Ordering::SeqCst) == 0 && !self.reading.load(Ordering::SeqCst) {
            self.reading.store(true, Ordering::SeqCst);
        }
    }

    pub(super) fn begin(self: &Arc<Self>) -> InFlight {
        // First, so that the accept loop cannot claim the connection under this request.
        self.waiting.set(0);
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.reading.store(false, Ordering::SeqCst);
        InFlight(self.clone())
    }
}

/// One request in flight, until its answer is written or dropped.
pub(super) struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 && !self.0.polling.load(Ordering::SeqCst) {
            self.0.waker.wake();
        }
    }
}

/// At most one warning per this period while the cap closes or turns away connections.
const CAP_WARNING_EVERY: Duration = Duration::from_secs(10);
/// How long a refused connection is kept to read what its client sends after the `503` (so
/// that closing it does not reset it under the answer).
const REFUSAL_LINGER: Duration = Duration::from_secs(1);
/// Refused connections lingering at once; further ones are closed right after the answer.
const MAX_LINGERING: usize = 64;
/// Compare-and-swap attempts of one eviction before the new connection is refused (each one
/// fails only when the chosen connection changed phase at that very moment).
const EVICTION_TRIES: usize = 4;

/// What a connection is waiting for, and since when, in one atomic word: `0` while a request
/// is in flight (never evicted), a stamp (nanoseconds since the server started, plus one)
/// while it receives a request's headers, the stamp with [`Waiting::IDLE`] set while it waits
/// for its next request, [`Waiting::EVICTED`] once the accept loop gave its slot away.
pub(super) struct Waiting(AtomicU64);

impl Waiting {
    /// Set on the stamp of an idle connection: any such word sorts after every half-open one.
    pub(super) const IDLE: u64 = 1 << 63;
    /// The slot went to a newer connection: close at once.
    pub(super) const EVICTED: u64 = u64::MAX;

    pub(super) fn new(stamp: u64) -> Self {
        Self(AtomicU64::new(stamp))
    }

    /// Whether the accept loop gave this connection's slot away.
    pub(super) fn evicted(&self) -> bool {
        self.0.load(Ordering::Acquire) == Self::EVICTED
    }

    /// Move to `word` (`0`: a request is in flight), unless evicted. The accept loop's
    /// compare-and-swap is the only other write, so a failed swap means evicted.
    pub(super) fn set(&self, word: u64) {
        let now = self.0.load(Ordering::Acquire);
        if now != word && now != Self::EVICTED {
            let _ = self.0.compare_exchange(now, word, Ordering::AcqRel, Ordering::Acquire);
        }
    }
}

/// Time stamps of [`Waiting`] words: nanoseconds since the server started, plus one.
#[derive(Clone, Copy, Debug)]
pub(super) struct Clock(Instant);

impl Clock {
    pub(super) fn new() -> Self {
        Self(Instant::now())
    }

    /// The word of a connection receiving request headers since `at`.
    pub(super) fn head(self, at: Instant) -> u64 {
        let nanos = u64::try_from(at.saturating_duration_since(self.0).as_nanos()).unwrap_or(u64::MAX);
        nanos.min(Waiting::IDLE - 2) + 1
    }

    /// The word of a connection idle since `at`.
    pub(super) fn idle(self, at: Instant) -> u64 {
        self.head(at) | Waiting::IDLE
    }
}

/// The connection slots of one server, kept by its accept loop.
pub(super) struct Seats {
    permits: Arc<Semaphore>,
    cap: usize,
    clock: Clock,
    /// Every connection served, with the ones that ended pruned now and then (only the accept
    /// loop touches it: no lock).
    open: Vec<Arc<Activity>>,
    log: CapLog,
    lingering: Arc<AtomicUsize>,
}

impl Seats {
    pub(super) fn new(cap: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(cap)),
            cap,
            clock: Clock::new(),
            open: Vec::new(),
            log: CapLog::default(),
            lingering: Arc::new(AtomicUsize::new(0)),
        }
    }

    pub(super) fn clock(&self) -> Clock {
        self.clock
    }

    /// The activity of a new connection, holding its slot, or `None` when every slot has a
    /// request in flight (then [`refuse`](Self::refuse) the connection).
    pub(super) fn admit(&mut self) -> Option<Arc<Activity>> {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => match self.evict() {
                Some(permit) => {
                    self.log.note(self.cap, Turned::Evicted);
                    permit
                }
                None => {
                    self.log.note(self.cap, Turned::Refused);
                    return None;
                }
            },
        };
        let activity = Arc::new(Activity::new(self.clock.head(Instant::now()), permit));
        if self.open.len() >= self.cap.saturating_mul(2).max(64) {
            self.open.retain(|activity| Arc::strong_count(activity) > 1);
        }
        self.open.push(activity.clone());
        Some(activity)
    }

    /// Close the connection waiting longest (half-open first, then idle) and take its permit.
    fn evict(&mut self) -> Option<OwnedSemaphorePermit> {
        for _ in 0..EVICTION_TRIES {
            let victim = self
                .open
                .iter()
                .filter(|activity| Arc::strong_count(activity) > 1)
                .filter_map(|activity| {
                    let word = activity.waiting.0.load(Ordering::Acquire);
                    (word != 0 && word != Waiting::EVICTED).then_some((word, activity))
                })
                .min_by_key(|(word, _)| *word);
            let (word, victim) = victim?;
            let claimed =
                victim
                    .waiting
                    .0
                    .compare_exchange(word, Waiting::EVICTED, Ordering::AcqRel, Ordering::Acquire);
            if claimed.is_err() {
                continue;
            }
            victim.waker.wake();
            // The victim may have ended in the meantime and given its permit back itself.
            if let Some(permit) = victim.take_permit() {
                return Some(permit);
            }
            if let Ok(permit) = self.permits.clone().try_acquire_owned() {
                return Some(permit);
            }
        }
        None
    }

    /// Answer `503` on a connection over the cap and close it (see [`refuse`]).
    pub(super) fn refuse(&self, stream: TcpStream) {
        refuse(stream, &self.lingering);
    }

    /// Wait until every connection gave its slot back, for at most `limit`.
    pub(super) async fn drained(self, limit: Duration) {
        let all = u32::try_from(self.cap).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(limit, self.permits.acquire_many(all)).await;
    }
}

/// A connection's permit while it is served (taken by the accept loop when evicted).
pub(super) struct Permit(Mutex<Option<OwnedSemaphorePermit>>);

impl Permit {
    pub(super) fn new(permit: OwnedSemaphorePermit) -> Self {
        Self(Mutex::new(Some(permit)))
    }

    fn lock(&self) -> MutexGuard<'_, Option<OwnedSemaphorePermit>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn take(&self) -> Option<OwnedSemaphorePermit> {
        self.lock().take()
    }
}

/// Gives a connection's permit back when its task ends (or panics), unless it was evicted and
/// the permit went to a newer connection already.
pub(super) struct Seat(pub(super) Arc<Activity>);

impl Drop for Seat {
    fn drop(&mut self) {
        drop(self.0.take_permit());
    }
}

/// The answer to a connection over the cap: a whole HTTP/1.1 response, so clients see why.
fn refusal() -> String {
    let body = "the server is at its connection cap (max_connections) with a request in flight on every \
                connection: retry shortly\n";
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Retry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Answer `503` on a connection over the cap without waiting for its client: a new socket's
/// send buffer is empty, so the short answer goes out whole with one non-blocking write. Then
/// the write side is shut and what the client sends is read and dropped for at most
/// [`REFUSAL_LINGER`] (closing with unread bytes would reset the connection, and a reset can
/// overtake the answer), in a task of its own, for at most [`MAX_LINGERING`] connections.
fn refuse(stream: TcpStream, lingering: &Arc<AtomicUsize>) {
    let answer = refusal();
    match stream.try_write(answer.as_bytes()) {
        Ok(n) if n == answer.len() => {}
        Ok(_) => return tracing::debug!("MCP tool server: the 503 answer did not fit the socket's buffer"),
        Err(error) => return tracing::debug!("MCP tool server: cannot write the 503 answer: {error}"),
    }
    if lingering.fetch_add(1, Ordering::AcqRel) >= MAX_LINGERING {
        lingering.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    let lingering = lingering.clone();
    tokio::spawn(async move {
        let _ = tokio::time::timeout(REFUSAL_LINGER, linger(stream)).await;
        lingering.fetch_sub(1, Ordering::AcqRel);
    });
}

/// Shut the write side, then read until the client closes.
async fn linger(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
    let mut sink = [0u8; 1024];
    while let Ok(1..) = stream.read(&mut sink).await {}
}

/// What the cap did to a connection.
#[derive(Clone, Copy)]
enum Turned {
    /// Closed a waiting connection to make room for a new one.
    Evicted,
    /// Answered a new connection `503`.
    Refused,
}

/// Connections closed or turned away at the cap, counted between (rate-limited) warnings.
#[derive(Default)]
struct CapLog {
    evicted: u64,
    refused: u64,
    warned: Option<Instant>,
}

impl CapLog {
    /// Say what the cap did (a warning at most every 10 s, debug lines between).
    fn note(&mut self, cap: usize, turned: Turned) {
        match turned {
            Turned::Evicted => self.evicted += 1,
            Turned::Refused => self.refused += 1,
        }
        if self.warned.is_some_and(|at| at.elapsed() < CAP_WARNING_EVERY) {
            match turned {
                Turned::Evicted => tracing::debug!(
                    "MCP tool server: connection cap of {cap} reached: closing the connection waiting longest"
                ),
                Turned::Refused => {
                    tracing::debug!("MCP tool server: connection cap of {cap} reached: answering 503")
                }
            }
            return;
        }
        tracing::warn!(
            "MCP tool server: connection cap of {cap} (max_connections) reached: since the last warning, closed {} \
             connection(s) waiting for request headers or idle to make room, and answered {} new connection(s) \
             503 (every connection busy)",
            self.evicted,
            self.refused
        );
        self.evicted = 0;
        self.refused = 0;
        self.warned = Some(Instant::now());
    }
}
