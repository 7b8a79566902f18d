//! Stream translation throughput: 50,000 text deltas served from loopback, read by the provider
//! (HTTP + SSE framing + translation into events) and by a baseline that reads the same bytes
//! with reqwest, splits lines and parses each `data:` line once with serde_json into a small
//! typed struct. Both with large server chunks and with one event per chunk.
//!
//! `cargo bench -p patchbay-anthropic --bench translate`; the ratio is patchbay / baseline.

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group};
use futures::StreamExt;
use patchbay_anthropic::{AnthropicConfig, AnthropicProvider, Translator};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{Chunking, MockServer, Serve};
use patchbay_core::kit::{Framer, Wire};
use patchbay_core::{Event, Message, Provider, Signal, ToolSet};
use serde::Deserialize;

const DELTAS: usize = 50_000;

fn body() -> String {
    let mut out = String::with_capacity(DELTAS * 120);
    out.push_str("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-bench\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n");
    out.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
    for i in 0..DELTAS {
        out.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"tok{} \"}}}}\n\n",
            i % 1000
        ));
    }
    out.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n");
    out.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":50000}}\n\n");
    out.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    out
}

#[derive(Deserialize)]
struct BaselineChunk {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    delta: Option<BaselineDelta>,
}

#[derive(Deserialize)]
struct BaselineDelta {
    #[serde(default)]
    text: Option<String>,
}

/// Read the stream with reqwest, split lines, parse each `data:` line once.
async fn baseline(client: &reqwest::Client, url: &str) -> usize {
    let response = client.post(url).body("{}").send().await.expect("baseline request");
    let mut body = response.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut texts = 0;
    while let Some(chunk) = body.next().await {
        buf.extend_from_slice(&chunk.expect("chunk"));
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &buf[start..]) {
            let line = &buf[start..start + offset];
            start += offset + 1;
            if let Some(data) = line.strip_prefix(b"data: ") {
                let chunk: BaselineChunk = serde_json::from_slice(data).expect("json");
                if chunk.kind == "content_block_delta" && chunk.delta.and_then(|d| d.text).is_some() {
                    texts += 1;
                }
            }
        }
        buf.drain(..start);
    }
    texts
}

async fn patchbay(provider: &AnthropicProvider) -> usize {
    let messages = [Message::user("bench")];
    let mut stream = provider
        .create_response(&messages, &ToolSet::new(), "claude-bench", &Signal::new(), None)
        .await
        .expect("stream");
    let mut texts = 0;
    while let Some(event) = stream.next().await {
        if let Event::TextDelta { .. } = event.expect("event") {
            texts += 1;
        }
    }
    texts
}

/// The baseline's parsing alone, over chunks already in memory.
fn baseline_parse(chunks: &[&[u8]]) -> usize {
    let mut buf: Vec<u8> = Vec::new();
    let mut texts = 0;
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &buf[start..]) {
            let line = &buf[start..start + offset];
            start += offset + 1;
            if let Some(data) = line.strip_prefix(b"data: ") {
                let chunk: BaselineChunk = serde_json::from_slice(data).expect("json");
                if chunk.kind == "content_block_delta" && chunk.delta.and_then(|d| d.text).is_some() {
                    texts += 1;
                }
            }
        }
        buf.drain(..start);
    }
    texts
}

/// The translator alone (SSE framing + translation), over chunks already in memory.
fn translate_only(chunks: &[&[u8]]) -> usize {
    let mut translator = Translator::new();
    let mut framer = Framer::new(translator.framing());
    let mut texts = 0;
    for chunk in chunks {
        framer.feed(chunk).expect("feeds");
        while let Some(frame) = framer.next_frame().expect("frames") {
            let first = translator.frame(frame).expect("translates");
            for event in first.into_iter().chain(std::iter::from_fn(|| translator.next_event())) {
                if let Event::TextDelta { .. } = event {
                    texts += 1;
                }
            }
        }
    }
    translator.end().expect("finishes");
    texts
}

fn bench_in_memory(c: &mut Criterion) {
    let body = body();
    let chunks: Vec<&[u8]> = body.as_bytes().chunks(64 * 1024).collect();
    let mut group = c.benchmark_group("anthropic_50k_deltas_in_memory");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    assert_eq!(baseline_parse(&chunks), DELTAS);
    assert_eq!(translate_only(&chunks), DELTAS);
    group.bench_function("baseline", |b| b.iter(|| baseline_parse(&chunks)));
    group.bench_function("patchbay", |b| b.iter(|| translate_only(&chunks)));
    group.finish();
}

