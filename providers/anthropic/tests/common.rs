//! Helpers shared by the test modules.

use std::path::PathBuf;
use std::sync::Arc;

use patchbay_anthropic::{AnthropicConfig, AnthropicProvider};
use patchbay_conformance::Recording;
use patchbay_core::Provider;

/// The recorded streams of the Anthropic family (inside the conformance crate).
pub(crate) fn fixtures_dir() -> PathBuf {
    patchbay_conformance::fixtures::family("anthropic")
}

/// Snapshot settings for `tests/snapshots/<folder>`, named by the snapshot name alone.
pub(crate) fn settings(folder: &str) -> insta::Settings {
    patchbay_conformance::settings_at(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/snapshots")
            .join(folder),
    )
}

/// A provider pointed at `url` with a test key.
pub(crate) fn provider(url: &str) -> Arc<AnthropicProvider> {
    let config = AnthropicConfig::new("sk-test-secret").with_base_url(url);
    Arc::new(AnthropicProvider::new(config).expect("a valid config"))
}

/// One call with a short conversation, collected (events, then the error that ended it).
pub(crate) async fn record(provider: &dyn Provider, signal: &patchbay_core::Signal) -> Recording {
    let messages = [patchbay_core::Message::user("hi")];
    Recording::call(
        provider,
        &messages,
        &patchbay_core::ToolSet::new(),
        "claude-test",
        signal,
        None,
    )
    .await
}

pub(crate) use patchbay_conformance::without_timings;

/// A recorded body through core's generic replay with this crate's wire: one recording per
/// response.
pub(crate) fn replay(body: &[u8]) -> Vec<patchbay_core::kit::Recording> {
    replay_chunks([body])
}

/// [`replay`] fed in chunks cut anywhere.
pub(crate) fn replay_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<patchbay_core::kit::Recording> {
    patchbay_core::kit::replay(patchbay_anthropic::Translator::new, chunks)
}
