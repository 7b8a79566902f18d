//! Stopping a run of the real Claude Code CLI leaves no process behind. A blueprint on the
//! `claude-agent` provider points at the installed CLI and at a mock of the Messages API that
//! takes the request, sends the event-stream headers and then nothing, so the run stays in
//! progress. Once the job is `running` and the CLI is a descendant of the orchestrator, the run
//! is stopped over the JSON API (`POST /jobs/{id}/cancel`, or `DELETE /sessions/{id}`): the job
//! ends `cancelled` and, within a bounded wait, no descendant of the orchestrator remains, nor
//! any process carrying the run's environment (one that escaped the orchestrator's tree).

use std::convert::Infallible;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::IntoResponse;
use futures::StreamExt;
use patchbay_conformance::peers::{claude_code_offline_env, is_alive};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::served::{Served, children_of};

/// The blueprint running the CLI.
const BLUEPRINT: &str = "stalled-cli";
/// The session started on it.
const SESSION: &str = "stalled";
/// A marker in the prompt, to tell the run's Messages request from any side request.
const MARKER: &str = "cancel-me-7f3a";
/// From the job's acceptance until it is running with the CLI waiting on the mock.
const RUNNING_LIMIT: Duration = Duration::from_secs(120);
/// From the stop until the job has ended (the API answers a cancel once it has).
const ENDED_LIMIT: Duration = Duration::from_secs(30);
/// From the job's end until no descendant of the orchestrator exists. The provider waits
/// 250 ms after the interrupt and again after SIGTERM before SIGKILL; this is generous for a
/// loaded 2-core machine.
const GONE_LIMIT: Duration = Duration::from_secs(10);
/// How often the waits look.
const POLL: Duration = Duration::from_millis(50);

/// How the run is stopped.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stop {
    /// `POST /jobs/{id}/cancel`.
    CancelJob,
    /// `DELETE /sessions/{id}`.
    DeleteSession,
}

/// What the mock was sent: the path and the JSON body of each request.
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

#[derive(Clone)]
struct MockState {
    seen: Seen,
    stop: CancellationToken,
}

/// A Messages API that accepts every request and never answers it; stops when dropped.
struct StalledModel {
    url: String,
    seen: Seen,
    stop: CancellationToken,
}

impl StalledModel {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = MockState {
            seen: Seen::default(),
            stop: CancellationToken::new(),
        };
        let app = Router::new().fallback(stall).with_state(state.clone());
        let stopped = state.stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stopped.cancelled().await })
                .await;
        });
        Self {
            url,
            seen: state.seen,
            stop: state.stop,
        }
    }

    fn requests(&self) -> Vec<(String, Value)> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Whether the run's own Messages request (the one carrying the prompt) arrived.
    fn got_the_turn(&self) -> bool {
        self.requests()
            .iter()
            .any(|(path, body)| path.ends_with("/messages") && body["messages"].to_string().contains(MARKER))
    }
}

impl Drop for StalledModel {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Record the request; answer `200` with the event-stream headers and a body that sends
/// nothing until the mock stops.
async fn stall(State(state): State<MockState>, request: Request) -> axum::response::Response {
    let path = request.uri().path().to_owned();
    if request.method() != Method::POST {
        return StatusCode::OK.into_response();
    }
    let bytes = axum::body::to_bytes(request.into_body(), 256 << 20)
        .await
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if let Ok(mut seen) = state.seen.lock() {
        seen.push((path, body));
    }
    let silence = futures::stream::pending::<Result<Bytes, Infallible>>().take_until(state.stop.cancelled_owned());
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(silence),
    )
        .into_response()
}

/// The blueprint file: the installed CLI, offline against `base_url`, `home` as its config,
/// home and temp folder, no coding tools.
fn write_blueprint(dir: &Path, cli: &Path, base_url: &str, home: &Path) {
    let mut env = claude_code_offline_env(base_url, home);
    env.insert("PATH".into(), std::env::var("PATH").unwrap_or_default());
    let blueprint = json!({
        "name": BLUEPRINT,
        "description": "The Claude Code CLI against a Messages API that never answers.",
        "provider": "claude-agent",
        "model": "claude-sonnet-4-5",
        "tools": [],
        "provider_options": {
            "cli_path": cli.display().to_string(),
            "inherit_env": false,
            "env": env,
        },
    });
    let text = toml::to_string(&blueprint).unwrap_or_else(|e| panic!("blueprint TOML: {e}"));
    std::fs::write(dir.join(format!("{BLUEPRINT}.toml")), text).unwrap();
}

