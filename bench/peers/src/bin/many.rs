//! Many streams: 10,000 concurrent streams in one client process against a loopback server in
//! another process, for the typed serde baseline and patchbay's four providers (OpenAI,
//! Anthropic, Gemini and OpenAI Responses wires). Every stream
//! stops after its first text delta until all 10,000 have one (so all are open at once, each
//! with its connection, buffers and reader state), then reads to the end and must give back the
//! exact text. Measured per reader, each in a fresh client process: the peak resident memory
//! (`VmHWM` after the run, its high-water mark reset just before, minus `VmRSS` before the
//! streams start) divided by the number of streams, and the failures (none allowed).
//!
//! The server is this binary with `--serve` (one thread; one SSE frame per write), each client
//! this binary with `--client NAME`; the default mode runs them all, interleaving the readers
//! over rounds, and prints a Markdown table.
//!
//! `cargo run --release --bin many [-- --streams N --deltas N --rounds N --wires a,b]`
//! (defaults 10000, 200, 3, every wire: `openai,anthropic,gemini,openai-responses`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use patchbay_peers_bench::consumers::{self, Patchbay, Wire};
use patchbay_peers_bench::server::{self, Chunking, Routes};
use patchbay_peers_bench::{machine, status_kib, wire};

const READERS: [(&str, Wire); 8] = [
    ("baseline-openai", Wire::OpenAi),
    ("patchbay-openrouter", Wire::OpenAi),
    ("baseline-anthropic", Wire::Anthropic),
    ("patchbay-anthropic", Wire::Anthropic),
    ("baseline-gemini", Wire::Gemini),
    ("patchbay-gemini", Wire::Gemini),
    ("baseline-openai-responses", Wire::Responses),
    ("patchbay-openai", Wire::Responses),
];

#[derive(Debug, Clone)]
struct Options {
    streams: usize,
    deltas: usize,
    rounds: usize,
    base: String,
    wires: Vec<Wire>,
}

fn options(args: &[String]) -> Options {
    let mut options = Options {
        streams: 10_000,
        deltas: 200,
        rounds: 3,
        base: String::new(),
        wires: Wire::ALL.to_vec(),
    };
    for pair in args.chunks(2) {
        let value = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--streams" => options.streams = value.parse().expect("--streams N"),
            "--deltas" => options.deltas = value.parse().expect("--deltas N"),
            "--rounds" => options.rounds = value.parse().expect("--rounds N"),
            "--base" => options.base = value,
            "--wires" => {
                options.wires = value
                    .split(',')
                    .map(|name| Wire::parse(name).unwrap_or_else(|| panic!("--wires: no wire {name}")))
                    .collect()
            }
            other => panic!("unknown option {other}"),
        }
    }
    options
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--serve") => serve(options(&args[1..])),
        Some("--client") => client(&args[1], options(&args[2..])),
        _ => orchestrate(options(&args)),
    }
}

/// Raise the soft descriptor limit to the hard one; returns the limit in force.
fn raise_nofile() -> u64 {
    rlimit::increase_nofile_limit(u64::MAX).expect("descriptor limit")
}

// ---------------------------------------------------------------------------------------------
// The server process

fn serve(options: Options) {
    raise_nofile();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("server runtime");
    runtime.block_on(async move {
        let listener = server::listen(([127, 0, 0, 1], 0).into()).expect("binds loopback");
        println!("listening http://{}", listener.local_addr().expect("address"));
        server::serve(listener, Routes::new(options.deltas, Chunking::PerFrame)).await;
    });
}

// ---------------------------------------------------------------------------------------------
// One client process: one reader, N streams

struct Outcome {
    failures: usize,
    held: usize,
    rss_before_kib: u64,
    rss_held_kib: u64,
    hwm_kib: u64,
    seconds: f64,
    nofile: u64,
    first_error: Option<String>,
}

/// Reset the high-water mark of resident memory to the current resident size.
fn reset_hwm() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn client(name: &str, options: Options) {
    let nofile = raise_nofile();
    let wire = READERS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, w)| w)
        .expect("a known reader");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("client runtime");
    let outcome = runtime.block_on(run_streams(name, wire, &options, nofile));
    println!(
        "result {} {} {} {} {} {} {:.3} {}",
        outcome.failures,
        outcome.held,
        outcome.rss_before_kib,
        outcome.rss_held_kib,
        outcome.hwm_kib,
        outcome.nofile,
        outcome.seconds,
        outcome.first_error.unwrap_or_default().replace('\n', " "),
    );
}

