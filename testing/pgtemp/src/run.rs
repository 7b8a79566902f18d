//! Running `initdb` and `postgres` as the right user, with the parent-death signal set.

use std::fs::{self, File};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use crate::bins::Binaries;
use crate::dirs::ServerDir;
use crate::error::PgError;

/// How long a server gets to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How often readiness is checked.
const POLL: Duration = Duration::from_millis(50);
/// How long a stopped server gets to shut down before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How many log lines an error carries.
const LOG_TAIL_LINES: usize = 20;

/// Who the server runs as, and how its processes are started.
#[derive(Debug)]
pub(crate) struct RunAs {
    /// The OS user the server runs as, also its superuser's name.
    pub(crate) user: String,
    /// Whether this process is root and the server runs as `postgres` (which refuses root).
    switch_user: bool,
    setpriv: Option<PathBuf>,
}

impl RunAs {
    /// `postgres` through `setpriv` when this process is root, else the current user.
    pub(crate) fn current(bins: &Binaries) -> Result<RunAs, PgError> {
        if is_root() {
            let setpriv = bins.setpriv.clone().ok_or(PgError::BinaryNotFound {
                name: "setpriv",
                package: "util-linux",
            })?;
            return Ok(RunAs {
                user: "postgres".to_owned(),
                switch_user: true,
                setpriv: Some(setpriv),
            });
        }
        Ok(RunAs {
            user: current_user_name(),
            switch_user: false,
            setpriv: bins.setpriv.clone(),
        })
    }

    /// The user that must own the server's directories, when not this process's user.
    pub(crate) fn owner(&self) -> Option<&str> {
        self.switch_user.then_some(self.user.as_str())
    }

    /// A command running `program` as the server's user, killed when the spawning thread ends
    /// (when `setpriv` exists). `setpriv` sets the signal after switching user (a switch
    /// clears it) and then execs, so the server keeps the spawning thread as its parent.
    fn command(&self, program: &Path) -> Command {
        let Some(setpriv) = &self.setpriv else {
            return Command::new(program);
        };
        let mut command = Command::new(setpriv);
        if self.switch_user {
            command.args(["--reuid=postgres", "--regid=postgres", "--init-groups"]);
        }
        command.args(["--pdeathsig=KILL", "--"]).arg(program);
        command
    }
}

/// Whether the effective uid is 0 (`/proc/self/status`: `Uid: real effective saved fs`).
fn is_root() -> bool {
    fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|uids| uids.split_whitespace().nth(1))
            == Some("0")
    })
}

fn current_user_name() -> String {
    let from_id = Command::new("id")
        .arg("-un")
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned());
    from_id
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "postgres".to_owned())
}

/// A client program (`psql`, `pg_isready`) with the environment that could redirect or refuse
/// its connection removed: the address, port and user always come from the arguments.
pub(crate) fn client(program: &Path) -> Command {
    let mut command = Command::new(program);
    for name in ["PGSSLMODE", "PGOPTIONS", "PGSERVICE", "PGSERVICEFILE", "PGREQUIRESSL"] {
        command.env_remove(name);
    }
    command.env("PGCONNECT_TIMEOUT", "10").stdin(Stdio::null());
    command
}

/// `initdb` into `dir.data`: trust authentication, UTF-8, C locale, no fsync.
pub(crate) fn initdb(bins: &Binaries, run_as: &RunAs, dir: &ServerDir) -> Result<(), PgError> {
    let output = run_as
        .command(&bins.initdb)
        .arg("-D")
        .arg(&dir.data)
        .args(["-U", &run_as.user, "--auth=trust", "--no-sync", "--no-instructions"])
        .args(["-E", "UTF8", "--locale=C"])
        .current_dir(&dir.root)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .map_err(PgError::io(format!("running {}", bins.initdb.display())))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    Err(PgError::InitdbFailed {
        status: output.status,
        stderr,
    })
}

/// A free TCP port on 127.0.0.1 (bound, read, released: another process may take it before
/// the server binds it, which [`Started::PortTaken`] reports).
pub(crate) fn free_port() -> Result<u16, PgError> {
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(PgError::io("binding 127.0.0.1:0 to pick a port"))?;
    let addr = listener.local_addr().map_err(PgError::io("reading the picked port"))?;
    Ok(addr.port())
}

