//! What telemetry costs on the hot path: the same 100,000-delta Anthropic stream from the mock,
//! read through the provider with no subscriber (patchbay's spans are disabled), with
//! patchbay-otel's layer over in-memory exporters (spans, GenAI metrics), and with message
//! content captured too. Rounds are interleaved; the client's CPU time is measured beside the
//! wall clock. Prints min and median per mode and the ratios to the run without a subscriber.
//!
//! Run: `cargo bench -p patchbay-otel --bench overhead` (`OVERHEAD_ROUNDS=N`, default 15).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use patchbay_anthropic::{AnthropicConfig, AnthropicProvider};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_core::{Event, Message, Provider, Signal, ToolSet};
use patchbay_otel::Telemetry;
use tracing_subscriber::layer::SubscriberExt;

const DELTAS: usize = 100_000;

fn body() -> String {
    let mut body = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"model\":\"bench\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    for i in 0..DELTAS {
        body.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"tok{} \"}}}}\n\n",
            i % 10
        ));
    }
    body.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
         event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20000}}\n\n\
         event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    body
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Off,
    Otel,
    Content,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Off => "no subscriber",
            Mode::Otel => "otel layer",
            Mode::Content => "otel + content",
        }
    }
}

/// The client thread's CPU time.
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let fields: Vec<&str> = text.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: u64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

async fn read(provider: &AnthropicProvider) -> usize {
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

fn main() {
    let rounds: usize = std::env::var("OVERHEAD_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(15);
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let server = server_rt.block_on(async {
        MockServer::builder(AnthropicWire)
            .serve([Serve::sse(body())])
            .repeat_last()
            .start()
            .await
            .expect("mock starts")
    });
    let provider =
        Arc::new(AnthropicProvider::new(AnthropicConfig::new("bench").with_base_url(server.url())).expect("provider"));
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let spans = InMemorySpanExporter::default();
    let metrics = InMemoryMetricExporter::default();
    let telemetry = Telemetry::from_providers(
        SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build(),
        SdkMeterProvider::builder()
            .with_reader(
                PeriodicReader::builder(metrics)
                    .with_interval(Duration::from_secs(3600))
                    .build(),
            )
            .build(),
    );
    let expected = client.block_on(read(&provider));
    let modes = [Mode::Off, Mode::Otel, Mode::Content];
    let mut wall: Vec<Vec<Duration>> = vec![Vec::new(); modes.len()];
    let mut cpu: Vec<Vec<Duration>> = vec![Vec::new(); modes.len()];
    for _ in 0..rounds {
        for (i, mode) in modes.iter().enumerate() {
            patchbay_core::telemetry::set_capture_content(*mode == Mode::Content);
            let guard = (*mode != Mode::Off)
                .then(|| tracing::subscriber::set_default(tracing_subscriber::registry().with(telemetry.layer())));
            let (start, start_cpu) = (Instant::now(), thread_cpu());
            let chars = client.block_on(read(&provider));
            wall[i].push(start.elapsed());
            cpu[i].push(thread_cpu().saturating_sub(start_cpu));
            drop(guard);
            assert_eq!(chars, expected, "{}: every mode reads the same text", mode.name());
        }
        spans.reset();
    }
    patchbay_core::telemetry::set_capture_content(false);
    let stat = |samples: &mut Vec<Duration>| {
        samples.sort();
        (samples[0], samples[samples.len() / 2])
    };
    let (base_wall, _) = stat(&mut wall[0].clone());
    let (base_cpu, _) = stat(&mut cpu[0].clone());
    println!("{DELTAS} deltas, {rounds} interleaved rounds; ratios of the minimum to `no subscriber`");
    println!(
        "{:<16} {:>10} {:>10} {:>8} {:>10} {:>8}",
        "mode", "wall min", "wall med", "ratio", "cpu min", "ratio"
    );
    for (i, mode) in modes.iter().enumerate() {
        let (wmin, wmed) = stat(&mut wall[i]);
        let (cmin, _) = stat(&mut cpu[i]);
        println!(
            "{:<16} {:>8.1}ms {:>8.1}ms {:>7.2}x {:>8.0}ms {:>7.2}x",
            mode.name(),
            wmin.as_secs_f64() * 1e3,
            wmed.as_secs_f64() * 1e3,
            wmin.as_secs_f64() / base_wall.as_secs_f64(),
            cmin.as_secs_f64() * 1e3,
            cmin.as_secs_f64() / base_cpu.as_secs_f64().max(1e-9),
        );
    }
}
