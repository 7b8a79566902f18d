//! The recorded wire fixtures shipped inside this crate (`fixtures/<family>/<source>/<file>`),
//! with their manifest. Tests of every provider read them from here, never from outside the
//! repository, so a clone of the project alone (or this crate from a registry) has them.
//!
//! The format itself (the layout, `MANIFEST.tsv`'s columns and lines) is
//! [`patchbay_fixtures`]'s, the one the recorder writes; its manifest items are re-exported here.

use std::path::{Path, PathBuf};

pub use patchbay_fixtures::{Error, MANIFEST_COLUMNS, ManifestEntry, files_in, parse_manifest};

/// Reads and parses the `MANIFEST.tsv` of a folder laid out like the shipped fixtures: a
/// provider's recording folder (`PATCHBAY_RECORD_DIR`), or a third party's fixtures.
pub use patchbay_fixtures::read_manifest as manifest_in;

/// The fixtures folder of this crate.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The folder of one wire family (`anthropic`, `openai-chat`, `openai-compatible`,
/// `openrouter`).
pub fn family(name: &str) -> PathBuf {
    root().join(name)
}

/// Every recorded file of a family (`<family>/<source>/<file>`), sorted. An unknown family is
/// an empty list.
pub fn files(family_name: &str) -> Vec<PathBuf> {
    files_in(&family(family_name))
}

/// A fixture's path relative to [`root`] with `/` between components (`anthropic/ai/x.sse`).
pub fn relative_name(path: &Path) -> String {
    patchbay_fixtures::relative_name(&root(), path)
}

/// Read and parse the shipped `MANIFEST.tsv`; a wrong header or a short line is an error naming
/// the line and the column.
pub fn manifest() -> Result<Vec<ManifestEntry>, Error> {
    manifest_in(&root())
}

/// Every file below `dir`, at any depth, sorted; a missing folder is an empty list.
pub fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for path in entries.flatten().map(|entry| entry.path()) {
        if path.is_dir() {
            found.extend(files_below(&path));
        } else {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// Panics unless `dir` holds files and none of them holds `secret` anywhere in its bytes: what
/// a recording test asserts of an API key.
pub fn assert_no_secret_below(dir: &Path, secret: &str) {
    let files = files_below(dir);
    assert!(!files.is_empty(), "no file below {}", dir.display());
    let holding: Vec<&PathBuf> = files
        .iter()
        .filter(|file| {
            std::fs::read(file).is_ok_and(|bytes| bytes.windows(secret.len()).any(|w| w == secret.as_bytes()))
        })
        .collect();
    assert!(holding.is_empty(), "these files hold the secret: {holding:?}");
}
