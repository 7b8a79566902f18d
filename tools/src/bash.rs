//! `bash`: run a shell command in the workspace root, with a timeout and an output limit,
//! killed with its whole process group on timeout or cancel.
//!
//! The command runs as `bash -c <command>` (`sh -c` where bash is missing) in its own process
//! group, stdin closed. When it exits, times out, is cancelled, or the call's future is dropped,
//! the whole group gets `SIGKILL`, so background jobs it started do not outlive the call (a
//! process that leaves the group with `setsid` is beyond reach). A shell is not confined to the
//! root: that is why the tool is off unless the host turns it on.
//!
//! When the host itself dies without running any of that (`kill -9`, a crash), the shell dies
//! with it: on Linux with util-linux `setpriv` on `PATH` the shell is started as `setpriv
//! --pdeathsig=KILL -- bash -c ...` (see patchbay-core's `kit::ParentDeathSignal`), so the
//! kernel kills it when the thread that spawned it ends. Without `setpriv` it is started
//! directly and outlives a killed host. Either way, what the shell started (a `sleep`, a
//! server) is orphaned, not killed, by the host's death: a host that must not leave those
//! running tags them through [`Workspace::with_env`] and sweeps them (the orchestrator does).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use patchbay_core::kit::{ParentDeathSignal, find_program};
use patchbay_core::{Tool, ToolContext, ToolResult, ToolSpec, tool::ToolStatus, tool::parse_input};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::time::Instant;

use crate::error::ToolError;
use crate::output::{Keep, truncate};
use crate::root::Root;
use crate::workspace::{BASIC_ENV, Workspace};

/// Input of the `bash` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct BashInput {
    /// The command, run with `bash -c` in the workspace root.
    pub command: String,
    /// Seconds before the command is killed (default 120, at most 600).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

const DESCRIPTION: &str = "Run a shell command with `bash -c` in the workspace root and return its \
output and exit code. stdin is closed; the command is killed with its whole process group after \
`timeout_secs` (default 120) or when the call is cancelled, and background jobs do not outlive \
it. Long output keeps its beginning and end. Prefer read, glob, grep and edit for files.";

/// How long to keep reading output after the command exited (pipes held by stray processes).
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// The `bash` tool: run a command with a timeout, an output limit and process-group cleanup.
/// Included by [`coding_tools`](crate::coding_tools) only when the workspace enables bash.
#[derive(Debug, Clone)]
pub struct BashTool {
    workspace: Workspace,
    spec: ToolSpec,
}

impl BashTool {
    /// A `bash` tool for this workspace. It refuses to run (status `Denied`) unless the
    /// workspace enables bash.
    pub fn new(workspace: Workspace) -> Self {
        let mut spec = ToolSpec::for_input::<BashInput>("bash", DESCRIPTION);
        spec.annotations = Some(json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": true}));
        Self { workspace, spec }
    }
}

#[async_trait]
impl Tool for BashTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, input: Value, cx: &ToolContext) -> ToolResult {
        let input: BashInput = match parse_input("bash", input) {
            Ok(input) => input,
            Err(result) => return result,
        };
        run(&self.workspace, cx, &input).await.unwrap_or_else(Into::into)
    }
}

/// How a run ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    TimedOut,
    Cancelled,
}

async fn run(workspace: &Workspace, cx: &ToolContext, input: &BashInput) -> Result<ToolResult, ToolError> {
    if !workspace.bash_enabled() {
        return Err(ToolError::denied(
            "the bash tool is disabled in this workspace; the host must enable it",
        ));
    }
    if input.command.trim().is_empty() {
        return Err(ToolError::failed("the command is empty"));
    }
    let root = Root::open(workspace, cx)?;
    let limits = workspace.limits();
    let timeout = input
        .timeout_secs
        .map_or(limits.bash_timeout, Duration::from_secs)
        .clamp(Duration::from_secs(1), limits.bash_max_timeout);
    let child = spawn(workspace, &root, &input.command)?;
    let cap = limits.max_output_chars.saturating_mul(4).max(1024);
    let finished = wait_with_output(child, cap, timeout, cx).await?;
    Ok(report(finished, limits.max_output_chars, timeout))
}

