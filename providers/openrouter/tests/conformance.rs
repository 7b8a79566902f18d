//! The shared scenarios against the provider talking to the OpenAI-wire mock server, with the
//! same goldens as every other provider: once with one write per SSE frame, once with writes
//! cut at random byte boundaries (the outcome must not change).

use std::sync::Arc;

use libtest_mimic::Arguments;
use patchbay_conformance::mock::openai::OpenAiWire;
use patchbay_conformance::mock::{Chunking, MockServer};
use patchbay_conformance::{Fixture, Target, trials};
use patchbay_core::{Capabilities, ErrorKind, ProviderError};
use patchbay_openrouter::{Dialect, OpenRouterConfig, OpenRouterProvider};

fn target(name: &str, chunking: Chunking) -> Target {
    let capabilities = Capabilities::none().with_streaming().with_reasoning().with_images();
    Target::new(name, capabilities, move |scenario| {
        let script = scenario.script.clone();
        // Tiny writes of a megabyte line cost minutes of HTTP framing in debug builds; the
        // translator's own split tests cut that line at every size.
        let chunking = match chunking {
            Chunking::Random { seed, .. } if scenario.name == "huge_line" => Chunking::Random { seed, max: 4096 },
            other => other,
        };
        async move {
            let server = MockServer::builder(OpenAiWire)
                .script(&script)
                .chunking(chunking)
                .start()
                .await
                .map_err(|e| ProviderError::new(ErrorKind::Transport, format!("mock server: {e}")))?;
            let config = OpenRouterConfig::new(server.url())
                .with_api_key("test-key")
                .with_dialect(Dialect::OpenRouter);
            let provider = OpenRouterProvider::new(config)?;
            Ok(Fixture::new(Arc::new(provider)).with_guard(server))
        }
    })
    .with_baseline_file(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance-baseline.toml"))
}

fn main() {
    let args = Arguments::from_args();
    let mut all = trials(&target("openrouter", Chunking::PerFrame));
    all.extend(trials(&target(
        "openrouter_random_chunks",
        Chunking::Random { seed: 7, max: 13 },
    )));
    libtest_mimic::run(&args, all).exit()
}
