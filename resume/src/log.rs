//! The in-memory replay log: one writer appends a run's items, any number of readers replay
//! from a seq and follow it live.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use futures::stream::{BoxStream, Stream, StreamExt};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::Error;
use crate::tail::{Batch, Source, Tailed, tail};

/// How many items a reader copies out per look, so the writer never waits long for the lock.
const BATCH: usize = 256;

/// How much a [`ReplayLog`] keeps. Past either bound the oldest items are dropped (the newest
/// is always kept), and a reader that still needed one gets [`Error::Trimmed`].
pub struct Limits<T> {
    max_items: usize,
    max_bytes: usize,
    weigh: fn(&T) -> usize,
}

impl<T> Limits<T> {
    /// The default bound on items: 10,000.
    pub const DEFAULT_MAX_ITEMS: usize = 10_000;

    /// [`Self::DEFAULT_MAX_ITEMS`] items, no bound on bytes.
    pub fn new() -> Self {
        Self {
            max_items: Self::DEFAULT_MAX_ITEMS,
            max_bytes: usize::MAX,
            weigh: |_| 0,
        }
    }

    /// Keep at most `max` items (at least 1).
    pub fn with_max_items(mut self, max: usize) -> Self {
        self.max_items = max.max(1);
        self
    }

    /// Keep at most `max` bytes, an item weighing what `weigh` says (`|b: &Bytes| b.len()`).
    pub fn with_max_bytes(mut self, max: usize, weigh: fn(&T) -> usize) -> Self {
        self.max_bytes = max;
        self.weigh = weigh;
        self
    }

    /// The bound on items.
    pub fn max_items(&self) -> usize {
        self.max_items
    }

    /// The bound on bytes (`usize::MAX`: none).
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }
}

impl<T> Default for Limits<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for Limits<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Limits<T> {}

impl<T> fmt::Debug for Limits<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limits")
            .field("max_items", &self.max_items)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

/// The log's items and bounds, behind its lock.
struct State<T> {
    /// Kept items with their weights; their seqs run from `dropped + 1` to `last`.
    items: VecDeque<(u64, T, usize)>,
    /// The last seq given (0: none yet).
    last: u64,
    /// The last seq dropped (0: none).
    dropped: u64,
    bytes: usize,
    /// When the writer closed the log.
    closed_at: Option<Instant>,
}

/// What writer and readers share.
struct Shared<T> {
    state: Mutex<State<T>>,
    /// Bumped after each append and at close: what readers wait on.
    changes: watch::Sender<u64>,
    limits: Limits<T>,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic while holding the lock leaves the items consistent (each change is one push
        // or pop): carry on.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn close(&self) {
        let mut state = self.lock();
        if state.closed_at.is_none() {
            state.closed_at = Some(Instant::now());
            drop(state);
            self.changes.send_modify(|version| *version = version.wrapping_add(1));
        }
    }
}

/// A run's items in memory, for any number of readers: read handles are cheap to clone, the
/// one [`Writer`] appends. See the [crate docs](crate) for the protocol.
pub struct ReplayLog<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for ReplayLog<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> fmt::Debug for ReplayLog<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("ReplayLog")
            .field("last", &state.last)
            .field("dropped", &state.dropped)
            .field("closed", &state.closed_at.is_some())
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Send + 'static> ReplayLog<T> {
    /// An empty log within `limits`: its writer and a read handle.
    pub fn new(limits: Limits<T>) -> (Writer<T>, Self) {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                items: VecDeque::new(),
                last: 0,
                dropped: 0,
                bytes: 0,
                closed_at: None,
            }),
            changes: watch::Sender::new(0),
            limits,
        });
        let log = Self {
            shared: Arc::clone(&shared),
        };
        (Writer { shared }, log)
    }

    /// The items after `after` (0: from the first), then each new one, ending when the writer
    /// closes the log. [`Error::Trimmed`] when items after `after` were already dropped,
    /// [`Error::Ahead`] when `after` is past the last seq given; a reader that falls so far
    /// behind that its next item is dropped ends with [`Error::Trimmed`].
    pub fn reader(&self, after: u64) -> Result<Reader<T>, Error> {
        {
            let state = self.shared.lock();
            if after < state.dropped {
                return Err(Error::Trimmed {
                    after,
                    dropped: state.dropped,
                });
            }
            if after > state.last {
                return Err(Error::Ahead {
                    after,
                    last: state.last,
                });
            }
        }
        let source = LogSource {
            shared: Arc::clone(&self.shared),
            changes: self.shared.changes.subscribe(),
        };
        let items = tail(source, after).filter_map(|next| {
            futures::future::ready(match next {
                Tailed::Item(seq, item) => Some(Ok((seq, item))),
                Tailed::End(LogEnd::Closed) => None,
                Tailed::End(LogEnd::Trimmed(error)) => Some(Err(error)),
            })
        });
        Ok(Reader { items: items.boxed() })
    }
}

