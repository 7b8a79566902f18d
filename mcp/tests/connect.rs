//! Connecting is concurrent: servers that never answer cost one connect timeout together, not
//! one each, whether connected directly or attached to an agent run; a mute stdio server's
//! process is gone afterwards.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use patchbay_core::{Agent, Event, context::McpServerConfig};
use patchbay_mcp::McpClientSet;
use patchbay_scripted::Turn;

use crate::common::{events, http, provider, stdio, wait_group_gone};

/// The connect timeout of every test here.
const T: Duration = Duration::from_secs(1);

/// A TCP listener that accepts connections and holds them without a byte of answer.
struct Mute {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Mute {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        Self {
            url: format!("http://127.0.0.1:{port}/mcp"),
            task,
        }
    }

    fn server(&self, name: &str) -> McpServerConfig {
        http(name, &self.url, &[])
    }
}

impl Drop for Mute {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A stdio server that starts and never speaks; its pid (= process group) goes to `pidfile`.
fn silent_stdio(name: &str, pidfile: &Path) -> McpServerConfig {
    let script = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    stdio(name, Path::new("sh"), &["-c", &script])
}

fn assert_about_one_timeout(elapsed: Duration) {
    assert!(elapsed >= T, "returned before the timeout: {elapsed:?}");
    assert!(
        elapsed < T.mul_f64(1.8),
        "took {elapsed:?}: the servers were not connected concurrently"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mute_servers_cost_one_connect_timeout_together() {
    let (first, second) = (Mute::start().await, Mute::start().await);
    let dir = tempfile::tempdir().expect("temp dir");
    let pidfile = dir.path().join("pid");
    let set = McpClientSet::new()
        .with_connect_timeout(T)
        .with_server(first.server("mute-1"))
        .with_server(second.server("mute-2"))
        .with_server(silent_stdio("silent", &pidfile));

    let start = Instant::now();
    let connections = set.connect().await;
    assert_about_one_timeout(start.elapsed());

    assert!(connections.connected().is_empty());
    let failed: Vec<&str> = connections.failed().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(failed, ["mute-1", "mute-2", "silent"]);
    for failure in connections.failed() {
        assert!(
            failure.error.contains("no answer within 1s"),
            "the reason names the timeout: {}",
            failure.error
        );
    }
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("the stdio server started")
        .trim()
        .parse()
        .expect("a pid");
    assert!(
        wait_group_gone(pid, Duration::from_secs(5)).await,
        "the silent stdio server {pid} is still running"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_run_attaching_mute_servers_waits_one_connect_timeout_and_goes_on() {
    let (first, second) = (Mute::start().await, Mute::start().await);
    let set = McpClientSet::new()
        .with_connect_timeout(T)
        .with_server(first.server("mute-1"))
        .with_server(second.server("mute-2"));
    let agent = Agent::new(provider(vec![Turn::text("fine without them")]), "m").with_tool_source(Arc::new(set));

    let start = Instant::now();
    let events = events(&agent, "go").await;
    assert_about_one_timeout(start.elapsed());

    let Some(Event::Started { warnings, .. }) = events.first() else {
        panic!("no Started: {events:#?}");
    };
    let failures = warnings.iter().filter(|w| w.code == "mcp_server_failed").count();
    assert_eq!(failures, 2, "{warnings:#?}");
    match events.get(1) {
        Some(Event::McpConnected { servers, failed }) => {
            assert!(servers.is_empty());
            let names: Vec<&str> = failed.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(names, ["mute-1", "mute-2"]);
            assert!(
                failed.iter().all(|f| f.error.contains("no answer within 1s")),
                "{failed:#?}"
            );
        }
        other => panic!("McpConnected after Started, got {other:#?}"),
    }
    assert!(matches!(events.last(), Some(Event::Finish { .. })), "the run went on");
}
