//! patchbay-mcp benchmarks (a bench binary: one run, ratios printed).
//!
//! 1. Sequential `tools/call` round trips of an echo tool: our [`ToolServer`] (token check,
//!    context lookup, ToolResult conversion) versus a plain rmcp server doing the same work,
//!    both stateless JSON on loopback and called by the same rmcp client; versus Python
//!    FastMCP when installed; and our full client path (`McpClientSet` tool) on our server.
//! 2. Connecting 10 servers concurrently versus the slowest of the same 10 connected one by
//!    one: our HTTP tool servers, and server-everything over stdio when installed.
//!
//! `cargo bench -p patchbay-mcp --bench mcp` (`MCP_BENCH_CALLS=N` to change the call count;
//! each round-trip figure is the best of three interleaved rounds).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use patchbay_core::{
    FnTool, RequestContext, ToolContext, ToolResult, ToolSet, context::McpServerConfig, context::McpTransport,
};
use patchbay_mcp::{McpClientSet, ToolServer};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use schemars::JsonSchema;
use serde::Deserialize;

#[path = "../tests/common.rs"]
#[allow(dead_code)]
mod common;

#[path = "../tests/plain.rs"]
#[allow(dead_code)]
mod plain;

#[derive(Deserialize, JsonSchema)]
struct EchoInput {
    message: String,
}

fn echo_tools() -> ToolSet {
    ToolSet::new().with(FnTool::new(
        "echo",
        "Echo the message back.",
        |input: EchoInput, _cx: ToolContext| async move { ToolResult::text(input.message) },
    ))
}

fn http_config(name: &str, url: &str, headers: &std::collections::BTreeMap<String, String>) -> McpServerConfig {
    McpServerConfig {
        name: name.into(),
        transport: McpTransport::Http {
            url: url.into(),
            headers: headers.clone(),
        },
    }
}

/// Mean time per sequential echo call with a raw rmcp client.
async fn rmcp_calls(url: &str, headers: &std::collections::BTreeMap<String, String>, calls: usize) -> Duration {
    let map = headers
        .iter()
        .filter_map(|(k, v)| {
            Some((
                http::HeaderName::try_from(k.as_str()).ok()?,
                http::HeaderValue::try_from(v).ok()?,
            ))
        })
        .collect();
    // rmcp's own default client would need a process-wide rustls provider: use ours, built
    // like rmcp's (no idle pooling against a stateful server).
    let http_client = patchbay_http::client_builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("an HTTP client");
    let transport = StreamableHttpClientTransport::with_client(
        http_client,
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(map),
    );
    let client = ().serve(transport).await.expect("handshake");
    let call = || {
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = serde_json::json!({"message": "ping"}).as_object().cloned();
        client.peer().call_tool_once(params)
    };
    for _ in 0..calls / 10 {
        call().await.expect("warm-up call");
    }
    let start = Instant::now();
    for _ in 0..calls {
        call().await.expect("call");
    }
    let elapsed = start.elapsed() / calls as u32;
    let _ = client.cancel().await;
    elapsed
}

/// Mean time per sequential call through the client set's `Tool`.
async fn client_set_calls(config: McpServerConfig, calls: usize) -> Duration {
    let connections = McpClientSet::new().with_server(config).connect().await;
    let tools = connections.tools().await;
    let tool = tools.get("echo").expect("echo listed").clone();
    let cx = ToolContext::new();
    let input = serde_json::json!({"message": "ping"});
    for _ in 0..calls / 10 {
        tool.execute(input.clone(), &cx).await;
    }
    let start = Instant::now();
    for _ in 0..calls {
        let result = tool.execute(input.clone(), &cx).await;
        assert!(!result.is_error());
    }
    let elapsed = start.elapsed() / calls as u32;
    connections.close().await;
    elapsed
}

fn peers() -> PathBuf {
    patchbay_conformance::peers::peers_dir().join("mcp")
}

const FASTMCP_ECHO: &str = r#"
import os
from mcp.server.fastmcp import FastMCP
mcp = FastMCP("echo", host="127.0.0.1", port=int(os.environ["PORT"]), log_level="WARNING", stateless_http=True, json_response=True)
@mcp.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message
mcp.run(transport="streamable-http")
"#;

