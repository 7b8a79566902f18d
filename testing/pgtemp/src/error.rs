//! The crate's error type.

use std::process::ExitStatus;

/// What went wrong starting a server or creating a database.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// A program was not found in `pg_config --bindir`, `/usr/lib/postgresql/*/bin` or `PATH`.
    #[error(
        "`{name}` not found (looked in `pg_config --bindir`, /usr/lib/postgresql/*/bin and PATH); \
         `apt-get install {package}` provides it"
    )]
    BinaryNotFound {
        /// The program: `initdb`, `postgres`, `psql`, `pg_isready`, or `setpriv` when running
        /// as root.
        name: &'static str,
        /// The Debian package that provides it.
        package: &'static str,
    },
    /// `initdb` ran and failed.
    #[error("initdb failed ({status}): {stderr}")]
    InitdbFailed {
        /// How it exited.
        status: ExitStatus,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// The server was still not accepting connections when the wait ended.
    #[error("the PostgreSQL server did not become ready within {seconds} s; end of its log:\n{log_tail}")]
    NotReady {
        /// How long it was given.
        seconds: u64,
        /// The last lines of the server log.
        log_tail: String,
    },
    /// The server exited while starting (for a reason other than its port being taken, which is
    /// retried with another port).
    #[error("the PostgreSQL server exited while starting ({status}); end of its log:\n{log_tail}")]
    ServerExited {
        /// How it exited.
        status: ExitStatus,
        /// The last lines of the server log.
        log_tail: String,
    },
    /// `psql` ran and failed (the statement failed, or the server refused the connection).
    #[error("psql failed ({status}): {stderr}")]
    PsqlFailed {
        /// How it exited.
        status: ExitStatus,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// A file, directory, process or thread operation failed.
    #[error("{action}")]
    Io {
        /// What was being done, with the path or program involved.
        action: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl PgError {
    /// An [`PgError::Io`] for `action`.
    pub(crate) fn io(action: impl Into<String>) -> impl FnOnce(std::io::Error) -> PgError {
        let action = action.into();
        move |source| PgError::Io { action, source }
    }
}
