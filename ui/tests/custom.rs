//! The custom five-event protocol: one test per event.

use futures::StreamExt;
use patchbay_core::summary::{ArtifactRef, DocumentRef};
use patchbay_core::{
    ErrorKind, Event, EventStream, ExecutedBy, FinishReason, Metrics, ProviderError, ToolResult, Usage,
};
use patchbay_ui::custom::{CustomEvent, CustomStream};
use serde_json::json;

fn call(name: &str) -> Event {
    Event::ToolCall {
        id: "c1".into(),
        name: name.into(),
        input: json!({ "query": "q3" }),
        executed_by: ExecutedBy::Host,
        signature: None,
    }
}

fn finish() -> Event {
    Event::Finish {
        reason: FinishReason::Stop,
        usage: Usage {
            input: Some(10),
            output: Some(4),
            ..Usage::default()
        },
        metrics: Metrics::default(),
    }
}

#[test]
fn text_delta_writes_text_delta() {
    let events = CustomStream::new().push(&Event::TextDelta {
        index: 0,
        text: "Hi".into(),
    });
    assert_eq!(events, [CustomEvent::TextDelta { text: "Hi".into() }]);
    assert_eq!(
        &events[0].encode()[..],
        b"event: text_delta\ndata: {\"text\":\"Hi\"}\n\n"
    );
}

#[test]
fn tool_call_writes_tool_executing_with_the_default_status() {
    let events = CustomStream::new().push(&call("search"));
    assert_eq!(
        events,
        [CustomEvent::ToolExecuting {
            tool: "search".into(),
            status: "Running search...".into()
        }]
    );
}

#[test]
fn tool_call_writes_tool_executing_with_the_hosts_status() {
    let mut stream = CustomStream::new().with_status(|tool, input| format!("{tool}: {}", input["query"]));
    let events = stream.push(&call("search"));
    assert!(matches!(&events[..], [CustomEvent::ToolExecuting { status, .. }] if status == "search: \"q3\""));
}

#[test]
fn tool_result_with_artifacts_writes_artifact_created_per_artifact() {
    let result = ToolResult::text("made two")
        .with_artifact(ArtifactRef::new("a1").with_kind("table"))
        .with_artifact(ArtifactRef::new("a2").with_title("Chart"));
    let events = CustomStream::new().push(&Event::ToolResult {
        id: "c1".into(),
        name: "make".into(),
        result,
    });
    let ids: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            CustomEvent::ArtifactCreated { artifact } => Some(artifact.id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["a1", "a2"]);
    assert!(
        events[0]
            .encode()
            .starts_with(b"event: artifact_created\ndata: {\"artifact\":{\"id\":\"a1\"")
    );
}

#[test]
fn finish_writes_message_complete_with_the_summary() {
    let mut stream = CustomStream::new();
    stream.push(&call("search"));
    let result = ToolResult::text("found").with_documents([DocumentRef::new("d1"), DocumentRef::new("d1")]);
    stream.push(&Event::ToolResult {
        id: "c1".into(),
        name: "search".into(),
        result,
    });
    let events = stream.push(&finish());
    let [
        CustomEvent::MessageComplete {
            usage,
            documents,
            artifacts,
            tools,
        },
    ] = &events[..]
    else {
        panic!("one message_complete: {events:?}");
    };
    assert_eq!(usage.input, Some(10));
    assert_eq!(documents.len(), 1, "deduplicated");
    assert!(artifacts.is_empty());
    assert_eq!(tools["search"].completed, 1);
    assert_eq!(
        events[0].data(),
        json!({ "usage": { "input": 10, "output": 4 }, "documents": [{ "id": "d1" }], "artifacts": [],
                "tools": { "search": { "calls": 1, "completed": 1, "failed": 0, "denied": 0, "aborted": 0 } } })
    );
}

#[test]
fn error_writes_error_with_its_display_and_ends() {
    let mut stream = CustomStream::new();
    let error = ProviderError::new(ErrorKind::Overloaded, "Overloaded");
    let events = stream.error(&error);
    assert_eq!(
        events,
        [CustomEvent::Error {
            message: error.to_string()
        }]
    );
    assert!(stream.push(&finish()).is_empty());
}

#[tokio::test]
async fn sse_writes_named_frames_until_message_complete() {
    let items = vec![
        Ok(Event::TextDelta {
            index: 0,
            text: "Hi".into(),
        }),
        Ok(finish()),
        Ok(Event::TextDelta {
            index: 0,
            text: "ignored".into(),
        }),
    ];
    let stream: EventStream = Box::pin(futures::stream::iter(items));
    let frames: Vec<bytes::Bytes> = CustomStream::new().sse(stream).collect().await;
    let body = String::from_utf8(frames.concat()).expect("UTF-8");
    assert!(body.starts_with("event: text_delta\ndata: {\"text\":\"Hi\"}\n\nevent: message_complete\n"));
    assert_eq!(frames.len(), 2);
}
