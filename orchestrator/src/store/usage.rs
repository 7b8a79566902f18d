//! Usage: the tokens and cost of runs, kept per job and summed per session as runs go
//! ([`Store::add_usage`](super::Store::add_usage)), and per session tree on demand
//! ([`Store::tree_usage`](super::Store::tree_usage)), with the same statements on both backends.
//!
//! A session's tree is every session reachable from its root (the top of its parent chain)
//! through child links: a token budget is spent by the whole tree, whoever in it spends.

use serde::{Deserialize, Serialize};
use sqlx::Row as _;

use super::StoreError;
use super::sql::on_any_backend;

/// Tokens and cost summed over runs (of one job, one session or one tree).
///
/// Token counts follow [`patchbay::Usage`]: `input_tokens` excludes cache reads and writes where
/// the provider splits them, `output_tokens` includes reasoning. `cost_usd` is `None` until a
/// provider reports a cost. In JSON it also carries `total_tokens` ([`Self::total_tokens`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub struct UsageTotals {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens (reasoning included).
    pub output_tokens: u64,
    /// Tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Reasoning tokens, where the provider reports them separately (part of `output_tokens`).
    pub reasoning_tokens: u64,
    /// Cost in US dollars, where the provider reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl UsageTotals {
    /// Every token the model read or wrote: input, cache reads and writes, and output. Token
    /// budgets count this.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
            .saturating_add(self.output_tokens)
    }

    /// Whether nothing was spent (no tokens, no cost).
    pub fn is_empty(&self) -> bool {
        self.total_tokens() == 0 && self.reasoning_tokens == 0 && self.cost_usd.is_none()
    }

    /// Adds `other`, field by field (saturating).
    pub fn add(&mut self, other: &UsageTotals) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// What `self` has beyond `earlier` (a later cumulative total minus an earlier one),
    /// field by field, never below zero.
    pub fn since(&self, earlier: &UsageTotals) -> UsageTotals {
        UsageTotals {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cache_read_tokens: self.cache_read_tokens.saturating_sub(earlier.cache_read_tokens),
            cache_write_tokens: self.cache_write_tokens.saturating_sub(earlier.cache_write_tokens),
            reasoning_tokens: self.reasoning_tokens.saturating_sub(earlier.reasoning_tokens),
            cost_usd: match (self.cost_usd, earlier.cost_usd) {
                (Some(now), Some(before)) if now > before => Some(now - before),
                (Some(_), Some(_)) => None,
                (now, None) => now,
                (None, Some(_)) => None,
            },
        }
    }
}

impl Serialize for UsageTotals {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut out = serializer.serialize_struct("UsageTotals", 7)?;
        out.serialize_field("total_tokens", &self.total_tokens())?;
        out.serialize_field("input_tokens", &self.input_tokens)?;
        out.serialize_field("output_tokens", &self.output_tokens)?;
        out.serialize_field("cache_read_tokens", &self.cache_read_tokens)?;
        out.serialize_field("cache_write_tokens", &self.cache_write_tokens)?;
        out.serialize_field("reasoning_tokens", &self.reasoning_tokens)?;
        match self.cost_usd {
            Some(cost) => out.serialize_field("cost_usd", &cost)?,
            None => out.skip_field("cost_usd")?,
        }
        out.end()
    }
}

impl std::fmt::Display for UsageTotals {
    /// `1234 tokens (input 1000, output 234, cache read 0, cache write 0), $0.0123`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} tokens (input {}, output {}, cache read {}, cache write {})",
            self.total_tokens(),
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens
        )?;
        if let Some(cost) = self.cost_usd {
            write!(f, ", ${cost:.4}")?;
        }
        Ok(())
    }
}

impl From<&patchbay::Usage> for UsageTotals {
    fn from(usage: &patchbay::Usage) -> Self {
        Self {
            input_tokens: usage.input.unwrap_or(0),
            output_tokens: usage.output.unwrap_or(0),
            cache_read_tokens: usage.cache_read.unwrap_or(0),
            cache_write_tokens: usage.cache_write.unwrap_or(0),
            reasoning_tokens: usage.reasoning.unwrap_or(0),
            cost_usd: usage.cost_usd.filter(|c| c.is_finite() && *c >= 0.0),
        }
    }
}

/// The usage columns (of `sessions` and of `jobs`), in [`usage_from_row`]'s order.
macro_rules! usage_cols {
    () => {
        "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd"
    };
}

pub(super) use usage_cols;

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
     SELECT (SELECT name FROM root), \
       CAST(COALESCE(SUM(s.input_tokens), 0) AS BIGINT), CAST(COALESCE(SUM(s.output_tokens), 0) AS BIGINT), \
       CAST(COALESCE(SUM(s.cache_read_tokens), 0) AS BIGINT), CAST(COALESCE(SUM(s.cache_write_tokens), 0) AS BIGINT), \
       CAST(COALESCE(SUM(s.reasoning_tokens), 0) AS BIGINT), SUM(s.cost_usd) \
     FROM sessions s WHERE s.session_name IN (SELECT name FROM tree)";

/// The usage of a session tree: its root's name and the sum over its sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TreeUsage {
    /// The root session of the tree (`None`: the session does not exist).
    pub root_session_name: Option<String>,
    /// The sum over every session of the tree.
    pub usage: UsageTotals,
}

/// Reads the usage columns of a row, starting at column `first`.
pub(super) fn usage_at<R>(row: &R, first: usize) -> Result<UsageTotals, StoreError>
where
    R: sqlx::Row,
    usize: sqlx::ColumnIndex<R>,
    for<'x> i64: sqlx::Decode<'x, R::Database> + sqlx::Type<R::Database>,
    for<'x> f64: sqlx::Decode<'x, R::Database> + sqlx::Type<R::Database>,
{
    let count = |i: usize| -> Result<u64, StoreError> {
        let n: i64 = row.try_get(first + i)?;
        Ok(u64::try_from(n).unwrap_or(0))
    };
    Ok(UsageTotals {
        input_tokens: count(0)?,
        output_tokens: count(1)?,
        cache_read_tokens: count(2)?,
        cache_write_tokens: count(3)?,
        reasoning_tokens: count(4)?,
        cost_usd: row.try_get::<Option<f64>, _>(first + 5)?,
    })
}

/// Reads the usage columns of a session or job row by name.
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
            root_session_name: row.try_get(0usize)?,
            usage: usage_at(&row, 1)?,
        })
    }
}
