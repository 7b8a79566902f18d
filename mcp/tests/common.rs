//! Shared helpers: example tools, process checks, small agent runs, rmcp servers on a port.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_core::{Agent, Event, FnTool, Message, Signal, ToolContext, ToolResult, ToolSet, tool::ToolContent};
use patchbay_scripted::{Script, ScriptedProvider, Turn};
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

/// Pids of every process whose process group is `pgid`.
pub(crate) fn group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return members;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // fields[0] = state, [1] = ppid, [2] = pgrp
        if fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) && fields.first() != Some(&"Z") {
            members.push(pid);
        }
    }
    members
}

/// Wait until no live process is left in group `pgid`.
pub(crate) async fn wait_group_gone(pgid: u32, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if group_members(pgid).is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    group_members(pgid).is_empty()
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct EchoInput {
    pub(crate) message: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Empty {}

/// A database handle a host hands its tools.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Db(pub(crate) &'static str);

/// The example tools: `echo`, `whoami` (shows the context), `fail`, `rich` (every content kind).
pub(crate) fn tools() -> ToolSet {
    ToolSet::new()
        .with(FnTool::new(
            "echo",
            "Echo the message back.",
            |input: EchoInput, _cx: ToolContext| async move { ToolResult::text(input.message) },
        ))
        .with(FnTool::new(
            "whoami",
            "Report the request context this call runs under.",
            |_: Empty, cx: ToolContext| async move {
                let db = cx.extensions.get::<Db>().map(|db| db.0).unwrap_or("none");
                ToolResult::text(format!("project={:?} db={db}", cx.metadata.get("project_id")))
                    .with_metadata(serde_json::json!({ "metadata": cx.metadata, "tool_use_id": cx.tool_use_id }))
            },
        ))
        .with(FnTool::new(
            "fail",
            "Always fails.",
            |_: Empty, _cx: ToolContext| async move { ToolResult::error("it failed on purpose") },
        ))
        .with(FnTool::new(
            "rich",
            "Every content kind.",
            |_: Empty, _cx: ToolContext| async move {
                ToolResult {
                    content: vec![
                        ToolContent::text("hello"),
                        ToolContent::Image {
                            media_type: "image/png".into(),
                            data: "iVBORw0KGgo=".into(),
                        },
                        ToolContent::Resource {
                            uri: "file:///notes.txt".into(),
                            mime_type: Some("text/plain".into()),
                            text: Some("notes".into()),
                            blob: None,
                        },
                        ToolContent::Json {
                            value: serde_json::json!({"rows": 3}),
                        },
                    ],
                    status: patchbay_core::tool::ToolStatus::Completed,
                    metadata: Some(serde_json::json!({"documents": ["d1"]})),
                }
            },
        ))
}

pub(crate) fn stdio(name: &str, command: &std::path::Path, args: &[&str]) -> patchbay_core::context::McpServerConfig {
    patchbay_core::context::McpServerConfig {
        name: name.into(),
        transport: patchbay_core::context::McpTransport::Stdio {
            command: command.display().to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Default::default(),
        },
    }
}

pub(crate) fn http(name: &str, url: &str, headers: &[(&str, &str)]) -> patchbay_core::context::McpServerConfig {
    patchbay_core::context::McpServerConfig {
        name: name.into(),
        transport: patchbay_core::context::McpTransport::Http {
            url: url.into(),
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        },
    }
}

/// Call the tool `name` of `tools` with no context.
pub(crate) async fn call(tools: &ToolSet, name: &str, input: serde_json::Value) -> patchbay_core::ToolResult {
    let tool = tools.get(name).unwrap_or_else(|| panic!("tool {name} listed"));
    tool.execute(input, &Default::default()).await
}

/// A scripted provider playing `turns`.
pub(crate) fn provider(turns: Vec<Turn>) -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::new(Script::new(turns)))
}

/// Every event of one agent run (no error expected).
pub(crate) async fn events(agent: &Agent, prompt: &str) -> Vec<Event> {
    let mut stream = agent.stream(vec![Message::user(prompt)], Signal::new());
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        events.push(item.expect("no error"));
    }
    events
}

/// Serve the rmcp `handler` at `/mcp` on `listener`: with sessions (and SSE answers) when
/// `stateful`, else stateless with JSON answers. Cancel the token to stop it (sessions lost).
pub(crate) fn serve_rmcp<S>(listener: tokio::net::TcpListener, handler: S, stateful: bool) -> CancellationToken
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    let stop = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(stateful)
        .with_json_response(!stateful)
        .with_cancellation_token(stop.child_token());
    let service: StreamableHttpService<S, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(handler.clone()), Default::default(), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let shutdown = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await;
    });
    stop
}

/// [`serve_rmcp`] on a free loopback port; returns the URL and the token that stops it.
pub(crate) async fn start_rmcp<S>(handler: S, stateful: bool) -> (String, CancellationToken)
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    (url, serve_rmcp(listener, handler, stateful))
}
