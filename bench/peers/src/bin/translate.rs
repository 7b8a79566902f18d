//! Stream translation, side by side: one loopback server serves the same 50,000-delta streams
//! (an OpenAI chat-completions body, an Anthropic Messages body, a Gemini
//! `streamGenerateContent?alt=sse` body and an OpenAI Responses body; 64 KiB writes, then one
//! SSE frame per write) to the typed serde baseline, patchbay's four providers, async-openai
//! (the two OpenAI wires), genai and rig-core. Every read must give back the exact text (checked on every run).
//! Rounds are interleaved (each round runs every reader once, starting one further along), and
//! the table shows min and median of each reader and its ratio to the baseline of the same wire,
//! by wall clock and by the CPU time of the client thread (every reader runs on one
//! current-thread runtime; the CPU time of the process's other threads is shown beside, so work
//! handed off the client thread would show).
//! Then the same comparison without HTTP: the baseline's parse against patchbay's translators
//! on the bytes in memory.
//!
//! `cargo run --release --bin translate [-- --rounds N --deltas N]` (defaults 15, 50000).
//! `--profile openai|anthropic|gemini|openai-responses` runs only that translator in memory,
//! `--rounds` times, for a sampling profiler (`perf record -g`). `--quick` measures only the
//! baseline and patchbay. `--wires gemini` (or `openai,anthropic`, `openai-responses`...)
//! measures only those wires.

use std::hint::black_box;
use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_core::kit::Driver;
use patchbay_core::{Event, ProviderError, Signal};
use patchbay_peers_bench::consumers::{self, Failure, Patchbay, Peers, Wire};
use patchbay_peers_bench::server::{self, Chunking, Routes};
use patchbay_peers_bench::stats::{Samples, process_cpu, ratio, show, thread_cpu};
use patchbay_peers_bench::{machine, wire};

/// A reader of one wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    Baseline,
    Patchbay,
    AsyncOpenai,
    Genai,
    Rig,
}

impl Reader {
    const ALL: [Reader; 5] = [
        Reader::Baseline,
        Reader::Patchbay,
        Reader::AsyncOpenai,
        Reader::Genai,
        Reader::Rig,
    ];

    fn name(self, wire: Wire) -> &'static str {
        match (self, wire) {
            (Reader::Baseline, _) => "baseline (reqwest + serde)",
            (Reader::Patchbay, Wire::OpenAi) => "patchbay-openrouter",
            (Reader::Patchbay, Wire::Anthropic) => "patchbay-anthropic",
            (Reader::Patchbay, Wire::Gemini) => "patchbay-gemini",
            (Reader::Patchbay, Wire::Responses) => "patchbay-openai",
            (Reader::AsyncOpenai, _) => consumers::PEERS[0],
            (Reader::Genai, _) => consumers::PEERS[1],
            (Reader::Rig, _) => consumers::PEERS[2],
        }
    }

    /// async-openai speaks only the two OpenAI wires (chat completions and Responses).
    fn reads(self, wire: Wire) -> bool {
        self != Reader::AsyncOpenai || matches!(wire, Wire::OpenAi | Wire::Responses)
    }
}

struct Readers {
    base: String,
    http: reqwest::Client,
    patchbay: Patchbay,
    peers: Peers,
}

impl Readers {
    async fn read(&self, reader: Reader, wire: Wire) -> Result<String, Failure> {
        let none = None::<std::future::Ready<()>>;
        match reader {
            Reader::Baseline => consumers::baseline(&self.http, &self.base, wire, none).await,
            Reader::Patchbay => self.patchbay.read(wire, none).await,
            Reader::AsyncOpenai => self.peers.async_openai(wire).await,
            Reader::Genai => self.peers.genai(wire).await,
            Reader::Rig => self.peers.rig(wire).await,
        }
    }
}

struct Options {
    rounds: usize,
    deltas: usize,
    /// `--profile openai|anthropic|gemini|openai-responses`: only run that translator in memory, `rounds` times
    /// (for `perf record`).
    profile: Option<Wire>,
    /// `--quick`: only the baseline and patchbay (no peers), for a fast run while working.
    quick: bool,
    /// `--wires a,b`: only these wires (default all).
    wires: Vec<Wire>,
}

