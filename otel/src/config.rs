//! What to export, where, and whether spans carry message content.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use crate::error::Error;

/// The variable that turns content capture on (`true`), as other GenAI instrumentations read it.
pub const CAPTURE_CONTENT_VAR: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Where and how to export: an OTLP/HTTP endpoint (protobuf bodies), its headers, the service
/// name, the metric export interval, and whether spans record message content.
///
/// [`OtelConfig::from_env`] reads the standard `OTEL_*` variables; the builder methods set the
/// same things in code (a value set in code wins over its variable). `Debug` never shows header
/// values: they often carry an API key.
///
/// ```
/// let config = patchbay_otel::OtelConfig::new("http://127.0.0.1:4318")
///     .with_header("x-api-key", "secret")
///     .with_service_name("my-agent");
/// assert!(!format!("{config:?}").contains("secret"));
/// ```
#[derive(Clone, Default)]
pub struct OtelConfig {
    pub(crate) endpoint: Option<String>,
    pub(crate) headers: HashMap<String, String>,
    pub(crate) service_name: Option<String>,
    pub(crate) metric_interval: Option<Duration>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) capture_content: bool,
}

impl fmt::Debug for OtelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut headers: Vec<&str> = self.headers.keys().map(String::as_str).collect();
        headers.sort_unstable();
        f.debug_struct("OtelConfig")
            .field(
                "endpoint",
                &self.endpoint.as_deref().map(patchbay_core::kit::redact_url),
            )
            .field("headers", &headers)
            .field("service_name", &self.service_name)
            .field("metric_interval", &self.metric_interval)
            .field("timeout", &self.timeout)
            .field("capture_content", &self.capture_content)
            .finish()
    }
}

impl OtelConfig {
    /// Export to the OTLP/HTTP collector at `endpoint` (its base URL: `/v1/traces` and
    /// `/v1/metrics` are appended, as for `OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: Some(endpoint.into()),
            ..Self::default()
        }
    }

    /// The configuration the `OTEL_*` variables describe, or `None` when nothing asks for an
    /// export: no `OTEL_EXPORTER_OTLP_ENDPOINT` (nor `_TRACES_`/`_METRICS_ENDPOINT`), or
    /// `OTEL_SDK_DISABLED=true`. The exporter itself reads the endpoints,
    /// `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_EXPORTER_OTLP_TIMEOUT` (and their per-signal
    /// forms); the SDK reads `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` and
    /// `OTEL_METRIC_EXPORT_INTERVAL`. `OTEL_EXPORTER_OTLP_PROTOCOL` must be `http/protobuf`
    /// when set (gRPC and JSON are not built in: [`Error::UnsupportedProtocol`]), and
    /// [`CAPTURE_CONTENT_VAR`]`=true` turns content capture on.
    pub fn from_env() -> Result<Option<Self>, Error> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) over any variable lookup (tests, a config file).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, Error> {
        let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|value| value.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let endpoints = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        ];
        if endpoints.iter().all(|name| set(name).is_none()) {
            return Ok(None);
        }
        for name in [
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        ] {
            if let Some(protocol) = set(name)
                && protocol.trim() != "http/protobuf"
            {
                return Err(Error::UnsupportedProtocol {
                    variable: name,
                    protocol,
                });
            }
        }
        let capture = set(CAPTURE_CONTENT_VAR).is_some_and(|value| value.trim().eq_ignore_ascii_case("true"));
        Ok(Some(Self {
            capture_content: capture,
            ..Self::default()
        }))
    }

    /// Send this header with every export (an API key, say); never shown by `Debug`.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// The `service.name` resource attribute (else `OTEL_SERVICE_NAME`, else the SDK's default).
    pub fn with_service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// How often metrics are exported (else `OTEL_METRIC_EXPORT_INTERVAL`, else 60 s).
    pub fn with_metric_interval(mut self, interval: Duration) -> Self {
        self.metric_interval = Some(interval);
        self
    }

    /// How long one export may take (else `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Record message content on spans (prompts, answers, tool arguments and results): off by
    /// default, since content may hold personal data.
    pub fn with_capture_content(mut self, on: bool) -> Self {
        self.capture_content = on;
        self
    }

    /// The URL of one signal's endpoint, when an endpoint was set in code.
    pub(crate) fn signal_url(&self, path: &str) -> Option<String> {
        self.endpoint
            .as_deref()
            .map(|base| format!("{}{path}", base.trim_end_matches('/')))
    }
}
