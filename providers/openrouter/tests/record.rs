//! Recording live traffic (`record_dir`): calls against the conformance mock are written in the
//! fixtures' layout (the family of the dialect), replay to the events of the live run, read as a
//! fixture folder, and keep no key.

use std::path::Path;

use patchbay_conformance::RecordingExt;
use patchbay_conformance::fixtures::{assert_no_secret_below, manifest_in};
use patchbay_conformance::mock::openai::OpenAiWire;
use patchbay_conformance::mock::{MockServer, Serve};
use patchbay_conformance::{FixtureRun, Recording, SCENARIO_MODEL, scenario, without_timings};
use patchbay_core::ErrorKind;
use patchbay_core::kit::Framing;
use patchbay_openrouter::translate::Translator;
use patchbay_openrouter::{Dialect, OpenRouterConfig, OpenRouterProvider};
use serde_json::json;

/// The key, also sent in a custom header: neither may reach a recorded file.
const KEY: &str = "sk-or-recorded-0123456789";

fn recording_provider(url: &str, dir: &Path, dialect: Dialect) -> OpenRouterProvider {
    let config = OpenRouterConfig::new(url)
        .with_api_key(KEY)
        .with_dialect(dialect)
        .with_header("x-upstream-token", KEY)
        .with_record_dir(dir);
    OpenRouterProvider::new(config).expect("a valid config")
}

async fn mock(serve: impl IntoIterator<Item = Serve>) -> MockServer {
    MockServer::builder(OpenAiWire)
        .serve(serve)
        .start()
        .await
        .expect("mock starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_calls_replay_to_the_events_of_the_live_run() {
    let text = scenario("text_only").expect("the scenario");
    let tools = scenario("parallel_tool_calls").expect("the scenario");
    let server = mock([text.script.turns[0].clone(), tools.script.turns[0].clone()].map(Serve::Turn)).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let provider = recording_provider(&server.url(), dir.path(), Dialect::OpenRouter);
    let live = [
        Recording::call_scenario(&provider, &text).await,
        Recording::call_scenario(&provider, &tools).await,
    ];
    for recording in &live {
        assert!(recording.error.is_none(), "{:?}", recording.error);
    }

    let entries = manifest_in(dir.path()).expect("the manifest parses");
    assert_eq!(entries.len(), 2, "{entries:?}");
    for ((entry, live), scenario) in entries.iter().zip(&live).zip(["text only", "parallel tool calls"]) {
        assert_eq!(entry.scenario, scenario, "{entry:?}");
        assert_eq!(entry.model, SCENARIO_MODEL, "{entry:?}");
        assert!(entry.local_path.starts_with("openrouter/recorded/"), "{entry:?}");
        assert!(
            entry.provenance.starts_with("recorded live by patchbay-openrouter "),
            "{entry:?}"
        );
        let body = std::fs::read(dir.path().join(&entry.local_path)).expect("the body file");
        let replayed = patchbay_core::kit::replay(Translator::default, [&body[..]]);
        assert_eq!(replayed.len(), 1);
        assert!(replayed[0].error.is_none(), "{:?}", replayed[0].error);
        assert_eq!(without_timings(&replayed[0].events), live.without_timings());

        let request: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(&entry.source_path)).expect("the request file"))
                .expect("JSON");
        assert_eq!(request["body"]["model"], SCENARIO_MODEL);
        assert_eq!(request["body"]["stream"], true);
        assert!(request["headers"].get("authorization").is_none(), "{request}");
    }

    // The folder reads as a fixture folder (these recordings have no snapshots).
    let problems = FixtureRun::new(["openrouter"])
        .in_dir(dir.path())
        .without_snapshots()
        .at_least(2)
        .problems(|_, chunks| {
            let (events, error) =
                patchbay_core::kit::translate(Translator::new(Framing::DataLines), chunks.iter().copied()).into_parts();
            vec![Recording { events, error }]
        });
    assert!(problems.is_empty(), "{problems:#?}");
    assert_no_secret_below(dir.path(), KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_dialect_records_into_its_fixture_family() {
    let text = scenario("text_only").expect("the scenario");
    let server = mock([text.script.turns[0].clone(), text.script.turns[0].clone()].map(Serve::Turn)).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    for dialect in [Dialect::Generic, Dialect::OpenAi] {
        let recording = Recording::call_scenario(&recording_provider(&server.url(), dir.path(), dialect), &text).await;
        assert!(recording.error.is_none(), "{:?}", recording.error);
    }
    let entries = manifest_in(dir.path()).expect("the manifest parses");
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert!(
        entries[0].local_path.starts_with("openai-compatible/recorded/"),
        "{entries:?}"
    );
    assert!(
        entries[1].local_path.starts_with("openai-chat/recorded/"),
        "{entries:?}"
    );
    assert_no_secret_below(dir.path(), KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_call_is_recorded_with_its_error_body() {
    let body = r#"{"error":{"message":"slow down","type":"rate_limit_exceeded","code":"rate_limit_exceeded"}}"#;
    let server = mock([Serve::status(429, body, Some(3))]).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let provider = recording_provider(&server.url(), dir.path(), Dialect::OpenRouter);
    let recording = Recording::call_scenario(&provider, &scenario("text_only").expect("the scenario")).await;
    assert_eq!(recording.error.as_ref().map(|e| e.kind()), Some(ErrorKind::RateLimited));
    let entries = manifest_in(dir.path()).expect("the manifest parses");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].scenario, "error:RateLimited");
    assert!(entries[0].local_path.ends_with(".json"), "{entries:?}");
    let recorded = std::fs::read(dir.path().join(&entries[0].local_path)).expect("the error body");
    assert_eq!(recorded, body.as_bytes());
    assert_no_secret_below(dir.path(), KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_dir_that_cannot_be_written_leaves_the_call_unchanged() {
    let text = scenario("text_only").expect("the scenario");
    let server = mock([text.script.turns[0].clone(), text.script.turns[0].clone()].map(Serve::Turn)).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("not-a-folder");
    std::fs::write(&file, b"in the way").expect("a file");
    let recorded =
        Recording::call_scenario(&recording_provider(&server.url(), &file, Dialect::OpenRouter), &text).await;
    let plain = OpenRouterProvider::new(
        OpenRouterConfig::new(server.url())
            .with_api_key(KEY)
            .with_dialect(Dialect::OpenRouter),
    )
    .expect("a provider");
    let unrecorded = Recording::call_scenario(&plain, &text).await;
    assert!(recorded.error.is_none(), "{:?}", recorded.error);
    assert_eq!(recorded.without_timings(), unrecorded.without_timings());
    assert_eq!(std::fs::read(&file).expect("still a file"), b"in the way");
}

#[test]
fn record_dir_is_an_option_and_an_empty_one_turns_recording_off() {
    let options = json!({"base_url": "http://127.0.0.1:1/v1", "record_dir": "/tmp/recordings"});
    let config = OpenRouterConfig::from_options(&options).expect("valid");
    assert_eq!(config.record_dir(), Some(Path::new("/tmp/recordings")));
    let options = json!({"base_url": "http://127.0.0.1:1/v1", "record_dir": ""});
    assert_eq!(
        OpenRouterConfig::from_options(&options).expect("valid").record_dir(),
        None
    );
}
