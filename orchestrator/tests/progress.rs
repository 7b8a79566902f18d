//! Progress while a call waits on a child: a sync start over the real MCP endpoint with a
//! `progressToken` streams the child's activity (`tool bash: sleep 2; echo woke`) before the
//! result; a status wait and a sync resume tell a tool context's reporter the same, with a
//! heartbeat while nothing changes and never the previous run's end; the activity line of
//! stored events.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::backend::Backend;
use common::{Harness, TestResult, call, called_by, ok_text, scripted, within};
use patchbay::{ToolContext, tool::ProgressUpdate, tool::ToolProgress};
use patchbay_orchestrator::blueprint::Blueprint;
use patchbay_orchestrator::http::{HttpOptions, serve_http};
use patchbay_orchestrator::progress::activity;
use patchbay_orchestrator::store::{Job, StoredEvent};
use patchbay_orchestrator::tools::agent_session_tools;
use serde_json::{Value, json};
use tokio::time::Instant;

on_both_backends!(a_status_wait_and_a_sync_resume_tell_the_childs_activity_with_a_heartbeat);

/// What the napper's tool call shows as.
const NAPPING: &str = "tool bash: sleep 2; echo woke";

/// A blueprint `napper` whose run calls `bash` with `sleep 2; echo woke`, then answers
/// `Rested.` (each run plays the script from its start).
fn napper() -> Blueprint {
    let script = json!({"turns": [
        {"type": "respond",
         "parts": [{"type": "tool_call", "id": "nap", "name": "bash", "input": {"command": "sleep 2; echo woke"}}],
         "end": {"type": "finish", "reason": "tool_use"}},
        {"type": "respond", "parts": [{"type": "text", "text": "Rested."}]},
    ]});
    Blueprint {
        tools: vec!["bash".to_owned()],
        ..scripted("napper", json!({ "script": script }))
    }
}

/// The JSON of each complete SSE event in `buffer` (taken out of it), in order.
fn take_events(buffer: &mut String) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(end) = buffer.find("\n\n") {
        let event: String = buffer.drain(..end + 2).collect();
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim_start)
            .collect();
        let data = data.join("\n");
        if !data.trim().is_empty() {
            out.push(serde_json::from_str(&data).unwrap_or_else(|e| panic!("SSE data is no JSON ({e}): {data}")));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sync_start_over_mcp_with_a_progress_token_streams_the_childs_activity_before_the_result() -> TestResult {
    let h = Harness::start(vec![napper()], 2).await?;
    let server = within("serve", serve_http(&h.orchestrator, HttpOptions::default())).await??;
    let client = patchbay_http::client_builder().build()?;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "start_agent_session",
        "arguments": {"session_name": "napping", "prompt": "Take a nap.", "agent_blueprint_name": "napper",
                      "response_format": "json"},
        "_meta": {"progressToken": "nap-1"},
    }});
    let mut response = within(
        "the answer's headers",
        client
            .post(server.url())
            .bearer_auth(server.token())
            .header("accept", "application/json, text/event-stream")
            .json(&body)
            .send(),
    )
    .await??;
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(kind.starts_with("text/event-stream"), "{kind}");

    // Read the stream as it comes: each message with when it arrived.
    let mut buffer = String::new();
    let mut seen: Vec<(Instant, Value)> = Vec::new();
    within("the whole answer", async {
        while let Some(chunk) = response.chunk().await? {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            let now = Instant::now();
            seen.extend(take_events(&mut buffer).into_iter().map(|m| (now, m)));
        }
        Ok::<_, reqwest::Error>(())
    })
    .await??;
    let (answered_at, answer) = seen.pop().ok_or("an empty answer")?;
    assert_eq!(answer["id"], 1, "the result comes last: {answer}");
    let report: Value = serde_json::from_str(answer["result"]["content"][0]["text"].as_str().ok_or("no text")?)?;
    assert_eq!(report["status"], "finished", "{report:#}");
    assert_eq!(report["result"], "Rested.", "{report:#}");

    let mut last = 0.0;
    for (_, message) in &seen {
        assert_eq!(message["method"], "notifications/progress", "{message}");
        assert_eq!(message["params"]["progressToken"], "nap-1", "{message}");
        let progress = message["params"]["progress"].as_f64().ok_or("no progress")?;
        assert!(progress > last, "progress must increase: {seen:?}");
        last = progress;
    }
    let lines: Vec<&str> = seen
        .iter()
        .filter_map(|(_, m)| m["params"]["message"].as_str())
        .collect();
    let (napping_at, _) = seen
        .iter()
        .find(|(_, m)| m["params"]["message"] == NAPPING)
        .ok_or_else(|| format!("no `{NAPPING}` in {lines:?}"))?;
    // The parent saw the child's tool call while it ran, not with the answer.
    assert!(
        answered_at.duration_since(*napping_at) >= Duration::from_millis(500),
        "the tool call was told only {:?} before the result: {lines:?}",
        answered_at.duration_since(*napping_at)
    );

    // A call without a token gets its plain JSON answer, as before.
    let status = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "get_agent_session_status", "arguments": {"session_name": "napping", "wait_seconds": 5}}});
    let plain = client
        .post(server.url())
        .bearer_auth(server.token())
        .header("accept", "application/json, text/event-stream")
        .json(&status)
        .send()
        .await?;
    let kind = plain
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(kind.starts_with("application/json"), "{kind}");
    server.shutdown().await;
    h.stop().await
}

