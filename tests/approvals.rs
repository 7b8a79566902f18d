//! Approval across requests: a run pauses for a person's decision, hands back a serializable
//! state, and a later call resumes it; on the scripted provider and over HTTP on the Anthropic
//! mock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use patchbay::scripted::Part;
use patchbay::scripted::{Response, Turn};
use patchbay::{
    Agent, ContentBlock, Event, FinishReason, Message, Provider, Registry, Role, Signal,
    agent::{Decisions, PausedRun},
    context::{Approval, PauseFor},
    tool::ToolStatus,
};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, Serve};
use serde_json::json;

use crate::common::{assert_valid, collect, echo_call, provider, respond, tools};

fn pausing(provider: Arc<dyn Provider>, count: Arc<AtomicUsize>) -> Agent {
    let cx = patchbay::RequestContext::new().with_approval(Arc::new(PauseFor::tools(["echo"])));
    Agent::new(provider, "m").with_tools(tools(count)).with_context(cx)
}

fn decide(id: &str, approval: Approval) -> Decisions {
    Decisions::from([(id.to_string(), approval)])
}

/// The state survives JSON, as a host keeps it between requests.
fn through_json(paused: &PausedRun) -> PausedRun {
    let text = serde_json::to_string(paused).expect("serializes");
    serde_json::from_str(&text).expect("deserializes")
}

