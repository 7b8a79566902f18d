//! `MANIFEST.tsv`: one header line of [`MANIFEST_COLUMNS`], then one tab-separated line per
//! recorded file ([`ManifestEntry`]).

use std::io::Write;
use std::path::Path;

use crate::error::Error;

/// The manifest's columns, in order: the header line of every `MANIFEST.tsv`.
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

/// The manifest file of a fixtures or recording folder.
pub const MANIFEST_FILE: &str = "MANIFEST.tsv";

/// One line of `MANIFEST.tsv`: where a recorded file came from and under which licence. A live
/// recording leaves `source_repo`, `commit` and `license` empty (the recording is yours) and
/// names its request file in `source_path`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestEntry {
    /// The path below the fixtures folder (`anthropic/recorded/<stem>.sse`).
    pub local_path: String,
    /// The public repository it was copied from (`owner/name`).
    pub source_repo: String,
    /// The file in that repository (`#interaction=N` for cassettes); for a live recording, its
    /// request file below the folder.
    pub source_path: String,
    /// The commit it was copied at.
    pub commit: String,
    /// The licence of the source repository (SPDX).
    pub license: String,
    /// What the stream shows, as detected when it was recorded ([`crate::detect_scenario`]).
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

impl ManifestEntry {
    /// The cells in [`MANIFEST_COLUMNS`] order.
    pub fn cells(&self) -> [&str; 11] {
        [
            &self.local_path,
            &self.source_repo,
            &self.source_path,
            &self.commit,
            &self.license,
            &self.scenario,
            &self.format,
            &self.provenance,
            &self.server,
            &self.model,
            &self.notes,
        ]
    }

    /// The entry as a manifest line, newline included: the cells in [`MANIFEST_COLUMNS`] order
    /// joined by tabs, each tab and line break inside a cell turned into a space (so the line
    /// always has eleven cells).
    ///
    /// ```
    /// use patchbay_fixtures::ManifestEntry;
    /// let entry = ManifestEntry { local_path: "anthropic/x.sse".into(), notes: "a\tb".into(), ..Default::default() };
    /// assert_eq!(entry.to_line(), "anthropic/x.sse\t\t\t\t\t\t\t\t\t\ta b\n");
    /// ```
    pub fn to_line(&self) -> String {
        let mut line = self
            .cells()
            .iter()
            .map(|cell| cell.replace(['\t', '\n', '\r'], " "))
            .collect::<Vec<_>>()
            .join("\t");
        line.push('\n');
        line
    }

    /// Parses one line (its trailing newline, if any, is ignored); `number` is its line number
    /// in the file, for the error. The `notes` cell may be absent; cells after it are ignored.
    pub fn parse_line(line: &str, number: usize) -> Result<Self, Error> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let mut cells = line.split('\t').map(str::to_string);
        let mut column = 0;
        let mut next = |name: &'static str| {
            column += 1;
            cells.next().ok_or(Error::MissingColumn {
                line: number,
                column,
                name,
            })
        };
        Ok(Self {
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
        })
    }
}

/// The header line, newline included.
pub fn header_line() -> String {
    let mut header = MANIFEST_COLUMNS.join("\t");
    header.push('\n');
    header
}

/// Parses the text of a manifest: the header line, then one line per file (blank lines are
/// skipped). A wrong header or a short line is an error naming the line and the column.
///
/// ```
/// use patchbay_fixtures::{Error, ManifestEntry, header_line, parse_manifest};
/// let entry = ManifestEntry { local_path: "openrouter/recorded/a.sse".into(), ..Default::default() };
/// let text = header_line() + &entry.to_line();
/// assert_eq!(parse_manifest(&text).unwrap(), [entry]);
/// let short = parse_manifest(&(header_line() + "a\tb\n")).unwrap_err();
/// assert!(matches!(short, Error::MissingColumn { line: 2, column: 3, name: "source_path" }));
/// ```
pub fn parse_manifest(text: &str) -> Result<Vec<ManifestEntry>, Error> {
    let mut lines = text.lines();
    check_header(lines.next().unwrap_or_default())?;
    lines
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| ManifestEntry::parse_line(line, index + 2))
        .collect()
}

/// Reads and parses the `MANIFEST.tsv` of a folder: the shipped fixtures, a provider's recording
/// folder (`PATCHBAY_RECORD_DIR`), or a third party's fixtures.
pub fn read_manifest(dir: &Path) -> Result<Vec<ManifestEntry>, Error> {
    let path = dir.join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Read { path, source })?;
    parse_manifest(&text)
}

/// Appends `line` (one or more rendered lines, [`ManifestEntry::to_line`]) to the manifest at
/// `path`, writing the header first when the file is new (created with `create_new`, so of two
/// writers only one writes it). One `write_all` per call on a file opened for appending: lines
/// of writers that also serialize their calls never interleave.
pub fn append(path: &Path, line: &str) -> std::io::Result<()> {
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(mut file) => file.write_all((header_line() + line).as_bytes()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => std::fs::OpenOptions::new()
            .append(true)
            .open(path)?
            .write_all(line.as_bytes()),
        Err(error) => Err(error),
    }
}

/// `Ok` when `header` is the [`MANIFEST_COLUMNS`], else the first column that differs.
fn check_header(header: &str) -> Result<(), Error> {
    let found: Vec<&str> = header.split('\t').collect();
    let differs = (0..found.len().max(MANIFEST_COLUMNS.len()))
        .find(|&i| found.get(i).copied() != MANIFEST_COLUMNS.get(i).copied());
    match differs {
        None => Ok(()),
        Some(i) => Err(Error::Header {
            column: i + 1,
            found: found.get(i).map(|cell| (*cell).to_string()),
            expected: MANIFEST_COLUMNS.get(i).copied(),
        }),
    }
}
