//! Replay logs by id, for a server that looks a run up when a client reconnects.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::error::Error;
use crate::log::{Limits, ReplayLog, Writer};

/// How many logs a [`ReplayLogs`] keeps, for how long, and each log's [`Limits`].
pub struct RegistryLimits<T> {
    max_logs: usize,
    keep_closed: Duration,
    log: Limits<T>,
}

impl<T> RegistryLimits<T> {
    /// The default number of logs kept at once: 1,024.
    pub const DEFAULT_MAX_LOGS: usize = 1024;
    /// The default time a closed log stays for late reconnects: 5 minutes.
    pub const DEFAULT_KEEP_CLOSED: Duration = Duration::from_secs(300);

    /// The defaults, and each log within [`Limits::new`].
    pub fn new() -> Self {
        Self {
            max_logs: Self::DEFAULT_MAX_LOGS,
            keep_closed: Self::DEFAULT_KEEP_CLOSED,
            log: Limits::new(),
        }
    }

    /// Keep at most `max` logs (at least 1).
    pub fn with_max_logs(mut self, max: usize) -> Self {
        self.max_logs = max.max(1);
        self
    }

    /// Keep a closed log for `keep` after its close, then drop it.
    pub fn with_keep_closed(mut self, keep: Duration) -> Self {
        self.keep_closed = keep;
        self
    }

    /// Each new log's limits.
    pub fn with_log_limits(mut self, limits: Limits<T>) -> Self {
        self.log = limits;
        self
    }

    /// The bound on logs.
    pub fn max_logs(&self) -> usize {
        self.max_logs
    }

    /// How long a closed log is kept.
    pub fn keep_closed(&self) -> Duration {
        self.keep_closed
    }

    /// Each new log's limits.
    pub fn log_limits(&self) -> Limits<T> {
        self.log
    }
}

impl<T> Default for RegistryLimits<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for RegistryLimits<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for RegistryLimits<T> {}

impl<T> fmt::Debug for RegistryLimits<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryLimits")
            .field("max_logs", &self.max_logs)
            .field("keep_closed", &self.keep_closed)
            .field("log", &self.log)
            .finish()
    }
}

/// Replay logs by id (a run's or a chat's), bounded in number, each closed log dropped a while
/// after its close; cheap to clone and share. Expired logs are swept on each call (no task,
/// no timer); a reader holding a dropped log reads it to its end.
///
/// ```
/// use futures::StreamExt;
/// use patchbay_resume::{RegistryLimits, ReplayLogs};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let logs = ReplayLogs::<String>::new(RegistryLimits::new());
/// let writer = logs.create("chat-1")?;
/// writer.append("Hel".to_owned());
/// writer.append("lo".to_owned());
/// writer.close();
///
/// // A client that saw seq 1 reconnects: it gets the rest.
/// let rest: Vec<_> = logs.get("chat-1").expect("kept").reader(1)?.collect().await;
/// assert_eq!(rest, [Ok((2, "lo".to_owned()))]);
/// # Ok::<_, patchbay_resume::Error>(()) }).unwrap();
/// ```
pub struct ReplayLogs<T> {
    logs: Arc<Mutex<HashMap<String, ReplayLog<T>>>>,
    limits: RegistryLimits<T>,
}

impl<T> Clone for ReplayLogs<T> {
    fn clone(&self) -> Self {
        Self {
            logs: Arc::clone(&self.logs),
            limits: self.limits,
        }
    }
}

impl<T> fmt::Debug for ReplayLogs<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayLogs")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Send + 'static> ReplayLogs<T> {
    /// An empty registry.
    pub fn new(limits: RegistryLimits<T>) -> Self {
        Self {
            logs: Arc::default(),
            limits,
        }
    }

    /// A new log under `id`: its writer. A closed log under the same id is replaced (a chat's
    /// next run); an open one is [`Error::Exists`]. When [`max_logs`](RegistryLimits::max_logs)
    /// are kept, the longest-closed log makes room; when none is closed, [`Error::Full`].
    pub fn create(&self, id: impl Into<String>) -> Result<Writer<T>, Error> {
        let id = id.into();
        let mut logs = self.sweep();
        if let Some(log) = logs.get(&id) {
            if !log.is_closed() {
                return Err(Error::Exists);
            }
            logs.remove(&id);
        }
        if logs.len() >= self.limits.max_logs {
            let oldest = logs
                .iter()
                .filter_map(|(id, log)| Some((log.closed_at()?, id)))
                .min()
                .map(|(_, id)| id.clone());
            let oldest = oldest.ok_or(Error::Full {
                max: self.limits.max_logs,
            })?;
            logs.remove(&oldest);
        }
        let (writer, log) = ReplayLog::new(self.limits.log);
        logs.insert(id, log);
        Ok(writer)
    }

    /// The log under `id`, unless none was created or it expired.
    pub fn get(&self, id: &str) -> Option<ReplayLog<T>> {
        self.sweep().get(id).cloned()
    }

    /// Forget the log under `id` now (its readers read on to its end).
    pub fn remove(&self, id: &str) -> Option<ReplayLog<T>> {
        self.sweep().remove(id)
    }

    /// How many logs are kept.
    pub fn len(&self) -> usize {
        self.sweep().len()
    }

    /// Whether no log is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The logs, without those closed longer than `keep_closed` ago.
    fn sweep(&self) -> MutexGuard<'_, HashMap<String, ReplayLog<T>>> {
        let mut logs = self.logs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = Instant::now();
        let keep = self.limits.keep_closed;
        logs.retain(|_, log| {
            log.closed_at()
                .is_none_or(|at| now.saturating_duration_since(at) < keep)
        });
        logs
    }
}
