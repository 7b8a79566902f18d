//! A turn through this provider versus the Python Agent SDK (`claude-agent-sdk`), on the same
//! mock Messages server and the same CLI binary, interleaved round by round:
//! - **cold**: a new session's first turn on a new CLI (no spare, no keep-alive) vs `query()`;
//! - **spare**: a new session's first turn taken by a spare CLI (`spares: 1`) vs `query()`;
//! - **kept alive**: a resumed turn on a kept-alive CLI (`keep_alive`) vs a turn of an open
//!   `ClaudeSDKClient`.
//!
//! `cargo bench -p patchbay-claude-agent --bench latency` (needs the peers of
//! `.ci/peers/claude.sh` with `PATCHBAY_BENCH=1` for the Python SDK; `BENCH_RUNS` rounds,
//! default 15). Prints medians and ratios. Before each timed turn every spare is ready and every
//! process the bench started is idle ([`settle`]), so no measurement shares the CPU with a CLI
//! starting in the background (spares help when new sessions come further apart than a CLI's
//! start). Ready is not idle: a CLI keeps working for about a second after it answers
//! `initialize` (80-120 ms of CPU), and without the wait whichever turn came first after a spare
//! was replaced paid for it (the kept-alive turn did: 1.4-1.5x the SDK's turn, 0.5x with the two
//! warm turns swapped).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_core::{Event, Message, Provider, RequestContext, Signal, ToolSet, context::Session};
use patchbay_scripted::{Part, Response, Turn};

fn median(values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// A turn's times in milliseconds: to its `Finish` (the answer) and to the stream's end (the
/// CLI stopped, or parked when kept alive).
#[derive(Clone, Copy)]
struct Timed {
    answer: f64,
    done: f64,
}

/// One turn: its times and the session id, or `None` when it failed.
async fn turn(provider: &ClaudeAgentProvider, session: Option<String>) -> Option<(Timed, Option<String>)> {
    let context = session.map(|id| RequestContext::new().with_session(Session::Resume { id }));
    let start = Instant::now();
    let ms = |since: Instant| since.elapsed().as_secs_f64() * 1000.0;
    let stream = provider
        .create_response(
            &[Message::user("Say hello.")],
            &ToolSet::new(),
            "claude-bench",
            &Signal::new(),
            context.as_ref(),
        )
        .await;
    let mut stream = match stream {
        Ok(stream) => stream,
        Err(error) => {
            eprintln!("turn failed: {error}");
            return None;
        }
    };
    let (mut answer, mut id) = (None, None);
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Started { session_id, .. }) => id = session_id,
            Ok(Event::Finish { .. }) => answer = Some(ms(start)),
            Ok(_) => {}
            Err(error) => {
                eprintln!("turn failed: {error}");
                return None;
            }
        }
    }
    let done = ms(start);
    Some((
        Timed {
            answer: answer.unwrap_or(done),
            done,
        },
        id,
    ))
}

/// Wait (up to 30 s) until the provider's spare is ready.
async fn spare_ready(provider: &ClaudeAgentProvider) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while provider.spare_processes() < 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    provider.spare_processes() >= 1
}

/// CPU clock ticks used so far by every process descended from this one (Linux `/proc`; 0
/// elsewhere): the CLIs, the Python SDK and its CLIs.
fn descendants_cpu() -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    // (pid, parent, ticks) of every process; stat's fields after the `)` of the name: state,
    // ppid, ..., utime (12th), stime (13th).
    let mut processes = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, fields)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<u64> = fields
            .split_whitespace()
            .skip(1)
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        if let (Some(ppid), Some(utime), Some(stime)) = (fields.first(), fields.get(10), fields.get(11)) {
            processes.push((pid, *ppid, utime + stime));
        }
    }
    let mut ours = vec![std::process::id()];
    let mut ticks = 0;
    while let Some(parent) = ours.pop() {
        for &(pid, ppid, used) in &processes {
            if u64::from(parent) == ppid {
                ticks += used;
                ours.push(pid);
            }
        }
    }
    ticks
}

/// Wait (up to 5 s) until the processes this bench started are idle: at most one clock tick
/// (10 ms) of CPU among them over 200 ms.
async fn settle() {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let before = descendants_cpu();
        tokio::time::sleep(Duration::from_millis(200)).await;
        if descendants_cpu().saturating_sub(before) <= 1 || Instant::now() >= deadline {
            return;
        }
    }
}