/// A reporter keeping each line it is told.
fn recorder() -> (ToolProgress, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let progress = ToolProgress::new(move |update: ProgressUpdate| {
        if let Ok(mut lines) = sink.lock() {
            lines.push(update.message.unwrap_or_default());
        }
    });
    (progress, lines)
}

fn taken(lines: &Mutex<Vec<String>>) -> Vec<String> {
    lines.lock().map(|mut l| std::mem::take(&mut *l)).unwrap_or_default()
}

async fn a_status_wait_and_a_sync_resume_tell_the_childs_activity_with_a_heartbeat(backend: Backend) -> TestResult {
    let heartbeat = Duration::from_millis(300);
    let Some(h) = Harness::start_on_with(backend, vec![napper()], 2, |b| b.progress_heartbeat(heartbeat)).await? else {
        return Ok(());
    };
    let tools = agent_session_tools(&h.orchestrator);
    let start =
        json!({"session_name": "dozer", "prompt": "Nap.", "agent_blueprint_name": "napper", "async_mode": true});
    ok_text(&call(&tools, "start_agent_session", start, &called_by(None)).await?)?;

    // A status wait: the tool call, told again while the 2 s nap changes nothing.
    let (progress, lines) = recorder();
    let cx: ToolContext = called_by(None).with_progress(progress);
    let input = json!({"session_name": "dozer", "wait_seconds": 60, "response_format": "json"});
    let report: Value = serde_json::from_str(&ok_text(&call(&tools, "get_agent_session_status", input, &cx).await?)?)?;
    assert_eq!(report["status"], "finished", "{report:#}");
    let told = taken(&lines);
    let naps = told.iter().filter(|line| *line == NAPPING).count();
    assert!(naps >= 2, "no heartbeat during the nap: {told:?}");

    // A sync resume: this run's activity, never the last run's end.
    let resume = json!({"session_name": "dozer", "prompt": "Nap again.", "response_format": "json"});
    let report: Value = serde_json::from_str(&ok_text(&call(&tools, "resume_agent_session", resume, &cx).await?)?)?;
    assert_eq!(report["result"], "Rested.", "{report:#}");
    let told = taken(&lines);
    assert!(told.iter().any(|line| line == NAPPING), "{told:?}");
    assert_ne!(told.first().map(String::as_str), Some("finished"), "{told:?}");

    // No reporter, no wait: nothing is told.
    let input = json!({"session_name": "dozer", "response_format": "json"});
    ok_text(&call(&tools, "get_agent_session_status", input, &cx).await?)?;
    assert_eq!(taken(&lines), Vec::<String>::new());
    h.stop().await
}

