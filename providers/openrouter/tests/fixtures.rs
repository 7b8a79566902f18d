//! Every recorded OpenAI-family stream: translated without HTTP, valid per the lifecycle
//! validator, snapshotted (normalized, named after the file), and unchanged when the bytes are
//! cut at random boundaries.

use patchbay_conformance::{Recording, split_randomly};

use crate::common::{fixture_files, fixture_name, framing, translate};

fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/fixtures"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings
}

#[test]
fn every_fixture_is_valid_snapshotted_and_split_invariant() {
    let files = fixture_files();
    assert!(
        files.len() >= 150,
        "expected the recorded OpenAI-family fixtures, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let name = fixture_name(path);
        let bytes = std::fs::read(path).expect("fixture readable");
        let framing = framing(path);
        let (events, error) = translate(framing, [&bytes[..]]);
        let recording = Recording {
            events: events.clone(),
            error,
        };
        if let Err(violations) = recording.validate() {
            failures.push(format!("{name}: {violations:?}"));
        }
        if let Some(error) = &recording.error {
            failures.push(format!("{name}: recorded stream ended with an error: {error}"));
        }
        settings().bind(|| insta::assert_json_snapshot!(name.clone(), recording.outcome()));
        // What `replay --family openai` prints: the same single response.
        let replayed = patchbay_openrouter::translate::replay(&bytes);
        if replayed.len() != 1 || replayed[0].error.is_some() || replayed[0].events.len() != events.len() {
            failures.push(format!("{name}: replay found {} responses", replayed.len()));
        }
        for seed in 0..6u64 {
            let max = [1, 2, 7, 64, 512, 4096][seed as usize];
            let chunks = split_randomly(&bytes, seed, max);
            let (split_events, split_error) = translate(framing, chunks.iter().map(Vec::as_slice));
            if split_events != events || split_error.map(|e| e.kind()) != recording.error.as_ref().map(|e| e.kind()) {
                failures.push(format!("{name}: events differ when split (seed {seed}, max {max})"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
