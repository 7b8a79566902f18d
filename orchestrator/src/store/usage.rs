//! Usage: the tokens and cost of runs, kept per job and summed per session as runs go
//! ([`Store::add_usage`](super::Store::add_usage)), and per session tree on demand
//! ([`Store::tree_usage`](super::Store::tree_usage)), with the same statements on both backends.
//!
//! A session's tree is every session reachable from its root (the top of its parent chain)
//! through child links: a token budget is spent by the whole tree, whoever in it spends.

use sqlx::Row as _;

use super::api::StoreError;
use super::rows::usage_from_row;
use super::sql::on_any_backend;
use super::totals::{TreeUsage, UsageTotals};

/// Adds `$2..$7` to the usage of the session of job `$1` (taken first: locks go session
/// first, then jobs).
const ADD_TO_SESSION: &str = "UPDATE sessions SET input_tokens = input_tokens + $2, \
     output_tokens = output_tokens + $3, cache_read_tokens = cache_read_tokens + $4, \
     cache_write_tokens = cache_write_tokens + $5, reasoning_tokens = reasoning_tokens + $6, \
     cost_usd = CASE WHEN $7 IS NULL THEN cost_usd ELSE COALESCE(cost_usd, 0) + $7 END \
     WHERE session_name = (SELECT session_name FROM jobs WHERE job_id = $1)";

/// Adds `$2..$7` to the usage of job `$1`.
const ADD_TO_JOB: &str = "UPDATE jobs SET input_tokens = input_tokens + $2, \
     output_tokens = output_tokens + $3, cache_read_tokens = cache_read_tokens + $4, \
     cache_write_tokens = cache_write_tokens + $5, reasoning_tokens = reasoning_tokens + $6, \
     cost_usd = CASE WHEN $7 IS NULL THEN cost_usd ELSE COALESCE(cost_usd, 0) + $7 END \
     WHERE job_id = $1";

/// The root of session `$1`'s tree (the top of its parent chain that exists here) and the
/// usage of every session under it. `UNION` (not `UNION ALL`) ends a walk even if a cycle
/// slipped in.
const TREE_USAGE: &str = "WITH RECURSIVE \
       up(name, parent) AS (\
         SELECT session_name, parent_session_name FROM sessions WHERE session_name = $1 \
         UNION SELECT s.session_name, s.parent_session_name FROM sessions s JOIN up ON s.session_name = up.parent), \
       root(name) AS (\
         SELECT name FROM up WHERE parent IS NULL \
           OR NOT EXISTS (SELECT 1 FROM sessions p WHERE p.session_name = up.parent) LIMIT 1), \
       tree(name) AS (\
         SELECT name FROM root \
         UNION SELECT s.session_name FROM sessions s JOIN tree ON s.parent_session_name = tree.name) \
     SELECT (SELECT name FROM root) AS root_session_name, \
       CAST(COALESCE(SUM(s.input_tokens), 0) AS BIGINT) AS input_tokens, \
       CAST(COALESCE(SUM(s.output_tokens), 0) AS BIGINT) AS output_tokens, \
       CAST(COALESCE(SUM(s.cache_read_tokens), 0) AS BIGINT) AS cache_read_tokens, \
       CAST(COALESCE(SUM(s.cache_write_tokens), 0) AS BIGINT) AS cache_write_tokens, \
       CAST(COALESCE(SUM(s.reasoning_tokens), 0) AS BIGINT) AS reasoning_tokens, \
       SUM(s.cost_usd) AS cost_usd \
     FROM sessions s WHERE s.session_name IN (SELECT name FROM tree)";

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

on_any_backend! {
    /// [`Store::add_usage`](super::Store::add_usage) in the caller's transaction.
    pub(super) async fn add_usage_in<DB>(conn: &mut DB::Connection, job_id: &str, delta: &UsageTotals) -> Result<(), StoreError> {
        for statement in [ADD_TO_SESSION, ADD_TO_JOB] {
            sqlx::query::<DB>(statement)
                .bind(job_id)
                .bind(signed(delta.input_tokens))
                .bind(signed(delta.output_tokens))
                .bind(signed(delta.cache_read_tokens))
                .bind(signed(delta.cache_write_tokens))
                .bind(signed(delta.reasoning_tokens))
                .bind(delta.cost_usd)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }
}

on_any_backend! {
    /// [`Store::tree_usage`](super::Store::tree_usage) on one connection.
    pub(super) async fn tree_usage_in<DB>(conn: &mut DB::Connection, session_name: &str) -> Result<TreeUsage, StoreError> {
        let row = sqlx::query::<DB>(TREE_USAGE).bind(session_name).fetch_one(&mut *conn).await?;
        Ok(TreeUsage {
            root_session_name: row.try_get("root_session_name")?,
            usage: usage_from_row(&row)?,
        })
    }
}
