//! Statements and steps several operations share, generic over the sqlx database
//! (`on_any_backend!`), with `$N` placeholders (sqlx's SQLite driver reads them as `?N`): what a
//! job's end changes (the job, its session's status, the parent's callback), creating
//! sessions and jobs, listings, claiming, and the recovery of a store one process owns.
//!
//! # A session's status comes from its jobs
//! The job a session's answers are about, its *current job*, is the first of: its claimed or
//! running job; its oldest pending job; its newest job that ran; its newest job. The session
//! is `running` while it has a job pending, claimed or running (`pending` when none of its jobs
//! has run yet), and otherwise `finished`, `failed` or `cancelled` as its current job ended. So
//! a cancelled queued resume does not hide the run still going, and a failed or cancelled run
//! is never reported with an earlier run's result.
//!
//! Every transaction that changes a session's jobs first takes the session row's lock
//! ([`LOCK_SESSION`]), then changes the jobs, then recomputes the status
//! ([`REFRESH_SESSION`]): on PostgreSQL the recompute is a statement of its own after the
//! lock, so it sees every job change committed before the lock was granted (a single
//! statement would read an older snapshot under `READ COMMITTED`). Locks are always taken
//! session first, then jobs, and a child's session before its parent's.

use sqlx::Row as _;

use std::time::Duration;

use super::api::{INTERRUPTED, StoreError, millis};
use super::rows::{event_from_row, job_cols, job_from_row, session_cols, session_from_row, strings};
use super::types::{
    Change, Job, JobEnd, JobEnded, NewJob, NewSession, Recovery, Session, SessionCursor, SessionFilter, StoredEvent,
    UnixMillis, now_millis,
};

/// The order that puts a session's current job first (see the module docs).
macro_rules! current_order {
    ($j:literal) => {
        concat!(
            "CASE WHEN ",
            $j,
            ".status IN ('claimed', 'running') THEN 0 WHEN ",
            $j,
            ".status = 'pending' THEN 1 WHEN ",
            $j,
            ".started_at IS NOT NULL THEN 2 ELSE 3 END, \
             CASE WHEN ",
            $j,
            ".status = 'pending' THEN ",
            $j,
            ".seq ELSE -",
            $j,
            ".seq END"
        )
    };
}

/// Takes the lock of session `$1` (PostgreSQL: its row; SQLite: the database's write lock).
pub(super) const LOCK_SESSION: &str = "UPDATE sessions SET status = status WHERE session_name = $1";

/// Takes the lock of the session of job `$1`.
pub(super) const LOCK_SESSION_OF_JOB: &str = "UPDATE sessions SET status = status \
     WHERE session_name = (SELECT session_name FROM jobs WHERE job_id = $1)";

/// The current job of session `$1`.
const CURRENT_JOB: &str = concat!(
    "SELECT ",
    super::rows::job_cols!(),
    " FROM jobs j WHERE j.session_name = $1 ORDER BY ",
    current_order!("j"),
    " LIMIT 1"
);

/// Recomputes the status (and `finished_at`) of session `$1` from its jobs at time `$2`.
pub(super) const REFRESH_SESSION: &str = concat!(
    "UPDATE sessions SET status = (SELECT CASE \
       WHEN c.status IN ('claimed', 'running') THEN 'running' \
       WHEN c.status = 'pending' THEN CASE WHEN EXISTS (SELECT 1 FROM jobs r \
         WHERE r.session_name = $1 AND r.started_at IS NOT NULL) THEN 'running' ELSE 'pending' END \
       WHEN c.status = 'completed' THEN 'finished' ELSE c.status END \
     FROM jobs c WHERE c.session_name = $1 ORDER BY ",
    current_order!("c"),
    " LIMIT 1), finished_at = (SELECT CASE WHEN c.status IN ('completed', 'failed', 'cancelled') \
       THEN c.finished_at ELSE NULL END FROM jobs c WHERE c.session_name = $1 ORDER BY ",
    current_order!("c"),
    " LIMIT 1), updated_at = $2 \
     WHERE session_name = $1 AND EXISTS (SELECT 1 FROM jobs e WHERE e.session_name = $1)"
);

