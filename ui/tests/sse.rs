//! The SSE framing and the whole-stream helpers.

use futures::StreamExt;
use patchbay_core::{ErrorKind, Event, EventStream, FinishReason, Metrics, ProviderError, Usage};
use patchbay_ui::sse::{self, DONE, HEADER_NAME, HEADER_VALUE, HEADERS};
use patchbay_ui::{UiChunk, UiStream};

fn events(items: Vec<Result<Event, ProviderError>>) -> EventStream {
    Box::pin(futures::stream::iter(items))
}

fn started() -> Event {
    Event::Started {
        response_id: None,
        model: "m".into(),
        session_id: None,
        warnings: vec![],
    }
}

fn text(text: &str) -> Event {
    Event::TextDelta {
        index: 0,
        text: text.into(),
    }
}

async fn body(stream: impl futures::Stream<Item = bytes::Bytes>) -> String {
    let frames: Vec<bytes::Bytes> = stream.collect().await;
    String::from_utf8(frames.concat()).expect("UTF-8")
}

#[test]
fn encode_writes_one_data_line_per_chunk() {
    let frame = sse::encode(&UiChunk::TextDelta {
        id: "text-0".into(),
        delta: "line one\nline two".into(),
    });
    assert_eq!(
        &frame[..],
        b"data: {\"type\":\"text-delta\",\"id\":\"text-0\",\"delta\":\"line one\\nline two\"}\n\n"
    );
}

#[test]
fn encode_with_id_writes_an_id_line_first() {
    let frame = sse::encode_with_id(&UiChunk::StartStep, "7\nx");
    assert_eq!(&frame[..], b"id: 7 x\ndata: {\"type\":\"start-step\"}\n\n");
}

#[test]
fn headers_name_the_ui_message_stream() {
    assert!(HEADERS.contains(&(HEADER_NAME, HEADER_VALUE)));
    assert!(HEADERS.contains(&("content-type", "text/event-stream")));
    assert_eq!(DONE, b"data: [DONE]\n\n");
}

#[tokio::test]
async fn sse_ends_with_done_after_finish() {
    let finish = Event::Finish {
        reason: FinishReason::Stop,
        usage: Usage::default(),
        metrics: Metrics::default(),
    };
    let body = body(sse::sse(events(vec![Ok(started()), Ok(text("Hi")), Ok(finish)]))).await;
    assert!(body.starts_with("data: {\"type\":\"start\",\"messageId\":\"msg-"));
    assert!(body.contains("data: {\"type\":\"finish\",\"finishReason\":\"stop\"}\n\n"));
    assert!(body.ends_with("data: [DONE]\n\n"));
}

#[tokio::test]
async fn sse_after_an_error_writes_error_then_done_and_reads_no_further() {
    let error = ProviderError::new(ErrorKind::Overloaded, "Overloaded");
    let stream = UiStream::new().sse(events(vec![Ok(started()), Err(error), Ok(text("after"))]));
    let body = body(stream).await;
    assert!(body.contains("\"type\":\"error\""));
    assert!(!body.contains("after"));
    assert!(body.ends_with("data: [DONE]\n\n"));
}

#[tokio::test]
async fn chunks_of_a_stream_without_finish_end_interrupted() {
    let chunks: Vec<UiChunk> = sse::chunks(events(vec![Ok(started()), Ok(text("Cut"))]))
        .collect()
        .await;
    assert!(matches!(
        chunks.last(),
        Some(UiChunk::Finish {
            finish_reason: Some(patchbay_ui::UiFinishReason::Interrupted),
            ..
        })
    ));
}

#[tokio::test]
async fn sse_with_ids_numbers_every_frame_but_done() {
    let stream = UiStream::new()
        .with_message_id("m")
        .sse_with_ids(events(vec![Ok(started())]));
    let body = body(stream).await;
    assert!(body.starts_with("id: 0\ndata: {\"type\":\"start\""));
    assert!(body.contains("id: 1\ndata: {\"type\":\"start-step\"}"));
    assert!(body.ends_with("\n\ndata: [DONE]\n\n"));
}

#[test]
fn chunks_read_back_as_written() {
    let chunks = vec![
        UiChunk::data("opaque", serde_json::json!({ "a": 1 })),
        UiChunk::ToolOutputDenied {
            tool_call_id: "c".into(),
        },
        UiChunk::Finish {
            finish_reason: Some(patchbay_ui::UiFinishReason::ContentFilter),
            message_metadata: None,
        },
    ];
    let json = serde_json::to_string(&chunks).expect("JSON");
    assert!(json.contains("\"type\":\"data-opaque\"") && json.contains("\"content-filter\""));
    let back: Vec<UiChunk> = serde_json::from_str(&json).expect("chunks");
    assert_eq!(back, chunks);
}
