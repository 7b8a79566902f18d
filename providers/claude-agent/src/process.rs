//! The CLI child process: its own process group, stdin writes, stdout lines, a stderr tail, and
//! a stop that never leaves a process behind, each wait bounded, the same from `Drop` on a
//! background thread:
//! - after a finished turn (or an idle kept-alive CLI): stdin EOF, `stop_grace`, SIGTERM to the
//!   group, `stop_grace`, SIGKILL;
//! - mid-turn (cancelled, stream dropped, failed): the control protocol's `interrupt`, stdin EOF,
//!   `cancel_grace`, SIGTERM, `cancel_grace`, SIGKILL.
//!
//! Stdout is drained during every wait. Mid-turn the real CLI ignores stdin EOF; after an
//! `interrupt` it ends the turn and then exits at EOF (~0.1-0.2 s), but only if it can write
//! that turn's end: with its stdout closed it lingers ~2 s. SIGTERM ends it at once.

use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal as Sig, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::error::Error;
use crate::lines::LineReader;

const TAIL_LINES: usize = 40;
const TAIL_BYTES: usize = 8 * 1024;
/// How long SIGKILL gets to be seen (bounded, though it never takes this long).
const KILL_WAIT: Duration = Duration::from_secs(2);
/// The `interrupt` control request sent when a CLI is stopped mid-turn.
const INTERRUPT: &str =
    "{\"type\":\"control_request\",\"request_id\":\"patchbay_interrupt\",\"request\":{\"subtype\":\"interrupt\"}}\n";

/// How long each step of a stop waits for the CLI to exit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grace {
    /// After a finished turn (stdin EOF is enough then).
    pub(crate) finished: Duration,
    /// Mid-turn (the CLI ignores stdin EOF then, and exits on SIGTERM).
    pub(crate) cancel: Duration,
}

/// A running CLI.
#[derive(Debug)]
pub(crate) struct CliProcess {
    child: Option<Child>,
    pid: Option<i32>,
    stdin: Option<ChildStdin>,
    pub(crate) stdout: LineReader<ChildStdout>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
    grace: Grace,
    /// Between a user turn and its `result` (a fresh CLI counts as in a turn until it answers).
    in_turn: bool,
}

impl CliProcess {
    /// Spawn `command` (stdio piped, own process group).
    pub(crate) fn spawn(mut command: Command, program: &str, max_line: usize, grace: Grace) -> Result<Self, Error> {
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
            in_turn: true,
        })
    }

    /// Mark the CLI as in a turn (its stop interrupts it and waits `cancel_grace`) or between
    /// turns (stdin EOF and `stop_grace`).
    pub(crate) fn set_in_turn(&mut self, in_turn: bool) {
        self.in_turn = in_turn;
    }

    /// Set how long each step of a stop waits (a spare serves the grace of the call taking it).
    pub(crate) fn set_grace(&mut self, grace: Grace) {
        self.grace = grace;
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

    /// End the CLI's input: mid-turn the `interrupt` request first (a non-blocking write: a
    /// full pipe skips it), then stdin EOF. Returns how long each following step waits.
    fn end_input(&mut self) -> Duration {
        let stdin = self.stdin.take();
        if !self.in_turn {
            return self.grace.finished;
        }
        if let Some(stdin) = &stdin {
            let _ = nix::unistd::write(stdin, INTERRUPT.as_bytes());
        }
        self.grace.cancel
    }

    /// Stop: end the input and wait, then SIGTERM to the group and wait, then SIGKILL (the
    /// waits `stop_grace` after a finished turn, `cancel_grace` mid-turn). Returns the exit
    /// status when it was seen.
    pub(crate) async fn stop(&mut self) -> Option<ExitStatus> {
        // Already stopped: nothing to end.
        self.child.as_ref()?;
        let grace = self.end_input();
        let mut child = self.child.take()?;
        let pid = self.pid.take().map(Pid::from_raw);
        let stdout = self.stdout.get_mut();
        let mut status = wait(&mut child, stdout, grace).await;
        for (signal, wait_for) in [(Sig::SIGTERM, grace), (Sig::SIGKILL, KILL_WAIT)] {
            if status.is_some() {
                break;
            }
            if let Some(pid) = pid {
                let _ = killpg(pid, signal);
            }
            status = wait(&mut child, stdout, wait_for).await;
        }
        // Whatever the CLI left in its group (MCP servers it started) goes too.
        if let Some(pid) = pid {
            let _ = killpg(pid, Sig::SIGTERM);
        }
        // Let the stderr reader take the last lines (bounded: a grandchild may hold the pipe).
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), task).await;
        }
        status
    }
}

/// Wait up to `wait` for the CLI to exit, reading and dropping what it still writes: a CLI
/// whose stdout is closed or full does not finish its interrupted turn (the real one lingers
/// ~2 s then).
async fn wait(child: &mut Child, stdout: &mut ChildStdout, wait: Duration) -> Option<ExitStatus> {
    let drain = async {
        let mut buf = vec![0u8; 16 * 1024];
        while matches!(stdout.read(&mut buf).await, Ok(n) if n > 0) {}
        std::future::pending::<()>().await;
    };
    let exit = async {
        tokio::select! {
            status = child.wait() => status.ok(),
            () = drain => None,
        }
    };
    tokio::time::timeout(wait, exit).await.ok().flatten()
}

impl CliProcess {
    /// Whether the CLI has exited already.
    pub(crate) fn has_exited(&mut self) -> bool {
        self.child.as_mut().is_none_or(|c| !matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for CliProcess {
    fn drop(&mut self) {
        if self.child.is_none() {
            return;
        }
        let grace = self.end_input();
        let child = self.child.take();
        let Some(pid) = self.pid.take() else {
            return;
        };
        // Dropped unstopped (a cancel, a dropped stream, a dropped pool): finish the stop on a
        // thread (no runtime needed), so the caller never waits for it. The thread keeps a copy
        // of stdout (non-blocking, as tokio made it) to drain while it waits.
        drop(child);
        let stdout = self.stdout.get_ref().as_fd().try_clone_to_owned().ok();
        let spawned = std::thread::Builder::new()
            .name("patchbay-claude-stop".into())
            .spawn(move || stop_blocking(Pid::from_raw(pid), grace, stdout.as_ref()));
        if spawned.is_err() {
            let _ = killpg(Pid::from_raw(pid), Sig::SIGKILL);
        }
    }
}

/// Wait for `pid` to exit (reaping it), up to `wait`, draining `stdout` meanwhile.
fn wait_exit(pid: Pid, wait: Duration, stdout: Option<&OwnedFd>) -> bool {
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; 8 * 1024];
    loop {
        if let Some(fd) = stdout {
            // Non-blocking: stops at "would block" as well as at the end; bounded, so a CLI
            // writing without end still gets its signals on time.
            for _ in 0..64 {
                if !matches!(nix::unistd::read(fd, &mut buf), Ok(n) if n > 0) {
                    break;
                }
            }
        }
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

fn stop_blocking(pid: Pid, grace: Duration, stdout: Option<&OwnedFd>) {
    if !wait_exit(pid, grace, stdout) {
        let _ = killpg(pid, Sig::SIGTERM);
        if !wait_exit(pid, grace, stdout) {
            let _ = killpg(pid, Sig::SIGKILL);
            wait_exit(pid, KILL_WAIT, stdout);
        }
    }
    let _ = killpg(pid, Sig::SIGTERM);
}
