//! Building an [`Orchestrator`]: its options, crash recovery and the start of its workers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use patchbay::Registry;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Orchestrator;
use crate::blueprint::Blueprints;
use crate::error::OrchestratorError;
use crate::limits::Limits;
use crate::notify::Notifier;
use crate::runtime::{DEFAULT_MAX_REQUEST_BYTES, DEFAULT_SYNC_WAIT, DEFAULT_WORKERS, Inner};
use crate::store::{DEFAULT_LEASE, Store};

/// Builds an [`Orchestrator`].
pub struct OrchestratorBuilder {
    store: Arc<dyn Store>,
    blueprints: Blueprints,
    registry: Option<Registry>,
    workers: usize,
    sync_wait: Duration,
    project_dir: Option<PathBuf>,
    projects_root: Option<PathBuf>,
    lease: Duration,
    max_request_bytes: usize,
    limits: Limits,
    heartbeat: Duration,
}

impl std::fmt::Debug for OrchestratorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrchestratorBuilder")
            .field("blueprints", &self.blueprints.len())
            .field("workers", &self.workers)
            .field("sync_wait", &self.sync_wait)
            .field("project_dir", &self.project_dir)
            .field("projects_root", &self.projects_root)
            .finish_non_exhaustive()
    }
}

impl Orchestrator {
    /// A builder over `store` and `blueprints`.
    pub fn builder(store: Arc<dyn Store>, blueprints: Blueprints) -> OrchestratorBuilder {
        OrchestratorBuilder::new(store, blueprints)
    }
}

impl OrchestratorBuilder {
    fn new(store: Arc<dyn Store>, blueprints: Blueprints) -> Self {
        Self {
            store,
            blueprints,
            registry: None,
            workers: DEFAULT_WORKERS,
            sync_wait: DEFAULT_SYNC_WAIT,
            project_dir: None,
            projects_root: None,
            lease: DEFAULT_LEASE,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            limits: Limits::default(),
            heartbeat: crate::progress::HEARTBEAT,
        }
    }

    /// Build providers with this registry instead of [`Registry::compiled`] (a host adds its
    /// own providers this way).
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Run at most this many jobs at once (default [`DEFAULT_WORKERS`]). Zero runs none in
    /// this process: it only takes requests, for worker processes sharing its store (see
    /// [`Store::is_shared`]) to run.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// How long a claimed job stays this process's without renewal (default
    /// [`DEFAULT_LEASE`]; at least one second). Leases are renewed every third of it; when this
    /// process dies, others settle its jobs this long after the last renewal.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_secs(1));
        self
    }

    /// Wait at most this long for a sync start or resume (default [`DEFAULT_SYNC_WAIT`]).
    pub fn sync_wait_limit(mut self, limit: Duration) -> Self {
        self.sync_wait = limit;
        self
    }

    /// The working directory of sessions started without `project_dir`, and the base of
    /// relative ones (default: the current directory).
    pub fn project_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.project_dir = Some(dir.into());
        self
    }

    /// The largest request taken, over MCP and the JSON API alike (default
    /// [`DEFAULT_MAX_REQUEST_BYTES`]): MCP answers a larger one with a JSON-RPC error stating
    /// the limit, the API with `413`.
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes.max(1);
        self
    }

    /// The orchestrator's limits (see [`crate::limits`]); a blueprint's `[limits]` override them.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// How long a waiting call's progress may stay quiet before its last line is sent again
    /// (default [`HEARTBEAT`](crate::progress::HEARTBEAT); at least 100 ms; see
    /// [`crate::progress`]).
    pub fn progress_heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = every.max(Duration::from_millis(100));
        self
    }

    /// The folder every session's `project_dir` must be inside (default: the project
    /// directory, see [`project_dir`](Self::project_dir)); a folder outside it is refused with
    /// [`OrchestratorError::OutsideRoot`].
    pub fn projects_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.projects_root = Some(dir.into());
        self
    }

    /// Recover from a previous crash ([`Store::recover_after_crash`]) and start the workers
    /// on the current tokio runtime.
    pub async fn start(self) -> Result<Orchestrator, OrchestratorError> {
        // Processes left by interrupted runs go before their jobs are marked failed.
        crate::orphans::sweep_at_start(self.store.as_ref()).await;
        let recovery = self.store.recover_after_crash().await?;
        crate::orphans::kill_runs(&recovery.failed_jobs);
        if !recovery.is_empty() {
            tracing::warn!(
                failed = recovery.failed_jobs.len(),
                requeued = recovery.requeued_jobs.len(),
                callbacks = recovery.callbacks.len(),
                "recovered after a stop during runs: running jobs failed (their callbacks queued), claimed jobs \
                 queued again"
            );
        }
        let (project_dir, projects_root) = folders(self.project_dir, self.projects_root)?;
        let changes = self.store.changes();
        let inner = Arc::new(Inner {
            worker_id: format!("orchestrator-{}", uuid::Uuid::new_v4()),
            lease: self.lease,
            store: self.store,
            blueprints: self.blueprints,
            registry: self.registry.unwrap_or_else(Registry::compiled),
            sync_wait: self.sync_wait,
            max_request_bytes: self.max_request_bytes,
            limits: self.limits,
            heartbeat: self.heartbeat,
            project_dir,
            projects_root,
            status: Notifier::new(),
            events: Notifier::new(),
            queue: Notify::new(),
            running: Mutex::new(HashMap::new()),
            endpoint: Mutex::new(None),
            stop: CancellationToken::new(),
            slots: Arc::new(Semaphore::new(self.workers)),
            runs: TaskTracker::new(),
            dispatcher: Mutex::new(None),
            released: CancellationToken::new(),
        });
        if self.workers > 0 {
            let dispatcher = tokio::spawn(crate::worker::dispatch(inner.clone()));
            if let Ok(mut slot) = inner.dispatcher.lock() {
                *slot = Some(dispatcher);
            }
        }
        tokio::spawn(crate::worker::keep_leases(inner.clone()));
        if let Some(changes) = changes {
            tokio::spawn(crate::worker::follow_changes(inner.clone(), changes));
        }
        Ok(Orchestrator { inner })
    }
}

/// The project directory (default: the current one) and the projects root (default: the
/// project directory), both resolved; the project directory must be inside the root.
fn folders(project_dir: Option<PathBuf>, root: Option<PathBuf>) -> Result<(PathBuf, PathBuf), OrchestratorError> {
    let resolve = |dir: PathBuf, what: &str| {
        std::fs::canonicalize(&dir).map_err(|e| OrchestratorError::Invalid(format!("{what} `{}`: {e}", dir.display())))
    };
    let project_dir = match project_dir {
        Some(dir) => resolve(dir, "the project directory")?,
        None => std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .map_err(|e| OrchestratorError::Invalid(format!("no current directory: {e}")))?,
    };
    let root = match root {
        Some(root) => resolve(root, "the projects root")?,
        None => project_dir.clone(),
    };
    if !project_dir.starts_with(&root) {
        return Err(OrchestratorError::OutsideRoot {
            dir: project_dir.display().to_string(),
            root: root.display().to_string(),
        });
    }
    Ok((project_dir, root))
}
