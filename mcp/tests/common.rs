//! Shared helpers: example tools, process checks, small agent runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_core::{Agent, Event, FnTool, Message, Signal, ToolContext, ToolResult, ToolSet, tool::ToolContent};
use patchbay_scripted::{Script, ScriptedProvider, Turn};
use schemars::JsonSchema;
use serde::Deserialize;

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
