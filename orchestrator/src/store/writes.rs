//! Session and event writes in the caller's transaction, shared by their own operations
//! ([`Store::update_session`](super::Store::update_session),
//! [`Store::append_events`](super::Store::append_events)) and by a job's end, which stores
//! the run's conversation, result and last event with the job's end or not at all.

use serde_json::Value;
use sqlx::Row as _;

use super::api::StoreError;
use super::rows::{session_cols, session_from_row, to_json_text};
use super::sql::on_any_backend;
use super::types::{Session, SessionUpdate, UnixMillis};

/// Applies a [`SessionUpdate`] to session `$1` (`COALESCE`: an absent field keeps its value).
const UPDATE_SESSION: &str = concat!(
    "UPDATE sessions SET status = COALESCE($2, status), \
     last_result = COALESCE($3, last_result), \
     provider_session_id = COALESCE($4, provider_session_id), \
     conversation = COALESCE($5, conversation), \
     parent_session_name = COALESCE($6, parent_session_name), \
     finished_at = CASE WHEN CAST($2 AS TEXT) IS NULL THEN finished_at ELSE $7 END, \
     updated_at = $8 WHERE session_id = $1 RETURNING ",
    session_cols!()
);

/// Takes `$2` sequence numbers of session `$1`'s events; returns the last and the name.
const COUNT_EVENTS: &str = "UPDATE sessions SET event_seq = event_seq + $2 WHERE session_id = $1 \
                            RETURNING event_seq, session_name";

on_any_backend! {
    /// Applies `update` to session `session_id`; `SessionNotFound` when there is none.
    pub(super) async fn update_session_in<DB>(
        conn: &mut DB::Connection,
        session_id: &str,
        update: &SessionUpdate,
        now: UnixMillis,
    ) -> Result<Session, StoreError> {
        let conversation = match &update.conversation {
            Some(value) => Some(to_json_text(value, "the conversation")?),
            None => None,
        };
        let finished_at = update.status.filter(|s| s.is_terminal()).map(|_| now);
        let row = sqlx::query::<DB>(UPDATE_SESSION)
            .bind(session_id)
            .bind(update.status.map(|s| s.as_str()))
            .bind(update.last_result.as_deref())
            .bind(update.provider_session_id.as_deref())
            .bind(conversation.as_deref())
            .bind(update.parent_session_name.as_deref())
            .bind(finished_at)
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?;
        match row {
            Some(row) => session_from_row(&row),
            None => Err(StoreError::SessionNotFound(session_id.to_owned())),
        }
    }
}

/// A batch of events as one JSON array of their texts, and how many there are.
pub(super) fn batch(events: &[Value]) -> Result<(String, i64), StoreError> {
    let texts = events
        .iter()
        .map(|e| to_json_text(e, "an event"))
        .collect::<Result<Vec<_>, _>>()?;
    let count = i64::try_from(texts.len()).unwrap_or(i64::MAX);
    let batch = serde_json::to_string(&texts).map_err(|source| StoreError::Encode {
        what: "a batch of events",
        source,
    })?;
    Ok((batch, count))
}

on_any_backend! {
    /// Appends a [`batch`] of `count` events (of job `job_id`) to session `session_id` with
    /// `insert`, the dialect's statement (see `SqlStore::append_events`). Returns the first
    /// event's sequence number and the session's name; `SessionNotFound` when there is none.
    pub(super) async fn append_events_in<DB>(
        conn: &mut DB::Connection,
        insert: &str,
        session_id: &str,
        job_id: Option<&str>,
        batch: (&str, i64),
        now: UnixMillis,
    ) -> Result<(i64, String), StoreError> {
        let (texts, count) = batch;
        let counted = sqlx::query::<DB>(COUNT_EVENTS)
            .bind(session_id)
            .bind(count)
            .fetch_optional(&mut *conn)
            .await?;
        let Some(counted) = counted else {
            return Err(StoreError::SessionNotFound(session_id.to_owned()));
        };
        let (last, session_name): (i64, String) = (counted.try_get(0usize)?, counted.try_get(1usize)?);
        let first = last - count + 1;
        sqlx::query::<DB>(insert)
            .bind(session_id)
            .bind(first)
            .bind(job_id)
            .bind(texts)
            .bind(now)
            .execute(&mut *conn)
            .await?;
        Ok((first, session_name))
    }
}

on_any_backend! {
    /// The id of session `name`, if there is one.
    pub(super) async fn session_id_in<DB>(conn: &mut DB::Connection, name: &str) -> Result<Option<String>, StoreError> {
        let row = sqlx::query::<DB>("SELECT session_id FROM sessions WHERE session_name = $1")
            .bind(name)
            .fetch_optional(&mut *conn)
            .await?;
        Ok(row.map(|row| row.try_get(0usize)).transpose()?)
    }
}
