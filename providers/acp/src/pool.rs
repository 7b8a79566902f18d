//! A started agent (process and connection), and the keep-alive pool: a finished turn's agent
//! waits `keep_alive` for its session's next turn, keyed by session id and launch fingerprint
//! (a call started differently gets a new agent). An agent that waits longer is stopped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::connection::Connection;
use crate::error::Error;
use crate::process::AgentProcess;

/// A running agent and its connection; dropping it ends both (the process group is killed).
#[derive(Debug)]
pub(crate) struct Agent {
    pub(crate) connection: Connection,
    pub(crate) process: AgentProcess,
    /// Sessions this agent has open (loaded or created), so a kept agent needs no `session/load`.
    pub(crate) sessions: Vec<String>,
    /// Where the transport records the current call's lines.
    pub(crate) tap: crate::record::TapSlot,
}

impl Agent {
    /// `error` with what the process says (see [`AgentProcess::explain`]).
    pub(crate) async fn explain(&mut self, error: Error) -> Error {
        self.process.explain(error).await
    }

    /// End the connection (the agent's stdin closes) and stop the process.
    pub(crate) async fn stop(mut self) {
        self.connection.close().await;
        self.process.stop().await;
    }
}

struct Parked {
    agent: Agent,
    fingerprint: String,
    generation: u64,
}

/// Agents waiting for their session's next turn.
#[derive(Default)]
pub(crate) struct Pool {
    parked: Mutex<HashMap<String, Parked>>,
    generation: std::sync::atomic::AtomicU64,
}

impl Pool {
    /// The number of waiting agents.
    pub(crate) fn len(&self) -> usize {
        self.parked.lock().map(|p| p.len()).unwrap_or(0)
    }

    /// The agent kept for `session` if it was started the same way.
    pub(crate) fn take(&self, session: &str, fingerprint: &str) -> Option<Agent> {
        let mut parked = self.parked.lock().ok()?;
        if parked.get(session)?.fingerprint != fingerprint {
            return None;
        }
        let mut agent = parked.remove(session)?.agent;
        if agent.process.exited().is_some() {
            return None;
        }
        agent.sessions.retain(|s| s == session);
        Some(agent)
    }

    /// Keep `agent` for `session` for `idle`; an agent already kept for it is stopped.
    pub(crate) fn park(self: &Arc<Self>, session: String, fingerprint: String, agent: Agent, idle: Duration) {
        let generation = self.generation.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Ok(mut parked) = self.parked.lock() else { return };
        parked.insert(
            session.clone(),
            Parked {
                agent,
                fingerprint,
                generation,
            },
        );
        drop(parked);
        let pool = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(idle).await;
            let Some(pool) = pool.upgrade() else { return };
            let expired = pool.parked.lock().ok().and_then(|mut parked| {
                let same = parked.get(&session).is_some_and(|p| p.generation == generation);
                if same { parked.remove(&session) } else { None }
            });
            if let Some(expired) = expired {
                expired.agent.stop().await;
            }
        });
    }
}