#[derive(Clone)]
enum Reader {
    Baseline(reqwest::Client),
    Patchbay(Arc<Patchbay>),
}

impl Reader {
    async fn read(&self, base: &str, wire: Wire, gate: impl Future<Output = ()>) -> Result<String, consumers::Failure> {
        match self {
            Reader::Baseline(http) => consumers::baseline(http, base, wire, Some(gate)).await,
            Reader::Patchbay(patchbay) => patchbay.read(wire, Some(gate)).await,
        }
    }
}

async fn run_streams(name: &str, wire: Wire, options: &Options, nofile: u64) -> Outcome {
    consumers::install_crypto();
    let reader = if name.starts_with("baseline") {
        Reader::Baseline(consumers::http_client())
    } else {
        Reader::Patchbay(Arc::new(Patchbay::new(&options.base)))
    };
    let expected: Arc<str> = wire::text(options.deltas).into();
    // One stream first, so what is set up once per process is in the memory before.
    let warm = reader.read(&options.base, wire, std::future::ready(())).await;
    assert_eq!(
        warm.expect("a first stream").as_str(),
        &*expected,
        "{name}: warm-up text"
    );
    let rss_before_kib = status_kib("VmRSS").unwrap_or(0);
    assert!(reset_hwm(), "cannot reset VmHWM through /proc/self/clear_refs");

    let arrived = Arc::new(AtomicUsize::new(0));
    let never_arrived = Arc::new(AtomicUsize::new(0));
    let (release, released) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(options.streams);
    for _ in 0..options.streams {
        let (reader, base, expected) = (reader.clone(), options.base.clone(), expected.clone());
        let (arrived, never_arrived, mut released) = (arrived.clone(), never_arrived.clone(), released.clone());
        tasks.push(tokio::spawn(async move {
            let gated = Arc::new(AtomicBool::new(false));
            let flag = gated.clone();
            let gate = async move {
                flag.store(true, Ordering::SeqCst);
                arrived.fetch_add(1, Ordering::SeqCst);
                let _ = released.wait_for(|open| *open).await;
            };
            let result = reader.read(&base, wire, gate).await;
            if !gated.load(Ordering::SeqCst) {
                never_arrived.fetch_add(1, Ordering::SeqCst);
            }
            match result {
                Ok(text) if *text == *expected => None,
                Ok(text) => Some(format!("wrong text: {} bytes, {} expected", text.len(), expected.len())),
                Err(error) => Some(error.to_string()),
            }
        }));
    }
    // Hold until every stream has its first delta (or ended without one), at most two minutes.
    let deadline = Instant::now() + Duration::from_secs(120);
    while arrived.load(Ordering::SeqCst) + never_arrived.load(Ordering::SeqCst) < options.streams
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let held = arrived.load(Ordering::SeqCst);
    let rss_held_kib = status_kib("VmRSS").unwrap_or(0);
    let _ = release.send(true);
    let mut failures = 0;
    let mut first_error = None;
    for task in tasks {
        let error = match task.await {
            Ok(error) => error,
            Err(join) => Some(join.to_string()),
        };
        if let Some(error) = error {
            failures += 1;
            first_error.get_or_insert(error);
        }
    }
    Outcome {
        failures,
        held,
        rss_before_kib,
        rss_held_kib,
        hwm_kib: status_kib("VmHWM").unwrap_or(0),
        seconds: started.elapsed().as_secs_f64(),
        nofile,
        first_error,
    }
}

// ---------------------------------------------------------------------------------------------
// The orchestrator

