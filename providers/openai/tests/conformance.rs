//! The shared scenarios against the OpenAI Responses provider talking to the Responses wire mock, with the
//! same goldens as every other provider: once with one write per SSE frame, once with writes
//! cut at random byte boundaries (the outcome must not change).

use std::sync::Arc;

use libtest_mimic::Arguments;
use patchbay_conformance::mock::openai_responses::ResponsesWire;
use patchbay_conformance::mock::{Chunking, MockServer};
use patchbay_conformance::{Fixture, Target, trials};
use patchbay_core::{ErrorKind, ProviderError};
use patchbay_openai::{NAME, OpenAiConfig, OpenAiProvider};

fn target() -> Target {
    Target::new(NAME, |case| async move {
        // Tiny writes of a megabyte line cost minutes of HTTP framing in debug builds; the
        // translator's own split tests cut that line at every size.
        let chunking = match case.chunking {
            Chunking::Random { seed, .. } if case.scenario.name == "huge_line" => Chunking::Random { seed, max: 4096 },
            other => other,
        };
        let server = MockServer::builder(ResponsesWire::new())
            .script(&case.scenario.script)
            .chunking(chunking)
            .start()
            .await
            .map_err(|e| ProviderError::new(ErrorKind::Transport, format!("mock server: {e}")))?;
        let config = OpenAiConfig::new(format!("{}/v1", server.url())).with_api_key("test-key");
        let provider = OpenAiProvider::new(config)?;
        Ok(Fixture::new(Arc::new(provider)).with_guard(server))
    })
    .with_chunkings([Chunking::PerFrame, Chunking::Random { seed: 7, max: 17 }])
    .with_baseline_file(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance-baseline.toml"))
}

fn main() {
    let args = Arguments::from_args();
    libtest_mimic::run(&args, trials(&target())).exit()
}