impl<T> ReplayLog<T> {
    /// The last seq given (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.shared.lock().last
    }

    /// Whether the writer closed the log (or was dropped).
    pub fn is_closed(&self) -> bool {
        self.shared.lock().closed_at.is_some()
    }

    /// When the log was closed.
    pub(crate) fn closed_at(&self) -> Option<Instant> {
        self.shared.lock().closed_at
    }
}

/// The one writer of a [`ReplayLog`]: appends never wait on readers. Dropping it closes the
/// log, so readers of a run whose task failed are not left waiting.
pub struct Writer<T> {
    shared: Arc<Shared<T>>,
}

impl<T> fmt::Debug for Writer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer").finish_non_exhaustive()
    }
}

impl<T> Writer<T> {
    /// Append `item`: its seq (the first is 1). Drops the oldest items past the log's limits.
    pub fn append(&self, item: T) -> u64 {
        let limits = &self.shared.limits;
        let weight = (limits.weigh)(&item);
        let seq = {
            let mut state = self.shared.lock();
            state.last += 1;
            let seq = state.last;
            state.items.push_back((seq, item, weight));
            state.bytes = state.bytes.saturating_add(weight);
            while state.items.len() > 1 && (state.items.len() > limits.max_items || state.bytes > limits.max_bytes) {
                if let Some((dropped, _, weight)) = state.items.pop_front() {
                    state.dropped = dropped;
                    state.bytes -= weight;
                }
            }
            seq
        };
        self.shared
            .changes
            .send_modify(|version| *version = version.wrapping_add(1));
        seq
    }

    /// Close the log: readers get what is left, then their streams end.
    pub fn close(self) {
        // Drop closes.
    }

    /// A read handle on this writer's log.
    pub fn log(&self) -> ReplayLog<T> {
        ReplayLog {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> Drop for Writer<T> {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// Why a log's tail ended.
enum LogEnd {
    Closed,
    Trimmed(Error),
}

/// A reader's view of the log, for [`tail`].
struct LogSource<T> {
    shared: Arc<Shared<T>>,
    changes: watch::Receiver<u64>,
}

impl<T: Clone + Send> Source for LogSource<T> {
    type Item = T;
    type End = LogEnd;

    async fn read(&mut self, after: u64) -> Batch<T, LogEnd> {
        // Seen before looking: an append after this wakes `wait`.
        self.changes.borrow_and_update();
        let state = self.shared.lock();
        if after < state.dropped {
            return Batch::end(LogEnd::Trimmed(Error::Trimmed {
                after,
                dropped: state.dropped,
            }));
        }
        // Kept seqs are consecutive from `dropped + 1`.
        let start = usize::try_from(after - state.dropped)
            .unwrap_or(usize::MAX)
            .min(state.items.len());
        let items: Vec<(u64, T)> = state
            .items
            .range(start..)
            .take(BATCH)
            .map(|(seq, item, _)| (*seq, item.clone()))
            .collect();
        let end = state.closed_at.map(|_| LogEnd::Closed);
        Batch { items, end }
    }

    async fn wait(&mut self) {
        // The sender lives as long as `shared`, which this reader holds.
        let _ = self.changes.changed().await;
    }
}

/// A reader of a [`ReplayLog`]: `(seq, item)` from the seq asked for, live until the log is
/// closed; an `Err` ([`Error::Trimmed`]) is its last item. Dropping it frees its place.
pub struct Reader<T> {
    items: BoxStream<'static, Result<(u64, T), Error>>,
}

impl<T> fmt::Debug for Reader<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader").finish_non_exhaustive()
    }
}

impl<T> Stream for Reader<T> {
    type Item = Result<(u64, T), Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.items.poll_next_unpin(cx)
    }
}
