#![doc = include_str!("../README.md")]
#![cfg(unix)]

mod bins;
mod dirs;
mod error;
mod run;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

pub use error::PgError;

use bins::Binaries;
use dirs::ServerDir;
use run::{Postmaster, RunAs, Started};

/// How many times a start is retried when another process takes the picked port first.
const PORT_ATTEMPTS: usize = 3;
/// The longest database name PostgreSQL keeps (longer names are truncated, not refused).
const MAX_NAME_BYTES: usize = 63;

/// Whether `initdb`, `postgres`, `psql` and `pg_isready` were found (and `setpriv`, when this
/// process runs as root), so that [`PgServer::start`] can be tried.
///
/// Tests use it to skip where PostgreSQL is not installed. In CI a missing binary must fail
/// the test instead (CI installs `postgresql`); that decision is the caller's, for example:
///
/// ```no_run
/// if !patchbay_pgtemp::available() {
///     assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "CI must install postgresql");
///     eprintln!("note: PostgreSQL not installed, test skipped");
///     return;
/// }
/// ```
pub fn available() -> bool {
    bins::find().is_ok_and(|bins| run::RunAs::current(bins).is_ok())
}

/// One running PostgreSQL server on 127.0.0.1, in a temporary directory, with trust
/// authentication and durability off (`fsync`, `synchronous_commit`, `full_page_writes`).
///
/// Dropping a server from [`PgServer::start`] shuts it down and removes its directory. The
/// [`PgServer::shared`] one is never dropped: it dies with the process.
#[derive(Debug)]
pub struct PgServer {
    port: u16,
    user: String,
    bin_dir: PathBuf,
    psql: PathBuf,
    dir: ServerDir,
    postmaster: Postmaster,
}

impl PgServer {
    /// The process's shared server, started on the first call (initdb, then the server) and
    /// returned by every later one. Calls from several threads wait for the one start.
    ///
    /// The server is killed when the process ends, however it ends, `kill -9` included: it
    /// runs under `setpriv --pdeathsig=KILL` (util-linux; without `setpriv`, possible only when
    /// not root, it outlives a killed process until a later start's sweep kills it). Its
    /// directory is removed by the first start in a later process.
    /// A failed start is not remembered: the next call tries again.
    pub fn shared() -> Result<&'static PgServer, PgError> {
        static SHARED: OnceLock<PgServer> = OnceLock::new();
        static STARTING: Mutex<()> = Mutex::new(());
        if let Some(server) = SHARED.get() {
            return Ok(server);
        }
        let _starting = STARTING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(server) = SHARED.get() {
            return Ok(server);
        }
        let server = PgServer::start()?;
        Ok(SHARED.get_or_init(|| server))
    }

    /// Starts a private server: a new cluster (initdb) in a new directory, and the server on a
    /// free port. Takes about a second; prefer [`PgServer::shared`] plus
    /// [`PgServer::create_database`] per test.
    ///
    /// Directories left by processes that no longer run are removed first (and their
    /// servers killed, their shared memory segments released).
    pub fn start() -> Result<PgServer, PgError> {
        let bins = bins::find()?;
        let run_as = RunAs::current(bins)?;
        let dir = dirs::create(run_as.owner())?;
        let started = Self::start_in(bins, &run_as, &dir);
        match started {
            Ok((port, postmaster)) => Ok(PgServer {
                port,
                user: run_as.user,
                bin_dir: bins.dir.clone(),
                psql: bins.psql.clone(),
                dir,
                postmaster,
            }),
            Err(error) => {
                let _ = fs::remove_dir_all(&dir.root);
                Err(error)
            }
        }
    }

    fn start_in(bins: &Binaries, run_as: &RunAs, dir: &ServerDir) -> Result<(u16, Postmaster), PgError> {
        run::initdb(bins, run_as, dir)?;
        let mut attempt = 1;
        loop {
            let port = run::free_port()?;
            let mut postmaster = run::postgres(bins, run_as, dir, port)?;
            match run::wait_ready(bins, &run_as.user, port, &mut postmaster, &dir.log)? {
                Started::Ready => return Ok((port, postmaster)),
                Started::PortTaken { .. } if attempt < PORT_ATTEMPTS => attempt += 1,
                Started::PortTaken { status, log_tail } => {
                    return Err(PgError::ServerExited { status, log_tail });
                }
            }
        }
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The postmaster's process id.
    pub fn pid(&self) -> u32 {
        self.postmaster.pid()
    }

    /// The superuser's name: `postgres` when this process runs as root, else the current
    /// user's name. No password is needed (trust authentication).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The directory of the server's binaries (`psql`, `pg_dump`, `pgbench`...), as found by
    /// `pg_config --bindir`, under `/usr/lib/postgresql/*/bin` or on `PATH`.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// `postgres://USER@127.0.0.1:PORT/postgres`: the superuser on the `postgres` database.
    pub fn admin_url(&self) -> String {
        self.url("postgres")
    }

    /// Creates a new empty database and returns its URL
    /// (`postgres://USER@127.0.0.1:PORT/NAME`). The name is `prefix`, made a plain lowercase
    /// identifier (other characters become `_`), then a per-process counter and the process
    /// id: unique across the tests of a process and across processes sharing a server.
    pub fn create_database(&self, prefix: &str) -> Result<String, PgError> {
        let name = database_name(prefix);
        let output = run::client(&self.psql)
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1"])
            .args(["-p", &self.port.to_string(), "-U", &self.user, "-d", "postgres"])
            .args(["-c", &format!("CREATE DATABASE \"{name}\"")])
            .output()
            .map_err(PgError::io(format!("running {}", self.psql.display())))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
            return Err(PgError::PsqlFailed {
                status: output.status,
                stderr,
            });
        }
        Ok(self.url(&name))
    }

    fn url(&self, database: &str) -> String {
        format!(
            "postgres://{}@127.0.0.1:{}/{database}",
            percent_encode(&self.user),
            self.port
        )
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.postmaster.stop();
        let _ = fs::remove_dir_all(&self.dir.root);
    }
}

/// `prefix` as a lowercase identifier, then `_<counter>_<pid>`, within 63 bytes.
fn database_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let suffix = format!("_{}_{}", NEXT.fetch_add(1, Ordering::Relaxed), std::process::id());
    let mut name: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(MAX_NAME_BYTES - suffix.len())
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_') {
        name.insert_str(0, "db");
        name.truncate(MAX_NAME_BYTES - suffix.len());
    }
    name + &suffix
}

/// Percent-encodes what may not appear raw in a URL's user part.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => char::from(byte).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_name_is_a_plain_identifier_within_63_bytes() {
        let name = database_name("Agent Runs-Bench");
        assert!(name.starts_with("agent_runs_bench_"), "{name}");
        assert!(name.ends_with(&format!("_{}", std::process::id())), "{name}");
        let long = database_name(&"x".repeat(100));
        assert_eq!(long.len(), MAX_NAME_BYTES, "{long}");
        assert!(database_name("9lives").starts_with("db9lives_"));
        assert!(database_name("").starts_with("db_"));
        assert_ne!(database_name("same"), database_name("same"));
    }

    #[test]
    fn user_is_percent_encoded_in_urls() {
        assert_eq!(percent_encode("ann.o-k_1~"), "ann.o-k_1~");
        assert_eq!(percent_encode("a b@c"), "a%20b%40c");
    }
}
