//! The `patchbay-orchestrator` binary killed with SIGKILL during a run's `bash` tool call leaves
//! no process of that run behind once it is started again: the shell dies with the
//! orchestrator (parent-death signal), and the shell's `sleep`, orphaned, is killed at the next
//! start (tagged with the run's job id) before the job is marked failed. Another orchestrator
//! (another data folder) started beside a running one leaves that one's runs alone.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "peers/served.rs"]
mod served;

use std::path::Path;
use std::time::{Duration, Instant};

use patchbay_orchestrator::RUN_ENV;
use patchbay_orchestrator::store::{INTERRUPTED, LEASE_EXPIRED};
use serde_json::json;

use served::{Served, fresh_pg_database};

/// A generous bound for a run to reach its tool call on a busy 2-core machine.
const RUN_LIMIT: Duration = Duration::from_secs(60);
/// How long a killed process may take to be gone.
const GONE_LIMIT: Duration = Duration::from_secs(15);

/// A blueprint `napper` whose run calls `bash` with `sleep <seconds>; echo woke` (bash forks
/// the sleep), then answers.
fn napper(seconds: &str) -> String {
    format!(
        r#"
name = "napper"
description = "Naps in bash, then answers."
provider = "scripted"
model = "scripted"
tools = ["bash"]

[provider_options.script]
turns = [
  {{ type = "respond", parts = [{{ type = "tool_call", id = "nap", name = "bash", input = {{ command = "sleep {seconds}; echo woke" }} }}], end = {{ type = "finish", reason = "tool_use" }} }},
  {{ type = "respond", parts = [{{ type = "text", text = "Rested." }}] }},
]
"#
    )
}

/// The command line of a process, split at NULs.
fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|arg| !arg.is_empty())
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect()
}

/// Every live process whose command line is exactly `args`.
fn processes_running(args: &[&str]) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| cmdline(pid) == args && !gone(pid))
        .collect()
}

/// Whether a process is gone (absent, or a zombie waiting to be reaped).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            matches!(state, Some("Z" | "X"))
        }
    }
}

/// The value of `name` in a process's environment.
fn env_of(pid: u32, name: &str) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{name}=");
    environ
        .split(|&b| b == 0)
        .find_map(|var| var.strip_prefix(prefix.as_bytes()))
        .map(|value| String::from_utf8_lossy(value).into_owned())
}

