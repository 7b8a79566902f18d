//! The recorded wire fixtures shipped inside this crate (`fixtures/<family>/<source>/<file>`),
//! with their manifest. Tests of every provider read them from here, never from outside the
//! repository, so a clone of the project alone (or this crate from a registry) has them.

use std::path::{Path, PathBuf};

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

/// Every recorded file below a family folder laid out like the shipped ones
/// (`<folder>/<source>/<file>`), sorted; a missing folder is an empty list.
pub fn files_in(family_dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(sources) = std::fs::read_dir(family_dir) else {
        return files;
    };
    for source in sources.flatten() {
        let Ok(entries) = std::fs::read_dir(source.path()) else {
            continue;
        };
        files.extend(
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.is_file()),
        );
    }
    files.sort();
    files
}

/// A fixture's path relative to [`root`] with `/` between components (`anthropic/ai/x.sse`).
pub fn relative_name(path: &Path) -> String {
    let relative = path.strip_prefix(root()).unwrap_or(path);
    relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// One line of `MANIFEST.tsv`: where a recorded file came from and under which licence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    /// The path below the fixtures folder.
    pub local_path: String,
    /// The public repository it was copied from (`owner/name`).
    pub source_repo: String,
    /// The file in that repository (`#interaction=N` for cassettes).
    pub source_path: String,
    /// The commit it was copied at.
    pub commit: String,
    /// The licence of the source repository (SPDX).
    pub license: String,
    /// What the stream shows, as detected when it was recorded.
    pub scenario: String,
    /// Its framing.
    pub format: String,
    /// Real recording or hand-written.
    pub provenance: String,
    /// The server that produced it.
    pub server: String,
    /// The model that answered.
    pub model: String,
    /// Anything else worth knowing.
    pub notes: String,
}

/// The manifest's columns, in order.
pub const MANIFEST_COLUMNS: [&str; 11] = [
    "local_path",
    "source_repo",
    "source_path",
    "commit",
    "license",
    "scenario",
    "format",
    "provenance",
    "server",
    "model",
    "notes",
];

/// Read and parse `MANIFEST.tsv`; a wrong header or a short line is an error naming the line.
pub fn manifest() -> Result<Vec<ManifestEntry>, String> {
    manifest_in(&root())
}

/// Read and parse the `MANIFEST.tsv` of a folder laid out like this one: a provider's recording
/// folder (`PATCHBAY_RECORD_DIR`), or a third party's fixtures.
pub fn manifest_in(dir: &Path) -> Result<Vec<ManifestEntry>, String> {
    let path = dir.join("MANIFEST.tsv");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_manifest(&text)
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

/// Parse the text of a manifest (the header line, then one tab-separated line per file).
pub fn parse_manifest(text: &str) -> Result<Vec<ManifestEntry>, String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    if header != MANIFEST_COLUMNS {
        return Err(format!(
            "MANIFEST.tsv header is {header:?}, expected {MANIFEST_COLUMNS:?}"
        ));
    }
    let mut entries = Vec::new();
    for (number, line) in lines.enumerate().filter(|(_, line)| !line.trim().is_empty()) {
        let mut cells = line.split('\t').map(str::to_string);
        let mut next = |column: &str| {
            cells
                .next()
                .ok_or_else(|| format!("MANIFEST.tsv line {}: no `{column}` column", number + 2))
        };
        entries.push(ManifestEntry {
            local_path: next("local_path")?,
            source_repo: next("source_repo")?,
            source_path: next("source_path")?,
            commit: next("commit")?,
            license: next("license")?,
            scenario: next("scenario")?,
            format: next("format")?,
            provenance: next("provenance")?,
            server: next("server")?,
            model: next("model")?,
            notes: next("notes").unwrap_or_default(),
        });
    }
    Ok(entries)
}
