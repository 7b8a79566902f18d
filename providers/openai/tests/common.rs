//! Shared helpers: a provider against a mock server, a call collected.

use std::sync::Arc;

use patchbay_conformance::Recording;
use patchbay_conformance::mock::openai_responses::ResponsesWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_core::{Message, Provider, RequestContext, Signal, ToolSet};
use patchbay_openai::{OpenAiConfig, OpenAiProvider};

/// A provider pointed at a mock's URL (OpenAI's path layout under `/v1`).
pub(crate) fn provider(url: &str) -> Arc<OpenAiProvider> {
    let config = OpenAiConfig::new(format!("{url}/v1")).with_api_key("sk-test-key");
    Arc::new(OpenAiProvider::new(config).expect("provider builds"))
}

/// A mock serving `items` in order, and a provider pointed at it.
pub(crate) async fn mock(items: Vec<Serve>) -> (MockServer, Arc<OpenAiProvider>) {
    let server = MockServer::builder(ResponsesWire::new())
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
    Recording::call(provider, messages, tools, "gpt-5", &Signal::new(), context).await
}
