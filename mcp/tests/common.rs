//! Shared helpers: finding the real peers, example tools, process checks.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use patchbay_core::{FnTool, ToolContent, ToolContext, ToolResult, ToolSet};
use schemars::JsonSchema;
use serde::Deserialize;

/// `$PATCHBAY_PEERS/mcp` (default `<workspace>/target/peers/mcp`).
pub(crate) fn peers_dir() -> PathBuf {
    let root = std::env::var_os("PATCHBAY_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/peers")));
    root.join("mcp")
}

/// A peer executable under the peers dir, or `None` after saying why (panics under CI=true).
pub(crate) fn peer(relative: &str) -> Option<PathBuf> {
    let path = peers_dir().join(relative);
    if path.exists() {
        return Some(path);
    }
    let message = format!("peer {} is not installed; run .ci/peers/mcp.sh", path.display());
    if std::env::var("CI").is_ok_and(|ci| ci == "true" || ci == "1") {
        panic!("{message}");
    }
    eprintln!("skipping: {message}");
    None
}

/// Tests that start Node or Python peers take one of these, so a 2-core machine does not
/// start a dozen interpreters at once and push honest connects past their timeouts.
static HEAVY: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(3);

pub(crate) type Heavy = tokio::sync::SemaphorePermit<'static>;

async fn heavy_peer(relative: &str) -> Option<(PathBuf, Heavy)> {
    let path = peer(relative)?;
    let permit = HEAVY.acquire().await.expect("never closed");
    Some((path, permit))
}

pub(crate) async fn everything() -> Option<(PathBuf, Heavy)> {
    heavy_peer("node_modules/.bin/mcp-server-everything").await
}

pub(crate) async fn python() -> Option<(PathBuf, Heavy)> {
    heavy_peer("venv/bin/python").await
}

pub(crate) async fn inspector() -> Option<(PathBuf, Heavy)> {
    heavy_peer("node_modules/.bin/mcp-inspector").await
}

/// Whether a process with this pid exists (zombies count as gone).
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

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
                    status: patchbay_core::ToolStatus::Completed,
                    metadata: Some(serde_json::json!({"documents": ["d1"]})),
                }
            },
        ))
}

/// A peer server process run by a test, in its own process group, killed with it on drop.
pub(crate) struct PeerProcess {
    child: tokio::process::Child,
}

impl PeerProcess {
    /// Start `program args` with `env`, then wait until `port` accepts connections.
    pub(crate) async fn start(program: &std::path::Path, args: &[&str], env: &[(&str, String)], port: u16) -> Self {
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        let child = command.spawn().expect("peer starts");
        let peer = Self { child };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return peer;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("peer {} did not listen on {port}", program.display());
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// A port that was free a moment ago.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}

pub(crate) fn stdio(name: &str, command: &std::path::Path, args: &[&str]) -> patchbay_core::McpServerConfig {
    patchbay_core::McpServerConfig {
        name: name.into(),
        transport: patchbay_core::McpTransport::Stdio {
            command: command.display().to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Default::default(),
        },
    }
}

pub(crate) fn http(name: &str, url: &str, headers: &[(&str, &str)]) -> patchbay_core::McpServerConfig {
    patchbay_core::McpServerConfig {
        name: name.into(),
        transport: patchbay_core::McpTransport::Http {
            url: url.into(),
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        },
    }
}
