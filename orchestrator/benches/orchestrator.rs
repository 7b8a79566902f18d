//! The orchestrator's speed, measured (a bench binary, not a timed test):
//!
//! 1. **Sync round trip over MCP**: `start_agent_session` (sync) over streamable HTTP on
//!    loopback, from patchbay's MCP client, for a child that answers at once (the scripted
//!    `default`): p50 and p99. Baseline in the same run: `list_agent_blueprints` over the same
//!    connection (the MCP floor: no database, no run). Target: p50 within 20 ms (the original
//!    design polls every 2 s).
//! 2. **Throughput of the queue**: 400 async starts, then waiting for all, with 1 and with 4
//!    workers: jobs per second.
//!
//! Run: `cargo bench -p patchbay-orchestrator --bench orchestrator` (`-- --quick` for fewer
//! rounds). Numbers are from one run on one machine; compare the ratios.

use std::sync::Arc;
use std::time::{Duration, Instant};

use patchbay::mcp::McpClientSet;
use patchbay::{ToolContext, ToolSet, context::McpServerConfig, context::McpTransport};
use patchbay_orchestrator::blueprint::Blueprints;
use patchbay_orchestrator::http::{HttpOptions, serve_http};
use patchbay_orchestrator::store::SqliteStore;
use patchbay_orchestrator::{Orchestrator, RunAnswer, StartRequest};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        round_trip(if quick { 100 } else { 1000 }).await;
        for workers in [1, 4] {
            throughput(workers, if quick { 100 } else { 400 }).await;
        }
    });
}

async fn orchestrator(workers: usize) -> (tempfile::TempDir, Orchestrator) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = SqliteStore::open(dir.path()).await.expect("the store opens");
    let store: Arc<dyn patchbay_orchestrator::store::Store> = Arc::new(store);
    // The caller the round trip names is a session here, with room for all its children.
    store
        .create_session(patchbay_orchestrator::store::NewSession {
            session_name: "bench".to_owned(),
            agent_name: "default".to_owned(),
            project_dir: dir.path().display().to_string(),
            parent_session_name: None,
        })
        .await
        .expect("the caller session");
    let limits = patchbay_orchestrator::limits::Limits {
        max_children: u32::MAX,
        ..Default::default()
    };
    let orchestrator = Orchestrator::builder(store, Blueprints::new())
        .workers(workers)
        .project_dir(dir.path())
        .limits(limits)
        .start()
        .await
        .expect("starts");
    (dir, orchestrator)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn timed(tools: &ToolSet, name: &str, input: impl Fn(usize) -> serde_json::Value, n: usize) -> Vec<Duration> {
    let tool = tools.get(name).expect("the tool is listed").clone();
    let cx = ToolContext::new();
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let start = Instant::now();
        let result = tool.execute(input(i), &cx).await;
        times.push(start.elapsed());
        assert!(!result.is_error(), "{}", result.text_content());
    }
    times.sort();
    times
}

async fn round_trip(n: usize) {
    let (_dir, orchestrator) = orchestrator(4).await;
    let server = serve_http(&orchestrator, HttpOptions::default()).await.expect("serves");
    let config = McpServerConfig {
        name: "orchestrator".into(),
        transport: McpTransport::Http {
            url: server.url().to_owned(),
            headers: [
                ("Authorization".to_owned(), format!("Bearer {}", server.token())),
                ("X-Agent-Session-Name".to_owned(), "bench".to_owned()),
            ]
            .into(),
        },
    };
    let connections = McpClientSet::new().with_server(config).connect().await;
    assert_eq!(connections.failed(), [], "connects");
    let tools = connections.tools().await;
    // Warm up both paths.
    timed(&tools, "list_agent_blueprints", |_| serde_json::json!({}), 20).await;
    timed(
        &tools,
        "start_agent_session",
        |i| serde_json::json!({"session_name": format!("warm-{i}"), "prompt": "hi"}),
        20,
    )
    .await;

    let floor = timed(&tools, "list_agent_blueprints", |_| serde_json::json!({}), n).await;
    let sync = timed(
        &tools,
        "start_agent_session",
        |i| serde_json::json!({"session_name": format!("child-{i}"), "prompt": "answer at once"}),
        n,
    )
    .await;
    let (f50, f99) = (percentile(&floor, 0.5), percentile(&floor, 0.99));
    let (s50, s99) = (percentile(&sync, 0.5), percentile(&sync, 0.99));
    println!(
        "sync start_agent_session over MCP, {n} calls: p50 {:.2} ms, p99 {:.2} ms",
        ms(s50),
        ms(s99)
    );
    println!(
        "  baseline list_agent_blueprints:      p50 {:.2} ms, p99 {:.2} ms",
        ms(f50),
        ms(f99)
    );
    println!(
        "  ratio sync start / MCP floor: p50 {:.1}x; vs polling every 2 s (mean wait 1 s): {:.0}x faster; target p50 <= 20 ms: {}",
        ms(s50) / ms(f50),
        1000.0 / ms(s50),
        if ms(s50) <= 20.0 { "met" } else { "MISSED" }
    );
    connections.close().await;
    server.shutdown().await;
    orchestrator.shutdown().await;
}

async fn throughput(workers: usize, n: usize) {
    let (_dir, orchestrator) = orchestrator(workers).await;
    let start = Instant::now();
    let mut jobs = Vec::with_capacity(n);
    for i in 0..n {
        let request = StartRequest {
            session_name: format!("s{i}"),
            prompt: "answer at once".into(),
            async_mode: true,
            ..StartRequest::default()
        };
        match orchestrator.start_session(request).await.expect("queued") {
            RunAnswer::Accepted(accepted) => jobs.push((accepted.job_id, accepted.session_name)),
            RunAnswer::Ended(_) => unreachable!("async mode answers at once"),
        }
    }
    let queued = start.elapsed();
    for (job_id, session) in &jobs {
        let job = orchestrator
            .wait_for_job(job_id, session, Duration::from_secs(120))
            .await
            .expect("waits");
        assert!(job.status.is_terminal(), "job {job_id} ended");
    }
    let total = start.elapsed();
    println!(
        "queue, {workers} worker(s): {n} jobs in {:.2} s = {:.0} jobs/s (queueing alone {:.0} jobs/s)",
        total.as_secs_f64(),
        n as f64 / total.as_secs_f64(),
        n as f64 / queued.as_secs_f64()
    );
    orchestrator.shutdown().await;
}
