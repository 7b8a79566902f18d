//! Decoding rows into the data model, shared by both backends (the columns and their types are
//! the same in SQLite and PostgreSQL).

use std::str::FromStr;

use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Row, Type};

use super::api::StoreError;
use super::totals::UsageTotals;
use super::types::{Job, Page, Session, StoredEvent, UnknownValue};

/// The columns of a session, in [`session_from_row`]'s order.
macro_rules! session_cols {
    () => {
        concat!(
            "session_id, session_name, agent_name, project_dir, parent_session_name, status, \
         created_at, updated_at, finished_at, last_result, provider_session_id, conversation, ",
            super::rows::usage_cols!()
        )
    };
}

/// The columns of a session in a listing: no conversation (read as `null`).
macro_rules! session_list_cols {
    () => {
        concat!(
            "session_id, session_name, agent_name, project_dir, parent_session_name, status, \
         created_at, updated_at, finished_at, last_result, provider_session_id, 'null' AS conversation, ",
            super::rows::usage_cols!()
        )
    };
}

/// The columns of a job.
macro_rules! job_cols {
    () => {
        concat!("job_id, kind, session_name, agent_name, prompt, project_dir, parent_session_name, \
         callback, status, error, result, claimed_by, created_at, claimed_at, started_at, finished_at, lease_until, ", super::rows::usage_cols!())
    };
}

/// The columns of an event.
macro_rules! event_cols {
    () => {
        "session_id, job_id, seq, event, created_at"
    };
}

/// The usage columns (of `sessions` and of `jobs`), in [`usage_from_row`]'s order.
macro_rules! usage_cols {
    () => {
        "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd"
    };
}

pub(super) use usage_cols;

pub(super) use {event_cols, job_cols, session_cols, session_list_cols};

pub(super) fn bad_row(
    table: &'static str,
    column: &'static str,
    source: impl std::error::Error + Send + Sync + 'static,
) -> StoreError {
    StoreError::BadRow {
        table,
        column,
        source: Box::new(source),
    }
}

fn get<'r, R, T>(row: &'r R, table: &'static str, column: &'static str) -> Result<T, StoreError>
where
    R: Row,
    for<'n> &'n str: ColumnIndex<R>,
    T: Decode<'r, R::Database> + Type<R::Database>,
{
    row.try_get(column).map_err(|e| bad_row(table, column, e))
}

fn get_enum<R, T>(row: &R, table: &'static str, column: &'static str) -> Result<T, StoreError>
where
    R: Row,
    for<'n> &'n str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    T: FromStr<Err = UnknownValue>,
{
    let text: String = get(row, table, column)?;
    text.parse().map_err(|e| bad_row(table, column, e))
}

fn get_json<R>(row: &R, table: &'static str, column: &'static str) -> Result<Value, StoreError>
where
    R: Row,
    for<'n> &'n str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    let text: String = get(row, table, column)?;
    serde_json::from_str(&text).map_err(|e| bad_row(table, column, e))
}

pub(super) fn session_from_row<R>(row: &R) -> Result<Session, StoreError>
where
    R: Row,
    for<'n> &'n str: ColumnIndex<R>,
    for<'x> String: Decode<'x, R::Database> + Type<R::Database>,
    for<'x> i64: Decode<'x, R::Database> + Type<R::Database>,
    for<'x> bool: Decode<'x, R::Database> + Type<R::Database>,
    for<'x> f64: Decode<'x, R::Database> + Type<R::Database>,
{
    const T: &str = "sessions";
    Ok(Session {
        session_id: get(row, T, "session_id")?,
        session_name: get(row, T, "session_name")?,
        agent_name: get(row, T, "agent_name")?,
        project_dir: get(row, T, "project_dir")?,
        parent_session_name: get(row, T, "parent_session_name")?,
        status: get_enum(row, T, "status")?,
        created_at: get(row, T, "created_at")?,
        updated_at: get(row, T, "updated_at")?,
        finished_at: get(row, T, "finished_at")?,
        last_result: get(row, T, "last_result")?,
        provider_session_id: get(row, T, "provider_session_id")?,
        conversation: get_json(row, T, "conversation")?,
        usage: usage_from_row(row)?,
    })
}

