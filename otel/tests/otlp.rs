//! One export over OTLP/HTTP to a loopback receiver that decodes the protobuf bodies.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use patchbay_otel::{OtelConfig, Telemetry};
use patchbay_scripted::ScriptedProvider;
use prost::Message as _;
use tracing_subscriber::layer::SubscriberExt;

use crate::support::{run, serial, weather_script};

#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
    keys: Vec<String>,
}

type Shared = Arc<Mutex<Received>>;

async fn traces(State(received): State<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return StatusCode::BAD_REQUEST;
    };
    let mut received = received.lock().expect("lock");
    received.keys.extend(
        headers
            .get("x-collector-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    );
    received.traces.push(request);
    StatusCode::OK
}

async fn metrics(State(received): State<Shared>, body: Bytes) -> StatusCode {
    let Ok(request) = ExportMetricsServiceRequest::decode(body) else {
        return StatusCode::BAD_REQUEST;
    };
    received.lock().expect("lock").metrics.push(request);
    StatusCode::OK
}

fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .as_ref()?
        .value
        .as_ref()?;
    Some(match value {
        AnyValue::StringValue(s) => s.clone(),
        AnyValue::IntValue(i) => i.to_string(),
        AnyValue::DoubleValue(d) => d.to_string(),
        AnyValue::BoolValue(b) => b.to_string(),
        other => format!("{other:?}"),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_and_metrics_reach_a_loopback_otlp_http_receiver_as_protobuf() {
    let _serial = serial().await;
    let received = Shared::default();
    let app = Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let config = OtelConfig::new(format!("http://{addr}"))
        .with_header("x-collector-key", "collector-token")
        .with_service_name("otel-test")
        .with_timeout(Duration::from_secs(10));
    let telemetry = Telemetry::start(&config).expect("pipeline");
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    {
        let _guard = tracing::subscriber::set_default(subscriber);
        let provider = Arc::new(ScriptedProvider::new(weather_script()));
        run(provider, "scripted-model").await.expect("the run succeeds");
    }
    // The exporters send from threads of their own; shutting down waits for them.
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .expect("join")
        .expect("exported");

    let received = received.lock().expect("lock");
    assert!(received.keys.iter().all(|k| k == "collector-token") && !received.keys.is_empty());
    let spans: Vec<_> = received
        .traces
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .collect();
    let service = received.traces[0].resource_spans[0]
        .resource
        .as_ref()
        .and_then(|r| text(&r.attributes, "service.name"));
    assert_eq!(service.as_deref(), Some("otel-test"));
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    for name in [
        "invoke_agent weather-bot",
        "chat scripted-model",
        "execute_tool get_weather",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let chat = spans.iter().find(|s| s.name == "chat scripted-model").expect("chat");
    assert_eq!(text(&chat.attributes, "gen_ai.operation.name").as_deref(), Some("chat"));
    assert_eq!(
        text(&chat.attributes, "gen_ai.request.model").as_deref(),
        Some("scripted-model")
    );
    let agent = spans
        .iter()
        .find(|s| s.name == "invoke_agent weather-bot")
        .expect("agent");
    assert_eq!(chat.parent_span_id, agent.span_id);
    assert_eq!(chat.trace_id, agent.trace_id);

    let metric_names: Vec<&str> = received
        .metrics
        .iter()
        .flat_map(|r| &r.resource_metrics)
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .map(|m| m.name.as_str())
        .collect();
    for name in [
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk",
    ] {
        assert!(metric_names.contains(&name), "{name} in {metric_names:?}");
    }
    server.abort();
}
