//! The CLI child process: its own process group, stdin writes, stdout lines, a stderr tail, and
//! a stop that never leaves a process behind (stdin EOF, then SIGTERM, then SIGKILL, each wait
//! bounded; the same from `Drop` on a background thread).

use std::collections::VecDeque;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal as Sig, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::error::Error;
use crate::lines::LineReader;

const TAIL_LINES: usize = 40;
const TAIL_BYTES: usize = 8 * 1024;

/// A running CLI.
#[derive(Debug)]
pub(crate) struct CliProcess {
    child: Option<Child>,
    pid: Option<i32>,
    stdin: Option<ChildStdin>,
    pub(crate) stdout: LineReader<ChildStdout>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
    grace: Duration,
}

impl CliProcess {
    /// Spawn `command` (stdio piped, own process group).
    pub(crate) fn spawn(mut command: Command, program: &str, max_line: usize, grace: Duration) -> Result<Self, Error> {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().map_err(|source| Error::Spawn {
            path: program.to_string(),
            source,
        })?;
        let pid = child.id().and_then(|id| i32::try_from(id).ok());
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or_else(|| Error::Io {
            what: "taking the CLI's stdout",
            source: std::io::Error::other("no stdout pipe"),
        })?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let mut stderr_task = None;
        if let Some(stderr) = child.stderr.take() {
            let tail = tail.clone();
            stderr_task = Some(tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(mut tail) = tail.lock() {
                        tail.push_back(line);
                        while tail.len() > TAIL_LINES {
                            tail.pop_front();
                        }
                    }
                }
            }));
        }
        tracing::debug!(pid, "CLI started");
        Ok(Self {
            child: Some(child),
            pid,
            stdin,
            stdout: LineReader::new(stdout, max_line),
            stderr: tail,
            stderr_task,
            grace,
        })
    }

    /// The process id (also the process group id).
    pub(crate) fn pid(&self) -> Option<i32> {
        self.pid
    }

    /// Write one JSON line to stdin.
    pub(crate) async fn write_line(&mut self, line: &str) -> Result<(), Error> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(Error::Io {
                what: "writing to the CLI",
                source: std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdin already closed"),
            });
        };
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let io = async {
            stdin.write_all(&bytes).await?;
            stdin.flush().await
        };
        io.await.map_err(|source| Error::Io {
            what: "writing to the CLI",
            source,
        })
    }

    /// The last lines the CLI wrote to stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        let lines: Vec<String> = self
            .stderr
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        let mut text = lines.join("\n");
        if text.len() > TAIL_BYTES {
            let mut cut = text.len() - TAIL_BYTES;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            text = text.split_off(cut);
        }
        text
    }

    /// Stop: stdin EOF and wait, then SIGTERM to the group and wait, then SIGKILL. Returns the
    /// exit status when it was seen.
    pub(crate) async fn stop(&mut self) -> Option<ExitStatus> {
        self.stdin.take();
        let mut child = self.child.take()?;
        let pid = self.pid.map(Pid::from_raw);
        let mut status = tokio::time::timeout(self.grace, child.wait())
            .await
            .ok()
            .and_then(Result::ok);
        if status.is_none() {
            if let Some(pid) = pid {
                let _ = killpg(pid, Sig::SIGTERM);
            }
            status = tokio::time::timeout(self.grace, child.wait())
                .await
                .ok()
                .and_then(Result::ok);
        }
        if status.is_none() {
            if let Some(pid) = pid {
                let _ = killpg(pid, Sig::SIGKILL);
            }
            status = tokio::time::timeout(Duration::from_secs(2), child.wait())
                .await
                .ok()
                .and_then(Result::ok);
        }
        // Whatever the CLI left in its group (MCP servers it started) goes too.
        if let Some(pid) = pid {
            let _ = killpg(pid, Sig::SIGTERM);
        }
        self.pid = None;
        // Let the stderr reader take the last lines (bounded: a grandchild may hold the pipe).
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), task).await;
        }
        status
    }
}

impl CliProcess {
    /// Whether the CLI has exited already.
    pub(crate) fn has_exited(&mut self) -> bool {
        self.child.as_mut().is_none_or(|c| !matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for CliProcess {
    fn drop(&mut self) {
        let Some(child) = self.child.take() else {
            return;
        };
        self.stdin.take();
        let Some(pid) = self.pid.take() else {
            return;
        };
        let grace = self.grace;
        // The stream was dropped mid-run: finish the stop on a thread (no runtime needed).
        drop(child);
        let spawned = std::thread::Builder::new()
            .name("patchbay-claude-stop".into())
            .spawn(move || stop_blocking(Pid::from_raw(pid), grace));
        if spawned.is_err() {
            let _ = killpg(Pid::from_raw(pid), Sig::SIGKILL);
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

fn stop_blocking(pid: Pid, grace: Duration) {
    if !wait_exit(pid, grace) {
        let _ = killpg(pid, Sig::SIGTERM);
        if !wait_exit(pid, grace) {
            let _ = killpg(pid, Sig::SIGKILL);
            wait_exit(pid, Duration::from_secs(2));
        }
    }
    let _ = killpg(pid, Sig::SIGTERM);
}
