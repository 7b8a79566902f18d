//! [`PgStore`]: the shared backend. Several processes (one or more `serve`, any number of
//! `worker`s, on several machines) use one PostgreSQL database at once.
//!
//! - **Claiming** is `SELECT ... FOR UPDATE SKIP LOCKED` then `UPDATE` in one transaction:
//!   concurrent workers never wait on each other's candidate rows. Two workers can still pick
//!   two jobs of one session in the same instant; the partial unique index
//!   `jobs_one_active_per_session` refuses the second, and that worker claims again.
//! - **Wake-ups** are `NOTIFY` on the channel [`CHANNEL`], sent in the transaction that made
//!   the change (so delivered only if it commits), and received by one `LISTEN` connection per
//!   store, turned into [`Change`]s for [`Store::changes`]. A lost connection is announced as
//!   [`Change::Resync`] and re-established.
//! - **Leases use the database's clock** (`clock_timestamp()`), so machines with skewed clocks
//!   agree on when a lease ran out. Other times are the writing process's clock, as in SQLite.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sqlx::postgres::{PgConnection, PgListener, PgPool, PgPoolOptions};
use tokio::sync::broadcast;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::api::{LEASE_EXPIRED, Store, StoreError, millis};
use super::rows::{
    event_cols, event_from_row, job_cols, job_from_row, page_bounds, session_cols, session_from_row, to_json_text,
};
use super::sql::{self, LOCK_SESSION};
use super::totals::{TreeUsage, UsageTotals};
use super::types::{
    Change, Job, JobEnd, JobEnded, JobStatus, NewJob, NewSession, Page, Recovery, Session, SessionCursor,
    SessionFilter, SessionUpdate, StoredEvent, UnixMillis, now_millis,
};
use super::usage;
use patchbay::async_trait;

/// The notification channel every change is announced on.
pub const CHANNEL: &str = "patchbay_orchestrator";

/// Connections in each process's pool.
const MAX_CONNECTIONS: u32 = 16;

/// How many times a claim that lost a race for a session is retried at once.
const CLAIM_RETRIES: usize = 8;

/// Now, in unix milliseconds, by the database's clock.
macro_rules! db_now {
    () => {
        "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT"
    };
}

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The PostgreSQL backend of [`Store`]: a pool, migrations at connect, and a listener that
/// turns other processes' notifications into [`Change`]s. Cheap to clone.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    changes: broadcast::Sender<Change>,
    /// Stops the listener when the last clone is dropped.
    _listener: Arc<DropGuard>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: only the pool's size is shown.
        f.debug_struct("PgStore")
            .field("connections", &self.pool.size())
            .finish_non_exhaustive()
    }
}

