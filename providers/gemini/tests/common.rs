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
