//! The exporters and providers, and the `tracing` layer that feeds them.

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

use crate::config::OtelConfig;
use crate::error::Error;
use crate::metrics::GenAiMetricsLayer;

/// What [`Telemetry::install`] exports when `RUST_LOG` is not set.
pub const DEFAULT_FILTER: &str = "info,rmcp=warn";

/// The name patchbay's tracer and meter carry (`otel.scope.name`).
const SCOPE: &str = "patchbay";

/// patchbay's OpenTelemetry pipeline: a tracer provider and a meter provider, and the
/// [`layer`](Self::layer) that turns patchbay's `tracing` spans into OpenTelemetry spans and
/// GenAI metrics.
///
/// [`Telemetry::start`] exports over OTLP/HTTP (protobuf); [`Telemetry::from_providers`] takes
/// providers built by the host (an in-memory exporter in tests, another exporter). Dropping it
/// (or [`shutdown`](Self::shutdown)) flushes what is pending.
#[derive(Debug)]
pub struct Telemetry {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
}

impl Telemetry {
    /// Build the OTLP/HTTP exporters of `config` (batched spans, periodic metrics), and turn
    /// content capture on when the config asks for it
    /// ([`patchbay_core::telemetry::set_capture_content`]; never turned off here, so a host that
    /// turned it on keeps it). Nothing is sent before the first batch; a collector that is down
    /// costs a failed export, never a failed model call.
    pub fn start(config: &OtelConfig) -> Result<Self, Error> {
        let client = http_client(config)?;
        let mut spans = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_http_client(client.clone());
        let mut metrics = MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_http_client(client);
        if let (Some(traces_url), Some(metrics_url)) =
            (config.signal_url("/v1/traces"), config.signal_url("/v1/metrics"))
        {
            spans = spans.with_endpoint(traces_url);
            metrics = metrics.with_endpoint(metrics_url);
        }
        if !config.headers.is_empty() {
            spans = spans.with_headers(config.headers.clone());
            metrics = metrics.with_headers(config.headers.clone());
        }
        if let Some(timeout) = config.timeout {
            spans = spans.with_timeout(timeout);
            metrics = metrics.with_timeout(timeout);
        }
        let spans = spans.build().map_err(|source| Error::Exporter { source })?;
        let metrics = metrics.build().map_err(|source| Error::Exporter { source })?;
        let resource = resource(config);
        let tracer_provider = SdkTracerProvider::builder()
            .with_batch_exporter(spans)
            .with_resource(resource.clone())
            .build();
        let mut reader = PeriodicReader::builder(metrics);
        if let Some(interval) = config.metric_interval {
            reader = reader.with_interval(interval);
        }
        let meter_provider = SdkMeterProvider::builder()
            .with_reader(reader.build())
            .with_resource(resource)
            .build();
        if config.capture_content {
            patchbay_core::telemetry::set_capture_content(true);
        }
        Ok(Self {
            tracer_provider,
            meter_provider,
        })
    }

    /// A pipeline over providers the host built (any exporter; in-memory ones in tests).
    pub fn from_providers(tracer_provider: SdkTracerProvider, meter_provider: SdkMeterProvider) -> Self {
        Self {
            tracer_provider,
            meter_provider,
        }
    }

    /// The `tracing` layer: `tracing-opentelemetry` over this tracer (every span it sees becomes
    /// an OpenTelemetry span, `otel.name`, `otel.kind` and `otel.status_code` honoured) and the
    /// [`GenAiMetricsLayer`] over this meter. Add it to a subscriber with a filter of your own, or
    /// let [`install`](Self::install) do it.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let tracer = self.tracer_provider.tracer(SCOPE);
        let meter = self.meter_provider.meter(SCOPE);
        // Busy/idle tracking would read the clock at every enter and exit of a span, and a
        // call's span is entered at every poll of its stream: a third of the cost of reading a
        // stream, for two attributes the span's own times already give.
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_tracked_inactivity(false)
            .and_then(GenAiMetricsLayer::new(&meter))
    }

    /// Install [`layer`](Self::layer) as the process's global `tracing` subscriber, filtered by
    /// `RUST_LOG` (default [`DEFAULT_FILTER`]: patchbay's spans, without rmcp's own per-session
    /// spans). Fails if a global subscriber is already set: then add [`layer`](Self::layer) to
    /// yours instead.
    pub fn install(&self) -> Result<(), Error> {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
        tracing_subscriber::registry()
            .with(self.layer().with_filter(filter))
            .try_init()
            .map_err(|source| Error::SubscriberAlreadySet { source })
    }

    /// The tracer provider.
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.tracer_provider
    }

    /// The meter provider.
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.meter_provider
    }

    /// Export every finished span and the metrics so far, now.
    pub fn force_flush(&self) -> Result<(), Error> {
        let spans = self.tracer_provider.force_flush();
        let metrics = self.meter_provider.force_flush();
        spans.and(metrics).map_err(|source| Error::Flush { source })
    }

    /// Flush and stop both providers; later spans and metrics are dropped.
    pub fn shutdown(&self) -> Result<(), Error> {
        let spans = self.tracer_provider.shutdown();
        let metrics = self.meter_provider.shutdown();
        spans.and(metrics).map_err(|source| Error::Flush { source })
    }
}

/// The export's HTTP client: blocking reqwest (the batch exporters run on threads of their own)
/// on patchbay's TLS setup, redirects refused (headers may carry a key).
///
/// Built on a thread of its own: reqwest refuses to start a blocking client's runtime from
/// inside an async one (a host's `#[tokio::main]`).
fn http_client(config: &OtelConfig) -> Result<reqwest::blocking::Client, Error> {
    let timeout = config.timeout;
    let build = move || {
        let mut builder = reqwest::blocking::Client::builder()
            .tls_backend_preconfigured(patchbay_http::tls_config())
            .redirect(reqwest::redirect::Policy::none());
        if let Some(timeout) = timeout {
            builder = builder.timeout(timeout);
        }
        builder.build()
    };
    let built = std::thread::scope(|scope| scope.spawn(build).join());
    match built {
        Ok(client) => client.map_err(|source| Error::Client { source }),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// The SDK's default resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), with the
/// configured service name on top.
fn resource(config: &OtelConfig) -> Resource {
    let mut builder = Resource::builder();
    if let Some(name) = &config.service_name {
        builder = builder.with_service_name(name.clone());
    }
    builder.build()
}
