//! Progress over MCP: a tool's `ToolProgress` reports reach a caller that sent a
//! `progressToken` as `notifications/progress`, before the answer, over both stateless HTTP
//! paths (a request with and without per-request protocol metadata) and stdio; without a
//! token nothing is sent and the answer stays plain JSON.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use patchbay_core::{FnTool, RequestContext, ToolContext, ToolResult, ToolSet, tool::ProgressUpdate};
use patchbay_mcp::ToolServer;
use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// A tool that reports twice (the second with its own count) and then answers `done`.
fn reporting() -> ToolSet {
    ToolSet::new().with(FnTool::new(
        "steps",
        "Reports two steps, then answers.",
        |_: crate::common::Empty, cx: ToolContext| async move {
            cx.progress.message("step one");
            cx.progress
                .report(ProgressUpdate::message("step two").with_progress(5.0, Some(10.0)));
            ToolResult::text("done")
        },
    ))
}

async fn anonymous_server() -> ToolServer {
    ToolServer::builder(reporting())
        .allow_anonymous()
        .start()
        .await
        .expect("server starts")
}

/// POST a `tools/call` of `steps` with this `_meta` (and protocol header): the answer's
/// content type and the JSON-RPC messages of its body, in order (SSE events or one JSON).
async fn call_steps(server: &ToolServer, meta: Option<Value>, version: Option<&str>) -> (String, Vec<Value>) {
    let mut params = json!({"name": "steps", "arguments": {}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
    let client = patchbay_http::client_builder().build().expect("client");
    let mut request = client
        .post(server.url())
        .bearer_auth(server.token())
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(version) = version {
        // Versions with standard headers name the method and the tool in headers too.
        request = request
            .header("mcp-protocol-version", version)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "steps");
    }
    let response = tokio::time::timeout(Duration::from_secs(30), request.send())
        .await
        .expect("answered in time")
        .expect("reachable");
    let status = response.status();
    if !status.is_success() {
        panic!("{status}: {}", response.text().await.unwrap_or_default());
    }
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await.expect("body");
    let messages = if kind.starts_with("text/event-stream") {
        sse_messages(&text)
    } else {
        vec![serde_json::from_str(&text).unwrap_or_else(|e| panic!("no JSON ({e}): {text}"))]
    };
    (kind, messages)
}

/// The JSON of every SSE event with data, in order.
fn sse_messages(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            let data = data.join("\n");
            (!data.trim().is_empty())
                .then(|| serde_json::from_str(&data).unwrap_or_else(|e| panic!("SSE data is no JSON ({e}): {data}")))
        })
        .collect()
}

/// The two notifications, then the answer.
fn assert_two_reports_then_the_answer(messages: &[Value], token: Value) {
    assert_eq!(messages.len(), 3, "{messages:#?}");
    for message in &messages[..2] {
        assert_eq!(message["method"], "notifications/progress", "{message}");
        assert_eq!(message["params"]["progressToken"], token, "{message}");
    }
    let first = &messages[0]["params"];
    let second = &messages[1]["params"];
    assert_eq!(first["message"], "step one");
    assert_eq!(first["progress"], 1.0);
    assert_eq!(second["message"], "step two");
    assert_eq!(second["progress"], 5.0);
    assert_eq!(second["total"], 10.0);
    let answer = &messages[2];
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "done", "{answer}");
}

#[tokio::test]
async fn a_caller_with_a_progress_token_gets_each_report_before_the_answer() {
    let server = anonymous_server().await;
    let (kind, messages) = call_steps(&server, Some(json!({"progressToken": "tok-1"})), None).await;
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    assert_two_reports_then_the_answer(&messages, json!("tok-1"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_request_with_per_request_protocol_metadata_gets_the_reports_too() {
    let server = anonymous_server().await;
    let meta = json!({
        "progressToken": 42,
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    });
    let (kind, messages) = call_steps(&server, Some(meta), Some("2026-07-28")).await;
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    assert_two_reports_then_the_answer(&messages, json!(42));
    server.shutdown().await;
}

#[tokio::test]
async fn without_a_progress_token_nothing_is_sent_and_the_answer_is_plain_json() {
    let server = anonymous_server().await;
    let (kind, messages) = call_steps(&server, None, None).await;
    assert!(kind.starts_with("application/json"), "{kind}");
    assert_eq!(messages.len(), 1, "{messages:#?}");
    assert_eq!(messages[0]["result"]["content"][0]["text"], "done");
    server.shutdown().await;
}

/// An rmcp client that keeps the progress notifications it gets.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<ProgressNotificationParam>>>);

impl ClientHandler for Recorder {
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.0.lock().expect("not poisoned").push(params);
    }
}

#[tokio::test]
async fn stdio_serving_sends_the_reports_to_a_caller_with_a_token() {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(async move {
        let (read, write) = tokio::io::split(server_io);
        ToolServer::builder(reporting())
            .serve_io(read, write, &RequestContext::new())
            .await
    });
    let recorder = Recorder::default();
    let (read, write) = tokio::io::split(client_io);
    let client = recorder.clone().serve((read, write)).await.expect("handshake");
    let mut params = CallToolRequestParams::new("steps");
    params.arguments = Some(serde_json::Map::new());
    // rmcp's client gives every request a progress token of its own.
    let result = client.call_tool(params).await.expect("call");
    assert_eq!(patchbay_mcp::from_call_tool_result(result).text_content(), "done");
    // rmcp's client hands notifications to its handler on tasks of their own.
    let start = Instant::now();
    while recorder.0.lock().expect("not poisoned").len() < 2 && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seen = recorder.0.lock().expect("not poisoned").clone();
    let messages: Vec<_> = seen.iter().map(|p| p.message.clone().unwrap_or_default()).collect();
    assert_eq!(messages, ["step one", "step two"], "{seen:?}");
    assert_eq!(seen[0].progress_token, seen[1].progress_token, "{seen:?}");
    assert_eq!((seen[0].progress, seen[1].progress), (1.0, 5.0), "{seen:?}");
    client.cancel().await.expect("closed");
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("server ends when the client goes")
        .expect("joined")
        .expect("served");
}
