#![doc = include_str!("../README.md")]

mod config;
mod error;
mod export;
mod metrics;

pub use config::{CAPTURE_CONTENT_VAR, OtelConfig};
pub use error::Error;
pub use export::{DEFAULT_FILTER, Telemetry};
pub use metrics::GenAiMetricsLayer;

/// Re-exported so hosts build providers and exporters with the same versions.
pub use {opentelemetry, opentelemetry_sdk, tracing_opentelemetry};

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
