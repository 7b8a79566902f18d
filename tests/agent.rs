use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use patchbay::scripted::Part;
use patchbay::{
    Agent, Capabilities, ContentBlock, ErrorKind, Event, EventStream, ExecutedBy, FinishReason, Message, Metrics,
    Provider, ProviderError, ProviderInfo, RequestContext, Role, Signal, ToolContext, ToolResult, ToolSet, Usage,
    context::Approval, context::ApprovalHandler, context::ApprovalRequest, tool::ToolStatus,
};
use serde_json::json;

use crate::common::{assert_valid, collect, echo_call, provider, respond, tools};

#[tokio::test]
async fn host_tools_run_and_results_go_back_to_the_model() {
    let count = Arc::new(AtomicUsize::new(0));
    let scripted = provider(vec![
        respond(
            vec![Part::text("Calling."), echo_call("c1", "one"), echo_call("c2", "two")],
            10,
            5,
        ),
        respond(vec![Part::text("Done.")], 20, 3),
    ]);
    let agent = Agent::new(scripted.clone(), "m").with_tools(tools(count.clone()));
    let (events, error) = collect(agent.stream(vec![Message::user("go")], Signal::new())).await;
    assert!(error.is_none(), "{error:?}");
    assert_valid(&events, None);
    assert_eq!(count.load(Ordering::SeqCst), 2);

    let results: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult { id, result, .. } => Some((id.as_str(), result.text_content())),
            _ => None,
        })
        .collect();
    assert_eq!(results, vec![("c1", "one".to_string()), ("c2", "two".to_string())]);
    let started = events.iter().filter(|e| matches!(e, Event::Started { .. })).count();
    assert_eq!(started, 1, "one Started per run");
    match events.last() {
        Some(Event::Finish { reason, usage, .. }) => {
            assert_eq!(*reason, FinishReason::Stop);
            assert_eq!(
                (usage.input, usage.output),
                (Some(30), Some(8)),
                "usage summed over steps"
            );
        }
        other => panic!("last event: {other:?}"),
    }
    assert!(events.iter().any(|e| matches!(
        e,
        Event::StepFinished {
            step: 0,
            reason: FinishReason::ToolUse,
            ..
        }
    )));

    // The second request carries the assistant's calls and the user's results.
    let second = &scripted.requests()[1].messages;
    assert_eq!(second.len(), 3);
    assert_eq!(second[1].role, Role::Assistant);
    assert!(
        matches!(&second[2].content[0], ContentBlock::ToolResult { tool_use_id, is_error: false, .. } if tool_use_id == "c1")
    );
}

#[tokio::test]
async fn run_collects_the_response_and_the_grown_conversation() {
    let count = Arc::new(AtomicUsize::new(0));
    let agent = Agent::new(
        provider(vec![
            respond(vec![echo_call("c1", "x")], 1, 1),
            respond(vec![Part::text("ok")], 1, 1),
        ]),
        "m",
    )
    .with_tools(tools(count));
    let outcome = agent
        .run(vec![Message::user("go")], Signal::new())
        .await
        .expect("run succeeds");
    assert_eq!(outcome.response.stop_reason, Some(FinishReason::Stop));
    assert_eq!(
        outcome.messages.len(),
        4,
        "user, assistant call, user result, assistant answer"
    );
    assert_eq!(outcome.messages[3].text(), "ok");
    assert_eq!(outcome.response.tool_results["c1"].text_content(), "x");
}

