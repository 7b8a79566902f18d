//! The real Claude Code CLI calling the host's hooks over the control protocol (registered
//! with `initialize`, answered on `hook_callback`) and starting a defined sub-agent, against
//! the Anthropic mock.

use std::sync::{Arc, Mutex};

use patchbay_claude_agent::ClaudeAgentProvider;
use patchbay_conformance::{Recording, text_of};
use patchbay_core::hooks::{BeforeTool, Hooks, OnPrompt, StopDecision, StopInfo, ToolInvocation};
use patchbay_core::{
    Event, ExecutedBy, FinishReason, FnTool, Message, RequestContext, Signal, ToolContext, ToolResult, ToolSet,
    async_trait,
};
use serde_json::json;

use crate::real::{Real, real, text, tool};

/// What the hooks were called with, and what they answer.
#[derive(Default)]
struct Scripted {
    before: Option<BeforeTool>,
    after: Option<ToolResult>,
    prompt: Option<OnPrompt>,
    /// Send the model back once with this prompt.
    stop: Option<String>,
    seen: Mutex<Vec<String>>,
    calls: Mutex<Vec<ToolInvocation>>,
    stops: Mutex<Vec<StopInfo>>,
}

#[async_trait]
impl Hooks for Scripted {
    async fn before_tool(&self, call: &ToolInvocation, cx: &ToolContext) -> BeforeTool {
        assert_eq!(cx.tool_use_id.as_deref(), Some(call.tool_use_id.as_str()));
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push("before_tool".into());
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).push(call.clone());
        self.before.clone().unwrap_or(BeforeTool::Continue)
    }

    async fn after_tool(&self, call: &ToolInvocation, result: &ToolResult, _cx: &ToolContext) -> Option<ToolResult> {
        let seen = format!("after_tool {} {}", call.tool_name, result.text_content());
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).push(seen);
        self.after.clone()
    }

    async fn on_prompt(&self, prompt: &str) -> OnPrompt {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(format!("on_prompt {prompt}"));
        self.prompt.clone().unwrap_or(OnPrompt::Continue)
    }

    async fn on_stop(&self, stop: &StopInfo) -> StopDecision {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push("on_stop".into());
        self.stops.lock().unwrap_or_else(|e| e.into_inner()).push(stop.clone());
        match &self.stop {
            Some(prompt) if !stop.continued => StopDecision::Continue { prompt: prompt.clone() },
            _ => StopDecision::Stop,
        }
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    city: String,
}

fn weather() -> ToolSet {
    ToolSet::new().with(FnTool::new(
        "get_weather",
        "Weather.",
        |input: City, _cx: ToolContext| async move { ToolResult::text(format!("Cold in {}.", input.city)) },
    ))
}

async fn run(real: &Real, hooks: Arc<Scripted>, tools: &ToolSet) -> Vec<Event> {
    let provider = ClaudeAgentProvider::new(real.config.clone()).unwrap_or_else(|e| panic!("{e}"));
    let context = RequestContext::new().with_hooks(hooks);
    let Recording { events, error } = Recording::call(
        &provider,
        &[Message::user("weather in Oslo?")],
        tools,
        "claude-test",
        &Signal::new(),
        Some(&context),
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    events
}

fn posts(real: &Real) -> Vec<String> {
    real.server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.body["messages"].to_string())
        .collect()
}

fn tool_result(events: &[Event], name: &str) -> Option<ToolResult> {
    events.iter().find_map(|e| match e {
        Event::ToolResult { name: n, result, .. } if n == name => Some(result.clone()),
        _ => None,
    })
}

pub(crate) async fn a_before_tool_hook_denies_a_host_tool_and_the_cli_reports_it() {
    let real = real(vec![
        tool("toolu_d1", "mcp__host__get_weather", json!({ "city": "Oslo" })),
        text("I may not look."),
    ])
    .await;
    let hooks = Arc::new(Scripted {
        before: Some(BeforeTool::deny("weather lookups are off today")),
        ..Scripted::default()
    });
    let events = run(&real, hooks.clone(), &weather()).await;
    let calls = hooks.calls.lock().map(|c| c.clone()).unwrap_or_default();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (
            calls[0].tool_name.as_str(),
            calls[0].executed_by,
            calls[0].tool_use_id.as_str()
        ),
        ("get_weather", ExecutedBy::Host, "toolu_d1")
    );
    assert_eq!(calls[0].input, json!({ "city": "Oslo" }));
    let result = tool_result(&events, "get_weather").unwrap_or_else(|| panic!("no result: {events:?}"));
    assert!(result.is_error(), "{result:?}");
    let posts = posts(&real);
    assert_eq!(posts.len(), 2);
    assert!(posts[1].contains("weather lookups are off today"), "{}", posts[1]);
    assert!(!posts[1].contains("Cold in Oslo."), "the tool did not run");
    assert_eq!(text_of(&events), "I may not look.");
}

