//! The shared scenarios against the Anthropic provider, served by the mock Messages server:
//! once with one write per SSE frame, once with writes cut at random byte boundaries. Both
//! must match the same shared goldens the scripted provider produced. (The real Claude Code CLI
//! against the same mock is the conformance crate's `cli` test: it tests the mock, not this
//! crate.)
//!
//! The scenario model says no Claude version, so `structured_output` goes through the forced
//! tool, and the mock answers the way a model forced to use it does
//! ([`AnthropicToolOutputWire`]). A second target, `anthropic-native`, asks the native way
//! (`output_config.format`, the `structured_output: native` option) and gets the JSON as plain
//! text; it runs once per frame.

use std::sync::Arc;

use patchbay_anthropic::{AnthropicConfig, AnthropicProvider, NAME, StructuredOutput};
use patchbay_conformance::mock::Chunking;
use patchbay_conformance::mock::anthropic::{AnthropicToolOutputWire, AnthropicWire};
use patchbay_conformance::{Fixture, Target, trials};

fn main() {
    let baseline = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance-baseline.toml");
    let target = Target::new(NAME, |case| async move {
        let server = match &case.scenario.output_schema {
            Some(schema) => case.mock(AnthropicToolOutputWire::new(schema.name.clone())).await?,
            None => case.mock(AnthropicWire).await?,
        };
        let config = AnthropicConfig::new("test-key").with_base_url(server.url());
        let provider = Arc::new(AnthropicProvider::new(config)?);
        Ok(Fixture::new(provider).with_guard(server))
    })
    .with_chunkings([Chunking::PerFrame, Chunking::Random { seed: 7, max: 23 }])
    .with_baseline_file(baseline);
    let native = Target::new("anthropic-native", |case| async move {
        let server = case.mock(AnthropicWire).await?;
        let config = AnthropicConfig::new("test-key")
            .with_base_url(server.url())
            .with_structured_output(StructuredOutput::Native);
        let provider = Arc::new(AnthropicProvider::new(config)?);
        Ok(Fixture::new(provider).with_guard(server))
    })
    .with_baseline_file(baseline);
    let args = libtest_mimic::Arguments::from_args();
    let mut all = trials(&target);
    all.extend(trials(&native));
    libtest_mimic::run(&args, all).exit()
}
