//! The replay-then-follow loop over any numbered source: what is stored after a seq, then what
//! comes, then an end.

use std::collections::VecDeque;
use std::future::Future;

use futures::Stream;

/// Where a [`tail`] reads from: items numbered by seq (from 1, rising), a way to wait for more,
/// and an end. The in-memory [`ReplayLog`](crate::ReplayLog) is one; a store with change
/// notifications is another.
pub trait Source: Send {
    /// What one numbered item is.
    type Item: Send;
    /// Why the stream ended (what a server's last message says).
    type End: Send;

    /// Items after `after`, oldest first (any number: the tail asks again before it waits),
    /// and the end when none will come after them. Note what `wait` needs to compare against
    /// before looking, so that a change while looking is not missed.
    fn read(&mut self, after: u64) -> impl Future<Output = Batch<Self::Item, Self::End>> + Send;

    /// Return once something may have changed since the last `read` began (early is
    /// harmless: the tail reads again).
    fn wait(&mut self) -> impl Future<Output = ()> + Send;
}

/// What one [`Source::read`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch<T, E> {
    /// `(seq, item)` after the seq asked for, oldest first.
    pub items: Vec<(u64, T)>,
    /// Set when nothing will come after `items`: the tail sends them, then this end.
    pub end: Option<E>,
}

impl<T, E> Batch<T, E> {
    /// Items, more may come.
    pub fn items(items: Vec<(u64, T)>) -> Self {
        Self { items, end: None }
    }

    /// Nothing now, more may come: the tail waits.
    pub fn empty() -> Self {
        Self::items(Vec::new())
    }

    /// Nothing will come: the tail ends with `end`.
    pub fn end(end: E) -> Self {
        Self {
            items: Vec::new(),
            end: Some(end),
        }
    }
}

/// One thing a [`tail`] yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tailed<T, E> {
    /// An item and its seq (the message's `id`).
    Item(u64, T),
    /// The last thing the tail yields.
    End(E),
}

/// `source`'s items after `after`, then each new one as it comes, then its end: each item
/// once, in seq order, with no seq at or below one already yielded (a source that repeats
/// itself is not passed on). The stream waits on [`Source::wait`], never on a timer.
pub fn tail<S>(source: S, after: u64) -> impl Stream<Item = Tailed<S::Item, S::End>> + Send
where
    S: Source,
{
    let state = Tail {
        source,
        after,
        pending: VecDeque::new(),
        done: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        let next = state.next().await?;
        Some((next, state))
    })
}

/// The state of one tail between items.
struct Tail<S: Source> {
    source: S,
    /// The last seq yielded.
    after: u64,
    pending: VecDeque<(u64, S::Item)>,
    done: bool,
}

impl<S: Source> Tail<S> {
    async fn next(&mut self) -> Option<Tailed<S::Item, S::End>> {
        loop {
            while let Some((seq, item)) = self.pending.pop_front() {
                if seq > self.after {
                    self.after = seq;
                    return Some(Tailed::Item(seq, item));
                }
            }
            if self.done {
                return None;
            }
            let batch = self.source.read(self.after).await;
            if batch.items.iter().any(|(seq, _)| *seq > self.after) {
                self.pending = batch.items.into();
                continue;
            }
            if let Some(end) = batch.end {
                self.done = true;
                return Some(Tailed::End(end));
            }
            self.source.wait().await;
        }
    }
}
