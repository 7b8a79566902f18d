//! [`SqliteStore`]: the embedded backend, one `orchestrator.db` file under a data directory,
//! and [`SqliteDialect`], what its SQL does its own way.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool};
use tokio::sync::broadcast;

use super::api::StoreError;
use super::dialect::{Dialect, Sealed};
use super::queries::SqlStore;
use super::sql::{CLAIMABLE, claim_in};
use super::types::{Change, Job};

/// The database file's name inside the data directory.
pub const DB_FILE: &str = "orchestrator.db";

/// How long a statement waits for SQLite's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections in the pool (SQLite has one writer; readers go on in parallel under WAL).
const MAX_CONNECTIONS: u32 = 8;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The SQLite backend of [`Store`](super::Store): WAL, foreign keys on, a busy timeout,
/// migrations at open.
pub type SqliteStore = SqlStore<SqliteDialect>;

/// SQLite's ways: one process owns the database (its waiters are its own), a job is claimed by
/// one `UPDATE` under the single writer lock, and leases read the process's machine clock.
#[derive(Debug, Clone)]
pub struct SqliteDialect {
    path: PathBuf,
}

impl SqlStore<SqliteDialect> {
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
        Ok(Self {
            pool,
            dialect: SqliteDialect { path },
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.dialect.path
    }
}

impl Sealed for SqliteDialect {}

impl Dialect for SqliteDialect {
    type DB = Sqlite;

    const CLOCK: &'static str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

    const FOR_UPDATE: &'static str = "";

    fn texts(param: &str) -> String {
        format!("(SELECT key AS n, value FROM json_each({param}))")
    }

    /// One `UPDATE ... WHERE job_id = (SELECT ...) RETURNING`: the writer lock it takes keeps
    /// everyone else out between the choice and the claim.
    async fn claim(pool: &SqlitePool, worker_id: &str, lease: Duration) -> Result<Option<Job>, StoreError> {
        let mut conn = pool.acquire().await?;
        let claimable = format!("({CLAIMABLE})");
        claim_in::<Sqlite>(&mut conn, Self::CLOCK, &claimable, None, worker_id, lease).await
    }

    async fn notify(_conn: &mut SqliteConnection, _changes: &[Change]) -> Result<(), StoreError> {
        Ok(())
    }

    fn changes(&self) -> Option<broadcast::Receiver<Change>> {
        None
    }

    fn is_shared(&self) -> bool {
        false
    }
}
