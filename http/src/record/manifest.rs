//! The files of a recording: stems, folders, the manifest line and its append.

use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// The manifest's columns, in order: the same as the shipped `conformance/fixtures/MANIFEST.tsv`
/// (`patchbay_conformance::fixtures::MANIFEST_COLUMNS`).
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

/// The manifest file of a recording folder.
pub const MANIFEST_FILE: &str = "MANIFEST.tsv";

/// The folder below the recording folder that holds the requests (`requests/<family>/<source>/`):
/// not a wire family, so fixture readers that list `<family>/<source>/<file>` never see them.
pub const REQUESTS_DIR: &str = "requests";

/// A time as RFC 3339 in UTC, to the second (`2025-01-02T03:04:05Z`).
pub(crate) fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

/// The stem of a call's files: UTC time (compact, `20250102T030405Z`), the model (characters
/// other than letters, digits, `.`, `_` and `-` as `-`, at most 64 of them), the process id and
/// a per-process counter, so calls at the same second from one process or several never share a
/// stem.
pub(crate) fn stem(time: SystemTime, model: &str, number: u64) -> String {
    let time: String = rfc3339(time).chars().filter(|c| !matches!(c, '-' | ':')).collect();
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

/// The file extension of a body by its content type: `sse` for an event stream, `json` for a
/// JSON answer (a server that ignored `stream: true`, an error body), `jsonl` for JSON lines;
/// otherwise `sse` for a success and `txt` for an error.
pub(crate) fn extension(content_type: Option<&str>, success: bool) -> &'static str {
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

/// One manifest line (with its newline): the cells in [`MANIFEST_COLUMNS`] order, tabs and
/// line breaks inside a cell turned into spaces.
pub(crate) fn line(cells: [&str; 11]) -> String {
    let mut line = cells
        .iter()
        .map(|cell| cell.replace(['\t', '\n', '\r'], " "))
        .collect::<Vec<_>>()
        .join("\t");
    line.push('\n');
    line
}

/// Appends `line` to the manifest at `path`, writing the header first when the file is new.
/// One `write_all` per call on a file opened for appending, so lines of concurrent writers (the
/// caller also holds the recorder's lock) never interleave.
pub(crate) fn append(path: &Path, line: &str) -> std::io::Result<()> {
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(mut file) => {
            let mut text = MANIFEST_COLUMNS.join("\t");
            text.push('\n');
            text.push_str(line);
            file.write_all(text.as_bytes())
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => std::fs::OpenOptions::new()
            .append(true)
            .open(path)?
            .write_all(line.as_bytes()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn a_stem_has_the_time_the_model_and_a_number() {
        let time = UNIX_EPOCH + Duration::from_secs(1_735_787_045);
        let stem = stem(time, "openai/gpt-4o mini", 3);
        assert!(stem.starts_with("20250102T030405Z_openai-gpt-4o-mini_"), "{stem}");
        assert!(stem.ends_with("-3"), "{stem}");
    }

    #[test]
    fn the_extension_follows_the_content_type() {
        assert_eq!(extension(Some("text/event-stream; charset=utf-8"), true), "sse");
        assert_eq!(extension(Some("application/json"), false), "json");
        assert_eq!(extension(Some("application/x-ndjson"), true), "jsonl");
        assert_eq!(extension(None, true), "sse");
        assert_eq!(extension(Some("text/html"), false), "txt");
    }

    #[test]
    fn a_line_keeps_eleven_cells_whatever_they_hold() {
        let line = line(["a", "b\tc", "d\ne", "", "", "", "", "", "", "", "n"]);
        assert_eq!(line.matches('\t').count(), 10);
        assert!(line.ends_with("n\n"));
    }
}
