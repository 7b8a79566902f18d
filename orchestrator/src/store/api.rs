//! The contract the store keeps on every database: the [`Store`] trait, its error, and the
//! texts and times it uses (see the module docs of [`crate::store`]).

use std::time::Duration;

use patchbay::async_trait;
use tokio::sync::broadcast;

use super::totals::{TreeUsage, UsageTotals};
use super::types::{
    Change, Job, JobEnd, JobEnded, JobStatus, NewJob, NewSession, Page, Recovery, Session, SessionCursor,
    SessionFilter, SessionUpdate, StoredEvent,
};

/// The error of a job interrupted because the orchestrator stopped during its run.
pub const INTERRUPTED: &str = "interrupted: the orchestrator stopped during the run";

/// The error of a running job whose worker stopped renewing its lease (it died, hung or lost
/// the database) until the lease ran out.
pub const LEASE_EXPIRED: &str =
    "lost: its worker stopped renewing the job's lease (the worker died or lost the database)";

/// How long a claim lasts unless renewed: a dead worker's job is settled this long after its
/// last renewal.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

pub(super) fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A session with this name exists already.
    #[error("a session named `{0}` already exists")]
    SessionExists(String),
    /// No session has this name or id.
    #[error("no session `{0}`")]
    SessionNotFound(String),
    /// No job has this id.
    #[error("no job `{0}`")]
    JobNotFound(String),
    /// The job is not in a state that allows the change.
    #[error("job `{job_id}` is {from}, it cannot become {to}")]
    InvalidTransition {
        /// The job.
        job_id: String,
        /// Its current status.
        from: JobStatus,
        /// The status asked for.
        to: JobStatus,
    },
    /// A stored row could not be decoded.
    #[error("stored {table}.{column} could not be decoded")]
    BadRow {
        /// The table.
        table: &'static str,
        /// The column.
        column: &'static str,
        /// What was wrong.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A value could not be encoded for storage.
    #[error("could not encode {what}")]
    Encode {
        /// What was encoded.
        what: &'static str,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// The data directory could not be created.
    #[error("could not create the data directory {path}")]
    DataDir {
        /// The directory.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The database URL names no backend (`sqlite://DIR` or `postgres://...`). The URL is not
    /// repeated: it may hold a password.
    #[error("the database URL must start with sqlite:// or postgres://")]
    BadUrl,
    /// The schema migrations failed.
    #[error("database migration failed")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The database refused or failed an operation.
    #[error("database error")]
    Database(#[from] sqlx::Error),
}

/// Sessions, jobs and events: everything the orchestrator keeps. Object-safe (`Arc<dyn Store>`).
///
/// Listing is oldest first. Every method is one transaction: nothing is partly written.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Creates a `pending` session; [`StoreError::SessionExists`] when the name is taken.
    async fn create_session(&self, new: NewSession) -> Result<Session, StoreError>;

    /// Creates a session and enqueues its first job in one transaction.
    async fn create_session_with_job(&self, session: NewSession, job: NewJob) -> Result<(Session, Job), StoreError>;

    /// The session with this id, if any.
    async fn get_session(&self, session_id: &str) -> Result<Option<Session>, StoreError>;

    /// The session with this name, if any.
    async fn get_session_by_name(&self, name: &str) -> Result<Option<Session>, StoreError>;

    /// A page of sessions, oldest first.
    async fn list_sessions(&self, page: Page) -> Result<Vec<Session>, StoreError>;

    /// Up to `limit` sessions matching `filter`, oldest first, after `after` (keyset paging: a
    /// page costs the same wherever it is), without their conversations (`conversation` is
    /// `null`), and how many match in all.
    async fn find_sessions(
        &self,
        filter: &SessionFilter,
        after: Option<&SessionCursor>,
        limit: u32,
    ) -> Result<(Vec<Session>, u64), StoreError>;

    /// Applies `update` to the session with this id and returns it as stored.
    async fn update_session(&self, session_id: &str, update: SessionUpdate) -> Result<Session, StoreError>;

    /// Deletes the session and its events, cancels its pending and claimed jobs and asks its
    /// running job to stop ([`Store::request_cancel`]); returns it.
    async fn delete_session(&self, session_id: &str) -> Result<Session, StoreError>;

    /// Deletes every session (as [`Store::delete_session`]); returns how many.
    async fn delete_all_sessions(&self) -> Result<u64, StoreError>;

    /// Adds a `pending` job at the end of the queue.
    async fn enqueue_job(&self, new: NewJob) -> Result<Job, StoreError>;

    /// The job with this id, if any.
    async fn get_job(&self, job_id: &str) -> Result<Option<Job>, StoreError>;

    /// A page of jobs in queue order, of one session or of all.
    async fn list_jobs(&self, session_name: Option<&str>, page: Page) -> Result<Vec<Job>, StoreError>;

    /// Claims the oldest pending job whose session has no claimed or running job, atomically,
    /// for `worker_id`, leased for `lease` (see [`Store::renew_leases`]).
    async fn claim_next_job(&self, worker_id: &str, lease: Duration) -> Result<Option<Job>, StoreError>;

    /// Marks a job `worker_id` claimed `running`; [`StoreError::InvalidTransition`] when it is
    /// no longer claimed by that worker (cancelled, or its lease ran out and another took it).
    async fn mark_job_running(&self, job_id: &str, worker_id: &str) -> Result<Job, StoreError>;

    /// Extends the leases of `worker_id`'s jobs `job_ids` by `lease`; returns those among them
    /// the worker must stop: ended, no longer its own, or asked to stop
    /// ([`Store::request_cancel`]).
    async fn renew_leases(
        &self,
        worker_id: &str,
        job_ids: &[String],
        lease: Duration,
    ) -> Result<Vec<String>, StoreError>;

    /// Settles jobs whose lease ran out: a `claimed` one (its run had not started) goes back
    /// to `pending`; a `running` one becomes `failed` with [`LEASE_EXPIRED`] (or `cancelled`
    /// when a cancel had been asked), and so does its session, and its callback is queued (as
    /// [`Store::end_job`]).
    async fn expire_leases(&self) -> Result<Recovery, StoreError>;

    /// Asks the worker running this job to stop it (it may be in another process): a job not
    /// running yet is cancelled at once; a running one is marked and announced
    /// ([`Change::Cancel`]); the worker then ends it `cancelled`. Returns the job as stored.
    async fn request_cancel(&self, job_id: &str) -> Result<Job, StoreError>;

    /// Changes made by other processes sharing this store, for a store that can have several
    /// (PostgreSQL's `LISTEN/NOTIFY`); `None` for a store one process owns (SQLite), whose
    /// only writer is the process itself.
    fn changes(&self) -> Option<broadcast::Receiver<Change>> {
        None
    }

    /// Whether several processes may share this store at once (then recovery settles only
    /// expired leases, never the jobs of live workers).
    fn is_shared(&self) -> bool {
        false
    }

    /// Ends a job that is not over yet, in one transaction: the job takes `end` (status, error,
    /// result), its session's status is recomputed from its jobs, and when the job asked for a
    /// callback its parent's resume is queued (so a callback is queued exactly once, whatever
    /// ends the job: its run, a cancel, a restart after a crash or a lease running out).
    /// [`StoreError::InvalidTransition`] when the job has ended already or `end` is not a
    /// terminal status.
    async fn end_job(&self, job_id: &str, end: JobEnd) -> Result<JobEnded, StoreError>;

    /// [`Store::end_job`] with a status and an optional error, returning the job.
    async fn finish_job(&self, job_id: &str, status: JobStatus, error: Option<String>) -> Result<Job, StoreError> {
        let end = JobEnd {
            status,
            error,
            result: None,
            session: None,
            events: Vec::new(),
        };
        Ok(self.end_job(job_id, end).await?.job)
    }

    /// Cancels a job that is not over yet (the runtime stops a running one's run).
    async fn cancel_job(&self, job_id: &str) -> Result<Job, StoreError> {
        self.finish_job(job_id, JobStatus::Cancelled, Some("cancelled".to_owned()))
            .await
    }

    /// How many sessions have the parent `parent` (in all, and pending or running).
    async fn children(&self, parent: &str) -> Result<(u64, u64), StoreError>;

    /// The job a session's status and result are about: its claimed or running job, else its
    /// oldest pending job, else its newest job that ran, else its newest job (`None`: no job).
    async fn current_job(&self, session_name: &str) -> Result<Option<Job>, StoreError>;

    /// Adds `delta` to the usage of job `job_id` and of its session, in one transaction (a
    /// run's worker calls it as the run spends; see [`UsageTotals`]).
    async fn add_usage(&self, job_id: &str, delta: &UsageTotals) -> Result<(), StoreError>;

    /// The usage of the tree session `session_name` belongs to: every session under the top of
    /// its parent chain (`root_session_name: None` when the session does not exist).
    async fn tree_usage(&self, session_name: &str) -> Result<TreeUsage, StoreError>;

    /// Appends one event to a session's events; returns it numbered.
    async fn append_event(
        &self,
        session_id: &str,
        job_id: Option<&str>,
        event: serde_json::Value,
    ) -> Result<StoredEvent, StoreError> {
        let mut stored = self.append_events(session_id, job_id, vec![event]).await?;
        stored
            .pop()
            .ok_or_else(|| StoreError::SessionNotFound(session_id.to_owned()))
    }

    /// Appends events in order, in one transaction; returns them numbered.
    async fn append_events(
        &self,
        session_id: &str,
        job_id: Option<&str>,
        events: Vec<serde_json::Value>,
    ) -> Result<Vec<StoredEvent>, StoreError>;

    /// The session's events with `seq > after_seq`, in order (`after_seq = 0`: all).
    async fn events_since(&self, session_id: &str, after_seq: i64) -> Result<Vec<StoredEvent>, StoreError>;

    /// The last `limit` events of the session named `session_name`, in order (none when it
    /// does not exist): what a run did last, without reading its whole history.
    async fn last_events(&self, session_name: &str, limit: u32) -> Result<Vec<StoredEvent>, StoreError>;

    /// At start-up. A store one process owns: jobs left `running` become `failed` with
    /// [`INTERRUPTED`] (queueing their callbacks, as [`Store::end_job`]) and so do their
    /// sessions; jobs left `claimed` go back to `pending`;
    /// pending jobs stay to run. A shared store ([`Store::is_shared`]): only
    /// [`Store::expire_leases`], since other processes' runs are alive.
    async fn recover_after_crash(&self) -> Result<Recovery, StoreError>;
}
