//! Hooks on the agent loop (direct APIs) and the run summary, on the scripted provider.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use patchbay::hooks::{BeforeTool, Hooks, OnPrompt, StopDecision, StopInfo, ToolInvocation};
use patchbay::scripted::Part;
use patchbay::summary::{ArtifactRef, DocumentRef, RunSummary};
use patchbay::{
    Agent, Event, FinishReason, FnTool, Message, RequestContext, Signal, ToolContext, ToolResult, ToolSet,
    tool::ToolStatus,
};
use serde_json::{Value, json};

use crate::common::{Echo, assert_valid, collect, echo_call, provider, respond, tools};

/// A policy written once: no echo of secrets, shouted results, a note on every prompt, one
/// more round when the model stops without saying "done".
#[derive(Default)]
struct Policy {
    seen: Mutex<Vec<String>>,
}

impl Policy {
    fn seen(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl Hooks for Policy {
    async fn before_tool(&self, call: &ToolInvocation, _cx: &ToolContext) -> BeforeTool {
        self.seen().push(format!("before {}", call.tool_use_id));
        match call.input["text"].as_str() {
            Some("secret") => BeforeTool::deny("no secrets"),
            Some("quiet") => BeforeTool::Rewrite(json!({"text": "rewritten"})),
            _ => BeforeTool::Continue,
        }
    }

    async fn after_tool(&self, call: &ToolInvocation, result: &ToolResult, _cx: &ToolContext) -> Option<ToolResult> {
        self.seen()
            .push(format!("after {} {:?}", call.tool_use_id, result.status));
        (result.status == ToolStatus::Completed).then(|| ToolResult::text(result.text_content().to_uppercase()))
    }

    async fn on_prompt(&self, prompt: &str) -> OnPrompt {
        self.seen().push(format!("prompt {prompt}"));
        if prompt.contains("forbidden") {
            OnPrompt::Block {
                reason: "not that".into(),
            }
        } else {
            OnPrompt::AddContext("(the user is on a phone)".into())
        }
    }

    async fn on_stop(&self, stop: &StopInfo) -> StopDecision {
        self.seen().push(format!("stop {} {}", stop.text, stop.continued));
        if stop.text.contains("done") || stop.continued {
            StopDecision::Stop
        } else {
            StopDecision::Continue {
                prompt: "Say done.".into(),
            }
        }
    }
}

fn with_policy(policy: Arc<Policy>) -> RequestContext {
    RequestContext::new().with_hooks(policy)
}

#[tokio::test]
async fn hooks_deny_rewrite_and_replace_around_host_tools() {
    let count = Arc::new(AtomicUsize::new(0));
    let scripted = provider(vec![
        respond(
            vec![
                echo_call("c1", "secret"),
                echo_call("c2", "quiet"),
                echo_call("c3", "loud"),
            ],
            1,
            1,
        ),
        respond(vec![Part::text("All done.")], 1, 1),
    ]);
    let policy = Arc::new(Policy::default());
    let agent = Agent::new(scripted.clone(), "m")
        .with_tools(tools(count.clone()))
        .with_context(with_policy(policy.clone()));
    let (events, error) = collect(agent.stream(vec![Message::user("go")], Signal::new())).await;
    assert!(error.is_none(), "{error:?}");
    assert_valid(&events, None);
    let results: Vec<(String, ToolStatus, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult { id, result, .. } => Some((id.clone(), result.status, result.text_content())),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("c1".into(), ToolStatus::Denied, "no secrets".into()),
            ("c2".into(), ToolStatus::Completed, "REWRITTEN".into()),
            ("c3".into(), ToolStatus::Completed, "LOUD".into()),
        ]
    );
    assert_eq!(count.load(Ordering::SeqCst), 2, "the denied call never ran");
    // The model got the replaced results.
    let second = &scripted.requests()[1].messages;
    assert!(format!("{:?}", second[2]).contains("REWRITTEN"));
    let seen = policy.seen().clone();
    assert_eq!(seen[0], "prompt go");
    assert!(seen.contains(&"after c1 Denied".to_string()), "{seen:?}");
    assert_eq!(seen.last().map(String::as_str), Some("stop All done. false"));
}

#[tokio::test]
async fn the_prompt_hook_adds_context_or_blocks_the_run() {
    let scripted = provider(vec![respond(vec![Part::text("Fine, done.")], 1, 1)]);
    let agent = Agent::new(scripted.clone(), "m").with_context(with_policy(Arc::default()));
    let outcome = agent
        .run(vec![Message::user("hello")], Signal::new())
        .await
        .expect("runs");
    assert_eq!(outcome.response.text(), "Fine, done.");
    let sent = &scripted.requests()[0].messages[0];
    assert_eq!(sent.text(), "hello(the user is on a phone)");

    let blocked = provider(vec![respond(vec![Part::text("never")], 1, 1)]);
    let agent = Agent::new(blocked.clone(), "m").with_context(with_policy(Arc::default()));
    let (events, error) = collect(agent.stream(vec![Message::user("something forbidden")], Signal::new())).await;
    assert!(error.is_none());
    assert_valid(&events, None);
    assert_eq!(blocked.requests().len(), 0, "no model call");
    assert!(matches!(&events[0], Event::Started { warnings, .. } if warnings[0].code == "prompt_blocked"));
    assert!(matches!(events.last(), Some(Event::Finish { reason: FinishReason::Other(r), .. }) if r == "blocked"));
}

#[tokio::test]
async fn the_stop_hook_sends_the_model_back_once() {
    let scripted = provider(vec![
        respond(vec![Part::text("I think so.")], 1, 1),
        respond(vec![Part::text("Still thinking.")], 1, 1),
    ]);
    let policy = Arc::new(Policy::default());
    let agent = Agent::new(scripted.clone(), "m").with_context(with_policy(policy.clone()));
    let (events, error) = collect(agent.stream(vec![Message::user("q")], Signal::new())).await;
    assert!(error.is_none());
    assert_valid(&events, None);
    assert_eq!(scripted.requests().len(), 2);
    let second = &scripted.requests()[1].messages;
    assert_eq!(second.last().map(Message::text).as_deref(), Some("Say done."));
    let seen = policy.seen().clone();
    assert!(seen.contains(&"stop Still thinking. true".to_string()), "{seen:?}");
}

#[tokio::test]
async fn the_summary_gathers_documents_artifacts_counts_and_usage() {
    let search = FnTool::new("search", "Search.", |input: Echo, _cx: ToolContext| async move {
        ToolResult::text(format!("hits for {}", input.text)).with_documents([
            DocumentRef::new("d1").with_title("Q3 report"),
            DocumentRef::new(input.text.clone()).with_url("https://example.com/x"),
        ])
    });
    let chart = FnTool::new("chart", "Chart.", |_: Echo, _cx: ToolContext| async move {
        ToolResult::text("made").with_artifact(ArtifactRef::new("a1").with_kind("chart"))
    });
    let scripted = provider(vec![
        respond(
            vec![
                Part::tool_call("c1", "search", json!({"text": "d2"})),
                Part::tool_call("c2", "search", json!({"text": "d1"})),
                Part::tool_call("c3", "chart", json!({"text": ""})),
                Part::tool_call("c4", "missing", json!({})),
            ],
            10,
            5,
        ),
        patchbay::scripted::Turn::Respond(
            patchbay::scripted::Response::new(vec![Part::text("Here.")]).with_usage(3, 2),
        ),
    ]);
    let agent = Agent::new(scripted, "m").with_tools(ToolSet::new().with(search).with(chart));
    let outcome = agent.run(vec![Message::user("go")], Signal::new()).await.expect("runs");
    let summary: RunSummary = outcome.summary;
    let ids: Vec<&str> = summary.documents.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["d1", "d2"], "deduplicated, in order of first use");
    assert_eq!(summary.documents[0].title.as_deref(), Some("Q3 report"));
    assert_eq!(summary.artifacts[0].kind.as_deref(), Some("chart"));
    assert_eq!(
        (summary.tools["search"].calls, summary.tools["search"].completed),
        (2, 2)
    );
    assert_eq!(summary.tools["missing"].failed, 1);
    assert_eq!(summary.usage.input, Some(13));
    assert_eq!(summary.steps, 2);
    assert_eq!(summary.finish, Some(FinishReason::Stop));
    // Bare-string documents, as older tools report them, count too.
    let legacy = ToolResult::text("x").with_metadata(json!({"documents": ["d9"], "artifact": {"id": "a9"}}));
    assert_eq!(legacy.documents()[0].id, "d9");
    assert_eq!(legacy.artifacts()[0].id, "a9");
    let kept = ToolResult::text("x")
        .with_metadata(Value::from(3))
        .with_documents([DocumentRef::new("d")]);
    assert_eq!(kept.metadata, Some(json!({"value": 3, "documents": [{"id": "d"}]})));
}