/// Starts `postgres` on `port`, its output going to `dir.log` (truncated).
pub(crate) fn postgres(bins: &Binaries, run_as: &RunAs, dir: &ServerDir, port: u16) -> Result<Postmaster, PgError> {
    let log = File::create(&dir.log).map_err(PgError::io(format!("creating {}", dir.log.display())))?;
    let log_err = log
        .try_clone()
        .map_err(PgError::io("duplicating the log file handle"))?;
    let mut command = run_as.command(&bins.postgres);
    command
        .arg("-D")
        .arg(&dir.data)
        .args(["-p", &port.to_string(), "-k"])
        .arg(&dir.sock)
        .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
        .args(["-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
        .args(["-c", "max_connections=200"])
        .current_dir(&dir.root)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    Postmaster::spawn(command).map_err(PgError::io(format!("starting {}", bins.postgres.display())))
}

/// How a start attempt ended, when not in an error.
#[derive(Debug)]
pub(crate) enum Started {
    /// The server accepts connections.
    Ready,
    /// The server exited because another process bound the port first.
    PortTaken {
        /// How it exited.
        status: ExitStatus,
        /// The end of its log.
        log_tail: String,
    },
}

/// Polls until the server accepts connections, exits, or [`READY_TIMEOUT`] passes.
pub(crate) fn wait_ready(
    bins: &Binaries,
    user: &str,
    port: u16,
    postmaster: &mut Postmaster,
    log: &Path,
) -> Result<Started, PgError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let exited = postmaster
            .child
            .try_wait()
            .map_err(PgError::io("waiting for postgres"))?;
        if let Some(status) = exited {
            let log = fs::read_to_string(log).unwrap_or_default();
            let log_tail = tail(&log);
            if log.contains("Address already in use") {
                return Ok(Started::PortTaken { status, log_tail });
            }
            return Err(PgError::ServerExited { status, log_tail });
        }
        if is_ready(bins, user, port)? {
            return Ok(Started::Ready);
        }
        if Instant::now() >= deadline {
            let log = fs::read_to_string(log).unwrap_or_default();
            return Err(PgError::NotReady {
                seconds: READY_TIMEOUT.as_secs(),
                log_tail: tail(&log),
            });
        }
        thread::sleep(POLL);
    }
}

/// The port accepts a TCP connection and `pg_isready` says the server accepts sessions.
fn is_ready(bins: &Binaries, user: &str, port: u16) -> Result<bool, PgError> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    if TcpStream::connect_timeout(&addr, POLL).is_err() {
        return Ok(false);
    }
    let status = client(&bins.pg_isready)
        .args([
            "-q",
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-U",
            user,
            "-d",
            "postgres",
        ])
        .args(["-t", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(PgError::io(format!("running {}", bins.pg_isready.display())))?;
    Ok(status.success())
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// A running `postgres`, spawned from a thread of its own that lives until the server is
/// stopped: the parent-death signal fires when the spawning *thread* ends, so spawning from
/// the caller's thread (a test's thread, say) would kill the server when that test returns.
#[derive(Debug)]
pub(crate) struct Postmaster {
    child: Child,
    keeper: Thread,
    released: Arc<AtomicBool>,
}

impl Postmaster {
    fn spawn(mut command: Command) -> io::Result<Postmaster> {
        let (sender, receiver) = mpsc::channel();
        let released = Arc::new(AtomicBool::new(false));
        let keeper_released = Arc::clone(&released);
        let keeper = thread::Builder::new()
            .name("pgtemp-postmaster".to_owned())
            .spawn(move || {
                let spawned = command.spawn();
                let keep = spawned.is_ok();
                let _ = sender.send(spawned);
                while keep && !keeper_released.load(Ordering::Acquire) {
                    thread::park();
                }
            })?;
        let keeper = keeper.thread().clone();
        let child = receiver
            .recv()
            .map_err(|_| io::Error::other("the postmaster thread ended without spawning"))??;
        Ok(Postmaster {
            child,
            keeper,
            released,
        })
    }

    /// The postmaster's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fast shutdown (`SIGINT`: sessions cut, shared memory released), `SIGKILL` after
    /// [`STOP_TIMEOUT`]; then the keeper thread ends. Idempotent.
    pub(crate) fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = Command::new("kill")
                .args(["-INT", &self.child.id().to_string()])
                .stderr(Stdio::null())
                .status();
            let deadline = Instant::now() + STOP_TIMEOUT;
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(10));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        self.released.store(true, Ordering::Release);
        self.keeper.unpark();
    }
}

impl Drop for Postmaster {
    fn drop(&mut self) {
        self.stop();
    }
}
