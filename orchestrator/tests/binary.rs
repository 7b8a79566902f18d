//! The `patchbay-orchestrator` binary itself: kill -9 during a run loses no job and no session
//! (the run is marked interrupted at the next start, queued work runs), a second process on the
//! same data folder is refused, SIGTERM cancels the run and exits 0, and over stdio the caller's
//! `AGENT_SESSION_NAME` becomes the child's parent and closing stdin ends the process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "peers/served.rs"]
mod served;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use patchbay::{ToolResult, context::McpServerConfig, context::McpTransport};
use patchbay_conformance::peers::is_alive;
use patchbay_orchestrator::store::{INTERRUPTED, JobKind, JobStatus, SessionStatus, Store};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::task::JoinHandle;

use served::{BIN, Mcp, START_LIMIT, Served, all_jobs, children_of, open_store};

/// Runs that end at once still take a moment on a busy 2-core machine: a generous bound.
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// The default blueprint's answer (the scripted provider's built-in text).
const HELLO: &str = "Hello from the scripted provider.";

/// A blueprint `slow` whose run streams a word, then stalls until cancelled.
const STALLING: &str = r#"
name = "slow"
description = "Streams a word, then stalls until cancelled."
provider = "scripted"
model = "scripted"
tools = []

[provider_options.script]
turns = [{ type = "respond", parts = [{ type = "text", text = "Working " }], end = { type = "stall" } }]
"#;

/// The same blueprint after a fix: it answers at once.
const FIXED: &str = r#"
name = "slow"
description = "Answers at once now."
provider = "scripted"
model = "scripted"
tools = []
provider_options = { text = "Recovered after the restart." }
"#;

fn folder(parent: &Path, name: &str) -> std::path::PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn blueprints(parent: &Path, name: &str, toml: &str) -> std::path::PathBuf {
    let dir = folder(parent, name);
    std::fs::write(dir.join("slow.toml"), toml).unwrap();
    dir
}

fn start_async(session: &str, blueprint: Option<&str>, prompt: &str) -> Value {
    let mut input = json!({
        "session_name": session,
        "prompt": prompt,
        "async_mode": true,
        "response_format": "json",
    });
    if let Some(blueprint) = blueprint {
        input["agent_blueprint_name"] = json!(blueprint);
    }
    input
}

/// Call a tool on its own connection in a task (the call may wait long).
async fn sync_call(served: &Served, tool: &'static str, input: Value) -> JoinHandle<ToolResult> {
    let mcp = served.connect(Some("waiting-parent")).await;
    tokio::spawn(async move {
        let answer = mcp.call(tool, input).await;
        mcp.close().await;
        answer
    })
}

