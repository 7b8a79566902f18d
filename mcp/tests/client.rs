//! The client set against real peers: server-everything (stdio and HTTP), Python FastMCP, and
//! servers that are down, mute or hanging. Each within its timeout, nothing left running.

use std::path::Path;
use std::time::{Duration, Instant};

use patchbay_core::{RequestContext, Signal};
use patchbay_mcp::McpClientSet;
use serde_json::json;

use crate::common::{call, http, stdio, wait_group_gone};

const MARGIN: Duration = Duration::from_secs(2);

#[tokio::test]
async fn a_server_that_accepts_and_never_answers_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let timeout = Duration::from_secs(1);
    let set = McpClientSet::new().with_connect_timeout(timeout).with_server(http(
        "mute",
        &format!("http://127.0.0.1:{port}/mcp"),
        &[],
    ));
    let start = Instant::now();
    let connections = set.connect().await;
    assert!(start.elapsed() < timeout + MARGIN, "{:?}", start.elapsed());
    let failure = &connections.failed()[0];
    assert!(failure.error.contains("no answer within 1s"), "{}", failure.error);
    hold.abort();
}

#[tokio::test]
async fn a_stdio_command_that_never_speaks_times_out_and_is_killed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pidfile = dir.path().join("pid");
    // The shell leads the group; `sleep` is a descendant that must die with it.
    let script = format!(
        "echo $$ > {}; echo 'starting, never speaking' >&2; sleep 300 & wait",
        pidfile.display()
    );
    let timeout = Duration::from_secs(1);
    let set =
        McpClientSet::new()
            .with_connect_timeout(timeout)
            .with_server(stdio("mute", Path::new("sh"), &["-c", &script]));
    let start = Instant::now();
    let connections = set.connect().await;
    assert!(start.elapsed() < timeout + MARGIN, "{:?}", start.elapsed());
    let failure = &connections.failed()[0];
    assert!(failure.error.contains("no answer within 1s"), "{}", failure.error);
    assert!(
        failure.error.contains("never speaking"),
        "stderr tail kept: {}",
        failure.error
    );
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("pid written")
        .trim()
        .parse()
        .expect("a pid");
    assert!(
        wait_group_gone(pid, Duration::from_secs(2)).await,
        "shell or sleep left running"
    );
}

#[tokio::test]
async fn a_missing_command_and_a_crashing_one_are_reported() {
    let set = McpClientSet::new()
        .with_server(stdio("missing", Path::new("/nonexistent/mcp-server"), &[]))
        .with_server(stdio("crash", Path::new("sh"), &["-c", "echo boom >&2; exit 3"]));
    let start = Instant::now();
    let connections = set.connect().await;
    assert!(start.elapsed() < Duration::from_secs(5));
    let errors: Vec<_> = connections
        .failed()
        .iter()
        .map(|f| (f.name.as_str(), f.error.as_str()))
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    eprintln!("{errors:#?}");
    assert!(errors[0].1.contains("cannot start"), "{errors:?}");
    assert!(errors[1].1.contains("handshake failed"), "{errors:?}");
}

#[tokio::test]
async fn cancelling_while_connecting_abandons_the_server() {
    let signal = Signal::new();
    let set = McpClientSet::new().with_server(stdio("mute", Path::new("sleep"), &["300"]));
    let cancel = signal.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let start = Instant::now();
    let connections = set.connect_with(&RequestContext::new(), &signal).await;
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(connections.failed()[0].error.contains("cancelled"));
}

#[tokio::test]
async fn no_servers_means_no_tools_and_no_failures() {
    let connections = McpClientSet::new().connect().await;
    assert!(connections.tools().await.is_empty());
    assert_eq!(connections.failed(), []);
    assert!(connections.warnings().is_empty());
}

#[tokio::test]
async fn tools_list_changed_refreshes_the_tool_list() {
    let (url, stop) = crate::plain::start_plain(true).await;
    let connections = McpClientSet::new()
        .with_server(http("plain", &url, &[]))
        .connect()
        .await;
    assert_eq!(connections.failed(), []);
    let before = connections.tools().await;
    assert_eq!(before.len(), 2);
    let grown = call(&before, "grow", json!({})).await;
    assert_eq!(grown.text_content(), "grown");
    // The notification may arrive just after the result.
    let mut after = connections.tools().await;
    for _ in 0..50 {
        if after.len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        after = connections.tools().await;
    }
    assert!(after.get("extra_1").is_some(), "{after:?}");
    connections.close().await;
    stop.cancel();
}
