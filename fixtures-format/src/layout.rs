//! Where the files of a fixtures or recording folder go.
//!
//! ```text
//! DIR/MANIFEST.tsv                                  one line per file
//! DIR/<family>/<source>/<stem>.<ext>                a response body as received
//! DIR/requests/<family>/<source>/<stem>.json        the request of a live recording
//! ```
//!
//! Paths inside the folder (the manifest's `local_path` and `source_path`) are relative with
//! `/` separators on every platform.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The `<source>` folder live recordings go to, below their family's folder.
pub const DEFAULT_SOURCE: &str = "recorded";

/// The folder below a recording folder that holds the requests (`requests/<family>/<source>/`):
/// not a wire family, so readers that list `<family>/<source>/<file>` never see them.
pub const REQUESTS_DIR: &str = "requests";

/// The files of one recorded call, relative to the recording folder.
///
/// ```
/// use patchbay_fixtures::CallFiles;
/// let files = CallFiles::new("anthropic", "recorded", "20250102T030405Z_claude_7-1");
/// assert_eq!(files.body("sse"), "anthropic/recorded/20250102T030405Z_claude_7-1.sse");
/// assert_eq!(files.request(), "requests/anthropic/recorded/20250102T030405Z_claude_7-1.json");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFiles {
    family: String,
    source: String,
    stem: String,
}

impl CallFiles {
    /// The files named `stem` of a call in `<family>/<source>/`.
    pub fn new(family: impl Into<String>, source: impl Into<String>, stem: impl Into<String>) -> Self {
        Self {
            family: family.into(),
            source: source.into(),
            stem: stem.into(),
        }
    }

    /// The stem every file of the call shares ([`stem`]).
    pub fn stem(&self) -> &str {
        &self.stem
    }

    /// The response body: `<family>/<source>/<stem>.<extension>` (see [`body_extension`]).
    pub fn body(&self, extension: &str) -> String {
        format!("{}/{}/{}.{extension}", self.family, self.source, self.stem)
    }

    /// The request: `requests/<family>/<source>/<stem>.json`.
    pub fn request(&self) -> String {
        format!("{REQUESTS_DIR}/{}/{}/{}.json", self.family, self.source, self.stem)
    }
}

/// A relative path of the folder (`/` separators) as a path below `dir`.
pub fn path_in(dir: &Path, relative: &str) -> PathBuf {
    relative
        .split('/')
        .fold(dir.to_path_buf(), |path, part| path.join(part))
}

/// `path` relative to `dir`, with `/` between components (`anthropic/ai/x.sse`); a path outside
/// `dir` is shown whole.
pub fn relative_name(dir: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(dir).unwrap_or(path);
    relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Every file below a family folder (`<family_dir>/<source>/<file>`), sorted; a missing folder
/// is an empty list. Files directly in the family folder, and deeper ones, are not fixtures.
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

/// A time as RFC 3339 in UTC, to the second (`2025-01-02T03:04:05Z`): how a recording's notes
/// say when it was made.
pub fn utc_time(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

/// The stem of a recorded call's files: UTC time (compact, `20250102T030405Z`), the model
/// (characters other than letters, digits, `.`, `_` and `-` as `-`, at most 64 of them; `model`
/// when empty), the process id and `number`, a per-process counter, so calls at the same second
/// from one process or several never share a stem.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let stem = patchbay_fixtures::stem(UNIX_EPOCH + Duration::from_secs(1_735_787_045), "openai/gpt-4o", 3);
/// assert_eq!(stem, format!("20250102T030405Z_openai-gpt-4o_{}-3", std::process::id()));
/// ```
pub fn stem(time: SystemTime, model: &str, number: u64) -> String {
    let time: String = utc_time(time).chars().filter(|c| !matches!(c, '-' | ':')).collect();
    let model: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    let model = if model.is_empty() { "model".into() } else { model };
    format!("{time}_{model}_{}-{number}", std::process::id())
}

/// The file extension of a response body by its content type: `sse` for an event stream,
/// `json` for a JSON answer (a server that ignored `stream: true`, an error body), `jsonl` for
/// JSON lines; otherwise `sse` for a success and `txt` for an error.
pub fn body_extension(content_type: Option<&str>, success: bool) -> &'static str {
    let content_type = content_type.unwrap_or_default().to_ascii_lowercase();
    if content_type.contains("event-stream") {
        "sse"
    } else if content_type.contains("ndjson") || content_type.contains("jsonl") {
        "jsonl"
    } else if content_type.contains("json") {
        "json"
    } else if success {
        "sse"
    } else {
        "txt"
    }
}
