//! The tool server against hostile local clients (issue 11): connections that stall before
//! or between requests are closed by the header-read and idle timeouts, connections over the
//! cap are closed at once, and request headers cannot add metadata to a registered context.

use std::time::{Duration, Instant};

use patchbay_core::{FnTool, McpServerConfig, McpTransport, RequestContext, ToolContext, ToolResult, ToolSet};
use patchbay_mcp::{McpClientSet, ToolServer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::tools;

/// The bound of every wait on the server: generous, the limits under test are 300 ms.
const PATIENCE: Duration = Duration::from_secs(5);
/// A limit the test does not exercise: far longer than any test runs.
const NEVER: Duration = Duration::from_secs(300);

/// How long until the server closes `stream` (EOF or reset), if it does within `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    let closed = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(within, closed).await.ok()?;
    Some(start.elapsed())
}

/// Whether `stream` is still open with nothing to read, without waiting.
fn still_open(stream: &TcpStream) -> bool {
    let mut buf = [0u8; 1];
    matches!(stream.try_read(&mut buf), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock)
}

fn initialize_body() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

/// An authorized `initialize` on a fresh connection: its HTTP status, or the error.
async fn initialize(server: &ToolServer) -> Result<reqwest::StatusCode, reqwest::Error> {
    let client = patchbay_http::client_builder()
        .pool_max_idle_per_host(0)
        .timeout(PATIENCE)
        .build()
        .expect("client");
    let response = client
        .post(server.url())
        .bearer_auth(server.token())
        .header("accept", "application/json, text/event-stream")
        .json(&initialize_body())
        .send()
        .await?;
    Ok(response.status())
}

