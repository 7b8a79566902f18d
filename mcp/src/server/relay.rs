//! What a running tool tells its caller over MCP: while a `tools/call` runs, the tool's
//! [`ToolProgress`] reports (when the call's `_meta` carries a `progressToken`) become
//! `notifications/progress`, and its [`ToolLog`] messages at or above the session's level
//! become `notifications/message`, in the order the tool sent them and before the call's
//! answer.
//!
//! A note is queued (never awaited by the tool) and sent by a task of the call; the call's
//! answer waits until the queue is sent ([`Relay::finish`], bounded by [`FLUSH_LIMIT`]),
//! since rmcp sends the answer and a notification still in flight in no set order, and a
//! notification sent after the answer is lost (the stateless HTTP answer is over).
//! `progress` increases strictly: a tool's own count when it grows, else one more than the
//! last one sent.

// Logging, sampling and `resources/subscribe` are deprecated by rmcp for 2026-07-28
// (SEP-2577); they are the 2025-11-25 way, which clients speak today.
#![allow(deprecated)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use patchbay_core::tool::{LogLevel, LogMessage, ProgressUpdate, ToolLog, ToolProgress};
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The most notes waiting to be sent; past it the oldest waiting one is dropped (the newest
/// says best what the tool does now).
const MAX_QUEUED: usize = 64;
/// The longest a call's answer waits for its notes to be sent.
pub(crate) const FLUSH_LIMIT: Duration = Duration::from_secs(2);

/// One thing to tell the caller.
enum Note {
    Progress(ProgressUpdate),
    Log(LogMessage),
}

#[derive(Default)]
struct Queue {
    state: Mutex<State>,
    wake: Notify,
}

#[derive(Default)]
struct State {
    notes: VecDeque<Note>,
    closed: bool,
}

impl Queue {
    fn push(&self, note: Note) {
        {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if state.closed {
                return;
            }
            if state.notes.len() == MAX_QUEUED {
                state.notes.pop_front();
            }
            state.notes.push_back(note);
        }
        self.wake.notify_one();
    }

    fn close(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        self.wake.notify_one();
    }

    /// The next note; `None` once closed and empty.
    async fn next(&self) -> Option<Note> {
        loop {
            {
                let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(note) = state.notes.pop_front() {
                    return Some(note);
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

/// The least severe level a session's client wants to hear (`logging/setLevel`); until it
/// sets one, every message goes out.
#[derive(Debug, Default)]
pub(crate) struct LevelFilter {
    level: Mutex<Option<LogLevel>>,
}

impl LevelFilter {
    pub(crate) fn set(&self, level: LoggingLevel) {
        *self.level.lock().unwrap_or_else(|p| p.into_inner()) = Some(level_from_mcp(level));
    }

    fn passes(&self, level: LogLevel) -> bool {
        self.level
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none_or(|least| level >= least)
    }
}

/// Sends one call's progress reports and log messages to its caller.
pub(crate) struct Relay {
    queue: Arc<Queue>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// A relay to `peer`, stopped by `cancelled` (the call's own token), and the reporters
    /// the tool gets: progress under `token` (inactive without one), log messages passing
    /// `filter`.
    pub(crate) fn start(
        token: Option<ProgressToken>,
        filter: Arc<LevelFilter>,
        peer: Peer<RoleServer>,
        cancelled: CancellationToken,
    ) -> (Self, ToolProgress, ToolLog) {
        let queue = Arc::new(Queue::default());
        let progress = match &token {
            Some(_) => {
                let sink = queue.clone();
                ToolProgress::new(move |update| sink.push(Note::Progress(update)))
            }
            None => ToolProgress::default(),
        };
        let sink = queue.clone();
        let log = ToolLog::new(move |message: LogMessage| {
            if filter.passes(message.level) {
                sink.push(Note::Log(message));
            }
        });
        let task = tokio::spawn(send_all(queue.clone(), token, peer, cancelled));
        (Self { queue, task }, progress, log)
    }

    /// Take no more notes and wait (up to [`FLUSH_LIMIT`]) until the queued ones are sent.
    pub(crate) async fn finish(self) {
        self.queue.close();
        let mut task = self.task;
        if tokio::time::timeout(FLUSH_LIMIT, &mut task).await.is_err() {
            tracing::debug!("notifications not sent within {FLUSH_LIMIT:?}: dropped");
            task.abort();
        }
    }
}

async fn send_all(
    queue: Arc<Queue>,
    token: Option<ProgressToken>,
    peer: Peer<RoleServer>,
    cancelled: CancellationToken,
) {
    let mut last: Option<f64> = None;
    loop {
        let note = tokio::select! {
            note = queue.next() => note,
            () = cancelled.cancelled() => None,
        };
        let sent = match note {
            None => return,
            Some(Note::Progress(update)) => {
                let Some(token) = &token else { continue };
                let progress = match (update.progress, last) {
                    (Some(p), None) => p,
                    (Some(p), Some(before)) if p > before => p,
                    (_, before) => before.unwrap_or(0.0) + 1.0,
                };
                last = Some(progress);
                let mut param = ProgressNotificationParam::new(token.clone(), progress);
                param.total = update.total;
                param.message = update.message;
                peer.notify_progress(param).await
            }
            Some(Note::Log(message)) => {
                let mut param = LoggingMessageNotificationParam::new(level_to_mcp(message.level), message.data);
                param.logger = message.logger;
                // A log message the transport refuses must not stop the progress reports.
                if let Err(error) = peer.notify_logging_message(param).await {
                    tracing::debug!(%error, "cannot send a log notification");
                }
                continue;
            }
        };
        if let Err(error) = sent {
            tracing::debug!(%error, "cannot send a notification: the caller is gone");
            return;
        }
    }
}

pub(crate) fn level_to_mcp(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

fn level_from_mcp(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}
