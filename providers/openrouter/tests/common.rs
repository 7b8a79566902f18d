//! Shared helpers: fixture discovery, translation, event comparison.

use std::path::Path;
use std::sync::Arc;

use patchbay_conformance::mock::openai::{OpenAiWire, is_json_lines};
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_core::kit::Framing;
use patchbay_core::{Event, Metrics, ProviderError};
use patchbay_openrouter::translate::Translator;
use patchbay_openrouter::{Dialect, OpenRouterConfig, OpenRouterProvider};

/// The OpenAI-family fixture families.
pub(crate) const FAMILIES: [&str; 3] = ["openai-chat", "openai-compatible", "openrouter"];

/// The framing of a fixture file.
pub(crate) fn framing(path: &Path) -> Framing {
    if is_json_lines(path) {
        Framing::Lines
    } else {
        Framing::DataLines
    }
}

/// Translate a body given as chunks; `Finish` metrics are zeroed so runs compare equal.
pub(crate) fn translate<'a>(
    framing: Framing,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<Event>, Option<ProviderError>) {
    let (mut events, error) = patchbay_core::kit::translate(Translator::new(framing), chunks).into_parts();
    for event in &mut events {
        if let Event::Finish { metrics, .. } = event {
            // Timings vary from run to run; counts do not.
            *metrics = Metrics {
                first_event_ms: None,
                first_text_ms: None,
                total_ms: 0,
                ..*metrics
            };
        }
    }
    (events, error)
}

/// A provider pointed at a mock server speaking the OpenAI wire.
pub(crate) async fn mock(items: Vec<Serve>) -> (MockServer, Arc<OpenRouterProvider>) {
    let server = MockServer::builder(OpenAiWire)
        .serve(items)
        .start()
        .await
        .expect("mock server starts");
    let config = OpenRouterConfig::new(server.url())
        .with_api_key("test-key")
        .with_dialect(Dialect::OpenRouter);
    let provider = OpenRouterProvider::new(config).expect("provider builds");
    (server, Arc::new(provider))
}