/// Send an authorized `initialize` on `stream` (HTTP/1.1, kept alive) and read the whole
/// answer; returns its status line.
async fn initialize_raw(stream: &mut TcpStream, server: &ToolServer) -> String {
    let body = initialize_body().to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        server.addr(),
        server.token(),
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("request sent");
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    let read = async {
        loop {
            if let Some(status) = complete_answer(&received) {
                return status;
            }
            let n = stream.read(&mut chunk).await.expect("answer read");
            assert!(n > 0, "closed mid-answer: {}", String::from_utf8_lossy(&received));
            received.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(PATIENCE, read).await.expect("answered in time")
}

/// The status line of `received` once it holds one whole answer (content-length or chunked).
fn complete_answer(received: &[u8]) -> Option<String> {
    let end = received.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&received[..end]).to_ascii_lowercase();
    let body = &received[end..];
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse::<usize>().ok());
    let complete = match length {
        Some(length) => body.len() >= length,
        None => body.ends_with(b"0\r\n\r\n"),
    };
    complete.then(|| head.lines().next().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn a_request_line_that_stalls_is_closed_at_the_header_read_timeout() {
    let server = ToolServer::builder(tools())
        .header_read_timeout(Duration::from_millis(300))
        .idle_timeout(NEVER)
        .start()
        .await
        .expect("server starts");
    let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
    stream.write_all(b"POST /mcp HT").await.expect("half a request line");
    let closed = closed_within(&mut stream, PATIENCE).await;
    let closed = closed.expect("the server closed the stalled connection");
    assert!(
        closed >= Duration::from_millis(250),
        "closed before the limit: {closed:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn silent_connections_are_closed_at_the_header_read_timeout() {
    let server = ToolServer::builder(tools())
        .header_read_timeout(Duration::from_millis(300))
        .idle_timeout(NEVER)
        .start()
        .await
        .expect("server starts");
    let mut silent = Vec::new();
    for _ in 0..50 {
        silent.push(TcpStream::connect(server.addr()).await.expect("connects"));
    }
    for stream in &mut silent {
        assert!(
            closed_within(stream, PATIENCE).await.is_some(),
            "a silent connection stayed open"
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_at_the_idle_timeout() {
    let server = ToolServer::builder(tools())
        .header_read_timeout(NEVER)
        .idle_timeout(Duration::from_millis(300))
        .start()
        .await
        .expect("server starts");
    let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
    let status = initialize_raw(&mut stream, &server).await;
    assert!(status.starts_with("http/1.1 200"), "{status}");
    let closed = closed_within(&mut stream, PATIENCE).await;
    let closed = closed.expect("the server closed the idle connection");
    assert!(
        closed >= Duration::from_millis(250),
        "closed before the limit: {closed:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn an_idle_http2_connection_is_closed_at_the_idle_timeout() {
    // One slot: a second client gets in only once the first one's idle connection is closed.
    let server = ToolServer::builder(tools())
        .max_connections(1)
        .header_read_timeout(NEVER)
        .idle_timeout(Duration::from_millis(300))
        .start()
        .await
        .expect("server starts");
    let first = patchbay_http::client_builder()
        .http2_prior_knowledge()
        .build()
        .expect("client");
    let answer = first
        .post(server.url())
        .bearer_auth(server.token())
        .header("accept", "application/json, text/event-stream")
        .json(&initialize_body())
        .send()
        .await
        .expect("answered over HTTP/2");
    assert_eq!(answer.version(), reqwest::Version::HTTP_2);
    assert!(answer.status().is_success(), "{}", answer.status());
    answer.bytes().await.expect("whole answer");
    let start = Instant::now();
    let status = loop {
        match initialize(&server).await {
            Ok(status) => break status,
            Err(_) if start.elapsed() < PATIENCE => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(error) => panic!("the idle HTTP/2 connection kept the only slot: {error}"),
        }
    };
    assert!(status.is_success(), "{status}");
    assert!(start.elapsed() >= Duration::from_millis(250), "{:?}", start.elapsed());
    drop(first);
    server.shutdown().await;
}

#[tokio::test]
async fn a_call_in_flight_outlives_both_timeouts() {
    let slow = FnTool::new(
        "slow",
        "Answers after a second.",
        |_: crate::common::Empty, _cx: ToolContext| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            ToolResult::text("finished")
        },
    );
    let server = ToolServer::builder(ToolSet::new().with(slow))
        .header_read_timeout(Duration::from_millis(200))
        .idle_timeout(Duration::from_millis(200))
        .start()
        .await
        .expect("server starts");
    let guard = server.register(&RequestContext::new());
    let connections = McpClientSet::new()
        .with_server(guard.server_config("host"))
        .connect()
        .await;
    assert_eq!(connections.failed(), []);
    let tools = connections.tools().await;
    let result = tools
        .get("slow")
        .expect("slow listed")
        .execute(json!({}), &Default::default())
        .await;
    assert_eq!(result.text_content(), "finished", "{result:?}");
    connections.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn connections_over_the_cap_are_closed_at_once_and_calls_resume_below_it() {
    let server = ToolServer::builder(tools())
        .max_connections(4)
        .header_read_timeout(NEVER)
        .idle_timeout(NEVER)
        .start()
        .await
        .expect("server starts");
    // Accepted in order: these four take every slot.
    let mut stalled = Vec::new();
    for _ in 0..4 {
        let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
        stream.write_all(b"POST /mcp HT").await.expect("half a request line");
        stalled.push(stream);
    }
    let mut over = TcpStream::connect(server.addr()).await.expect("accepted by the kernel");
    let closed = closed_within(&mut over, PATIENCE).await;
    let closed = closed.expect("the server closed the connection over the cap");
    assert!(closed < Duration::from_secs(2), "not closed at once: {closed:?}");
    assert!(stalled.iter().all(still_open), "a connection under the cap was closed");

    drop(stalled);
    // The server sees the stalled ones go shortly after: retry until a slot is free.
    let start = Instant::now();
    let status = loop {
        match initialize(&server).await {
            Ok(status) => break status,
            Err(error) if start.elapsed() < PATIENCE => {
                eprintln!("not yet: {error}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => panic!("no slot came free: {error}"),
        }
    };
    assert!(status.is_success(), "{status}");
    server.shutdown().await;
}

#[tokio::test]
async fn calls_go_on_while_many_connections_stall_below_the_cap() {
    let server = ToolServer::start(tools()).await.expect("server starts");
    let mut stalled = Vec::new();
    for _ in 0..200 {
        stalled.push(TcpStream::connect(server.addr()).await.expect("connects"));
    }
    let status = initialize(&server).await.expect("answered");
    assert!(status.is_success(), "{status}");
    assert!(
        stalled.iter().all(still_open),
        "a connection under the limits was closed"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn meta_headers_cannot_change_a_registered_context() {
    let server = ToolServer::start(tools()).await.expect("server starts");
    let guard = server.register(&RequestContext::new().with_metadata("project", "p1"));
    let mut headers = guard.headers().clone();
    headers.insert("x-patchbay-meta-role".into(), "admin".into());
    headers.insert("x-patchbay-meta-project".into(), "evil".into());
    let config = McpServerConfig {
        name: "host".into(),
        transport: McpTransport::Http {
            url: server.url().into(),
            headers,
        },
    };
    let connections = McpClientSet::new().with_server(config).connect().await;
    assert_eq!(connections.failed(), []);
    let tools = connections.tools().await;
    let result = tools
        .get("whoami")
        .expect("whoami listed")
        .execute(json!({}), &Default::default())
        .await;
    let metadata = result.metadata.expect("whoami reports its context");
    assert_eq!(metadata["metadata"], json!({"project": "p1"}));
    connections.close().await;
    server.shutdown().await;
}
