//! [`Dialect`]: the few things SQLite and PostgreSQL do differently, behind which
//! [`SqlStore`](super::SqlStore) runs one text of every query on either database.
//!
//! Placeholders are not among them: every statement is written with `$N`, which sqlx's SQLite
//! driver reads as `?N`. What differs is the clock leases are read against, row locks, how a
//! list of texts is bound (a JSON array, read back as rows), how a job is claimed, and how
//! other processes are told of a change.

use std::future::Future;
use std::time::Duration;

use sqlx::{Database, Pool};
use tokio::sync::broadcast;

use super::api::StoreError;
use super::types::{Change, Job};

mod sealed {
    /// Only this crate's dialects ([`super::SqliteDialect`](crate::store::SqliteDialect) and
    /// [`super::PgDialect`](crate::store::PgDialect)) exist.
    pub trait Sealed {}
}

pub(super) use sealed::Sealed;

/// What one database does its own way; the rest of the SQL is shared (see the module docs).
/// Implemented by [`SqliteDialect`](super::SqliteDialect) and [`PgDialect`](super::PgDialect)
/// only.
pub trait Dialect: Sealed + std::fmt::Debug + Send + Sync + 'static {
    /// The sqlx driver.
    type DB: Database;

    /// SQL for now, in unix milliseconds, by the clock leases are set and read against
    /// (PostgreSQL: the database's, so machines with skewed clocks agree).
    const CLOCK: &'static str;

    /// What ends a `SELECT` that locks its rows until the transaction ends (SQLite: nothing,
    /// the transaction holds the database's write lock already).
    const FOR_UPDATE: &'static str;

    /// A table of the texts in the JSON array bound at `param` (say `$4`), with columns `n`
    /// (its position, from 0) and `value` (the text).
    fn texts(param: &str) -> String;

    /// Claims the oldest pending job whose session has no claimed or running job for
    /// `worker_id`, leased for `lease` ([`Store::claim_next_job`](super::Store::claim_next_job)).
    fn claim(
        pool: &Pool<Self::DB>,
        worker_id: &str,
        lease: Duration,
    ) -> impl Future<Output = Result<Option<Job>, StoreError>> + Send;

    /// Announces `changes` to the other processes once the transaction on `conn` commits
    /// (SQLite: nothing to do, its one process wakes its own waiters).
    fn notify(
        conn: &mut <Self::DB as Database>::Connection,
        changes: &[Change],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Other processes' changes ([`Store::changes`](super::Store::changes)).
    fn changes(&self) -> Option<broadcast::Receiver<Change>>;

    /// Whether several processes share the database ([`Store::is_shared`](super::Store::is_shared)).
    fn is_shared(&self) -> bool;
}