/// A child process killed (by its own id) when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(options: &Options) -> (Server, String) {
    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .args(["--serve", "--deltas", &options.deltas.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("server process");
    let stdout = child.stdout.take().expect("server stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("server says where it listens");
    let base = line
        .trim()
        .strip_prefix("listening ")
        .expect("listening line")
        .to_string();
    (Server(child), base)
}

struct Run {
    failures: usize,
    held: usize,
    per_stream_kib: f64,
    held_per_stream_kib: f64,
    seconds: f64,
    nofile: u64,
    first_error: String,
}

fn run_client(name: &str, options: &Options) -> Run {
    let output = Command::new(std::env::current_exe().expect("own path"))
        .args([
            "--client",
            name,
            "--streams",
            &options.streams.to_string(),
            "--deltas",
            &options.deltas.to_string(),
            "--base",
            &options.base,
        ])
        .stderr(Stdio::inherit())
        .output()
        .expect("client process");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix("result "))
        .unwrap_or_else(|| panic!("{name}: no result (exit {:?})", output.status));
    let mut fields = line.splitn(8, ' ');
    let mut next = || fields.next().unwrap_or_default().to_string();
    let failures: usize = next().parse().expect("failures");
    let held: usize = next().parse().expect("held");
    let before: f64 = next().parse().expect("rss before");
    let at_hold: f64 = next().parse().expect("rss held");
    let hwm: f64 = next().parse().expect("hwm");
    let nofile: u64 = next().parse().expect("nofile");
    let seconds: f64 = next().parse().expect("seconds");
    let first_error = next();
    let streams = options.streams as f64;
    Run {
        failures,
        held,
        per_stream_kib: (hwm - before) / streams,
        held_per_stream_kib: (at_hold - before) / streams,
        seconds,
        nofile,
        first_error,
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[(values.len() - 1) / 2]
}

fn orchestrate(mut options: Options) {
    let (_server, base) = start_server(&options);
    options.base = base;
    let readers: Vec<(&str, Wire)> = READERS
        .iter()
        .copied()
        .filter(|(_, wire)| options.wires.contains(wire))
        .collect();
    let mut runs: Vec<Vec<Run>> = readers.iter().map(|_| Vec::new()).collect();
    for round in 0..options.rounds {
        for i in 0..readers.len() {
            let slot = (i + round) % readers.len();
            let run = run_client(readers[slot].0, &options);
            eprintln!(
                "round {}: {}: {:.1} KiB/stream peak, {} failures, {} held, {:.1} s",
                round + 1,
                readers[slot].0,
                run.per_stream_kib,
                run.failures,
                run.held,
                run.seconds
            );
            runs[slot].push(run);
        }
    }
    println!(
        "### Many streams: {} concurrent streams of {} deltas in one process, {}\n",
        options.streams,
        options.deltas,
        machine()
    );
    println!(
        "Descriptor limit in the client process: {} (soft raised to the hard limit). Server: a separate process, one SSE frame per write.\n",
        runs[0].first().map(|r| r.nofile).unwrap_or(0)
    );
    println!(
        "| reader | wire | peak per stream (median of {}) | / baseline | at hold per stream | / baseline | held open at once | failures | wall time (median) |",
        options.rounds
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut all_ok = true;
    let mut base_peak = 0.0;
    let mut base_held = 0.0;
    for (slot, (name, wire)) in readers.iter().enumerate() {
        let runs = &runs[slot];
        let peak = median(&mut runs.iter().map(|r| r.per_stream_kib).collect::<Vec<_>>());
        let at_hold = median(&mut runs.iter().map(|r| r.held_per_stream_kib).collect::<Vec<_>>());
        let seconds = median(&mut runs.iter().map(|r| r.seconds).collect::<Vec<_>>());
        let failures: usize = runs.iter().map(|r| r.failures).sum();
        let held = runs.iter().map(|r| r.held).min().unwrap_or(0);
        if name.starts_with("baseline") {
            (base_peak, base_held) = (peak, at_hold);
        }
        all_ok &= failures == 0 && held == options.streams;
        println!(
            "| {name} | {} | {peak:.1} KiB | {:.2}x | {at_hold:.1} KiB | {:.2}x | {held} | {failures} | {seconds:.2} s |",
            wire.name(),
            peak / base_peak,
            at_hold / base_held,
        );
        if let Some(run) = runs.iter().find(|r| !r.first_error.is_empty()) {
            println!("\n{name}: first error: {}\n", run.first_error);
        }
    }
    println!(
        "\nEvery stream of every run held open at once and read to the exact text, no failure: {}",
        if all_ok { "yes" } else { "no" }
    );
}
