//! [`run_fixtures`]: every recorded stream of a wire family through a provider's translator,
//! checked the same way for every provider, so no provider writes its own fixture test.
//!
//! For each file (`fixtures/<family>/<source>/<file>`, named `<family>__<source>__<file>`):
//! the translator turns the whole body into one [`Recording`] per response it holds; each must
//! pass the lifecycle validator; the responses are snapshotted (normalized events, response id,
//! last usage, error) under the calling crate's `tests/snapshots/fixtures/`; and the body cut at
//! random byte boundaries (six seeds, writes of 1 byte to 4 KiB) must give the same events. Only
//! the files named with [`FixtureRun::expect_errors`] may end in an error.

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use patchbay_core::{Event, Usage};
use serde::Serialize;
use serde_json::Value;

use crate::fixtures::{files, files_in, relative_name};
use crate::normalize::{Recording, normalize, without_timings};
use crate::snapshot::{callers_snapshots, settings_at, split_randomly};

/// The splits every body is replayed with: (seed, largest write).
const SPLITS: [(u64, usize); 6] = [(1, 1), (2, 3), (3, 17), (4, 64), (5, 301), (6, 4096)];

/// Checks the recorded streams of one or more families: each file translated whole and split
/// at random byte boundaries, validated and snapshotted (see [`run_fixtures`]).
///
/// ```no_run
/// use patchbay_conformance::{FixtureRun, Recording};
/// # fn my_translate(chunks: &[&[u8]]) -> Recording { Recording::default() }
/// FixtureRun::new(["anthropic"])
///     .expect_errors(["ai__spliced-message-start.chunks.txt"])
///     .at_least(80)
///     .run(|_path, chunks| vec![my_translate(chunks)]);
/// ```
#[derive(Debug, Clone)]
pub struct FixtureRun {
    families: Vec<String>,
    root: Option<PathBuf>,
    expected_errors: BTreeSet<String>,
    at_least: usize,
    snapshot_dir: Option<PathBuf>,
    snapshots: bool,
}

/// One response of a recorded file as its snapshot shows it.
#[derive(Serialize)]
struct ResponseSnapshot {
    response_id: Option<String>,
    events: Vec<Value>,
    usage: Option<Usage>,
    error: Option<ErrorSnapshot>,
}

#[derive(Serialize)]
struct ErrorSnapshot {
    kind: String,
    provider_code: Option<String>,
    message: String,
}

/// Checks every recorded stream of one family through a provider's translator, and panics
/// listing every problem. For each file (`fixtures/<family>/<source>/<file>`, named
/// `<family>__<source>__<file>`): the translator turns the whole body into one [`Recording`]
/// per response it holds; each must pass the lifecycle validator; the responses are
/// snapshotted (normalized events, response id, last usage, error) under the calling crate's
/// `tests/snapshots/fixtures/`; and the body cut at random byte boundaries (six seeds, writes
/// of 1 byte to 4 KiB) must give the same events. No file may end in an error (see
/// [`FixtureRun::expect_errors`] for recordings broken on purpose).
pub fn run_fixtures(family: &str, translate: impl Fn(&Path, &[&[u8]]) -> Vec<Recording>) {
    FixtureRun::new([family]).run(translate);
}

impl FixtureRun {
    /// The recorded files of these families (`anthropic`, `openai-chat`, `openrouter`...).
    pub fn new<S: Into<String>>(families: impl IntoIterator<Item = S>) -> Self {
        Self {
            families: families.into_iter().map(Into::into).collect(),
            root: None,
            expected_errors: BTreeSet::new(),
            at_least: 1,
            snapshot_dir: None,
            snapshots: true,
        }
    }

    /// Read the families from folders below `root` (`<root>/<family>/<source>/<file>`), laid
    /// out like the shipped fixtures, instead of this crate's: a third party's own recordings.
    pub fn in_dir(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = Some(root.into());
        self
    }

