//! [`SqliteStore`]: the embedded backend, one `orchestrator.db` file under a data directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::api::{INTERRUPTED, LEASE_EXPIRED, Store, StoreError, millis};
use super::rows::{
    event_cols, event_from_row, job_cols, job_from_row, page_bounds, session_cols, session_from_row, strings,
    to_json_text,
};
use super::sql::{self, LOCK_SESSION, RUNNING_JOBS};
use super::totals::{TreeUsage, UsageTotals};
use super::types::{
    Job, JobEnd, JobEnded, JobStatus, NewJob, NewSession, Page, Recovery, Session, SessionCursor, SessionFilter,
    SessionUpdate, StoredEvent, UnixMillis, now_millis,
};
use super::usage;
use patchbay::async_trait;

/// The database file's name inside the data directory.
pub const DB_FILE: &str = "orchestrator.db";

/// How long a statement waits for SQLite's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections in the pool (SQLite has one writer; readers go on in parallel under WAL).
const MAX_CONNECTIONS: u32 = 8;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The SQLite backend of [`Store`]: WAL, foreign keys on, a busy timeout, migrations at open.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens (creating if needed) `data_dir/orchestrator.db` and brings its schema up to date.
    pub async fn open(data_dir: impl AsRef<Path>) -> Result<Self, StoreError> {
        let dir = data_dir.as_ref();
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|source| StoreError::DataDir {
                path: dir.to_owned(),
                source,
            })?;
        let path = dir.join(DB_FILE);
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .connect_with(options)
            .await?;
        MIGRATOR.run(&pool).await?;
        Ok(Self { pool, path })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection pool, for backend-specific work (tests, maintenance).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Waits for every connection to close (a clean shutdown checkpoints the WAL).
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
}

async fn insert_session(conn: &mut SqliteConnection, new: NewSession, now: UnixMillis) -> Result<Session, StoreError> {
    let row = sqlx::query(concat!(
        "INSERT INTO sessions (session_id, session_name, agent_name, project_dir, \
         parent_session_name, status, created_at, updated_at, conversation) \
         VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?6, '[]') RETURNING ",
        session_cols!()
    ))
    .bind(uuid::Uuid::new_v4().to_string())
    .bind(&new.session_name)
    .bind(&new.agent_name)
    .bind(&new.project_dir)
    .bind(&new.parent_session_name)
    .bind(now)
    .fetch_one(conn)
    .await
    .map_err(|err| match &err {
        sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::SessionExists(new.session_name.clone()),
        _ => StoreError::Database(err),
    })?;
    session_from_row(&row)
}

