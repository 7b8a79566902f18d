//! A stdio server that dies is restarted with bounded backoff; in between its tools fail at
//! once with a result that says so and the host gets a warning; a server that keeps dying
//! stays down. Version negotiation works both ways against the reference server.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal as Sig, kill};
use nix::unistd::Pid;
use patchbay_core::{Event, ToolContext, tool::ToolStatus};
use patchbay_mcp::rmcp::model::ProtocolVersion;
use patchbay_mcp::{McpClientSet, NOTICE_LOGGER, RestartPolicy};
use serde_json::json;

use crate::common::stdio;
use crate::installed::everything;

fn kill_group(pid: u32) {
    let _ = nix::sys::signal::killpg(Pid::from_raw(pid as i32), Sig::SIGKILL);
    let _ = kill(Pid::from_raw(pid as i32), Sig::SIGKILL);
}

pub(crate) async fn a_stdio_server_that_dies_is_restarted_and_its_tools_come_back() {
    let (bin, _heavy) = everything().await;
    let set = McpClientSet::new()
        .with_server(stdio("everything", &bin, &["stdio"]))
        .with_restart(RestartPolicy::new(3).with_backoff(Duration::from_millis(500), Duration::from_secs(2)));
    let connections = set.connect().await;
    let client = connections.client("everything").expect("connected");
    let first = client.pid().expect("a pid");
    kill_group(first);
    // While it is down, a call fails at once with a clear result (never a hang).
    let started = Instant::now();
    let mut saw_unavailable = false;
    while started.elapsed() < Duration::from_secs(30) {
        let result = tokio::time::timeout(
            Duration::from_secs(10),
            client.call_tool("echo", json!({"message": "back?"}), &ToolContext::new(), None),
        )
        .await
        .expect("a call never hangs");
        if result.status == ToolStatus::Completed && client.pid() != Some(first) {
            break;
        }
        let text = result.text_content();
        assert_eq!(result.status, ToolStatus::Failed, "{result:?}");
        assert!(text.contains("everything"), "{text}");
        saw_unavailable |= text.contains("being restarted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(saw_unavailable, "no call saw the restart");
    assert!(client.is_available());
    assert_ne!(client.pid(), Some(first), "a new process");
    let echo = client
        .call_tool("echo", json!({"message": "again"}), &ToolContext::new(), None)
        .await;
    assert!(echo.text_content().contains("again"), "{echo:?}");
    let notices: Vec<String> = connections
        .take_events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Log {
                logger: Some(logger),
                level,
                data,
                ..
            } if logger == NOTICE_LOGGER => Some(format!("{level}: {}", data.as_str().unwrap_or_default())),
            _ => None,
        })
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("warning:") && n.contains("restarting")),
        "{notices:?}"
    );
    assert!(notices.iter().any(|n| n.contains("restarted")), "{notices:?}");
    connections.close().await;
}

pub(crate) async fn a_stdio_server_that_never_comes_back_stays_down_with_a_clear_error() {
    let (bin, _heavy) = everything().await;
    let set = McpClientSet::new()
        .with_server(stdio("everything", &bin, &["stdio"]))
        .with_restart(RestartPolicy::never());
    let connections = set.connect().await;
    let client = connections.client("everything").expect("connected");
    kill_group(client.pid().expect("a pid"));
    let started = Instant::now();
    while client.is_available() && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let result = client
        .call_tool("echo", json!({"message": "x"}), &ToolContext::new(), None)
        .await;
    assert!(result.text_content().contains("could not be restarted"), "{result:?}");
    connections.close().await;
}

pub(crate) async fn version_negotiation_works_both_ways() {
    let (bin, _heavy) = everything().await;
    for (proposed, expected) in [
        (None, None),
        (Some(ProtocolVersion::V_2025_11_25), Some(ProtocolVersion::V_2025_11_25)),
        (Some(ProtocolVersion::V_2025_06_18), Some(ProtocolVersion::V_2025_06_18)),
    ] {
        let mut set = McpClientSet::new().with_server(stdio("everything", &bin, &["stdio"]));
        if let Some(version) = &proposed {
            set = set.with_protocol_version(version.clone());
        }
        let connections = set.connect().await;
        let client = connections.client("everything").expect("connected");
        let agreed = client.protocol_version().expect("a version");
        match expected {
            Some(expected) => assert_eq!(agreed, expected, "proposed {proposed:?}"),
            // Proposing 2026-07-28 in `initialize`: the server answers the newest it speaks.
            None => assert!(ProtocolVersion::KNOWN_VERSIONS.contains(&agreed), "{agreed}"),
        }
        let tools = connections.tools().await;
        assert!(tools.get("echo").is_some());
        connections.close().await;
    }
}
