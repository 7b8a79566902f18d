//! Kept-alive CLI processes: after a turn, a process waits (stdin open) for the next turn of
//! the same session, so `Resume` skips the CLI start. Off unless `keep_alive` is set.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::launch::Fingerprint;
use crate::process::CliProcess;

/// A parked process and what must live as long as it does.
pub(crate) struct Parked {
    pub(crate) process: CliProcess,
    pub(crate) keep: Box<dyn std::any::Any + Send>,
    pub(crate) fingerprint: Fingerprint,
    generation: u64,
}

/// Idle processes by session id. Dropping the pool stops them all (in the background).
#[derive(Default)]
pub(crate) struct Pool {
    parked: Mutex<HashMap<String, Parked>>,
    generation: Mutex<u64>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.parked.lock().map(|p| p.len()).unwrap_or(0);
        write!(f, "Pool({n} parked)")
    }
}

impl Pool {
    /// Park a process for `session`, stopping it after `idle` unless taken before.
    pub(crate) fn park(
        self: &Arc<Self>,
        session: String,
        process: CliProcess,
        keep: Box<dyn std::any::Any + Send>,
        fingerprint: Fingerprint,
        idle: Duration,
    ) {
        let generation = {
            let Ok(mut counter) = self.generation.lock() else {
                return;
            };
            *counter += 1;
            *counter
        };
        let parked = Parked {
            process,
            keep,
            fingerprint,
            generation,
        };
        let replaced = self
            .parked
            .lock()
            .ok()
            .and_then(|mut map| map.insert(session.clone(), parked));
        drop(replaced);
        let pool: Weak<Self> = Arc::downgrade(self);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                tokio::time::sleep(idle).await;
                if let Some(pool) = pool.upgrade() {
                    let stale = pool.parked.lock().ok().and_then(|mut map| {
                        let same = map.get(&session).is_some_and(|p| p.generation == generation);
                        if same { map.remove(&session) } else { None }
                    });
                    if let Some(mut parked) = stale {
                        parked.process.stop().await;
                    }
                }
            });
        }
    }

    /// Take the idle process of `session` if it was started the same way and still runs.
    pub(crate) fn take(&self, session: &str, fingerprint: Fingerprint) -> Option<Parked> {
        let mut map = self.parked.lock().ok()?;
        if map.get(session).is_none_or(|p| p.fingerprint != fingerprint) {
            return None;
        }
        let mut parked = map.remove(session)?;
        drop(map);
        if parked.process.has_exited() {
            return None;
        }
        Some(parked)
    }

    /// Number of parked processes.
    pub(crate) fn len(&self) -> usize {
        self.parked.lock().map(|p| p.len()).unwrap_or(0)
    }
}
