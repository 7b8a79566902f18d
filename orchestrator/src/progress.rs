//! Progress of a waiting call: while a sync `start_agent_session` or `resume_agent_session`, or a
//! `get_agent_session_status` with `wait_seconds`, waits on a session, a caller that listens
//! (over MCP: one that sent a `progressToken`) hears what the session does now, in a few words:
//! `queued`, `starting`, `started`, `thinking`, `writing`, `tool bash: sleep 20`, `tool read
//! done`, `waiting for the model`, `finished`.
//!
//! The line comes from the session's current job and its last stored events (at most
//! [`WINDOW`] of them, never the whole history), so it is the same whichever process runs the
//! job. It is first read [`PROGRESS_INTERVAL`] into the wait (a quicker answer tells nothing),
//! then again when the session's status or events change, at most once per
//! [`PROGRESS_INTERVAL`] (a burst of streamed text costs one read), and sent when it differs
//! from the last one sent, or unchanged after [`HEARTBEAT`] of quiet (see
//! [`OrchestratorBuilder::progress_heartbeat`](crate::OrchestratorBuilder::progress_heartbeat)),
//! so a client whose request timeout restarts at each progress notification keeps waiting
//! through a long tool call.

use std::future::Future;
use std::time::Duration;

use patchbay::tool::ToolProgress;
use serde_json::Value;
use tokio::time::Instant;

use crate::runtime::Inner;
use crate::service::Orchestrator;
use crate::store::{Job, JobStatus, StoredEvent};

/// The shortest time between two reads of a session's activity.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);
/// After this long without a change, the last line is sent again (the default).
pub const HEARTBEAT: Duration = Duration::from_secs(10);
/// How many of the session's last events are read to find its activity.
pub const WINDOW: u32 = 32;
/// The most characters of a tool call's detail (its command, path...).
const DETAIL_CHARS: usize = 60;

/// What the session does now, from its current job and its last events (oldest first):
/// `None` without a job or when the job has ended (its answer says the rest; a resume not yet
/// queued must not be told as the previous run's end).
pub fn activity(job: Option<&Job>, events: &[StoredEvent]) -> Option<String> {
    let job = job?;
    let line = match job.status {
        JobStatus::Pending => "queued".to_owned(),
        JobStatus::Claimed => "starting".to_owned(),
        JobStatus::Running => {
            let own: Vec<&Value> = events
                .iter()
                .filter(|e| e.job_id.as_deref() == Some(job.job_id.as_str()))
                .map(|e| &e.event)
                .collect();
            latest(&own).unwrap_or_else(|| "running".to_owned())
        }
        JobStatus::Completed | JobStatus::Failed | JobStatus::Cancelled => return None,
    };
    Some(line)
}

/// The line of the newest event that says something (usage and sources do not).
fn latest(events: &[&Value]) -> Option<String> {
    for (at, event) in events.iter().enumerate().rev() {
        let name = || event["name"].as_str().unwrap_or("?");
        let line = match event["type"].as_str().unwrap_or_default() {
            "started" | "mcp_connected" => "started".to_owned(),
            "text_delta" => "writing".to_owned(),
            "reasoning_delta" | "reasoning_signature" | "redacted_reasoning" => "thinking".to_owned(),
            "tool_call_start" => format!("preparing tool {}", name()),
            "tool_call_delta" => {
                // The name is on the call's start, earlier in the window (if still in it).
                let start = events[..at]
                    .iter()
                    .rev()
                    .find(|e| e["type"] == "tool_call_start" && e["id"] == event["id"]);
                match start.and_then(|s| s["name"].as_str()) {
                    Some(name) => format!("preparing tool {name}"),
                    None => "preparing a tool call".to_owned(),
                }
            }
            "tool_call" => match detail(&event["input"]) {
                Some(detail) => format!("tool {}: {detail}", name()),
                None => format!("tool {}", name()),
            },
            "tool_result" => match event["result"]["status"].as_str() {
                Some("completed") | None => format!("tool {} done", name()),
                Some(status) => format!("tool {} {status}", name()),
            },
            "step_finished" => "waiting for the model".to_owned(),
            "finish" => "finished".to_owned(),
            "error" => format!("error: {}", one_line(event["message"].as_str().unwrap_or_default())),
            _ => continue,
        };
        return Some(line);
    }
    None
}

/// The telling part of a tool call's input, on one line: its command, path, pattern, URL or
/// query, else its first text.
fn detail(input: &Value) -> Option<String> {
    const KEYS: [&str; 8] = [
        "command",
        "path",
        "file_path",
        "pattern",
        "url",
        "query",
        "session_name",
        "prompt",
    ];
    let text = KEYS
        .iter()
        .find_map(|key| input.get(*key).and_then(Value::as_str))
        .or_else(|| input.as_object()?.values().find_map(Value::as_str))?;
    let line = one_line(text);
    (!line.is_empty()).then_some(line)
}

/// `text` on one line, cut at [`DETAIL_CHARS`] characters.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= DETAIL_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(DETAIL_CHARS - 1).collect();
    cut.push('…');
    cut
}

impl Orchestrator {
    /// Run `call` (a wait on the session `session_name`) and, while it runs, tell `progress`
    /// what the session does (see the module docs). Just `call` when nobody listens.
    pub async fn reporting<T>(&self, session_name: &str, progress: &ToolProgress, call: impl Future<Output = T>) -> T {
        if !progress.is_active() {
            return call.await;
        }
        let report = report(&self.inner, session_name, progress);
        tokio::pin!(call, report);
        tokio::select! {
            biased;
            out = &mut call => out,
            () = &mut report => call.await,
        }
    }
}

/// Tell `progress` what the session does, until dropped.
async fn report(inner: &Inner, session: &str, progress: &ToolProgress) {
    // A wait that ends this soon tells nothing (its answer stays plain JSON over MCP).
    tokio::time::sleep(PROGRESS_INTERVAL).await;
    let mut said: Option<String> = None;
    let mut said_at = Instant::now();
    loop {
        let status_seen = inner.status.version(session);
        let events_seen = inner.events.version(session);
        let read_at = Instant::now();
        match read(inner, session).await {
            Ok(Some(line)) if said.as_deref() != Some(line.as_str()) || said_at.elapsed() >= inner.heartbeat => {
                progress.message(line.clone());
                said = Some(line);
                said_at = Instant::now();
            }
            Ok(_) => {}
            Err(error) => tracing::debug!(%error, session, "cannot read the activity of a session"),
        }
        let quiet = inner.heartbeat.saturating_sub(said_at.elapsed());
        tokio::select! {
            _ = inner.status.changed(session, status_seen, quiet) => {}
            _ = inner.events.changed(session, events_seen, quiet) => {}
        }
        tokio::time::sleep_until(read_at + PROGRESS_INTERVAL).await;
    }
}

async fn read(inner: &Inner, session: &str) -> Result<Option<String>, crate::store::StoreError> {
    let Some(job) = inner.store.current_job(session).await? else {
        return Ok(None);
    };
    let events = match job.status {
        JobStatus::Running => inner.store.last_events(session, WINDOW).await?,
        _ => Vec::new(),
    };
    Ok(activity(Some(&job), &events))
}
