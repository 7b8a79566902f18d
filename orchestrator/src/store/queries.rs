//! [`SqlStore`]: the one query layer, [`Store`] over an sqlx pool of either database. Every
//! operation is written here once; its [`Dialect`] supplies what the two databases do
//! differently (see [`super::dialect`]).

use std::time::Duration;

use serde_json::Value;
use sqlx::{Database, Pool, Row as _};
use tokio::sync::broadcast;

use super::api::{LEASE_EXPIRED, Store, StoreError, millis};
use super::dialect::Dialect;
use super::rows::{
    event_cols, event_from_row, job_cols, job_from_row, page_bounds, session_cols, session_from_row, strings,
};
use super::sql::{self, LOCK_SESSION_OF_JOB, ended_changes};
use super::totals::{TreeUsage, UsageTotals};
use super::types::{
    Change, Job, JobEnd, JobEnded, JobStatus, NewJob, NewSession, Page, Recovery, Session, SessionCursor,
    SessionFilter, SessionUpdate, StoredEvent, now_millis,
};
use super::usage;
use super::writes;
use patchbay::async_trait;

/// A [`Store`] on the database of the dialect `D`: [`SqliteStore`](super::SqliteStore) or
/// [`PgStore`](super::PgStore). Cheap to clone.
#[derive(Clone)]
pub struct SqlStore<D: Dialect> {
    pub(super) pool: Pool<D::DB>,
    pub(super) dialect: D,
}

impl<D: Dialect> std::fmt::Debug for SqlStore<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The pool's options may hold a password: only its size is shown.
        f.debug_struct("SqlStore")
            .field("dialect", &self.dialect)
            .field("connections", &self.pool.size())
            .finish()
    }
}

impl<D: Dialect> SqlStore<D> {
    /// The statement that inserts a batch of events (`$4`, see [`writes::batch`]) from
    /// sequence number `$2 + 1` on.
    fn insert_events() -> String {
        format!(
            "INSERT INTO events (session_id, seq, job_id, event, created_at) \
             SELECT $1, $2 + batch.n, $3, batch.value, $5 FROM {} AS batch",
            D::texts("$4")
        )
    }

    /// The connection pool, for backend-specific work (tests, maintenance).
    pub fn pool(&self) -> &Pool<D::DB> {
        &self.pool
    }

