//! What the tests share: an in-memory pipeline, a scripted conversation with a tool call, and
//! readers of the exported spans and metrics.

use std::sync::Arc;

use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, HistogramDataPoint, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use patchbay_core::{Agent, FnTool, Message, Provider, ProviderError, Signal, ToolContext, ToolResult, ToolSet};
use patchbay_otel::Telemetry;
use patchbay_scripted::{Part, Response, Script, Turn};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

/// Content capture is a process-wide switch: tests that read spans take turns.
pub(crate) async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// A pipeline exporting to memory: spans as they end, metrics on flush.
pub(crate) struct Memory {
    pub(crate) spans: InMemorySpanExporter,
    pub(crate) metrics: InMemoryMetricExporter,
    pub(crate) telemetry: Telemetry,
}

impl Memory {
    pub(crate) fn new() -> Self {
        let spans = InMemorySpanExporter::default();
        let metrics = InMemoryMetricExporter::default();
        let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
        let meter_provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        Self {
            spans,
            metrics,
            telemetry: Telemetry::from_providers(tracer_provider, meter_provider),
        }
    }

    /// Run `work` with this pipeline as the thread's subscriber (the test's runtime polls on
    /// this thread), then flush.
    pub(crate) async fn record<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        let subscriber = tracing_subscriber::registry().with(self.telemetry.layer());
        let guard = tracing::subscriber::set_default(subscriber);
        let out = work.await;
        drop(guard);
        self.telemetry.force_flush().expect("flush");
        out
    }

    pub(crate) fn finished_spans(&self) -> Vec<SpanData> {
        self.spans.get_finished_spans().expect("spans")
    }

    /// The sum of `gen_ai.client.token.usage` points of one token type (`input`, `output`).
    pub(crate) fn tokens(&self, kind: &str) -> f64 {
        self.histogram("gen_ai.client.token.usage")
            .iter()
            .filter(|p| p.attribute("gen_ai.token.type").as_deref() == Some(kind))
            .map(|p| p.sum)
            .sum()
    }

    /// Every histogram point of the metric `name` (f64 or u64 values as f64).
    pub(crate) fn histogram(&self, name: &str) -> Vec<Point> {
        let mut points = Vec::new();
        for resource in self.metrics.get_finished_metrics().expect("metrics") {
            for scope in resource.scope_metrics() {
                for metric in scope.metrics().filter(|m| m.name() == name) {
                    match metric.data() {
                        AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                            points.extend(h.data_points().map(|p| Point::of(p, p.sum())));
                        }
                        AggregatedMetrics::U64(MetricData::Histogram(h)) => {
                            points.extend(h.data_points().map(|p| Point::of(p, p.sum() as f64)));
                        }
                        other => panic!("{name} is not a histogram: {other:?}"),
                    }
                }
            }
        }
        points
    }
}

/// One histogram data point: its attributes, count and sum.
#[derive(Debug)]
pub(crate) struct Point {
    pub(crate) attributes: Vec<KeyValue>,
    pub(crate) count: u64,
    pub(crate) sum: f64,
}

impl Point {
    fn of<T>(point: &HistogramDataPoint<T>, sum: f64) -> Self {
        Self {
            attributes: point.attributes().cloned().collect(),
            count: point.count(),
            sum,
        }
    }

    pub(crate) fn attribute(&self, key: &str) -> Option<String> {
        self.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    }
}

/// The value of a span attribute as text.
pub(crate) fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// The value of a span attribute, typed.
pub(crate) fn value<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

/// The one span named `name`.
pub(crate) fn span<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found: Vec<&SpanData> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one `{name}` span in {:?}", names(spans));
    found[0]
}

pub(crate) fn names(spans: &[SpanData]) -> Vec<String> {
    spans.iter().map(|s| s.name.to_string()).collect()
}

/// The model calls for a weather question: a tool call, then the answer.
pub(crate) fn weather_script() -> Script {
    Script::new(vec![
        Turn::Respond(
            Response::new(vec![Part::tool_call("call_1", "get_weather", json!({"city": "Paris"}))]).with_usage(12, 7),
        ),
        Turn::Respond(Response::new(vec![Part::text("Sunny in Paris.")]).with_usage(30, 5)),
    ])
}

/// The key the Anthropic provider of the tests sends (it must reach no span).
pub(crate) const ANTHROPIC_KEY: &str = "sk-ant-otel-secret";

/// An Anthropic provider against the mock at `url`.
pub(crate) fn anthropic(url: String) -> Arc<dyn Provider> {
    let config = patchbay_anthropic::AnthropicConfig::new(ANTHROPIC_KEY).with_base_url(url);
    Arc::new(patchbay_anthropic::AnthropicProvider::new(config).expect("config"))
}

/// The `get_weather` tool.
pub(crate) fn weather_tools() -> ToolSet {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Input {
        #[allow(dead_code)]
        city: String,
    }
    let tool = FnTool::new(
        "get_weather",
        "Weather of a city",
        |_input: Input, _cx: ToolContext| async { ToolResult::text("sunny, 24 C") },
    );
    ToolSet::new().with(tool)
}

/// An agent run over `provider`, collected.
pub(crate) async fn run(provider: Arc<dyn Provider>, model: &str) -> Result<String, ProviderError> {
    let agent = Agent::new(provider, model)
        .with_name("weather-bot")
        .with_tools(weather_tools());
    let outcome = agent
        .run(vec![Message::user("Weather in Paris?")], Signal::new())
        .await?;
    Ok(outcome.response.text())
}
