//! Recording live traffic (`record_dir`) on the fake CLI: each call's stdout lines become a
//! transcript in the fixtures' layout with a manifest line, the fake CLI replays that transcript
//! to the same events, the folder reads as a fixture folder, and no key reaches a file.

use std::path::Path;
use std::time::Duration;

use patchbay_claude_agent::{ClaudeAgentConfig, ClaudeAgentProvider, Translator};
use patchbay_conformance::RecordingExt;
use patchbay_conformance::fixtures::{assert_no_secret_below, manifest_in};
use patchbay_conformance::{FixtureRun, Recording, SCENARIO_MODEL, scenario};
use serde_json::{Value, json};

use crate::support;

/// A key in the CLI's environment: no recorded file may show it, even when the CLI prints it.
const KEY: &str = "sk-ant-claude-recorded-0123456789";

/// The fake CLI replaying `transcript`, its state in `state`, the key in its environment.
fn config(transcript: &Path, state: &Path) -> ClaudeAgentConfig {
    ClaudeAgentConfig::new()
        .with_cli_path(support::fake_cli())
        .with_env("FAKE_CLAUDE_TRANSCRIPT", transcript.display().to_string())
        .with_env("FAKE_CLAUDE_STATE", state.display().to_string())
        .with_env("ANTHROPIC_API_KEY", KEY)
        .with_session_markers(false)
        .with_stop_grace(Duration::from_millis(300))
}

/// One call of scenario `name` through `config`.
async fn call(config: ClaudeAgentConfig, name: &str) -> Recording {
    let provider = ClaudeAgentProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    let scenario = scenario(name).unwrap_or_else(|| panic!("no scenario {name}"));
    Recording::call_scenario(&provider, &scenario).await
}

/// The line translator over a whole transcript, as the run loop feeds it.
fn translate(chunks: &[&[u8]]) -> Vec<Recording> {
    let body = chunks.concat();
    let mut translator = Translator::new(SCENARIO_MODEL, "host").with_session_marker(None);
    let mut recording = Recording::default();
    for line in body.split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let pushed = translator.push_value(&value);
        recording.events.extend(std::iter::from_fn(|| translator.next_event()));
        if let Err(error) = pushed {
            recording.error = Some(error);
            return vec![recording];
        }
        if translator.is_done() {
            return vec![recording];
        }
    }
    recording.error = translator.finish().err();
    recording.events.extend(std::iter::from_fn(|| translator.next_event()));
    vec![recording]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_run_replays_through_the_fake_cli_to_the_same_events() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cases = [
        ("text_only", "text only"),
        ("one_tool_call", "single tool call; text + tool use"),
    ];
    let mut live = Vec::new();
    for (name, _) in cases {
        let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let recorded = call(
            config(&support::transcript(name), state.path()).with_record_dir(dir.path()),
            name,
        )
        .await;
        assert!(recorded.error.is_none(), "{name}: {:?}", recorded.error);
        live.push(recorded);
    }
    let entries = manifest_in(dir.path()).expect("the manifest parses");
    assert_eq!(entries.len(), 2, "{entries:?}");
    for ((entry, live), (name, scenario)) in entries.iter().zip(&live).zip(cases) {
        assert_eq!(entry.scenario, scenario, "{entry:?}");
        assert!(entry.local_path.starts_with("claude-agent/recorded/"), "{entry:?}");
        assert!(entry.local_path.ends_with(".jsonl"), "{entry:?}");
        assert!(
            entry.provenance.starts_with("recorded live by patchbay-claude-agent "),
            "{entry:?}"
        );
        assert_eq!(entry.server, "claude CLI");
        assert!(
            entry.notes.contains(&format!("requested model {SCENARIO_MODEL}")),
            "{entry:?}"
        );

        // The recorded transcript, replayed by the fake CLI, gives the live run's events.
        let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let replayed = call(config(&dir.path().join(&entry.local_path), state.path()), name).await;
        assert!(replayed.error.is_none(), "{name}: {:?}", replayed.error);
        assert_eq!(replayed.without_timings(), live.without_timings(), "{name}");
    }

    // The folder reads as a fixture folder (these recordings have no snapshots).
    let problems = FixtureRun::new(["claude-agent"])
        .in_dir(dir.path())
        .without_snapshots()
        .at_least(2)
        .problems(|_, chunks| translate(chunks));
    assert!(problems.is_empty(), "{problems:#?}");
    assert_no_secret_below(dir.path(), KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_cli_prints_is_not_recorded() {
    let work = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let transcript = work.path().join("echo.jsonl");
    let text = std::fs::read_to_string(support::transcript("text_only")).unwrap_or_default();
    std::fs::write(&transcript, text.replace("Hello!", KEY)).unwrap_or_else(|e| panic!("{e}"));
    let dir = work.path().join("recordings");
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let recorded = call(config(&transcript, state.path()).with_record_dir(&dir), "text_only").await;
    assert!(recorded.text().contains(KEY), "the call itself is unchanged");
    let entries = manifest_in(&dir).expect("the manifest parses");
    let body = std::fs::read_to_string(dir.join(&entries[0].local_path)).unwrap_or_default();
    assert!(body.contains("[redacted]"), "{body}");
    assert_no_secret_below(&dir, KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_stdout_still_appends_beside_a_record_dir() {
    let work = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let stdout = work.path().join("stdout.jsonl");
    let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = config(&support::transcript("text_only"), state.path())
        .with_record_stdout(&stdout)
        .with_record_dir(work.path().join("recordings"));
    let recorded = call(config, "text_only").await;
    assert!(recorded.error.is_none(), "{:?}", recorded.error);
    let entries = manifest_in(&work.path().join("recordings")).expect("the manifest parses");
    let transcript = std::fs::read(work.path().join("recordings").join(&entries[0].local_path)).unwrap_or_default();
    assert_eq!(std::fs::read(&stdout).unwrap_or_default(), transcript);
}

#[test]
fn record_dir_is_an_option_and_an_empty_one_turns_recording_off() {
    let config =
        ClaudeAgentConfig::from_options(&json!({"record_dir": "/tmp/recordings"})).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.record_dir(), Some(Path::new("/tmp/recordings")));
    let config = ClaudeAgentConfig::from_options(&json!({"record_dir": ""})).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.record_dir(), None);
}
