//! What reading a manifest can fail with.

use std::path::PathBuf;

/// What went wrong reading a `MANIFEST.tsv`. Line and column numbers count from 1, the header
/// being line 1.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The manifest's path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The header line is not [`MANIFEST_COLUMNS`](crate::MANIFEST_COLUMNS).
    #[error(
        "MANIFEST.tsv header, column {column}: found {}, expected {}",
        shown(found.as_deref()),
        shown(*expected)
    )]
    Header {
        /// The first column that differs.
        column: usize,
        /// The header's cell there (`None`: the header ends before it).
        found: Option<String>,
        /// The column expected there (`None`: the header has too many columns).
        expected: Option<&'static str>,
    },
    /// A line ends before one of its columns.
    #[error("MANIFEST.tsv line {line}: no `{name}` column (column {column})")]
    MissingColumn {
        /// The line's number in the file.
        line: usize,
        /// The missing column's number.
        column: usize,
        /// Its name.
        name: &'static str,
    },
}

/// A cell for an error message: quoted, or `nothing`.
fn shown(cell: Option<&str>) -> String {
    cell.map_or_else(|| "nothing".to_string(), |cell| format!("`{cell}`"))
}
