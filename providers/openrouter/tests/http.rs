//! HTTP behaviour: status mapping with retry-after, transport failures, cancellation that
//! closes the connection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_conformance::hardening::{self, BuildHttp, HttpWire};
use patchbay_conformance::mock::{RawEnd, Serve};
use patchbay_core::kit::StreamLimits;
use patchbay_core::{ErrorKind, Event, Message, Provider, ProviderError, Signal, ToolSet};
use patchbay_openrouter::{OpenRouterConfig, OpenRouterProvider};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::mock;

async fn first_error(serve: Serve) -> ProviderError {
    let (_server, provider) = mock(vec![serve]).await;
    match provider
        .create_response(&[Message::user("hi")], &ToolSet::new(), "m", &Signal::new(), None)
        .await
    {
        Err(error) => error,
        Ok(stream) => {
            let items: Vec<_> = stream.collect().await;
            items
                .into_iter()
                .find_map(Result::err)
                .expect("the stream ended with an error")
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_statuses_map_to_kinds_with_retry_after() {
    let error = first_error(Serve::status(
        429,
        r#"{"error":{"message":"slow down","type":"rate_limit_exceeded","code":"rate_limit_exceeded"}}"#,
        Some(3),
    ))
    .await;
    assert_eq!(error.kind(), ErrorKind::RateLimited);
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));

    let cases = [
        (
            401,
            r#"{"error":{"message":"No auth credentials found","code":401}}"#,
            ErrorKind::Auth,
        ),
        (
            400,
            r#"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
            ErrorKind::ContextTooLong,
        ),
        (
            400,
            r#"{"error":{"message":"bad","type":"invalid_request_error"}}"#,
            ErrorKind::InvalidRequest,
        ),
        (503, "<html>busy</html>", ErrorKind::Overloaded),
        (500, "", ErrorKind::Server),
        (404, r#"{"message":"no such route"}"#, ErrorKind::InvalidRequest),
    ];
    for (status, body, kind) in cases {
        let error = first_error(Serve::status(status, body, None)).await;
        assert_eq!(error.kind(), kind, "HTTP {status} {body}");
        assert_eq!(error.status(), Some(status));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_mid_stream_is_a_transport_error_after_the_partial_output() {
    let body = "data: {\"id\":\"r\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"part\"}}]}\n\n";
    let serve = Serve::Raw {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        body: body.into(),
        end: RawEnd::Reset,
    };
    let (_server, provider) = mock(vec![serve]).await;
    let items: Vec<_> = match provider
        .create_response(&[Message::user("hi")], &ToolSet::new(), "m", &Signal::new(), None)
        .await
    {
        Ok(stream) => stream.collect().await,
        // The reset may beat the response head: then the call itself fails.
        Err(error) => vec![Err(error)],
    };
    if items.len() > 1 {
        assert!(matches!(&items[1], Ok(Event::TextDelta { text, .. }) if text == "part"));
    }
    let error = items.last().and_then(|i| i.as_ref().err()).expect("ends with an error");
    assert!(
        matches!(error.kind(), ErrorKind::Transport | ErrorKind::Protocol),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let provider =
        OpenRouterProvider::new(OpenRouterConfig::new(format!("http://127.0.0.1:{port}/v1"))).expect("builds");
    let error = provider
        .create_response(&[Message::user("hi")], &ToolSet::new(), "m", &Signal::new(), None)
        .await
        .err()
        .expect("fails");
    assert_eq!(error.kind(), ErrorKind::Transport);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_conversation_fails_before_any_io() {
    let provider = OpenRouterProvider::new(OpenRouterConfig::new("http://127.0.0.1:9/v1")).expect("builds");
    let error = provider
        .create_response(&[], &ToolSet::new(), "m", &Signal::new(), None)
        .await
        .err()
        .expect("fails");
    assert_eq!(error.kind(), ErrorKind::InvalidRequest);
}

/// A server that streams one chunk, then waits: the test sees when the client hangs up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_the_stream_promptly_and_closes_the_connection() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<Duration>();
    let (cancelled_tx, cancelled_rx) = tokio::sync::oneshot::channel::<Instant>();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let mut request = vec![0u8; 64 * 1024];
        let mut seen = 0;
        // Read the request head and body (the body ends with `}`: good enough here).
        loop {
            let n = socket.read(&mut request[seen..]).await.expect("read");
            seen += n;
            let text = String::from_utf8_lossy(&request[..seen]);
            if n == 0 || text.contains("\r\n\r\n") && text.trim_end().ends_with('}') {
                break;
            }
        }
        let chunk = "data: {\"id\":\"r\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"thinking...\"}}]}\n\n";
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let frame = format!("{head}{:x}\r\n{chunk}\r\n", chunk.len());
        socket.write_all(frame.as_bytes()).await.expect("write");
        let cancelled_at = cancelled_rx.await.expect("cancel time");
        // The client must hang up: read returns 0 (or an error) soon after the cancel.
        let mut buf = [0u8; 64];
        let closed = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf)).await;
        assert!(
            matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
            "the connection stayed open: {closed:?}"
        );
        let _ = closed_tx.send(cancelled_at.elapsed());
    });
    let provider = OpenRouterProvider::new(OpenRouterConfig::new(url)).expect("builds");
    let signal = Signal::new();
    let mut stream = provider
        .create_response(&[Message::user("hi")], &ToolSet::new(), "m", &signal, None)
        .await
        .expect("starts");
    let mut saw_text = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(Event::TextDelta { .. }) => {
                saw_text = true;
                signal.cancel();
                let _ = cancelled_tx.send(Instant::now());
                break;
            }
            Ok(_) => {}
            Err(error) => panic!("unexpected error {error}"),
        }
    }
    assert!(saw_text);
    let started = Instant::now();
    let next = tokio::time::timeout(Duration::from_secs(2), stream.next())
        .await
        .expect("prompt end");
    assert!(
        matches!(next, Some(Err(ref e)) if e.kind() == ErrorKind::Cancelled),
        "{next:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    drop(stream);
    let after = tokio::time::timeout(Duration::from_secs(6), closed_rx)
        .await
        .expect("server saw the close");
    assert!(after.expect("closed") < Duration::from_secs(5));
}

/// After text has flowed, a stall ends at the read timeout and comments alone at the content
/// timeout, each at its setting (both once fired at twice it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_fire_at_their_setting_after_text_flowed() {
    let wire = HttpWire {
        name: patchbay_openrouter::NAME,
        content_type: "text/event-stream",
        start: "data: {\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
        keepalive: ": OPENROUTER PROCESSING\n\n",
        data_prefix: "data: {\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
    };
    let build: BuildHttp = Arc::new(|base: &str, limits: StreamLimits| {
        let config = OpenRouterConfig::new(format!("{base}/v1"))
            .with_api_key("k")
            .with_limits(limits);
        Arc::new(OpenRouterProvider::new(config).expect("config")) as Arc<dyn Provider>
    });
    hardening::a_stalled_stream_hits_the_read_timeout(&wire, &build).await;
    hardening::keepalives_alone_cannot_hold_a_stream(&wire, &build).await;
}
