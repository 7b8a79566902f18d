//! Recording live traffic (`record_dir`): calls against the conformance mock are written in the
//! fixtures' layout, replay to the events of the live run, read as a fixture folder, and keep
//! no key.

use std::path::Path;

use patchbay_anthropic::{AnthropicConfig, AnthropicProvider};
use patchbay_conformance::RecordingExt;
use patchbay_conformance::fixtures::{assert_no_secret_below, manifest_in};
use patchbay_conformance::mock::anthropic::AnthropicWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_conformance::{FixtureRun, Recording, SCENARIO_MODEL, scenario};
use patchbay_core::ErrorKind;
use serde_json::json;

use crate::common::without_timings;

/// The key, also sent in a custom header: neither may reach a recorded file.
const KEY: &str = "sk-ant-recorded-0123456789";

fn recording_provider(url: &str, dir: &Path) -> AnthropicProvider {
    let config = AnthropicConfig::new(KEY)
        .with_base_url(url)
        .with_header("x-forwarded-credential", KEY)
        .with_record_dir(dir);
    AnthropicProvider::new(config).expect("a valid config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_calls_replay_to_the_events_of_the_live_run() {
    let text = scenario("text_only").expect("the scenario");
    let tool = scenario("one_tool_call").expect("the scenario");
    let server = MockServer::builder(AnthropicWire)
        .serve([text.script.turns[0].clone(), tool.script.turns[0].clone()].map(Serve::Turn))
        .start()
        .await
        .expect("mock starts");
    let dir = tempfile::tempdir().expect("a temp dir");
    let provider = recording_provider(&server.url(), dir.path());
    let live = [
        Recording::call_scenario(&provider, &text).await,
        Recording::call_scenario(&provider, &tool).await,
    ];
    for recording in &live {
        assert!(recording.error.is_none(), "{:?}", recording.error);
    }

    let entries = manifest_in(dir.path()).expect("the manifest parses");
    assert_eq!(entries.len(), 2, "{entries:?}");
    let expected_scenarios = ["text only", "single tool call; text + tool use"];
    for ((entry, live), scenario) in entries.iter().zip(&live).zip(expected_scenarios) {
        assert_eq!(entry.scenario, scenario, "{entry:?}");
        assert_eq!(entry.model, SCENARIO_MODEL, "{entry:?}");
        assert!(entry.local_path.starts_with("anthropic/recorded/"), "{entry:?}");
        assert!(
            entry.provenance.starts_with("recorded live by patchbay-anthropic "),
            "{entry:?}"
        );
        assert!(entry.notes.contains("HTTP 200"), "{entry:?}");
        let body = std::fs::read(dir.path().join(&entry.local_path)).expect("the body file");
        let replayed = crate::common::replay(&body);
        assert_eq!(replayed.len(), 1);
        assert!(replayed[0].error.is_none(), "{:?}", replayed[0].error);
        assert_eq!(without_timings(&replayed[0].events), live.without_timings());

        let request: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(&entry.source_path)).expect("the request file"))
                .expect("JSON");
        assert_eq!(request["body"]["model"], SCENARIO_MODEL);
        assert_eq!(request["headers"]["anthropic-version"], "2023-06-01");
        assert_eq!(
            request["removed_headers"],
            json!(["x-api-key", "x-forwarded-credential"])
        );
    }

    // The folder reads as a fixture folder (these recordings have no snapshots).
    let problems = FixtureRun::new(["anthropic"])
        .in_dir(dir.path())
        .without_snapshots()
        .at_least(2)
        .problems(|_, chunks| {
            crate::common::replay_chunks(chunks.iter().copied())
                .into_iter()
                .map(|r| Recording {
                    events: r.events,
                    error: r.error,
                })
                .collect()
        });
    assert!(problems.is_empty(), "{problems:#?}");
    assert_no_secret_below(dir.path(), KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_call_is_recorded_with_its_error_body() {
    let body = json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}).to_string();
    let server = MockServer::builder(AnthropicWire)
        .serve([Serve::status(429, body.clone(), Some(3))])
        .start()
        .await
        .expect("mock starts");
    let dir = tempfile::tempdir().expect("a temp dir");
    let provider = recording_provider(&server.url(), dir.path());
    let recording = Recording::call_scenario(&provider, &scenario("text_only").expect("the scenario")).await;
    assert_eq!(recording.error.as_ref().map(|e| e.kind()), Some(ErrorKind::RateLimited));
    let entries = manifest_in(dir.path()).expect("the manifest parses");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].scenario, "error:RateLimited");
    assert!(entries[0].local_path.ends_with(".json"), "{entries:?}");
    assert!(entries[0].notes.contains("HTTP 429"), "{entries:?}");
    let recorded = std::fs::read(dir.path().join(&entries[0].local_path)).expect("the error body");
    assert_eq!(recorded, body.as_bytes());
    assert_no_secret_below(dir.path(), KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_dir_that_cannot_be_written_leaves_the_call_unchanged() {
    let text = scenario("text_only").expect("the scenario");
    let server = MockServer::builder(AnthropicWire)
        .serve([text.script.turns[0].clone(), text.script.turns[0].clone()].map(Serve::Turn))
        .start()
        .await
        .expect("mock starts");
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("not-a-folder");
    std::fs::write(&file, b"in the way").expect("a file");
    let recorded = Recording::call_scenario(&recording_provider(&server.url(), &file), &text).await;
    let plain = AnthropicProvider::new(AnthropicConfig::new(KEY).with_base_url(server.url())).expect("a provider");
    let unrecorded = Recording::call_scenario(&plain, &text).await;
    assert!(recorded.error.is_none(), "{:?}", recorded.error);
    assert_eq!(recorded.without_timings(), unrecorded.without_timings());
    assert_eq!(std::fs::read(&file).expect("still a file"), b"in the way");
}

#[test]
fn record_dir_is_an_option_and_an_empty_one_turns_recording_off() {
    let config = AnthropicConfig::from_options(&json!({"record_dir": "/tmp/recordings"})).expect("valid");
    assert_eq!(config.record_dir(), Some(Path::new("/tmp/recordings")));
    let config = AnthropicConfig::from_options(&json!({"record_dir": ""})).expect("valid");
    assert_eq!(config.record_dir(), None);
    assert!(AnthropicConfig::from_options(&json!({"record_dir": 3})).is_err());
}