/// What a command left when it ended: its exit status, whether it was stopped, its output.
struct Finished {
    status: std::process::ExitStatus,
    stop: Option<Stop>,
    stdout: String,
    stderr: String,
}

/// Read the command's output (each stream capped at `cap` bytes) until it exits, times out or
/// is cancelled; its process group is killed in every case, and output still buffered is read
/// for at most [`DRAIN_GRACE`] after the exit.
async fn wait_with_output(
    mut child: tokio::process::Child,
    cap: usize,
    timeout: Duration,
    cx: &ToolContext,
) -> Result<Finished, ToolError> {
    let mut group = ProcessGroup::new(child.id());
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let (mut out, mut err) = (Capture::new(cap), Capture::new(cap));
    let (mut out_buf, mut err_buf) = (vec![0u8; 8192], vec![0u8; 8192]);
    let deadline = Instant::now() + timeout;
    let mut status = None;
    let mut stop = None;
    let mut drain_until = None;
    loop {
        if stdout.is_none() && stderr.is_none() && status.is_some() {
            break;
        }
        tokio::select! {
            read = read_some(&mut stdout, &mut out_buf), if stdout.is_some() => match read {
                Ok(n) if n > 0 => out.push(&out_buf[..n]),
                _ => stdout = None,
            },
            read = read_some(&mut stderr, &mut err_buf), if stderr.is_some() => match read {
                Ok(n) if n > 0 => err.push(&err_buf[..n]),
                _ => stderr = None,
            },
            waited = child.wait(), if status.is_none() => {
                // The shell is gone: kill whatever it left running in its group.
                group.kill();
                status = Some(waited.map_err(|e| ToolError::failed(format!("waiting for the command failed: {e}")))?);
                drain_until = Some(Instant::now() + DRAIN_GRACE);
            },
            _ = tokio::time::sleep_until(deadline), if stop.is_none() && status.is_none() => {
                stop = Some(Stop::TimedOut);
                group.kill();
            },
            _ = cx.signal.cancelled(), if stop.is_none() && status.is_none() => {
                stop = Some(Stop::Cancelled);
                group.kill();
            },
            _ = sleep_until_opt(drain_until), if drain_until.is_some() => break,
        }
    }
    let status = status.ok_or_else(|| ToolError::failed("the command's exit status is unknown"))?;
    group.forget();
    Ok(Finished {
        status,
        stop,
        stdout: out.into_string(),
        stderr: err.into_string(),
    })
}

/// The tool result of a finished command: its output (head and tail kept), a closing line
/// saying how it ended, and the exit facts as metadata.
fn report(finished: Finished, max_output_chars: usize, timeout: Duration) -> ToolResult {
    let Finished {
        status,
        stop,
        stdout,
        stderr,
    } = finished;
    let exit_code = status.code();
    let signal = exit_signal(&status);
    let text = combined_output(&stdout, &stderr);
    let (mut text, cut) = truncate(text, max_output_chars, Keep::HeadAndTail, "");
    let (closing, result_status) = closing_line(stop, exit_code, signal, timeout);
    text.push_str(&closing);
    let mut result = ToolResult::with_status(result_status, text);
    result.metadata = Some(json!({
        "exit_code": exit_code,
        "signal": signal,
        "timed_out": stop == Some(Stop::TimedOut),
        "cancelled": stop == Some(Stop::Cancelled),
        "truncated_chars": cut,
    }));
    result
}

