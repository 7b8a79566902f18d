//! Every recorded stream under `conformance/fixtures/anthropic`, translated without HTTP: a
//! snapshot named after the file, the lifecycle validator, and the same events when the bytes
//! arrive split at random boundaries.

use std::path::{Path, PathBuf};

use patchbay_anthropic::replay::{Replayed, replay, replay_chunks};
use patchbay_conformance::{normalize, split_randomly};
use patchbay_core::{Event, Usage, validate};
use serde::Serialize;
use serde_json::Value;

use crate::common::{fixtures_dir, settings, without_timings};

fn files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&fixtures_dir(), &mut out);
    assert!(
        out.len() >= 80,
        "expected the recorded Anthropic fixtures, found {}",
        out.len()
    );
    out
}

/// `rig/anthropic__foo.sse` -> `rig__anthropic__foo.sse`.
fn snapshot_name(path: &Path) -> String {
    let relative = path.strip_prefix(fixtures_dir()).unwrap_or(path);
    relative.to_string_lossy().replace(['/', '\\'], "__")
}

#[derive(Serialize)]
struct ErrorSnapshot {
    kind: String,
    provider_code: Option<String>,
    message: String,
}

#[derive(Serialize)]
struct ResponseSnapshot {
    response_id: Option<String>,
    events: Vec<Value>,
    usage: Option<Usage>,
    error: Option<ErrorSnapshot>,
}

fn snapshot(replayed: &Replayed) -> ResponseSnapshot {
    let response_id = replayed.events.iter().find_map(|e| match e {
        Event::Started { response_id, .. } => response_id.clone(),
        _ => None,
    });
    let usage = replayed.events.iter().rev().find_map(|e| match e {
        Event::Usage(usage) => Some(*usage),
        _ => None,
    });
    ResponseSnapshot {
        response_id,
        events: normalize(&replayed.events, replayed.error.as_ref().map(|e| e.kind())).events,
        usage,
        error: replayed.error.as_ref().map(|e| ErrorSnapshot {
            kind: e.kind().to_string(),
            provider_code: e.facts().provider_code.clone(),
            message: e.message().to_string(),
        }),
    }
}

fn check_valid(name: &str, responses: &[Replayed]) {
    assert!(!responses.is_empty(), "{name}: no response");
    for (i, replayed) in responses.iter().enumerate() {
        let items = replayed.events.iter().map(Ok).chain(replayed.error.iter().map(Err));
        if let Err(violations) = validate(items) {
            let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
            panic!("{name}, response {i}: lifecycle violations:\n  {}", list.join("\n  "));
        }
    }
}

fn comparable(responses: &[Replayed]) -> Vec<(Vec<Event>, Option<String>)> {
    responses
        .iter()
        .map(|r| (without_timings(&r.events), r.error.as_ref().map(ToString::to_string)))
        .collect()
}

#[test]
fn every_fixture_matches_its_snapshot_and_passes_the_validator() {
    for path in files() {
        let name = snapshot_name(&path);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {name}: {e}"));
        let responses = replay(&bytes);
        check_valid(&name, &responses);
        let snapshots: Vec<ResponseSnapshot> = responses.iter().map(snapshot).collect();
        settings("fixtures").bind(|| insta::assert_json_snapshot!(name.clone(), snapshots));
    }
}

#[test]
fn every_fixture_gives_the_same_events_split_at_random_byte_boundaries() {
    for path in files() {
        let name = snapshot_name(&path);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {name}: {e}"));
        let whole = comparable(&replay(&bytes));
        for (seed, max) in [(1, 1), (2, 3), (3, 17), (4, 64), (5, 301), (6, 4096)] {
            let chunks = split_randomly(&bytes, seed, max);
            let split = replay_chunks(chunks.iter().map(Vec::as_slice));
            assert_eq!(comparable(&split), whole, "{name}: split with seed {seed}, max {max}");
        }
    }
}

#[test]
fn no_fixture_fails_except_the_known_broken_ones() {
    // Recordings that are broken on purpose (or truncated by their recorder) and why.
    let expected_errors = [
        // max_tokens cut the tool call's JSON and the block never stopped.
        "anthropic-sdk-python__incomplete_partial_json_response.txt",
        // A second message_start spliced into an unfinished message.
        "ai__spliced-message-start.chunks.txt",
    ];
    let mut failing = Vec::new();
    for path in files() {
        let name = snapshot_name(&path);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {name}: {e}"));
        if replay(&bytes).iter().any(|r| r.error.is_some()) {
            failing.push(name);
        }
    }
    failing.sort();
    let mut expected: Vec<String> = expected_errors.iter().map(ToString::to_string).collect();
    expected.sort();
    assert_eq!(failing, expected);
}
