//! `Finish` metrics over HTTP, against a mock server that is slow to its first byte and then
//! slow again to its first text delta; and the metrics of a whole agent run. Timings are
//! checked with lower bounds only (plus a loose sanity ceiling), so a loaded machine cannot
//! fail them.

use std::time::Duration;

use futures::StreamExt;
use patchbay_conformance::mock::openai::OpenAiWire;
use patchbay_conformance::mock::{Serve, WireFormat};
use patchbay_core::{Agent, Event, FnTool, Message, Metrics, Provider, Signal, ToolContext, ToolResult, ToolSet};
use patchbay_scripted::{Part, Response, Turn};
use serde::Deserialize;
use serde_json::json;

use crate::common::mock;

/// The server waits this long before its status line and headers.
const FIRST_BYTE: Duration = Duration::from_millis(150);
/// And this long again, after the first events, before the first text delta.
const FIRST_TEXT: Duration = Duration::from_millis(250);
/// No timing may exceed this (a hang, not a slow machine).
const SANITY_MS: u64 = 5_000;

fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `response` served after [`FIRST_BYTE`], with a [`FIRST_TEXT`] pause before the first frame
/// that contains `first_word` (the start of its text).
fn slow(response: Response, first_word: &str) -> Serve {
    let frames = OpenAiWire.render_response(&response, "m");
    let first_text = frames
        .iter()
        .position(|frame| frame.contains(&format!("\"content\":\"{first_word}")))
        .expect("the response streams that text");
    Serve::Delay(
        FIRST_BYTE,
        Box::new(Serve::PauseBefore {
            before: first_text,
            wait: FIRST_TEXT,
            serve: Box::new(Serve::Turn(Turn::Respond(response))),
        }),
    )
}

async fn collect(provider: &dyn Provider) -> Vec<Event> {
    let stream = provider
        .create_response(&[Message::user("hi")], &ToolSet::new(), "m", &Signal::new(), None)
        .await
        .expect("the call starts");
    stream.map(|item| item.expect("no error")).collect::<Vec<_>>().await
}

fn finish_metrics(events: &[Event]) -> Metrics {
    match events.last() {
        Some(Event::Finish { metrics, .. }) => *metrics,
        _ => panic!("no Finish: {events:#?}"),
    }
}

fn streamed(events: &[Event], reasoning: bool) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            Event::TextDelta { text, .. } if !reasoning => Some(text.as_str()),
            Event::ReasoningDelta { text, .. } if reasoning => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn assert_timings(metrics: &Metrics, first_event_after: Duration, first_text_after: Duration) {
    let first_event = metrics.first_event_ms.expect("first_event_ms");
    let first_text = metrics.first_text_ms.expect("first_text_ms");
    assert!(first_event >= ms(first_event_after), "{metrics:?}");
    assert!(first_text >= ms(first_text_after), "{metrics:?}");
    assert!(first_text >= first_event, "{metrics:?}");
    assert!(metrics.total_ms >= first_text, "{metrics:?}");
    assert!(metrics.total_ms < SANITY_MS, "{metrics:?}");
}

/// Regression: the clock started when the response headers arrived, so a server slow to its
/// first byte showed `first_event_ms` (and `total_ms`) near zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_clock_starts_with_the_call_not_with_the_response_headers() {
    let (_server, provider) = mock(vec![Serve::Delay(FIRST_BYTE, Box::new(Serve::Turn(Turn::text("Hi."))))]).await;
    let metrics = finish_metrics(&collect(&*provider).await);
    assert!(metrics.first_event_ms >= Some(ms(FIRST_BYTE)), "{metrics:?}");
    assert!(metrics.total_ms >= ms(FIRST_BYTE), "{metrics:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_time_a_slow_first_byte_and_a_slower_first_text() {
    let text = "Hello there, wide wörld 🎉";
    let (_server, provider) = mock(vec![slow(Response::new(vec![Part::text(text)]), "Hello")]).await;
    let events = collect(&*provider).await;
    let metrics = finish_metrics(&events);
    assert_timings(&metrics, FIRST_BYTE, FIRST_BYTE + FIRST_TEXT);
    assert_eq!(streamed(&events, false), text);
    assert_eq!(metrics.text_chars, text.chars().count() as u64, "chars, not bytes");
    assert_eq!(metrics.reasoning_chars, 0);
    assert_eq!(
        metrics.events,
        events.len() as u64,
        "every event the stream yielded, `Finish` included"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_reasoning_apart_from_text() {
    let thinking = "Let me think about ünïcode first.";
    let text = "Done.";
    let response = Response::new(vec![Part::thinking(thinking, "sig-1"), Part::text(text)]);
    let (_server, provider) = mock(vec![slow(response, "Done")]).await;
    let events = collect(&*provider).await;
    let metrics = finish_metrics(&events);
    assert_timings(&metrics, FIRST_BYTE, FIRST_BYTE + FIRST_TEXT);
    assert_eq!(streamed(&events, true), thinking);
    assert_eq!(metrics.reasoning_chars, thinking.chars().count() as u64);
    assert_eq!(metrics.text_chars, text.chars().count() as u64);
    assert_eq!(metrics.events, events.len() as u64);
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
        slow(Response::new(vec![Part::text(text)]), "All"),
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
    let metrics = finish_metrics(&events);
    // The second step's text comes after the first step, the tool and the second step's waits.
    assert_timings(&metrics, FIRST_BYTE, FIRST_BYTE + nap + FIRST_BYTE + FIRST_TEXT);
    assert_eq!(metrics.text_chars, text.chars().count() as u64);
    assert_eq!(
        metrics.events,
        events.len() as u64,
        "every event of the run once, `Finish` included"
    );
}