#[tokio::test]
async fn a_streamed_run_hands_over_its_conversation_only_after_finish() {
    let count = Arc::new(AtomicUsize::new(0));
    let agent = Agent::new(
        provider(vec![
            respond(vec![echo_call("c1", "x")], 1, 1),
            respond(vec![Part::text("ok")], 1, 1),
        ]),
        "m",
    )
    .with_tools(tools(count));
    let (stream, transcript) = agent.stream_with_transcript(vec![Message::user("go")], Signal::new());
    assert!(transcript.messages().is_none(), "nothing before the run");
    let (events, error) = collect(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert!(matches!(events.last(), Some(Event::Finish { .. })));
    let messages = transcript.messages().expect("the conversation after Finish");
    assert_eq!(messages.len(), 4, "user, assistant call, user result, assistant answer");
    assert_eq!(messages[3].text(), "ok");

    // A run that fails hands over nothing.
    let failing = Agent::new(provider(vec![]), "m");
    let (stream, transcript) = failing.stream_with_transcript(vec![Message::user("go")], Signal::new());
    let (_, error) = collect(stream).await;
    assert!(error.is_some(), "a script without turns fails");
    assert!(transcript.messages().is_none());
}

struct Decide(Approval);

#[async_trait]
impl ApprovalHandler for Decide {
    async fn approve(&self, request: &ApprovalRequest, _cx: &ToolContext) -> Approval {
        assert_eq!(request.tool_name, "echo");
        self.0.clone()
    }
}

async fn result_with(approval: Approval) -> (ToolResult, usize) {
    let count = Arc::new(AtomicUsize::new(0));
    let agent = Agent::new(
        provider(vec![
            respond(vec![echo_call("c1", "original")], 1, 1),
            respond(vec![Part::text("ok")], 1, 1),
        ]),
        "m",
    )
    .with_tools(tools(count.clone()))
    .with_context(RequestContext::new().with_approval(Arc::new(Decide(approval))));
    let outcome = agent
        .run(vec![Message::user("go")], Signal::new())
        .await
        .expect("run succeeds");
    (
        outcome.response.tool_results["c1"].clone(),
        count.load(Ordering::SeqCst),
    )
}

#[tokio::test]
async fn approval_allow_runs_the_tool() {
    let (result, runs) = result_with(Approval::Allow).await;
    assert_eq!((result.text_content().as_str(), runs), ("original", 1));
}

#[tokio::test]
async fn approval_with_edited_input_runs_the_edited_call() {
    let (result, runs) = result_with(Approval::AllowWithInput(json!({"text": "edited"}))).await;
    assert_eq!((result.text_content().as_str(), runs), ("edited", 1));
}

#[tokio::test]
async fn approval_deny_tells_the_model_and_skips_the_tool() {
    let (result, runs) = result_with(Approval::Deny {
        message: "not today".into(),
    })
    .await;
    assert_eq!(result.status, ToolStatus::Denied);
    assert_eq!((result.text_content().as_str(), runs), ("not today", 0));
}

#[tokio::test]
async fn cancelling_stops_a_running_tool_promptly() {
    let count = Arc::new(AtomicUsize::new(0));
    let agent = Agent::new(
        provider(vec![respond(vec![Part::tool_call("c1", "slow", json!({}))], 1, 1)]),
        "m",
    )
    .with_tools(tools(count));
    let signal = Signal::new();
    let stream = agent.stream(vec![Message::user("go")], signal.clone());
    let canceller = signal.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let (events, error) = collect(stream).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the 30 s tool was not stopped"
    );
    assert_eq!(error.map(|e| e.kind()), Some(ErrorKind::Cancelled));
    let aborted = events
        .iter()
        .any(|e| matches!(e, Event::ToolResult { result, .. } if result.status == ToolStatus::Aborted));
    assert!(aborted, "{events:#?}");
}

#[tokio::test]
async fn the_step_limit_ends_the_run_with_max_steps() {
    let count = Arc::new(AtomicUsize::new(0));
    let looping = provider(
        (1..=5)
            .map(|n| respond(vec![echo_call(&format!("c{n}"), "again")], 1, 1))
            .collect(),
    );
    let agent = Agent::new(looping, "m")
        .with_tools(tools(count.clone()))
        .with_max_steps(3);
    let (events, error) = collect(agent.stream(vec![Message::user("go")], Signal::new())).await;
    assert!(error.is_none());
    assert_valid(&events, None);
    assert!(matches!(events.last(), Some(Event::Finish { reason: FinishReason::Other(r), .. }) if r == "max_steps"));
    assert_eq!(
        count.load(Ordering::SeqCst),
        2,
        "the last step's calls are not executed"
    );
}

