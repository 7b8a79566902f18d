//! Retry through core's `Retry` wrapper, and cancellation.

use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_core::{ErrorKind, Event, Message, Provider, Retry, RetryPolicy, Signal, ToolSet};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{provider, record};

const START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-test\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n";
const TEXT: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n";
const END: &str = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
const OVERLOADED: &str =
    "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";

fn ok() -> Serve {
    Serve::sse(format!("{START}{TEXT}{END}"))
}

fn overloaded_body() -> String {
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.to_string()
}

async fn run_with_retry(items: Vec<Serve>) -> (patchbay_conformance::Recording, usize, Duration) {
    let server = MockServer::builder(AnthropicWire)
        .serve(items)
        .start()
        .await
        .expect("mock starts");
    let retry = Retry::new(provider(&server.url()), RetryPolicy::immediate(2));
    let started = Instant::now();
    let recording = record(&retry, &Signal::new()).await;
    (recording, server.requests().len(), started.elapsed())
}

fn assert_one_clean_answer(recording: &patchbay_conformance::Recording) {
    assert!(recording.error.is_none(), "{:?}", recording.error);
    assert!(recording.validate().is_ok());
    let starts = recording
        .events
        .iter()
        .filter(|e| matches!(e, Event::Started { .. }))
        .count();
    assert_eq!(starts, 1, "nothing of a retried attempt reaches the caller");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_429_is_retried_after_retry_after() {
    let limited = Serve::status(
        429,
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}"#,
        Some(1),
    );
    let (recording, requests, elapsed) = run_with_retry(vec![limited, ok()]).await;
    assert_one_clean_answer(&recording);
    assert_eq!(requests, 2);
    assert!(
        elapsed >= Duration::from_secs(1),
        "retry-after 1 s honoured, waited {elapsed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overloaded_529_is_retried_after_retry_after_ms() {
    let overloaded = Serve::Raw {
        status: 529,
        headers: vec![("retry-after-ms".into(), "250".into())],
        body: overloaded_body().into(),
        end: patchbay_conformance::mock::RawEnd::Close,
    };
    let (recording, requests, elapsed) = run_with_retry(vec![overloaded, ok()]).await;
    assert_one_clean_answer(&recording);
    assert_eq!(requests, 2);
    assert!(elapsed >= Duration::from_millis(250), "waited {elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overloaded_error_as_the_first_event_is_retried() {
    let first = Serve::sse(format!("{START}{OVERLOADED}"));
    let (recording, requests, _) = run_with_retry(vec![first, ok()]).await;
    assert_one_clean_answer(&recording);
    assert_eq!(requests, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_after_text_is_not_retried() {
    let broken = Serve::sse(format!("{START}{TEXT}{OVERLOADED}"));
    let (recording, requests, _) = run_with_retry(vec![broken, ok()]).await;
    assert_eq!(requests, 1);
    assert_eq!(recording.error.as_ref().map(|e| e.kind()), Some(ErrorKind::Overloaded));
    assert!(recording.events.iter().any(|e| matches!(e, Event::TextDelta { .. })));
    assert!(recording.validate().is_ok());
}

/// A bare HTTP server that streams the start of an answer, then reports when the client
/// closes the connection.
async fn stalling_server() -> (String, tokio::sync::oneshot::Receiver<Instant>) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.expect("binds");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => request.extend_from_slice(&buf[..n]),
            }
        }
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        let _ = socket.write_all(format!("{head}{START}{TEXT}").as_bytes()).await;
        // The request body may still be arriving; read until the client hangs up.
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = closed_tx.send(Instant::now());
    });
    (url, closed_rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_stream_ends_promptly_and_closes_the_connection() {
    let (url, closed) = stalling_server().await;
    let provider = provider(&url);
    let signal = Signal::new();
    let mut stream = provider
        .create_response(&[Message::user("hi")], &ToolSet::new(), "claude-test", &signal, None)
        .await
        .expect("a stream");
    loop {
        match stream.next().await {
            Some(Ok(Event::TextDelta { .. })) => break,
            Some(Ok(_)) => {}
            other => panic!("expected text first, got {other:?}"),
        }
    }
    let cancelled_at = Instant::now();
    let canceller = signal.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        canceller.cancel();
    });
    // The stream is stalled: only the cancel can end it.
    let next = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("ends promptly");
    assert_eq!(next.and_then(Result::err).map(|e| e.kind()), Some(ErrorKind::Cancelled));
    assert!(stream.next().await.is_none(), "nothing after the error");
    assert!(cancelled_at.elapsed() < Duration::from_secs(2));
    drop(stream);
    let closed_at = tokio::time::timeout(Duration::from_secs(5), closed)
        .await
        .expect("the server saw the close");
    assert!(closed_at.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_waiting_for_headers_returns_cancelled() {
    let server = MockServer::builder(AnthropicWire)
        .serve([Serve::Delay(Duration::from_secs(30), Box::new(ok()))])
        .start()
        .await
        .expect("mock starts");
    let provider = provider(&server.url());
    let signal = Signal::new();
    let canceller = signal.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let result = provider
        .create_response(&[Message::user("hi")], &ToolSet::new(), "claude-test", &signal, None)
        .await;
    assert_eq!(result.err().map(|e| e.kind()), Some(ErrorKind::Cancelled));
    assert!(started.elapsed() < Duration::from_secs(5));
}
