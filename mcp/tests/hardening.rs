//! The tool server against hostile local clients (issue 11): connections that stall before
//! or between requests are closed by the header-read and idle timeouts, request headers cannot
//! add metadata to a registered context, and a full house locks no one out (issue 25): at the
//! connection cap the connection waiting longest for its request headers (else the one idle
//! longest) makes room for the new one, and only when every connection has a request in flight
//! is the new one answered `503` with `Retry-After` (never reset).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use patchbay_core::{
    FnTool, RequestContext, ToolContext, ToolResult, ToolSet, context::McpServerConfig, context::McpTransport,
};
use patchbay_mcp::{McpClientSet, ToolServer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

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
    let server = ToolServer::builder(tools())
        .header_read_timeout(NEVER)
        .idle_timeout(Duration::from_millis(300))
        .start()
        .await
        .expect("server starts");
    let stream = TcpStream::connect(server.addr()).await.expect("connects");
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .expect("HTTP/2 handshake");
    let connection = tokio::spawn(connection);
    let request = http::Request::post(server.url())
        .header("authorization", format!("Bearer {}", server.token()))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize_body().to_string())
        .expect("request");
    let answer = sender.send_request(request).await.expect("answered over HTTP/2");
    assert!(answer.status().is_success(), "{}", answer.status());
    drop(answer);
    // The connection ends when the server closes it: at the idle timeout, not before.
    let start = Instant::now();
    let ended = tokio::time::timeout(PATIENCE, connection).await;
    assert!(ended.is_ok(), "the idle HTTP/2 connection stayed open");
    assert!(start.elapsed() >= Duration::from_millis(250), "{:?}", start.elapsed());
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

/// Open a connection and send half a request line: a half-open connection.
async fn half_open(server: &ToolServer) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
    stream.write_all(b"POST /mcp HT").await.expect("half a request line");
    stream
}

#[tokio::test]
async fn at_the_cap_the_oldest_half_open_connection_makes_room() {
    let server = ToolServer::builder(tools())
        .max_connections(4)
        .header_read_timeout(NEVER)
        .idle_timeout(NEVER)
        .start()
        .await
        .expect("server starts");
    let mut stalled = Vec::new();
    for _ in 0..4 {
        stalled.push(half_open(&server).await);
    }
    // Each request over the cap closes the oldest half-open connection, and only that one.
    for oldest in 0..2 {
        let status = initialize(&server).await.expect("answered at the cap");
        assert!(status.is_success(), "{status}");
        assert!(
            closed_within(&mut stalled[oldest], PATIENCE).await.is_some(),
            "half-open connection {oldest} (the oldest) stayed open"
        );
        assert!(
            stalled[oldest + 1..].iter().all(still_open),
            "a newer half-open connection was closed"
        );
    }
    drop(stalled);
    server.shutdown().await;
}

/// Half-open connections kept at `count` (each one re-opened as the server closes it), until
/// dropped; `rolled` counts the re-opened ones.
struct Rolling {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    rolled: Arc<AtomicUsize>,
}

impl Rolling {
    async fn start(server: &ToolServer, count: usize) -> Self {
        let rolled = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..count {
            // Opened here, in order, so that all of them hold a slot before the test goes on.
            let mut stream = half_open(server).await;
            let (addr, rolled) = (server.addr(), rolled.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let mut buf = [0u8; 256];
                    while let Ok(1..) = stream.read(&mut buf).await {}
                    stream = loop {
                        if let Ok(mut stream) = TcpStream::connect(addr).await
                            && stream.write_all(b"POST /mcp HT").await.is_ok()
                        {
                            break stream;
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    };
                    rolled.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
        Self { tasks, rolled }
    }
}

impl Drop for Rolling {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

#[tokio::test]
async fn rolling_half_open_connections_at_the_cap_lock_no_one_out() {
    let server = ToolServer::builder(tools())
        .max_connections(8)
        .idle_timeout(NEVER)
        .start()
        .await
        .expect("server starts");
    let rolling = Rolling::start(&server, 8).await;
    let mut answered = 0;
    for _ in 0..8 {
        match initialize(&server).await {
            Ok(status) if status.is_success() => answered += 1,
            Ok(status) => eprintln!("refused: {status}"),
            Err(error) => eprintln!("failed: {error}"),
        }
    }
    assert_eq!(
        answered, 8,
        "real requests answered while half-open connections fill the cap"
    );
    assert!(
        rolling.rolled.load(Ordering::SeqCst) >= 1,
        "the half-open connections were never closed"
    );
    drop(rolling);
    server.shutdown().await;
}

#[tokio::test]
async fn at_the_cap_an_idle_connection_makes_room_when_none_is_half_open() {
    let server = ToolServer::builder(tools())
        .max_connections(2)
        .header_read_timeout(NEVER)
        .idle_timeout(NEVER)
        .start()
        .await
        .expect("server starts");
    let mut idle = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(server.addr()).await.expect("connects");
        let status = initialize_raw(&mut stream, &server).await;
        assert!(status.starts_with("http/1.1 200"), "{status}");
        idle.push(stream);
    }
    let status = initialize(&server).await.expect("answered at the cap");
    assert!(status.is_success(), "{status}");
    assert!(
        closed_within(&mut idle[0], PATIENCE).await.is_some(),
        "the connection idle longest stayed open"
    );
    assert!(still_open(&idle[1]), "the connection idle for less time was closed");
    server.shutdown().await;
}

#[tokio::test]
async fn at_the_cap_with_every_connection_busy_a_new_one_is_answered_503() {
    let arrived = Arc::new(Semaphore::new(0));
    let gate = Arc::new(Semaphore::new(0));
    let hold = {
        let (arrived, gate) = (arrived.clone(), gate.clone());
        axum::routing::get(move || async move {
            arrived.add_permits(1);
            let _pass = gate.acquire().await;
            "released"
        })
    };
    let server = ToolServer::builder(tools())
        .max_connections(2)
        .header_read_timeout(NEVER)
        .idle_timeout(NEVER)
        .with_routes(axum::Router::new().route("/hold", hold))
        .start()
        .await
        .expect("server starts");
    let url = server.url().replace("/mcp", "/hold");
    let mut held = Vec::new();
    for _ in 0..2 {
        let client = patchbay_http::client_builder()
            .timeout(PATIENCE)
            .build()
            .expect("client");
        let request = client.get(&url).bearer_auth(server.token());
        held.push(tokio::spawn(async move {
            request.send().await.map(|answer| answer.status())
        }));
    }
    let _both = tokio::time::timeout(PATIENCE, arrived.acquire_many(2))
        .await
        .expect("both requests in flight");

    let mut over = TcpStream::connect(server.addr()).await.expect("accepted by the kernel");
    let request = format!("GET /hold HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr());
    over.write_all(request.as_bytes()).await.expect("request sent");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(PATIENCE, over.read_to_end(&mut answer)).await;
    let read = read.expect("answered and closed in time");
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(read.is_ok(), "reset instead of answered: {read:?} after {answer:?}");
    assert!(answer.starts_with("http/1.1 503 service unavailable\r\n"), "{answer}");
    assert!(answer.contains("\r\nretry-after: 1\r\n"), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");

    gate.add_permits(2);
    for request in held {
        let status = request.await.expect("joined").expect("the held requests are answered");
        assert!(status.is_success(), "{status}");
    }
    server.shutdown().await;
}
