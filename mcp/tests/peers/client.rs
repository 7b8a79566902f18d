//! The client set against real peers: server-everything (stdio and HTTP), Python FastMCP, and
//! servers that are down, mute or hanging. Each within its timeout, nothing left running.

use std::path::Path;
use std::time::{Duration, Instant};

use patchbay_conformance::peers::is_alive;
use patchbay_core::{RequestContext, Signal, context::McpTransport, tool::ToolContent, tool::ToolStatus};
use patchbay_mcp::{DEFAULT_CONNECT_TIMEOUT, McpClientSet, McpConnections, ToolNaming};
use serde_json::json;

const MARGIN: Duration = Duration::from_secs(2);

use crate::common::{call, http, stdio, wait_group_gone};
use crate::installed::{PeerProcess, everything, free_port, python};

/// The calls the issue asks for: list, echo, get-sum, get-tiny-image.
async fn exercise_everything(connections: &McpConnections) {
    assert_eq!(connections.failed(), [], "{:?}", connections.warnings());
    let tools = connections.tools().await;
    for name in ["echo", "get-sum", "get-tiny-image", "get-structured-content"] {
        assert!(tools.get(name).is_some(), "{name} missing from {tools:?}");
    }
    let spec = tools.get("get-sum").expect("get-sum").spec();
    assert_eq!(spec.input_schema["properties"]["a"]["type"], "number");

    let echo = call(&tools, "echo", json!({"message": "hi there"})).await;
    assert_eq!(echo.status, ToolStatus::Completed);
    assert!(echo.text_content().contains("hi there"), "{echo:?}");

    let sum = call(&tools, "get-sum", json!({"a": 2, "b": 3})).await;
    assert!(sum.text_content().contains('5'), "{sum:?}");

    let image = call(&tools, "get-tiny-image", json!({})).await;
    assert!(
        image
            .content
            .iter()
            .any(|c| matches!(c, ToolContent::Image { media_type, .. } if media_type == "image/png")),
        "{image:?}"
    );

    let structured = call(&tools, "get-structured-content", json!({"location": "Chicago"})).await;
    assert!(
        structured.metadata.is_some(),
        "structuredContent goes to metadata: {structured:?}"
    );
}

pub(crate) async fn server_everything_over_stdio() {
    let (bin, _heavy) = everything().await;
    let set = McpClientSet::new().with_server(stdio("everything", &bin, &["stdio"]));
    let connections = set.connect().await;
    exercise_everything(&connections).await;
    let pid = connections
        .client("everything")
        .and_then(|c| c.pid())
        .expect("a stdio pid");
    assert!(is_alive(pid));
    connections.close().await;
    assert!(
        wait_group_gone(pid, Duration::from_secs(1)).await,
        "server group left running"
    );
}

pub(crate) async fn server_everything_over_streamable_http() {
    let (bin, _heavy) = everything().await;
    let port = free_port();
    let _peer = PeerProcess::start(&bin, &["streamableHttp"], &[("PORT", port.to_string())], port).await;
    let set = McpClientSet::new().with_server(http("everything", &format!("http://127.0.0.1:{port}/mcp"), &[]));
    let connections = set.connect().await;
    exercise_everything(&connections).await;
    connections.close().await;
}

pub(crate) async fn stdio_servers_get_the_context_environment_and_metadata() {
    let (bin, _heavy) = everything().await;
    let mut config = stdio("everything", &bin, &["stdio"]);
    if let McpTransport::Stdio { env, .. } = &mut config.transport {
        env.insert("PATCHBAY_PROJECT".into(), "${metadata.project_id}".into());
    }
    let context = RequestContext::new()
        .with_env("PATCHBAY_FROM_CONTEXT", "ctx")
        .with_metadata("project_id", "p7")
        .with_mcp_server(config);
    let connections = McpClientSet::new().connect_with(&context, &Signal::new()).await;
    let tools = connections.tools().await;
    let env = call(&tools, "get-env", json!({})).await.text_content();
    assert!(
        env.contains("\"PATCHBAY_PROJECT\": \"p7\"") || env.contains("\"PATCHBAY_PROJECT\":\"p7\""),
        "{env}"
    );
    assert!(env.contains("PATCHBAY_FROM_CONTEXT"), "{env}");
    connections.close().await;
}

pub(crate) async fn prefixed_naming_and_clashes_between_servers() {
    let (bin, _heavy) = everything().await;
    let set = McpClientSet::new()
        .with_server(stdio("a", &bin, &["stdio"]))
        .with_server(stdio("b", &bin, &["stdio"]));
    let plain = set.connect().await;
    let attached = plain.into_attached().await;
    assert_eq!(attached.connected, ["a", "b"]);
    assert!(attached.tools.get("echo").is_some());
    assert!(
        attached.warnings.iter().any(|w| w.code == "duplicate_tool"),
        "clash reported: {:?}",
        attached.warnings
    );
    drop(attached);

    let prefixed = set.with_naming(ToolNaming::Prefixed).connect().await;
    let tools = prefixed.tools().await;
    assert!(tools.get("mcp__a__echo").is_some() && tools.get("mcp__b__echo").is_some());
    let echo = call(&tools, "mcp__b__echo", json!({"message": "via b"})).await;
    assert!(echo.text_content().contains("via b"));
    prefixed.close().await;
}

