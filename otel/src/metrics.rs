//! The GenAI client metrics, derived from patchbay's `chat` spans when they close.

use std::fmt;
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// The target of patchbay's GenAI spans (core's telemetry module).
const TARGET: &str = "patchbay_core::telemetry";

/// `gen_ai.client.token.usage` buckets, as the conventions give them.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
    67108864.0,
];

/// `gen_ai.client.operation.duration` (and time to first chunk) buckets, in seconds.
const SECONDS_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// A `tracing` layer that records the GenAI client metrics of every model call when its `chat`
/// span closes (the stream was dropped): `gen_ai.client.operation.duration` (seconds, with
/// `error.type` for a failed call), `gen_ai.client.token.usage` (one point per token type,
/// `input` and `output`) and `gen_ai.client.operation.time_to_first_chunk` (seconds), with the
/// operation, provider, requested and answering model as attributes.
pub struct GenAiMetricsLayer {
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
    first_chunk: Histogram<f64>,
}

impl fmt::Debug for GenAiMetricsLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenAiMetricsLayer").finish_non_exhaustive()
    }
}

impl GenAiMetricsLayer {
    /// The layer, its instruments made on `meter`.
    pub fn new(meter: &Meter) -> Self {
        Self {
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .with_boundaries(SECONDS_BUCKETS.to_vec())
                .build(),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            first_chunk: meter
                .f64_histogram("gen_ai.client.operation.time_to_first_chunk")
                .with_unit("s")
                .with_description("Time to receive the first chunk of a streamed response.")
                .with_boundaries(SECONDS_BUCKETS.to_vec())
                .build(),
        }
    }
}

/// What a `chat` span said about its call.
#[derive(Debug)]
struct Call {
    started: Instant,
    operation: Option<String>,
    provider: Option<String>,
    request_model: Option<String>,
    response_model: Option<String>,
    error_type: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    first_chunk: Option<f64>,
}

impl Call {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            operation: None,
            provider: None,
            request_model: None,
            response_model: None,
            error_type: None,
            input_tokens: None,
            output_tokens: None,
            first_chunk: None,
        }
    }

    /// Where a text field the metrics use goes; `None` for every other field.
    fn text_slot(&mut self, field: &Field) -> Option<&mut Option<String>> {
        match field.name() {
            "gen_ai.operation.name" => Some(&mut self.operation),
            "gen_ai.provider.name" => Some(&mut self.provider),
            "gen_ai.request.model" => Some(&mut self.request_model),
            "gen_ai.response.model" => Some(&mut self.response_model),
            "error.type" => Some(&mut self.error_type),
            _ => None,
        }
    }

    fn attributes(&self) -> Vec<KeyValue> {
        let mut attributes = Vec::with_capacity(5);
        let pairs = [
            ("gen_ai.operation.name", &self.operation),
            ("gen_ai.provider.name", &self.provider),
            ("gen_ai.request.model", &self.request_model),
            ("gen_ai.response.model", &self.response_model),
        ];
        for (key, value) in pairs {
            if let Some(value) = value {
                attributes.push(KeyValue::new(key, value.clone()));
            }
        }
        attributes
    }
}

impl Visit for Call {
    fn record_str(&mut self, field: &Field, value: &str) {
        if let Some(slot) = self.text_slot(field) {
            *slot = Some(value.to_string());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `%value` fields arrive here; their Debug is the Display text. Only the fields the
        // metrics use are formatted (`otel.name` and the content fields are not).
        if let Some(slot) = self.text_slot(field) {
            *slot = Some(format!("{value:?}"));
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "gen_ai.usage.input_tokens" => self.input_tokens = Some(value),
            "gen_ai.usage.output_tokens" => self.output_tokens = Some(value),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(value) = u64::try_from(value) {
            self.record_u64(field, value);
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        if field.name() == "gen_ai.response.time_to_first_chunk" {
            self.first_chunk = Some(value);
        }
    }
}

impl<S> Layer<S> for GenAiMetricsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let metadata = attrs.metadata();
        if metadata.target() != TARGET || metadata.name() != "chat" {
            return;
        }
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut call = Call::new();
        attrs.record(&mut call);
        span.extensions_mut().insert(call);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        if let Some(call) = span.extensions_mut().get_mut::<Call>() {
            values.record(call);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(call) = span.extensions_mut().remove::<Call>() else {
            return;
        };
        let attributes = call.attributes();
        let mut with_error = attributes.clone();
        if let Some(error) = &call.error_type {
            with_error.push(KeyValue::new("error.type", error.clone()));
        }
        self.duration.record(call.started.elapsed().as_secs_f64(), &with_error);
        for (kind, count) in [("input", call.input_tokens), ("output", call.output_tokens)] {
            if let Some(count) = count {
                let mut attributes = attributes.clone();
                attributes.push(KeyValue::new("gen_ai.token.type", kind));
                self.tokens.record(count, &attributes);
            }
        }
        if let Some(seconds) = call.first_chunk {
            self.first_chunk.record(seconds, &attributes);
        }
    }
}
