//! One-turn and five-turn latency through this provider versus the Python Agent SDK's
//! `query()`, on the same mock Messages server and the same CLI binary.
//!
//! `cargo bench -p patchbay-claude-agent --bench latency` (needs the peers of
//! `.ci/peers/claude.sh`; set `BENCH_RUNS`, default 5). Prints medians and the ratio.

use std::process::Command;
use std::time::Instant;

use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay_conformance::mock::MockServer;
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_core::{Message, ProviderExt, RequestContext, Session, Signal, ToolSet};
use patchbay_scripted::{Part, Response, Turn};

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

async fn turn(provider: &ClaudeAgentProvider, prompt: &str, session: Option<String>) -> Option<String> {
    let context = session.map(|id| RequestContext::new().with_session(Session::Resume { id }));
    let response = provider
        .generate(
            &[Message::user(prompt)],
            &ToolSet::new(),
            "claude-bench",
            &Signal::new(),
            context.as_ref(),
        )
        .await;
    match response {
        Ok(response) => response.session_id,
        Err(error) => {
            eprintln!("turn failed: {error}");
            None
        }
    }
}

fn main() {
    let peers = patchbay_conformance::peers::peers_dir();
    let cli = peers.join("node_modules/.bin/claude");
    if !cli.exists() {
        eprintln!(
            "the CLI is not installed at {} (run .ci/peers/claude.sh)",
            cli.display()
        );
        return;
    }
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("no runtime: {error}");
            return;
        }
    };
    runtime.block_on(async move {
        let answer = patchbay_conformance::mock::Serve::Turn(Turn::Respond(
            Response::new(vec![Part::text("Hello from the mock.")]).with_usage(10, 5),
        ));
        let server = match MockServer::builder(AnthropicWire)
            .serve([answer])
            .repeat_last()
            .start()
            .await
        {
            Ok(server) => server,
            Err(error) => {
                eprintln!("mock: {error}");
                return;
            }
        };
        let Ok(home) = tempfile::tempdir() else {
            eprintln!("no temp dir");
            return;
        };
        let config = ClaudeAgentConfig::new()
            .with_cli_path(&cli)
            .offline(&server.url(), home.path());
        let provider = ClaudeAgentProvider::new(config);
        turn(&provider, "warm up", None).await;
        let mut one = Vec::new();
        for _ in 0..runs {
            let start = Instant::now();
            turn(&provider, "Say hello.", None).await;
            one.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        let mut five = Vec::new();
        for _ in 0..runs {
            let start = Instant::now();
            let mut session = turn(&provider, "turn 1", None).await;
            for i in 2..=5 {
                session = turn(&provider, &format!("turn {i}"), session).await;
            }
            five.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        // Kept alive: turn 1 cold, turns 2-5 reuse the CLI (Resume of the same session).
        let kept = ClaudeAgentProvider::new(
            ClaudeAgentConfig::new()
                .with_cli_path(&cli)
                .offline(&server.url(), home.path())
                .with_keep_alive(std::time::Duration::from_secs(60)),
        );
        let mut warm = Vec::new();
        let mut five_kept = Vec::new();
        for _ in 0..runs {
            let start = Instant::now();
            let mut session = turn(&kept, "turn 1", None).await;
            for i in 2..=5 {
                let turn_start = Instant::now();
                session = turn(&kept, &format!("turn {i}"), session).await;
                warm.push(turn_start.elapsed().as_secs_f64() * 1000.0);
            }
            five_kept.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        drop(kept);
        let rust_warm = median(&mut warm);
        let rust_five_kept = median(&mut five_kept);
        let rust_one = median(&mut one);
        let rust_five = median(&mut five);
        println!("patchbay-claude-agent: one turn {rust_one:.0} ms, five turns {rust_five:.0} ms (median of {runs})");
        println!(
            "patchbay-claude-agent kept alive: warm turn {rust_warm:.0} ms ({:.2}x of a cold turn), five turns {rust_five_kept:.0} ms",
            rust_warm / rust_one
        );

        let python = peers.join("claude-venv/bin/python");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/sdk_query.py");
        let Ok(py_home) = tempfile::tempdir() else {
            return;
        };
        let output = Command::new(&python)
            .arg(script)
            .arg(&cli)
            .arg(server.url())
            .arg(py_home.path())
            .arg(runs.to_string())
            .output();
        let parsed = output.ok().and_then(|o| {
            if !o.status.success() {
                eprintln!("python sdk failed: {}", String::from_utf8_lossy(&o.stderr));
            }
            serde_json::from_slice::<serde_json::Value>(&o.stdout).ok()
        });
        let Some(parsed) = parsed else {
            println!(
                "claude-agent-sdk (Python): not available at {} (PATCHBAY_BENCH=1 bash .ci/peers/claude.sh)",
                python.display()
            );
            return;
        };
        let list = |key: &str| -> Vec<f64> {
            parsed[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(serde_json::Value::as_f64)
                .collect()
        };
        let py_one = median(&mut list("one_turn_ms"));
        let py_five = median(&mut list("five_turn_ms"));
        println!("claude-agent-sdk query(): one turn {py_one:.0} ms, five turns {py_five:.0} ms (median of {runs})");
        let py_warm = median(&mut list("warm_turn_ms"));
        let py_five_kept = median(&mut list("five_turn_kept_alive_ms"));
        println!("claude-agent-sdk ClaudeSDKClient (kept alive): warm turn {py_warm:.0} ms, five turns {py_five_kept:.0} ms");
        println!(
            "ratio patchbay / python: one turn {:.2}x, five turns {:.2}x, warm turn {:.2}x, five turns kept alive {:.2}x",
            rust_one / py_one,
            rust_five / py_five,
            rust_warm / py_warm,
            rust_five_kept / py_five_kept
        );
    });
}