pub(crate) async fn a_before_tool_hook_rewrites_the_input_and_after_tool_replaces_the_result() {
    let real = real(vec![
        tool("toolu_r1", "mcp__host__get_weather", json!({ "city": "Oslo" })),
        text("Done."),
    ])
    .await;
    let hooks = Arc::new(Scripted {
        before: Some(BeforeTool::Rewrite(json!({ "city": "Paris" }))),
        after: Some(ToolResult::text("[weather redacted]")),
        ..Scripted::default()
    });
    let events = run(&real, hooks.clone(), &weather()).await;
    let seen = hooks.seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert!(
        seen.contains(&"after_tool get_weather Cold in Paris.".to_string()),
        "the tool ran with the rewritten input: {seen:?}"
    );
    let posts = posts(&real);
    assert!(posts[1].contains("[weather redacted]"), "{}", posts[1]);
    assert!(!posts[1].contains("Cold in"), "{}", posts[1]);
    let result = tool_result(&events, "get_weather").unwrap_or_else(|| panic!("no result"));
    assert_eq!(result.text_content(), "[weather redacted]");
}

pub(crate) async fn prompt_and_stop_hooks_add_context_and_send_the_model_back() {
    let real = real(vec![text("First."), text("Second.")]).await;
    let hooks = Arc::new(Scripted {
        prompt: Some(OnPrompt::AddContext("The user is in Oslo.".into())),
        stop: Some("Check once more.".into()),
        ..Scripted::default()
    });
    let events = run(&real, hooks.clone(), &ToolSet::new()).await;
    let seen = hooks.seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen[0], "on_prompt weather in Oslo?", "{seen:?}");
    let posts = posts(&real);
    assert_eq!(posts.len(), 2, "the stop hook sent the model back once");
    assert!(posts[0].contains("The user is in Oslo."), "{}", posts[0]);
    assert!(posts[1].contains("Check once more."), "{}", posts[1]);
    let stops = hooks.stops.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(stops.len(), 2, "{stops:?}");
    assert_eq!(stops[0].text, "First.");
    assert!(!stops[0].continued && stops[1].continued, "{stops:?}");
    assert_eq!(text_of(&events), "First.Second.");
}

pub(crate) async fn a_blocked_prompt_ends_the_run_without_a_model_call() {
    let real = real(vec![text("Never sent.")]).await;
    let hooks = Arc::new(Scripted {
        prompt: Some(OnPrompt::Block {
            reason: "no weather questions".into(),
        }),
        ..Scripted::default()
    });
    let events = run(&real, hooks, &ToolSet::new()).await;
    assert!(posts(&real).is_empty(), "no model call");
    let warnings = match events.first() {
        Some(Event::Started { warnings, .. }) => warnings.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        warnings
            .iter()
            .any(|w| w.code == "prompt_blocked" && w.message == "no weather questions"),
        "{warnings:?}"
    );
    assert!(
        matches!(events.last(), Some(Event::Finish { reason: FinishReason::Other(r), .. }) if r == "blocked"),
        "{events:?}"
    );
}

/// A sub-agent the config defines (`AgentDefinition`, accepted by the CLI in `initialize`),
/// started in the foreground by the model through the CLI's `Agent` tool: its lines are
/// `SubagentMessage`s typed by the call's `subagent_type`.
pub(crate) async fn a_defined_subagent_reports_typed_messages() {
    let start = json!({ "subagent_type": "reviewer", "description": "Review", "prompt": "Review the note.", "run_in_background": false });
    let real = real(vec![
        tool("toolu_a1", "Agent", start),
        text("Looks fine."),
        text("Done."),
    ])
    .await;
    let config = real.config.clone().with_agent(
        "reviewer",
        patchbay_claude_agent::AgentDefinition::new("Reviews notes.", "You review notes.").with_tools(["Read"]),
    );
    let provider = ClaudeAgentProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    let Recording { events, error } = Recording::call(
        &provider,
        &[Message::user("review my note")],
        &ToolSet::new(),
        "claude-test",
        &Signal::new(),
        None,
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    let typed: Vec<(String, Option<String>, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::SubagentMessage {
                parent_tool_use_id,
                subagent,
                message,
            } => Some((parent_tool_use_id.clone(), subagent.clone(), message.text())),
            _ => None,
        })
        .collect();
    // The CLI (2.1.330) prints the sub-agent's prompt as its line; its reply comes back as the
    // `Agent` call's result (a background sub-agent, the default, prints neither).
    assert!(
        typed.iter().any(|(parent, kind, text)| parent == "toolu_a1"
            && kind.as_deref() == Some("reviewer")
            && text == "Review the note."),
        "{typed:?} in {events:?}"
    );
    let result = events.iter().find_map(|e| match e {
        Event::ToolResult { id, result, .. } if id == "toolu_a1" => Some(result.text_content()),
        _ => None,
    });
    assert!(result.is_some_and(|r| r.contains("Looks fine.")), "{events:?}");
    assert!(text_of(&events).ends_with("Done."), "{events:?}");
}
