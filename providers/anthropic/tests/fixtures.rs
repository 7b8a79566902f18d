//! Every recorded stream under `conformance/fixtures/anthropic`, through the translator without
//! HTTP, with the conformance crate's fixture checks: a snapshot per file, the lifecycle
//! validator, and the same events when the bytes arrive split at random boundaries.

use crate::common::replay_chunks;
use patchbay_conformance::{FixtureRun, Recording};

#[test]
fn every_recorded_anthropic_stream_is_valid_snapshotted_and_split_invariant() {
    FixtureRun::new(["anthropic"])
        .at_least(80)
        .expect_errors([
            // max_tokens cut the tool call's JSON and the block never stopped.
            "anthropic-sdk-python__incomplete_partial_json_response.txt",
            // A second message_start spliced into an unfinished message.
            "ai__spliced-message-start.chunks.txt",
        ])
        .run(|_, chunks| {
            replay_chunks(chunks.iter().copied())
                .into_iter()
                .map(|r| Recording {
                    events: r.events,
                    error: r.error,
                })
                .collect()
        });
}