    /// Waits for every connection to close (on SQLite, a clean shutdown checkpoints the WAL).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[async_trait]
impl<D: Dialect> Store for SqlStore<D>
where
    // What every shared statement needs of the database (as `on_any_backend!` in `sql`).
    for<'e> &'e mut <D::DB as Database>::Connection: sqlx::Executor<'e, Database = D::DB>,
    for<'q> <D::DB as Database>::Arguments<'q>: sqlx::IntoArguments<'q, D::DB>,
    for<'n> &'n str: sqlx::ColumnIndex<<D::DB as Database>::Row>,
    usize: sqlx::ColumnIndex<<D::DB as Database>::Row>,
    for<'q> &'q str: sqlx::Encode<'q, D::DB> + sqlx::Type<D::DB>,
    for<'q> Option<&'q str>: sqlx::Encode<'q, D::DB> + sqlx::Type<D::DB>,
    for<'q> i64: sqlx::Encode<'q, D::DB> + sqlx::Type<D::DB>,
    for<'q> Option<i64>: sqlx::Encode<'q, D::DB> + sqlx::Type<D::DB>,
    for<'q> bool: sqlx::Encode<'q, D::DB> + sqlx::Type<D::DB>,
    for<'q> Option<f64>: sqlx::Encode<'q, D::DB> + sqlx::Type<D::DB>,
    for<'x> String: sqlx::Decode<'x, D::DB> + sqlx::Type<D::DB>,
    for<'x> i64: sqlx::Decode<'x, D::DB> + sqlx::Type<D::DB>,
    for<'x> bool: sqlx::Decode<'x, D::DB> + sqlx::Type<D::DB>,
    for<'x> f64: sqlx::Decode<'x, D::DB> + sqlx::Type<D::DB>,
{
    async fn create_session(&self, new: NewSession) -> Result<Session, StoreError> {
        let mut tx = self.pool.begin().await?;
        let session = sql::insert_session_in::<D::DB>(&mut tx, new, now_millis()).await?;
        D::notify(&mut tx, &[Change::Session(session.session_name.clone())]).await?;
        tx.commit().await?;
        Ok(session)
    }

    async fn create_session_with_job(&self, session: NewSession, job: NewJob) -> Result<(Session, Job), StoreError> {
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        let session = sql::insert_session_in::<D::DB>(&mut tx, session, now).await?;
        let job = sql::insert_job_in::<D::DB>(&mut tx, job, now).await?;
        D::notify(
            &mut tx,
            &[Change::Session(session.session_name.clone()), Change::Queued],
        )
        .await?;
        tx.commit().await?;
        Ok((session, job))
    }

    async fn get_session(&self, session_id: &str) -> Result<Option<Session>, StoreError> {
        let statement = concat!("SELECT ", session_cols!(), " FROM sessions WHERE session_id = $1");
        let row = sqlx::query(statement)
            .bind(session_id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(session_from_row).transpose()
    }

    async fn get_session_by_name(&self, name: &str) -> Result<Option<Session>, StoreError> {
        let statement = concat!("SELECT ", session_cols!(), " FROM sessions WHERE session_name = $1");
        let row = sqlx::query(statement).bind(name).fetch_optional(&self.pool).await?;
        row.as_ref().map(session_from_row).transpose()
    }

    async fn list_sessions(&self, page: Page) -> Result<Vec<Session>, StoreError> {
        let (limit, offset) = page_bounds(page);
        let statement = concat!(
            "SELECT ",
            session_cols!(),
            " FROM sessions ORDER BY created_at, session_name LIMIT $1 OFFSET $2"
        );
        let rows = sqlx::query(statement)
            .bind(limit)
            .bind(offset)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(session_from_row).collect()
    }

    async fn find_sessions(
        &self,
        filter: &SessionFilter,
        after: Option<&SessionCursor>,
        limit: u32,
    ) -> Result<(Vec<Session>, u64), StoreError> {
        let mut conn = self.pool.acquire().await?;
        sql::find_sessions_in::<D::DB>(&mut conn, filter, after, limit).await
    }

    async fn update_session(&self, session_id: &str, update: SessionUpdate) -> Result<Session, StoreError> {
        // No notification: a session's changes that waiters care about come with its jobs'
        // (a run's end is stored with its job's end, whose change wakes them).
        let mut conn = self.pool.acquire().await?;
        writes::update_session_in::<D::DB>(&mut conn, session_id, &update, now_millis()).await
    }

    async fn delete_session(&self, session_id: &str) -> Result<Session, StoreError> {
        let mut tx = self.pool.begin().await?;
        let statement = concat!("DELETE FROM sessions WHERE session_id = $1 RETURNING ", session_cols!());
        let row = sqlx::query(statement).bind(session_id).fetch_optional(&mut *tx).await?;
        let Some(row) = row else {
            return Err(StoreError::SessionNotFound(session_id.to_owned()));
        };
        let session = session_from_row(&row)?;
        let name = session.session_name.clone();
        let mut changes = sql::cancel_session_jobs_in::<D::DB>(&mut tx, Some(&name), now_millis()).await?;
        changes.extend([Change::Session(name.clone()), Change::Events(name)]);
        D::notify(&mut tx, &changes).await?;
        tx.commit().await?;
        Ok(session)
    }

    async fn delete_all_sessions(&self) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let deleted = sqlx::query("DELETE FROM sessions RETURNING session_name")
            .fetch_all(&mut *tx)
            .await?;
        let names = strings(&deleted, "sessions", "session_name")?;
        let mut changes = sql::cancel_session_jobs_in::<D::DB>(&mut tx, None, now_millis()).await?;
        changes.extend(
            names
                .iter()
                .flat_map(|name| [Change::Session(name.clone()), Change::Events(name.clone())]),
        );
        D::notify(&mut tx, &changes).await?;
        tx.commit().await?;
        Ok(names.len() as u64)
    }

    async fn enqueue_job(&self, new: NewJob) -> Result<Job, StoreError> {
        let mut tx = self.pool.begin().await?;
        let job = sql::insert_job_in::<D::DB>(&mut tx, new, now_millis()).await?;
        D::notify(&mut tx, &[Change::Session(job.session_name.clone()), Change::Queued]).await?;
        tx.commit().await?;
        Ok(job)
    }

    async fn get_job(&self, job_id: &str) -> Result<Option<Job>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        sql::get_job_in::<D::DB>(&mut conn, job_id).await
    }

