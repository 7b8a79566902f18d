//! Every recorded OpenAI-family stream, through the translator without HTTP, with the
//! conformance crate's fixture checks: a snapshot per file, the lifecycle validator, and the
//! same events when the bytes are cut at random boundaries. None may end in an error.

use patchbay_conformance::{FixtureRun, Recording};
use patchbay_openrouter::translate::Translator;

use crate::common::{FAMILIES, framing};

#[test]
fn every_recorded_openai_family_stream_is_valid_snapshotted_and_split_invariant() {
    FixtureRun::new(FAMILIES).at_least(150).run(|path, chunks| {
        let (events, error) =
            patchbay_core::kit::translate(Translator::new(framing(path)), chunks.iter().copied()).into_parts();
        vec![Recording { events, error }]
    });
}

/// What `replay --family openai` prints is the same single response.
#[test]
fn replay_reads_each_recorded_stream_as_one_response() {
    for path in FAMILIES.into_iter().flat_map(patchbay_conformance::fixtures::files) {
        let bytes = std::fs::read(&path).expect("fixture readable");
        let replayed = patchbay_core::kit::replay(Translator::default, [&bytes[..]]);
        assert!(
            replayed.len() == 1 && replayed[0].error.is_none(),
            "{}: replay found {} responses",
            path.display(),
            replayed.len()
        );
    }
}