    /// Files (by the part of the name below the family, `<source>__<file>`) that are broken on
    /// purpose and must end in an error; every other file must not, and each listed one must.
    pub fn expect_errors<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.expected_errors = names.into_iter().map(Into::into).collect();
        self
    }

    /// Fail unless at least `count` files are found (a moved folder must not pass empty).
    pub fn at_least(mut self, count: usize) -> Self {
        self.at_least = count.max(1);
        self
    }

    /// Where the snapshots go (default: `$CARGO_MANIFEST_DIR/tests/snapshots/fixtures` of the
    /// crate whose tests run).
    pub fn snapshot_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.snapshot_dir = Some(dir.into());
        self
    }

    /// Check everything but the snapshots: for recordings that have none (a provider's own
    /// recording folder, `PATCHBAY_RECORD_DIR`), whose events a test compares itself.
    pub fn without_snapshots(mut self) -> Self {
        self.snapshots = false;
        self
    }

    /// Checks every file with `translate` (its path, and its body as chunks, in; one recording
    /// per response out) and panics with the list of problems, if any.
    pub fn run(self, translate: impl Fn(&Path, &[&[u8]]) -> Vec<Recording>) {
        let problems = self.problems(translate);
        assert!(
            problems.is_empty(),
            "{} problems:\n{}",
            problems.len(),
            problems.join("\n")
        );
    }

    /// Like [`run`](Self::run), but returns the problems instead of panicking.
    pub fn problems(self, translate: impl Fn(&Path, &[&[u8]]) -> Vec<Recording>) -> Vec<String> {
        let paths = self.paths();
        let mut problems = Vec::new();
        if paths.len() < self.at_least {
            problems.push(format!(
                "expected at least {} recorded files of {:?}, found {}",
                self.at_least,
                self.families,
                paths.len()
            ));
        }
        let settings = match self.snapshots.then(|| self.snapshot_settings()).transpose() {
            Ok(settings) => settings,
            Err(problem) => return vec![problem],
        };
        let mut failing = BTreeSet::new();
        for path in &paths {
            let name = self.snapshot_name(path);
            let bytes = match std::fs::read(path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    problems.push(format!("{name}: cannot read: {e}"));
                    continue;
                }
            };
            let whole = translate(path, &[&bytes]);
            problems.extend(whole_problems(&name, &whole, settings.as_ref()));
            if whole.iter().any(|r| r.error.is_some()) {
                failing.insert(name.split_once("__").map_or(name.clone(), |(_, rest)| rest.to_owned()));
            }
            problems.extend(split_problems(&name, path, &bytes, &whole, &translate));
        }
        problems.extend(self.expected_error_problems(&failing));
        problems
    }

    /// Every recorded file of the families, sorted.
    fn paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = match &self.root {
            Some(root) => self
                .families
                .iter()
                .flat_map(|family| files_in(&root.join(family)))
                .collect(),
            None => self.families.iter().flat_map(|family| files(family)).collect(),
        };
        paths.sort();
        paths
    }

    /// A file's snapshot name: its path below the root, folders joined by `__`.
    fn snapshot_name(&self, path: &Path) -> String {
        match &self.root {
            Some(root) => patchbay_fixtures::relative_name(root, path).replace('/', "__"),
            None => relative_name(path).replace('/', "__"),
        }
    }

    /// Files that ended in an error without being listed, and listed files that did not.
    fn expected_error_problems(&self, failing: &BTreeSet<String>) -> Vec<String> {
        let mut problems = Vec::new();
        for unexpected in failing.difference(&self.expected_errors) {
            problems.push(format!(
                "{unexpected}: ends in an error but is not listed in expect_errors"
            ));
        }
        for missing in self.expected_errors.difference(failing) {
            problems.push(format!("{missing}: listed in expect_errors but ends without one"));
        }
        problems
    }

    fn snapshot_settings(&self) -> Result<insta::Settings, String> {
        let dir = match &self.snapshot_dir {
            Some(dir) => dir.clone(),
            None => callers_snapshots("fixtures")
                .ok_or("CARGO_MANIFEST_DIR is not set: run under cargo test or give snapshot_dir")?,
        };
        Ok(settings_at(dir))
    }
}

/// The problems of a file translated whole: no response, lifecycle violations, a snapshot that
/// differs (when snapshots are compared).
fn whole_problems(name: &str, whole: &[Recording], settings: Option<&insta::Settings>) -> Vec<String> {
    let mut problems = Vec::new();
    if whole.is_empty() {
        problems.push(format!("{name}: the translator found no response"));
    }
    for (i, recording) in whole.iter().enumerate() {
        if let Err(violations) = recording.validate() {
            let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
            problems.push(format!(
                "{name}, response {i}: lifecycle violations: {}",
                list.join("; ")
            ));
        }
    }
    let Some(settings) = settings else {
        return problems;
    };
    let snapshots: Vec<ResponseSnapshot> = whole.iter().map(snapshot).collect();
    let compared = std::panic::catch_unwind(AssertUnwindSafe(|| {
        settings.bind(|| insta::assert_json_snapshot!(name.to_owned(), snapshots));
    }));
    if compared.is_err() {
        problems.push(format!("{name}: differs from its snapshot (see above)"));
    }
    problems
}

/// The splits of [`SPLITS`] whose events differ from the whole file's.
fn split_problems(
    name: &str,
    path: &Path,
    bytes: &[u8],
    whole: &[Recording],
    translate: &impl Fn(&Path, &[&[u8]]) -> Vec<Recording>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let expected = comparable(whole);
    for (seed, max) in SPLITS {
        let chunks = split_randomly(bytes, seed, max);
        let slices: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        if comparable(&translate(path, &slices)) != expected {
            problems.push(format!(
                "{name}: other events when split (seed {seed}, writes up to {max} bytes)"
            ));
        }
    }
    problems
}

fn snapshot(recording: &Recording) -> ResponseSnapshot {
    let response_id = recording.events.iter().find_map(|e| match e {
        Event::Started { response_id, .. } => response_id.clone(),
        _ => None,
    });
    let usage = recording.events.iter().rev().find_map(|e| match e {
        Event::Usage(usage) => Some(*usage),
        _ => None,
    });
    ResponseSnapshot {
        response_id,
        events: normalize(&recording.events, recording.error.as_ref().map(|e| e.kind())).events,
        usage,
        error: recording.error.as_ref().map(|e| ErrorSnapshot {
            kind: e.kind().to_string(),
            provider_code: e.facts().provider_code.clone(),
            message: e.message().to_string(),
        }),
    }
}

/// What must not change when a body is split: the events (timings aside) and the error.
fn comparable(recordings: &[Recording]) -> Vec<(Vec<Event>, Option<String>)> {
    recordings
        .iter()
        .map(|r| (without_timings(&r.events), r.error.as_ref().map(ToString::to_string)))
        .collect()
}