pub(crate) async fn python_fastmcp_sees_forwarded_metadata_headers() {
    let (py, _heavy) = python().await;
    let port = free_port();
    let script = tempfile::NamedTempFile::with_suffix(".py").expect("temp file");
    std::fs::write(script.path(), FASTMCP_ECHO_HEADER).expect("script written");
    let path = script.path().display().to_string();
    let _peer = PeerProcess::start(&py, &[&path], &[("PORT", port.to_string())], port).await;
    let config = http(
        "py",
        &format!("http://127.0.0.1:{port}/mcp"),
        &[
            ("X-Project-ID", "${metadata.project_id}"),
            ("X-Thread-ID", "${metadata.thread_id}"),
        ],
    );
    let context = RequestContext::new()
        .with_metadata("project_id", "p42")
        .with_mcp_server(config);
    let connections = McpClientSet::new().connect_with(&context, &Signal::new()).await;
    assert_eq!(connections.failed(), []);
    assert!(
        connections
            .warnings()
            .iter()
            .any(|w| w.code == "mcp_missing_metadata" && w.message.contains("thread_id")),
        "{:?}",
        connections.warnings()
    );
    let tools = connections.tools().await;
    let seen = call(&tools, "header", json!({"name": "x-project-id"})).await;
    assert_eq!(seen.text_content(), "p42");
    let absent = call(&tools, "header", json!({"name": "x-thread-id"})).await;
    assert_eq!(absent.text_content(), "<absent>");
    connections.close().await;
}

const FASTMCP_ECHO_HEADER: &str = r#"
import os
from mcp.server.fastmcp import FastMCP, Context

mcp = FastMCP("echo-header", host="127.0.0.1", port=int(os.environ["PORT"]), log_level="WARNING")

@mcp.tool()
def header(name: str, ctx: Context) -> str:
    """Return the value of a request header."""
    return ctx.request_context.request.headers.get(name, "<absent>")

mcp.run(transport="streamable-http")
"#;

pub(crate) async fn an_unreachable_port_fails_fast_and_the_rest_go_on() {
    let (bin, _heavy) = everything().await;
    let dead = free_port();
    let set = McpClientSet::new()
        .with_server(http("down", &format!("http://127.0.0.1:{dead}/mcp"), &[]))
        .with_server(stdio("everything", &bin, &["stdio"]));
    let start = Instant::now();
    let connections = set.connect().await;
    assert!(
        start.elapsed() < DEFAULT_CONNECT_TIMEOUT + MARGIN,
        "{:?}",
        start.elapsed()
    );
    assert_eq!(connections.connected(), ["everything"]);
    assert_eq!(connections.failed().len(), 1);
    assert_eq!(connections.failed()[0].name, "down");
    eprintln!("unreachable: {:?} after {:?}", connections.failed(), start.elapsed());

    // Alone, a refused connection is reported well before any timeout.
    let start = Instant::now();
    let alone = McpClientSet::new()
        .with_server(http("down", &format!("http://127.0.0.1:{dead}/mcp"), &[]))
        .connect()
        .await;
    assert_eq!(alone.failed().len(), 1);
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    connections.close().await;
}

pub(crate) async fn dropping_the_connections_kills_the_server_and_its_descendants() {
    let (bin, _heavy) = everything().await;
    let script = format!("sleep 300 & exec {} stdio", bin.display());
    let connections = McpClientSet::new()
        .with_server(stdio("everything", Path::new("sh"), &["-c", &script]))
        .connect()
        .await;
    assert_eq!(connections.failed(), []);
    let pid = connections.client("everything").and_then(|c| c.pid()).expect("pid");
    assert!(crate::common::group_members(pid).len() >= 2, "server plus sleep");
    drop(connections);
    assert!(
        wait_group_gone(pid, Duration::from_secs(4)).await,
        "left running after drop"
    );
}

pub(crate) async fn a_call_timeout_cancels_the_mcp_request() {
    let (bin, _heavy) = everything().await;
    let connections = McpClientSet::new()
        .with_call_timeout(Duration::from_millis(500))
        .with_server(stdio("everything", &bin, &["stdio"]))
        .connect()
        .await;
    let tools = connections.tools().await;
    let start = Instant::now();
    let slow = call(
        &tools,
        "trigger-long-running-operation",
        json!({"duration": 10, "steps": 2}),
    )
    .await;
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    assert_eq!(slow.status, ToolStatus::Failed);
    assert!(slow.text_content().contains("timed out"), "{slow:?}");
    // The connection is still usable after the cancelled request.
    let echo = call(&tools, "echo", json!({"message": "still here"})).await;
    assert!(echo.text_content().contains("still here"));

    let signal = Signal::new();
    let cx = patchbay_core::ToolContext::new().with_signal(signal.clone());
    let tool = tools.get("trigger-long-running-operation").expect("listed").clone();
    let running = tokio::spawn(async move { tool.execute(json!({"duration": 10, "steps": 2}), &cx).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    signal.cancel();
    let aborted = running.await.expect("joined");
    assert_eq!(aborted.status, ToolStatus::Aborted);
    connections.close().await;
}

pub(crate) fn dropping_outside_any_runtime_still_kills_the_group() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (connections, pid) = runtime.block_on(async {
        let (bin, _heavy) = everything().await;
        let script = format!("sleep 300 & exec {} stdio", bin.display());
        let connections = McpClientSet::new()
            .with_server(stdio("everything", Path::new("sh"), &["-c", &script]))
            .connect()
            .await;
        let pid = connections.client("everything").and_then(|c| c.pid()).expect("pid");
        (connections, pid)
    });
    drop(runtime);
    drop(connections);
    let start = Instant::now();
    while !crate::common::group_members(pid).is_empty() && start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(crate::common::group_members(pid).is_empty(), "left running");
}
