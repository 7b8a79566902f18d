//! The agent's child process: its own process group (one signal reaches every descendant that
//! stayed in it), started under `setpriv --pdeathsig=KILL` where available (core's
//! `ParentDeathSignal`: a host killed with `kill -9` takes the agent with it), a temporary home
//! when isolated, a stderr tail for error messages, and a stop that never leaves a process
//! behind:
//! - [`AgentProcess::stop`] (a finished or cancelled turn): the caller has closed stdin (the
//!   connection ended); wait 100 ms (agents seldom exit at EOF), SIGTERM to the group, wait
//!   `stop_grace`, SIGKILL to the group;
//!   then SIGKILL to the group once more for members that outlived the leader.
//! - `Drop` without a stop (a dropped stream, a dropped pool): SIGTERM to the group at once,
//!   the rest on a thread, so the caller never waits.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal as Sig, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use patchbay_core::kit::ParentDeathSignal;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::error::Error;

const TAIL_LINES: usize = 40;
/// How long SIGKILL gets to be seen (bounded, though it never takes this long).
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How long an agent gets to exit at stdin's EOF before SIGTERM.
const EOF_WAIT: Duration = Duration::from_millis(100);

/// What to start.
pub(crate) struct Launch<'a> {
    pub(crate) program: &'a Path,
    pub(crate) args: Vec<String>,
    /// Variables set on top of the inherited (or empty) environment.
    pub(crate) env: BTreeMap<String, OsString>,
    pub(crate) inherit_env: bool,
    pub(crate) cwd: Option<&'a Path>,
    pub(crate) grace: Duration,
    /// The temporary home, kept as long as the process.
    pub(crate) home: Option<tempfile::TempDir>,
}

/// A running agent.
#[derive(Debug)]
pub(crate) struct AgentProcess {
    child: Option<Child>,
    pid: Option<Pid>,
    tail: Arc<Mutex<VecDeque<String>>>,
    grace: Duration,
    _home: Option<tempfile::TempDir>,
}

