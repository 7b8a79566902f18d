//! Time to first event: what patchbay adds before the first event over raw reqwest, on
//! loopback. Each request of a raw reader times `send()` up to its first body bytes, then (still
//! timing) splits and parses lines as the baseline does up to the first text; each request of a
//! patchbay provider times `create_response` up to its first `Event` (`Started`), then up to
//! its first `TextDelta`. The server writes the response head together with the first SSE
//! frame, then one frame per write (20 deltas), on kept-alive connections. Requests are
//! interleaved (raw OpenAI, patchbay-openrouter, raw Anthropic, patchbay-anthropic, raw Gemini,
//! patchbay-gemini, raw Responses, patchbay-openai, starting one further along each round),
//! after 100 warm-up rounds; p50 and p99 of each reader and the difference and ratio to the raw
//! reader of the same wire.
//!
//! `cargo run --release --bin first_event [-- --requests N]` (default 2000 per reader).

use std::time::{Duration, Instant};

use futures::StreamExt;
use patchbay_core::{Event, Message, Provider, Signal, ToolSet};
use patchbay_peers_bench::consumers::{self, Patchbay, Wire};
use patchbay_peers_bench::server::{self, Chunking, Routes};
use patchbay_peers_bench::stats::{Samples, ratio, show};
use patchbay_peers_bench::{machine, wire};

const DELTAS: usize = 20;
const WARM_UP: usize = 100;

/// Two instants of one request, from its start.
#[derive(Default)]
struct Timing {
    first: Duration,
    text: Duration,
}

/// Raw reqwest: the first body bytes, then the first text parsed as the baseline parses.
async fn raw(http: &reqwest::Client, base: &str, wire: Wire) -> (Timing, String) {
    let started = Instant::now();
    let mut response = http
        .post(format!("{base}{}", wire.path()))
        .header("content-type", "application/json")
        .body(wire.request())
        .send()
        .await
        .expect("sends");
    let mut timing = Timing::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut text = String::new();
    while let Some(chunk) = response.chunk().await.expect("reads") {
        if timing.first.is_zero() {
            timing.first = started.elapsed();
        }
        buf.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &buf[start..]) {
            let line = &buf[start..start + offset];
            start += offset + 1;
            if let Some(data) = line.strip_prefix(b"data: ") {
                consumers::baseline_line(wire, data, &mut text).expect("parses");
                if timing.text.is_zero() && !text.is_empty() {
                    timing.text = started.elapsed();
                }
            }
        }
        buf.drain(..start);
    }
    (timing, text)
}

/// A patchbay provider: the first event, then the first text delta.
async fn ours(provider: &impl Provider, model: &str) -> (Timing, String) {
    let started = Instant::now();
    let messages = [Message::user("bench")];
    let mut stream = provider
        .create_response(&messages, &ToolSet::new(), model, &Signal::new(), None)
        .await
        .expect("starts");
    let mut timing = Timing::default();
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if timing.first.is_zero() {
            timing.first = started.elapsed();
        }
        if let Event::TextDelta { text: delta, .. } = event.expect("an event") {
            if timing.text.is_zero() {
                timing.text = started.elapsed();
            }
            text.push_str(&delta);
        }
    }
    (timing, text)
}

#[derive(Clone, Copy)]
enum Reader {
    Raw(Wire),
    Patchbay(Wire),
}

impl Reader {
    const ALL: [Reader; 8] = [
        Reader::Raw(Wire::OpenAi),
        Reader::Patchbay(Wire::OpenAi),
        Reader::Raw(Wire::Anthropic),
        Reader::Patchbay(Wire::Anthropic),
        Reader::Raw(Wire::Gemini),
        Reader::Patchbay(Wire::Gemini),
        Reader::Raw(Wire::Responses),
        Reader::Patchbay(Wire::Responses),
    ];
}

#[derive(Default)]
struct Series {
    first: Samples,
    text: Samples,
}

fn requests() -> usize {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => 2000,
        [flag, n] if flag == "--requests" => n.parse().expect("--requests N"),
        _ => panic!("usage: first_event [--requests N]"),
    }
}

/// `a - b`, signed.
fn signed(a: Duration, b: Duration) -> String {
    if a >= b {
        format!("+{}", show(a - b))
    } else {
        format!("-{}", show(b - a))
    }
}

fn row(label: &str, wire: Wire, raw: &Samples, ours: &Samples) {
    let (raw50, raw99, ours50, ours99) = (raw.median(), raw.percentile(99.0), ours.median(), ours.percentile(99.0));
    println!(
        "| {label} | {} | {} | {} | {} | {} | {} ({:.2}x) | {} ({:.2}x) |",
        wire.name(),
        show(raw50),
        show(ours50),
        show(raw99),
        show(ours99),
        signed(ours50, raw50),
        ratio(ours50, raw50),
        signed(ours99, raw99),
        ratio(ours99, raw99),
    );
}

fn main() {
    consumers::install_crypto();
    let requests = requests();
    let base = format!(
        "http://{}",
        server::spawn_thread(Routes::new(DELTAS, Chunking::PerFrame))
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let http = consumers::http_client();
    let patchbay = Patchbay::new(&base);
    let expected = wire::text(DELTAS);
    let mut series: Vec<Series> = Reader::ALL.iter().map(|_| Series::default()).collect();
    for round in 0..WARM_UP + requests {
        for i in 0..Reader::ALL.len() {
            let slot = (i + round) % Reader::ALL.len();
            let (timing, text) = runtime.block_on(async {
                match Reader::ALL[slot] {
                    Reader::Raw(wire) => raw(&http, &base, wire).await,
                    Reader::Patchbay(Wire::OpenAi) => ours(&patchbay.openrouter, "bench").await,
                    Reader::Patchbay(Wire::Anthropic) => ours(&patchbay.anthropic, "claude-bench").await,
                    Reader::Patchbay(Wire::Gemini) => ours(&patchbay.gemini, consumers::GEMINI_MODEL).await,
                    Reader::Patchbay(Wire::Responses) => ours(&patchbay.openai, "bench").await,
                }
            });
            assert_eq!(text, expected, "every request reads the whole text");
            if round >= WARM_UP {
                series[slot].first.push(timing.first);
                series[slot].text.push(timing.text);
            }
        }
    }
    println!(
        "### Time to first event over raw reqwest: {requests} requests per reader, {}\n",
        machine()
    );
    println!(
        "| measured up to | wire | raw p50 | patchbay p50 | raw p99 | patchbay p99 | added at p50 | added at p99 |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    let wires = [
        (0, 1, Wire::OpenAi),
        (2, 3, Wire::Anthropic),
        (4, 5, Wire::Gemini),
        (6, 7, Wire::Responses),
    ];
    for (raw_slot, ours_slot, wire) in wires {
        row(
            "first body bytes (raw) / first Event (patchbay)",
            wire,
            &series[raw_slot].first,
            &series[ours_slot].first,
        );
        row(
            "first text, parsed (raw) / first TextDelta (patchbay)",
            wire,
            &series[raw_slot].text,
            &series[ours_slot].text,
        );
    }
}