    async fn list_jobs(&self, session_name: Option<&str>, page: Page) -> Result<Vec<Job>, StoreError> {
        let (limit, offset) = page_bounds(page);
        let statement = concat!(
            "SELECT ",
            job_cols!(),
            " FROM jobs WHERE (CAST($1 AS TEXT) IS NULL OR session_name = $1) ORDER BY seq LIMIT $2 OFFSET $3"
        );
        let rows = sqlx::query(statement)
            .bind(session_name)
            .bind(limit)
            .bind(offset)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(job_from_row).collect()
    }

    async fn claim_next_job(&self, worker_id: &str, lease: Duration) -> Result<Option<Job>, StoreError> {
        D::claim(&self.pool, worker_id, lease).await
    }

    async fn mark_job_running(&self, job_id: &str, worker_id: &str) -> Result<Job, StoreError> {
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        sqlx::query(LOCK_SESSION_OF_JOB).bind(job_id).execute(&mut *tx).await?;
        let statement = concat!(
            "UPDATE jobs SET status = 'running', started_at = $2 \
             WHERE job_id = $1 AND status = 'claimed' AND claimed_by = $3 RETURNING ",
            job_cols!()
        );
        let row = sqlx::query(statement)
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
        sql::refresh_session::<D::DB>(&mut tx, &job.session_name, now).await?;
        D::notify(&mut tx, &[Change::Session(job.session_name.clone())]).await?;
        tx.commit().await?;
        Ok(job)
    }

    async fn end_job(&self, job_id: &str, end: JobEnd) -> Result<JobEnded, StoreError> {
        if !end.status.is_terminal() {
            return Err(self.transition_error(job_id, end.status).await);
        }
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        let ended = sql::end_job_in::<D::DB>(&mut tx, job_id, &end, now).await?;
        let Some(ended) = ended else {
            drop(tx);
            return Err(self.transition_error(job_id, end.status).await);
        };
        let mut changes = ended_changes(&ended);
        // The run's end (conversation, result, last event) commits with the job's end.
        let session_name = ended.job.session_name.as_str();
        if (end.session.is_some() || !end.events.is_empty())
            && let Some(session_id) = writes::session_id_in::<D::DB>(&mut tx, session_name).await?
        {
            if let Some(update) = &end.session {
                writes::update_session_in::<D::DB>(&mut tx, &session_id, update, now).await?;
            }
            if !end.events.is_empty() {
                let (batch, count) = writes::batch(&end.events)?;
                let insert = Self::insert_events();
                let batch = (batch.as_str(), count);
                writes::append_events_in::<D::DB>(&mut tx, &insert, &session_id, Some(job_id), batch, now).await?;
                changes.push(Change::Events(session_name.to_owned()));
            }
        }
        D::notify(&mut tx, &changes).await?;
        tx.commit().await?;
        Ok(ended)
    }

    async fn children(&self, parent: &str) -> Result<(u64, u64), StoreError> {
        let mut conn = self.pool.acquire().await?;
        sql::children_in::<D::DB>(&mut conn, parent).await
    }

