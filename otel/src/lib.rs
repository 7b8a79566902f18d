#![doc = include_str!("../README.md")]

mod config;
mod export;
mod metrics;

pub use config::{CAPTURE_CONTENT_VAR, OtelConfig};
pub use export::{DEFAULT_FILTER, Telemetry};
pub use metrics::GenAiMetricsLayer;

/// Re-exported so hosts build providers and exporters with the same versions.
pub use {opentelemetry, opentelemetry_sdk, tracing_opentelemetry};

/// What went wrong setting OpenTelemetry up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` (or a per-signal form) names a protocol not built in.
    #[error(
        "{variable}={protocol} is not supported: patchbay exports OTLP over HTTP with protobuf bodies (http/protobuf)"
    )]
    UnsupportedProtocol {
        /// The variable.
        variable: &'static str,
        /// Its value.
        protocol: String,
    },
    /// The OTLP exporter could not be built (an endpoint that is not a URL, say).
    #[error("cannot build the OTLP exporter")]
    Exporter {
        /// The exporter's error.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// The HTTP client for the export could not be built.
    #[error("cannot build the HTTP client of the OTLP exporter")]
    Client {
        /// reqwest's error.
        #[source]
        source: reqwest::Error,
    },
    /// A global `tracing` subscriber was already set.
    #[error("a global tracing subscriber is already set: add Telemetry::layer() to it instead")]
    SubscriberAlreadySet {
        /// tracing-subscriber's error.
        #[source]
        source: tracing_subscriber::util::TryInitError,
    },
    /// Flushing or shutting down the providers failed (the collector did not answer, say).
    #[error("flushing the OpenTelemetry exporters failed")]
    Flush {
        /// The SDK's error.
        #[source]
        source: opentelemetry_sdk::error::OTelSdkError,
    },
}

/// Export patchbay's spans and GenAI metrics when the `OTEL_*` variables ask for it: reads
/// [`OtelConfig::from_env`], starts the OTLP/HTTP pipeline and installs it as the global
/// `tracing` subscriber. `Ok(None)` when no endpoint is set (nothing is installed). Keep the
/// returned [`Telemetry`] alive until the program ends, and call
/// [`shutdown`](Telemetry::shutdown) before exiting so the last spans go out.
///
/// ```no_run
/// let telemetry = patchbay_otel::init_from_env().expect("OpenTelemetry config");
/// // ... run agents ...
/// if let Some(telemetry) = telemetry {
///     let _ = telemetry.shutdown();
/// }
/// ```
pub fn init_from_env() -> Result<Option<Telemetry>, Error> {
    let Some(config) = OtelConfig::from_env()? else {
        return Ok(None);
    };
    let telemetry = Telemetry::start(&config)?;
    telemetry.install()?;
    Ok(Some(telemetry))
}
