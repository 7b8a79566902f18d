//! The shared scenarios against the Anthropic provider, served by the mock Messages server:
//! once with one write per SSE frame, once with writes cut at random byte boundaries. Both
//! must match the same shared goldens the scripted provider produced. Also the real Claude Code
//! CLI against the same mock (`cli.rs`), ignored with the reason when the CLI is not installed.

mod cli;

use std::sync::Arc;

use patchbay_anthropic::{AnthropicConfig, AnthropicProvider};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{Chunking, MockServer};
use patchbay_conformance::peers;
use patchbay_conformance::{Fixture, Target, trials};
use patchbay_core::{Capabilities, ProviderError};

fn target(name: &str, chunking: Chunking) -> Target {
    let caps = Capabilities::none().with_streaming().with_reasoning().with_images();
    Target::new(name, caps, move |scenario| {
        let script = scenario.script.clone();
        async move {
            let server = MockServer::builder(AnthropicWire)
                .script(&script)
                .chunking(chunking)
                .start()
                .await
                .map_err(|e| ProviderError::config("cannot start the mock server").with_source(e))?;
            let config = AnthropicConfig::new("test-key").with_base_url(server.url());
            let provider = Arc::new(AnthropicProvider::new(config)?);
            Ok(Fixture::new(provider).with_guard(server))
        }
    })
    .with_baseline_file(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance-baseline.toml"))
}

fn main() {
    let mut all = trials(&target("anthropic", Chunking::PerFrame));
    all.extend(trials(&target(
        "anthropic-random-chunks",
        Chunking::Random { seed: 7, max: 23 },
    )));
    let claude = peers::claude_code_cli();
    all.push(peers::async_trial(
        "cli::the_claude_code_cli_reads_the_mock_wire",
        &[&claude],
        cli::the_claude_code_cli_reads_the_mock_wire,
    ));
    peers::run(all)
}