/// Ends job `$1` (if it is not over yet) as `$2` with error `$3` and result `$4` at `$5`.
pub(super) const END_JOB: &str = concat!(
    "UPDATE jobs SET status = $2, error = $3, result = $4, finished_at = $5 \
     WHERE job_id = $1 AND status IN ('pending', 'claimed', 'running') RETURNING ",
    super::rows::job_cols!()
);

/// Queues the callback `$1` with prompt `$2` at `$3` for the parent session `$4`: a resume on
/// the parent's own blueprint and folder, asking for no callback of its own.
pub(super) const QUEUE_CALLBACK: &str = concat!(
    "INSERT INTO jobs (job_id, kind, session_name, agent_name, prompt, project_dir, \
     parent_session_name, callback, status, created_at) \
     SELECT $1, 'resume_session', s.session_name, s.agent_name, $2, s.project_dir, \
     s.parent_session_name, FALSE, 'pending', $3 FROM sessions s WHERE s.session_name = $4 RETURNING ",
    super::rows::job_cols!()
);

/// The oldest pending job whose session has no claimed or running job (queue order, one job
/// at a time per session).
pub(super) const CLAIMABLE: &str = "SELECT j.job_id FROM jobs j WHERE j.status = 'pending' \
     AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.session_name = j.session_name \
       AND r.status IN ('claimed', 'running')) \
     ORDER BY j.seq LIMIT 1";

/// How many sessions have the parent `$1`, and how many of them are pending or running.
const CHILDREN: &str = "SELECT COUNT(*), COALESCE(SUM(CASE WHEN status IN ('pending', 'running') \
     THEN 1 ELSE 0 END), 0) FROM sessions WHERE parent_session_name = $1";

/// The filter of a session listing: status `$1`, parent `$2`, blueprint `$3` (each when not
/// null), after the cursor `$4`, `$5` (when `$4` is not null).
macro_rules! session_filter {
    () => {
        " WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR parent_session_name = $2) \
         AND ($3 IS NULL OR agent_name = $3)"
    };
}

/// A keyset page of sessions: [`session_filter!`], after the cursor `$4`, `$5`, at most `$6`.
const FIND_SESSIONS: &str = concat!(
    "SELECT ",
    super::rows::session_list_cols!(),
    " FROM sessions",
    session_filter!(),
    // A row comparison, so both databases seek the (created_at, session_name) index instead of
    // reading every row before the cursor (an `OR` of the two columns did, on PostgreSQL).
    " AND (created_at, session_name) > (COALESCE($4, -1), COALESCE($5, '')) \
     ORDER BY created_at, session_name LIMIT $6"
);

/// How many sessions match [`session_filter!`].
const COUNT_SESSIONS: &str = concat!("SELECT COUNT(*) FROM sessions", session_filter!());

/// The names of session `$root` and of every session below it, as the table `subtree`
/// (`UNION` drops repeats, so a cycle in the parent links ends the walk).
macro_rules! subtree {
    ($root:literal) => {
        concat!(
            "WITH RECURSIVE subtree(subtree_name) AS (SELECT session_name FROM sessions WHERE session_name = ",
            $root,
            " UNION SELECT s.session_name FROM sessions s JOIN subtree t ON s.parent_session_name = t.subtree_name) "
        )
    };
}

/// [`FIND_SESSIONS`] within the subtree of session `$7`.
const FIND_IN_SUBTREE: &str = concat!(
    subtree!("$7"),
    "SELECT ",
    super::rows::session_list_cols!(),
    " FROM sessions",
    session_filter!(),
    " AND session_name IN (SELECT subtree_name FROM subtree) \
     AND (created_at, session_name) > (COALESCE($4, -1), COALESCE($5, '')) \
     ORDER BY created_at, session_name LIMIT $6"
);

/// [`COUNT_SESSIONS`] within the subtree of session `$4`.
const COUNT_IN_SUBTREE: &str = concat!(
    subtree!("$4"),
    "SELECT COUNT(*) FROM sessions",
    session_filter!(),
    " AND session_name IN (SELECT subtree_name FROM subtree)"
);

