//! Stdio MCP servers as child processes in their own process group.
//!
//! The child is started as the leader of a new process group, so one signal reaches it and
//! every descendant that did not leave the group. A graceful stop closes stdin (the MCP stdio
//! shutdown), waits, then sends SIGTERM to the group, waits, then SIGKILL; dropping without a
//! graceful stop sends SIGKILL to the group at once. Either way the group gets a final SIGKILL,
//! so descendants never outlive the server.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal as Sig, killpg};
use nix::unistd::Pid;
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
        let mut command = Command::new(spawn.command);
        command
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