/// Queues a job and recomputes its session's status (a queued resume makes it `running`).
async fn insert_job(conn: &mut SqliteConnection, new: NewJob, now: UnixMillis) -> Result<Job, StoreError> {
    sqlx::query(LOCK_SESSION)
        .bind(&new.session_name)
        .execute(&mut *conn)
        .await?;
    let row = sqlx::query(concat!(
        "INSERT INTO jobs (job_id, kind, session_name, agent_name, prompt, project_dir, \
         parent_session_name, callback, status, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', ?9) RETURNING ",
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
    sql::refresh_session::<sqlx::Sqlite>(conn, &job.session_name, now).await?;
    Ok(job)
}

/// Cancels the pending and claimed jobs of deleted sessions (`name = None`: of every session)
/// and asks their running jobs to stop.
async fn cancel_waiting_jobs(
    conn: &mut SqliteConnection,
    name: Option<&str>,
    now: UnixMillis,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE jobs SET status = 'cancelled', error = 'session deleted', finished_at = ?1 \
         WHERE status IN ('pending', 'claimed') AND (?2 IS NULL OR session_name = ?2)",
    )
    .bind(now)
    .bind(name)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE jobs SET cancel_requested = TRUE WHERE status = 'running' AND (?1 IS NULL OR session_name = ?1)",
    )
    .bind(name)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

#[async_trait]
impl Store for SqliteStore {
    async fn create_session(&self, new: NewSession) -> Result<Session, StoreError> {
        let mut conn = self.pool.acquire().await?;
        insert_session(&mut conn, new, now_millis()).await
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
            " FROM sessions WHERE session_id = ?1"
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
            " FROM sessions WHERE session_name = ?1"
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
            " FROM sessions ORDER BY created_at, session_name LIMIT ?1 OFFSET ?2"
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
        sql::find_sessions_in::<sqlx::Sqlite>(&mut conn, filter, after, limit).await
    }

    async fn update_session(&self, session_id: &str, update: SessionUpdate) -> Result<Session, StoreError> {
        let now = now_millis();
        let conversation = match &update.conversation {
            Some(value) => Some(to_json_text(value, "the conversation")?),
            None => None,
        };
        let finished_at = update.status.filter(|s| s.is_terminal()).map(|_| now);
        let row = sqlx::query(concat!(
            "UPDATE sessions SET status = COALESCE(?2, status), \
             last_result = COALESCE(?3, last_result), \
             provider_session_id = COALESCE(?4, provider_session_id), \
             conversation = COALESCE(?5, conversation), \
             parent_session_name = COALESCE(?6, parent_session_name), \
             finished_at = CASE WHEN ?2 IS NULL THEN finished_at ELSE ?7 END, \
             updated_at = ?8 WHERE session_id = ?1 RETURNING ",
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
        match row {
            Some(row) => session_from_row(&row),
            None => Err(StoreError::SessionNotFound(session_id.to_owned())),
        }
    }

    async fn delete_session(&self, session_id: &str) -> Result<Session, StoreError> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(concat!(
            "DELETE FROM sessions WHERE session_id = ?1 RETURNING ",
            session_cols!()
        ))
        .bind(session_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Err(StoreError::SessionNotFound(session_id.to_owned()));
        };
        let session = session_from_row(&row)?;
        cancel_waiting_jobs(&mut tx, Some(&session.session_name), now_millis()).await?;
        tx.commit().await?;
        Ok(session)
    }

    async fn delete_all_sessions(&self) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let deleted = sqlx::query("DELETE FROM sessions").execute(&mut *tx).await?;
        cancel_waiting_jobs(&mut tx, None, now_millis()).await?;
        tx.commit().await?;
        Ok(deleted.rows_affected())
    }

    async fn enqueue_job(&self, new: NewJob) -> Result<Job, StoreError> {
        let mut tx = self.pool.begin().await?;
        let job = insert_job(&mut tx, new, now_millis()).await?;
        tx.commit().await?;
        Ok(job)
    }

    async fn children(&self, parent: &str) -> Result<(u64, u64), StoreError> {
        let mut conn = self.pool.acquire().await?;
        sql::children_in::<sqlx::Sqlite>(&mut conn, parent).await
    }

    async fn current_job(&self, session_name: &str) -> Result<Option<Job>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        sql::current_job_in::<sqlx::Sqlite>(&mut conn, session_name).await
    }

    async fn add_usage(&self, job_id: &str, delta: &UsageTotals) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        usage::add_usage_in::<sqlx::Sqlite>(&mut tx, job_id, delta).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn tree_usage(&self, session_name: &str) -> Result<TreeUsage, StoreError> {
        let mut conn = self.pool.acquire().await?;
        usage::tree_usage_in::<sqlx::Sqlite>(&mut conn, session_name).await
    }

    async fn get_job(&self, job_id: &str) -> Result<Option<Job>, StoreError> {
        sqlx::query(concat!("SELECT ", job_cols!(), " FROM jobs WHERE job_id = ?1"))
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
            " FROM jobs WHERE (?1 IS NULL OR session_name = ?1) ORDER BY seq LIMIT ?2 OFFSET ?3"
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
        let now = now_millis();
        sqlx::query(concat!(
            "UPDATE jobs SET status = 'claimed', claimed_at = ?1, claimed_by = ?2, lease_until = ?3 \
             WHERE job_id = (SELECT j.job_id FROM jobs j WHERE j.status = 'pending' \
               AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.session_name = j.session_name \
                 AND r.status IN ('claimed', 'running')) \
               ORDER BY j.seq LIMIT 1) \
             AND status = 'pending' RETURNING ",
            job_cols!()
        ))
        .bind(now)
        .bind(worker_id)
        .bind(now.saturating_add(millis(lease)))
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(job_from_row)
        .transpose()
    }

    async fn mark_job_running(&self, job_id: &str, worker_id: &str) -> Result<Job, StoreError> {
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        sqlx::query(sql::LOCK_SESSION_OF_JOB)
            .bind(job_id)
            .execute(&mut *tx)
            .await?;
        let row = sqlx::query(concat!(
            "UPDATE jobs SET status = 'running', started_at = ?2 \
             WHERE job_id = ?1 AND status = 'claimed' AND claimed_by = ?3 RETURNING ",
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
        sql::refresh_session::<sqlx::Sqlite>(&mut tx, &job.session_name, now).await?;
        tx.commit().await?;
        Ok(job)
    }

    async fn end_job(&self, job_id: &str, end: JobEnd) -> Result<JobEnded, StoreError> {
        if !end.status.is_terminal() {
            return Err(self.transition_error(job_id, end.status).await);
        }
        let mut tx = self.pool.begin().await?;
        let ended = sql::end_job_in::<sqlx::Sqlite>(&mut tx, job_id, &end, now_millis()).await?;
        let Some(ended) = ended else {
            drop(tx);
            return Err(self.transition_error(job_id, end.status).await);
        };
        tx.commit().await?;
        Ok(ended)
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
        let last: Option<i64> = sqlx::query_scalar(
            "UPDATE sessions SET event_seq = event_seq + ?2 WHERE session_id = ?1 \
             RETURNING event_seq",
        )
        .bind(session_id)
        .bind(count)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(last) = last else {
            return Err(StoreError::SessionNotFound(session_id.to_owned()));
        };
        let mut stored = Vec::with_capacity(events.len());
        for ((seq, text), event) in (last - count + 1..).zip(texts).zip(events) {
            sqlx::query(
                "INSERT INTO events (session_id, seq, job_id, event, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .bind(session_id)
            .bind(seq)
            .bind(job_id)
            .bind(text)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            stored.push(StoredEvent {
                session_id: session_id.to_owned(),
                job_id: job_id.map(str::to_owned),
                seq,
                event,
                created_at: now,
            });
        }
        tx.commit().await?;
        Ok(stored)
    }

    async fn events_since(&self, session_id: &str, after_seq: i64) -> Result<Vec<StoredEvent>, StoreError> {
        sqlx::query(concat!(
            "SELECT ",
            event_cols!(),
            " FROM events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq"
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
        sql::last_events_in::<sqlx::Sqlite>(&mut conn, session_name, limit).await
    }

    async fn renew_leases(
        &self,
        worker_id: &str,
        job_ids: &[String],
        lease: Duration,
    ) -> Result<Vec<String>, StoreError> {
        let until = now_millis().saturating_add(millis(lease));
        let mut lost = Vec::new();
        let mut tx = self.pool.begin().await?;
        for job_id in job_ids {
            let held: Option<bool> = sqlx::query_scalar(
                "UPDATE jobs SET lease_until = ?3 WHERE job_id = ?1 AND claimed_by = ?2 \
                 AND status IN ('claimed', 'running') RETURNING cancel_requested",
            )
            .bind(job_id)
            .bind(worker_id)
            .bind(until)
            .fetch_optional(&mut *tx)
            .await?;
            if held != Some(false) {
                lost.push(job_id.clone());
            }
        }
        tx.commit().await?;
        Ok(lost)
    }

    async fn expire_leases(&self) -> Result<Recovery, StoreError> {
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        let expired: Vec<(String, bool)> = sqlx::query_as(
            "SELECT job_id, cancel_requested FROM jobs WHERE status = 'running' AND lease_until < ?1 ORDER BY seq",
        )
        .bind(now)
        .fetch_all(&mut *tx)
        .await?;
        let ends = expired
            .into_iter()
            .map(|(job_id, cancel_requested)| {
                let end = match cancel_requested {
                    true => JobEnd::cancelled("cancelled"),
                    false => JobEnd::failed(LEASE_EXPIRED),
                };
                (job_id, end)
            })
            .collect();
        let mut recovery = Recovery::default();
        sql::settle_in::<sqlx::Sqlite>(&mut tx, ends, now, &mut recovery).await?;
        let requeued = sqlx::query(
            "UPDATE jobs SET status = 'pending', claimed_at = NULL, claimed_by = NULL, lease_until = NULL \
             WHERE status = 'claimed' AND lease_until < ?1 RETURNING job_id",
        )
        .bind(now)
        .fetch_all(&mut *tx)
        .await?;
        recovery.requeued_jobs = strings(&requeued, "jobs", "job_id")?;
        tx.commit().await?;
        Ok(recovery)
    }

    async fn request_cancel(&self, job_id: &str) -> Result<Job, StoreError> {
        let row = sqlx::query(concat!(
            "UPDATE jobs SET cancel_requested = TRUE WHERE job_id = ?1 AND status = 'running' RETURNING ",
            job_cols!()
        ))
        .bind(job_id)
        .fetch_optional(&self.pool)
        .await?;
        match row {
            Some(row) => job_from_row(&row),
            None => self.cancel_job(job_id).await,
        }
    }

    async fn recover_after_crash(&self) -> Result<Recovery, StoreError> {
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        // Take the write lock first: nothing changes between the read and the writes.
        sqlx::query("UPDATE sessions SET status = status WHERE 0")
            .execute(&mut *tx)
            .await?;
        let running = sqlx::query(RUNNING_JOBS)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(job_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let ends = running
            .into_iter()
            .map(|job| (job.job_id, JobEnd::failed(INTERRUPTED)))
            .collect();
        let mut recovery = Recovery::default();
        sql::settle_in::<sqlx::Sqlite>(&mut tx, ends, now, &mut recovery).await?;
        let requeued = sqlx::query(
            "UPDATE jobs SET status = 'pending', claimed_at = NULL, claimed_by = NULL, lease_until = NULL \
             WHERE status = 'claimed' RETURNING job_id, session_name",
        )
        .fetch_all(&mut *tx)
        .await?;
        recovery.requeued_jobs = strings(&requeued, "jobs", "job_id")?;
        // Sessions whose status no job explains (a crash between two writes of older versions).
        let stale = sqlx::query(
            "SELECT session_name FROM sessions WHERE status = 'running' \
             AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.session_name = sessions.session_name \
               AND j.status IN ('pending', 'claimed', 'running'))",
        )
        .fetch_all(&mut *tx)
        .await?;
        for name in strings(&stale, "sessions", "session_name")? {
            sql::refresh_session::<sqlx::Sqlite>(&mut tx, &name, now).await?;
        }
        tx.commit().await?;
        if !recovery.is_empty() {
            tracing::warn!(
                failed_jobs = recovery.failed_jobs.len(),
                requeued_jobs = recovery.requeued_jobs.len(),
                callbacks = recovery.callbacks.len(),
                "recovered after an unclean stop"
            );
        }
        Ok(recovery)
    }
}
