//! Stdio MCP servers as child processes in their own process group.
//!
//! The child is started as the leader of a new process group, so one signal reaches it and
//! every descendant that did not leave the group. A graceful stop closes stdin (the MCP stdio
//! shutdown), waits, then sends SIGTERM to the group, waits, then SIGKILL; dropping without a
//! graceful stop sends SIGKILL to the group at once. Either way the group gets a final SIGKILL,
//! so descendants never outlive the server.
//!
//! When the host dies without any of that (`kill -9`), the server dies with it: it is started
//! under `setpriv --pdeathsig=KILL` when util-linux `setpriv` is on `PATH` and the command is
//! found beforehand (see `launcher`); the spawn runs on the thread polling the connect (a
//! runtime worker), never on the blocking pool. What the server started is orphaned, not
//! killed; a host sweeps it through the environment it gave (`RequestContext::env` reaches
//! the server's).

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal as Sig, killpg};
use nix::unistd::Pid;
use patchbay_core::kit::{ParentDeathSignal, find_program};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::error::Error;

const STDERR_LINES: usize = 20;

/// The last lines a child wrote to stderr.
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
}

impl StderrTail {
    fn push(&self, line: String) {
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() == STDERR_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    /// The lines joined with ` | `; `None` when nothing was written.
    pub(crate) fn text(&self) -> Option<String> {
        let lines = self.lines.lock().ok()?;
        (!lines.is_empty()).then(|| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
    }
}

/// The program line of a spawn: under `setpriv --pdeathsig=KILL` (core's
/// `kit::ParentDeathSignal`) when setpriv is on `PATH` and the command is found (an absolute
/// path to an executable file, or a bare name on the server's `PATH`); else the command
/// itself, so a missing one is still the spawn's error and a relative path keeps its meaning.
fn launcher(spawn: &Spawn<'_>) -> (OsString, Vec<OsString>) {
    let command = Path::new(spawn.command);
    let direct = (OsString::from(spawn.command), Vec::new());
    let tie = ParentDeathSignal::detect();
    if tie.setpriv().is_none() {
        return direct;
    }
    let found = if command.is_absolute() {
        // The file itself: its name looked up in its own folder.
        let name = command.file_name().and_then(OsStr::to_str);
        name.zip(command.parent())
            .and_then(|(name, dir)| find_program(name, Some(dir.as_os_str())))
    } else if command.components().count() == 1 {
        let path = spawn
            .env
            .get("PATH")
            .map(OsString::from)
            .or_else(|| std::env::var_os("PATH"));
        find_program(spawn.command, path.as_deref())
    } else {
        None
    };
    match found {
        Some(program) => tie.command_line(program.as_os_str()),
        None => direct,
    }
}

/// A running stdio server process (the leader of its own process group).
#[derive(Debug)]
pub(crate) struct ChildProcess {
    pid: Option<u32>,
    child: Option<Child>,
}

/// What to start.
pub(crate) struct Spawn<'a> {
    pub(crate) server: &'a str,
    pub(crate) command: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) working_dir: Option<&'a Path>,
    pub(crate) stderr: StderrTail,
}

impl ChildProcess {
    /// Start the process with piped stdio; stderr lines go to `spawn.stderr` and to tracing.
    pub(crate) fn spawn(spawn: Spawn<'_>) -> Result<(Self, ChildStdout, ChildStdin), Error> {
        let (program, leading) = launcher(&spawn);
        let mut command = Command::new(program);
        command
            .args(leading)
            .args(spawn.args)
            .envs(&spawn.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(dir) = spawn.working_dir {
            command.current_dir(dir);
        }
        let spawn_error = |source| Error::Spawn {
            server: spawn.server.to_owned(),
            command: spawn.command.to_owned(),
            source,
        };
        let child = command.spawn().map_err(spawn_error)?;
        let pid = child.id();
        let mut process = Self {
            pid,
            child: Some(child),
        };
        let child = process
            .child
            .as_mut()
            .ok_or_else(|| spawn_error(std::io::Error::other("no child")))?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(spawn_error(std::io::Error::other("stdio pipes missing")));
        };
        if let Some(stderr) = child.stderr.take() {
            let tail = spawn.stderr.clone();
            let server = spawn.server.to_owned();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(server = %server, "mcp server stderr: {line}");
                    tail.push(line);
                }
            });
        }
        Ok((process, stdout, stdin))
    }

    /// The process id (also the process group id), while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn signal_group(&self, signal: Sig) {
        if let Some(pid) = self.pid.and_then(|pid| i32::try_from(pid).ok()) {
            // ESRCH (group already gone) is the expected outcome late in a shutdown.
            let _ = killpg(Pid::from_raw(pid), signal);
        }
    }

    /// Stop gracefully: call after stdin was closed. Waits `grace` for the server to exit, then
    /// SIGTERM and another `grace`, then SIGKILL; finally SIGKILL to whatever is left in the
    /// group.
    pub(crate) async fn shutdown(&mut self, grace: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if tokio::time::timeout(grace, child.wait()).await.is_err() {
            self.signal_group(Sig::SIGTERM);
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                self.signal_group(Sig::SIGKILL);
                let _ = child.wait().await;
            }
        }
        self.signal_group(Sig::SIGKILL);
        self.pid = None;
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if self.child.is_some() {
            // Synchronous, works without a runtime; tokio reaps the killed leader.
            self.signal_group(Sig::SIGKILL);
        }
    }
}
