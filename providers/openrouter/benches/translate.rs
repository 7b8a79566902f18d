//! Translation throughput on loopback: the provider (HTTP + translator + events) against a
//! baseline that reads the same bytes with reqwest, splits lines and parses each `data:` line
//! once with serde_json into a small typed struct. 50,000 text deltas, served as one large
//! write and as one write per SSE frame. Prints the ratios at the end.
//!
//! Run: `cargo bench -p patchbay-openrouter --bench translate`

use std::borrow::Cow;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use futures::StreamExt;
use patchbay_conformance::mock::openai::OpenAiWire;
use patchbay_conformance::mock::{Chunking, MockServer, Serve};
use patchbay_core::kit::Wire;
use patchbay_core::{Event, Message, Provider, Signal, ToolSet};
use patchbay_openrouter::{OpenRouterConfig, OpenRouterProvider};
use serde::Deserialize;

const DELTAS: usize = 50_000;

fn body() -> String {
    let mut body = String::with_capacity(DELTAS * 160);
    for i in 0..DELTAS {
        body.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"bench\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"tok{} \"}},\"finish_reason\":null}}]}}\n\n",
            i % 10
        ));
    }
    body.push_str("data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    body.push_str("data: {\"id\":\"chatcmpl-bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":50000}}\n\n");
    body.push_str("data: [DONE]\n\n");
    body
}

struct Setup {
    _server_rt: tokio::runtime::Runtime,
    _server: MockServer,
    url: String,
    client_rt: tokio::runtime::Runtime,
    provider: Arc<OpenRouterProvider>,
    http: reqwest::Client,
}

fn setup(chunking: Chunking) -> Setup {
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let server = server_rt.block_on(async {
        MockServer::builder(OpenAiWire)
            .serve([Serve::sse(body())])
            .repeat_last()
            .chunking(chunking)
            .start()
            .await
            .expect("mock starts")
    });
    let url = server.url();
    let provider = OpenRouterProvider::new(OpenRouterConfig::new(url.clone())).expect("provider");
    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    Setup {
        _server_rt: server_rt,
        _server: server,
        url,
        client_rt,
        provider: Arc::new(provider),
        http: patchbay_http::client_builder().build().expect("client"),
    }
}

/// The provider: events out, text chars counted.
async fn ours(provider: &OpenRouterProvider) -> usize {
    let messages = [Message::user("bench")];
    let mut stream = provider
        .create_response(&messages, &ToolSet::new(), "bench", &Signal::new(), None)
        .await
        .expect("starts");
    let mut chars = 0;
    while let Some(event) = stream.next().await {
        if let Ok(Event::TextDelta { text, .. }) = event {
            chars += text.len();
        }
    }
    chars
}

#[derive(Deserialize)]
struct BaseChunk<'a> {
    #[serde(borrow)]
    choices: Vec<BaseChoice<'a>>,
}

#[derive(Deserialize)]
struct BaseChoice<'a> {
    #[serde(borrow)]
    delta: Option<BaseDelta<'a>>,
}

#[derive(Deserialize)]
struct BaseDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
}

/// The baseline: reqwest bytes, one buffer, lines split, each `data:` line parsed once.
async fn baseline(http: &reqwest::Client, url: &str) -> usize {
    let mut response = http
        .post(format!("{url}/chat/completions"))
        .header("content-type", "application/json")
        .body(r#"{"model":"bench","messages":[{"role":"user","content":"bench"}],"stream":true}"#)
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
                if data == b"[DONE]" {
                    continue;
                }
                let parsed: BaseChunk<'_> = serde_json::from_slice(data).expect("valid chunk");
                for choice in parsed.choices {
                    if let Some(content) = choice.delta.and_then(|d| d.content) {
                        chars += content.len();
                    }
                }
            }
        }
        buf.drain(..start);
    }
    chars
}

fn bench(c: &mut Criterion) {
    for (label, chunking) in [
        ("large_chunks", Chunking::Whole),
        ("one_event_per_chunk", Chunking::PerFrame),
    ] {
        let setup = setup(chunking);
        let expected = setup.client_rt.block_on(baseline(&setup.http, &setup.url));
        assert_eq!(setup.client_rt.block_on(ours(&setup.provider)), expected, "same text");
        let mut group = c.benchmark_group(format!("openai_50k_deltas/{label}"));
        group.sample_size(10).measurement_time(Duration::from_secs(4));
        group.bench_function("baseline_reqwest_serde", |b| {
            b.iter(|| black_box(setup.client_rt.block_on(baseline(&setup.http, &setup.url))))
        });
        group.bench_function("patchbay_openrouter", |b| {
            b.iter(|| black_box(setup.client_rt.block_on(ours(&setup.provider))))
        });
        group.finish();
    }
}