impl AgentProcess {
    /// Start the agent with piped stdio; the pipes go to the transport.
    pub(crate) fn spawn(launch: Launch<'_>) -> Result<(Self, ChildStdin, ChildStdout), Error> {
        let (program, prefix) = ParentDeathSignal::detect().command_line(launch.program.as_os_str());
        let mut command = Command::new(program);
        command.args(prefix).args(&launch.args);
        if !launch.inherit_env {
            command.env_clear();
        }
        command.envs(&launch.env);
        if let Some(cwd) = launch.cwd {
            command.current_dir(cwd);
        }
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0);
        let program = launch.program.display().to_string();
        let mut child = command.spawn().map_err(|source| Error::Spawn {
            program: program.clone(),
            source,
        })?;
        let pid = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
        let pipe = |what| Error::Io {
            what,
            source: std::io::Error::other("no pipe"),
        };
        let stdin = child.stdin.take().ok_or_else(|| pipe("taking the agent's stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| pipe("taking the agent's stdout"))?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = child.stderr.take() {
            let tail = tail.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(mut tail) = tail.lock() {
                        tail.push_back(line);
                        while tail.len() > TAIL_LINES {
                            tail.pop_front();
                        }
                    }
                }
            });
        }
        tracing::debug!(pid = pid.map(Pid::as_raw), "ACP agent started");
        let process = Self {
            child: Some(child),
            pid,
            tail,
            grace: launch.grace,
            _home: launch.home,
        };
        Ok((process, stdin, stdout))
    }

    /// The process id (also the process group id).
    pub(crate) fn pid(&self) -> Option<i32> {
        self.pid.map(Pid::as_raw)
    }

    /// The last lines the agent wrote to stderr, joined (empty when none).
    pub(crate) fn stderr_tail(&self) -> String {
        self.tail
            .lock()
            .map(|tail| tail.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    /// The exit status, if the agent has exited.
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut().and_then(|child| child.try_wait().ok().flatten())
    }

    /// `error` with what the process says: a connection that ended is the agent's exit, with
    /// its status (given a moment to be seen) and its stderr tail; any other error unchanged.
    pub(crate) async fn explain(&mut self, error: Error) -> Error {
        let Error::Exited { .. } = error else {
            return error;
        };
        let mut status = self.exited();
        for _ in 0..20 {
            if status.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            status = self.exited();
        }
        let tail = self.stderr_tail();
        Error::Exited {
            status: status.map(|s| format!(": {s}")).unwrap_or_default(),
            tail: if tail.is_empty() {
                String::new()
            } else {
                format!("; its stderr ends with:\n{tail}")
            },
        }
    }

    /// Stop (stdin already closed): a short wait, SIGTERM, wait, SIGKILL, each to the group.
    /// The child stays in place until the end: a stop whose future is dropped midway (the
    /// caller dropped the stream) leaves it to `Drop`, which still kills the group.
    pub(crate) async fn stop(&mut self) -> Option<ExitStatus> {
        let pid = self.pid;
        let child = self.child.as_mut()?;
        // Agents seldom exit at stdin's EOF (the Claude and Codex adapters never do, the Gemini
        // CLI not with an MCP server): a short wait, then SIGTERM, the stop they answer.
        let mut status = tokio::time::timeout(EOF_WAIT.min(self.grace), child.wait())
            .await
            .ok()
            .and_then(Result::ok);
        for (signal, wait) in [(Sig::SIGTERM, self.grace), (Sig::SIGKILL, KILL_WAIT)] {
            if status.is_some() {
                break;
            }
            if let Some(pid) = pid {
                let _ = killpg(pid, signal);
            }
            status = tokio::time::timeout(wait, child.wait()).await.ok().and_then(Result::ok);
        }
        // What the agent left in its group (MCP servers, shells) goes too.
        if let Some(pid) = pid {
            let _ = killpg(pid, Sig::SIGKILL);
        }
        self.child = None;
        self.pid = None;
        status
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let Some(child) = self.child.take() else { return };
        let Some(pid) = self.pid.take() else { return };
        let _ = killpg(pid, Sig::SIGTERM);
        drop(child);
        let grace = self.grace;
        let spawned = std::thread::Builder::new()
            .name("patchbay-acp-stop".into())
            .spawn(move || {
                if !wait_exit(pid, grace) {
                    let _ = killpg(pid, Sig::SIGKILL);
                    wait_exit(pid, KILL_WAIT);
                }
                let _ = killpg(pid, Sig::SIGKILL);
            });
        if spawned.is_err() {
            let _ = killpg(pid, Sig::SIGKILL);
        }
    }
}

/// Wait for `pid` to exit (reaping it), up to `wait`.
fn wait_exit(pid: Pid, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {}
            Ok(_) | Err(_) => return true,
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A temporary home with the XDG folders and `files` written in it (owner only).
pub(crate) fn temp_home(files: &BTreeMap<String, String>) -> Result<tempfile::TempDir, Error> {
    let io = |what| move |source| Error::Io { what, source };
    let home = tempfile::Builder::new()
        .prefix("patchbay-acp-home-")
        .tempdir()
        .map_err(io("creating the agent's temporary home"))?;
    for (path, contents) in files {
        let path: PathBuf = home.path().join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io("writing a home file"))?;
        }
        std::fs::write(&path, contents).map_err(io("writing a home file"))?;
    }
    Ok(home)
}

/// The variables that make `home` the agent's home: `HOME` and the XDG folders.
pub(crate) fn home_env(home: &Path) -> Vec<(String, OsString)> {
    vec![
        ("HOME".into(), home.as_os_str().to_owned()),
        ("XDG_CONFIG_HOME".into(), home.join(".config").into_os_string()),
        ("XDG_DATA_HOME".into(), home.join(".local/share").into_os_string()),
        ("XDG_STATE_HOME".into(), home.join(".local/state").into_os_string()),
        ("XDG_CACHE_HOME".into(), home.join(".cache").into_os_string()),
    ]
}
