//! An agent run on the scripted provider calling MCP tools end to end.

use std::sync::Arc;

use patchbay_core::{Agent, Event, FnTool, RequestContext, ToolContext, ToolResult, ToolSet};
use patchbay_mcp::{McpClientSet, ToolServer};
use patchbay_scripted::{Part, Turn};
use serde_json::json;

use crate::common::{EchoInput, events, provider};

#[tokio::test]
async fn per_call_servers_come_from_the_request_context() {
    // Our own tool server, attached per call through RequestContext.mcp_servers.
    let server = ToolServer::start(crate::common::tools()).await.expect("server");
    let guard = server.register(&RequestContext::new().with_metadata("project_id", "ctx-proj"));
    let provider = provider(vec![
        Turn::parts(vec![Part::tool_call("c1", "whoami", json!({}))]),
        Turn::text("ok"),
    ]);
    let agent = Agent::new(provider, "scripted")
        .with_context(RequestContext::new().with_mcp_server(guard.server_config("host")))
        .with_tool_source(Arc::new(McpClientSet::new()));
    let events = events(&agent, "who am i").await;
    // The client set attached the context's servers, so the provider did not see them.
    assert!(
        matches!(&events[0], Event::Started { warnings, .. } if warnings.is_empty()),
        "{:?}",
        events[0]
    );
    assert!(matches!(&events[1], Event::McpConnected { servers, .. } if servers == &["host"]));
    let result = events
        .iter()
        .find_map(|e| match e {
            Event::ToolResult { result, .. } => Some(result),
            _ => None,
        })
        .expect("tool result");
    assert_eq!(result.text_content(), r#"project=Some("ctx-proj") db=none"#);
    // The host's metadata and the model's call id reach the ToolResult event unchanged.
    let metadata = result.metadata.as_ref().expect("metadata");
    assert_eq!(metadata["tool_use_id"], "c1");
    assert_eq!(metadata["metadata"]["project_id"], "ctx-proj");
    server.shutdown().await;
}

#[tokio::test]
async fn with_no_servers_the_tools_are_unchanged() {
    let native = FnTool::new(
        "echo",
        "Native echo.",
        |input: EchoInput, _cx: ToolContext| async move { ToolResult::text(input.message) },
    );
    let provider = provider(vec![Turn::text("hi")]);
    let agent = Agent::new(provider.clone(), "scripted")
        .with_tools(ToolSet::new().with(native))
        .with_tool_source(Arc::new(McpClientSet::new()));
    let events = events(&agent, "hello").await;
    let Event::Started { warnings, .. } = &events[0] else {
        panic!("started first")
    };
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(provider.requests()[0].tools, ["echo"]);
}

#[tokio::test]
async fn without_a_client_set_the_context_servers_are_reported_as_ignored() {
    let provider = provider(vec![Turn::text("hi")]);
    let down = crate::common::http("down", "http://127.0.0.1:9/mcp", &[]);
    let agent = Agent::new(provider, "scripted").with_context(RequestContext::new().with_mcp_server(down));
    let events = events(&agent, "hello").await;
    let Event::Started { warnings, .. } = &events[0] else {
        panic!("Started first: {events:?}");
    };
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].code, "mcp_servers_ignored");
    assert!(warnings[0].message.contains("down") && warnings[0].message.contains("McpClientSet"));
    assert!(!events.iter().any(|e| matches!(e, Event::McpConnected { .. })));
}