#[tokio::test]
async fn unknown_tools_and_panicking_tools_become_failed_results() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Empty {}
    let boom = patchbay::FnTool::new("boom", "Panics.", |_: Empty, _cx: ToolContext| async move {
        panic!("tool bug");
    });
    let agent = Agent::new(
        provider(vec![
            respond(
                vec![
                    Part::tool_call("c1", "missing", json!({})),
                    Part::tool_call("c2", "boom", json!({})),
                ],
                1,
                1,
            ),
            respond(vec![Part::text("ok")], 1, 1),
        ]),
        "m",
    )
    .with_tools(ToolSet::new().with(boom));
    let outcome = agent
        .run(vec![Message::user("go")], Signal::new())
        .await
        .expect("run succeeds");
    let missing = &outcome.response.tool_results["c1"];
    let boom = &outcome.response.tool_results["c2"];
    assert_eq!((missing.status, boom.status), (ToolStatus::Failed, ToolStatus::Failed));
    assert!(missing.text_content().contains("unknown tool `missing`"));
    assert!(boom.text_content().contains("panicked"));
}

#[tokio::test]
async fn invalid_conversations_are_refused_before_any_call() {
    let scripted = provider(vec![respond(vec![Part::text("never")], 1, 1)]);
    let agent = Agent::new(scripted.clone(), "m");
    let empty = agent.run(vec![], Signal::new()).await.expect_err("empty");
    assert_eq!(empty.kind(), ErrorKind::InvalidRequest);
    let orphan = vec![
        Message::user("hi"),
        Message::new(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: "x".into(),
                content: vec![],
                is_error: false,
                cache_control: None,
            }],
        ),
    ];
    let error = agent.run(orphan, Signal::new()).await.expect_err("orphan result");
    assert_eq!(
        (error.kind(), error.facts().message_index),
        (ErrorKind::InvalidRequest, Some(1))
    );
    assert!(scripted.requests().is_empty());
}

/// An agent runtime: it runs its tools itself and reports calls and results.
struct Runtime(ProviderInfo);

#[async_trait]
impl Provider for Runtime {
    fn info(&self) -> &ProviderInfo {
        &self.0
    }

    async fn create_response(
        &self,
        _messages: &[Message],
        _tools: &ToolSet,
        model: &str,
        _signal: &Signal,
        _context: Option<&RequestContext>,
    ) -> Result<EventStream, ProviderError> {
        let events = vec![
            Event::Started {
                response_id: None,
                model: model.into(),
                session_id: Some("s-1".into()),
                warnings: vec![],
            },
            Event::ToolCall {
                id: "r1".into(),
                name: "echo".into(),
                input: json!({"text": "hi"}),
                executed_by: ExecutedBy::Provider,
                signature: None,
            },
            Event::ToolResult {
                id: "r1".into(),
                name: "echo".into(),
                result: ToolResult::text("hi"),
            },
            Event::TextDelta {
                index: 0,
                text: "done".into(),
            },
            Event::Finish {
                reason: FinishReason::Stop,
                usage: Usage::default(),
                metrics: Metrics::default(),
            },
        ];
        Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))))
    }
}

#[tokio::test]
async fn agent_runtimes_are_forwarded_not_executed() {
    let count = Arc::new(AtomicUsize::new(0));
    let runtime = Arc::new(Runtime(ProviderInfo::new(
        "runtime",
        Capabilities::none().with_runs_tools().with_sessions(),
    )));
    let agent = Agent::new(runtime, "m").with_tools(tools(count.clone()));
    let handle = agent.start(vec![Message::user("go")]);
    let session = handle.session_watch();
    let (events, error) = collect(handle.into_stream()).await;
    assert!(error.is_none());
    assert_valid(&events, None);
    assert_eq!(
        count.load(Ordering::SeqCst),
        0,
        "the host must not run a runtime's tools"
    );
    assert_eq!(session.borrow().as_deref(), Some("s-1"));
    assert_eq!(
        events.iter().filter(|e| matches!(e, Event::ToolResult { .. })).count(),
        1
    );
}