async fn fastmcp_calls(calls: usize) -> Option<Duration> {
    let python = peers().join("venv/bin/python");
    if !python.exists() {
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let script = std::env::temp_dir().join(format!("patchbay-bench-fastmcp-{port}.py"));
    std::fs::write(&script, FASTMCP_ECHO).ok()?;
    let mut child = tokio::process::Command::new(python)
        .arg(&script)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let start = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if start.elapsed() > Duration::from_secs(20) {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let per_call = rmcp_calls(&format!("http://127.0.0.1:{port}/mcp"), &Default::default(), calls).await;
    let _ = child.kill().await;
    let _ = std::fs::remove_file(script);
    Some(per_call)
}

/// (slowest single, sum of singles, all concurrently) connect times for these servers.
async fn connect_times(servers: &[McpServerConfig]) -> (Duration, Duration, Duration) {
    let mut slowest = Duration::ZERO;
    let mut sum = Duration::ZERO;
    for server in servers {
        let start = Instant::now();
        let connections = McpClientSet::new().with_server(server.clone()).connect().await;
        slowest = slowest.max(start.elapsed());
        sum += start.elapsed();
        assert_eq!(connections.failed(), [], "{:?}", connections.failed());
        connections.close().await;
    }
    let start = Instant::now();
    let connections = McpClientSet::new()
        .with_servers(servers.iter().cloned())
        .connect()
        .await;
    let concurrent = start.elapsed();
    assert_eq!(
        connections.connected().len(),
        servers.len(),
        "{:?}",
        connections.failed()
    );
    connections.close().await;
    (slowest, sum, concurrent)
}

fn us(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too: keep that quick.
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let calls: usize = std::env::var("MCP_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 20 } else { 2000 });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        println!("== sequential tools/call round trips ({calls} calls, echo, loopback)");
        let ours = ToolServer::start(echo_tools()).await.expect("our server");
        let guard = ours.register(&RequestContext::new().with_metadata("project_id", "bench"));
        let (plain_url, stop_plain) = plain::start_plain(false).await;

        // Interleaved rounds, best of three each: the machine is shared, noise is one-sided.
        let (mut plain, mut our_server, mut full) = (Duration::MAX, Duration::MAX, Duration::MAX);
        for _ in 0..3 {
            plain = plain.min(rmcp_calls(&plain_url, &Default::default(), calls).await);
            our_server = our_server.min(rmcp_calls(ours.url(), guard.headers(), calls).await);
            full = full.min(client_set_calls(http_config("ours", ours.url(), guard.headers()), calls).await);
        }
        println!("plain rmcp server, rmcp client:         {}/call", us(plain));
        println!("patchbay ToolServer, rmcp client:       {}/call  ({:.2}x plain)", us(our_server), ratio(our_server, plain));
        println!("patchbay ToolServer, McpClientSet tool: {}/call  ({:.2}x plain)", us(full), ratio(full, plain));
        match fastmcp_calls(calls).await {
            Some(fastmcp) => println!(
                "Python FastMCP (stateless JSON), rmcp client: {}/call  (patchbay ToolServer is {:.2}x faster)",
                us(fastmcp),
                ratio(fastmcp, our_server)
            ),
            None => println!("Python FastMCP: not installed (run .ci/peers/mcp.sh)"),
        }
        stop_plain.cancel();

        println!("== connect to 10 servers concurrently vs the slowest single one");
        let mut servers = Vec::new();
        let mut guards = Vec::new();
        for i in 0..10 {
            let server = ToolServer::start(echo_tools()).await.expect("server");
            let guard = server.register(&RequestContext::new());
            servers.push(http_config(&format!("http{i}"), server.url(), guard.headers()));
            guards.push((server, guard));
        }
        let (slowest, sum, concurrent) = connect_times(&servers).await;
        println!(
            "10 patchbay HTTP servers: slowest single {:.1} ms, one by one {:.1} ms, all 10 concurrently {:.1} ms ({:.2}x the slowest)",
            slowest.as_secs_f64() * 1e3,
            sum.as_secs_f64() * 1e3,
            concurrent.as_secs_f64() * 1e3,
            ratio(concurrent, slowest)
        );
        let everything = peers().join("node_modules/.bin/mcp-server-everything");
        if everything.exists() && !quick {
            let servers: Vec<_> = (0..10)
                .map(|i| McpServerConfig {
                    name: format!("everything{i}"),
                    transport: McpTransport::Stdio {
                        command: everything.display().to_string(),
                        args: vec!["stdio".into()],
                        env: Default::default(),
                    },
                })
                .collect();
            let (slowest, sum, concurrent) = connect_times(&servers).await;
            println!(
                "10 server-everything over stdio: slowest single {:.1} ms, one by one {:.1} ms, all 10 concurrently {:.1} ms ({:.2}x the slowest; 10 node processes starting on {} cores)",
                slowest.as_secs_f64() * 1e3,
                sum.as_secs_f64() * 1e3,
                concurrent.as_secs_f64() * 1e3,
                ratio(concurrent, slowest),
                std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
            );
        }
        drop(guards);
    });
}
