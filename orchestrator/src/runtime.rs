//! What a running orchestrator holds ([`Inner`], shared by the service, its workers and its
//! waits), its defaults, and where runs reach its MCP tools.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use patchbay::{Registry, Signal};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::blueprint::Blueprints;
use crate::limits::Limits;
use crate::notify::Notifier;
use crate::scope::ScopedTokens;
use crate::store::Store;

/// The default number of runs at once.
pub const DEFAULT_WORKERS: usize = 4;
/// The longest a stop waits for the runs to end and be recorded (see
/// [`Orchestrator::shutdown`](crate::Orchestrator::shutdown)).
pub const STOP_GRACE: Duration = Duration::from_secs(5);
/// The default largest request (an MCP call or a `POST /jobs` body, so a prompt): 1 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// The default longest wait of a sync start or resume: ten minutes.
pub const DEFAULT_SYNC_WAIT: Duration = Duration::from_secs(600);

/// Where runs reach this orchestrator's MCP tools (for blueprints with `orchestrator_tools`),
/// and the tokens they get there: each run a scoped token of its own session (see
/// [`crate::scope`]), never the listener's bearer token.
#[derive(Clone)]
pub struct McpEndpoint {
    /// The streamable HTTP URL (`http://127.0.0.1:<port>/mcp`).
    pub url: String,
    /// The scoped tokens the listener at `url` takes (their key is a secret: never logged).
    pub tokens: ScopedTokens,
}

impl std::fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpEndpoint")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// A run in progress: its session and the signal that cancels it.
pub(crate) struct Running {
    pub(crate) session_name: String,
    pub(crate) signal: Signal,
}

pub(crate) struct Inner {
    /// This process's worker id (jobs it claims carry it).
    pub(crate) worker_id: String,
    /// How long a claim lasts without renewal.
    pub(crate) lease: Duration,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) blueprints: Blueprints,
    pub(crate) registry: Registry,
    pub(crate) sync_wait: Duration,
    /// The largest request taken over MCP and the API.
    pub(crate) max_request_bytes: usize,
    /// The orchestrator's limits.
    pub(crate) limits: Limits,
    /// How long a waiting call's progress stays quiet at most.
    pub(crate) heartbeat: Duration,
    /// The folder of sessions started without one (resolved).
    pub(crate) project_dir: PathBuf,
    /// Every session's folder is inside it (resolved).
    pub(crate) projects_root: PathBuf,
    /// Bumped when a session's status or a job of it changes.
    pub(crate) status: Notifier,
    /// Bumped when events of a session were stored.
    pub(crate) events: Notifier,
    /// Wakes idle workers: a job was queued or a run ended.
    pub(crate) queue: Notify,
    /// Runs in progress by job id.
    pub(crate) running: Mutex<HashMap<String, Running>>,
    pub(crate) endpoint: Mutex<Option<McpEndpoint>>,
    pub(crate) stop: CancellationToken,
    /// One permit per run at once (the worker count); lent out while a run waits on another
    /// session (see `Orchestrator::lend_slot`).
    pub(crate) slots: Arc<Semaphore>,
    /// The runs in progress, awaited at shutdown.
    pub(crate) runs: TaskTracker,
    pub(crate) dispatcher: Mutex<Option<JoinHandle<()>>>,
    /// Cancelled at shutdown once the runs have stopped: calls still waiting answer at once.
    pub(crate) released: CancellationToken,
}

impl Inner {
    /// Cancel the runs of jobs matching `which`; returns how many.
    pub(crate) fn cancel_runs(&self, which: impl Fn(&str, &Running) -> bool) -> usize {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let mut n = 0;
        for (job_id, run) in running.iter() {
            if which(job_id, run) {
                run.signal.cancel();
                n += 1;
            }
        }
        n
    }
}
