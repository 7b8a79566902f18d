//! Runs paused for a person's approval, by session id: each keeps its CLI waiting on the
//! unanswered permission until a later call brings the decision or `approval_timeout` runs
//! out (then it is stopped). Dropping the registry stops them all (in the background).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How an expired entry is ended.
pub(crate) type Expire<T> = fn(T) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// Paused runs by session id.
pub(crate) struct Waiting<T> {
    runs: Mutex<HashMap<String, (u64, T)>>,
    generation: Mutex<u64>,
}

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Self {
            runs: Mutex::new(HashMap::new()),
            generation: Mutex::new(0),
        }
    }
}

impl<T> std::fmt::Debug for Waiting<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Waiting({} paused)", self.len())
    }
}

impl<T: Send + 'static> Waiting<T> {
    /// Keep `run` for `session` for `timeout`, then end it with `expire` unless taken before.
    /// A run already waiting for the session is replaced (and dropped, which stops it).
    pub(crate) fn put(self: &Arc<Self>, session: String, run: T, timeout: Duration, expire: Expire<T>) {
        let generation = {
            let mut counter = self
                .generation
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *counter += 1;
            *counter
        };
        let replaced = self
            .runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(session.clone(), (generation, run));
        drop(replaced);
        let waiting: Weak<Self> = Arc::downgrade(self);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                tokio::time::sleep(timeout).await;
                let Some(waiting) = waiting.upgrade() else {
                    return;
                };
                let expired = {
                    let mut runs = waiting.runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let same = runs.get(&session).is_some_and(|(g, _)| *g == generation);
                    if same { runs.remove(&session) } else { None }
                };
                drop(waiting);
                if let Some((_, run)) = expired {
                    tracing::warn!(
                        session,
                        ?timeout,
                        "no decision came for the paused run; stopping its CLI"
                    );
                    expire(run).await;
                }
            });
        }
    }

    /// Take the run waiting for `session`, if any.
    pub(crate) fn take(&self, session: &str) -> Option<T> {
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(session)
            .map(|(_, run)| run)
    }
}

impl<T> Waiting<T> {
    /// How many runs wait.
    pub(crate) fn len(&self) -> usize {
        self.runs.lock().map(|runs| runs.len()).unwrap_or(0)
    }
}
