//! What can go wrong setting OpenTelemetry up.

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