fn options() -> Options {
    let mut options = Options {
        rounds: 15,
        deltas: 50_000,
        profile: None,
        quick: false,
        wires: Wire::ALL.to_vec(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<String> = args
        .into_iter()
        .filter(|arg| {
            let quick = arg == "--quick";
            options.quick |= quick;
            !quick
        })
        .collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).and_then(|v| v.parse().ok());
        match (pair[0].as_str(), pair.get(1).map(String::as_str)) {
            ("--profile", Some(name)) if Wire::parse(name).is_some() => {
                options.profile = Wire::parse(name);
                continue;
            }
            ("--wires", Some(names)) => {
                options.wires = names
                    .split(',')
                    .map(|name| Wire::parse(name).unwrap_or_else(|| panic!("--wires: no wire {name}")))
                    .collect();
                continue;
            }
            _ => {}
        }
        match (pair[0].as_str(), value) {
            ("--rounds", Some(n)) => options.rounds = n,
            ("--deltas", Some(n)) => options.deltas = n,
            _ => panic!(
                "usage: translate [--rounds N] [--deltas N] [--profile openai|anthropic|gemini|openai-responses] [--wires openai,anthropic,gemini,openai-responses] [--quick]"
            ),
        }
    }
    options
}

type Key = (Reader, Wire);

/// One run of one reader: wall time, CPU time of the client thread (the current-thread
/// runtime every reader runs on), CPU time of the process's other threads meanwhile (the
/// server thread, and any thread a reader might hand work to).
#[derive(Default)]
struct Runs {
    wall: Samples,
    cpu: Samples,
    elsewhere: Samples,
}

struct Sample {
    wall: Duration,
    cpu: Duration,
    elsewhere: Duration,
}

impl Runs {
    fn push(&mut self, sample: Sample) {
        self.wall.push(sample.wall);
        self.cpu.push(sample.cpu);
        self.elsewhere.push(sample.elsewhere);
    }
}

/// Every (reader, wire) pair of `wires`, the baseline first (`quick`: the baseline and patchbay
/// only).
fn pairs(wires: &[Wire], quick: bool) -> Vec<Key> {
    wires
        .iter()
        .copied()
        .flat_map(|wire| {
            Reader::ALL
                .into_iter()
                .filter(move |r| r.reads(wire) && (!quick || matches!(r, Reader::Baseline | Reader::Patchbay)))
                .map(move |r| (r, wire))
        })
        .collect()
}

/// Interleaved rounds over every pair on one server; the text checked on every run.
fn measure(chunking: Chunking, options: &Options, expected: &str) -> Vec<(Key, Runs)> {
    let routes = Routes::new(options.deltas, chunking);
    let base = format!("http://{}", server::spawn_thread(routes));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let readers = Readers {
        http: consumers::http_client(),
        patchbay: Patchbay::new(&base),
        peers: Peers::new(&base),
        base,
    };
    let pairs = pairs(&options.wires, options.quick);
    let mut samples: Vec<(Key, Runs)> = pairs.iter().map(|&key| (key, Runs::default())).collect();
    let run = |(reader, wire): Key| -> Sample {
        let (started, thread, process) = (Instant::now(), thread_cpu(), process_cpu());
        let text = runtime.block_on(readers.read(reader, wire));
        let thread = thread_cpu() - thread;
        let sample = Sample {
            wall: started.elapsed(),
            cpu: thread,
            elsewhere: (process_cpu() - process).saturating_sub(thread),
        };
        match text {
            Ok(text) if text == expected => sample,
            Ok(text) => panic!(
                "{} on the {}: {} bytes of text, {} expected, or different",
                reader.name(wire),
                wire.name(),
                text.len(),
                expected.len()
            ),
            Err(error) => panic!("{} on the {}: {error}", reader.name(wire), wire.name()),
        }
    };
    // One warm-up run each (connections, allocator), not counted.
    for &key in &pairs {
        run(key);
    }
    for round in 0..options.rounds {
        for i in 0..pairs.len() {
            let slot = (i + round) % pairs.len();
            let sample = run(pairs[slot]);
            samples[slot].1.push(sample);
        }
        eprint!("\r{}: round {}/{}", chunking.name(), round + 1, options.rounds);
    }
    eprintln!();
    samples
}

