//! One turn through `patchbay-acp` on Zed's Claude adapter (`claude-agent-acp`) beside one
//! through `patchbay-claude-agent` on the Claude Code CLI, on the same loopback mock of the
//! Messages API, interleaved round by round:
//! - **cold**: a new session's first turn on a new process;
//! - **kept alive**: the session's next turn on the kept-alive process (`keep_alive`).
//!
//! `cargo bench -p patchbay-acp --bench latency` (needs the peers of `.ci/peers/acp.sh` and
//! `.ci/peers/claude.sh`; `BENCH_RUNS` rounds, default 10). Prints medians and the ratios
//! acp / claude-agent. The adapter runs its own bundled Claude Code (2.1.83), the claude-agent
//! provider the pinned CLI (2.1.330): the ratio compares the two ways of driving Claude Code,
//! not one binary.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_acp::{AcpConfig, AcpProvider, Preset};
use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_conformance::peers::claude_code_offline_env;
use patchbay_core::{Event, Message, Provider, RequestContext, Signal, ToolSet, context::Session};
use patchbay_scripted::{Part, Response, Turn};

fn median(values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// One turn: milliseconds to its `Finish`, and the session id; `None` when it failed.
async fn turn(provider: &dyn Provider, session: Option<String>) -> Option<(f64, Option<String>)> {
    let context = session.map(|id| RequestContext::new().with_session(Session::Resume { id }));
    let start = Instant::now();
    let mut stream = provider
        .create_response(
            &[Message::user("Say hello.")],
            &ToolSet::new(),
            "claude-sonnet-4-5",
            &Signal::new(),
            context.as_ref(),
        )
        .await
        .map_err(|e| eprintln!("turn failed: {e}"))
        .ok()?;
    let (mut answer, mut id) = (None, None);
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Started { session_id, .. }) => id = session_id,
            Ok(Event::Finish { .. }) => answer = Some(start.elapsed().as_secs_f64() * 1000.0),
            Ok(_) => {}
            Err(error) => {
                eprintln!("turn failed: {error}");
                return None;
            }
        }
    }
    Some((answer?, id))
}

/// A kept-alive turn: resumes `session` and keeps the id it answers with.
async fn kept_turn(provider: &dyn Provider, session: &mut Option<String>, into: &mut Vec<f64>) {
    if let Some((ms, id)) = turn(provider, session.clone()).await {
        into.push(ms);
        *session = id.or(session.take());
    }
}

async fn bench(peers: &Path, runs: usize) {
    let answer = Serve::Turn(Turn::Respond(
        Response::new(vec![Part::text("Hello from the mock.")]).with_usage(10, 5),
    ));
    let server = match MockServer::builder(AnthropicWire)
        .serve([answer])
        .repeat_last()
        .start()
        .await
    {
        Ok(server) => server,
        Err(error) => return eprintln!("mock: {error}"),
    };
    let (Ok(home), Ok(acp_home)) = (tempfile::tempdir(), tempfile::tempdir()) else {
        return eprintln!("no temp dir");
    };
    let cli = peers.join("node_modules/.bin/claude");
    let adapter = peers.join("acp/node_modules/.bin/claude-agent-acp");
    let claude = ClaudeAgentConfig::new()
        .with_cli_path(&cli)
        .offline(&server.url(), home.path());
    let mut acp = AcpConfig::preset(Preset::Claude).with_command(&adapter);
    for (key, value) in claude_code_offline_env(&server.url(), acp_home.path()) {
        acp = acp.with_env(key, value);
    }
    let built = (
        ClaudeAgentProvider::new(claude.clone()),
        ClaudeAgentProvider::new(claude.with_keep_alive(Duration::from_secs(600))),
        AcpProvider::new(acp.clone()),
        AcpProvider::new(acp.with_keep_alive(Some(Duration::from_secs(600)))),
    );
    let (Ok(cold), Ok(kept), Ok(acp_cold), Ok(acp_kept)) = built else {
        return eprintln!("a provider could not be built");
    };
    let (cold, kept, acp_cold, acp_kept) = (Arc::new(cold), Arc::new(kept), Arc::new(acp_cold), Arc::new(acp_kept));
    // Warm the caches (node's compile cache, the page cache) and open the kept sessions.
    turn(&*cold, None).await;
    turn(&*acp_cold, None).await;
    let mut session = turn(&*kept, None).await.and_then(|(_, id)| id);
    let mut acp_session = turn(&*acp_kept, None).await.and_then(|(_, id)| id);
    let (mut s_cold, mut s_kept, mut a_cold, mut a_kept) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        tokio::time::sleep(Duration::from_millis(300)).await;
        if let Some((ms, _)) = turn(&*acp_cold, None).await {
            a_cold.push(ms);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        if let Some((ms, _)) = turn(&*cold, None).await {
            s_cold.push(ms);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        kept_turn(&*acp_kept, &mut acp_session, &mut a_kept).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        kept_turn(&*kept, &mut session, &mut s_kept).await;
    }
    println!(
        "rounds: {runs} (samples: acp cold {}, acp kept alive {}, claude-agent cold {}, claude-agent kept alive {})",
        a_cold.len(),
        a_kept.len(),
        s_cold.len(),
        s_kept.len()
    );
    let (ac, ak, sc, sk) = (median(&a_cold), median(&a_kept), median(&s_cold), median(&s_kept));
    println!(
        "medians to Finish: acp cold {ac:.0} ms, kept alive {ak:.0} ms; claude-agent cold {sc:.0} ms, kept alive {sk:.0} ms"
    );
    println!(
        "ratio acp / claude-agent: cold {:.2}x, kept alive {:.2}x",
        ac / sc,
        ak / sk
    );
    println!("acp kept alive / acp cold: {:.2}x", ak / ac);
}

fn main() {
    let peers = patchbay_conformance::peers::peers_dir();
    for needed in ["node_modules/.bin/claude", "acp/node_modules/.bin/claude-agent-acp"] {
        if !peers.join(needed).exists() {
            eprintln!(
                "{needed} is not installed in {} (run .ci/peers/claude.sh and .ci/peers/acp.sh)",
                peers.display()
            );
            return;
        }
    }
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10);
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(bench(&peers, runs)),
        Err(error) => eprintln!("no runtime: {error}"),
    }
}
