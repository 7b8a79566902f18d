//! Sessions, jobs and events behind one trait, [`Store`], on two backends: [`SqliteStore`] (the
//! embedded default, one process) and [`PgStore`] (several processes on several machines);
//! [`open`] picks one by URL. Both are one query layer, [`SqlStore`], over a [`Dialect`]
//! ([`SqliteDialect`], [`PgDialect`]).
//!
//! # Layout
//! - `queries.rs`: [`SqlStore`], the one implementation of [`Store`]: every operation's SQL,
//!   written once with `$N` placeholders (sqlx's SQLite driver reads them as `?N`).
//! - `sql.rs`, `usage.rs`: the statements and steps several operations share (a job's end and
//!   its callback, a session's status, listings, claiming, recovery; usage), as functions
//!   generic over the sqlx database (`on_any_backend!`).
//! - `dialect.rs`: [`Dialect`], what differs: the lease clock, row locks, how a list of texts
//!   is bound (a JSON array), how a job is claimed, and how other processes are told.
//! - `sqlite.rs`, `postgres.rs`: the two dialects, with opening and connecting.
//! - `rows.rs`: decoding rows; `types.rs`, `totals.rs`: the data model; `api.rs`: the trait.
//!
//! ```no_run
//! # async fn demo() -> Result<(), patchbay_orchestrator::store::StoreError> {
//! use std::sync::Arc;
//! use patchbay_orchestrator::store::{JobKind, NewJob, NewSession, SqliteStore, Store};
//!
//! let store: Arc<dyn Store> = Arc::new(SqliteStore::open("./data").await?);
//! store.recover_after_crash().await?;
//! let session = store
//!     .create_session(NewSession {
//!         session_name: "fix-login".into(),
//!         agent_name: "default".into(),
//!         project_dir: ".".into(),
//!         parent_session_name: None,
//!     })
//!     .await?;
//! store
//!     .enqueue_job(NewJob {
//!         kind: JobKind::StartSession,
//!         session_name: session.session_name.clone(),
//!         agent_name: session.agent_name.clone(),
//!         prompt: "Fix the login page".into(),
//!         project_dir: session.project_dir.clone(),
//!         parent_session_name: None,
//!         callback: false,
//!     })
//!     .await?;
//! let job = store.claim_next_job("worker-1", patchbay_orchestrator::store::DEFAULT_LEASE).await?;
//! # let _ = job;
//! # Ok(())
//! # }
//! ```
//!
//! # Decisions
//! - **Times are unix milliseconds** ([`UnixMillis`], `BIGINT` columns), not RFC 3339 text:
//!   the same type and ordering in SQLite and PostgreSQL, no text-format or time-zone parsing,
//!   no date crate. Rendering as RFC 3339 belongs to the presentation layer.
//! - **JSON is stored as text** (conversation, events): SQLite has no JSON type; PostgreSQL can
//!   later use `JSONB` behind the same trait without changing the types here.
//! - **Queue order is insertion order**: `jobs.seq` is an autoincrement key, and claiming orders
//!   by it alone (timestamps tie within a millisecond and wall clocks can go backwards).
//! - **Claiming**: the oldest pending job whose session has no claimed or running job, one job
//!   at a time per session, in order. SQLite: one `UPDATE ... WHERE job_id = (SELECT ...)
//!   RETURNING` under its single writer lock. PostgreSQL: `SELECT ... FOR UPDATE SKIP LOCKED`
//!   then `UPDATE` in one transaction. On both, the partial unique index
//!   `jobs_one_active_per_session` refuses a second claimed or running job of a session (two
//!   PostgreSQL workers picking two jobs of one session in the same instant: the second
//!   claims again).
//! - **Leases** (`jobs.lease_until`, see [`Store::renew_leases`], [`Store::expire_leases`]) are
//!   set and read by the database's clock ([`Dialect::CLOCK`]), so skewed machines agree on
//!   PostgreSQL (on SQLite it is the one machine's clock).
//! - **Wake-ups across processes**: PostgreSQL sends `NOTIFY` in the transaction that made a
//!   change (delivered only on commit); [`Store::changes`] yields them. A session's own update
//!   sends none: waiters care about a run's end, announced by its job's update, written after
//!   the session's.
//! - **Event numbers per session** come from a counter on the session row (`UPDATE sessions SET
//!   event_seq = event_seq + n ... RETURNING event_seq`), which also checks that the session
//!   exists and serializes appends in both databases; events are deleted with their session.
//! - **Jobs outlive their session**: deleting a session cancels its pending and claimed jobs in
//!   the same transaction and keeps job history. Stopping a running job is the runtime's work
//!   (through the run's `Signal`); it then calls [`Store::finish_job`].
//! - **Migrations live per backend** (`migrations/sqlite/`, `migrations/postgres/`), since DDL
//!   for autoincrement keys differs. **The queries do not**: each is one text in [`SqlStore`],
//!   and the [`Dialect`] supplies only what the two databases do differently. A batch of
//!   events (and a worker's job ids) is bound as one JSON array of texts, read back as rows
//!   (`json_each` / `json_array_elements_text`), so a batch is one statement on both.
//! - **Durability**: WAL with `synchronous = NORMAL`: a committed transaction survives a kill -9
//!   of the process (the WAL is in the OS cache); only a power loss can drop the last commits.
//! - **Bad data is an error**: an unknown status text or broken JSON in a row is
//!   [`StoreError::BadRow`], never a panic.

mod api;
mod callback;
mod dialect;
mod postgres;
mod queries;
mod rows;
mod sql;
mod sqlite;
mod totals;
mod types;
mod usage;
mod writes;

use std::sync::Arc;

pub use api::{DEFAULT_LEASE, INTERRUPTED, LEASE_EXPIRED, Store, StoreError};
pub use dialect::Dialect;
pub use postgres::{CHANNEL as PG_CHANNEL, PgDialect, PgStore};
pub use queries::SqlStore;
pub use sqlite::{DB_FILE, SqliteDialect, SqliteStore};
pub use totals::{TreeUsage, UsageTotals};
pub use types::{
    Change, Job, JobEnd, JobEnded, JobKind, JobStatus, NewJob, NewSession, Page, Recovery, Session, SessionCursor,
    SessionFilter, SessionStatus, SessionUpdate, StoredEvent, UnixMillis, UnknownValue, now_millis,
};

/// Opens the store a URL names: `sqlite://DIR` (the data folder holding `orchestrator.db`,
/// created when missing) or `postgres://...` / `postgresql://...`.
pub async fn open(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    if let Some(dir) = url.strip_prefix("sqlite://") {
        return Ok(Arc::new(SqliteStore::open(dir).await?));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Arc::new(PgStore::connect(url).await?));
    }
    Err(StoreError::BadUrl)
}
