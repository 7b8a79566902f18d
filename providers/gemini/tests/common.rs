//! Shared helpers: a provider against a mock server, a call collected.

use std::sync::Arc;

use patchbay_conformance::Recording;
use patchbay_conformance::mock::gemini::GeminiWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_core::{Message, Provider, RequestContext, Signal, ToolSet};
use patchbay_gemini::{GeminiConfig, GeminiProvider};

/// A provider pointed at a mock's URL (the Gemini API's path layout under `/v1beta`).
pub(crate) fn provider(url: &str) -> Arc<GeminiProvider> {
    let config = GeminiConfig::new(format!("{url}/v1beta")).with_api_key("AIza-test-key");
    Arc::new(GeminiProvider::new(config).expect("provider builds"))
}

/// A mock serving `items` in order, and a provider pointed at it.
pub(crate) async fn mock(items: Vec<Serve>) -> (MockServer, Arc<GeminiProvider>) {
    let server = MockServer::builder(GeminiWire)
        .serve(items)
        .start()
        .await
        .expect("mock starts");
    let provider = provider(&server.url());
    (server, provider)
}

/// One call, collected.
pub(crate) async fn call(
    provider: &dyn Provider,
    messages: &[Message],
    tools: &ToolSet,
    context: Option<&RequestContext>,
) -> Recording {
    Recording::call(
        provider,
        messages,
        tools,
        "gemini-3-pro-preview",
        &Signal::new(),
        context,
    )
    .await
}

/// A recorded body, cut in chunks, as one or more recordings: an error body (a JSON object with
/// `error` and no candidates) through the wire's HTTP error mapping with the status its `code`
/// names; a whole JSON object (`generateContent`) through `Wire::whole_body`; anything else
/// (SSE, JSON lines, a JSON array stream) through `kit::replay`. (`FixtureRun` compares them
/// without timings itself.)
pub(crate) fn replay_recorded(chunks: &[&[u8]]) -> Vec<Recording> {
    use patchbay_core::kit::{ErrorResponse, Wire};
    use patchbay_gemini::Translator;
    let body = chunks.concat();
    let whole: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
    match whole {
        Some(value) if value.get("error").is_some() && value.get("candidates").is_none() => {
            let status = value["error"]["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(500);
            let headers = reqwest::header::HeaderMap::new();
            let error = Translator::default().error_response(ErrorResponse {
                status,
                headers: &headers,
                body: &body,
            });
            vec![Recording {
                events: Vec::new(),
                error: Some(error),
            }]
        }
        Some(serde_json::Value::Object(_)) => {
            let mut wire = Translator::default();
            let result = wire.whole_body(&body);
            let mut recording = Recording::default();
            while let Some(event) = wire.next_event() {
                recording.events.push(event);
            }
            recording.error = result.err();
            vec![recording]
        }
        _ => patchbay_core::kit::replay(Translator::default, chunks.iter().copied()),
    }
}