/// Kills the processes it holds when dropped (a failing test leaves no `sleep` running).
struct KillOnDrop(Vec<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for &pid in &self.0 {
            if let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

/// A sleep no other test runs: 30 s, and this test process's id and `n` as the fraction.
fn unique_sleep(n: u32) -> String {
    format!("30.{}{n}", std::process::id())
}

/// Waits for the `sleep <seconds>` of a run; panics with the orchestrator's log after
/// [`RUN_LIMIT`].
async fn wait_for_sleep(seconds: &str, served: &Served) -> Vec<u32> {
    let started = Instant::now();
    loop {
        let found = processes_running(&["sleep", seconds]);
        if !found.is_empty() {
            return found;
        }
        assert!(
            started.elapsed() < RUN_LIMIT,
            "no `sleep {seconds}` within {RUN_LIMIT:?}:\n{}",
            served.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts session `session` on the `napper` blueprint; returns its job id.
async fn start_napping(served: &Served, session: &str) -> String {
    let mcp = served.connect(Some("test-parent")).await;
    let input = json!({
        "session_name": session,
        "agent_blueprint_name": "napper",
        "prompt": "Take a nap.",
        "async_mode": true,
        "response_format": "json",
    });
    let accepted = mcp.json("start_agent_session", input).await;
    mcp.close().await;
    accepted["job_id"].as_str().unwrap().to_owned()
}

fn folder(parent: &Path, name: &str) -> std::path::PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_bash_call_leaves_no_process_of_the_run_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let project = folder(dir.path(), "project");
    let blueprints = folder(dir.path(), "blueprints");
    let seconds = unique_sleep(1);
    std::fs::write(blueprints.join("napper.toml"), napper(&seconds)).unwrap();
    let args = ["--workers", "1", "--project-dir", project.to_str().unwrap()];

    let first = Served::start(&data, Some(&blueprints), &args, &dir.path().join("first.log")).await;
    let job_id = start_napping(&first, "napping").await;
    // The run reaches its tool call: the shell's sleep runs.
    let sleeps = wait_for_sleep(&seconds, &first).await;
    let _cleanup = KillOnDrop(sleeps.clone());
    let tags: Vec<Option<String>> = sleeps.iter().map(|&pid| env_of(pid, RUN_ENV)).collect();

    first.kill9().await;
    let second = Served::start(&data, Some(&blueprints), &args, &dir.path().join("second.log")).await;

    // No process of the run is left: the sleep was killed at the start.
    let restarted = Instant::now();
    while sleeps.iter().any(|&pid| !gone(pid)) && restarted.elapsed() < GONE_LIMIT {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left: Vec<u32> = sleeps.iter().copied().filter(|&pid| !gone(pid)).collect();
    assert!(
        left.is_empty(),
        "`sleep {seconds}` {left:?} still runs {GONE_LIMIT:?} after the restart (tags {tags:?}):\n{}",
        second.stderr()
    );
    assert!(processes_running(&["sleep", &seconds]).is_empty());
    assert_eq!(
        tags,
        vec![Some(job_id.clone()); sleeps.len()],
        "every process of the run is tagged"
    );

    // The job is failed as interrupted, and the restart said it killed what the run left.
    let mcp = second.connect(None).await;
    let report = mcp.status("napping", 0).await;
    assert_eq!(report["job_id"], job_id.as_str(), "{report:#}");
    assert_eq!(report["job_status"], "failed", "{report:#}");
    assert_eq!(report["error"], INTERRUPTED, "{report:#}");
    mcp.close().await;
    let log = second.stderr();
    assert!(
        log.contains("killed processes left running by interrupted runs"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orchestrator_started_beside_a_running_one_leaves_its_runs_alone() {
    let dir = tempfile::tempdir().unwrap();
    let project = folder(dir.path(), "project");
    let blueprints = folder(dir.path(), "blueprints");
    let seconds = unique_sleep(2);
    std::fs::write(blueprints.join("napper.toml"), napper(&seconds)).unwrap();
    let args = ["--workers", "1", "--project-dir", project.to_str().unwrap()];

    let first = Served::start(
        &dir.path().join("first-data"),
        Some(&blueprints),
        &args,
        &dir.path().join("first.log"),
    )
    .await;
    let job_id = start_napping(&first, "napping").await;
    let sleeps = wait_for_sleep(&seconds, &first).await;
    let _cleanup = KillOnDrop(sleeps.clone());
    assert_eq!(env_of(sleeps[0], RUN_ENV), Some(job_id));

    // Another data folder, another store: its start-up sweep finds the tagged sleep, whose job
    // its store does not hold, and leaves it (serving means the sweep is done).
    let second = Served::start(
        &dir.path().join("second-data"),
        Some(&blueprints),
        &args,
        &dir.path().join("second.log"),
    )
    .await;
    let alive: Vec<u32> = sleeps.iter().copied().filter(|&pid| !gone(pid)).collect();
    assert_eq!(
        alive, sleeps,
        "the other orchestrator's start killed a live run's processes"
    );
    let mcp = first.connect(None).await;
    let report = mcp.status("napping", 0).await;
    assert_eq!(report["job_status"], "running", "{report:#}");
    mcp.close().await;
    drop(second);
}

/// On PostgreSQL: a `worker` process killed with SIGKILL during a bash call; the `serve`
/// process settling its lease kills the orphaned sleep (same machine) as it marks the job
/// failed. Skipped without PostgreSQL's binaries, except in CI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settled_lease_kills_what_the_dead_workers_run_left_on_this_machine() {
    let Some(url) = fresh_pg_database("orphans").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let project = folder(dir.path(), "project");
    let blueprints = folder(dir.path(), "blueprints");
    let seconds = unique_sleep(3);
    std::fs::write(blueprints.join("napper.toml"), napper(&seconds)).unwrap();
    let blueprints_arg = blueprints.to_str().unwrap();
    // Leases of 2 s, settled every 2/3 s by the serve process (it runs no job itself).
    let serve = Served::start_with_args(
        &[
            "--database",
            &url,
            "--blueprints",
            blueprints_arg,
            "--workers",
            "0",
            "--lease",
            "2",
        ],
        &dir.path().join("serve.log"),
    )
    .await;
    let stderr = std::fs::File::create(dir.path().join("worker.log")).unwrap();
    let mut worker = tokio::process::Command::new(served::BIN)
        .args([
            "worker",
            "--database",
            &url,
            "--blueprints",
            blueprints_arg,
            "--lease",
            "2",
        ])
        .arg("--project-dir")
        .arg(&project)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::from(stderr))
        .kill_on_drop(true)
        .spawn()
        .unwrap();

    let body = json!({"type": "start_session", "session_name": "napping", "prompt": "go", "agent_name": "napper"});
    let (status, job) = serve.api_send(reqwest::Method::POST, "/jobs", Some(&body)).await;
    assert_eq!(status, 201, "{job}");
    let job_id = job["job_id"].as_str().unwrap().to_owned();
    let sleeps = wait_for_sleep(&seconds, &serve).await;
    let _cleanup = KillOnDrop(sleeps.clone());
    assert_eq!(env_of(sleeps[0], RUN_ENV), Some(job_id.clone()));

    worker.start_kill().unwrap(); // SIGKILL
    worker.wait().await.unwrap();
    let killed = Instant::now();
    while sleeps.iter().any(|&pid| !gone(pid)) && killed.elapsed() < GONE_LIMIT {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left: Vec<u32> = sleeps.iter().copied().filter(|&pid| !gone(pid)).collect();
    assert!(
        left.is_empty(),
        "`sleep {seconds}` {left:?} still runs {GONE_LIMIT:?} after its worker was killed:\n{}",
        serve.stderr()
    );
    let (_, job) = serve.api_get(&format!("/jobs/{job_id}")).await;
    assert_eq!(job["status"], "failed", "{job}");
    assert_eq!(job["error"], LEASE_EXPIRED, "{job}");
    let log = serve.stderr();
    assert!(
        log.contains("killed processes left running by interrupted runs"),
        "{log}"
    );
}
