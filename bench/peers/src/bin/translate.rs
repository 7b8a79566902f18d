//! Stream translation, side by side: one loopback server serves the same 50,000-delta streams
//! (an OpenAI chat-completions body and an Anthropic Messages body; 64 KiB writes, then one
//! SSE frame per write) to the typed serde baseline, patchbay's two providers, async-openai,
//! genai and rig-core. Every read must give back the exact text (checked on every run).
//! Rounds are interleaved (each round runs every reader once, starting one further along), and
//! the table shows min and median of each reader and its ratio to the baseline of the same wire.
//! Then the same comparison without HTTP: the baseline's parse against patchbay's translators
//! on the bytes in memory.
//!
//! `cargo run --release --bin translate [-- --rounds N --deltas N]` (defaults 15, 50000).
//! `--profile openai|anthropic` runs only that translator in memory, `--rounds` times, for a
//! sampling profiler (`perf record -g`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use patchbay_core::Event;
use patchbay_peers_bench::consumers::{self, Failure, Patchbay, Peers, Wire};
use patchbay_peers_bench::server::{self, Chunking, Routes};
use patchbay_peers_bench::stats::{Samples, ratio, show};
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
            (Reader::AsyncOpenai, _) => consumers::PEERS[0],
            (Reader::Genai, _) => consumers::PEERS[1],
            (Reader::Rig, _) => consumers::PEERS[2],
        }
    }

    /// async-openai speaks only the OpenAI wire.
    fn reads(self, wire: Wire) -> bool {
        !(self == Reader::AsyncOpenai && wire == Wire::Anthropic)
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
            Reader::AsyncOpenai => self.peers.async_openai().await,
            Reader::Genai => self.peers.genai(wire).await,
            Reader::Rig => self.peers.rig(wire).await,
        }
    }
}

struct Options {
    rounds: usize,
    deltas: usize,
    /// `--profile openai|anthropic`: only run that translator in memory, `rounds` times (for
    /// `perf record`).
    profile: Option<Wire>,
}

fn options() -> Options {
    let mut options = Options {
        rounds: 15,
        deltas: 50_000,
        profile: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).and_then(|v| v.parse().ok());
        match (pair[0].as_str(), pair.get(1).map(String::as_str)) {
            ("--profile", Some("openai")) => {
                options.profile = Some(Wire::OpenAi);
                continue;
            }
            ("--profile", Some("anthropic")) => {
                options.profile = Some(Wire::Anthropic);
                continue;
            }
            _ => {}
        }
        match (pair[0].as_str(), value) {
            ("--rounds", Some(n)) => options.rounds = n,
            ("--deltas", Some(n)) => options.deltas = n,
            _ => panic!("usage: translate [--rounds N] [--deltas N] [--profile openai|anthropic]"),
        }
    }
    options
}

type Key = (Reader, Wire);

/// Every (reader, wire) pair, the baseline first.
fn pairs() -> Vec<Key> {
    [Wire::OpenAi, Wire::Anthropic]
        .into_iter()
        .flat_map(|wire| {
            Reader::ALL
                .into_iter()
                .filter(move |r| r.reads(wire))
                .map(move |r| (r, wire))
        })
        .collect()
}

/// Interleaved rounds over every pair on one server; the text checked on every run.
fn measure(chunking: Chunking, options: &Options, expected: &str) -> Vec<(Key, Samples)> {
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
    let pairs = pairs();
    let mut samples: Vec<(Key, Samples)> = pairs.iter().map(|&key| (key, Samples::default())).collect();
    let run = |(reader, wire): Key| -> Duration {
        let started = Instant::now();
        let text = runtime.block_on(readers.read(reader, wire));
        let elapsed = started.elapsed();
        match text {
            Ok(text) if text == expected => elapsed,
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
            let elapsed = run(pairs[slot]);
            samples[slot].1.push(elapsed);
        }
        eprint!("\r{}: round {}/{}", chunking.name(), round + 1, options.rounds);
    }
    eprintln!();
    samples
}

fn table(chunking: Chunking, samples: &[(Key, Samples)]) {
    println!(
        "\n#### {} ({} interleaved rounds)\n",
        chunking.name(),
        samples[0].1.len()
    );
    println!("| reader | wire | min | min / baseline | median | median / baseline |");
    println!("|---|---|---:|---:|---:|---:|");
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let base = &samples
            .iter()
            .find(|((r, w), _)| *r == Reader::Baseline && *w == wire)
            .expect("a baseline")
            .1;
        for ((reader, _), s) in samples.iter().filter(|((_, w), _)| *w == wire) {
            println!(
                "| {} | {} | {} | {:.2}x | {} | {:.2}x |",
                reader.name(wire),
                wire.name(),
                show(s.min()),
                ratio(s.min(), base.min()),
                show(s.median()),
                ratio(s.median(), base.median()),
            );
        }
    }
}