fn table(chunking: Chunking, wires: &[Wire], samples: &[(Key, Runs)]) {
    println!(
        "\n#### {} ({} interleaved rounds)\n",
        chunking.name(),
        samples[0].1.wall.len()
    );
    println!(
        "| reader | wire | min | min / baseline | median | median / baseline | client CPU min | CPU min / baseline | other threads' CPU (median) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for &wire in wires {
        let base = &samples
            .iter()
            .find(|((r, w), _)| *r == Reader::Baseline && *w == wire)
            .expect("a baseline")
            .1;
        for ((reader, _), s) in samples.iter().filter(|((_, w), _)| *w == wire) {
            println!(
                "| {} | {} | {} | {:.2}x | {} | {:.2}x | {} | {:.2}x | {} |",
                reader.name(wire),
                wire.name(),
                show(s.wall.min()),
                ratio(s.wall.min(), base.wall.min()),
                show(s.wall.median()),
                ratio(s.wall.median(), base.wall.median()),
                show(s.cpu.min()),
                ratio(s.cpu.min(), base.cpu.min()),
                show(s.elsewhere.median()),
            );
        }
    }
}

/// The targets: patchbay within 1.2x of the baseline (wall-clock min) and faster than
/// every peer (wall-clock min and median), per wire; the client-CPU ratios beside them, since
/// they are what load on a shared machine disturbs least. Returns whether all held.
fn verdict(chunking: Chunking, wires: &[Wire], samples: &[(Key, Runs)]) -> bool {
    let get = |reader: Reader, wire: Wire| {
        samples
            .iter()
            .find(|((r, w), _)| *r == reader && *w == wire)
            .map(|(_, s)| s)
    };
    let mark = |ok: bool| if ok { "PASS" } else { "FAIL" };
    let mut all = true;
    for &wire in wires {
        let (Some(base), Some(ours)) = (get(Reader::Baseline, wire), get(Reader::Patchbay, wire)) else {
            continue;
        };
        let within = ratio(ours.wall.min(), base.wall.min());
        all &= within <= 1.2;
        println!(
            "- {} {}: {} within 1.2x of the baseline: {within:.2}x wall min (client CPU min {:.2}x)",
            chunking.name(),
            wire.name(),
            mark(within <= 1.2),
            ratio(ours.cpu.min(), base.cpu.min()),
        );
        for peer in [Reader::AsyncOpenai, Reader::Genai, Reader::Rig] {
            if let Some(theirs) = get(peer, wire) {
                let ahead = ours.wall.min() < theirs.wall.min() && ours.wall.median() < theirs.wall.median();
                all &= ahead;
                println!(
                    "- {} {}: {} ahead of {}: {:.2}x of its wall min, {:.2}x of its median (client CPU min {:.2}x)",
                    chunking.name(),
                    wire.name(),
                    mark(ahead),
                    peer.name(wire),
                    ratio(ours.wall.min(), theirs.wall.min()),
                    ratio(ours.wall.median(), theirs.wall.median()),
                    ratio(ours.cpu.min(), theirs.cpu.min()),
                );
            }
        }
    }
    all
}

/// The baseline's parse alone over bytes in memory, 64 KiB at a time.
fn parse_in_memory(wire: Wire, chunks: &[&[u8]]) -> String {
    let mut buf: Vec<u8> = Vec::new();
    let mut text = String::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &buf[start..]) {
            let line = &buf[start..start + offset];
            start += offset + 1;
            if let Some(data) = line.strip_prefix(b"data: ") {
                consumers::baseline_line(wire, data, &mut text).expect("parses");
            }
        }
        buf.drain(..start);
    }
    text
}

