//! Issue 25, defect 9: one request limit for MCP and the JSON API, and over MCP an oversized
//! call is answered with a JSON-RPC error that states it (it was a dropped connection).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::{Harness, TestResult, within};
use patchbay::mcp::McpClientSet;
use patchbay::{ToolContext, context::McpServerConfig, context::McpTransport};
use patchbay_orchestrator::DEFAULT_MAX_REQUEST_BYTES;
use patchbay_orchestrator::http::{HttpOptions, serve_http};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_prompt_is_a_json_rpc_error_over_mcp_and_a_413_over_the_api() -> TestResult {
    let h = Harness::start(vec![], 1).await?;
    let o = &h.orchestrator;
    assert_eq!(o.max_request_bytes(), DEFAULT_MAX_REQUEST_BYTES);
    let server = within("serve", serve_http(o, HttpOptions::default())).await??;
    let prompt = "x".repeat(10 * 1024 * 1024);
    let client = patchbay_http::client_builder().timeout(common::LIMIT).build()?;

    // A raw call: an answer (not a reset), a JSON-RPC error with the request's id and the limit.
    let body = json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
        "params": {"name": "start_agent_session", "arguments": {"session_name": "big", "prompt": prompt}}});
    let response = client
        .post(server.url())
        .bearer_auth(server.token())
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&body)
        .send()
        .await?;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await?;
    assert_eq!(answer["id"], 42, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&DEFAULT_MAX_REQUEST_BYTES.to_string()), "{message}");

    // patchbay's own MCP client sees that message as the call's error.
    let set = McpClientSet::new().with_server(McpServerConfig {
        name: "orchestrator".to_owned(),
        transport: McpTransport::Http {
            url: server.url().to_owned(),
            headers: BTreeMap::from([("Authorization".to_owned(), format!("Bearer {}", server.token()))]),
        },
    });
    let connections = within("connect", set.connect()).await?;
    assert!(connections.failed().is_empty(), "{:?}", connections.failed());
    let mcp = connections.client("orchestrator").ok_or("connected")?;
    let result = within(
        "oversized call",
        mcp.call_tool(
            "start_agent_session",
            json!({"session_name": "big", "prompt": prompt}),
            &ToolContext::new(),
            None,
        ),
    )
    .await?;
    assert!(result.is_error());
    assert!(result.text_content().contains("limit"), "{}", result.text_content());
    // The connection still works for a call of the right size.
    let small = within(
        "a small call",
        mcp.call_tool("list_agent_sessions", json!({}), &ToolContext::new(), None),
    )
    .await?;
    assert!(!small.is_error(), "{}", small.text_content());
    assert!(o.session_by_name("big").await.is_err());

    // The API: the same limit, as 413.
    let api = server.url().trim_end_matches("/mcp").to_owned();
    let response = client
        .post(format!("{api}/jobs"))
        .bearer_auth(server.token())
        .json(&json!({"type": "start_session", "session_name": "big", "prompt": "x".repeat(2 * 1024 * 1024)}))
        .send()
        .await?;
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await?;
    assert_eq!(body["error"]["code"], "payload_too_large", "{body}");
    connections.close().await;
    server.shutdown().await;
    h.stop().await
}
