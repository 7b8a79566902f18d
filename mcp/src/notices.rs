//! What the servers of one connection set tell the host while it runs: their
//! `notifications/message` log messages and patchbay's own reconnection notices, as transient
//! [`Event::Log`]s in one bounded queue.

use std::collections::VecDeque;
use std::sync::Mutex;

use patchbay_core::Event;
use serde_json::Value;
use tokio::sync::Notify;

/// The most events waiting; past it the oldest is dropped (and counted).
const MAX_WAITING: usize = 256;

/// The `logger` of the notices patchbay itself sends (a server stopped, restarted...).
pub const NOTICE_LOGGER: &str = "patchbay.mcp";

/// A bounded queue of events for the host, shared by every server of a connection set.
#[derive(Default)]
pub(crate) struct Notices {
    events: Mutex<VecDeque<Event>>,
    ready: Notify,
}

impl Notices {
    /// Queue `event` and wake a waiter.
    pub(crate) fn push(&self, event: Event) {
        {
            let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
            if events.len() == MAX_WAITING {
                events.pop_front();
            }
            events.push_back(event);
        }
        // `notify_one` keeps a permit when nobody waits, so a push before the wait is not missed.
        self.ready.notify_one();
    }

    /// A server's log message.
    pub(crate) fn log(&self, server: &str, level: String, logger: Option<String>, data: Value) {
        self.push(Event::Log {
            source: server.to_owned(),
            level,
            logger,
            data,
        });
    }

    /// patchbay's own notice about `server` (`warning` or `info`), also traced.
    pub(crate) fn notice(&self, server: &str, level: &str, message: String) {
        match level {
            "warning" | "error" => tracing::warn!(server = %server, "{message}"),
            _ => tracing::info!(server = %server, "{message}"),
        }
        self.log(
            server,
            level.to_owned(),
            Some(NOTICE_LOGGER.to_owned()),
            Value::String(message),
        );
    }

    /// Wake a waiter without queueing anything (the tool list changed).
    pub(crate) fn wake(&self) {
        self.ready.notify_one();
    }

    /// Everything queued, oldest first.
    pub(crate) fn take(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect()
    }

    /// Resolves when something may be queued.
    pub(crate) async fn ready(&self) {
        if !self.events.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
            return;
        }
        self.ready.notified().await;
    }
}
