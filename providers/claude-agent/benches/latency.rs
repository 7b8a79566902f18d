//! One-turn and five-turn latency through this provider versus the Python Agent SDK's
//! `query()`, on the same mock Messages server and the same CLI binary.
//!
//! `cargo bench -p patchbay-claude-agent --bench latency` (needs the peers of
//! `.ci/peers/claude.sh`; set `BENCH_RUNS`, default 5). Prints medians and the ratio.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

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

/// Medians in milliseconds.
struct Figures {
    one: f64,
    five: f64,
    warm: f64,
    five_kept: f64,
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// Five turns of one session (each after the first resumes it), timing each resumed turn into
/// `warm` when given. Returns the whole time.
async fn five_turns(provider: &ClaudeAgentProvider, mut warm: Option<&mut Vec<f64>>) -> f64 {
    let start = Instant::now();
    let mut session = turn(provider, "turn 1", None).await;
    for i in 2..=5 {
        let turn_start = Instant::now();
        session = turn(provider, &format!("turn {i}"), session).await;
        if let Some(warm) = warm.as_deref_mut() {
            warm.push(ms(turn_start));
        }
    }
    ms(start)
}

/// This provider: cold one- and five-turn runs, then kept alive (turn 1 cold, turns 2-5 reuse
/// the CLI).
async fn patchbay(config: ClaudeAgentConfig, runs: usize) -> Figures {
    let provider = ClaudeAgentProvider::new(config.clone()).unwrap_or_else(|e| panic!("{e}"));
    turn(&provider, "warm up", None).await;
    let mut one = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        turn(&provider, "Say hello.", None).await;
        one.push(ms(start));
    }
    let mut five = Vec::new();
    for _ in 0..runs {
        five.push(five_turns(&provider, None).await);
    }
    let kept =
        ClaudeAgentProvider::new(config.with_keep_alive(Duration::from_secs(60))).unwrap_or_else(|e| panic!("{e}"));
    let (mut warm, mut five_kept) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        five_kept.push(five_turns(&kept, Some(&mut warm)).await);
    }
    Figures {
        one: median(&mut one),
        five: median(&mut five),
        warm: median(&mut warm),
        five_kept: median(&mut five_kept),
    }
}

/// The Python Agent SDK on the same mock and CLI (`benches/sdk_query.py`), if installed.
fn python(peers: &Path, cli: &Path, url: &str, runs: usize) -> Option<Figures> {
    let python = peers.join("claude-venv/bin/python");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/sdk_query.py");
    let home = tempfile::tempdir().ok()?;
    let output = Command::new(&python)
        .arg(script)
        .arg(cli)
        .arg(url)
        .arg(home.path())
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
        return None;
    };
    let list = |key: &str| -> f64 {
        let mut values: Vec<f64> = parsed[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_f64)
            .collect();
        median(&mut values)
    };
    Some(Figures {
        one: list("one_turn_ms"),
        five: list("five_turn_ms"),
        warm: list("warm_turn_ms"),
        five_kept: list("five_turn_kept_alive_ms"),
    })
}

async fn bench(peers: PathBuf, cli: PathBuf, runs: usize) {
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
    let rust = patchbay(config, runs).await;
    println!(
        "patchbay-claude-agent: one turn {:.0} ms, five turns {:.0} ms (median of {runs})",
        rust.one, rust.five
    );
    println!(
        "patchbay-claude-agent kept alive: warm turn {:.0} ms ({:.2}x of a cold turn), five turns {:.0} ms",
        rust.warm,
        rust.warm / rust.one,
        rust.five_kept
    );
    let Some(py) = python(&peers, &cli, &server.url(), runs) else {
        return;
    };
    println!(
        "claude-agent-sdk query(): one turn {:.0} ms, five turns {:.0} ms (median of {runs})",
        py.one, py.five
    );
    println!(
        "claude-agent-sdk ClaudeSDKClient (kept alive): warm turn {:.0} ms, five turns {:.0} ms",
        py.warm, py.five_kept
    );
    println!(
        "ratio patchbay / python: one turn {:.2}x, five turns {:.2}x, warm turn {:.2}x, five turns kept alive {:.2}x",
        rust.one / py.one,
        rust.five / py.five,
        rust.warm / py.warm,
        rust.five_kept / py.five_kept
    );
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build();
    match runtime {
        Ok(runtime) => runtime.block_on(bench(peers, cli, runs)),
        Err(error) => eprintln!("no runtime: {error}"),
    }
}