/// The targets: patchbay within 1.2x of the baseline (min) and faster than every peer
/// (min and median), per wire. Returns whether all held.
fn verdict(chunking: Chunking, samples: &[(Key, Samples)]) -> bool {
    let get = |reader: Reader, wire: Wire| {
        samples
            .iter()
            .find(|((r, w), _)| *r == reader && *w == wire)
            .map(|(_, s)| s)
    };
    let mut all = true;
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let (Some(base), Some(ours)) = (get(Reader::Baseline, wire), get(Reader::Patchbay, wire)) else {
            continue;
        };
        let within = ratio(ours.min(), base.min());
        let ok = within <= 1.2;
        all &= ok;
        println!(
            "- {} {}: {} within 1.2x of the baseline (min): {within:.2}x",
            chunking.name(),
            wire.name(),
            if ok { "PASS" } else { "FAIL" }
        );
        for peer in [Reader::AsyncOpenai, Reader::Genai, Reader::Rig] {
            if let Some(theirs) = get(peer, wire) {
                let ahead = ours.min() < theirs.min() && ours.median() < theirs.median();
                all &= ahead;
                println!(
                    "- {} {}: {} ahead of {} (min {:.2}x, median {:.2}x of the peer's time)",
                    chunking.name(),
                    wire.name(),
                    if ahead { "PASS" } else { "FAIL" },
                    peer.name(wire),
                    ratio(ours.min(), theirs.min()),
                    ratio(ours.median(), theirs.median()),
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

/// patchbay's translator alone (framing + translation into events) over the same chunks.
fn translate_in_memory(wire: Wire, chunks: &[&[u8]]) -> String {
    let mut text = String::new();
    let mut take = |event: Event| {
        if let Event::TextDelta { text: delta, .. } = event {
            text.push_str(&delta);
        }
    };
    match wire {
        Wire::OpenAi => {
            let mut translator = patchbay_openrouter::translate::Translator::default();
            let mut out: Vec<Event> = Vec::new();
            for chunk in chunks {
                translator.feed(chunk, &mut out).expect("translates");
                out.drain(..).for_each(&mut take);
            }
            translator.finish(&mut out).expect("finishes");
            out.drain(..).for_each(&mut take);
        }
        Wire::Anthropic => {
            let mut translator = patchbay_anthropic::StreamTranslator::default();
            for chunk in chunks {
                translator.feed(chunk).expect("feeds");
                while let Some(event) = translator.pull().expect("translates") {
                    take(event);
                }
            }
            translator.finish().expect("finishes");
            while let Some(event) = translator.pull().expect("translates") {
                take(event);
            }
        }
    }
    text
}

fn in_memory(options: &Options, expected: &str) {
    println!(
        "\n#### In memory, no HTTP (64 KiB chunks, {} interleaved rounds)\n",
        options.rounds
    );
    println!("| wire | baseline parse min | patchbay translator min | ratio (min) | ratio (median) |");
    println!("|---|---:|---:|---:|---:|");
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let body = match wire {
            Wire::OpenAi => wire::openai(options.deltas),
            Wire::Anthropic => wire::anthropic(options.deltas),
        };
        let chunks: Vec<&[u8]> = body.as_bytes().chunks(64 * 1024).collect();
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
        for _ in 0..options.rounds {
            let started = Instant::now();
            black_box(parse_in_memory(wire, &chunks));
            base.push(started.elapsed());
            let started = Instant::now();
            black_box(translate_in_memory(wire, &chunks));
            ours.push(started.elapsed());
        }
        println!(
            "| {} | {} | {} | {:.2}x | {:.2}x |",
            wire.name(),
            show(base.min()),
            show(ours.min()),
            ratio(ours.min(), base.min()),
            ratio(ours.median(), base.median()),
        );
    }
}

/// Only patchbay's translator for `wire`, in memory, `rounds` times: a steady loop to sample.
fn profile(wire: Wire, options: &Options, expected: &str) {
    let body = match wire {
        Wire::OpenAi => wire::openai(options.deltas),
        Wire::Anthropic => wire::anthropic(options.deltas),
    };
    let chunks: Vec<&[u8]> = body.as_bytes().chunks(64 * 1024).collect();
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
        table(chunking, &samples);
        verdicts.push((chunking, samples));
    }
    in_memory(&options, &expected);
    println!("\n#### Targets\n");
    for (chunking, samples) in &verdicts {
        passed &= verdict(*chunking, samples);
    }
    println!("\nAll targets met: {}", if passed { "yes" } else { "no" });
}
