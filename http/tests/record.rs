//! Recording a call with a `Tape`: the request without credentials, the body as received, a
//! manifest line the conformance crate parses, and a folder that cannot be written costing only
//! a warning.

use std::collections::VecDeque;

use futures::StreamExt;
use patchbay_conformance::fixtures::{assert_no_secret_below, files_below, manifest_in};
use patchbay_conformance::logs::LogCapture;
use patchbay_core::kit::{ErrorResponse, Framing, Recording, Wire};
use patchbay_core::{Event, FinishReason, Message, ProviderError, Signal};
use patchbay_http::record::{Recorder, Tape};
use patchbay_http::reqwest::header::HeaderValue;
use patchbay_http::{Call, Prepared};

use crate::common::plain_server;

const SECRET: &str = "sk-live-0123456789abcdef";

/// A wire for the plain server's body: `Started` naming the answering model, each line as
/// text, `Finish` at the end.
struct Plain {
    queue: VecDeque<Event>,
    started: bool,
}

impl Wire for Plain {
    fn framing(&self) -> Framing {
        Framing::Lines
    }
    fn frame(&mut self, data: &[u8]) -> Result<Option<Event>, ProviderError> {
        if !std::mem::replace(&mut self.started, true) {
            self.queue.push_back(Event::Started {
                response_id: Some("msg_1".into()),
                model: "answering-model".into(),
                session_id: None,
                warnings: Vec::new(),
            });
        }
        self.queue.push_back(Event::TextDelta {
            index: 0,
            text: String::from_utf8_lossy(data).into_owned(),
        });
        Ok(None)
    }
    fn end(&mut self) -> Result<(), ProviderError> {
        self.queue.push_back(Event::Finish {
            reason: FinishReason::Stop,
            usage: Default::default(),
            metrics: Default::default(),
        });
        Ok(())
    }
    fn next_event(&mut self) -> Option<Event> {
        self.queue.pop_front()
    }
    fn is_done(&self) -> bool {
        false
    }
    fn error_response(&self, response: ErrorResponse<'_>) -> ProviderError {
        ProviderError::new(patchbay_core::ErrorKind::Server, format!("HTTP {}", response.status))
    }
}

/// One call through the runner, recorded by `recorder`: a POST with the secret in a marked
/// header, a custom header, the query and the body; the events read to their end and the text
/// they carry returned.
async fn call(recorder: &Recorder, url: &str) -> Result<Vec<u8>, ProviderError> {
    let client = patchbay_http::client_builder().build().expect("a client");
    let mut key = HeaderValue::from_static(SECRET);
    key.set_sensitive(true);
    let request = client
        .post(format!("{url}v1/messages?key={SECRET}&beta=true"))
        .header("x-api-key", key)
        .header("x-my-token", SECRET)
        .header("anthropic-version", "2023-06-01");
    let body = serde_json::json!({ "model": "claude-test", "metadata": { "note": SECRET } });
    let messages = [Message::user("hi")];
    let signal = Signal::new();
    let wire = Plain {
        queue: VecDeque::new(),
        started: false,
    };
    let events = Call::new("test", &messages, "claude-test", &signal, None)
        .with_recorder(Some(recorder))
        .run(|| Prepared::json(request, &body, wire))
        .await?;
    let recording = Recording::collect(events).await;
    match recording.error {
        Some(error) => Err(error),
        None => Ok(recording.text().into_bytes()),
    }
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
        call(&recorder, &server.url("http")).await.expect("the call works")
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
            let body = call(&recorder, &server.url("http")).await;
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
    let started = Event::Started {
        response_id: Some("msg_1".into()),
        model: "answering-model".into(),
        session_id: None,
        warnings: Vec::new(),
    };
    let text = Event::TextDelta {
        index: 0,
        text: "HTTP/1.1".into(),
    };
    let mut watched = tape.watch(Box::pin(futures::stream::iter([Ok(started), Ok(text)])));
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
