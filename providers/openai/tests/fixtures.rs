//! Every recorded stream under `conformance/fixtures/openai-responses` (other projects'
//! recordings: the AI SDK's, pydantic-ai's, rust-genai's), through the translator without HTTP,
//! with the conformance crate's fixture checks: a snapshot per file, the lifecycle validator,
//! and the same events when the bytes arrive split at random boundaries.

use patchbay_conformance::FixtureRun;
use patchbay_core::ErrorKind;

fn replay(chunks: &[&[u8]]) -> Vec<patchbay_conformance::Recording> {
    patchbay_core::kit::replay(patchbay_openai::Translator::default, chunks.iter().copied())
}

#[test]
fn every_recorded_responses_stream_is_valid_snapshotted_and_split_invariant() {
    FixtureRun::new(["openai-responses"])
        .at_least(31)
        .expect_errors([
            // Streams that end in an `error` event or `response.failed`, as recorded.
            "ai__openai-error-null-code.1.chunks.txt",
            "ai__openai-error.1.chunks.txt",
            "ai__openai-response-failed-only.1.chunks.txt",
            "rust-genai__openai_resp__stream_error__response_000.sse",
            "rust-genai__openai_resp__stream_error_after_delta__response_000.sse",
        ])
        .run(|_, chunks| replay(chunks));
}

/// What the recorded failures say, typed by their codes.
#[test]
fn recorded_failures_are_typed_by_their_codes() {
    let root = patchbay_conformance::fixtures::root().join("openai-responses");
    let kind = |name: &str| {
        let body = std::fs::read(root.join(name)).expect("the recording");
        let mut recordings = replay(&[&body]);
        recordings
            .remove(0)
            .error
            .map(|error| (error.kind(), error.facts().provider_code.clone()))
    };
    assert_eq!(
        kind("ai/openai-error.1.chunks.txt"),
        Some((ErrorKind::Auth, Some("insufficient_quota".into())))
    );
    assert_eq!(
        kind("ai/openai-response-failed-only.1.chunks.txt"),
        Some((ErrorKind::RateLimited, Some("rate_limit_exceeded".into())))
    );
}