/// stdout, then stderr under a `[stderr]` line; `(no output)` when both are empty; always
/// ending with a newline.
fn combined_output(stdout: &str, stderr: &str) -> String {
    let mut text = String::new();
    text.push_str(stdout);
    if !stderr.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("[stderr]\n");
        text.push_str(stderr);
    }
    if text.is_empty() {
        text.push_str("(no output)");
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The line that says how the command ended, and the status that goes with it.
fn closing_line(
    stop: Option<Stop>,
    exit_code: Option<i32>,
    signal: Option<i32>,
    timeout: Duration,
) -> (String, ToolStatus) {
    match (stop, exit_code) {
        (Some(Stop::TimedOut), _) => (
            format!(
                "[timed out after {} s: the command and its process group were killed]",
                timeout.as_secs()
            ),
            ToolStatus::Failed,
        ),
        (Some(Stop::Cancelled), _) => (
            "[cancelled: the command and its process group were killed]".to_owned(),
            ToolStatus::Aborted,
        ),
        (None, Some(0)) => ("[exit code 0]".to_owned(), ToolStatus::Completed),
        (None, Some(code)) => (format!("[exit code {code}]"), ToolStatus::Failed),
        (None, None) => (
            format!("[killed by signal {}]", signal.unwrap_or_default()),
            ToolStatus::Failed,
        ),
    }
}

/// `bash`, else `sh`, on the command's `PATH` (the workspace's, else the host's). Found here,
/// not by the spawn: through `setpriv` a missing `bash` would show as setpriv's exit 127, not
/// as the spawn's NotFound.
fn find_shell(workspace: &Workspace) -> Result<PathBuf, ToolError> {
    let search_path = workspace
        .env()
        .get("PATH")
        .map(OsString::from)
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
    ["bash", "sh"]
        .into_iter()
        .find_map(|name| find_program(name, Some(&search_path)))
        .ok_or_else(|| ToolError::failed("could not start a shell: neither bash nor sh is on PATH"))
}

fn spawn(workspace: &Workspace, root: &Root, command: &str) -> Result<tokio::process::Child, ToolError> {
    let shell = find_shell(workspace)?;
    let (program, leading) = ParentDeathSignal::detect().command_line(shell.as_os_str());
    let mut cmd = Command::new(program);
    if !workspace.inherits_env() {
        cmd.env_clear();
        for key in BASIC_ENV {
            if let Some(value) = std::env::var_os(key) {
                cmd.env(key, value);
            }
        }
    }
    cmd.args(leading)
        .arg("-c")
        .arg(command)
        .current_dir(&root.path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .envs(workspace.env())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    // Spawned on the thread polling the call (a runtime worker or `block_on`'s thread, never
    // the blocking pool): the parent-death signal follows that thread.
    cmd.spawn()
        .map_err(|err| ToolError::failed(format!("could not start {}: {err}", shell.display())))
}

async fn read_some<R: AsyncRead + Unpin>(pipe: &mut Option<R>, buf: &mut [u8]) -> std::io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => Ok(0),
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(unix)]
fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}

#[cfg(not(unix))]
fn exit_signal(_: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// The command's process group: killed on timeout, cancel, exit, and when dropped (the agent
/// loop drops a tool's future when the run is cancelled).
struct ProcessGroup {
    id: Option<u32>,
}

impl ProcessGroup {
    fn new(id: Option<u32>) -> Self {
        Self { id }
    }

    /// `SIGKILL` to every process of the group; harmless if it is already gone.
    fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self
            .id
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }

    /// Forget the group once it was killed after the command's exit: its id may be reused.
    fn forget(&mut self) {
        self.id = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One output stream, bounded: the first `cap` bytes and the last `cap` bytes are kept.
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    cap: usize,
    dropped: u64,
}

impl Capture {
    fn new(cap: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            cap,
            dropped: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < self.cap {
            let take = bytes.len().min(self.cap - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend(bytes);
        if self.tail.len() > self.cap {
            let excess = self.tail.len() - self.cap;
            self.tail.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    fn into_string(self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!(
                "\n[output truncated: {} bytes cut from the middle]\n",
                self.dropped
            ));
        }
        let tail: Vec<u8> = self.tail.into();
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}
