//! Stream translation throughput: 50,000 text chunks of a Gemini `streamGenerateContent?alt=sse`
//! body served from loopback, read by the provider (HTTP + SSE framing + translation into
//! events) and by a baseline that reads the same bytes with reqwest, splits lines and parses each
//! `data:` line once with serde_json into a small typed struct borrowing its text. Both with the
//! whole body in one server write and with one SSE frame per write; then both readers without
//! HTTP, on the body in 64 KiB pieces in memory, and on one chunk whose single text part is
//! 64 KiB.
//!
//! Each chunk is what the Gemini API streams for one piece of text, printed as it prints it (a
//! space after each colon, none after commas): one candidate with one text part, `usageMetadata`
//! with a growing output count and `promptTokensDetails`, `modelVersion` and `responseId`; the
//! last carries `finishReason`; frames end in `\r\n\r\n`.
//!
//! `cargo bench -p patchbay-gemini --bench translate`; the ratios (patchbay / baseline, minimum
//! of interleaved runs) are printed after criterion's groups.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use futures::StreamExt;
use patchbay_conformance::mock::gemini::GeminiWire;
use patchbay_conformance::mock::{Chunking, MockServer, Serve};
use patchbay_core::{Event, Message, Provider, Signal, ToolSet};
use patchbay_gemini::{GeminiConfig, GeminiProvider, Translator};
use serde::Deserialize;

const DELTAS: usize = 50_000;
const MODEL: &str = "gemini-bench";

/// One streamed chunk of one text part (`finish`: the last chunk's `finishReason`).
fn chunk(out: &mut String, text: &str, k: usize, finish: bool) {
    let finish = if finish { r#""finishReason": "STOP","# } else { "" };
    let _ = write!(
        out,
        "data: {{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": {}}}],\"role\": \"model\"}},{finish}\"index\": 0}}],\"usageMetadata\": {{\"promptTokenCount\": 5,\"candidatesTokenCount\": {k},\"totalTokenCount\": {},\"promptTokensDetails\": [{{\"modality\": \"TEXT\",\"tokenCount\": 5}}]}},\"modelVersion\": \"{MODEL}\",\"responseId\": \"bR3nchMarkRespOnse1d23x\"}}\r\n\r\n",
        serde_json::to_string(text).expect("a string serializes"),
        k + 5
    );
}

/// 50,000 chunks of one text delta each (`tok{i % 1000} `), finished on the last.
fn body() -> String {
    let mut out = String::with_capacity(DELTAS * 330);
    for i in 0..DELTAS {
        chunk(&mut out, &format!("tok{} ", i % 1000), i + 1, i + 1 == DELTAS);
    }
    out
}

/// The text of the large-text case: 64 KiB of words, an escaped newline every 100 words, so the
/// text is read with its escapes (not borrowed) by both readers.
fn large_text() -> String {
    let mut text = String::with_capacity(64 * 1024 + 16);
    let mut i = 0;
    while text.len() < 64 * 1024 {
        let _ = write!(text, "tok{} ", i % 1000);
        if i % 100 == 7 {
            text.push('\n');
        }
        i += 1;
    }
    text
}

/// One chunk whose single text part is [`large_text`], finished.
fn large_body() -> String {
    let mut out = String::new();
    chunk(&mut out, &large_text(), 16_000, true);
    out
}

#[derive(Deserialize)]
struct BaseChunk<'a> {
    #[serde(borrow, default)]
    candidates: Vec<BaseCandidate<'a>>,
}

#[derive(Deserialize)]
struct BaseCandidate<'a> {
    #[serde(borrow, default)]
    content: Option<BaseContent<'a>>,
}

#[derive(Deserialize)]
struct BaseContent<'a> {
    #[serde(borrow, default)]
    parts: Vec<BasePart<'a>>,
}

#[derive(Deserialize)]
struct BasePart<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// The baseline's parse of one `data:` payload: the bytes of text it carries. The line still
/// ends in the `\r` of its `\r\n`: JSON whitespace, which serde_json skips.
fn baseline_line(data: &[u8]) -> usize {
    let chunk: BaseChunk<'_> = serde_json::from_slice(data).expect("valid chunk");
    let mut chars = 0;
    for candidate in chunk.candidates {
        for part in candidate.content.into_iter().flat_map(|content| content.parts) {
            chars += part.text.map_or(0, |text| text.len());
        }
    }
    chars
}

/// Split lines over `chunks` (joining lines cut between them), parse each `data:` line once.
fn baseline_parse<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> usize {
    let mut buf: Vec<u8> = Vec::new();
    let mut chars = 0;
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &buf[start..]) {
            let line = &buf[start..start + offset];
            start += offset + 1;
            if let Some(data) = line.strip_prefix(b"data: ") {
                chars += baseline_line(data);
            }
        }
        buf.drain(..start);
    }
    chars
}

/// The baseline: reqwest bytes, one buffer, lines split, each `data:` line parsed once.
async fn baseline(http: &reqwest::Client, url: &str) -> usize {
    let mut response = http
        .post(format!("{url}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"))
        .header("content-type", "application/json")
        .body(r#"{"contents":[{"role":"user","parts":[{"text":"bench"}]}]}"#)
        .send()
        .await
        .expect("sends");
    let mut buf: Vec<u8> = Vec::new();
    let mut chars = 0;
    while let Some(chunk) = response.chunk().await.expect("reads") {
        buf.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &buf[start..]) {
            let line = &buf[start..start + offset];
            start += offset + 1;
            if let Some(data) = line.strip_prefix(b"data: ") {
                chars += baseline_line(data);
            }
        }
        buf.drain(..start);
    }
    chars
}