/// patchbay's wire alone, driven by core's `Driver` (framing + translation into events, the
/// path `create_response` runs) over the same chunks in memory, on a current-thread runtime.
fn translate_in_memory(wire: Wire, chunks: &[&'static [u8]]) -> String {
    // The driver's stream is `'static`: the list of chunks is copied, not borrowed.
    #[allow(clippy::unnecessary_to_owned)]
    let body = futures::stream::iter(chunks.to_vec().into_iter().map(Ok::<_, ProviderError>));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        // The driver's timers need the runtime.
        let signal = Signal::new();
        let mut events = match wire {
            Wire::OpenAi => {
                Driver::new(body, patchbay_openrouter::translate::Translator::default(), &signal).into_stream()
            }
            Wire::Anthropic => Driver::new(body, patchbay_anthropic::Translator::new(), &signal).into_stream(),
            Wire::Gemini => {
                Driver::new(body, patchbay_gemini::Translator::new(consumers::GEMINI_MODEL), &signal).into_stream()
            }
            Wire::Responses => Driver::new(body, patchbay_openai::Translator::new("bench"), &signal).into_stream(),
        };
        let mut text = String::new();
        while let Some(event) = events.next().await {
            if let Event::TextDelta { text: delta, .. } = event.expect("translates") {
                text.push_str(&delta);
            }
        }
        text
    })
}

/// The body of `wire`, leaked (once per run) so the driver can take `'static` chunks of it.
fn leaked_body(wire: Wire, deltas: usize) -> &'static [u8] {
    let body = match wire {
        Wire::OpenAi => wire::openai(deltas),
        Wire::Anthropic => wire::anthropic(deltas),
        Wire::Gemini => wire::gemini(deltas),
        Wire::Responses => wire::responses(deltas),
    };
    Box::leak(body.into_bytes().into_boxed_slice())
}

fn in_memory(options: &Options, expected: &str) {
    println!(
        "\n#### In memory, no HTTP (64 KiB chunks, {} interleaved rounds)\n",
        options.rounds
    );
    println!(
        "| wire | baseline parse min | patchbay translator min | ratio (min) | ratio (median) | ratio (CPU min) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for &wire in &options.wires {
        let chunks: Vec<&'static [u8]> = leaked_body(wire, options.deltas).chunks(64 * 1024).collect();
        assert_eq!(
            parse_in_memory(wire, &chunks),
            expected,
            "baseline parse, {}",
            wire.name()
        );
        assert_eq!(
            translate_in_memory(wire, &chunks),
            expected,
            "translator, {}",
            wire.name()
        );
        let (mut base, mut ours) = (Samples::default(), Samples::default());
        let (mut base_cpu, mut ours_cpu) = (Samples::default(), Samples::default());
        for _ in 0..options.rounds {
            let (started, cpu) = (Instant::now(), thread_cpu());
            black_box(parse_in_memory(wire, &chunks));
            base.push(started.elapsed());
            base_cpu.push(thread_cpu() - cpu);
            let (started, cpu) = (Instant::now(), thread_cpu());
            black_box(translate_in_memory(wire, &chunks));
            ours.push(started.elapsed());
            ours_cpu.push(thread_cpu() - cpu);
        }
        println!(
            "| {} | {} | {} | {:.2}x | {:.2}x | {:.2}x |",
            wire.name(),
            show(base.min()),
            show(ours.min()),
            ratio(ours.min(), base.min()),
            ratio(ours.median(), base.median()),
            ratio(ours_cpu.min(), base_cpu.min()),
        );
    }
}

/// Only patchbay's translator for `wire`, in memory, `rounds` times: a steady loop to sample.
fn profile(wire: Wire, options: &Options, expected: &str) {
    let chunks: Vec<&'static [u8]> = leaked_body(wire, options.deltas).chunks(64 * 1024).collect();
    for _ in 0..options.rounds {
        assert_eq!(translate_in_memory(wire, &chunks), expected);
    }
}

fn main() {
    consumers::install_crypto();
    let options = options();
    let expected = wire::text(options.deltas);
    if let Some(wire) = options.profile {
        profile(wire, &options, &expected);
        return;
    }
    println!(
        "### Stream translation: {} text deltas per stream, {} ({})\n",
        options.deltas,
        machine(),
        std::env::consts::ARCH
    );
    println!("Times are one whole stream: request, every byte, every text delta joined and checked.");
    let mut passed = true;
    let mut verdicts = Vec::new();
    for chunking in [Chunking::Kib64, Chunking::PerFrame] {
        let samples = measure(chunking, &options, &expected);
        table(chunking, &options.wires, &samples);
        verdicts.push((chunking, samples));
    }
    in_memory(&options, &expected);
    println!("\n#### Targets\n");
    for (chunking, samples) in &verdicts {
        passed &= verdict(*chunking, &options.wires, samples);
    }
    println!("\nAll targets met: {}", if passed { "yes" } else { "no" });
}