/// Every live (not zombie) descendant of `pid`, parents before their children.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut next = vec![pid];
    while let Some(parent) = next.pop() {
        for child in children_of(parent) {
            next.push(child);
            if is_alive(child) {
                out.push(child);
            }
        }
    }
    out
}

/// Every live process (other than this one) whose environment holds `entry` (`NAME=value`):
/// the CLI and whatever it started, even once reparented away from the orchestrator.
fn with_environment(entry: &str) -> Vec<u32> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| *pid != own && is_alive(*pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|bytes| bytes.split(|b| *b == 0).any(|var| var == entry.as_bytes()))
        })
        .collect()
}

/// On drop (a failed test), SIGKILLs every process left with the run's environment entry, so a
/// CLI that outlived its run does not outlive the test too.
struct KillLeftovers(String);

impl Drop for KillLeftovers {
    fn drop(&mut self) {
        for pid in with_environment(&self.0) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
}

/// The command line of `pid`, its arguments joined by spaces.
fn command_line(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " ").trim_end().to_owned())
        .unwrap_or_default()
}

/// The descendants of `pid` with their command lines, for messages.
fn describe(pids: &[u32]) -> String {
    pids.iter()
        .map(|pid| format!("{pid}: {}", command_line(*pid)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Run a session on the stalled CLI, stop it with `stop`, and check that the job ends cancelled
/// and that no process of the run outlives it.
pub(crate) async fn stopping_a_claude_agent_run_leaves_no_cli_process(stop: Stop) {
    let cli = patchbay_conformance::peers::claude_code_cli().path().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    let blueprints = dir.path().join("blueprints");
    for folder in [&home, &work, &blueprints] {
        std::fs::create_dir_all(folder).unwrap();
    }
    let model = StalledModel::start().await;
    write_blueprint(&blueprints, &cli, &model.url, &home);
    // The run's processes are told apart by the CLI's config folder in their environment,
    // which a process started by the CLI keeps when it is reparented away from the orchestrator.
    let marker = format!("CLAUDE_CONFIG_DIR={}", home.display());
    let _leftovers = KillLeftovers(marker.clone());
    let served = Served::start(
        &dir.path().join("data"),
        Some(&blueprints),
        &["--project-dir", work.to_str().unwrap()],
        &dir.path().join("serve.log"),
    )
    .await;
    let orchestrator = served.pid();
    let context = |what: &str| {
        format!(
            "{what}\nmock saw {} requests: {:?}\ndescendants:\n{}\norchestrator:\n{}",
            model.requests().len(),
            model
                .requests()
                .iter()
                .map(|(path, _)| path.clone())
                .collect::<Vec<_>>(),
            describe(&descendants(orchestrator)),
            served.stderr()
        )
    };

    let request = json!({
        "type": "start_session",
        "session_name": SESSION,
        "prompt": format!("Think about {MARKER} for a long time."),
        "agent_name": BLUEPRINT,
    });
    let (status, job) = served.api_send(Method::POST, "/jobs", Some(&request)).await;
    assert_eq!(status, 201, "{job:#}\n{}", context("POST /jobs"));
    let job_id = job["job_id"].as_str().unwrap_or_default().to_owned();
    let job_path = format!("/jobs/{job_id}");

    // Running, the CLI started by the orchestrator, and the CLI waiting on the model's answer.
    let started = Instant::now();
    let cli_pids = loop {
        let (_, job) = served.api_get(&job_path).await;
        let ended = ["completed", "failed", "cancelled"].contains(&job["status"].as_str().unwrap_or_default());
        assert!(!ended, "the run ended before it was stopped: {job:#}\n{}", context(""));
        let clis: Vec<u32> = descendants(orchestrator)
            .into_iter()
            .filter(|pid| command_line(*pid).contains("claude"))
            .collect();
        if job["status"] == "running" && !clis.is_empty() && model.got_the_turn() {
            break clis;
        }
        assert!(
            started.elapsed() < RUNNING_LIMIT,
            "not running with the CLI waiting on the model within {RUNNING_LIMIT:?}: {job:#}\n{}",
            context("")
        );
        tokio::time::sleep(POLL).await;
    };
    let (status, session) = served.api_get(&format!("/sessions/by-name/{SESSION}")).await;
    assert_eq!(status, 200, "{session:#}");
    assert_eq!(session["status"], "running", "{session:#}");
    let session_id = session["session_id"].as_str().unwrap_or_default().to_owned();
    let before = descendants(orchestrator);
    eprintln!(
        "{stop:?}: running after {:?}; descendants:\n{}",
        started.elapsed(),
        describe(&before)
    );

    let marked = with_environment(&marker);
    assert!(
        cli_pids.iter().all(|pid| marked.contains(pid)),
        "the CLI {cli_pids:?} is not found by its environment ({marked:?})"
    );
    let stopped_at = Instant::now();
    match stop {
        Stop::CancelJob => {
            let (status, job) = served.api_send(Method::POST, &format!("{job_path}/cancel"), None).await;
            assert_eq!(status, 200, "{job:#}\n{}", context("cancel"));
            assert_eq!(job["status"], "cancelled", "{job:#}\n{}", context("cancel"));
        }
        Stop::DeleteSession => {
            let (status, deleted) = served
                .api_send(Method::DELETE, &format!("/sessions/{session_id}"), None)
                .await;
            assert_eq!(status, 200, "{deleted:#}\n{}", context("delete"));
            assert_eq!(deleted["session_name"], SESSION, "{deleted:#}");
        }
    }
    // The job ends cancelled (a cancel answers once it has; a delete does not wait).
    let job = loop {
        let (status, job) = served.api_get(&job_path).await;
        assert_eq!(status, 200, "{job:#}");
        if job["status"] != "running" {
            break job;
        }
        assert!(
            stopped_at.elapsed() < ENDED_LIMIT,
            "the job still runs {ENDED_LIMIT:?} after the stop: {job:#}\n{}",
            context("")
        );
        tokio::time::sleep(POLL).await;
    };
    assert_eq!(job["status"], "cancelled", "{job:#}\n{}", context(""));
    let (status, session) = served.api_get(&format!("/sessions/by-name/{SESSION}")).await;
    match stop {
        Stop::CancelJob => {
            assert_eq!(status, 200, "{session:#}");
            assert_eq!(session["status"], "cancelled", "{session:#}");
        }
        Stop::DeleteSession => assert_eq!(status, 404, "the session was deleted: {session:#}"),
    }

    // No process of the run remains: not the CLI, not anything it started.
    let ended_at = Instant::now();
    loop {
        let left = descendants(orchestrator);
        let clis_left: Vec<u32> = cli_pids.iter().copied().filter(|pid| is_alive(*pid)).collect();
        let marked = with_environment(&marker);
        if left.is_empty() && clis_left.is_empty() && marked.is_empty() {
            break;
        }
        assert!(
            ended_at.elapsed() < GONE_LIMIT,
            "{GONE_LIMIT:?} after the job ended, still running: CLI {clis_left:?}; descendants:\n{}\n\
             with the run's environment:\n{}\n{}",
            describe(&left),
            describe(&marked),
            context("")
        );
        tokio::time::sleep(POLL).await;
    }
    eprintln!(
        "{stop:?}: no descendant {:?} after the stop ({:?} after the job ended)",
        stopped_at.elapsed(),
        ended_at.elapsed()
    );

    let (status, log) = served.terminate(Duration::from_secs(30)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{log}");
}

pub(crate) async fn cancelling_a_claude_agent_run_leaves_no_cli_process() {
    stopping_a_claude_agent_run_leaves_no_cli_process(Stop::CancelJob).await;
}

pub(crate) async fn deleting_a_claude_agent_session_leaves_no_cli_process() {
    stopping_a_claude_agent_run_leaves_no_cli_process(Stop::DeleteSession).await;
}