#[tokio::test]
async fn a_paused_run_ends_with_approval_requested_and_resumes_with_the_decision() {
    let count = Arc::new(AtomicUsize::new(0));
    let scripted = provider(vec![
        respond(vec![Part::text("Let me echo."), echo_call("c1", "hello")], 10, 5),
        respond(vec![Part::text("Echoed.")], 20, 3),
    ]);
    let agent = pausing(scripted.clone(), count.clone());

    let (stream, transcript) = agent.stream_with_transcript(vec![Message::user("go")], Signal::new());
    let (events, error) = collect(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_valid(&events, None);
    let n = events.len();
    assert!(
        matches!(&events[n - 2], Event::ApprovalRequested { calls } if calls.len() == 1 && calls[0].tool_use_id == "c1"
            && calls[0].input == json!({"text": "hello"})),
        "{:?}",
        events[n - 2]
    );
    assert!(matches!(
        &events[n - 1],
        Event::Finish {
            reason: FinishReason::ToolUse,
            ..
        }
    ));
    assert_eq!(count.load(Ordering::SeqCst), 0, "nothing ran before the decision");
    assert_eq!(scripted.requests().len(), 1);

    let paused = through_json(&transcript.paused().expect("the run paused"));
    assert_eq!(paused.pending_ids().collect::<Vec<_>>(), ["c1"]);
    assert_eq!(paused.step, 0);
    assert!(!paused.runtime);
    assert_eq!(paused.usage.input, Some(10));
    let last = paused.messages.last().expect("messages");
    assert_eq!(last.role, Role::Assistant);
    assert!(matches!(&last.content[1], ContentBlock::ToolUse { id, .. } if id == "c1"));

    // A later request: the person allowed it.
    let (stream, transcript) = agent.resume_stream(paused, decide("c1", Approval::Allow), Signal::new());
    let (events, error) = collect(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_valid(&events, None);
    assert!(matches!(events[0], Event::Started { .. }));
    assert_eq!(count.load(Ordering::SeqCst), 1);
    let result = events.iter().find_map(|e| match e {
        Event::ToolResult { id, result, .. } if id == "c1" => Some(result.clone()),
        _ => None,
    });
    assert_eq!(result.map(|r| r.text_content()), Some("hello".into()));
    match events.last() {
        Some(Event::Finish { reason, usage, .. }) => {
            assert_eq!(*reason, FinishReason::Stop);
            assert_eq!(
                usage.input,
                Some(30),
                "usage summed over the paused and the resumed part"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(events.iter().any(|e| matches!(e, Event::StepFinished { step: 0, .. })));
    // The model got the result after its call.
    let second = &scripted.requests()[1].messages;
    assert_eq!(second.len(), 3);
    assert!(
        matches!(&second[2].content[0], ContentBlock::ToolResult { tool_use_id, is_error: false, .. } if tool_use_id == "c1")
    );
    let messages = transcript.messages().expect("finished");
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[3].text(), "Echoed.");
    assert!(transcript.paused().is_none());
}

#[tokio::test]
async fn a_denied_decision_tells_the_model_and_runs_nothing() {
    let count = Arc::new(AtomicUsize::new(0));
    let scripted = provider(vec![
        respond(vec![echo_call("c1", "rm -rf")], 1, 1),
        respond(vec![Part::text("Understood.")], 1, 1),
    ]);
    let agent = pausing(scripted.clone(), count.clone());
    let outcome = agent.run(vec![Message::user("go")], Signal::new()).await.expect("runs");
    let paused = outcome.paused.expect("paused");
    let outcome = agent
        .resume(paused, decide("c1", Approval::deny("not today")), Signal::new())
        .await
        .expect("resumes");
    assert_eq!(count.load(Ordering::SeqCst), 0);
    let result = &outcome.response.tool_results["c1"];
    assert_eq!(result.status, ToolStatus::Denied);
    assert_eq!(result.text_content(), "not today");
    assert!(matches!(
        &scripted.requests()[1].messages[2].content[0],
        ContentBlock::ToolResult { is_error: true, .. }
    ));
    assert_eq!(outcome.response.text(), "Understood.");
    assert_eq!(outcome.summary.tools["echo"].denied, 1);
}

#[tokio::test]
async fn an_edited_input_runs_and_an_undecided_call_pauses_again() {
    let count = Arc::new(AtomicUsize::new(0));
    let scripted = provider(vec![
        respond(vec![echo_call("c1", "one"), echo_call("c2", "two")], 1, 1),
        respond(vec![Part::text("Both done.")], 1, 1),
    ]);
    let agent = pausing(scripted.clone(), count.clone());
    let outcome = agent.run(vec![Message::user("go")], Signal::new()).await.expect("runs");
    let paused = outcome.paused.expect("paused");
    assert_eq!(paused.pending_ids().collect::<Vec<_>>(), ["c1", "c2"]);

    // Only c1 decided: the run pauses again for c2, and c1's decision is kept.
    let again = agent
        .resume(
            paused,
            decide("c1", Approval::AllowWithInput(json!({"text": "ONE"}))),
            Signal::new(),
        )
        .await
        .expect("resumes");
    assert_eq!(
        count.load(Ordering::SeqCst),
        0,
        "nothing runs while a call of the step waits"
    );
    let paused = again.paused.expect("paused again");
    assert_eq!(paused.pending_ids().collect::<Vec<_>>(), ["c2"]);

    let done = agent
        .resume(through_json(&paused), decide("c2", Approval::Allow), Signal::new())
        .await
        .expect("resumes");
    assert_eq!(count.load(Ordering::SeqCst), 2);
    assert_eq!(done.response.tool_results["c1"].text_content(), "ONE");
    assert_eq!(done.response.tool_results["c2"].text_content(), "two");
    assert_eq!(done.response.text(), "Both done.");
    assert_eq!(
        scripted.requests().len(),
        2,
        "the model was called once after the pause"
    );
}

#[tokio::test]
async fn calls_of_other_tools_run_without_a_pause() {
    let count = Arc::new(AtomicUsize::new(0));
    let agent = Agent::new(
        provider(vec![
            respond(vec![echo_call("c1", "x")], 1, 1),
            respond(vec![Part::text("ok")], 1, 1),
        ]),
        "m",
    )
    .with_tools(tools(count.clone()))
    .with_context(patchbay::RequestContext::new().with_approval(Arc::new(PauseFor::tools(["delete"]))));
    let outcome = agent.run(vec![Message::user("go")], Signal::new()).await.expect("runs");
    assert!(outcome.paused.is_none());
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(outcome.response.text(), "ok");
}

#[tokio::test]
async fn the_round_trip_holds_over_http_on_the_anthropic_mock() {
    let count = Arc::new(AtomicUsize::new(0));
    let turns = vec![
        Turn::Respond(Response::new(vec![Part::text("Checking."), echo_call("toolu_1", "over http")]).with_usage(7, 4)),
        Turn::Respond(Response::new(vec![Part::text("It said: over http.")]).with_usage(9, 5)),
    ];
    let server = MockServer::builder(AnthropicWire)
        .serve(turns.into_iter().map(Serve::Turn))
        .start()
        .await
        .expect("mock starts");
    let anthropic = Registry::compiled()
        .build("anthropic", &json!({ "base_url": server.url(), "api_key": "sk-test" }))
        .expect("builds");
    let agent = pausing(anthropic, count.clone());
    let outcome = agent.run(vec![Message::user("go")], Signal::new()).await.expect("runs");
    let paused = through_json(&outcome.paused.expect("paused"));
    assert_eq!(server.requests().len(), 1);
    let outcome = agent
        .resume(paused, decide("toolu_1", Approval::Allow), Signal::new())
        .await
        .expect("resumes");
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(outcome.response.text(), "It said: over http.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let body = &requests[1].body;
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3, "{body}");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_1");
}

#[tokio::test]
async fn the_summary_holds_over_http_on_the_anthropic_mock() {
    use patchbay::summary::DocumentRef;
    use patchbay::{FnTool, ToolContext, ToolResult, ToolSet};
    let search = FnTool::new(
        "search",
        "Search.",
        |input: crate::common::Echo, _cx: ToolContext| async move {
            ToolResult::text("hit").with_documents([DocumentRef::new(input.text).with_title("Found")])
        },
    );
    let turns = vec![
        Turn::Respond(
            Response::new(vec![
                Part::tool_call("toolu_a", "search", json!({"text": "d1"})),
                Part::tool_call("toolu_b", "search", json!({"text": "d1"})),
            ])
            .with_usage(7, 4),
        ),
        Turn::Respond(
            Response::new(vec![Part::cited(
                "The answer.",
                vec![patchbay::scripted::Citation::new(
                    "https://example.com/a",
                    "A",
                    "quoted",
                )],
            )])
            .with_usage(9, 5),
        ),
    ];
    let server = MockServer::builder(AnthropicWire)
        .serve(turns.into_iter().map(Serve::Turn))
        .start()
        .await
        .expect("mock starts");
    let anthropic = Registry::compiled()
        .build("anthropic", &json!({ "base_url": server.url(), "api_key": "sk-test" }))
        .expect("builds");
    let agent = Agent::new(anthropic, "m").with_tools(ToolSet::new().with(search));
    let outcome = agent.run(vec![Message::user("go")], Signal::new()).await.expect("runs");
    let summary = outcome.summary;
    assert_eq!(summary.documents.len(), 1, "one document, used twice");
    assert_eq!(summary.tools["search"].completed, 2);
    assert_eq!((summary.usage.input, summary.usage.output), (Some(16), Some(9)));
    assert_eq!(
        summary.sources.first().and_then(|s| s.as_url()),
        Some("https://example.com/a")
    );
    assert_eq!(summary.finish, Some(FinishReason::Stop));
}