/// The provider: events out, text bytes counted.
async fn patchbay(provider: &GeminiProvider) -> usize {
    let messages = [Message::user("bench")];
    let mut stream = provider
        .create_response(&messages, &ToolSet::new(), MODEL, &Signal::new(), None)
        .await
        .expect("starts");
    let mut chars = 0;
    while let Some(event) = stream.next().await {
        if let Event::TextDelta { text, .. } = event.expect("an event") {
            chars += text.len();
        }
    }
    chars
}

/// The translator alone (SSE framing + translation, core's `translate`), on chunks in memory.
fn translate_only<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> usize {
    let recording = patchbay_core::kit::translate(Translator::new(MODEL), chunks);
    assert!(recording.error.is_none(), "valid: {:?}", recording.error);
    recording.text().len()
}

/// A mock Gemini server answering every call with `body`, cut by `chunking`.
fn server(runtime: &tokio::runtime::Runtime, body: &str, chunking: Chunking) -> MockServer {
    runtime.block_on(async {
        MockServer::builder(GeminiWire)
            .serve([Serve::sse(body.to_string())])
            .repeat_last()
            .chunking(chunking)
            .start()
            .await
            .expect("mock starts")
    })
}

fn provider(url: &str) -> GeminiProvider {
    GeminiProvider::new(GeminiConfig::new(format!("{url}/v1beta")).with_api_key("bench")).expect("provider")
}

fn runtimes() -> (tokio::runtime::Runtime, tokio::runtime::Runtime) {
    // The servers run on their own thread; the client reads on a current-thread runtime.
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    (server, client)
}

const MODES: [(&str, Chunking); 2] = [
    ("large_chunks", Chunking::Whole),
    ("one_event_per_chunk", Chunking::PerFrame),
];

fn bench(c: &mut Criterion) {
    let (server_runtime, client_runtime) = runtimes();
    let body = body();
    let expected = baseline_parse([body.as_bytes()]);
    let mut group = c.benchmark_group("gemini_50k_deltas");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(6))
        .warm_up_time(Duration::from_secs(1));
    for (name, chunking) in MODES {
        let server = Arc::new(server(&server_runtime, &body, chunking));
        let url = server.url();
        let provider = provider(&url);
        let http = patchbay_http::client_builder().build().expect("client");
        assert_eq!(client_runtime.block_on(baseline(&http, &url)), expected, "baseline");
        assert_eq!(client_runtime.block_on(patchbay(&provider)), expected, "patchbay");
        group.bench_function(format!("{name}/baseline"), |b| {
            b.to_async(&client_runtime).iter(|| baseline(&http, &url))
        });
        group.bench_function(format!("{name}/patchbay"), |b| {
            b.to_async(&client_runtime).iter(|| patchbay(&provider))
        });
    }
    group.finish();
    server_runtime.shutdown_timeout(Duration::from_secs(1));
}

fn bench_in_memory(c: &mut Criterion) {
    let body = body();
    let large = large_body();
    let cases: [(&str, &str); 2] = [("50k_deltas_64k_chunks", &body), ("one_64k_text", &large)];
    let mut group = c.benchmark_group("gemini_in_memory");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    for (name, body) in cases {
        let pieces = || body.as_bytes().chunks(64 * 1024);
        assert_eq!(translate_only(pieces()), baseline_parse(pieces()), "{name}: same text");
        group.bench_function(format!("{name}/baseline"), |b| b.iter(|| baseline_parse(pieces())));
        group.bench_function(format!("{name}/patchbay"), |b| b.iter(|| translate_only(pieces())));
    }
    group.finish();
}

criterion_group!(benches, bench, bench_in_memory);

/// Minimum of interleaved runs: on a shared, loaded machine the minimum is the steadiest
/// estimate of what each reader costs. Prints one ratio per mode.
fn min_ratios() {
    const ROUNDS: usize = 15;
    let (server_runtime, client_runtime) = runtimes();
    let body = body();
    let expected = baseline_parse([body.as_bytes()]);
    let time = |f: &mut dyn FnMut() -> usize, expected: usize| {
        let started = Instant::now();
        assert_eq!(f(), expected);
        started.elapsed()
    };
    let show = |name: &str, base: Duration, ours: Duration| {
        println!(
            "min of {ROUNDS}: {name}: baseline {base:?}, patchbay {ours:?}, ratio {:.2}",
            ours.as_secs_f64() / base.as_secs_f64()
        );
    };
    for (name, chunking) in MODES {
        let server = server(&server_runtime, &body, chunking);
        let url = server.url();
        let provider = provider(&url);
        let http = patchbay_http::client_builder().build().expect("client");
        let (mut base, mut ours) = (Duration::MAX, Duration::MAX);
        for _ in 0..ROUNDS {
            base = base.min(time(&mut || client_runtime.block_on(baseline(&http, &url)), expected));
            ours = ours.min(time(&mut || client_runtime.block_on(patchbay(&provider)), expected));
        }
        show(name, base, ours);
    }
    let large = large_body();
    for (name, body) in [
        ("in_memory_64k_chunks", body.as_str()),
        ("in_memory_one_64k_text", &large),
    ] {
        let pieces = || body.as_bytes().chunks(64 * 1024);
        let expected = baseline_parse(pieces());
        let (mut base, mut ours) = (Duration::MAX, Duration::MAX);
        for _ in 0..ROUNDS {
            base = base.min(time(&mut || black_box(baseline_parse(pieces())), expected));
            ours = ours.min(time(&mut || black_box(translate_only(pieces())), expected));
        }
        show(name, base, ours);
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test" || a == "--list");
    benches();
    if !quick {
        min_ratios();
    }
    Criterion::default().configure_from_args().final_summary();
}
