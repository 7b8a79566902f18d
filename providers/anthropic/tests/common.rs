//! Helpers shared by the test modules.

use std::path::PathBuf;
use std::sync::Arc;

use futures::StreamExt;
use patchbay_anthropic::{AnthropicConfig, AnthropicProvider};
use patchbay_conformance::Recording;
use patchbay_core::{Event, Metrics, Provider};

/// The recorded streams of the Anthropic family (inside the conformance crate).
pub(crate) fn fixtures_dir() -> PathBuf {
    patchbay_conformance::fixtures::family("anthropic")
}

/// Snapshot settings for `tests/snapshots/<folder>`, named by the snapshot name alone.
pub(crate) fn settings(folder: &str) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/snapshots")
            .join(folder),
    );
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings
}

/// A provider pointed at `url` with a test key.
pub(crate) fn provider(url: &str) -> Arc<AnthropicProvider> {
    let config = AnthropicConfig::new("sk-test-secret").with_base_url(url);
    Arc::new(AnthropicProvider::new(config).expect("a valid config"))
}

/// Collect a stream into a recording (events, then the error that ended it).
pub(crate) async fn record(provider: &dyn Provider, signal: &patchbay_core::Signal) -> Recording {
    let messages = [patchbay_core::Message::user("hi")];
    let mut recording = Recording::default();
    match provider
        .create_response(&messages, &patchbay_core::ToolSet::new(), "claude-test", signal, None)
        .await
    {
        Err(error) => recording.error = Some(error),
        Ok(mut stream) => {
            while let Some(item) = stream.next().await {
                match item {
                    Ok(event) => recording.events.push(event),
                    Err(error) => {
                        recording.error = Some(error);
                        break;
                    }
                }
            }
        }
    }
    recording
}

/// Events with timings zeroed, for comparing two runs.
pub(crate) fn without_timings(events: &[Event]) -> Vec<Event> {
    events
        .iter()
        .cloned()
        .map(|event| match event {
            Event::Finish { reason, usage, metrics } => Event::Finish {
                reason,
                usage,
                metrics: Metrics {
                    first_event_ms: None,
                    first_text_ms: None,
                    total_ms: 0,
                    ..metrics
                },
            },
            other => other,
        })
        .collect()
}
