//! Recording a call with a `Tape`: the request without credentials, the body as received, a
//! manifest line the conformance crate parses, and a folder that cannot be written costing only
//! a warning.

use futures::{StreamExt, TryStreamExt};
use patchbay_conformance::fixtures::{assert_no_secret_below, files_below, manifest_in};
use patchbay_conformance::logs::LogCapture;
use patchbay_core::kit::StreamLimits;
use patchbay_core::{Event, EventStream, FinishReason, ProviderError, Signal};
use patchbay_http::record::{Recorder, Tape};
use patchbay_http::reqwest::header::HeaderValue;

use crate::common::plain_server;

const SECRET: &str = "sk-live-0123456789abcdef";

fn events(finish: bool) -> EventStream {
    let mut events = vec![
        Ok(Event::Started {
            response_id: Some("msg_1".into()),
            model: "answering-model".into(),
            session_id: None,
            warnings: Vec::new(),
        }),
        Ok(Event::TextDelta {
            index: 0,
            text: "HTTP/1.1".into(),
        }),
    ];
    if finish {
        events.push(Ok(Event::Finish {
            reason: FinishReason::Stop,
            usage: Default::default(),
            metrics: Default::default(),
        }));
    }
    Box::pin(futures::stream::iter(events))
}

/// One call through `tape`: a POST with the secret in a marked header, a custom header, the
/// query and the body; the body read whole; the events watched to their end.
async fn call(tape: &Tape, url: &str) -> Result<Vec<u8>, ProviderError> {
    let client = patchbay_http::client_builder().build().expect("a client");
    let mut key = HeaderValue::from_static(SECRET);
    key.set_sensitive(true);
    let request = client
        .post(format!("{url}v1/messages?key={SECRET}&beta=true"))
        .header("x-api-key", key)
        .header("x-my-token", SECRET)
        .header("anthropic-version", "2023-06-01")
        .body(format!(r#"{{"model":"claude-test","metadata":{{"note":"{SECRET}"}}}}"#));
    let limits = StreamLimits::default();
    let response = patchbay_http::send(tape, request, &limits, &Signal::new(), "test", |failure| {
        ProviderError::new(patchbay_core::ErrorKind::Server, format!("HTTP {}", failure.status))
    })
    .await?;
    let body: Vec<u8> = patchbay_http::body_stream(tape, response, "reading", "test")
        .map_ok(|chunk| chunk.to_vec())
        .try_concat()
        .await?;
    let _: Vec<_> = tape.watch(events(true)).collect().await;
    Ok(body)
}

#[tokio::test]
async fn a_recorded_call_keeps_the_body_and_no_secret() {
    let server = plain_server().await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let recorder = Recorder::new(dir.path(), "anthropic")
        .with_recorded_by("patchbay-test 1.0")
        .with_secret(SECRET);
    let capture = LogCapture::new();
    let body = {
        let _logs = tracing::subscriber::set_default(capture.subscriber());
        call(&recorder.tape("claude-test"), &server.url("http"))
            .await
            .expect("the call works")
    };
    assert_eq!(body, b"HTTP/1.1");

    let all = files_below(dir.path());
    assert_eq!(all.len(), 3, "{all:?}");
    assert_no_secret_below(dir.path(), SECRET);
    assert!(!capture.text().contains(SECRET), "{}", capture.text());

    let entries = manifest_in(dir.path()).expect("the manifest parses");
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert!(entry.local_path.starts_with("anthropic/recorded/"), "{entry:?}");
    assert!(entry.local_path.ends_with(".sse"), "{entry:?}");
    assert_eq!(entry.scenario, "text only");
    assert_eq!(entry.model, "answering-model");
    assert_eq!(entry.provenance, "recorded live by patchbay-test 1.0");
    assert_eq!(entry.server, server.addr.to_string());
    assert!(entry.notes.contains("requested model claude-test"), "{entry:?}");
    assert!(entry.notes.contains("HTTP 200"), "{entry:?}");
    assert_eq!(
        std::fs::read(dir.path().join(&entry.local_path)).expect("the body file"),
        b"HTTP/1.1"
    );

    let request: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(&entry.source_path)).expect("the request file"))
            .expect("JSON");
    assert!(
        entry.source_path.starts_with("requests/anthropic/recorded/"),
        "{entry:?}"
    );
    assert_eq!(request["method"], "POST");
    assert_eq!(
        request["url"],
        format!("http://{}/v1/messages?key=%5Bredacted%5D&beta=true", server.addr)
    );
    assert_eq!(request["headers"]["anthropic-version"], "2023-06-01");
    assert_eq!(
        request["removed_headers"],
        serde_json::json!(["x-api-key", "x-my-token"])
    );
    assert_eq!(request["body"]["model"], "claude-test");
    assert_eq!(request["body"]["metadata"]["note"], "[redacted]");
}

#[tokio::test]
async fn an_unwritable_folder_leaves_calls_unchanged_and_warns_once() {
    let server = plain_server().await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let not_a_folder = dir.path().join("file");
    std::fs::write(&not_a_folder, b"in the way").expect("a file");
    let recorder = Recorder::new(&not_a_folder, "anthropic").with_secret(SECRET);
    let capture = LogCapture::new();
    {
        let _logs = tracing::subscriber::set_default(capture.subscriber());
        for _ in 0..2 {
            let body = call(&recorder.tape("claude-test"), &server.url("http")).await;
            assert_eq!(body.expect("the call works"), b"HTTP/1.1");
        }
    }
    let logs = capture.text();
    assert_eq!(logs.matches(" WARN ").count(), 1, "{logs}");
    assert!(!logs.contains(SECRET), "{logs}");
    assert_eq!(std::fs::read(&not_a_folder).expect("still a file"), b"in the way");
}

#[tokio::test]
async fn a_stream_dropped_early_is_recorded_as_dropped() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tape = Recorder::new(dir.path(), "openrouter").tape("gpt-test");
    let mut sink = tape.body_sink("sse", "test body");
    sink.write(b"data: {}\n\n");
    drop(sink);
    let mut watched = tape.watch(events(false));
    assert!(watched.next().await.is_some());
    drop(watched);
    let entries = manifest_in(dir.path()).expect("the manifest parses");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].scenario, "dropped");
    assert_eq!(entries[0].format, "test body");
    assert_eq!(entries[0].model, "answering-model");
    assert!(entries[0].local_path.starts_with("openrouter/recorded/"));
}

#[test]
fn an_off_tape_records_nothing_and_passes_events_through() {
    let tape = Tape::off();
    assert!(!tape.is_on());
    let mut sink = tape.body_sink("sse", "nothing");
    sink.write(b"ignored");
    assert_eq!(format!("{tape:?}"), "Tape(off)");
}
