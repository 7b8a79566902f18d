//! `Finish` metrics over HTTP, against a mock server that is slow to its first byte and then
//! slow again to its first text delta; and the metrics of a whole agent run. Timings are
//! checked with lower bounds only (plus a loose sanity ceiling), so a loaded machine cannot
//! fail them.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use patchbay_conformance::metrics::{
    FIRST_BYTE, FIRST_TEXT, assert_finish_metrics, check_finish_metrics, slow_response,
};
use patchbay_conformance::mock::Serve;
use patchbay_conformance::mock::openai::OpenAiWire;
use patchbay_core::{Agent, Event, FnTool, Message, Signal, ToolContext, ToolResult, ToolSet};
use patchbay_openrouter::{Dialect, OpenRouterConfig, OpenRouterProvider};
use patchbay_scripted::{Part, Response, Turn};
use serde::Deserialize;
use serde_json::json;

use crate::common::mock;

fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finish_metrics_time_the_first_byte_and_text_and_count_chars() {
    check_finish_metrics(OpenAiWire, true, |url| {
        let config = OpenRouterConfig::new(url)
            .with_api_key("test-key")
            .with_dialect(Dialect::OpenRouter);
        Arc::new(OpenRouterProvider::new(config).expect("provider builds"))
    })
    .await;
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Nap {
    /// Milliseconds to sleep.
    ms: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_metrics_span_every_step_and_tool_of_the_run() {
    let nap = Duration::from_millis(200);
    let text = "All done.";
    let (_server, provider) = mock(vec![
        Serve::Delay(
            FIRST_BYTE,
            Box::new(Serve::Turn(Turn::parts(vec![Part::tool_call(
                "call_1",
                "nap",
                json!({ "ms": ms(nap) }),
            )]))),
        ),
        slow_response(&OpenAiWire, Response::new(vec![Part::text(text)])),
    ])
    .await;
    let tools = ToolSet::new().with(FnTool::new(
        "nap",
        "Sleep a little.",
        |input: Nap, _cx: ToolContext| async move {
            tokio::time::sleep(Duration::from_millis(input.ms)).await;
            ToolResult::text("rested")
        },
    ));
    let agent = Agent::new(provider, "m").with_tools(tools);
    let events: Vec<Event> = agent
        .stream(vec![Message::user("go")], Signal::new())
        .map(|item| item.expect("no error"))
        .collect()
        .await;
    assert!(
        events.iter().any(|e| matches!(e, Event::StepFinished { .. })),
        "two steps: {events:#?}"
    );
    // The second step's text comes after the first step, the tool and the second step's waits.
    let metrics = assert_finish_metrics(&events, FIRST_BYTE, FIRST_BYTE + nap + FIRST_BYTE + FIRST_TEXT);
    assert_eq!(metrics.text_chars, text.chars().count() as u64);
}
