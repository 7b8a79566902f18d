//! The two store backends every shared suite runs on: SQLite in a temporary folder, and a
//! fresh database on a throwaway PostgreSQL server this test process starts
//! (`patchbay-pgtemp`). Without PostgreSQL's binaries a test on it is skipped with a note,
//! except in CI (`CI=true`), where it fails.

use std::sync::Arc;

use patchbay_orchestrator::store::{PgStore, SqliteStore, Store};
use tempfile::TempDir;

use super::Fallible;

/// A store backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// A fresh, empty store and what reopens it.
pub(crate) struct TestStore {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) backend: Backend,
    /// `sqlite://DIR` or the PostgreSQL database's URL.
    pub(crate) url: String,
    pub(crate) dir: TempDir,
}

impl TestStore {
    /// A fresh store on `backend`; `None` when PostgreSQL is missing outside CI (the caller
    /// returns: the test is skipped, with a note on stderr).
    pub(crate) async fn open(backend: Backend) -> Fallible<Option<Self>> {
        let dir = tempfile::tempdir()?;
        let url = match backend {
            Backend::Sqlite => format!("sqlite://{}", dir.path().join("data").display()),
            Backend::Postgres => {
                if !patchbay_pgtemp::available() {
                    if std::env::var("CI").is_ok_and(|v| v == "true") {
                        return Err(
                            "PostgreSQL's binaries are missing (CI installs them: apt-get install postgresql)".into(),
                        );
                    }
                    eprintln!("skipped: PostgreSQL's binaries are missing (apt-get install postgresql)");
                    return Ok(None);
                }
                let server = tokio::task::spawn_blocking(patchbay_pgtemp::PgServer::shared).await??;
                tokio::task::spawn_blocking(move || server.create_database("orchestrator")).await??
            }
        };
        let store = open_url(&url).await?;
        Ok(Some(Self {
            store,
            backend,
            url,
            dir,
        }))
    }

    /// A second handle on the same database (another process would open it so).
    pub(crate) async fn reopen(&self) -> Fallible<Arc<dyn Store>> {
        open_url(&self.url).await
    }
}

async fn open_url(url: &str) -> Fallible<Arc<dyn Store>> {
    Ok(match url.strip_prefix("sqlite://") {
        Some(dir) => Arc::new(SqliteStore::open(dir).await?),
        None => Arc::new(PgStore::connect(url).await?),
    })
}

/// Runs each listed `async fn name(backend: Backend) -> TestResult` once per backend, as the
/// tests `sqlite::name` and `postgres::name`.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() -> $crate::common::TestResult {
                    super::$name($crate::common::backend::Backend::Sqlite).await
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() -> $crate::common::TestResult {
                    super::$name($crate::common::backend::Backend::Postgres).await
                }
            )+
        }
    };
}