    async fn current_job(&self, session_name: &str) -> Result<Option<Job>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        sql::current_job_in::<D::DB>(&mut conn, session_name).await
    }

    async fn add_usage(&self, job_id: &str, delta: &UsageTotals) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        usage::add_usage_in::<D::DB>(&mut tx, job_id, delta).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn tree_usage(&self, session_name: &str) -> Result<TreeUsage, StoreError> {
        let mut conn = self.pool.acquire().await?;
        usage::tree_usage_in::<D::DB>(&mut conn, session_name).await
    }

    async fn append_events(
        &self,
        session_id: &str,
        job_id: Option<&str>,
        events: Vec<Value>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        // The batch goes in one statement, as a JSON array of the events' texts.
        let (batch, count) = writes::batch(&events)?;
        let now = now_millis();
        let mut tx = self.pool.begin().await?;
        let insert = Self::insert_events();
        let (first, session_name) =
            writes::append_events_in::<D::DB>(&mut tx, &insert, session_id, job_id, (batch.as_str(), count), now)
                .await?;
        D::notify(&mut tx, &[Change::Events(session_name)]).await?;
        tx.commit().await?;
        Ok((first..)
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
        let statement = concat!(
            "SELECT ",
            event_cols!(),
            " FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq"
        );
        let rows = sqlx::query(statement)
            .bind(session_id)
            .bind(after_seq)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(event_from_row).collect()
    }

    async fn last_events(&self, session_name: &str, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        sql::last_events_in::<D::DB>(&mut conn, session_name, limit).await
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
        let ids = serde_json::to_string(job_ids).map_err(|source| StoreError::Encode {
            what: "job ids",
            source,
        })?;
        let statement = format!(
            "UPDATE jobs SET lease_until = {} + $3 WHERE job_id IN (SELECT ids.value FROM {} AS ids) \
             AND claimed_by = $2 AND status IN ('claimed', 'running') AND NOT cancel_requested RETURNING job_id",
            D::CLOCK,
            D::texts("$1")
        );
        let rows = sqlx::query(&statement)
            .bind(ids.as_str())
            .bind(worker_id)
            .bind(millis(lease))
            .fetch_all(&self.pool)
            .await?;
        let held = strings(&rows, "jobs", "job_id")?;
        Ok(job_ids.iter().filter(|id| !held.contains(id)).cloned().collect())
    }

    async fn expire_leases(&self) -> Result<Recovery, StoreError> {
        let now = now_millis();
        // Candidates first, without locks; each is checked again under its session's lock
        // (sessions before jobs, as every transaction here), so a lease renewed in between is
        // kept and two processes settling at once settle each job once.
        let candidates = format!(
            "SELECT job_id FROM jobs WHERE status = 'running' AND lease_until < {} ORDER BY seq",
            D::CLOCK
        );
        let candidates = sqlx::query(&candidates).fetch_all(&self.pool).await?;
        let recheck = format!(
            "SELECT cancel_requested FROM jobs WHERE job_id = $1 AND status = 'running' AND lease_until < {}{}",
            D::CLOCK,
            D::FOR_UPDATE
        );
        let mut tx = self.pool.begin().await?;
        let mut ends = Vec::new();
        for row in candidates {
            let job_id: String = row.try_get(0usize)?;
            sqlx::query(LOCK_SESSION_OF_JOB)
                .bind(job_id.as_str())
                .execute(&mut *tx)
                .await?;
            let expired = sqlx::query(&recheck)
                .bind(job_id.as_str())
                .fetch_optional(&mut *tx)
                .await?;
            let end = match expired.map(|row| row.try_get::<bool, _>(0usize)).transpose()? {
                None => continue,
                Some(true) => JobEnd::cancelled("cancelled"),
                Some(false) => JobEnd::failed(LEASE_EXPIRED),
            };
            ends.push((job_id, end));
        }
        let mut recovery = Recovery::default();
        let mut changes = sql::settle_in::<D::DB>(&mut tx, ends, now, &mut recovery).await?;
        let requeue = format!(
            "{} AND lease_until < {} RETURNING job_id, session_name",
            sql::REQUEUE,
            D::CLOCK
        );
        let requeued = sqlx::query(&requeue).fetch_all(&mut *tx).await?;
        recovery.requeued_jobs = strings(&requeued, "jobs", "job_id")?;
        if recovery.is_empty() {
            return Ok(recovery);
        }
        changes.push(Change::Queued);
        changes.extend(
            strings(&requeued, "jobs", "session_name")?
                .into_iter()
                .map(Change::Session),
        );
        D::notify(&mut tx, &changes).await?;
        tx.commit().await?;
        Ok(recovery)
    }

    async fn request_cancel(&self, job_id: &str) -> Result<Job, StoreError> {
        let mut tx = self.pool.begin().await?;
        let statement = concat!(
            "UPDATE jobs SET cancel_requested = TRUE WHERE job_id = $1 AND status = 'running' RETURNING ",
            job_cols!()
        );
        let row = sqlx::query(statement).bind(job_id).fetch_optional(&mut *tx).await?;
        let Some(row) = row else {
            drop(tx);
            return self.cancel_job(job_id).await;
        };
        let job = job_from_row(&row)?;
        D::notify(&mut tx, &[Change::Cancel(job.job_id.clone())]).await?;
        tx.commit().await?;
        Ok(job)
    }

    async fn recover_after_crash(&self) -> Result<Recovery, StoreError> {
        if self.dialect.is_shared() {
            // Other processes' runs are alive: only what their leases say is settled.
            return self.expire_leases().await;
        }
        let mut tx = self.pool.begin().await?;
        let recovery = sql::recover_in::<D::DB>(&mut tx, now_millis()).await?;
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

    fn changes(&self) -> Option<broadcast::Receiver<Change>> {
        self.dialect.changes()
    }

    fn is_shared(&self) -> bool {
        self.dialect.is_shared()
    }
}

impl<D: Dialect> SqlStore<D> {
    /// Why `job_id` could not become `to`: missing, or in a state that forbids it.
    async fn transition_error(&self, job_id: &str, to: JobStatus) -> StoreError
    where
        Self: Store,
    {
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