/// The running jobs of sessions (all of them), oldest first: what a crash interrupted.
pub(super) const RUNNING_JOBS: &str = concat!(
    "SELECT ",
    super::rows::job_cols!(),
    " FROM jobs WHERE status = 'running' ORDER BY seq"
);

/// Puts claimed jobs back in the queue (the caller adds conditions and what to return).
pub(super) const REQUEUE: &str = "UPDATE jobs SET status = 'pending', claimed_at = NULL, claimed_by = NULL, \
     lease_until = NULL WHERE status = 'claimed'";

/// The last `$2` events of session `$1` (by name), newest first.
const LAST_EVENTS: &str = concat!(
    "SELECT ",
    super::rows::event_cols!(),
    " FROM events WHERE session_id = (SELECT session_id FROM sessions WHERE session_name = $1) \
     ORDER BY seq DESC LIMIT $2"
);

/// Declares a function generic over the backend (`$db`) with the bounds every shared statement
/// needs (SQLite and PostgreSQL meet them).
macro_rules! on_any_backend {
    ($(#[$meta:meta])* $vis:vis async fn $name:ident<$db:ident>($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$meta])*
        $vis async fn $name<$db>($($arg: $ty),*) -> $ret
        where
            $db: sqlx::Database,
            for<'e> &'e mut $db::Connection: sqlx::Executor<'e, Database = $db>,
            for<'q> $db::Arguments<'q>: sqlx::IntoArguments<'q, $db>,
            for<'n> &'n str: sqlx::ColumnIndex<$db::Row>,
            for<'q> &'q str: sqlx::Encode<'q, $db> + sqlx::Type<$db>,
            for<'q> Option<&'q str>: sqlx::Encode<'q, $db> + sqlx::Type<$db>,
            for<'q> i64: sqlx::Encode<'q, $db> + sqlx::Type<$db>,
            for<'q> Option<i64>: sqlx::Encode<'q, $db> + sqlx::Type<$db>,
            for<'q> bool: sqlx::Encode<'q, $db> + sqlx::Type<$db>,
            usize: sqlx::ColumnIndex<$db::Row>,
            for<'x> String: sqlx::Decode<'x, $db> + sqlx::Type<$db>,
            for<'x> i64: sqlx::Decode<'x, $db> + sqlx::Type<$db>,
            for<'x> bool: sqlx::Decode<'x, $db> + sqlx::Type<$db>,
            for<'x> f64: sqlx::Decode<'x, $db> + sqlx::Type<$db>,
            for<'q> Option<f64>: sqlx::Encode<'q, $db> + sqlx::Type<$db>,
            $body
    };
}

pub(super) use on_any_backend;

on_any_backend! {
    /// Recomputes session `name`'s status from its jobs (the caller holds its lock).
    pub(super) async fn refresh_session<DB>(conn: &mut DB::Connection, name: &str, now: UnixMillis) -> Result<(), StoreError> {
        sqlx::query::<DB>(REFRESH_SESSION).bind(name).bind(now).execute(&mut *conn).await?;
        Ok(())
    }
}

on_any_backend! {
    /// Ends job `job_id` as `end` in the caller's transaction: takes its session's lock, ends
    /// the job (`None` when it had already ended or does not exist), recomputes the session's
    /// status and, when the job asked for a callback and its parent is a session here, queues
    /// the parent's resume (and recomputes the parent's status). Exactly once per job: only the
    /// transaction that ends the job queues its callback.
    pub(super) async fn end_job_in<DB>(
        conn: &mut DB::Connection,
        job_id: &str,
        end: &JobEnd,
        now: UnixMillis,
    ) -> Result<Option<JobEnded>, StoreError> {
        sqlx::query::<DB>(LOCK_SESSION_OF_JOB).bind(job_id).execute(&mut *conn).await?;
        let row = sqlx::query::<DB>(END_JOB)
            .bind(job_id)
            .bind(end.status.as_str())
            .bind(end.error.as_deref())
            .bind(end.result.as_deref())
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let job = job_from_row(&row)?;
        refresh_session::<DB>(&mut *conn, &job.session_name, now).await?;
        let callback = match (job.callback, job.parent_session_name.as_deref()) {
            (true, Some(parent)) => {
                sqlx::query::<DB>(LOCK_SESSION).bind(parent).execute(&mut *conn).await?;
                let prompt = super::callback::prompt(&job.session_name, end);
                let row = sqlx::query::<DB>(QUEUE_CALLBACK)
                    .bind(uuid::Uuid::new_v4().to_string().as_str())
                    .bind(prompt.as_str())
                    .bind(now)
                    .bind(parent)
                    .fetch_optional(&mut *conn)
                    .await?;
                match row {
                    Some(row) => {
                        refresh_session::<DB>(&mut *conn, parent, now).await?;
                        Some(job_from_row(&row)?)
                    }
                    None => {
                        tracing::warn!(session = %job.session_name, parent, "callback: the parent session is gone");
                        None
                    }
                }
            }
            _ => None,
        };
        Ok(Some(JobEnded { job, callback }))
    }
}

/// What to announce once a job ended: its session, the parent its callback resumes, and the
/// queue (the session's next job, or the callback, can be claimed now).
pub(super) fn ended_changes(ended: &JobEnded) -> Vec<Change> {
    let mut changes = vec![Change::Session(ended.job.session_name.clone()), Change::Queued];
    if let Some(callback) = &ended.callback {
        changes.push(Change::Session(callback.session_name.clone()));
    }
    changes
}

on_any_backend! {
    /// Ends each of `ends` (job id and how it ends) in the caller's transaction, noting what
    /// changed in `recovery`; jobs that had ended already are skipped. Returns what to announce.
    pub(super) async fn settle_in<DB>(
        conn: &mut DB::Connection,
        ends: Vec<(String, JobEnd)>,
        now: UnixMillis,
        recovery: &mut Recovery,
    ) -> Result<Vec<Change>, StoreError> {
        let mut changes = Vec::new();
        for (job_id, end) in ends {
            if let Some(ended) = end_job_in::<DB>(&mut *conn, &job_id, &end, now).await? {
                changes.extend(ended_changes(&ended));
                recovery.failed_jobs.push(ended.job.job_id);
                recovery.failed_sessions.push(ended.job.session_name);
                recovery.callbacks.extend(ended.callback.map(|c| c.job_id));
            }
        }
        recovery.failed_jobs.sort();
        recovery.failed_sessions.sort();
        recovery.failed_sessions.dedup();
        recovery.callbacks.sort();
        Ok(changes)
    }
}

on_any_backend! {
    /// [`Store::find_sessions`](super::Store::find_sessions) on one connection.
    pub(super) async fn find_sessions_in<DB>(
        conn: &mut DB::Connection,
        filter: &SessionFilter,
        after: Option<&SessionCursor>,
        limit: u32,
    ) -> Result<(Vec<Session>, u64), StoreError> {
        let status = filter.status.map(|s| s.as_str());
        // The listing without `within` keeps its own statement (and plan).
        let (find, count) = match filter.within {
            Some(_) => (FIND_IN_SUBTREE, COUNT_IN_SUBTREE),
            None => (FIND_SESSIONS, COUNT_SESSIONS),
        };
        let mut rows = sqlx::query::<DB>(find)
            .bind(status)
            .bind(filter.parent_session_name.as_deref())
            .bind(filter.agent_name.as_deref())
            .bind(after.map(|a| a.created_at))
            .bind(after.map(|a| a.session_name.as_str()))
            .bind(i64::from(limit));
        let mut counted = sqlx::query::<DB>(count)
            .bind(status)
            .bind(filter.parent_session_name.as_deref())
            .bind(filter.agent_name.as_deref());
        if let Some(root) = filter.within.as_deref() {
            rows = rows.bind(root);
            counted = counted.bind(root);
        }
        let rows = rows.fetch_all(&mut *conn).await?;
        let count = counted.fetch_one(&mut *conn).await?;
        let total: i64 = count.try_get(0usize)?;
        let sessions = rows.iter().map(session_from_row).collect::<Result<Vec<_>, _>>()?;
        Ok((sessions, u64::try_from(total).unwrap_or(0)))
    }
}

on_any_backend! {
    /// [`Store::children`](super::Store::children) on one connection.
    pub(super) async fn children_in<DB>(conn: &mut DB::Connection, parent: &str) -> Result<(u64, u64), StoreError> {
        let row = sqlx::query::<DB>(CHILDREN).bind(parent).fetch_one(&mut *conn).await?;
        let (all, open): (i64, i64) = (row.try_get(0usize)?, row.try_get(1usize)?);
        Ok((u64::try_from(all).unwrap_or(0), u64::try_from(open).unwrap_or(0)))
    }
}

on_any_backend! {
    /// [`Store::current_job`](super::Store::current_job) on one connection.
    pub(super) async fn current_job_in<DB>(conn: &mut DB::Connection, session_name: &str) -> Result<Option<Job>, StoreError> {
        sqlx::query::<DB>(CURRENT_JOB)
            .bind(session_name)
            .fetch_optional(&mut *conn)
            .await?
            .as_ref()
            .map(job_from_row)
            .transpose()
    }
}

on_any_backend! {
    /// [`Store::last_events`](super::Store::last_events) on one connection.
    pub(super) async fn last_events_in<DB>(
        conn: &mut DB::Connection,
        session_name: &str,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = sqlx::query::<DB>(LAST_EVENTS)
            .bind(session_name)
            .bind(i64::from(limit))
            .fetch_all(&mut *conn)
            .await?;
        let mut events = rows.iter().map(event_from_row).collect::<Result<Vec<_>, _>>()?;
        events.reverse();
        Ok(events)
    }
}

on_any_backend! {
    /// Creates a `pending` session in the caller's transaction.
    pub(super) async fn insert_session_in<DB>(conn: &mut DB::Connection, new: NewSession, now: UnixMillis) -> Result<Session, StoreError> {
        let statement = concat!(
            "INSERT INTO sessions (session_id, session_name, agent_name, project_dir, \
             parent_session_name, status, created_at, updated_at, conversation) \
             VALUES ($1, $2, $3, $4, $5, 'pending', $6, $6, '[]') RETURNING ",
            session_cols!()
        );
        let row = sqlx::query::<DB>(statement)
            .bind(uuid::Uuid::new_v4().to_string().as_str())
            .bind(new.session_name.as_str())
            .bind(new.agent_name.as_str())
            .bind(new.project_dir.as_str())
            .bind(new.parent_session_name.as_deref())
            .bind(now)
            .fetch_one(&mut *conn)
            .await
            .map_err(|err| match &err {
                sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::SessionExists(new.session_name.clone()),
                _ => StoreError::Database(err),
            })?;
        session_from_row(&row)
    }
}

on_any_backend! {
    /// Queues a job in the caller's transaction and recomputes its session's status (a queued
    /// resume makes it `running`).
    pub(super) async fn insert_job_in<DB>(conn: &mut DB::Connection, new: NewJob, now: UnixMillis) -> Result<Job, StoreError> {
        sqlx::query::<DB>(LOCK_SESSION).bind(new.session_name.as_str()).execute(&mut *conn).await?;
        let statement = concat!(
            "INSERT INTO jobs (job_id, kind, session_name, agent_name, prompt, project_dir, \
             parent_session_name, callback, status, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9) RETURNING ",
            job_cols!()
        );
        let row = sqlx::query::<DB>(statement)
            .bind(uuid::Uuid::new_v4().to_string().as_str())
            .bind(new.kind.as_str())
            .bind(new.session_name.as_str())
            .bind(new.agent_name.as_str())
            .bind(new.prompt.as_str())
            .bind(new.project_dir.as_str())
            .bind(new.parent_session_name.as_deref())
            .bind(new.callback)
            .bind(now)
            .fetch_one(&mut *conn)
            .await?;
        let job = job_from_row(&row)?;
        refresh_session::<DB>(&mut *conn, &job.session_name, now).await?;
        Ok(job)
    }
}

on_any_backend! {
    /// Cancels the pending and claimed jobs of deleted sessions (`name = None`: of every
    /// session) and asks their running jobs to stop; returns what to announce.
    pub(super) async fn cancel_session_jobs_in<DB>(conn: &mut DB::Connection, name: Option<&str>, now: UnixMillis) -> Result<Vec<Change>, StoreError> {
        sqlx::query::<DB>(
            "UPDATE jobs SET status = 'cancelled', error = 'session deleted', finished_at = $1 \
             WHERE status IN ('pending', 'claimed') AND (CAST($2 AS TEXT) IS NULL OR session_name = $2)",
        )
        .bind(now)
        .bind(name)
        .execute(&mut *conn)
        .await?;
        let running = sqlx::query::<DB>(
            "UPDATE jobs SET cancel_requested = TRUE WHERE status = 'running' \
             AND (CAST($1 AS TEXT) IS NULL OR session_name = $1) RETURNING job_id",
        )
        .bind(name)
        .fetch_all(&mut *conn)
        .await?;
        Ok(strings(&running, "jobs", "job_id")?.into_iter().map(Change::Cancel).collect())
    }
}

on_any_backend! {
    /// Claims the job `job` for `worker_id`, leased for `lease` past `clock` (the dialect's
    /// lease clock), if it is still pending. `job` is an SQL expression: [`CLAIMABLE`] in
    /// parentheses, or `$4` with the job's id in `job_id`.
    pub(super) async fn claim_in<DB>(
        conn: &mut DB::Connection,
        clock: &str,
        job: &str,
        job_id: Option<&str>,
        worker_id: &str,
        lease: Duration,
    ) -> Result<Option<Job>, StoreError> {
        let statement = format!(
            "UPDATE jobs SET status = 'claimed', claimed_at = $1, claimed_by = $2, lease_until = {clock} + $3 \
             WHERE job_id = {job} AND status = 'pending' RETURNING {}",
            job_cols!()
        );
        let mut claim = sqlx::query::<DB>(&statement).bind(now_millis()).bind(worker_id).bind(millis(lease));
        if let Some(job_id) = job_id {
            claim = claim.bind(job_id);
        }
        claim.fetch_optional(&mut *conn).await?.as_ref().map(job_from_row).transpose()
    }
}

on_any_backend! {
    /// [`Store::get_job`](super::Store::get_job) on one connection.
    pub(super) async fn get_job_in<DB>(conn: &mut DB::Connection, job_id: &str) -> Result<Option<Job>, StoreError> {
        let statement = concat!("SELECT ", job_cols!(), " FROM jobs WHERE job_id = $1");
        let row = sqlx::query::<DB>(statement).bind(job_id).fetch_optional(&mut *conn).await?;
        row.as_ref().map(job_from_row).transpose()
    }
}

on_any_backend! {
    /// The recovery of a store one process owns, in the caller's transaction: every running job
    /// failed as [`INTERRUPTED`], every claimed one queued again
    /// ([`Store::recover_after_crash`](super::Store::recover_after_crash)).
    pub(super) async fn recover_in<DB>(conn: &mut DB::Connection, now: UnixMillis) -> Result<Recovery, StoreError> {
        // Take the write lock first: nothing changes between the read and the writes.
        sqlx::query::<DB>("UPDATE sessions SET status = status WHERE FALSE").execute(&mut *conn).await?;
        let running = sqlx::query::<DB>(RUNNING_JOBS).fetch_all(&mut *conn).await?;
        let ends = running
            .iter()
            .map(|row| Ok((job_from_row(row)?.job_id, JobEnd::failed(INTERRUPTED))))
            .collect::<Result<_, StoreError>>()?;
        let mut recovery = Recovery::default();
        // Nobody else shares the store: nobody to announce the changes to.
        settle_in::<DB>(&mut *conn, ends, now, &mut recovery).await?;
        let requeue = format!("{REQUEUE} RETURNING job_id");
        let requeued = sqlx::query::<DB>(&requeue).fetch_all(&mut *conn).await?;
        recovery.requeued_jobs = strings(&requeued, "jobs", "job_id")?;
        // Sessions whose status no job explains (a crash between two writes of older versions).
        let stale = sqlx::query::<DB>(
            "SELECT session_name FROM sessions WHERE status = 'running' \
             AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.session_name = sessions.session_name \
               AND j.status IN ('pending', 'claimed', 'running'))",
        )
        .fetch_all(&mut *conn)
        .await?;
        for name in strings(&stale, "sessions", "session_name")? {
            refresh_session::<DB>(&mut *conn, &name, now).await?;
        }
        Ok(recovery)
    }
}