/// The JSON answer of a call made with [`sync_call`], which must have ended by now.
async fn answered(call: JoinHandle<ToolResult>, log: &str) -> Value {
    let answer = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the call was answered")
        .unwrap();
    let text = answer.text_content();
    assert!(!answer.is_error(), "{text}\n{log}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The JSON report of a call made with [`sync_call`] whose run failed or was cancelled: an
/// error answer (`isError`) carrying the report.
async fn answered_error(call: JoinHandle<ToolResult>, log: &str) -> Value {
    let answer = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the call was answered")
        .unwrap();
    let text = answer.text_content();
    assert!(
        answer.is_error(),
        "an ended run that did not complete answered as a success: {text}\n{log}"
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Wait until the store holds `n` jobs (polling the database: the caller's call is still open).
async fn wait_jobs(data: &Path, n: usize) {
    let store = open_store(data).await;
    let deadline = tokio::time::Instant::now() + RUN_LIMIT;
    while all_jobs(&store).await.len() < n {
        assert!(tokio::time::Instant::now() < deadline, "{n} jobs never stored");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    store.close().await;
}

async fn wait_running(mcp: &Mcp, session: &str) -> Value {
    mcp.wait_until(session, RUN_LIMIT, |r| r["job_status"] == "running")
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_run_loses_nothing_and_queued_jobs_run_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let project = folder(dir.path(), "project");
    let project_arg = project.to_str().unwrap();
    let stalling = blueprints(dir.path(), "stalling", STALLING);
    let args = ["--workers", "2", "--project-dir", project_arg];

    let first = Served::start(&data, Some(&stalling), &args, &dir.path().join("first.log")).await;
    let mcp = first.connect(Some("test-parent")).await;
    // Two runs take both workers and stall.
    for name in ["stuck-a", "stuck-b"] {
        let accepted = mcp
            .json("start_agent_session", start_async(name, Some("slow"), "Work on it."))
            .await;
        assert_eq!(accepted["session_name"], name, "{accepted}");
        assert_eq!(accepted["job_status"], "pending", "{accepted}");
    }
    for name in ["stuck-a", "stuck-b"] {
        wait_running(&mcp, name).await;
    }
    // More work is accepted while they run: another session, and a resume of a running one.
    let other = mcp
        .json("start_agent_session", start_async("other", None, "Say hello."))
        .await;
    assert_eq!(other["job_status"], "pending", "{other}");
    let resume = mcp
        .json(
            "resume_agent_session",
            json!({"session_name": "stuck-a", "prompt": "Try again.", "async_mode": true, "response_format": "json"}),
        )
        .await;
    assert_eq!(resume["job_status"], "pending", "{resume}");
    let resume_job = resume["job_id"].as_str().unwrap().to_owned();

    // Just before the kill, as stored: two running, two pending, and the first run's events.
    {
        let store = open_store(&data).await;
        let jobs = all_jobs(&store).await;
        let statuses: Vec<(String, JobKind, JobStatus)> = jobs
            .iter()
            .map(|j| (j.session_name.clone(), j.kind, j.status))
            .collect();
        assert_eq!(
            statuses,
            [
                ("stuck-a".to_owned(), JobKind::StartSession, JobStatus::Running),
                ("stuck-b".to_owned(), JobKind::StartSession, JobStatus::Running),
                ("other".to_owned(), JobKind::StartSession, JobStatus::Pending),
                ("stuck-a".to_owned(), JobKind::ResumeSession, JobStatus::Pending),
            ]
        );
        store.close().await;
    }
    mcp.close().await;
    first.kill9().await;

    // The blueprint is fixed before the restart, so the queued resume can finish.
    let fixed = blueprints(dir.path(), "fixed", FIXED);
    let second = Served::start(&data, Some(&fixed), &args, &dir.path().join("second.log")).await;

    // A second orchestrator on the same data folder is refused, clearly.
    let mut intruder = tokio::process::Command::new(BIN);
    intruder
        .args(["serve", "--data"])
        .arg(&data)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let refused = tokio::time::timeout(START_LIMIT, intruder.output())
        .await
        .expect("the second start ends")
        .unwrap();
    let refusal = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        refusal.contains("another orchestrator is using the data folder"),
        "{refusal}"
    );
    assert!(refused.stdout.is_empty(), "nothing served: {refused:?}");

    let mcp = second.connect(None).await;
    // The interrupted runs: failed with the reason, and so are their sessions (stuck-b has
    // nothing queued, so it stays that way).
    let b = mcp.status("stuck-b", 0).await;
    assert_eq!(b["status"], "failed", "{b:#}");
    assert_eq!(b["job_status"], "failed", "{b:#}");
    assert_eq!(b["error"], INTERRUPTED, "{b:#}");
    // The queued jobs run: the other session finishes, the resume of the failed one too.
    let other = mcp
        .wait_until("other", RUN_LIMIT, |r| r["job_status"] == "completed")
        .await;
    assert_eq!(other["status"], "finished", "{other:#}");
    assert_eq!(other["result"], HELLO, "{other:#}");
    let a = mcp
        .wait_until("stuck-a", RUN_LIMIT, |r| {
            r["job_id"] == resume_job.as_str() && r["job_status"] == "completed"
        })
        .await;
    assert_eq!(a["status"], "finished", "{a:#}");
    assert_eq!(a["result"], "Recovered after the restart.", "{a:#}");
    mcp.close().await;

    // Nothing lost: every accepted job and session is there, each ended as it should.
    let store = open_store(&data).await;
    let jobs = all_jobs(&store).await;
    let ended: Vec<(String, JobKind, JobStatus, Option<String>)> = jobs
        .iter()
        .map(|j| (j.session_name.clone(), j.kind, j.status, j.error.clone()))
        .collect();
    assert_eq!(
        ended,
        [
            (
                "stuck-a".to_owned(),
                JobKind::StartSession,
                JobStatus::Failed,
                Some(INTERRUPTED.to_owned())
            ),
            (
                "stuck-b".to_owned(),
                JobKind::StartSession,
                JobStatus::Failed,
                Some(INTERRUPTED.to_owned())
            ),
            ("other".to_owned(), JobKind::StartSession, JobStatus::Completed, None),
            ("stuck-a".to_owned(), JobKind::ResumeSession, JobStatus::Completed, None),
        ]
    );
    let stuck_b = store.get_session_by_name("stuck-b").await.unwrap().unwrap();
    assert_eq!(stuck_b.status, SessionStatus::Failed);
    assert_eq!(stuck_b.parent_session_name.as_deref(), Some("test-parent"));
    // The events the interrupted run stored before the kill are kept.
    let events = store.events_since(&stuck_b.session_id, 0).await.unwrap();
    assert!(
        events.iter().any(|e| e.event.to_string().contains("Working")),
        "{events:?}"
    );
    store.close().await;
    // The JSON API at the printed URL, with the printed token, tells the same.
    let (code, listed) = second.api_get("/jobs").await;
    assert_eq!(code, 200, "{listed:#}");
    let api_statuses: Vec<&str> = listed["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|j| j["status"].as_str())
        .collect();
    assert_eq!(
        api_statuses,
        ["failed", "failed", "completed", "completed"],
        "{listed:#}"
    );
    assert!(
        second.stderr().contains("recovered after a stop during runs"),
        "{}",
        second.stderr()
    );
    let (status, stderr) = second.terminate(START_LIMIT).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_run_cancels_it_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let project = folder(dir.path(), "project");
    let stalling = blueprints(dir.path(), "stalling", STALLING);
    let args = ["--workers", "1", "--project-dir", project.to_str().unwrap()];
    let served = Served::start(&data, Some(&stalling), &args, &dir.path().join("serve.log")).await;

    // A parent waits in a sync start whose run stalls; with the one worker busy, another
    // waits in a sync start that stays queued, and a third in a long status wait on it.
    let stuck = sync_call(
        &served,
        "start_agent_session",
        json!({"session_name": "stuck", "prompt": "Work on it.", "agent_blueprint_name": "slow", "response_format": "json"}),
    )
    .await;
    wait_jobs(&data, 1).await;
    let watcher = served.connect(None).await;
    wait_running(&watcher, "stuck").await;
    let queued = sync_call(
        &served,
        "start_agent_session",
        json!({"session_name": "queued", "prompt": "Say hello.", "response_format": "json"}),
    )
    .await;
    wait_jobs(&data, 2).await;
    let long_wait = sync_call(
        &served,
        "get_agent_session_status",
        json!({"session_name": "queued", "wait_seconds": 600, "response_format": "json"}),
    )
    .await;
    watcher.close().await;
    // A scripted run starts no process.
    assert_eq!(children_of(served.pid()), Vec::<u32>::new());

    let pid = served.pid();
    let (status, stderr) = served.terminate(Duration::from_secs(30)).await;
    let status = status.unwrap_or_else(|| panic!("still running 30 s after SIGTERM:\n{stderr}"));
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(children_of(pid).is_empty());

    // Every waiting caller was answered before the server closed: the running job cancelled,
    // the queued one still pending (it runs at the next start).
    // A cancelled run is an error answer carrying the report.
    let report = answered_error(stuck, &stderr).await;
    assert_eq!(report["status"], "cancelled", "{report:#}");
    assert_eq!(report["job_status"], "cancelled", "{report:#}");
    assert_eq!(
        report["error"], "cancelled: the orchestrator shut down during the run",
        "{report:#}"
    );
    let accepted = answered(queued, &stderr).await;
    assert_eq!(accepted["session_name"], "queued", "{accepted:#}");
    assert_eq!(accepted["status"], "running", "{accepted:#}");
    assert_eq!(accepted["job_status"], "pending", "{accepted:#}");
    let waited = answered(long_wait, &stderr).await;
    assert_eq!(waited["job_status"], "pending", "{waited:#}");

    // As stored: the job cancelled with the shutdown reason, the session cancelled.
    let store = open_store(&data).await;
    let jobs = all_jobs(&store).await;
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert_eq!(jobs[0].status, JobStatus::Cancelled, "{jobs:?}");
    assert_eq!(jobs[1].status, JobStatus::Pending, "{jobs:?}");
    assert_eq!(
        jobs[0].error.as_deref(),
        Some("cancelled: the orchestrator shut down during the run")
    );
    let session = store.get_session_by_name("stuck").await.unwrap().unwrap();
    assert_eq!(session.status, SessionStatus::Cancelled);
    assert_eq!(session.parent_session_name.as_deref(), Some("waiting-parent"));
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_agent_session_name_is_the_parent_and_closing_stdin_ends_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let project = folder(dir.path(), "project");
    let data = dir.path().join("data");
    let config = McpServerConfig {
        name: "orchestrator".to_owned(),
        transport: McpTransport::Stdio {
            command: BIN.to_owned(),
            args: vec![
                "mcp".to_owned(),
                "--data".to_owned(),
                data.display().to_string(),
                "--project-dir".to_owned(),
                project.display().to_string(),
            ],
            env: BTreeMap::from([
                ("AGENT_SESSION_NAME".to_owned(), "stdio-parent".to_owned()),
                ("PATCHBAY_LOG".to_owned(), "warn".to_owned()),
            ]),
        },
    };
    served::add_session(&data, "stdio-parent").await;
    let mcp = Mcp::connect(config).await;
    let names: Vec<&str> = mcp.tools.iter().map(|t| t.spec().name.as_str()).collect();
    assert_eq!(names.len(), 9, "{names:?}");
    let report = mcp
        .json(
            "start_agent_session",
            json!({"session_name": "stdio-child", "prompt": "Say hello.", "response_format": "json"}),
        )
        .await;
    assert_eq!(report["status"], "finished", "{report:#}");
    assert_eq!(report["result"], HELLO, "{report:#}");
    let status = mcp.status("stdio-child", 0).await;
    assert_eq!(status["parent_session_name"], "stdio-parent", "{status:#}");
    let pid = mcp.connections().client("orchestrator").and_then(|c| c.pid()).unwrap();
    mcp.close().await;
    assert!(!is_alive(pid), "the stdio server is gone after the client closed");

    // Closing stdin alone ends the process, with success.
    let log = std::fs::File::create(dir.path().join("stdio.log")).unwrap();
    let mut child = tokio::process::Command::new(BIN)
        .args(["mcp", "--data"])
        .arg(dir.path().join("data-eof"))
        .arg("--project-dir")
        .arg(&project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "binary-test", "version": "0"}},
    });
    stdin.write_all(format!("{initialize}\n").as_bytes()).await.unwrap();
    let mut line = String::new();
    tokio::time::timeout(START_LIMIT, stdout.read_line(&mut line))
        .await
        .expect("initialize answered")
        .unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(answer["id"], 1, "{answer}");
    // The orchestrator names itself, not the library it is built on.
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "patchbay-orchestrator",
        "{answer}"
    );
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "still running 30 s after stdin closed: {}",
                std::fs::read_to_string(dir.path().join("stdio.log")).unwrap_or_default()
            )
        })
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_number_names_its_option() {
    for option in ["--workers", "--port", "--lease", "--sync-wait"] {
        let output = tokio::process::Command::new(BIN)
            .args(["serve", option, "abc"])
            .env_remove("AGENT_SESSION_NAME")
            .output()
            .await
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{option}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().next().unwrap_or_default();
        assert!(first.contains(option) && first.contains("\"abc\""), "{option}: {first}");
    }
}
