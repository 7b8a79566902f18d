//! Wake-ups instead of polling: a sync caller, a `wait_seconds` status call or a worker waits on
//! a session's change counter and is woken the moment the session changes.
//!
//! Every session name has a counter that [`Notifier::notify`] bumps (a run started, an event was
//! stored, a job ended). A waiter remembers the counter it saw ([`Notifier::version`]) and
//! [`Notifier::changed`] returns as soon as the counter moves past it, or when its deadline
//! passes. A change that happened between reading the version and waiting is never missed.
//! Counters of sessions nobody watches are dropped by [`Notifier::forget`].
//!
//! ```
//! use std::time::Duration;
//! use patchbay_orchestrator::notify::Notifier;
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let notifier = Notifier::new();
//! let seen = notifier.version("child");
//! notifier.notify("child");
//! assert!(notifier.changed("child", seen, Duration::from_secs(1)).await);
//! # });
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

/// Per-session change counters with async waiting; cheap to clone and share.
#[derive(Clone, Debug, Default)]
pub struct Notifier {
    sessions: Arc<Mutex<HashMap<String, watch::Sender<u64>>>>,
}

impl Notifier {
    /// An empty notifier.
    pub fn new() -> Self {
        Self::default()
    }

    fn sender(&self, session: &str) -> watch::Sender<u64> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        sessions
            .entry(session.to_owned())
            .or_insert_with(|| watch::Sender::new(0))
            .clone()
    }

    /// The session's change counter now (0 for a session never notified).
    pub fn version(&self, session: &str) -> u64 {
        *self.sender(session).borrow()
    }

    /// Record a change of the session and wake everyone waiting on it. A session nobody has
    /// asked about gets no counter (no one can be waiting on it), so notifications about other
    /// processes' sessions cost no memory.
    pub fn notify(&self, session: &str) {
        let sessions = self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(sender) = sessions.get(session) {
            sender.send_modify(|version| *version = version.wrapping_add(1));
        }
    }

    /// Record a change of every session (after notifications may have been lost).
    pub fn notify_all(&self) {
        let sessions = self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for sender in sessions.values() {
            sender.send_modify(|version| *version = version.wrapping_add(1));
        }
    }

    /// Wait until the session's counter differs from `seen` (`true`), or until `limit` passes
    /// (`false`). Returns at once when it already differs.
    pub async fn changed(&self, session: &str, seen: u64, limit: Duration) -> bool {
        let mut receiver = self.sender(session).subscribe();
        let moved = receiver.wait_for(|version| *version != seen);
        matches!(tokio::time::timeout(limit, moved).await, Ok(Ok(_)))
    }

    /// Drop the counter of a session nobody waits on (after it was deleted). A later
    /// [`version`](Self::version) starts again from 0, so forget only sessions that are gone.
    pub fn forget(&self, session: &str) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if sessions.get(session).is_some_and(|sender| sender.receiver_count() == 0) {
            sessions.remove(session);
        }
    }

    /// How many sessions have a counter (for tests and metrics).
    pub fn len(&self) -> usize {
        self.sessions.lock().map(|sessions| sessions.len()).unwrap_or_default()
    }

    /// Whether no session has a counter.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