/// The fastest run: the least disturbed by other load on the machine.
fn best(samples: Vec<Duration>) -> Duration {
    samples.into_iter().min().unwrap_or_default()
}

/// The translator fed straight from reqwest (no provider stream around it).
async fn translator_over_reqwest(http: &reqwest::Client, url: &str) -> usize {
    let mut response = http
        .post(format!("{url}/chat/completions"))
        .header("content-type", "application/json")
        .body(r#"{"model":"bench","messages":[{"role":"user","content":"bench"}],"stream":true}"#)
        .send()
        .await
        .expect("sends");
    let mut translator = patchbay_openrouter::translate::Translator::default();
    let mut framer = patchbay_core::kit::Framer::new(translator.framing());
    let mut chars = 0;
    let mut count = |event: Event| {
        if let Event::TextDelta { text, .. } = event {
            chars += text.len();
        }
    };
    while let Some(chunk) = response.chunk().await.expect("reads") {
        framer
            .push(&chunk, |data| {
                translator.frame(data)?.into_iter().for_each(&mut count);
                std::iter::from_fn(|| translator.next_event()).for_each(&mut count);
                Ok(())
            })
            .expect("valid");
    }
    chars
}

/// The baseline's parse alone, on bytes in memory.
fn parse_only(body: &[u8]) -> usize {
    let mut chars = 0;
    for line in body.split(|&b| b == b'\n') {
        if let Some(data) = line.strip_prefix(b"data: ") {
            if data == b"[DONE]" {
                continue;
            }
            let parsed: BaseChunk<'_> = serde_json::from_slice(data).expect("valid chunk");
            for choice in parsed.choices {
                if let Some(content) = choice.delta.and_then(|d| d.content) {
                    chars += content.len();
                }
            }
        }
    }
    chars
}

/// The translator alone, on bytes in memory.
fn translate_only(body: &[u8]) -> usize {
    let translator = patchbay_openrouter::translate::Translator::default();
    let recording = patchbay_core::kit::translate(translator, body.chunks(16 * 1024));
    assert!(recording.error.is_none(), "valid");
    recording.text().len()
}

/// Interleaved runs, best of 15 each, ratios.
fn ratios() {
    let bytes = body().into_bytes();
    let (mut base, mut ours_t) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        let t = Instant::now();
        black_box(parse_only(&bytes));
        base.push(t.elapsed());
        let t = Instant::now();
        black_box(translate_only(&bytes));
        ours_t.push(t.elapsed());
    }
    let (b, o) = (best(base), best(ours_t));
    println!(
        "ratio in memory (no HTTP): translator {o:?} / serde parse {b:?} = {:.2}x",
        o.as_secs_f64() / b.as_secs_f64()
    );
    for (label, chunking) in [
        ("large chunks", Chunking::Whole),
        ("one event per chunk", Chunking::PerFrame),
    ] {
        let setup = setup(chunking);
        let (mut base, mut ours_t, mut direct) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..15 {
            let t = Instant::now();
            black_box(setup.client_rt.block_on(baseline(&setup.http, &setup.url)));
            base.push(t.elapsed());
            let t = Instant::now();
            black_box(setup.client_rt.block_on(ours(&setup.provider)));
            ours_t.push(t.elapsed());
            let t = Instant::now();
            black_box(
                setup
                    .client_rt
                    .block_on(translator_over_reqwest(&setup.http, &setup.url)),
            );
            direct.push(t.elapsed());
        }
        let (b, o, d) = (best(base), best(ours_t), best(direct));
        println!(
            "ratio {label}: patchbay-openrouter {o:?} / baseline {b:?} = {:.2}x (translator fed by reqwest directly: {d:?} = {:.2}x)",
            o.as_secs_f64() / b.as_secs_f64(),
            d.as_secs_f64() / b.as_secs_f64()
        );
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    ratios();
    Criterion::default().configure_from_args().final_summary();
}