pub(super) fn job_from_row<R>(row: &R) -> Result<Job, StoreError>
where
    R: Row,
    for<'n> &'n str: ColumnIndex<R>,
    for<'x> String: Decode<'x, R::Database> + Type<R::Database>,
    for<'x> i64: Decode<'x, R::Database> + Type<R::Database>,
    for<'x> bool: Decode<'x, R::Database> + Type<R::Database>,
    for<'x> f64: Decode<'x, R::Database> + Type<R::Database>,
{
    const T: &str = "jobs";
    Ok(Job {
        job_id: get(row, T, "job_id")?,
        kind: get_enum(row, T, "kind")?,
        session_name: get(row, T, "session_name")?,
        agent_name: get(row, T, "agent_name")?,
        prompt: get(row, T, "prompt")?,
        project_dir: get(row, T, "project_dir")?,
        parent_session_name: get(row, T, "parent_session_name")?,
        callback: get(row, T, "callback")?,
        status: get_enum(row, T, "status")?,
        error: get(row, T, "error")?,
        result: get(row, T, "result")?,
        claimed_by: get(row, T, "claimed_by")?,
        created_at: get(row, T, "created_at")?,
        claimed_at: get(row, T, "claimed_at")?,
        started_at: get(row, T, "started_at")?,
        finished_at: get(row, T, "finished_at")?,
        lease_until: get(row, T, "lease_until")?,
        usage: usage_from_row(row)?,
    })
}

pub(super) fn event_from_row<R>(row: &R) -> Result<StoredEvent, StoreError>
where
    R: Row,
    for<'n> &'n str: ColumnIndex<R>,
    for<'x> String: Decode<'x, R::Database> + Type<R::Database>,
    for<'x> i64: Decode<'x, R::Database> + Type<R::Database>,
    for<'x> bool: Decode<'x, R::Database> + Type<R::Database>,
{
    const T: &str = "events";
    Ok(StoredEvent {
        session_id: get(row, T, "session_id")?,
        job_id: get(row, T, "job_id")?,
        seq: get(row, T, "seq")?,
        event: get_json(row, T, "event")?,
        created_at: get(row, T, "created_at")?,
    })
}

/// The texts of one column of `rows`, sorted.
pub(super) fn strings<R>(rows: &[R], table: &'static str, column: &'static str) -> Result<Vec<String>, StoreError>
where
    R: Row,
    for<'n> &'n str: ColumnIndex<R>,
    for<'x> String: Decode<'x, R::Database> + Type<R::Database>,
    for<'x> i64: Decode<'x, R::Database> + Type<R::Database>,
    for<'x> bool: Decode<'x, R::Database> + Type<R::Database>,
{
    let mut out = rows
        .iter()
        .map(|row| get::<R, String>(row, table, column))
        .collect::<Result<Vec<_>, _>>()?;
    out.sort();
    Ok(out)
}

pub(super) fn to_json_text(value: &Value, what: &'static str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode { what, source })
}

/// `LIMIT` and `OFFSET` of a page.
pub(super) fn page_bounds(page: Page) -> (i64, i64) {
    (i64::from(page.limit), i64::try_from(page.offset).unwrap_or(i64::MAX))
}

/// Reads the usage columns of a row by name (a session's, a job's, a tree's sum).
pub(super) fn usage_from_row<R>(row: &R) -> Result<UsageTotals, StoreError>
where
    R: sqlx::Row,
    for<'n> &'n str: sqlx::ColumnIndex<R>,
    for<'x> i64: sqlx::Decode<'x, R::Database> + sqlx::Type<R::Database>,
    for<'x> f64: sqlx::Decode<'x, R::Database> + sqlx::Type<R::Database>,
{
    let count = |column: &str| -> Result<u64, StoreError> {
        let n: i64 = row.try_get(column)?;
        Ok(u64::try_from(n).unwrap_or(0))
    };
    Ok(UsageTotals {
        input_tokens: count("input_tokens")?,
        output_tokens: count("output_tokens")?,
        cache_read_tokens: count("cache_read_tokens")?,
        cache_write_tokens: count("cache_write_tokens")?,
        reasoning_tokens: count("reasoning_tokens")?,
        cost_usd: row.try_get::<Option<f64>, _>("cost_usd")?,
    })
}
