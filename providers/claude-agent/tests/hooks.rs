//! The host's hooks over the control protocol, on the fake CLI: each `hook_callback` kind is
//! answered with the hook output the CLI reads, and the events follow the decisions.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay_conformance::Recording;
use patchbay_core::hooks::{BeforeTool, Hooks, OnPrompt, StopDecision, StopInfo, ToolInvocation};
use patchbay_core::{
    Event, ExecutedBy, FinishReason, Message, RequestContext, Signal, ToolContext, ToolResult, ToolSet, async_trait,
};
use serde_json::{Value, json};

use crate::support;

/// Denies shell commands, rewrites host inputs, redacts host results, adds context to the
/// prompt, sends the model back once; records what it was asked.
#[derive(Default)]
struct Policy {
    block_prompt: bool,
    asked: Mutex<Vec<String>>,
}

impl Policy {
    fn note(&self, what: String) {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).push(what);
    }
}

#[async_trait]
impl Hooks for Policy {
    async fn before_tool(&self, call: &ToolInvocation, cx: &ToolContext) -> BeforeTool {
        self.note(format!(
            "before {} {:?} {} {:?}",
            call.tool_name, call.executed_by, call.input, cx.tool_use_id
        ));
        match call.executed_by {
            ExecutedBy::Provider => BeforeTool::deny("no deleting"),
            ExecutedBy::Host => BeforeTool::Rewrite(json!({ "city": "Paris" })),
        }
    }

    async fn after_tool(&self, call: &ToolInvocation, result: &ToolResult, _cx: &ToolContext) -> Option<ToolResult> {
        self.note(format!("after {} {}", call.tool_name, result.text_content()));
        Some(ToolResult::text("[redacted]"))
    }

    async fn on_prompt(&self, prompt: &str) -> OnPrompt {
        self.note(format!("prompt {prompt}"));
        if self.block_prompt {
            OnPrompt::Block {
                reason: "no weather".into(),
            }
        } else {
            OnPrompt::AddContext("The user is in Oslo.".into())
        }
    }

    async fn on_stop(&self, stop: &StopInfo) -> StopDecision {
        self.note(format!("stop {:?} {}", stop.text, stop.continued));
        if stop.continued {
            StopDecision::Stop
        } else {
            StopDecision::Continue {
                prompt: "Say more.".into(),
            }
        }
    }
}

struct Run {
    events: Vec<Event>,
    /// Our answers to the CLI's control requests, by request id.
    answers: Vec<(String, Value)>,
    state: tempfile::TempDir,
}

async fn run(transcript: &str, hooks: Option<Arc<Policy>>) -> Run {
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = ClaudeAgentConfig::new()
        .with_cli_path(support::fake_cli())
        .with_env(
            "FAKE_CLAUDE_TRANSCRIPT",
            support::transcript(transcript).display().to_string(),
        )
        .with_env("FAKE_CLAUDE_STATE", state.path().display().to_string())
        .with_stop_grace(Duration::from_millis(300));
    let provider = ClaudeAgentProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    let mut context = RequestContext::new();
    if let Some(hooks) = hooks {
        context = context.with_hooks(hooks);
    }
    let Recording { events, error } = Recording::call(
        &provider,
        &[Message::user("weather?")],
        &ToolSet::new(),
        "m",
        &Signal::new(),
        Some(&context),
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    let pid = support::fake_starts(state.path())[0];
    let stdin = support::fake_stdin(state.path(), pid);
    let answers = stdin
        .iter()
        .filter(|m| m["type"] == "control_response")
        .map(|m| {
            let id = m["response"]["request_id"].as_str().unwrap_or("").to_string();
            (id, m["response"]["response"].clone())
        })
        .collect();
    Run { events, answers, state }
}

fn answer<'a>(run: &'a Run, id: &str) -> &'a Value {
    run.answers
        .iter()
        .find(|(request, _)| request == id)
        .map(|(_, answer)| answer)
        .unwrap_or_else(|| panic!("no answer to {id}: {:?}", run.answers))
}

#[tokio::test]
async fn each_hook_callback_is_answered_with_the_hosts_decision() {
    let policy = Arc::new(Policy::default());
    let run = run("hooks_synthetic", Some(policy.clone())).await;
    assert_eq!(
        answer(&run, "hook-1"),
        &json!({ "hookSpecificOutput": { "hookEventName": "UserPromptSubmit", "additionalContext": "The user is in Oslo." } })
    );
    assert_eq!(
        answer(&run, "hook-2"),
        &json!({ "hookSpecificOutput": { "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no deleting" } })
    );
    assert_eq!(
        answer(&run, "hook-3"),
        &json!({ "hookSpecificOutput": { "hookEventName": "PreToolUse", "updatedInput": { "city": "Paris" } } })
    );
    assert_eq!(
        answer(&run, "hook-4"),
        &json!({ "hookSpecificOutput": { "hookEventName": "PostToolUse", "updatedMCPToolOutput": [{ "type": "text", "text": "[redacted]" }] } })
    );
    assert_eq!(
        answer(&run, "hook-5"),
        &json!({ "decision": "block", "reason": "Say more." })
    );
    assert_eq!(answer(&run, "hook-6"), &json!({}));
    let asked = policy.asked.lock().map(|a| a.clone()).unwrap_or_default();
    assert_eq!(
        asked,
        [
            "prompt weather?",
            r#"before Bash Provider {"command":"rm -rf /"} Some("t-bash")"#,
            r#"before get_weather Host {"city":"Oslo"} Some("t-host")"#,
            "after get_weather Cold in Paris.",
            r#"stop "Cold." false"#,
            r#"stop " Very cold." true"#,
        ]
    );
    let host_result = run.events.iter().find_map(|e| match e {
        Event::ToolResult { id, result, .. } if id == "t-host" => Some(result.text_content()),
        _ => None,
    });
    assert_eq!(
        host_result.as_deref(),
        Some("[redacted]"),
        "the event carries the replacement"
    );
    assert!(matches!(
        run.events.last(),
        Some(Event::Finish {
            reason: FinishReason::Stop,
            ..
        })
    ));
    drop(run.state);
}

#[tokio::test]
async fn a_call_without_hooks_registers_none_and_answers_a_stray_callback_with_nothing() {
    let run = run("hooks_synthetic", None).await;
    let pid = support::fake_starts(run.state.path())[0];
    let initialize = support::fake_stdin(run.state.path(), pid)
        .into_iter()
        .find(|m| m["request_id"] == "patchbay_init")
        .unwrap_or_default();
    assert_eq!(initialize["request"]["hooks"], Value::Null);
    for id in ["hook-1", "hook-2", "hook-5"] {
        assert_eq!(answer(&run, id), &json!({}), "{id}");
    }
}

#[tokio::test]
async fn a_blocked_prompt_is_a_warning_and_a_blocked_finish() {
    let policy = Arc::new(Policy {
        block_prompt: true,
        ..Policy::default()
    });
    let run = run("hooks_blocked", Some(policy)).await;
    assert_eq!(
        answer(&run, "hook-1"),
        &json!({ "decision": "block", "reason": "no weather" })
    );
    let Some(Event::Started { warnings, .. }) = run.events.first() else {
        panic!("{:?}", run.events);
    };
    assert!(
        warnings
            .iter()
            .any(|w| w.code == "prompt_blocked" && w.message == "no weather"),
        "{warnings:?}"
    );
    assert!(
        matches!(run.events.last(), Some(Event::Finish { reason: FinishReason::Other(r), .. }) if r == "blocked"),
        "{:?}",
        run.events
    );
}
