//! A call recorded live (`record_dir`) replays through the `replay` command to the events of
//! the live run.

mod support;

use std::path::Path;

use patchbay_anthropic::{AnthropicConfig, AnthropicProvider};
use patchbay_conformance::RecordingExt;
use patchbay_conformance::fixtures::manifest_in;
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::openai::OpenAiWire;
use patchbay_conformance::mock::{MockServer, Serve, WireFormat};
use patchbay_conformance::{Recording, normalize, scenario};
use patchbay_core::Provider;
use patchbay_openrouter::{Dialect, OpenRouterConfig, OpenRouterProvider};

/// Runs the first turn of `one_tool_call` through `provider` (recording into `dir`), then
/// replays the recorded body with `--family family`: the same normalized events, then a valid
/// verdict.
async fn record_and_replay(provider: &dyn Provider, dir: &Path, family: &str) {
    let scenario = scenario("one_tool_call").expect("the scenario");
    let live = Recording::call_scenario(provider, &scenario).await;
    assert!(live.error.is_none(), "{:?}", live.error);
    let entries = manifest_in(dir).expect("the manifest parses");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].scenario, "single tool call; text + tool use");

    let (ok, mut lines) = support::replay(family, &dir.join(&entries[0].local_path));
    assert!(ok, "{lines:?}");
    let verdict = lines.pop().expect("a verdict");
    assert_eq!(verdict["verdict"], "valid", "{verdict}");
    assert_eq!(lines, normalize(&live.events, None).events);
}

async fn mock(wire: impl WireFormat) -> MockServer {
    let scenario = scenario("one_tool_call").expect("the scenario");
    MockServer::builder(wire)
        .serve([Serve::Turn(scenario.script.turns[0].clone())])
        .start()
        .await
        .expect("mock starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_anthropic_call_replays_to_the_live_events() {
    let server = mock(AnthropicWire).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = AnthropicConfig::new("sk-ant-replay-test")
        .with_base_url(server.url())
        .with_record_dir(dir.path());
    let provider = AnthropicProvider::new(config).expect("a provider");
    record_and_replay(&provider, dir.path(), "anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_openrouter_call_replays_to_the_live_events() {
    let server = mock(OpenAiWire).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = OpenRouterConfig::new(server.url())
        .with_api_key("sk-or-replay-test")
        .with_dialect(Dialect::OpenRouter)
        .with_record_dir(dir.path());
    let provider = OpenRouterProvider::new(config).expect("a provider");
    record_and_replay(&provider, dir.path(), "openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_gemini_call_replays_to_the_live_events() {
    let server = mock(patchbay_conformance::mock::gemini::GeminiWire).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = patchbay_gemini::GeminiConfig::new(format!("{}/v1beta", server.url()))
        .with_api_key("AIza-replay-test")
        .with_record_dir(dir.path());
    let provider = patchbay_gemini::GeminiProvider::new(config).expect("a provider");
    record_and_replay(&provider, dir.path(), "gemini").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_openai_responses_call_replays_to_the_live_events() {
    let server = mock(patchbay_conformance::mock::openai_responses::ResponsesWire::new()).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = patchbay_openai::OpenAiConfig::new(format!("{}/v1", server.url()))
        .with_api_key("sk-replay-test")
        .with_record_dir(dir.path());
    let provider = patchbay_openai::OpenAiProvider::new(config).expect("a provider");
    record_and_replay(&provider, dir.path(), "openai-responses").await;
}
