//! Scoped tokens in a `worker` process (PostgreSQL): a run there reaches the worker's own MCP
//! endpoint with a token the worker issued, and that token reaches only the run's session
//! (it lists no other session, and cannot delete them all).
//!
//! Needs PostgreSQL's binaries (a throwaway server is started): without them the test is
//! skipped with a note, except in CI (`CI=true`), where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "peers/served.rs"]
mod served;

use std::process::Stdio;
use std::time::{Duration, Instant};

use patchbay_orchestrator::store::{PgStore, Store};
use serde_json::{Value, json};
use tokio::process::Command;

use served::{BIN, Served, fresh_pg_database};

/// A run that lists the sessions and tries to delete them all over the orchestrator's own
/// tools, then answers.
const LISTER: &str = r#"
name = "lister"
description = "Lists the sessions, then tries to delete them all."
provider = "scripted"
model = "scripted"
orchestrator_tools = true

[provider_options.script]
turns = [
  { type = "respond", parts = [
      { type = "tool_call", id = "list", name = "list_agent_sessions", input = { response_format = "json" } },
      { type = "tool_call", id = "wipe", name = "delete_all_agent_sessions", input = {} },
    ], end = { type = "finish", reason = "tool_use" } },
  { type = "respond", parts = [{ type = "text", text = "Looked around." }] },
]
"#;

/// The stored result of the tool call `name` among `events`.
fn tool_result<'a>(events: &'a [Value], name: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["name"] == name)
        .unwrap_or_else(|| panic!("no result of {name} among {events:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_in_a_worker_process_gets_a_scoped_token_the_worker_checks() {
    let Some(url) = fresh_pg_database("scoped").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let blueprints = dir.path().join("blueprints");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&blueprints).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(blueprints.join("lister.toml"), LISTER).unwrap();
    let blueprints_arg = blueprints.to_string_lossy().into_owned();
    let serve = Served::start_with_args(
        &["--database", &url, "--blueprints", &blueprints_arg, "--workers", "0"],
        &dir.path().join("serve.log"),
    )
    .await;
    let stderr = std::fs::File::create(dir.path().join("worker.log")).unwrap();
    let mut worker = Command::new(BIN)
        .args(["worker", "--database", &url, "--blueprints", &blueprints_arg])
        .arg("--project-dir")
        .arg(&project)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true)
        .spawn()
        .unwrap();

    // Another session (the built-in default blueprint), then the lister, both run by the worker.
    for (name, agent) in [("other", "default"), ("looker", "lister")] {
        let body = json!({"type": "start_session", "session_name": name, "prompt": "go", "agent_name": agent});
        let (status, job) = serve.api_send(reqwest::Method::POST, "/jobs", Some(&body)).await;
        assert_eq!(status, 201, "{job}");
        let job_id = job["job_id"].as_str().unwrap().to_owned();
        let began = Instant::now();
        loop {
            let (_, job) = serve.api_get(&format!("/jobs/{job_id}")).await;
            if job["status"] == "completed" {
                let by = job["claimed_by"].as_str().unwrap_or_default();
                assert!(
                    by.starts_with("orchestrator-"),
                    "run by a worker (serve runs none): {job}"
                );
                break;
            }
            assert!(
                !matches!(job["status"].as_str(), Some("failed" | "cancelled")),
                "{job}\n{}",
                serve.stderr()
            );
            assert!(began.elapsed() < Duration::from_secs(60), "never ended: {job}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    let store = PgStore::connect(&url).await.unwrap();
    let looker = store.get_session_by_name("looker").await.unwrap().unwrap();
    let events: Vec<Value> = store
        .events_since(&looker.session_id, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect();
    let listed = tool_result(&events, "list_agent_sessions");
    assert_eq!(listed["result"]["status"], "completed", "{listed}");
    let text = listed["result"]["content"][0]["text"].as_str().unwrap();
    let listing: Value = serde_json::from_str(text).unwrap();
    assert_eq!(listing["total"], 1, "only its own session: {listing}");
    assert_eq!(listing["sessions"][0]["session_name"], "looker", "{listing}");
    let wiped = tool_result(&events, "delete_all_agent_sessions");
    assert_eq!(wiped["result"]["status"], "failed", "{wiped}");
    assert!(wiped.to_string().contains("bearer token"), "{wiped}");
    assert!(store.get_session_by_name("other").await.unwrap().is_some());

    let pid = rustix::process::Pid::from_raw(worker.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), worker.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let (status, log) = serve.terminate(Duration::from_secs(30)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{log}");
}