impl PgStore {
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
            changes,
            _listener: Arc::new(stop.drop_guard()),
        })
    }

    /// The connection pool, for backend-specific work (tests, maintenance).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes every connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Why `job_id` could not become `to`: missing, or in a state that forbids it.
    async fn transition_error(&self, job_id: &str, to: JobStatus) -> StoreError {
        match self.get_job(job_id).await {
            Ok(Some(job)) => StoreError::InvalidTransition {
                job_id: job_id.to_owned(),
                from: job.status,
                to,
            },
            Ok(None) => StoreError::JobNotFound(job_id.to_owned()),
            Err(err) => err,
        }
    }

    /// One claim attempt; `Ok(None)` when nothing can be claimed.
    async fn try_claim(&self, worker_id: &str, lease: Duration) -> Result<Option<Job>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let candidate: Option<String> = sqlx::query_scalar(
            "SELECT j.job_id FROM jobs j WHERE j.status = 'pending' \
             AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.session_name = j.session_name \
               AND r.status IN ('claimed', 'running')) \
             ORDER BY j.seq LIMIT 1 FOR UPDATE SKIP LOCKED",
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some(job_id) = candidate else {
            return Ok(None);
        };
        let row = sqlx::query(concat!(
            "UPDATE jobs SET status = 'claimed', claimed_at = $2, claimed_by = $3, lease_until = ",
            db_now!(),
            " + $4 WHERE job_id = $1 AND status = 'pending' RETURNING ",
            job_cols!()
        ))
        .bind(&job_id)
        .bind(now_millis())
        .bind(worker_id)
        .bind(millis(lease))
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let job = job_from_row(&row).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
        notify(&mut tx, &[Change::Session(job.session_name.clone())]).await?;
        tx.commit().await?;
        Ok(Some(job))
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

/// Announces `changes` when the transaction on `conn` commits.
async fn notify(conn: &mut PgConnection, changes: &[Change]) -> Result<(), sqlx::Error> {
    for change in changes {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(change.encode())
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

async fn insert_session(conn: &mut PgConnection, new: NewSession, now: UnixMillis) -> Result<Session, StoreError> {
    let row = sqlx::query(concat!(
        "INSERT INTO sessions (session_id, session_name, agent_name, project_dir, \
         parent_session_name, status, created_at, updated_at, conversation) \
         VALUES ($1, $2, $3, $4, $5, 'pending', $6, $6, '[]') RETURNING ",
        session_cols!()
    ))
    .bind(uuid::Uuid::new_v4().to_string())
    .bind(&new.session_name)
    .bind(&new.agent_name)
    .bind(&new.project_dir)
    .bind(&new.parent_session_name)
    .bind(now)
    .fetch_one(&mut *conn)
    .await
    .map_err(|err| match &err {
        sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::SessionExists(new.session_name.clone()),
        _ => StoreError::Database(err),
    })?;
    let session = session_from_row(&row)?;
    notify(conn, &[Change::Session(session.session_name.clone())]).await?;
    Ok(session)
}

/// Queues a job and recomputes its session's status (a queued resume makes it `running`).
async fn insert_job(conn: &mut PgConnection, new: NewJob, now: UnixMillis) -> Result<Job, StoreError> {
    sqlx::query(LOCK_SESSION)
        .bind(&new.session_name)
        .execute(&mut *conn)
        .await?;
    let row = sqlx::query(concat!(
        "INSERT INTO jobs (job_id, kind, session_name, agent_name, prompt, project_dir, \
         parent_session_name, callback, status, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9) RETURNING ",
        job_cols!()
    ))
    .bind(uuid::Uuid::new_v4().to_string())
    .bind(new.kind.as_str())
    .bind(&new.session_name)
    .bind(&new.agent_name)
    .bind(&new.prompt)
    .bind(&new.project_dir)
    .bind(&new.parent_session_name)
    .bind(new.callback)
    .bind(now)
    .fetch_one(&mut *conn)
    .await?;
    let job = job_from_row(&row)?;
    sql::refresh_session::<sqlx::Postgres>(&mut *conn, &job.session_name, now).await?;
    notify(conn, &[Change::Session(job.session_name.clone()), Change::Queued]).await?;
    Ok(job)
}

/// What to announce once a job ended: its session, the parent its callback resumes, and the
/// queue (the session's next job, or the callback, can be claimed now).
fn ended_changes(ended: &JobEnded) -> Vec<Change> {
    let mut changes = vec![Change::Session(ended.job.session_name.clone()), Change::Queued];
    if let Some(callback) = &ended.callback {
        changes.push(Change::Session(callback.session_name.clone()));
    }
    changes
}

/// Cancels the pending and claimed jobs of deleted sessions (`name = None`: of every session)
/// and asks their running jobs to stop.
async fn cancel_session_jobs(conn: &mut PgConnection, name: Option<&str>, now: UnixMillis) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE jobs SET status = 'cancelled', error = 'session deleted', finished_at = $1 \
         WHERE status IN ('pending', 'claimed') AND ($2::TEXT IS NULL OR session_name = $2)",
    )
    .bind(now)
    .bind(name)
    .execute(&mut *conn)
    .await?;
    let running: Vec<String> = sqlx::query_scalar(
        "UPDATE jobs SET cancel_requested = TRUE WHERE status = 'running' \
         AND ($1::TEXT IS NULL OR session_name = $1) RETURNING job_id",
    )
    .bind(name)
    .fetch_all(&mut *conn)
    .await?;
    let changes: Vec<Change> = running.into_iter().map(Change::Cancel).collect();
    notify(conn, &changes).await?;
    Ok(())
}

#[async_trait]
impl Store for PgStore {
    async fn create_session(&self, new: NewSession) -> Result<Session, StoreError> {
        let mut tx = self.pool.begin().await?;
        let session = insert_session(&mut tx, new, now_millis()).await?;
        tx.commit().await?;
        Ok(session)
    }

    async fn create_session_with_job(&self, session: NewSession, job: NewJob) -> Result<(Session, Job), StoreError> {
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        let session = insert_session(&mut tx, session, now).await?;
        let job = insert_job(&mut tx, job, now).await?;
        tx.commit().await?;
        Ok((session, job))
    }

    async fn get_session(&self, session_id: &str) -> Result<Option<Session>, StoreError> {
        sqlx::query(concat!(
            "SELECT ",
            session_cols!(),
            " FROM sessions WHERE session_id = $1"
        ))
        .bind(session_id)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(session_from_row)
        .transpose()
    }

    async fn get_session_by_name(&self, name: &str) -> Result<Option<Session>, StoreError> {
        sqlx::query(concat!(
            "SELECT ",
            session_cols!(),
            " FROM sessions WHERE session_name = $1"
        ))
        .bind(name)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(session_from_row)
        .transpose()
    }

    async fn list_sessions(&self, page: Page) -> Result<Vec<Session>, StoreError> {
        let (limit, offset) = page_bounds(page);
        sqlx::query(concat!(
            "SELECT ",
            session_cols!(),
            " FROM sessions ORDER BY created_at, session_name LIMIT $1 OFFSET $2"
        ))
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(session_from_row)
        .collect()
    }

    async fn find_sessions(
        &self,
        filter: &SessionFilter,
        after: Option<&SessionCursor>,
        limit: u32,
    ) -> Result<(Vec<Session>, u64), StoreError> {
        let mut conn = self.pool.acquire().await?;
        sql::find_sessions_in::<sqlx::Postgres>(&mut conn, filter, after, limit).await
    }

    async fn update_session(&self, session_id: &str, update: SessionUpdate) -> Result<Session, StoreError> {
        let now = now_millis();
        let conversation = match &update.conversation {
            Some(value) => Some(to_json_text(value, "the conversation")?),
            None => None,
        };
        let finished_at = update.status.filter(|s| s.is_terminal()).map(|_| now);
        let row = sqlx::query(concat!(
            "UPDATE sessions SET status = COALESCE($2, status), \
             last_result = COALESCE($3, last_result), \
             provider_session_id = COALESCE($4, provider_session_id), \
             conversation = COALESCE($5, conversation), \
             parent_session_name = COALESCE($6, parent_session_name), \
             finished_at = CASE WHEN $2::TEXT IS NULL THEN finished_at ELSE $7 END, \
             updated_at = $8 WHERE session_id = $1 RETURNING ",
            session_cols!()
        ))
        .bind(session_id)
        .bind(update.status.map(|s| s.as_str()))
        .bind(&update.last_result)
        .bind(&update.provider_session_id)
        .bind(conversation)
        .bind(&update.parent_session_name)
        .bind(finished_at)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else {
            return Err(StoreError::SessionNotFound(session_id.to_owned()));
        };
        // No notification: a session's changes that waiters care about come with its jobs'
        // (a run ends by storing the session, then the job, whose change wakes them once both
        // are written).
        session_from_row(&row)
    }

    async fn delete_session(&self, session_id: &str) -> Result<Session, StoreError> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(concat!(
            "DELETE FROM sessions WHERE session_id = $1 RETURNING ",
            session_cols!()
        ))
        .bind(session_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Err(StoreError::SessionNotFound(session_id.to_owned()));
        };
        let session = session_from_row(&row)?;
        cancel_session_jobs(&mut tx, Some(&session.session_name), now_millis()).await?;
        let name = session.session_name.clone();
        notify(&mut tx, &[Change::Session(name.clone()), Change::Events(name)]).await?;
        tx.commit().await?;
        Ok(session)
    }

    async fn delete_all_sessions(&self) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let names: Vec<String> = sqlx::query_scalar("DELETE FROM sessions RETURNING session_name")
            .fetch_all(&mut *tx)
            .await?;
        cancel_session_jobs(&mut tx, None, now_millis()).await?;
        let changes: Vec<Change> = names
            .iter()
            .flat_map(|name| [Change::Session(name.clone()), Change::Events(name.clone())])
            .collect();
        notify(&mut tx, &changes).await?;
        tx.commit().await?;
        Ok(names.len() as u64)
    }

    async fn enqueue_job(&self, new: NewJob) -> Result<Job, StoreError> {
        let mut tx = self.pool.begin().await?;
        let job = insert_job(&mut tx, new, now_millis()).await?;
        tx.commit().await?;
        Ok(job)
    }

    async fn get_job(&self, job_id: &str) -> Result<Option<Job>, StoreError> {
        sqlx::query(concat!("SELECT ", job_cols!(), " FROM jobs WHERE job_id = $1"))
            .bind(job_id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(job_from_row)
            .transpose()
    }

    async fn list_jobs(&self, session_name: Option<&str>, page: Page) -> Result<Vec<Job>, StoreError> {
        let (limit, offset) = page_bounds(page);
        sqlx::query(concat!(
            "SELECT ",
            job_cols!(),
            " FROM jobs WHERE ($1::TEXT IS NULL OR session_name = $1) ORDER BY seq LIMIT $2 OFFSET $3"
        ))
        .bind(session_name)
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(job_from_row)
        .collect()
    }

    async fn claim_next_job(&self, worker_id: &str, lease: Duration) -> Result<Option<Job>, StoreError> {
        let mut attempt = 0;
        loop {
            match self.try_claim(worker_id, lease).await {
                Ok(job) => return Ok(job),
                // Another worker claimed a job of the same session in the same instant.
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() && attempt < CLAIM_RETRIES => {
                    attempt += 1;
                }
                Err(sqlx::Error::Decode(source)) => match source.downcast::<StoreError>() {
                    Ok(error) => return Err(*error),
                    Err(source) => return Err(StoreError::Database(sqlx::Error::Decode(source))),
                },
                Err(error) => return Err(error.into()),
            }
        }
    }

    async fn mark_job_running(&self, job_id: &str, worker_id: &str) -> Result<Job, StoreError> {
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        sqlx::query(sql::LOCK_SESSION_OF_JOB)
            .bind(job_id)
            .execute(&mut *tx)
            .await?;
        let row = sqlx::query(concat!(
            "UPDATE jobs SET status = 'running', started_at = $2 \
             WHERE job_id = $1 AND status = 'claimed' AND claimed_by = $3 RETURNING ",
            job_cols!()
        ))
        .bind(job_id)
        .bind(now)
        .bind(worker_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            drop(tx);
            return Err(self.transition_error(job_id, JobStatus::Running).await);
        };
        let job = job_from_row(&row)?;
        sql::refresh_session::<sqlx::Postgres>(&mut tx, &job.session_name, now).await?;
        notify(&mut tx, &[Change::Session(job.session_name.clone())]).await?;
        tx.commit().await?;
        Ok(job)
    }

    async fn end_job(&self, job_id: &str, end: JobEnd) -> Result<JobEnded, StoreError> {
        if !end.status.is_terminal() {
            return Err(self.transition_error(job_id, end.status).await);
        }
        let mut tx = self.pool.begin().await?;
        let ended = sql::end_job_in::<sqlx::Postgres>(&mut tx, job_id, &end, now_millis()).await?;
        let Some(ended) = ended else {
            drop(tx);
            return Err(self.transition_error(job_id, end.status).await);
        };
        notify(&mut tx, &ended_changes(&ended)).await?;
        tx.commit().await?;
        Ok(ended)
    }

    async fn children(&self, parent: &str) -> Result<(u64, u64), StoreError> {
        let mut conn = self.pool.acquire().await?;
        sql::children_in::<sqlx::Postgres>(&mut conn, parent).await
    }

    async fn current_job(&self, session_name: &str) -> Result<Option<Job>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        sql::current_job_in::<sqlx::Postgres>(&mut conn, session_name).await
    }

    async fn add_usage(&self, job_id: &str, delta: &UsageTotals) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        usage::add_usage_in::<sqlx::Postgres>(&mut tx, job_id, delta).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn tree_usage(&self, session_name: &str) -> Result<TreeUsage, StoreError> {
        let mut conn = self.pool.acquire().await?;
        usage::tree_usage_in::<sqlx::Postgres>(&mut conn, session_name).await
    }

    async fn append_events(
        &self,
        session_id: &str,
        job_id: Option<&str>,
        events: Vec<Value>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let texts = events
            .iter()
            .map(|e| to_json_text(e, "an event"))
            .collect::<Result<Vec<_>, _>>()?;
        let count = i64::try_from(texts.len()).unwrap_or(i64::MAX);
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        let last: Option<(i64, String)> = sqlx::query_as(
            "UPDATE sessions SET event_seq = event_seq + $2 WHERE session_id = $1 \
             RETURNING event_seq, session_name",
        )
        .bind(session_id)
        .bind(count)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((last, session_name)) = last else {
            return Err(StoreError::SessionNotFound(session_id.to_owned()));
        };
        let first = last - count + 1;
        let seqs: Vec<i64> = (first..=last).collect();
        // One statement for the whole batch.
        sqlx::query(
            "INSERT INTO events (session_id, seq, job_id, event, created_at) \
             SELECT $1, seq, $3, event, $5 FROM UNNEST($2::BIGINT[], $4::TEXT[]) AS batch (seq, event)",
        )
        .bind(session_id)
        .bind(&seqs)
        .bind(job_id)
        .bind(&texts)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        notify(&mut tx, &[Change::Events(session_name)]).await?;
        tx.commit().await?;
        Ok(seqs
            .into_iter()
            .zip(events)
            .map(|(seq, event)| StoredEvent {
                session_id: session_id.to_owned(),
                job_id: job_id.map(str::to_owned),
                seq,
                event,
                created_at: now,
            })
            .collect())
    }

    async fn events_since(&self, session_id: &str, after_seq: i64) -> Result<Vec<StoredEvent>, StoreError> {
        sqlx::query(concat!(
            "SELECT ",
            event_cols!(),
            " FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq"
        ))
        .bind(session_id)
        .bind(after_seq)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(event_from_row)
        .collect()
    }

    async fn last_events(&self, session_name: &str, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        sql::last_events_in::<sqlx::Postgres>(&mut conn, session_name, limit).await
    }

    async fn renew_leases(
        &self,
        worker_id: &str,
        job_ids: &[String],
        lease: Duration,
    ) -> Result<Vec<String>, StoreError> {
        if job_ids.is_empty() {
            return Ok(Vec::new());
        }
        let held: Vec<String> = sqlx::query_scalar(concat!(
            "UPDATE jobs SET lease_until = ",
            db_now!(),
            " + $3 WHERE job_id = ANY($1) AND claimed_by = $2 \
             AND status IN ('claimed', 'running') AND NOT cancel_requested RETURNING job_id"
        ))
        .bind(job_ids)
        .bind(worker_id)
        .bind(millis(lease))
        .fetch_all(&self.pool)
        .await?;
        Ok(job_ids.iter().filter(|id| !held.contains(id)).cloned().collect())
    }

    async fn expire_leases(&self) -> Result<Recovery, StoreError> {
        let now = now_millis();
        // Candidates first, without locks; each is checked again under its session's lock
        // (sessions before jobs, as every transaction here), so a lease renewed in between is
        // kept and two processes settling at once settle each job once.
        let candidates: Vec<String> = sqlx::query_scalar(concat!(
            "SELECT job_id FROM jobs WHERE status = 'running' AND lease_until < ",
            db_now!(),
            " ORDER BY seq"
        ))
        .fetch_all(&self.pool)
        .await?;
        let mut tx = self.pool.begin().await?;
        let mut ends = Vec::new();
        for job_id in candidates {
            sqlx::query(sql::LOCK_SESSION_OF_JOB)
                .bind(&job_id)
                .execute(&mut *tx)
                .await?;
            let expired: Option<bool> = sqlx::query_scalar(concat!(
                "SELECT cancel_requested FROM jobs WHERE job_id = $1 AND status = 'running' AND lease_until < ",
                db_now!(),
                " FOR UPDATE"
            ))
            .bind(&job_id)
            .fetch_optional(&mut *tx)
            .await?;
            let end = match expired {
                None => continue,
                Some(true) => JobEnd::cancelled("cancelled"),
                Some(false) => JobEnd::failed(LEASE_EXPIRED),
            };
            ends.push((job_id, end));
        }
        let mut recovery = Recovery::default();
        sql::settle_in::<sqlx::Postgres>(&mut tx, ends, now, &mut recovery).await?;
        let requeued: Vec<(String, String)> = sqlx::query_as(concat!(
            "UPDATE jobs SET status = 'pending', claimed_at = NULL, claimed_by = NULL, lease_until = NULL \
             WHERE status = 'claimed' AND lease_until < ",
            db_now!(),
            " RETURNING job_id, session_name"
        ))
        .fetch_all(&mut *tx)
        .await?;
        if recovery.is_empty() && requeued.is_empty() {
            return Ok(recovery);
        }
        let mut changes = vec![Change::Queued];
        changes.extend(recovery.failed_sessions.iter().cloned().map(Change::Session));
        changes.extend(requeued.iter().map(|(_, session)| Change::Session(session.clone())));
        for callback in &recovery.callbacks {
            if let Some(parent) = sqlx::query_scalar::<_, String>("SELECT session_name FROM jobs WHERE job_id = $1")
                .bind(callback)
                .fetch_optional(&mut *tx)
                .await?
            {
                changes.push(Change::Session(parent));
            }
        }
        notify(&mut tx, &changes).await?;
        tx.commit().await?;
        recovery.requeued_jobs = requeued.into_iter().map(|(job, _)| job).collect();
        recovery.requeued_jobs.sort();
        Ok(recovery)
    }

    async fn request_cancel(&self, job_id: &str) -> Result<Job, StoreError> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(concat!(
            "UPDATE jobs SET cancel_requested = TRUE WHERE job_id = $1 AND status = 'running' RETURNING ",
            job_cols!()
        ))
        .bind(job_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            drop(tx);
            return self.cancel_job(job_id).await;
        };
        let job = job_from_row(&row)?;
        notify(&mut tx, &[Change::Cancel(job.job_id.clone())]).await?;
        tx.commit().await?;
        Ok(job)
    }

    async fn recover_after_crash(&self) -> Result<Recovery, StoreError> {
        self.expire_leases().await
    }

    fn changes(&self) -> Option<broadcast::Receiver<Change>> {
        Some(self.changes.subscribe())
    }

    fn is_shared(&self) -> bool {
        true
    }
}
