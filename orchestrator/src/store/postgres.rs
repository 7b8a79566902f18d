//! [`PgStore`]: the shared backend. Several processes (one or more `serve`, any number of
//! `worker`s, on several machines) use one PostgreSQL database at once. [`PgDialect`] is what
//! its SQL does its own way:
//!
//! - **Claiming** is `SELECT ... FOR UPDATE SKIP LOCKED` then `UPDATE` in one transaction:
//!   concurrent workers never wait on each other's candidate rows. Two workers can still pick
//!   two jobs of one session in the same instant; the partial unique index
//!   `jobs_one_active_per_session` refuses the second, and that worker claims again.
//! - **Wake-ups** are `NOTIFY` on the channel [`CHANNEL`], sent in the transaction that made
//!   the change (so delivered only if it commits), and received by one `LISTEN` connection per
//!   store, turned into [`Change`]s for [`Store::changes`](super::Store::changes). A lost
//!   connection is announced as [`Change::Resync`] and re-established.
//! - **Leases use the database's clock** (`clock_timestamp()`), so machines with skewed clocks
//!   agree on when a lease ran out. Other times are the writing process's clock, as in SQLite.

use std::sync::Arc;
use std::time::Duration;

use sqlx::Postgres;
use sqlx::postgres::{PgConnection, PgListener, PgPool, PgPoolOptions};
use tokio::sync::broadcast;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::api::StoreError;
use super::dialect::{Dialect, Sealed};
use super::queries::SqlStore;
use super::sql::{CLAIMABLE, claim_in};
use super::types::{Change, Job};

/// The notification channel every change is announced on.
pub const CHANNEL: &str = "patchbay_orchestrator";

/// Connections in each process's pool.
const MAX_CONNECTIONS: u32 = 16;

/// How many times a claim that lost a race for a session is retried at once.
const CLAIM_RETRIES: usize = 8;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The PostgreSQL backend of [`Store`](super::Store): a pool, migrations at connect, and a
/// listener that turns other processes' notifications into [`Change`]s. Cheap to clone.
pub type PgStore = SqlStore<PgDialect>;

/// PostgreSQL's ways (see the module docs): row locks, the database's clock, `LISTEN/NOTIFY`.
#[derive(Clone)]
pub struct PgDialect {
    changes: broadcast::Sender<Change>,
    /// Stops the listener when the last clone is dropped.
    _listener: Arc<DropGuard>,
}

impl std::fmt::Debug for PgDialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgDialect").finish_non_exhaustive()
    }
}

impl SqlStore<PgDialect> {
    /// Connects to `url` (`postgres://user:password@host:port/database`), brings the schema up
    /// to date (migrations take a lock, so processes starting together are safe) and starts
    /// listening for changes.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(Duration::from_secs(30))
            .connect(url)
            .await?;
        MIGRATOR.run(&pool).await?;
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.listen(CHANNEL).await?;
        let (changes, _) = broadcast::channel(4096);
        let stop = CancellationToken::new();
        tokio::spawn(listen(listener, changes.clone(), stop.clone()));
        Ok(Self {
            pool,
            dialect: PgDialect {
                changes,
                _listener: Arc::new(stop.drop_guard()),
            },
        })
    }
}

/// Receives notifications until `stop`; a dropped connection is announced as a resync and
/// re-established by the listener on the next receive.
async fn listen(mut listener: PgListener, changes: broadcast::Sender<Change>, stop: CancellationToken) {
    loop {
        let received = tokio::select! {
            () = stop.cancelled() => return,
            received = listener.try_recv() => received,
        };
        match received {
            Ok(Some(notification)) => {
                if let Some(change) = Change::decode(notification.payload()) {
                    let _ = changes.send(change);
                }
            }
            Ok(None) => {
                tracing::warn!("lost the PostgreSQL notification connection; reconnecting");
                let _ = changes.send(Change::Resync);
            }
            Err(error) => {
                tracing::warn!(%error, "PostgreSQL notifications failed; retrying in a second");
                let _ = changes.send(Change::Resync);
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        }
    }
}

/// One claim attempt; `Ok(None)` when nothing can be claimed.
async fn try_claim(pool: &PgPool, worker_id: &str, lease: Duration) -> Result<Option<Job>, StoreError> {
    let mut tx = pool.begin().await?;
    let candidate: Option<String> = sqlx::query_scalar(&format!("{CLAIMABLE} FOR UPDATE SKIP LOCKED"))
        .fetch_optional(&mut *tx)
        .await?;
    let Some(job_id) = candidate else {
        return Ok(None);
    };
    let job = claim_in::<Postgres>(&mut tx, PgDialect::CLOCK, "$4", Some(&job_id), worker_id, lease).await?;
    let Some(job) = job else {
        return Ok(None);
    };
    PgDialect::notify(&mut tx, &[Change::Session(job.session_name.clone())]).await?;
    tx.commit().await?;
    Ok(Some(job))
}

impl Sealed for PgDialect {}

impl Dialect for PgDialect {
    type DB = Postgres;

    const CLOCK: &'static str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

    const FOR_UPDATE: &'static str = " FOR UPDATE";

    fn texts(param: &str) -> String {
        format!(
            "(SELECT t.n - 1 AS n, t.value FROM json_array_elements_text(CAST({param} AS JSON)) WITH ORDINALITY AS t (value, n))"
        )
    }

    async fn claim(pool: &PgPool, worker_id: &str, lease: Duration) -> Result<Option<Job>, StoreError> {
        let mut attempt = 0;
        loop {
            match try_claim(pool, worker_id, lease).await {
                // Another worker claimed a job of the same session in the same instant.
                Err(StoreError::Database(sqlx::Error::Database(db)))
                    if db.is_unique_violation() && attempt < CLAIM_RETRIES =>
                {
                    attempt += 1;
                }
                answer => return answer,
            }
        }
    }

    async fn notify(conn: &mut PgConnection, changes: &[Change]) -> Result<(), StoreError> {
        for change in changes {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CHANNEL)
                .bind(change.encode())
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    fn changes(&self) -> Option<broadcast::Receiver<Change>> {
        Some(self.changes.subscribe())
    }

    fn is_shared(&self) -> bool {
        true
    }
}
