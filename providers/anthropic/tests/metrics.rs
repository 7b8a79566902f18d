//! `Finish` metrics over HTTP, against a mock server that is slow to its first byte and then
//! slow again to its first text delta. Timings are checked with lower bounds only (plus a loose
//! sanity ceiling), so a loaded machine cannot fail them.

use std::time::Duration;

use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, Serve, WireFormat};
use patchbay_core::{Event, Metrics, Signal};
use patchbay_scripted::{Part, Response, Turn};

use crate::common::{provider, record};

/// The server waits this long before its status line and headers.
const FIRST_BYTE: Duration = Duration::from_millis(150);
/// And this long again, after the first events, before the first text delta.
const FIRST_TEXT: Duration = Duration::from_millis(250);
/// No timing may exceed this (a hang, not a slow machine).
const SANITY_MS: u64 = 5_000;

fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `response` served after [`FIRST_BYTE`], with a [`FIRST_TEXT`] pause before the frame that
/// carries the first text delta.
fn slow(response: Response) -> Serve {
    let frames = AnthropicWire.render_response(&response, "claude-test");
    let first_text = frames
        .iter()
        .position(|frame| frame.contains("\"text_delta\""))
        .expect("the response streams text");
    Serve::Delay(
        FIRST_BYTE,
        Box::new(Serve::PauseBefore {
            before: first_text,
            wait: FIRST_TEXT,
            serve: Box::new(Serve::Turn(Turn::Respond(response))),
        }),
    )
}

async fn metrics_of(response: Response) -> (Vec<Event>, Metrics) {
    let server = MockServer::builder(AnthropicWire)
        .serve([slow(response)])
        .start()
        .await
        .expect("mock starts");
    let recording = record(&*provider(&server.url()), &Signal::new()).await;
    assert!(recording.error.is_none(), "{:?}", recording.error);
    let Some(Event::Finish { metrics, .. }) = recording.events.last() else {
        panic!("no Finish: {:#?}", recording.events);
    };
    let metrics = *metrics;
    (recording.events, metrics)
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

fn assert_timings(metrics: &Metrics) {
    let first_event = metrics.first_event_ms.expect("first_event_ms");
    let first_text = metrics.first_text_ms.expect("first_text_ms");
    assert!(first_event >= ms(FIRST_BYTE), "{metrics:?}");
    assert!(first_text >= ms(FIRST_BYTE + FIRST_TEXT), "{metrics:?}");
    assert!(first_text >= first_event, "{metrics:?}");
    assert!(metrics.total_ms >= first_text, "{metrics:?}");
    assert!(metrics.total_ms < SANITY_MS, "{metrics:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_time_a_slow_first_byte_and_a_slower_first_text() {
    let text = "Hello there, wide wörld 🎉";
    let (events, metrics) = metrics_of(Response::new(vec![Part::text(text)])).await;
    assert_timings(&metrics);
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
    let (events, metrics) = metrics_of(Response::new(vec![Part::thinking(thinking, "sig-1"), Part::text(text)])).await;
    assert_timings(&metrics);
    assert_eq!(streamed(&events, true), thinking);
    assert_eq!(metrics.reasoning_chars, thinking.chars().count() as u64);
    assert_eq!(metrics.text_chars, text.chars().count() as u64);
    assert_eq!(metrics.events, events.len() as u64);
}
