//! The `OTEL_*` variables and what they turn on.

use std::collections::HashMap;

use patchbay_otel::{Error, OtelConfig};

fn from(vars: &[(&str, &str)]) -> Result<Option<OtelConfig>, Error> {
    let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    OtelConfig::from_vars(|name| vars.get(name).cloned())
}

#[test]
fn nothing_is_exported_without_an_endpoint_or_when_disabled() {
    assert!(from(&[]).expect("ok").is_none());
    assert!(from(&[("OTEL_SERVICE_NAME", "x")]).expect("ok").is_none());
    let disabled = from(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
        ("OTEL_SDK_DISABLED", "true"),
    ]);
    assert!(disabled.expect("ok").is_none());
    assert!(
        from(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces")])
            .expect("ok")
            .is_some()
    );
}

#[test]
fn a_protocol_other_than_http_protobuf_is_a_typed_error() {
    let grpc = from(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ]);
    assert!(
        matches!(grpc, Err(Error::UnsupportedProtocol { variable: "OTEL_EXPORTER_OTLP_PROTOCOL", ref protocol }) if protocol == "grpc"),
        "{grpc:?}"
    );
    let fine = from(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    ]);
    assert!(fine.expect("ok").is_some());
}

#[test]
fn content_capture_is_off_unless_the_variable_says_true() {
    let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
    let off = format!("{:?}", from(&[endpoint]).expect("ok").expect("some"));
    assert!(off.contains("capture_content: false"), "{off}");
    let on = from(&[endpoint, ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")]);
    assert!(format!("{:?}", on.expect("ok").expect("some")).contains("capture_content: true"));
}

#[test]
fn debug_shows_no_header_value_nor_url_credentials() {
    let config = OtelConfig::new("https://user:hunter2@collector.example/otlp")
        .with_header("authorization", "Bearer sk-otel-secret");
    let shown = format!("{config:?}");
    assert!(
        !shown.contains("sk-otel-secret") && !shown.contains("hunter2"),
        "{shown}"
    );
    assert!(shown.contains("authorization"), "{shown}");
}
