//! Progress over MCP: while a `tools/call` whose `_meta` carries a `progressToken` runs, the
//! tool's [`ToolProgress`] reports become `notifications/progress` to that caller, in order and
//! before the call's answer.
//!
//! A report is queued (never awaited by the tool) and sent by a task of the call; the call's
//! answer waits until the queue is sent ([`ProgressRelay::finish`], bounded by
//! [`FLUSH_LIMIT`]), since rmcp sends the answer and a notification still in flight in no set
//! order, and a notification sent after the answer is lost (the stateless HTTP answer is
//! over). `progress` increases strictly: a tool's own count when it grows, else the number of
//! reports so far.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use patchbay_core::{tool::ProgressUpdate, tool::ToolProgress};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The most reports waiting to be sent; past it the oldest waiting one is dropped (the newest
/// says best what the tool does now).
const MAX_QUEUED: usize = 64;
/// The longest a call's answer waits for its reports to be sent.
pub(crate) const FLUSH_LIMIT: Duration = Duration::from_secs(2);

#[derive(Default)]
struct Queue {
    state: Mutex<State>,
    wake: Notify,
}

#[derive(Default)]
struct State {
    updates: VecDeque<ProgressUpdate>,
    closed: bool,
}

impl Queue {
    fn push(&self, update: ProgressUpdate) {
        {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if state.closed {
                return;
            }
            if state.updates.len() == MAX_QUEUED {
                state.updates.pop_front();
            }
            state.updates.push_back(update);
        }
        self.wake.notify_one();
    }

    fn close(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        self.wake.notify_one();
    }

    /// The next report; `None` once closed and empty.
    async fn next(&self) -> Option<ProgressUpdate> {
        loop {
            {
                let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(update) = state.updates.pop_front() {
                    return Some(update);
                }
                if state.closed {
                    return None;
                }
            }
            // `notify_one` keeps a permit when nobody waits: a push between the check and
            // here is not missed.
            self.wake.notified().await;
        }
    }
}

/// Sends one call's progress reports to its caller.
pub(crate) struct ProgressRelay {
    queue: Arc<Queue>,
    task: tokio::task::JoinHandle<()>,
}

impl ProgressRelay {
    /// A relay to `peer` under `token`, stopped by `cancelled` (the call's own token), and the
    /// reporter the tool gets.
    pub(crate) fn start(
        token: ProgressToken,
        peer: Peer<RoleServer>,
        cancelled: CancellationToken,
    ) -> (Self, ToolProgress) {
        let queue = Arc::new(Queue::default());
        let task = tokio::spawn(send_all(queue.clone(), token, peer, cancelled));
        let sink = queue.clone();
        let progress = ToolProgress::new(move |update| sink.push(update));
        (Self { queue, task }, progress)
    }

    /// Take no more reports and wait (up to [`FLUSH_LIMIT`]) until the queued ones are sent.
    pub(crate) async fn finish(self) {
        self.queue.close();
        let mut task = self.task;
        if tokio::time::timeout(FLUSH_LIMIT, &mut task).await.is_err() {
            tracing::debug!("progress notifications not sent within {FLUSH_LIMIT:?}: dropped");
            task.abort();
        }
    }
}

async fn send_all(queue: Arc<Queue>, token: ProgressToken, peer: Peer<RoleServer>, cancelled: CancellationToken) {
    let mut last = 0.0_f64;
    loop {
        let update = tokio::select! {
            update = queue.next() => update,
            () = cancelled.cancelled() => None,
        };
        let Some(update) = update else {
            return;
        };
        let progress = update.progress.filter(|p| *p > last).unwrap_or(last + 1.0);
        last = progress;
        let mut param = ProgressNotificationParam::new(token.clone(), progress);
        param.total = update.total;
        param.message = update.message;
        if let Err(error) = peer.notify_progress(param).await {
            tracing::debug!(%error, "cannot send a progress notification: the caller is gone");
            return;
        }
    }
}