/// The Python SDK process (`benches/sdk_query.py`), answering one command at a time.
struct Python {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Python {
    fn start(peers: &Path, cli: &Path, url: &str, home: &Path) -> Option<Self> {
        let python = peers.join("claude-venv/bin/python");
        if !python.exists() {
            println!(
                "claude-agent-sdk (Python): not installed at {} (PATCHBAY_BENCH=1 bash .ci/peers/claude.sh)",
                python.display()
            );
            return None;
        }
        let mut child = Command::new(&python)
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/benches/sdk_query.py"))
            .arg(cli)
            .arg(url)
            .arg(home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        let stdout = BufReader::new(child.stdout.take()?);
        Some(Self { child, stdin, stdout })
    }

    /// Run `command` (`cold` or `warm`): the turn's times.
    fn run(&mut self, command: &str) -> Option<Timed> {
        writeln!(self.stdin, "{command}").ok()?;
        self.stdin.flush().ok()?;
        let mut line = String::new();
        self.stdout.read_line(&mut line).ok()?;
        let mut numbers = line.split_whitespace().map(str::parse::<f64>);
        let (Some(Ok(answer)), Some(Ok(done))) = (numbers.next(), numbers.next()) else {
            return None;
        };
        Some(Timed { answer, done })
    }
}

impl Drop for Python {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Default)]
struct Samples {
    cold: Vec<Timed>,
    spare: Vec<Timed>,
    kept: Vec<Timed>,
    sdk_cold: Vec<Timed>,
    sdk_warm: Vec<Timed>,
}

fn push(into: &mut Vec<Timed>, value: Option<Timed>) {
    if let Some(value) = value {
        into.push(value);
    }
}

/// The medians of the answer and done times.
fn medians(samples: &[Timed]) -> (f64, f64) {
    let answers: Vec<f64> = samples.iter().map(|t| t.answer).collect();
    let dones: Vec<f64> = samples.iter().map(|t| t.done).collect();
    (median(&answers), median(&dones))
}

async fn bench(peers: &Path, cli: &Path, runs: usize) {
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
    let (Ok(home), Ok(sdk_home)) = (tempfile::tempdir(), tempfile::tempdir()) else {
        return eprintln!("no temp dir");
    };
    let config = ClaudeAgentConfig::new()
        .with_cli_path(cli)
        .offline(&server.url(), home.path());
    let build = |config: ClaudeAgentConfig| ClaudeAgentProvider::new(config).map_err(|e| eprintln!("{e}")).ok();
    let (Some(cold), Some(spare), Some(kept)) = (
        build(config.clone()),
        build(config.clone().with_spares(1)),
        build(config.with_keep_alive(Duration::from_secs(600))),
    ) else {
        return;
    };
    let mut python = Python::start(peers, cli, &server.url(), sdk_home.path());
    // Warm up each path once (the spare provider learns its launch; the kept-alive CLI starts).
    turn(&cold, None).await;
    turn(&spare, None).await;
    let mut session = turn(&kept, None).await.and_then(|(_, id)| id);
    if let Some(python) = python.as_mut() {
        python.run("cold");
        python.run("warm");
    }
    let mut samples = Samples::default();
    for _ in 0..runs {
        // Every measurement starts with the spare ready and everything idle.
        spare_ready(&spare).await;
        settle().await;
        push(&mut samples.cold, turn(&cold, None).await.map(|(t, _)| t));
        if let Some(python) = python.as_mut() {
            settle().await;
            push(&mut samples.sdk_cold, python.run("cold"));
        }
        if spare_ready(&spare).await {
            settle().await;
            push(&mut samples.spare, turn(&spare, None).await.map(|(t, _)| t));
        }
        spare_ready(&spare).await;
        settle().await;
        if let Some((timed, id)) = turn(&kept, session.clone()).await {
            samples.kept.push(timed);
            session = id.or(session);
        }
        if let Some(python) = python.as_mut() {
            settle().await;
            push(&mut samples.sdk_warm, python.run("warm"));
        }
    }
    report(&samples, runs);
}

fn report(s: &Samples, runs: usize) {
    println!(
        "rounds: {runs} (samples: cold {}, spare {}, kept alive {}, sdk cold {}, sdk warm {})",
        s.cold.len(),
        s.spare.len(),
        s.kept.len(),
        s.sdk_cold.len(),
        s.sdk_warm.len()
    );
    let (cold, spare, kept) = (medians(&s.cold), medians(&s.spare), medians(&s.kept));
    println!(
        "patchbay-claude-agent medians (to Finish / to the stream's end): cold {:.0} / {:.0} ms, \
         spare {:.0} / {:.0} ms, kept alive {:.0} / {:.0} ms",
        cold.0, cold.1, spare.0, spare.1, kept.0, kept.1
    );
    println!(
        "patchbay to Finish: spare / cold {:.2}x, kept alive / cold {:.2}x",
        spare.0 / cold.0,
        kept.0 / cold.0
    );
    if s.sdk_cold.is_empty() {
        return;
    }
    let (sdk_cold, sdk_warm) = (medians(&s.sdk_cold), medians(&s.sdk_warm));
    println!(
        "claude-agent-sdk medians (to ResultMessage / to the iteration's end): query() {:.0} / {:.0} ms, \
         ClaudeSDKClient turn {:.0} / {:.0} ms",
        sdk_cold.0, sdk_cold.1, sdk_warm.0, sdk_warm.1
    );
    for (what, ours, theirs) in [("to the answer", 0, 0), ("to the end", 1, 1)] {
        let pick = |pair: (f64, f64), i: usize| if i == 0 { pair.0 } else { pair.1 };
        println!(
            "ratio patchbay / python, {what}: cold {:.2}x, spare {:.2}x (target <= 0.3x), kept alive {:.2}x",
            pick(cold, ours) / pick(sdk_cold, theirs),
            pick(spare, ours) / pick(sdk_cold, theirs),
            pick(kept, ours) / pick(sdk_warm, theirs)
        );
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
        .unwrap_or(15);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build();
    match runtime {
        Ok(runtime) => runtime.block_on(bench(&peers, &cli, runs)),
        Err(error) => eprintln!("no runtime: {error}"),
    }
}
