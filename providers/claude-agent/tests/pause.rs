//! A permission a person answers from a later request (`Approval::Pause`), on the fake CLI: the
//! run ends with `ApprovalRequested` and `Finish`, its CLI waits with the `can_use_tool`
//! request unanswered, and the call that brings the decision answers it and streams the rest.

use std::sync::Arc;
use std::time::{Duration, Instant};

use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay_conformance::Recording;
use patchbay_core::agent::Decisions;
use patchbay_core::context::{Approval, PauseFor, Session};
use patchbay_core::{Agent, Event, FinishReason, Message, RequestContext, Signal, ToolSet};
use serde_json::{Value, json};

use crate::support;

const SESSION: &str = "s-approval";

struct Fake {
    state: tempfile::TempDir,
    provider: Arc<ClaudeAgentProvider>,
}

fn fake(timeout: Duration) -> Fake {
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = ClaudeAgentConfig::new()
        .with_cli_path(support::fake_cli())
        .with_env(
            "FAKE_CLAUDE_TRANSCRIPT",
            support::transcript("approval_synthetic").display().to_string(),
        )
        .with_env("FAKE_CLAUDE_STATE", state.path().display().to_string())
        .with_stop_grace(Duration::from_millis(300))
        .with_cancel_grace(Duration::from_millis(100))
        .with_approval_timeout(timeout);
    let provider = Arc::new(ClaudeAgentProvider::new(config).unwrap_or_else(|e| panic!("{e}")));
    Fake { state, provider }
}

impl Fake {
    fn pids(&self) -> Vec<i32> {
        support::fake_starts(self.state.path())
    }

    /// Our answers to `perm-1` on the stdin of CLI `pid`.
    fn answers(&self, pid: i32) -> Vec<Value> {
        support::fake_stdin(self.state.path(), pid)
            .into_iter()
            .filter(|m| m["type"] == "control_response" && m["response"]["request_id"] == "perm-1")
            .map(|m| m["response"]["response"].clone())
            .collect()
    }

    async fn call(&self, context: &RequestContext) -> Vec<Event> {
        let Recording { events, error } = Recording::call(
            self.provider.as_ref(),
            &[Message::user("write a note")],
            &ToolSet::new(),
            "m",
            &Signal::new(),
            Some(context),
        )
        .await;
        assert!(error.is_none(), "{error:?}");
        events
    }
}

fn pausing() -> RequestContext {
    RequestContext::new().with_approval(Arc::new(PauseFor::tools(["Write"])))
}

fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

async fn gone_within(pid: i32, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !alive(pid)
}

fn warnings(events: &[Event]) -> Vec<String> {
    match events.first() {
        Some(Event::Started { warnings, .. }) => warnings.iter().map(|w| w.code.clone()).collect(),
        _ => Vec::new(),
    }
}

#[tokio::test]
async fn a_paused_permission_is_answered_by_the_call_that_brings_the_decision() {
    let fake = fake(Duration::from_secs(60));
    let events = fake.call(&pausing()).await;
    let n = events.len();
    assert!(
        matches!(&events[n - 2], Event::ApprovalRequested { calls } if calls.len() == 1
            && calls[0].tool_use_id == "t1" && calls[0].tool_name == "Write"
            && calls[0].input == json!({"file_path": "a.txt", "content": "hi"})),
        "{events:?}"
    );
    assert!(
        matches!(&events[n - 1], Event::Finish { reason: FinishReason::ToolUse, usage, .. } if usage.output == Some(7))
    );
    let pid = fake.pids()[0];
    assert!(alive(pid), "the CLI waits");
    assert_eq!(fake.provider.paused_processes(), 1);
    assert!(fake.answers(pid).is_empty(), "the permission is unanswered");

    let resume = pausing()
        .with_session(Session::Resume { id: SESSION.into() })
        .with_decision("t1", Approval::Allow);
    let events = fake.call(&resume).await;
    assert!(
        matches!(&events[0], Event::Started { session_id: Some(id), .. } if id == SESSION),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolResult { id, .. } if id == "t1"))
    );
    assert!(matches!(
        events.last(),
        Some(Event::Finish {
            reason: FinishReason::Stop,
            ..
        })
    ));
    assert_eq!(fake.pids(), [pid], "the same CLI went on");
    assert_eq!(
        fake.answers(pid),
        [json!({"behavior": "allow", "updatedInput": {"file_path": "a.txt", "content": "hi"}})]
    );
    assert_eq!(fake.provider.paused_processes(), 0);
    assert!(gone_within(pid, Duration::from_secs(3)).await, "stopped after the turn");
}

