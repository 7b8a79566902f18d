//! Every recorded stream under `conformance/fixtures/gemini` (other projects' recordings: the AI
//! SDK's, rig's, rust-genai's, llm-gemini's), through the translator without HTTP, with the
//! conformance crate's fixture checks: a snapshot per file, the lifecycle validator, and the
//! same events when the bytes arrive split at random boundaries.

use patchbay_conformance::FixtureRun;

use crate::common::replay_recorded;

#[test]
fn every_recorded_gemini_stream_is_valid_snapshotted_and_split_invariant() {
    FixtureRun::new(["gemini"])
        .at_least(51)
        .expect_errors([
            // Error bodies, recorded as the API answered them.
            "ai__google-429-retry-info.json",
            "ai__issue-8943-gemini-2.5-flash-error.json",
            "rig__gemini__agent_driver__provider_rejection.json",
            // One usage-only chunk cut from a longer stream by its source: no finish reason.
            "ai__google-usage-raw-live.chunks.txt",
        ])
        .run(|_, chunks| replay_recorded(chunks));
}

/// What the error bodies among the recordings say, typed.
#[test]
fn recorded_error_bodies_are_typed_with_their_details() {
    use patchbay_core::ErrorKind;
    let root = patchbay_conformance::fixtures::root().join("gemini");
    let read = |name: &str| std::fs::read(root.join(name)).expect("the recording");
    let quota = replay_recorded(&[&read("ai/google-429-retry-info.json")]).remove(0);
    let error = quota.error.expect("an error");
    assert_eq!(
        (error.kind(), error.status()),
        (ErrorKind::RateLimited, Some(429)),
        "{error:?}"
    );
    assert!(error.retry_after().is_some(), "{error:?}");
    let invalid = replay_recorded(&[&read("ai/issue-8943-gemini-2.5-flash-error.json")]).remove(0);
    assert_eq!(invalid.error.map(|e| e.kind()), Some(ErrorKind::InvalidRequest));
    let events: Vec<_> = [quota.events, invalid.events].concat();
    assert!(events.is_empty(), "an error body has no events: {events:?}");
}
