//! An agent run on the scripted provider calling MCP tools end to end.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use patchbay_core::{Agent, Event, FnTool, Message, Signal, ToolContext, ToolResult, ToolSet};
use patchbay_mcp::McpClientSet;
use patchbay_scripted::{Part, Turn};
use serde_json::json;

use crate::common::{EchoInput, events, provider, stdio, wait_group_gone};
use crate::installed::everything;

pub(crate) async fn an_agent_calls_a_server_everything_tool() {
    let (bin, _heavy) = everything().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let pidfile = dir.path().join("pid");
    // A wrapper that records the server's pid, so we can check it is gone after the run.
    let script = format!("echo $$ > {}; exec {} stdio", pidfile.display(), bin.display());
    let set = McpClientSet::new()
        .with_server(stdio("everything", std::path::Path::new("sh"), &["-c", &script]))
        .with_server(crate::common::http("down", "http://127.0.0.1:9/mcp", &[]));
    let provider = provider(vec![
        Turn::parts(vec![Part::tool_call(
            "call_1",
            "echo",
            json!({"message": "hello from mcp"}),
        )]),
        Turn::text("done"),
    ]);
    let agent = Agent::new(provider.clone(), "scripted").with_tool_source(Arc::new(set));
    let events = events(&agent, "use the echo tool").await;

    let kinds: Vec<_> = events.iter().map(Event::kind).collect();
    assert_eq!(kinds[..2], ["started", "mcp_connected"], "{kinds:?}");
    let Event::Started { warnings, .. } = &events[0] else {
        unreachable!()
    };
    assert!(
        warnings
            .iter()
            .any(|w| w.code == "mcp_server_failed" && w.message.contains("down")),
        "{warnings:?}"
    );
    let Event::McpConnected { servers, failed } = &events[1] else {
        unreachable!()
    };
    assert_eq!(servers, &["everything"]);
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].name, "down");

    let result = events
        .iter()
        .find_map(|event| match event {
            Event::ToolResult { id, name, result } if id == "call_1" && name == "echo" => Some(result),
            _ => None,
        })
        .expect("a ToolResult event");
    assert!(!result.is_error(), "{result:?}");
    assert!(result.text_content().contains("hello from mcp"), "{result:?}");
    assert_eq!(kinds.last(), Some(&"finish"));
    assert_eq!(kinds.iter().filter(|k| **k == "mcp_connected").count(), 1);

    // The model saw the MCP tool, and got its result in the second call.
    let requests = provider.requests();
    assert!(requests[0].tools.iter().any(|t| t == "echo"), "{:?}", requests[0].tools);

    // The run is over: the server and its group are gone.
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("pid")
        .trim()
        .parse()
        .expect("pid");
    assert!(
        wait_group_gone(pid, Duration::from_secs(4)).await,
        "server outlived the run"
    );
}

pub(crate) async fn a_native_tool_wins_a_clash_and_the_clash_is_reported() {
    let (bin, _heavy) = everything().await;
    let native = FnTool::new(
        "echo",
        "Native echo.",
        |input: EchoInput, _cx: ToolContext| async move { ToolResult::text(format!("native: {}", input.message)) },
    );
    let provider = provider(vec![
        Turn::parts(vec![Part::tool_call("c1", "echo", json!({"message": "x"}))]),
        Turn::text("ok"),
    ]);
    let agent = Agent::new(provider, "scripted")
        .with_tools(ToolSet::new().with(native))
        .with_tool_source(Arc::new(McpClientSet::new().with_server(stdio(
            "everything",
            &bin,
            &["stdio"],
        ))));
    let events = events(&agent, "echo").await;
    let Event::Started { warnings, .. } = &events[0] else {
        panic!("started first")
    };
    assert!(warnings.iter().any(|w| w.code == "duplicate_tool"), "{warnings:?}");
    let text = events
        .iter()
        .find_map(|e| match e {
            Event::ToolResult { result, .. } => Some(result.text_content()),
            _ => None,
        })
        .expect("tool result");
    assert_eq!(text, "native: x");
}

pub(crate) async fn a_cancelled_run_closes_its_mcp_servers() {
    let (bin, _heavy) = everything().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let pidfile = dir.path().join("pid");
    let script = format!(
        "echo $$ > {}; sleep 300 & exec {} stdio",
        pidfile.display(),
        bin.display()
    );
    let set = McpClientSet::new().with_server(stdio("everything", std::path::Path::new("sh"), &["-c", &script]));
    let stall = patchbay_scripted::Response::new(vec![Part::text("thinking")]).with_end(patchbay_scripted::End::Stall);
    let agent = Agent::new(provider(vec![Turn::Respond(stall)]), "scripted").with_tool_source(Arc::new(set));
    let signal = Signal::new();
    let mut stream = agent.stream(vec![Message::user("wait")], signal.clone());
    let mut kinds = Vec::new();
    while let Some(Ok(event)) = stream.next().await {
        kinds.push(event.kind());
        if event.kind() == "text_delta" {
            signal.cancel();
        }
    }
    assert_eq!(kinds[..2], ["started", "mcp_connected"], "{kinds:?}");
    drop(stream);
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("pid")
        .trim()
        .parse()
        .expect("pid");
    assert!(
        wait_group_gone(pid, Duration::from_secs(4)).await,
        "server outlived the cancelled run"
    );
}