#[tokio::test]
async fn the_agent_pauses_and_resumes_with_a_denial() {
    let fake = fake(Duration::from_secs(60));
    let agent = Agent::new(fake.provider.clone(), "m").with_context(pausing());
    let outcome = agent
        .run(vec![Message::user("write a note")], Signal::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let paused = outcome
        .paused
        .unwrap_or_else(|| panic!("not paused: {:?}", outcome.response));
    assert!(paused.runtime);
    assert_eq!(paused.session_id.as_deref(), Some(SESSION));
    assert_eq!(paused.pending_ids().collect::<Vec<_>>(), ["t1"]);
    let pid = fake.pids()[0];

    let decisions: Decisions = [("t1".to_string(), Approval::deny("not today"))].into();
    let resumed = agent
        .resume(paused, decisions, Signal::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(resumed.paused.is_none());
    assert_eq!(resumed.response.text(), "Done.");
    assert_eq!(fake.answers(pid), [json!({"behavior": "deny", "message": "not today"})]);
    assert_eq!(fake.pids(), [pid]);
}

#[tokio::test]
async fn an_unanswered_pause_times_out_and_a_late_resume_starts_the_session_again() {
    let fake = fake(Duration::from_millis(300));
    let events = fake.call(&pausing()).await;
    assert!(matches!(
        events.last(),
        Some(Event::Finish {
            reason: FinishReason::ToolUse,
            ..
        })
    ));
    let pid = fake.pids()[0];
    assert!(
        gone_within(pid, Duration::from_secs(3)).await,
        "the waiting CLI was stopped"
    );
    assert_eq!(fake.provider.paused_processes(), 0);

    let resume = pausing()
        .with_session(Session::Resume { id: SESSION.into() })
        .with_decision("t1", Approval::Allow);
    let events = fake.call(&resume).await;
    assert!(
        warnings(&events).contains(&"decisions_unanswered".to_string()),
        "{events:?}"
    );
    let pids = fake.pids();
    assert_eq!(pids.len(), 2, "a new CLI resumed the session");
    let argv = std::fs::read_to_string(fake.state.path().join(format!("argv-{}.json", pids[1]))).unwrap_or_default();
    assert!(argv.contains(&format!("--resume={SESSION}")), "{argv}");
    // The new CLI asked again; the call's decision answered it.
    assert_eq!(fake.answers(pids[1]).len(), 1);
}

#[tokio::test]
async fn a_resume_without_a_decision_abandons_the_paused_run_and_dropping_the_provider_stops_one() {
    let fake = fake(Duration::from_secs(60));
    fake.call(&pausing()).await;
    let first = fake.pids()[0];
    let resume = RequestContext::new().with_session(Session::Resume { id: SESSION.into() });
    let events = fake.call(&resume).await;
    assert!(
        warnings(&events).contains(&"approval_abandoned".to_string()),
        "{events:?}"
    );
    assert!(
        gone_within(first, Duration::from_secs(3)).await,
        "the abandoned CLI was stopped"
    );

    let other = self::fake(Duration::from_secs(60));
    other.call(&pausing()).await;
    let pid = other.pids()[0];
    assert_eq!(other.provider.paused_processes(), 1);
    drop(other.provider);
    assert!(
        gone_within(pid, Duration::from_secs(3)).await,
        "no CLI outlives the provider"
    );
}