fn bench(c: &mut Criterion) {
    // The servers run on their own threads; the client reads on a current-thread runtime.
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let body = body();
    let servers: Vec<(&str, Arc<MockServer>)> = [
        ("large_chunks", Chunking::Whole),
        ("event_per_chunk", Chunking::PerFrame),
    ]
    .into_iter()
    .map(|(name, chunking)| {
        let server = server_runtime.block_on(async {
            MockServer::builder(AnthropicWire)
                .serve([Serve::sse(body.clone())])
                .repeat_last()
                .chunking(chunking)
                .start()
                .await
                .expect("mock starts")
        });
        (name, Arc::new(server))
    })
    .collect();
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let mut group = c.benchmark_group("anthropic_50k_deltas");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(6))
        .warm_up_time(Duration::from_secs(1));
    for (name, server) in &servers {
        let url = format!("{}/v1/messages", server.url());
        let provider =
            AnthropicProvider::new(AnthropicConfig::new("bench").with_base_url(server.url())).expect("provider");
        let client = patchbay_http::client_builder().build().expect("client");
        assert_eq!(client_runtime.block_on(patchbay(&provider)), DELTAS);
        assert_eq!(client_runtime.block_on(baseline(&client, &url)), DELTAS);
        group.bench_function(format!("{name}/baseline"), |b| {
            b.to_async(&client_runtime).iter(|| baseline(&client, &url))
        });
        group.bench_function(format!("{name}/patchbay"), |b| {
            b.to_async(&client_runtime).iter(|| patchbay(&provider))
        });
    }
    group.finish();
    drop(servers);
    server_runtime.shutdown_timeout(Duration::from_secs(1));
}

criterion_group!(benches, bench, bench_in_memory);

/// Minimum of alternating runs: on a shared, loaded machine the minimum is the steadiest
/// estimate of what each reader costs. Prints one ratio per mode.
fn min_ratios() {
    const ROUNDS: usize = 15;
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let body = body();
    let time = |f: &mut dyn FnMut() -> usize| {
        let started = std::time::Instant::now();
        assert_eq!(f(), DELTAS);
        started.elapsed()
    };
    for (name, chunking) in [
        ("large_chunks", Chunking::Whole),
        ("event_per_chunk", Chunking::PerFrame),
    ] {
        let server = server_runtime.block_on(async {
            MockServer::builder(AnthropicWire)
                .serve([Serve::sse(body.clone())])
                .repeat_last()
                .chunking(chunking)
                .start()
                .await
                .expect("mock starts")
        });
        let url = format!("{}/v1/messages", server.url());
        let provider =
            AnthropicProvider::new(AnthropicConfig::new("bench").with_base_url(server.url())).expect("provider");
        let client = patchbay_http::client_builder().build().expect("client");
        let (mut base, mut ours) = (Duration::MAX, Duration::MAX);
        for _ in 0..ROUNDS {
            base = base.min(time(&mut || client_runtime.block_on(baseline(&client, &url))));
            ours = ours.min(time(&mut || client_runtime.block_on(patchbay(&provider))));
        }
        println!(
            "min of {ROUNDS}: {name}: baseline {base:?}, patchbay {ours:?}, ratio {:.2}",
            ours.as_secs_f64() / base.as_secs_f64()
        );
    }
    let chunks: Vec<&[u8]> = body.as_bytes().chunks(64 * 1024).collect();
    let (mut base, mut ours) = (Duration::MAX, Duration::MAX);
    for _ in 0..ROUNDS {
        base = base.min(time(&mut || baseline_parse(&chunks)));
        ours = ours.min(time(&mut || translate_only(&chunks)));
    }
    println!(
        "min of {ROUNDS}: in_memory: baseline {base:?}, patchbay {ours:?}, ratio {:.2}",
        ours.as_secs_f64() / base.as_secs_f64()
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test" || a == "--list");
    benches();
    if !quick {
        min_ratios();
    }
    Criterion::default().configure_from_args().final_summary();
}