fn job(status: &str) -> Job {
    serde_json::from_value(json!({
        "job_id": "j2", "type": "resume_session", "session_name": "s", "agent_name": "a", "prompt": "p",
        "project_dir": "/p", "parent_session_name": null, "callback": false, "status": status, "error": null,
        "result": null, "claimed_by": null, "created_at": 0, "claimed_at": null, "started_at": null,
        "finished_at": null, "lease_until": null,
    }))
    .unwrap_or_else(|e| panic!("a job: {e}"))
}

/// Stored events of job `j2` (an earlier run's, `j1`, when the type starts with `old:`).
fn events(list: &[Value]) -> Vec<StoredEvent> {
    list.iter()
        .enumerate()
        .map(|(i, event)| StoredEvent {
            session_id: "sid".to_owned(),
            job_id: Some(if event["old"] == true { "j1" } else { "j2" }.to_owned()),
            seq: i as i64 + 1,
            event: event.clone(),
            created_at: 0,
        })
        .collect()
}

#[test]
fn the_activity_line_tells_the_newest_event_of_the_current_run() {
    let running = job("running");
    let line = |list: &[Value]| activity(Some(&running), &events(list));
    assert_eq!(activity(None, &[]), None);
    assert_eq!(activity(Some(&job("pending")), &[]).as_deref(), Some("queued"));
    assert_eq!(activity(Some(&job("claimed")), &[]).as_deref(), Some("starting"));
    assert_eq!(
        activity(Some(&job("completed")), &[]),
        None,
        "an ended run says nothing"
    );
    // The previous run's events do not count.
    assert_eq!(
        line(&[json!({"type": "finish", "old": true})]).as_deref(),
        Some("running")
    );
    assert_eq!(
        line(&[
            json!({"type": "started"}),
            json!({"type": "reasoning_delta", "index": 0, "text": "hm"})
        ])
        .as_deref(),
        Some("thinking")
    );
    // Usage says nothing: the text before it does.
    assert_eq!(
        line(&[
            json!({"type": "text_delta", "index": 0, "text": "Hi"}),
            json!({"type": "usage"})
        ])
        .as_deref(),
        Some("writing")
    );
    let read = json!({"type": "tool_call", "id": "c1", "name": "read", "input": {"path": "notes.txt"}});
    assert_eq!(
        line(std::slice::from_ref(&read)).as_deref(),
        Some("tool read: notes.txt")
    );
    let long = json!({"type": "tool_call", "id": "c2", "name": "bash", "input": {"command": format!("echo {}\nls", "x".repeat(80))}});
    let told = line(&[long]).unwrap_or_default();
    assert!(
        told.starts_with("tool bash: echo xxx") && told.ends_with('…') && !told.contains('\n'),
        "{told}"
    );
    assert_eq!(
        line(&[
            json!({"type": "tool_call_start", "id": "c3", "name": "write"}),
            json!({"type": "tool_call_delta", "id": "c3", "json": "{"})
        ])
        .as_deref(),
        Some("preparing tool write")
    );
    let failed = json!({"type": "tool_result", "id": "c1", "name": "read", "result": {"status": "failed"}});
    assert_eq!(line(&[read, failed]).as_deref(), Some("tool read failed"));
    assert_eq!(
        line(&[json!({"type": "step_finished", "step": 0})]).as_deref(),
        Some("waiting for the model")
    );
    assert_eq!(
        line(&[json!({"type": "error", "kind": "network", "message": "connection\nreset"})]).as_deref(),
        Some("error: connection reset")
    );
}
