//! The manifest: one header, lines that keep eleven cells, errors that name the line and column.

use patchbay_fixtures::{
    Error, MANIFEST_COLUMNS, MANIFEST_FILE, ManifestEntry, append, header_line, parse_manifest, read_manifest,
};

fn entry() -> ManifestEntry {
    ManifestEntry {
        local_path: "anthropic/recorded/a.sse".into(),
        source_path: "requests/anthropic/recorded/a.json".into(),
        scenario: "single tool call; text + tool use".into(),
        format: "response body as received (HTTP 200, text/event-stream)".into(),
        provenance: "recorded live by patchbay-test 1.0".into(),
        server: "127.0.0.1:8080".into(),
        model: "claude-test".into(),
        notes: "recorded 2025-01-02T03:04:05Z; requested model claude-test".into(),
        ..Default::default()
    }
}

#[test]
fn a_written_line_parses_back_to_the_same_entry() {
    let text = header_line() + &entry().to_line() + &entry().to_line();
    assert_eq!(parse_manifest(&text).expect("parses"), [entry(), entry()]);
    assert_eq!(
        ManifestEntry::parse_line(&entry().to_line(), 2).expect("parses"),
        entry()
    );
}

#[test]
fn a_line_keeps_eleven_cells_whatever_they_hold() {
    let cells = ["a", "b\tc", "d\ne", "", "", "", "", "", "", "", "n"].map(String::from);
    let [
        local_path,
        source_repo,
        source_path,
        commit,
        license,
        scenario,
        format,
        provenance,
        server,
        model,
        notes,
    ] = cells;
    let held = ManifestEntry {
        local_path,
        source_repo,
        source_path,
        commit,
        license,
        scenario,
        format,
        provenance,
        server,
        model,
        notes,
    };
    let line = held.to_line();
    assert_eq!(line.matches('\t').count(), 10);
    assert!(line.ends_with("n\n"));
    let back = ManifestEntry::parse_line(&line, 2).expect("parses");
    assert_eq!((back.source_repo.as_str(), back.source_path.as_str()), ("b c", "d e"));
}

#[test]
fn the_header_is_the_columns() {
    assert_eq!(header_line(), format!("{}\n", MANIFEST_COLUMNS.join("\t")));
    assert_eq!(parse_manifest(&header_line()).expect("parses"), []);
}

#[test]
fn a_wrong_header_names_the_first_column_that_differs() {
    let error = parse_manifest("path\trepo\n").expect_err("wrong header");
    assert!(
        matches!(&error, Error::Header { column: 1, found: Some(found), expected: Some("local_path") } if found == "path"),
        "{error:?}"
    );
    assert!(error.to_string().contains("header"), "{error}");
    let short = MANIFEST_COLUMNS[..10].join("\t");
    let error = parse_manifest(&short).expect_err("no notes column");
    assert!(
        matches!(
            error,
            Error::Header {
                column: 11,
                found: None,
                expected: Some("notes")
            }
        ),
        "{error:?}"
    );
    let long = format!("{}\textra", MANIFEST_COLUMNS.join("\t"));
    let error = parse_manifest(&long).expect_err("one column too many");
    assert!(
        matches!(&error, Error::Header { column: 12, found: Some(found), expected: None } if found == "extra"),
        "{error:?}"
    );
}

#[test]
fn a_short_line_names_its_line_and_the_missing_column() {
    let error = parse_manifest(&format!("{}anthropic/x.sse\towner/repo\n", header_line())).expect_err("short line");
    assert!(
        matches!(
            error,
            Error::MissingColumn {
                line: 2,
                column: 3,
                name: "source_path"
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("line 2") && message.contains("source_path"),
        "{message}"
    );
}

#[test]
fn blank_lines_are_skipped_but_counted() {
    let text = format!("{}{}\nx\ty\n", header_line(), entry().to_line());
    let error = parse_manifest(&text).expect_err("short third entry");
    assert!(matches!(error, Error::MissingColumn { line: 4, .. }), "{error:?}");
}

#[test]
fn notes_may_be_absent_and_cells_after_them_are_ignored() {
    let without = parse_manifest(&format!("{}a\tb\tc\td\te\tf\tg\th\ti\tj\n", header_line())).expect("no notes");
    assert_eq!(without[0].notes, "");
    let with_more = ManifestEntry::parse_line("a\tb\tc\td\te\tf\tg\th\ti\tj\tn\textra", 2).expect("extra cell");
    assert_eq!(with_more.notes, "n");
}

#[test]
fn append_writes_the_header_once() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join(MANIFEST_FILE);
    append(&path, &entry().to_line()).expect("first line");
    append(&path, &entry().to_line()).expect("second line");
    let text = std::fs::read_to_string(&path).expect("the manifest");
    assert_eq!(text, header_line() + &entry().to_line() + &entry().to_line());
    assert_eq!(read_manifest(dir.path()).expect("parses").len(), 2);
}

#[test]
fn a_missing_manifest_names_its_path() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let error = read_manifest(dir.path()).expect_err("no manifest");
    assert!(matches!(&error, Error::Read { path, .. } if path == &dir.path().join(MANIFEST_FILE)));
    assert!(error.to_string().contains(MANIFEST_FILE), "{error}");
}
